#include "report/charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace kbx::report {
namespace {

using svg::escape;
using svg::px;

// The plot area of the line and point charts; the legend sits to its right.
constexpr int kWidth = 760, kHeight = 400;
constexpr double kLeft = 72, kRight = 560, kTop = 24, kBottom = 336;
constexpr double kLegendX = 580;

std::string percent(double share) {
  return fmt::format("{:.0f}%", share * 100);
}

std::string times(double v) {
  return svg::number(v) + "x";
}

/// The x positions of p = 0 and of the break before the log axis of the fast_p chart.
constexpr double kZeroBand = 40;

/// The step path of a method's fast_p over [x.lo, x.hi], from p = 0 at kLeft.
std::string fast_p_path(const MethodSpeedups& m, const svg::Scale& x, const svg::Scale& y) {
  std::string d = fmt::format("M{} {} H{} V{}", px(kLeft), px(y(fast_p(m, 0))), px(x.px_lo),
                              px(y(fast_p(m, x.lo))));
  double last = -1;
  for (double s : m.speedups) {
    if (s <= x.lo || s > x.hi || s == last) continue;
    last = s;
    d += fmt::format(" H{} V{}", px(x(s)), px(y(fast_p(m, s))));
  }
  return d + " H" + px(x.px_hi);
}

/// The p = 0 end of the fast_p axis: its tick, the axis line up to the log part, a break mark.
std::string zero_band(const svg::Scale& x) {
  const double mid = x.px_lo - kZeroBand / 2;
  return fmt::format(
      "<g class=\"axes\" font-size=\"12\"><line class=\"grid\" x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" "
      "y2=\"{2}\"/><text x=\"{0}\" y=\"{3}\" text-anchor=\"middle\">0</text>"
      "<path class=\"frame\" d=\"M{4} {2} H{5}\"/>"
      "<path class=\"break\" d=\"M{6} {7} l6 -10 M{8} {7} l6 -10\"/></g>\n",
      px(kLeft + 6), px(kTop), px(kBottom), px(kBottom + 16), px(kLeft), px(x.px_lo), px(mid - 6),
      px(kBottom + 5), px(mid));
}

}  // namespace

std::vector<std::string> chart_ids() {
  return {kFastPChart, kHeatmapChart, kSpeedupChart, kRooflineChart, kRoundsChart};
}

std::string fast_p_svg(const std::vector<MethodSpeedups>& methods,
                       const svg::MethodColors& colors) {
  const std::string title = "fast_p: share of tasks correct with a speedup above p, per method";
  if (methods.empty()) {
    return svg::placeholder(kFastPChart, title, "No results in the database(s): nothing to chart.");
  }
  double top = 0;
  for (const auto& m : methods) {
    if (!m.speedups.empty()) top = std::max(top, m.speedups.back());
  }
  if (top == 0) {
    return svg::placeholder(kFastPChart, title,
                            "No correct task has a speedup (runs without timing, e.g. on the "
                            "CPU): fast_p needs timed results.");
  }
  const double hi = std::min(1000.0, std::max(10.0, svg::log_range(top, top).second));
  const svg::Scale x{0.1, hi, kLeft + kZeroBand, kRight, true};
  const svg::Scale y{0, 1, kBottom, kTop, false};
  std::string out = svg::open(kFastPChart, title,
                              "Step curves: for each p (log axis, p = 0 at the left end, where "
                              "the curve is the share correct), the share of the method's tasks "
                              "that are correct and faster than p times eager PyTorch.",
                              kWidth, kHeight);
  out += svg::axes(x, y, "p: speedup over eager PyTorch (log scale)", "share of tasks", times,
                   percent, kLeft);
  out += zero_band(x);
  out += fmt::format(
      "<line class=\"reference\" x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\"/>"
      "<text class=\"muted\" x=\"{3}\" y=\"{4}\" font-size=\"11\">as fast as eager</text>\n",
      px(x(1)), px(kTop), px(kBottom), px(x(1) + 4), px(kTop + 12));
  std::vector<svg::LegendEntry> legend;
  for (const auto& m : methods) {
    const std::string color = colors.of(m.method);
    out += fmt::format(
        "<g class=\"series\" data-method=\"{0}\"><path d=\"{1}\" stroke=\"{2}\" fill=\"none\" "
        "stroke-width=\"2\"><title>{0}: fast_p of {3} tasks</title></path>"
        "<circle cx=\"{4}\" cy=\"{5}\" r=\"3.5\" fill=\"{2}\"><title>{0}: fast_0 = {6} ({7} of "
        "{3} tasks correct)</title></circle></g>\n",
        escape(m.method), fast_p_path(m, x, y), color, m.tasks, px(kLeft), px(y(fast_p(m, 0))),
        percent(fast_p(m, 0)), m.correct);
    legend.push_back({m.method, fmt::format("fast_0 {}, fast_1 {}", percent(fast_p(m, 0)),
                                            percent(fast_p(m, 1)))});
  }
  return out + svg::legend(legend, colors, kLegendX, kTop) + svg::close();
}

