#pragma once
#include <string>
#include <vector>

#include "store/store.h"

namespace kbx::report {

/// Results as an aligned text table, one row per task, with a summary line per method.
std::string results_table(const std::vector<store::Result>& results);

/// Results as CSV with a header row (schema: docs/results-schema.md).
std::string results_csv(const std::vector<store::Result>& results);

/// Results as a JSON document with a schema version and per-case details.
std::string results_json(const std::vector<store::Result>& results);

/// A Markdown report: per-category pass rates and speedups, then per-task rows.
std::string results_markdown(const std::vector<store::Result>& results, const std::string& title);

}  // namespace kbx::report
