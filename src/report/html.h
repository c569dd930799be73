#pragma once
#include <filesystem>
#include <string>

#include "report/report_data.h"

namespace kbx::report {

/// The report as one self-contained HTML page: inline CSS, inline SVG charts (charts.h), a
/// small inline script for the legend toggles, a Content-Security-Policy that forbids every
/// fetch; no network access, no web fonts. `generated_at` is printed in its header.
std::string report_html(const ReportData& data, const std::string& generated_at);

/// The files `kbx report` writes into a folder (created if missing; these files replaced).
struct ReportFiles {
  std::filesystem::path html, markdown, csv, json;
};

/// Writes index.html, summary.md, results.csv and results.json (the formatters of table.h)
/// into out; throws Error naming the path that could not be written.
ReportFiles write_report_folder(const ReportData& data, const std::filesystem::path& out);

}  // namespace kbx::report
