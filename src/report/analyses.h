#pragma once
// The analyses of `kbx analyze` (report/analyze.h), one function each, and what they share:
// metrics over per-task sums, with bootstrap intervals. Internal to report/.
#include <functional>
#include <string>
#include <vector>

#include "report/analysis_table.h"
#include "report/analyze.h"
#include "report/kernels.h"

namespace kbx::report::detail {

/// One column computed from a group's summed per-task statistics (a rate, a geometric mean),
/// NaN where undefined; with --bootstrap, its interval from resampling the group's tasks.
struct Metric {
  Column column;
  std::function<double(const std::vector<double>& sums)> value;
  bool interval = true;  ///< gets a bootstrap interval (counts do not)
};

/// Each metric's cell for a group whose tasks carry `units` (per task, its statistics): the
/// value on their sum and, when options ask for it, the percentile interval from resampling the
/// tasks with the seed of `group` (analysis and group names).
std::vector<Cell> metric_cells(const std::vector<Metric>& metrics,
                               const std::vector<std::vector<double>>& units,
                               const AnalyzeOptions& options, const std::string& group);

/// a / b, NaN when b is 0.
double ratio(double a, double b);

/// The note every table of kernels carries: which kernels are counted and what was left out.
std::string kernels_note(const KernelSet& set);

/// A p of --fast-p as a column key and heading ("1.5" -> "fast_1.5").
std::string fast_key(double p);

std::vector<Table> methods_tables(const KernelSet& set, const AnalyzeOptions& o, Level level);
std::vector<Table> unsolved_tables(const KernelSet& set, const AnalyzeOptions& o, Level level);
std::vector<Table> refinement_tables(const KernelSet& set, const AnalyzeOptions& o, Level level);
std::vector<Table> hardware_tables(const KernelSet& set, const AnalyzeOptions& o, Level level);
std::vector<Table> deviance_tables(const KernelSet& set, const AnalyzeOptions& o, Level level);

}  // namespace kbx::report::detail