namespace {

/// A share's fill on the heat map: white (0%) to dark blue (100%).
std::string heat_color(double share) {
  constexpr int from[3] = {247, 251, 255}, to[3] = {8, 69, 148};
  int c[3];
  for (int i = 0; i < 3; ++i) {
    c[i] = static_cast<int>(std::lround(from[i] + (to[i] - from[i]) * share));
  }
  return fmt::format("#{:02x}{:02x}{:02x}", c[0], c[1], c[2]);
}

/// One cell of the heat map at (x, y), or a grey one where the method has no tasks.
std::string heat_cell(const std::string& category, const std::string& method,
                      const CategoryCell* cell, double x, double y, double w, double h) {
  if (!cell) {
    return fmt::format(
        "<g class=\"cell empty\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
        "fill=\"#eeeeee\"/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"muted\">-"
        "</text><title>{} x {}: no tasks</title></g>\n",
        px(x), px(y), px(w), px(h), px(x + w / 2), px(y + h / 2 + 4), escape(category),
        escape(method));
  }
  const double share = cell->tasks ? static_cast<double>(cell->correct) / cell->tasks : 0;
  return fmt::format(
      "<g class=\"cell\" data-column=\"{0}\"><rect x=\"{2}\" y=\"{3}\" width=\"{4}\" "
      "height=\"{5}\" fill=\"{6}\"/><text x=\"{7}\" y=\"{8}\" text-anchor=\"middle\" "
      "fill=\"{9}\">{10}/{11}</text><title>{1} x {0}: {10} of {11} tasks correct ({12})</title>"
      "</g>\n",
      escape(method), escape(category), px(x), px(y), px(w), px(h), heat_color(share),
      px(x + w / 2), px(y + h / 2 + 4), share > 0.55 ? "#ffffff" : "#111111", cell->correct,
      cell->tasks, percent(share));
}

/// The scale under the heat map: 0% to 100% in five steps.
std::string heat_scale(double x, double y) {
  std::string out = "<g class=\"heat-scale\" font-size=\"11\">";
  for (int i = 0; i <= 4; ++i) {
    const double share = i / 4.0;
    out += fmt::format(
        "<rect x=\"{0}\" y=\"{1}\" width=\"40\" height=\"10\" fill=\"{2}\" stroke=\"#cccccc\"/>"
        "<text x=\"{3}\" y=\"{4}\" text-anchor=\"middle\">{5}</text>",
        px(x + i * 40), px(y), heat_color(share), px(x + i * 40 + 20), px(y + 24), percent(share));
  }
  return out + "</g>\n";
}

}  // namespace

