#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace kbx::stats {

/// A seeded source of indices for resampling: the same seed gives the same draws on every
/// machine (xoshiro256** seeded by splitmix64; no standard-library distribution involved).
class Resampler {
 public:
  explicit Resampler(std::uint64_t seed);
  /// A uniform index in [0, n); n > 0.
  std::size_t index(std::size_t n);

 private:
  std::uint64_t next();
  std::uint64_t s_[4];
};

/// The seed of one group's bootstrap (a method, a category...): from the user's seed and the
/// group's name, so a group's intervals do not depend on which other groups or analyses ran.
std::uint64_t group_seed(std::uint64_t seed, std::string_view group);

/// The p-quantile of sorted values by linear interpolation (R's quantile type 7); NaN when empty.
double quantile_sorted(const std::vector<double>& sorted, double p);

/// A confidence interval's ends.
struct Interval {
  double lo = 0, hi = 0;
};

/// The percentile interval (level 0.95: the 2.5% and 97.5% quantiles) of bootstrap replicates;
/// NaN replicates (a statistic undefined on that resample) are left out; nullopt when none is
/// left.
std::optional<Interval> percentile_interval(std::vector<double> replicates, double level = 0.95);

/// A cluster bootstrap: each unit (a task) carries additive statistics (counts, sums of log
/// speedups...); a replicate draws as many units as there are, with replacement, adds up their
/// statistics, and `measures` turns the sum into the measured values (NaN where undefined).
/// Returns one percentile interval for each of the `count` measures (nullopt without units or
/// replicates). Every unit has the same number of statistics.
using Measures = std::function<std::vector<double>(const std::vector<double>& sums)>;
std::vector<std::optional<Interval>> cluster_bootstrap(
    const std::vector<std::vector<double>>& units, const Measures& measures, std::size_t count,
    int replicates, std::uint64_t seed, double level = 0.95);

}  // namespace kbx::stats
