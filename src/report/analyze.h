#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/analysis_table.h"
#include "store/verdicts.h"

namespace kbx::report {

/// The analyses `kbx analyze` knows, in the order it prints them.
const std::vector<std::string>& analysis_names();

/// What `kbx analyze` computes and how.
struct AnalyzeOptions {
  std::vector<std::string> analyses;  ///< names from analysis_names(); empty: all of them
  std::string level = "strict";       ///< the verdict that counts as correct: strict, core, kbx
  std::vector<double> fast_p = {0, 1, 1.5, 2};  ///< fast_p thresholds (correct and speedup > p)
  int bootstrap = 0;       ///< replicates for percentile intervals; 0: no intervals
  std::uint64_t seed = 0;  ///< the bootstrap's seed
  double confidence = 0.95;
};

/// The tables of the chosen analyses over the verdicts of one or more databases. Throws Error
/// naming the option on an unknown analysis or level, or a negative --bootstrap.
std::vector<Table> analyze(const store::Verdicts& verdicts, const AnalyzeOptions& options);

/// What a JSON document of analyses starts with: schema_version (1), the databases, the options.
nlohmann::json analyze_header(const store::Verdicts& verdicts, const AnalyzeOptions& options);

}  // namespace kbx::report