std::string heatmap_svg(const Heatmap& heatmap) {
  const std::string title = "Correctness by category and method";
  if (heatmap.methods.empty()) {
    return svg::placeholder(kHeatmapChart, title,
                            "No results in the database(s): nothing to chart.");
  }
  constexpr double kLabels = 170, kHeader = 56, kRow = 26;
  const double cell_w =
      std::clamp(560.0 / static_cast<double>(heatmap.methods.size()), 64.0, 120.0);
  const double grid_w = cell_w * static_cast<double>(heatmap.methods.size());
  const auto rows = heatmap.categories.size() + 1;  // and a row for all categories
  const int width = static_cast<int>(std::max(kLabels + grid_w + 20, 420.0));
  const int height = static_cast<int>(kHeader + kRow * static_cast<double>(rows) + 60);
  std::string out =
      svg::open(kHeatmapChart, title,
                "One row per category and a last row for all of them, one column per method; each "
                "cell gives correct tasks over the method's tasks in that category, darker when "
                "more are correct; a grey cell: the method has no task there.",
                width, height);
  out += "<g font-size=\"12\">\n";
  for (size_t j = 0; j < heatmap.methods.size(); ++j) {
    const auto& m = heatmap.methods[j];
    const std::string shown = m.size() > 16 ? m.substr(0, 15) + "~" : m;
    out += fmt::format(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"column-label\">{}<title>{}</title>"
        "</text>\n",
        px(kLabels + cell_w * (static_cast<double>(j) + 0.5)), px(kHeader - 10), escape(shown),
        escape(m));
  }
  std::map<std::string, CategoryCell> totals;
  for (size_t i = 0; i < rows; ++i) {
    const bool all = i == heatmap.categories.size();
    const std::string cat = all ? "all categories" : heatmap.categories[i];
    const double y = kHeader + kRow * static_cast<double>(i) + (all ? 6 : 0);
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\"{}>{}</text>\n", px(kLabels - 8),
                       px(y + kRow / 2 + 4), all ? " font-weight=\"bold\"" : "", escape(cat));
    for (size_t j = 0; j < heatmap.methods.size(); ++j) {
      const auto& m = heatmap.methods[j];
      const CategoryCell* cell = nullptr;
      if (all) {
        cell = &totals[m];
      } else if (auto it = heatmap.cells.find({cat, m}); it != heatmap.cells.end()) {
        cell = &it->second;
        totals[m].correct += cell->correct;
        totals[m].tasks += cell->tasks;
      }
      out += heat_cell(cat, m, cell, kLabels + cell_w * static_cast<double>(j), y, cell_w - 2,
                       kRow - 2);
    }
  }
  out += "</g>\n" + heat_scale(kLabels, height - 40.0);
  return out + svg::close();
}

namespace {

/// A point's horizontal offset within its box, from -0.5 to 0.5: the same for the same index,
/// spread evenly (the golden ratio's sequence), so the chart is reproducible.
double jitter(size_t i) {
  const double v = static_cast<double>(i) * 0.6180339887498949;
  return v - std::floor(v) - 0.5;
}

/// One method's box and points, centered at cx.
std::string speedup_column(const MethodSpeedups& m, const std::string& color, double cx,
                           double box_w, const svg::Scale& y) {
  std::string out = fmt::format("<g class=\"series\" data-method=\"{}\">", escape(m.method));
  if (m.speedups.empty()) {
    return out + fmt::format(
                     "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"muted\">no timed "
                     "correct task</text></g>\n",
                     px(cx), px((kTop + kBottom) / 2));
  }
  const Quartiles q = quartiles(m.speedups);
  out += fmt::format(
      "<path d=\"M{0} {1} V{2} M{0} {3} V{4} M{5} {1} H{6} M{5} {4} H{6}\" stroke=\"{7}\"/>"
      "<rect x=\"{8}\" y=\"{3}\" width=\"{9}\" height=\"{10}\" fill=\"{7}\" fill-opacity=\"0.15\" "
      "stroke=\"{7}\"><title>{11}: quartiles {12}, {13}, {14} (n = {15})</title></rect>"
      "<path d=\"M{8} {16} h{9}\" stroke=\"{7}\" stroke-width=\"3\"/>\n",
      px(cx), px(y(q.min)), px(y(q.q1)), px(y(q.q3)), px(y(q.max)), px(cx - box_w / 4),
      px(cx + box_w / 4), color, px(cx - box_w / 2), px(box_w), px(y(q.q1) - y(q.q3)),
      escape(m.method), times(q.q1), times(q.median), times(q.q3), m.speedups.size(),
      px(y(q.median)));
  for (size_t i = 0; i < m.speedups.size(); ++i) {
    out += fmt::format(
        "<circle cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{}\" fill-opacity=\"0.8\"><title>{} {}: {}"
        "</title></circle>\n",
        px(cx + jitter(i) * box_w * 0.9), px(y(m.speedups[i])), color, escape(m.method),
        escape(m.speedup_tasks[i]), fmt::format("{:.3g}x", m.speedups[i]));
  }
  return out + "</g>\n";
}

}  // namespace

