#include "report/html.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "common/error.h"
#include "common/util.h"
#include "report/chart_data.h"
#include "report/charts.h"
#include "report/svg.h"

namespace kbx::report {
namespace {

using svg::escape;

constexpr const char* kStyle = R"css(
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       margin: 0 auto; max-width: 1600px; padding: 16px 24px 48px; color: #1a1a1a;
       background: #ffffff; line-height: 1.4; }
h1 { font-size: 24px; margin: 8px 0 4px; }
h2 { font-size: 18px; margin: 28px 0 8px; }
p.meta, .muted { color: #5f6368; }
nav a { margin-right: 14px; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0; }
th, td { border-bottom: 1px solid #e0e0e0; padding: 4px 10px; text-align: left; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 0 0 8px; }
figcaption { font-size: 13px; color: #5f6368; max-width: 760px; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr));
          gap: 8px 32px; align-items: start; }
svg.chart { display: block; max-width: 100%; height: auto; font-family: inherit; }
svg .bg { fill: #ffffff; }
svg text.muted { fill: #5f6368; }
svg .grid { stroke: #ececec; }
svg .frame { stroke: #888888; fill: none; }
svg .break { stroke: #888888; fill: none; }
svg .reference { stroke: #999999; stroke-dasharray: 4 3; }
svg .axis-title { font-size: 12px; fill: #444444; }
svg .placeholder rect { fill: #f6f6f6; stroke: #d0d0d0; stroke-dasharray: 6 4; }
svg .placeholder text { font-size: 13px; fill: #5f6368; }
svg .placeholder text.placeholder-title { font-size: 15px; fill: #333333; }
svg .legend-entry { cursor: pointer; }
svg .legend-entry.off { opacity: 0.35; }
svg .hidden { display: none; }
)css";

/// Hides and shows a method's marks in every chart when its legend entry is clicked (or
/// Enter/Space pressed on it); marks the page ready for tests.
constexpr const char* kScript = R"js(
(function () {
  'use strict';
  var hidden = {};
  function apply() {
    document.querySelectorAll('[data-method]').forEach(function (el) {
      var off = hidden[el.getAttribute('data-method')] === true;
      if (el.classList.contains('legend-entry')) {
        el.classList.toggle('off', off);
        el.setAttribute('aria-pressed', off ? 'false' : 'true');
      } else {
        el.classList.toggle('hidden', off);
      }
    });
  }
  document.querySelectorAll('.legend-entry').forEach(function (el) {
    function toggle() {
      var m = el.getAttribute('data-method');
      hidden[m] = !hidden[m];
      apply();
    }
    el.addEventListener('click', toggle);
    el.addEventListener('keydown', function (e) {
      if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); toggle(); }
    });
  });
  document.documentElement.setAttribute('data-report-ready', 'true');
})();
)js";

std::string pct(double share) {
  return fmt::format("{:.0f}%", share * 100);
}

/// One row per method: tasks, correct, fast_1, geometric mean speedup, runs.
std::string methods_table(const ReportData& data, const std::vector<MethodSpeedups>& methods) {
  const auto envs = method_environments(data.results, data.calibrations);
  std::string out =
      "<table id=\"methods\"><thead><tr><th>method</th><th class=\"num\">tasks</th>"
      "<th class=\"num\">correct</th><th class=\"num\">fast_1</th><th class=\"num\">geomean "
      "speedup</th><th>runs</th></tr></thead><tbody>\n";
  if (methods.empty()) out += "<tr><td colspan=\"6\">no results in the database(s)</td></tr>\n";
  for (const auto& m : methods) {
    const auto gm = geomean_speedup(m);
    out += fmt::format(
        "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{} ({})</td><td "
        "class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>\n",
        escape(m.method), m.tasks, m.correct, pct(fast_p(m, 0)), pct(fast_p(m, 1)),
        gm ? fmt::format("{:.2f}x over {} tasks", *gm, m.speedups.size()) : "-",
        fmt::format("{}", fmt::join(envs.at(m.method).runs, ", ")));
  }
  return out + "</tbody></table>\n";
}

/// The runs shown, their databases and the calibration each run's roofline fractions use.
std::string sources_table(const ReportData& data) {
  std::string out =
      "<table id=\"sources\"><thead><tr><th class=\"num\">run</th><th>database</th><th "
      "class=\"num\">its id there</th><th>method</th><th>device</th><th>started</th>"
      "<th>calibration</th></tr></thead><tbody>\n";
  for (const auto& r : data.runs) {
    std::string cal = "none (run kbx calibrate)";
    if (auto it = data.calibrations.find(r.id);
        it != data.calibrations.end() && it->second.calibration) {
      const auto& c = *it->second.calibration;
      cal = fmt::format("{} ({} {}, {}; matched by {})", c.id, c.device, c.gpu, c.measured_at,
                        it->second.matched_by);
    }
    out += fmt::format(
        "<tr><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td></tr>\n",
        r.id, escape(r.db), r.original_id, escape(r.method), escape(r.device), escape(r.started_at),
        escape(cal));
  }
  return out + "</tbody></table>\n";
}

/// A chart in its figure, under a heading, with a caption.
std::string figure(const std::string& heading, const std::string& chart,
                   const std::string& caption) {
  return fmt::format(
      "<section><h2>{}</h2><figure>\n{}<figcaption>{}</figcaption></figure>"
      "</section>\n",
      escape(heading), chart, escape(caption));
}

std::string all_methods_line(const ReportData& data) {
  std::set<std::string> methods;
  for (const auto& r : data.results) methods.insert(r.method);
  return fmt::format("{} results of {} methods from {} database{}", data.results.size(),
                     methods.size(), data.databases.size(), data.databases.size() == 1 ? "" : "s");
}

}  // namespace

std::string report_html(const ReportData& data, const std::string& generated_at) {
  const auto speedups = method_speedups(data.results);
  std::vector<std::string> names;
  for (const auto& m : speedups) names.push_back(m.method);
  for (const auto& t : trajectories(data.rounds)) {
    if (std::find(names.begin(), names.end(), t.method) == names.end()) names.push_back(t.method);
  }
  const svg::MethodColors colors(names);
  std::string out = fmt::format(
      "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>kbx report</title>\n<style>{}</style>\n</head>\n<body>\n<header><h1>kbx report</h1>"
      "<p class=\"meta\">{}; generated {}. Click a legend entry to hide or show a method.</p>"
      "<nav><a href=\"summary.md\">summary.md</a><a href=\"results.csv\">results.csv</a>"
      "<a href=\"results.json\">results.json</a></nav></header>\n<main>\n",
      kStyle, escape(all_methods_line(data)), escape(generated_at));
  out += "<section><h2>Methods</h2>\n" + methods_table(data, speedups) + "</section>\n";
  out += "<div class=\"charts\">\n";
  out += figure("fast_p", fast_p_svg(speedups, colors),
                "A task counts at p when its status is passed and its speedup (geometric mean over "
                "its performance cases, against eager PyTorch on the same GPU) is above p; shares "
                "are of each method's own tasks.");
  out += figure("Correctness by category", heatmap_svg(correctness_heatmap(data.results)),
                "Correct tasks over tasks, per category and method (status passed at the strict "
                "level, the newest verdict of each task).");
  out += figure("Speedup distributions", speedup_svg(speedups, colors),
                "Correct tasks with a speedup only; hover a point for its task.");
  out += figure("Roofline", roofline_svg(roofline_points(data.results, data.calibrations), colors),
                "Passed timed cases with a cost model, against their run's calibration (the "
                "same fractions as kbx results); hover a point for its task and case.");
  out += figure("Refinement rounds", rounds_svg(trajectories(data.rounds), colors),
                "Every candidate that carries a round, its newest verdict; methods without "
                "rounds are not shown.");
  out += "</div>\n<section><h2>Runs</h2>\n" + sources_table(data);
  if (data.superseded) {
    out += fmt::format(
        "<p class=\"muted\">{} rows of a method and task found in several databases were left "
        "out for a newer verdict.</p>\n",
        data.superseded);
  }
  out += "</section>\n</main>\n<script>" + std::string(kScript) + "</script>\n</body>\n</html>\n";
  return out;
}

ReportFiles write_report_folder(const ReportData& data, const std::filesystem::path& out) {
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) throw Error("--out " + out.string() + ": cannot create the folder: " + ec.message());
  ReportFiles files{out / "index.html", out / "summary.md", out / "results.csv",
                    out / "results.json"};
  write_file(files.html, report_html(data, utc_now_iso()));
  std::string md = results_markdown(data.results, "kbx report", data.calibrations);
  md += "\n## Databases\n\n";
  for (const auto& r : data.runs) {
    md += fmt::format("- run {}: {} (run {} there), method {}\n", r.id, r.db, r.original_id,
                      r.method);
  }
  write_file(files.markdown, md);
  write_file(files.csv, results_csv(data.results, data.calibrations));
  write_file(files.json, results_json(data.results, data.calibrations));
  return files;
}

}  // namespace kbx::report
