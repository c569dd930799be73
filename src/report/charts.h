#pragma once
#include <string>
#include <vector>

#include "report/chart_data.h"
#include "report/svg.h"

namespace kbx::report {

/// The charts of `kbx report`, each an inline SVG with a stable id, an accessible title and
/// description, and a placeholder saying why when it has no data. Marks of a method carry
/// data-method (the page's legend toggles them); each mark's <title> is its tooltip.

inline constexpr const char* kFastPChart = "chart-fastp";
inline constexpr const char* kHeatmapChart = "chart-heatmap";
inline constexpr const char* kSpeedupChart = "chart-speedup";
inline constexpr const char* kRooflineChart = "chart-roofline";
inline constexpr const char* kRoundsChart = "chart-rounds";

/// Every chart id, in page order.
std::vector<std::string> chart_ids();

/// fast_p per method: the share of its tasks correct with a speedup above p, p on a log axis
/// (p = 0, the share correct, at the left end).
std::string fast_p_svg(const std::vector<MethodSpeedups>& methods, const svg::MethodColors& colors);

/// Categories (rows) by methods (columns), each cell shaded by its share of correct tasks.
std::string heatmap_svg(const Heatmap& heatmap);

/// Per method, the speedups of its correct tasks on a log axis: a box (quartiles, median,
/// whiskers to the extremes) over the points themselves.
std::string speedup_svg(const std::vector<MethodSpeedups>& methods,
                        const svg::MethodColors& colors);

/// Achieved fraction of the roofline against arithmetic intensity, one point per timed case.
std::string roofline_svg(const RooflineData& data, const svg::MethodColors& colors);

/// Per refinement method and round: the share of its tasks correct by that round (solid) and
/// the share of the round's attempts that were correct (dashed).
std::string rounds_svg(const std::vector<Trajectory>& trajectories,
                       const svg::MethodColors& colors);

}  // namespace kbx::report
