#include "report/chart_data.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "timing/stats.h"

namespace kbx::report {
namespace {

const store::Calibration* calibration_in(const RunCalibrations& cals, std::int64_t run_id) {
  auto it = cals.find(run_id);
  return it != cals.end() && it->second.calibration ? &*it->second.calibration : nullptr;
}

/// Value at quantile q of an ascending sample, interpolating between order statistics.
double quantile(const std::vector<double>& sorted, double q) {
  const double at = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(at));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (at - static_cast<double>(lo));
}

}  // namespace

std::vector<MethodSpeedups> method_speedups(const std::vector<store::Result>& results) {
  std::map<std::string, MethodSpeedups> by_method;
  std::map<std::string, std::vector<std::pair<double, std::string>>> timed;
  for (const auto& r : results) {
    auto& m = by_method[r.method];
    m.method = r.method;
    ++m.tasks;
    if (r.status != "passed") continue;
    ++m.correct;
    if (r.speedup && *r.speedup > 0) timed[r.method].emplace_back(*r.speedup, r.task);
  }
  std::vector<MethodSpeedups> out;
  for (auto& [name, m] : by_method) {
    auto& t = timed[name];
    std::sort(t.begin(), t.end());
    for (auto& [s, task] : t) {
      m.speedups.push_back(s);
      m.speedup_tasks.push_back(std::move(task));
    }
    out.push_back(std::move(m));
  }
  return out;
}

double fast_p(const MethodSpeedups& m, double p) {
  if (m.tasks == 0) return 0;
  if (p <= 0) return static_cast<double>(m.correct) / m.tasks;
  const auto above = std::upper_bound(m.speedups.begin(), m.speedups.end(), p);
  return static_cast<double>(m.speedups.end() - above) / m.tasks;
}

std::optional<double> geomean_speedup(const MethodSpeedups& m) {
  return timing::geomean(m.speedups);
}

Quartiles quartiles(const std::vector<double>& sorted) {
  return {sorted.front(), quantile(sorted, 0.25), quantile(sorted, 0.5), quantile(sorted, 0.75),
          sorted.back()};
}

Heatmap correctness_heatmap(const std::vector<store::Result>& results) {
  Heatmap h;
  std::set<std::string> categories, methods;
  for (const auto& r : results) {
    categories.insert(r.category);
    methods.insert(r.method);
    auto& cell = h.cells[{r.category, r.method}];
    ++cell.tasks;
    cell.correct += r.status == "passed";
  }
  h.categories.assign(categories.begin(), categories.end());
  h.methods.assign(methods.begin(), methods.end());
  return h;
}

RooflineData roofline_points(const std::vector<store::Result>& results,
                             const RunCalibrations& calibrations) {
  RooflineData out;
  for (const auto& r : results) {
    const store::Calibration* cal = calibration_in(calibrations, r.run_id);
    for (const auto& c : r.cases) {
      if (c.status != "passed" || !c.cand_ms || *c.cand_ms <= 0) continue;
      ++out.timed_cases;
      if (!cal) {
        ++out.uncalibrated;
        continue;
      }
      const CaseRoofline rl = case_roofline(c, cal);
      if (!rl.roofline_fraction || !c.bytes || *c.bytes <= 0) {
        ++out.without_cost;
        continue;
      }
      const double flops = c.flops ? std::max(*c.flops, 0.0) : 0.0;
      out.points.push_back(
          {r.method, r.task, c.name, flops / *c.bytes, *rl.roofline_fraction, rl.basis});
    }
  }
  return out;
}

std::vector<Trajectory> trajectories(const std::vector<store::RoundVerdict>& verdicts) {
  struct Tally {
    std::set<std::string> tasks, correct;
  };
  std::map<std::string, std::map<int, Tally>> rounds;  // method -> round -> tasks
  for (const auto& v : verdicts) {
    auto& t = rounds[v.method][v.round];
    t.tasks.insert(v.task);
    if (v.status == "passed") t.correct.insert(v.task);
  }
  std::vector<Trajectory> out;
  for (const auto& [method, by_round] : rounds) {
    Trajectory tr;
    tr.method = method;
    std::set<std::string> all, solved;
    for (const auto& [round, t] : by_round) {
      all.insert(t.tasks.begin(), t.tasks.end());
      solved.insert(t.correct.begin(), t.correct.end());
      tr.rounds.push_back({round, static_cast<int>(t.tasks.size()),
                           static_cast<int>(t.correct.size()), static_cast<int>(solved.size())});
    }
    tr.tasks = static_cast<int>(all.size());
    out.push_back(std::move(tr));
  }
  return out;
}

}  // namespace kbx::report
