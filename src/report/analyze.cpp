#include "report/analyze.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>

#include "common/error.h"
#include "common/util.h"
#include "report/analyses.h"
#include "stats/bootstrap.h"

namespace kbx::report {

const std::vector<std::string>& analysis_names() {
  static const std::vector<std::string> names = {"methods", "unsolved", "refinement", "hardware",
                                                 "deviance"};
  return names;
}

namespace detail {

double ratio(double a, double b) {
  return b != 0 ? a / b : std::nan("");
}

std::string fast_key(double p) {
  return fmt::format("fast_{}", p);
}

std::string kernels_note(const KernelSet& set) {
  std::string note = fmt::format(
      "{} kernels (a method's candidate for a task, round and sample, on one GPU; the newest "
      "verdict of each)",
      set.all.size());
  if (set.replaced)
    note += fmt::format("; {} older verdicts of the same kernels left out", set.replaced);
  for (const auto& [status, n] : set.excluded) {
    note += fmt::format("; {} {} rows left out (no verdict on the kernel)", n, status);
  }
  return note;
}

std::vector<Cell> metric_cells(const std::vector<Metric>& metrics,
                               const std::vector<std::vector<double>>& units,
                               const AnalyzeOptions& options, const std::string& group) {
  std::vector<double> sums(units.empty() ? 0 : units.front().size(), 0.0);
  for (const auto& u : units) {
    for (std::size_t j = 0; j < sums.size(); ++j) sums[j] += u[j];
  }
  std::vector<Cell> cells;
  for (const auto& m : metrics) cells.push_back(Cell::number(m.value(sums)));
  if (options.bootstrap <= 0 || units.empty()) return cells;
  auto measures = [&](const std::vector<double>& s) {
    std::vector<double> out;
    for (const auto& m : metrics) out.push_back(m.interval ? m.value(s) : std::nan(""));
    return out;
  };
  const auto intervals =
      stats::cluster_bootstrap(units, measures, metrics.size(), options.bootstrap,
                               stats::group_seed(options.seed, group), options.confidence);
  for (std::size_t j = 0; j < metrics.size(); ++j) {
    if (!metrics[j].interval || !intervals[j] || !cells[j].value) continue;
    cells[j].lo = intervals[j]->lo;
    cells[j].hi = intervals[j]->hi;
  }
  return cells;
}

}  // namespace detail

namespace {

std::vector<Table> tables_of(const std::string& name, const KernelSet& set,
                             const AnalyzeOptions& options, Level level) {
  if (name == "methods") return detail::methods_tables(set, options, level);
  if (name == "unsolved") return detail::unsolved_tables(set, options, level);
  if (name == "refinement") return detail::refinement_tables(set, options, level);
  if (name == "hardware") return detail::hardware_tables(set, options, level);
  return detail::deviance_tables(set, options, level);
}

}  // namespace

std::vector<Table> analyze(const store::Verdicts& verdicts, const AnalyzeOptions& options) {
  const Level level = parse_level(options.level);
  if (options.bootstrap < 0) throw Error("--bootstrap must be 0 (no intervals) or more");
  if (!(options.confidence > 0 && options.confidence < 1)) {
    throw Error("--confidence must lie between 0 and 1");
  }
  for (const auto& name : options.analyses) {
    const auto& known = analysis_names();
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      throw Error(
          fmt::format("--analysis {}: unknown; expected one of {}", name, fmt::join(known, ", ")));
    }
  }
  const KernelSet set = kernel_set(verdicts);
  std::vector<std::string> run;  // in the order they print
  for (const auto& name : analysis_names()) {
    const auto& chosen = options.analyses;
    if (chosen.empty() || std::find(chosen.begin(), chosen.end(), name) != chosen.end()) {
      run.push_back(name);
    }
  }
  // Each analysis only reads the kernel set: on a large one they run side by side.
  const std::size_t parts = set.all.size() > 100000 ? run.size() : 1;
  std::vector<std::vector<Table>> tables(run.size());
  std::vector<std::exception_ptr> failed(run.size());
  run_in_parts(parts, [&](std::size_t part) {
    for (std::size_t k = part; k < run.size(); k += parts) {
      try {
        tables[k] = tables_of(run[k], set, options, level);
      } catch (...) {
        failed[k] = std::current_exception();
      }
    }
  });
  std::vector<Table> out;
  for (std::size_t k = 0; k < run.size(); ++k) {
    if (failed[k]) std::rethrow_exception(failed[k]);
    for (auto& t : tables[k]) out.push_back(std::move(t));
  }
  return out;
}

nlohmann::json analyze_header(const store::Verdicts& verdicts, const AnalyzeOptions& options) {
  nlohmann::json bootstrap = nullptr;
  if (options.bootstrap > 0) {
    bootstrap = {{"replicates", options.bootstrap},
                 {"seed", options.seed},
                 {"confidence", options.confidence},
                 {"method", "percentile, tasks resampled within each group"}};
  }
  return {{"schema_version", 1},
          {"kind", "kbx analyze"},
          {"databases", verdicts.databases},
          {"verdicts", verdicts.rows.size()},
          {"level", options.level},
          {"fast_p", options.fast_p},
          {"bootstrap", bootstrap}};
}

}  // namespace kbx::report
