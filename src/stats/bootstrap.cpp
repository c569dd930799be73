#include "stats/bootstrap.h"

#include <algorithm>
#include <cmath>

namespace kbx::stats {
namespace {

std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

}  // namespace

Resampler::Resampler(std::uint64_t seed) {
  for (auto& s : s_) s = splitmix64(seed);
}

std::uint64_t Resampler::next() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

std::size_t Resampler::index(std::size_t n) {
  // Lemire's multiply-shift: the high half of a 64 x 64-bit product (bias below 2^-40 for the
  // sizes here).
  return static_cast<std::size_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
}

std::uint64_t group_seed(std::uint64_t seed, std::string_view group) {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a of the name, mixed with the seed
  for (unsigned char c : group) h = (h ^ c) * 0x100000001b3ULL;
  std::uint64_t x = seed ^ h;
  return splitmix64(x);
}

double quantile_sorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return std::nan("");
  const double h = (static_cast<double>(sorted.size()) - 1) * p;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

std::optional<Interval> percentile_interval(std::vector<double> replicates, double level) {
  replicates.erase(
      std::remove_if(replicates.begin(), replicates.end(), [](double v) { return std::isnan(v); }),
      replicates.end());
  if (replicates.empty()) return std::nullopt;
  std::sort(replicates.begin(), replicates.end());
  const double tail = (1 - level) / 2;
  return Interval{quantile_sorted(replicates, tail), quantile_sorted(replicates, 1 - tail)};
}

std::vector<std::optional<Interval>> cluster_bootstrap(
    const std::vector<std::vector<double>>& units, const Measures& measures, std::size_t count,
    int replicates, std::uint64_t seed, double level) {
  std::vector<std::optional<Interval>> out(count);
  if (units.empty() || replicates <= 0) return out;
  const std::size_t width = units.front().size();
  std::vector<std::vector<double>> draws(count);  // per measure, its replicates
  Resampler rng(seed);
  std::vector<double> sums(width);
  for (int b = 0; b < replicates; ++b) {
    std::fill(sums.begin(), sums.end(), 0.0);
    for (std::size_t k = 0; k < units.size(); ++k) {
      const auto& u = units[rng.index(units.size())];
      for (std::size_t j = 0; j < width; ++j) sums[j] += u[j];
    }
    const std::vector<double> m = measures(sums);
    for (std::size_t j = 0; j < count && j < m.size(); ++j) draws[j].push_back(m[j]);
  }
  for (std::size_t j = 0; j < count; ++j) out[j] = percentile_interval(std::move(draws[j]), level);
  return out;
}

}  // namespace kbx::stats
