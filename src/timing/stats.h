#pragma once
#include <optional>
#include <vector>

namespace kbx::timing {

/// Median of samples (mean of the middle two for an even count); nullopt when empty.
std::optional<double> median(std::vector<double> samples);

/// Distribution-free 95% confidence interval of the median (order statistics); nullopt with
/// fewer than 6 samples. python/kbx_worker/timer.py's median_interval is the same.
struct Interval {
  double lo = 0, hi = 0;
};
std::optional<Interval> median_interval(std::vector<double> samples);

/// Half-width of the median's interval relative to the median; nullopt when undefined.
std::optional<double> relative_half_width(const std::vector<double>& samples);

/// Geometric mean of positive values; nullopt when empty or any value is not positive.
std::optional<double> geomean(const std::vector<double>& values);

/// Speedup of a case: eager median over candidate median; nullopt when either is missing.
std::optional<double> case_speedup(const std::vector<double>& eager_ms,
                                   const std::vector<double>& cand_ms);

/// Speedup of a case from one clock on both sides: the probe's spans when both sides have them,
/// else CUDA events on both; nullopt when no clock covers both (never a mixed pair).
std::optional<double> same_clock_speedup(const std::vector<double>& eager_probe,
                                         const std::vector<double>& eager_events,
                                         const std::vector<double>& cand_probe,
                                         const std::vector<double>& cand_events);

}  // namespace kbx::timing
