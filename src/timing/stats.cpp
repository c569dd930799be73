#include "timing/stats.h"

#include <algorithm>
#include <cmath>

namespace kbx::timing {

std::optional<double> median(std::vector<double> s) {
  if (s.empty()) return std::nullopt;
  const size_t mid = s.size() / 2;
  std::nth_element(s.begin(), s.begin() + mid, s.end());
  double hi = s[mid];
  if (s.size() % 2) return hi;
  double lo = *std::max_element(s.begin(), s.begin() + mid);
  return (lo + hi) / 2;
}

std::optional<Interval> median_interval(std::vector<double> s) {
  const size_t n = s.size();
  if (n < 6) return std::nullopt;
  std::sort(s.begin(), s.end());
  const double half = 1.959964 * std::sqrt(static_cast<double>(n)) / 2;
  const double nd = static_cast<double>(n);
  const size_t lo_rank = static_cast<size_t>(std::max(1.0, std::floor(nd / 2 - half)));
  const size_t hi_rank = static_cast<size_t>(std::min(nd, std::ceil(nd / 2 + half) + 1));
  return Interval{s[lo_rank - 1], s[hi_rank - 1]};
}

std::optional<double> relative_half_width(const std::vector<double>& samples) {
  auto ci = median_interval(samples);
  auto med = median(samples);
  if (!ci || !med || *med <= 0) return std::nullopt;
  return (ci->hi - ci->lo) / 2 / *med;
}

std::optional<double> geomean(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  double log_sum = 0;
  for (double v : values) {
    if (!(v > 0)) return std::nullopt;
    log_sum += std::log(v);
  }
  return std::exp(log_sum / static_cast<double>(values.size()));
}

std::optional<double> case_speedup(const std::vector<double>& eager_ms,
                                   const std::vector<double>& cand_ms) {
  auto e = median(eager_ms);
  auto c = median(cand_ms);
  if (!e || !c || *c <= 0) return std::nullopt;
  return *e / *c;
}

std::optional<double> same_clock_speedup(const std::vector<double>& eager_probe,
                                         const std::vector<double>& eager_events,
                                         const std::vector<double>& cand_probe,
                                         const std::vector<double>& cand_events) {
  if (!eager_probe.empty() && !cand_probe.empty()) return case_speedup(eager_probe, cand_probe);
  return case_speedup(eager_events, cand_events);
}

}  // namespace kbx::timing