std::string speedup_svg(const std::vector<MethodSpeedups>& methods,
                        const svg::MethodColors& colors) {
  const std::string title = "Speedup over eager PyTorch of each correct task, per method";
  if (methods.empty()) {
    return svg::placeholder(kSpeedupChart, title,
                            "No results in the database(s): nothing to chart.");
  }
  double lo = 0, hi = 0;
  for (const auto& m : methods) {
    if (m.speedups.empty()) continue;
    lo = lo == 0 ? m.speedups.front() : std::min(lo, m.speedups.front());
    hi = std::max(hi, m.speedups.back());
  }
  if (hi == 0) {
    return svg::placeholder(kSpeedupChart, title,
                            "No correct task has a speedup (runs without timing, e.g. on the "
                            "CPU): nothing to chart.");
  }
  const auto [y_lo, y_hi] = svg::log_range(std::min(lo, 0.5), std::max(hi, 2.0));
  const svg::Scale y{y_lo, y_hi, kBottom, kTop, true};
  const svg::Scale x{0, 1, kLeft, kRight + 160, false};
  std::string out = svg::open(kSpeedupChart, title,
                              "For each method, its correct tasks' speedups (geometric mean over "
                              "performance cases) on a log axis: points, and a box from the first "
                              "to the third quartile with the median, whiskers to the extremes.",
                              kWidth, kHeight);
  out += svg::axes(x, y, "", "speedup over eager (log scale)", nullptr, times);
  out += fmt::format(
      "<line class=\"reference\" x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\"/>"
      "<text class=\"muted\" x=\"{1}\" y=\"{3}\" text-anchor=\"end\" font-size=\"11\">as fast as "
      "eager</text>\n",
      px(x.px_lo), px(x.px_hi), px(y(1)), px(y(1) - 4));
  const double band = (x.px_hi - x.px_lo) / static_cast<double>(methods.size());
  const double box_w = std::min(56.0, band * 0.5);
  for (size_t i = 0; i < methods.size(); ++i) {
    const auto& m = methods[i];
    const double cx = x.px_lo + band * (static_cast<double>(i) + 0.5);
    out += speedup_column(m, colors.of(m.method), cx, box_w, y);
    const auto gm = geomean_speedup(m);
    out += fmt::format(
        "<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\" font-size=\"12\">{2}</text>"
        "<text x=\"{0}\" y=\"{3}\" text-anchor=\"middle\" font-size=\"11\" class=\"muted\">n = "
        "{4}{5}</text>\n",
        px(cx), px(kBottom + 18), escape(m.method), px(kBottom + 34), m.speedups.size(),
        gm ? ", geomean " + fmt::format("{:.2f}x", *gm) : "");
  }
  return out + svg::close();
}

std::string roofline_svg(const RooflineData& data, const svg::MethodColors& colors) {
  const std::string title = "Achieved fraction of the roofline against arithmetic intensity";
  if (data.points.empty()) {
    std::string why =
        data.timed_cases == 0
            ? "No correct timed case: the roofline needs GPU timings (kbx eval on a GPU)."
            : fmt::format(
                  "{} timed cases, none with a roofline fraction: {} in runs without a "
                  "calibration (run kbx calibrate), {} without a cost model.",
                  data.timed_cases, data.uncalibrated, data.without_cost);
    return svg::placeholder(kRooflineChart, title, why);
  }
  double lo = 0, hi = 0, top = 1;
  int at_edge = 0;
  for (const auto& p : data.points) {
    top = std::max(top, p.fraction);
    if (p.intensity <= 0) {
      ++at_edge;
      continue;
    }
    lo = lo == 0 ? p.intensity : std::min(lo, p.intensity);
    hi = std::max(hi, p.intensity);
  }
  const double x_lo = lo > 0 ? std::pow(10, std::floor(std::log10(lo))) : 0.01;
  const double x_hi = std::max(x_lo * 100, hi > 0 ? std::pow(10, std::ceil(std::log10(hi))) : 1);
  const svg::Scale x{x_lo, x_hi, kLeft, kRight, true};
  const svg::Scale y{0, std::ceil(top * 11) / 10, kBottom, kTop, false};
  std::string desc = fmt::format(
      "One point per correct timed case ({} of {} timed cases): its roofline time (cost-model "
      "FLOPs at the compute peak of its dtype, or bytes at the copy bandwidth, whichever is "
      "longer, from the run's kbx calibrate) over its measured median time.",
      data.points.size(), data.timed_cases);
  if (at_edge) {
    desc += at_edge == 1 ? " 1 case without FLOPs sits at the left edge."
                         : fmt::format(" {} cases without FLOPs sit at the left edge.", at_edge);
  }
  if (data.uncalibrated) {
    desc += fmt::format(" {} timed cases are in runs without a calibration.", data.uncalibrated);
  }
  std::string out = svg::open(kRooflineChart, title, desc, kWidth, kHeight);
  out += svg::axes(x, y, "arithmetic intensity: FLOPs per byte (log scale)",
                   "fraction of the roofline", svg::number, percent);
  out += fmt::format(
      "<line class=\"reference\" x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\"/>"
      "<text class=\"muted\" x=\"{1}\" y=\"{3}\" text-anchor=\"end\" font-size=\"11\">roofline"
      "</text>\n",
      px(kLeft), px(kRight), px(y(1)), px(y(1) - 4));
  std::map<std::string, int> per_method;
  for (const auto& p : data.points) {
    ++per_method[p.method];
    out += fmt::format(
        "<circle class=\"series\" data-method=\"{0}\" cx=\"{1}\" cy=\"{2}\" r=\"4\" fill=\"{3}\" "
        "fill-opacity=\"{4}\" stroke=\"{3}\"><title>{0} {5} {6}: {7:.1f}% of the roofline ({8}), "
        "{9} FLOP/B</title></circle>\n",
        escape(p.method), px(x(p.intensity)), px(y(p.fraction)), colors.of(p.method),
        p.intensity > 0 ? "0.7" : "0", escape(p.task), escape(p.case_name), p.fraction * 100,
        escape(p.basis), svg::number(p.intensity));
  }
  std::vector<svg::LegendEntry> legend;
  for (const auto& [method, n] : per_method) legend.push_back({method, fmt::format("{} cases", n)});
  return out + svg::legend(legend, colors, kLegendX, kTop) + svg::close();
}

std::string rounds_svg(const std::vector<Trajectory>& trajectories,
                       const svg::MethodColors& colors) {
  const std::string title = "Refinement trajectories: correctness by round";
  if (trajectories.empty()) {
    return svg::placeholder(kRoundsChart, title,
                            "No rounds: no candidate carries a refinement round (a round column "
                            "of candidates, or round=N in its origin).");
  }
  int first = trajectories.front().rounds.front().round, last = first;
  for (const auto& t : trajectories) {
    first = std::min(first, t.rounds.front().round);
    last = std::max(last, t.rounds.back().round);
  }
  svg::Scale x{static_cast<double>(first), static_cast<double>(last), kLeft + 24, kRight - 24};
  x.min_step = 1;
  const svg::Scale y{0, 1, kBottom, kTop, false};
  std::string out = svg::open(kRoundsChart, title,
                              "For each method whose candidates carry a round: solid, the share "
                              "of its tasks with a correct candidate by that round; dashed, the "
                              "share of that round's attempted tasks that were correct.",
                              kWidth, kHeight);
  out += svg::axes(x, y, "round", "share of tasks", svg::number, percent, kLeft);
  std::vector<svg::LegendEntry> legend;
  for (const auto& t : trajectories) {
    const std::string color = colors.of(t.method);
    std::string solid, dashed, marks;
    for (const auto& r : t.rounds) {
      const double so_far = static_cast<double>(r.correct_so_far) / t.tasks;
      const double in_round = r.tasks ? static_cast<double>(r.correct) / r.tasks : 0;
      const char* op = solid.empty() ? "M" : "L";
      solid += fmt::format("{}{} {} ", op, px(x(r.round)), px(y(so_far)));
      dashed += fmt::format("{}{} {} ", op, px(x(r.round)), px(y(in_round)));
      marks += fmt::format(
          "<circle cx=\"{}\" cy=\"{}\" r=\"3.5\" fill=\"{}\"><title>{} round {}: {} of {} tasks "
          "correct so far; {} of the round's {} attempts correct</title></circle>",
          px(x(r.round)), px(y(so_far)), color, escape(t.method), r.round, r.correct_so_far,
          t.tasks, r.correct, r.tasks);
    }
    out += fmt::format(
        "<g class=\"series\" data-method=\"{}\"><path d=\"{}\" stroke=\"{}\" fill=\"none\" "
        "stroke-width=\"2\"/><path d=\"{}\" stroke=\"{}\" fill=\"none\" stroke-dasharray=\"5 4\"/>"
        "{}</g>\n",
        escape(t.method), solid, color, dashed, color, marks);
    const auto& end = t.rounds.back();
    legend.push_back({t.method, fmt::format("{} rounds, {} of {} by the last", t.rounds.size(),
                                            end.correct_so_far, t.tasks)});
  }
  return out + svg::legend(legend, colors, kLegendX, kTop) + svg::close();
}

}  // namespace kbx::report
