// The rate analyses of `kbx analyze`: per method and category, the tasks no method solves, and
// refinement over rounds.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "report/analyses.h"

namespace kbx::report::detail {
namespace {

/// Statistics a task adds up for the methods table, by index.
enum MethodStat {
  kTasks,
  kKernels,
  kCompiled,
  kStrictOk,
  kCoreOk,
  kKbxOk,
  kTimed,   ///< correct at the level and timed
  kLogSum,  ///< sum of log speedups of those
  kSlower,  ///< of those, slower than eager (speedup < 1)
  kFastFirst,
};

std::vector<Metric> method_metrics(const AnalyzeOptions& o, Level level) {
  auto at = [](int i) { return [i](const std::vector<double>& s) { return s[i]; }; };
  auto rate = [](int i) {
    return [i](const std::vector<double>& s) { return ratio(s[i], s[kKernels]); };
  };
  std::vector<Metric> m = {
      {{"tasks", "tasks", Kind::Count}, at(kTasks), false},
      {{"kernels", "kernels", Kind::Count}, at(kKernels), false},
      {{"compile_rate", "compiled", Kind::Rate}, rate(kCompiled)},
      {{"correct_strict", "correct strict", Kind::Rate}, rate(kStrictOk)},
      {{"correct_core", "correct core", Kind::Rate}, rate(kCoreOk)},
      {{"correct_kbx", "correct kbx", Kind::Rate}, rate(kKbxOk)},
      {{"timed_correct", fmt::format("timed {}", level_name(level)), Kind::Count},
       at(kTimed),
       false},
      {{"geomean_speedup", "geomean speedup", Kind::Ratio},
       [](const std::vector<double>& s) { return std::exp(ratio(s[kLogSum], s[kTimed])); }},
      {{"slower_than_eager", "slower than eager", Kind::Rate},
       [](const std::vector<double>& s) { return ratio(s[kSlower], s[kTimed]); }},
  };
  for (std::size_t i = 0; i < o.fast_p.size(); ++i) {
    m.push_back({{fast_key(o.fast_p[i]), fast_key(o.fast_p[i]), Kind::Rate},
                 rate(kFastFirst + static_cast<int>(i))});
  }
  return m;
}

void add_method_stats(const Kernel& k, Level level, const AnalyzeOptions& o,
                      std::vector<double>& u) {
  u[kKernels] += 1;
  u[kCompiled] += k.compiled;
  u[kStrictOk] += k.correct[kStrict];
  u[kCoreOk] += k.correct[kCore];
  u[kKbxOk] += k.correct[kKbx];
  if (!k.correct[level] || !k.timed()) return;
  u[kTimed] += 1;
  u[kLogSum] += std::log(k.speedup);
  u[kSlower] += k.speedup < 1;
  for (std::size_t i = 0; i < o.fast_p.size(); ++i) u[kFastFirst + i] += k.speedup > o.fast_p[i];
}

/// The tasks of one group of kernels, each with its category and its summed statistics.
struct TaskUnits {
  std::vector<std::int32_t> category;
  std::vector<std::vector<double>> units;
};

/// Calls f(first, last) for each run of consecutive indices in `order` whose kernels agree on
/// `same`.
template <class Same, class F>
void for_each_run(const std::vector<std::size_t>& order, const std::vector<Kernel>& all, Same same,
                  F f) {
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i + 1;
    while (j < order.size() && same(all[order[i]], all[order[j]])) ++j;
    f(i, j);
    i = j;
  }
}

bool same_method_gpu(const Kernel& a, const Kernel& b) {
  return a.method == b.method && a.gpu == b.gpu;
}

std::vector<std::int32_t> by_name(const KernelSet& set, std::vector<std::int32_t> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::sort(ids.begin(), ids.end(), [&](auto a, auto b) { return set.name(a) < set.name(b); });
  return ids;
}

std::vector<std::size_t> every_index(std::size_t n) {
  std::vector<std::size_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

}  // namespace

std::vector<Table> methods_tables(const KernelSet& set, const AnalyzeOptions& o, Level level) {
  Table t;
  t.analysis = t.name = "methods";
  t.title = "Per method and category: compile and correctness rates, speedups over eager";
  const auto metrics = method_metrics(o, level);
  t.columns = {{"method", "method", Kind::Text},
               {"gpu", "gpu", Kind::Text},
               {"category", "category", Kind::Text}};
  for (const auto& m : metrics) t.columns.push_back(m.column);
  const std::size_t width = kFastFirst + o.fast_p.size();
  for_each_run(set.final, set.all, same_method_gpu, [&](std::size_t first, std::size_t last) {
    TaskUnits tasks;
    for (std::size_t i = first; i < last; ++i) {
      const Kernel& k = set.all[set.final[i]];
      if (i == first || set.all[set.final[i - 1]].task != k.task) {
        tasks.category.push_back(k.category);
        tasks.units.emplace_back(width, 0.0)[kTasks] = 1;
      }
      add_method_stats(k, level, o, tasks.units.back());
    }
    const Kernel& k0 = set.all[set.final[first]];
    const std::string method = set.name(k0.method), gpu = set.name(k0.gpu);
    for (auto cat : by_name(set, tasks.category)) {
      std::vector<std::vector<double>> units;
      for (std::size_t u = 0; u < tasks.units.size(); ++u) {
        if (tasks.category[u] == cat) units.push_back(tasks.units[u]);
      }
      std::vector<Cell> row = {method, gpu, set.name(cat)};
      for (auto& c :
           metric_cells(metrics, units, o, "methods/" + method + "/" + gpu + "/" + set.name(cat))) {
        row.push_back(std::move(c));
      }
      t.rows.push_back(std::move(row));
    }
    std::vector<Cell> all = {method, gpu, "all"};
    for (auto& c : metric_cells(metrics, tasks.units, o, "methods/" + method + "/" + gpu)) {
      all.push_back(std::move(c));
    }
    t.rows.push_back(std::move(all));
  });
  t.notes.push_back(kernels_note(set) +
                    "; a method's output for a task and sample is its last "
                    "round");
  t.notes.push_back(fmt::format(
      "rates are over kernels; geomean speedup, slower than eager and fast_p count kernels "
      "correct at the {} level (fast_p: correct and speedup > p, over all kernels; an untimed "
      "kernel is not fast)",
      level_name(level)));
  return {std::move(t)};
}

std::vector<Table> unsolved_tables(const KernelSet& set, const AnalyzeOptions& o, Level level) {
  Table t;
  t.analysis = t.name = "unsolved";
  t.title = "Tasks that no method solves, per category";
  t.columns = {{"category", "category", Kind::Text}, {"methods", "methods", Kind::Count}};
  const std::vector<Metric> metrics = {
      {{"tasks", "tasks", Kind::Count}, [](const auto& s) { return s[0]; }, false},
      {{"unsolved", "unsolved", Kind::Count}, [](const auto& s) { return s[0] - s[1]; }, false},
      {{"unsolved_share", "unsolved share", Kind::Rate},
       [](const auto& s) { return ratio(s[0] - s[1], s[0]); }},
  };
  for (const auto& m : metrics) t.columns.push_back(m.column);
  const std::size_t pool = set.strings->size();
  std::vector<char> seen(pool, 0), solved(pool, 0);
  std::vector<std::int32_t> category_of(pool, -1);
  std::vector<std::set<std::int32_t>> methods(pool);
  const Kernel* last = nullptr;
  for (const Kernel& k : set.all) {
    const auto task = static_cast<std::size_t>(k.task);
    seen[task] = 1;
    solved[task] |= k.correct[level];
    category_of[task] = k.category;
    if (!last || last->method != k.method || last->category != k.category) {
      methods[static_cast<std::size_t>(k.category)].insert(k.method);
    }
    last = &k;
  }
  std::vector<std::int32_t> categories;
  for (std::size_t task = 0; task < pool; ++task) {
    if (seen[task]) categories.push_back(category_of[task]);
  }
  std::vector<std::vector<double>> every;
  std::set<std::int32_t> every_method;
  for (auto cat : by_name(set, categories)) {
    std::vector<std::vector<double>> units;
    for (std::size_t task = 0; task < pool; ++task) {
      if (seen[task] && category_of[task] == cat) units.push_back({1.0, double(solved[task])});
    }
    const auto& ms = methods[static_cast<std::size_t>(cat)];
    every_method.insert(ms.begin(), ms.end());
    std::vector<Cell> row = {set.name(cat), Cell::number(double(ms.size()))};
    for (auto& c : metric_cells(metrics, units, o, "unsolved/" + set.name(cat))) {
      row.push_back(std::move(c));
    }
    t.rows.push_back(std::move(row));
    every.insert(every.end(), units.begin(), units.end());
  }
  if (!every.empty()) {
    std::vector<Cell> row = {"all", Cell::number(double(every_method.size()))};
    for (auto& c : metric_cells(metrics, every, o, "unsolved/all")) row.push_back(std::move(c));
    t.rows.push_back(std::move(row));
  }
  t.notes.push_back(fmt::format(
      "a task is solved when any kernel of any method (any GPU, round or sample) is correct at "
      "the {} level; the interval resamples the category's tasks",
      level_name(level)));
  return {std::move(t)};
}

namespace {

/// Statistics a task adds up per round of refinement, by index.
enum RoundStat { kRTasks, kRSlots, kRCompiled, kRCorrect, kRTimed, kRLogSum, kRSlower, kRWidth };

std::vector<Metric> round_metrics() {
  auto at = [](int i) { return [i](const std::vector<double>& s) { return s[i]; }; };
  auto rate = [](int i) {
    return [i](const std::vector<double>& s) { return ratio(s[i], s[kRSlots]); };
  };
  return {
      {{"kernels", "kernels", Kind::Count}, at(kRSlots), false},
      {{"compile_rate", "compiled", Kind::Rate}, rate(kRCompiled)},
      {{"correct_rate", "correct", Kind::Rate}, rate(kRCorrect)},
      {{"timed_correct", "timed correct", Kind::Count}, at(kRTimed), false},
      {{"geomean_speedup", "geomean speedup", Kind::Ratio},
       [](const std::vector<double>& s) { return std::exp(ratio(s[kRLogSum], s[kRTimed])); }},
      {{"slower_than_eager", "slower than eager", Kind::Rate},
       [](const std::vector<double>& s) { return ratio(s[kRSlower], s[kRTimed]); }},
  };
}

/// A (task, sample) of a method on a GPU: its kernels, consecutive in the kernel set and sorted
/// by round.
struct Slot {
  std::int32_t task = 0;
  const Kernel* begin = nullptr;
  const Kernel* end = nullptr;
  const Kernel& first() const { return *begin; }
};

/// The slots of the kernels all[first, last) (one method and GPU, sorted by task, sample, round).
std::vector<Slot> slots_of(const std::vector<Kernel>& all, std::size_t first, std::size_t last) {
  std::vector<Slot> slots;
  for (std::size_t i = first; i < last; ++i) {
    const Kernel& k = all[i];
    if (i == first || all[i - 1].task != k.task || all[i - 1].sample != k.sample) {
      slots.push_back({k.task, &k, &k});
    }
    slots.back().end = &k + 1;
  }
  return slots;
}

/// The slot's kernel at round r: its last one of a round <= r (a method that stopped refining a
/// kernel keeps it), or null when its first round comes later.
const Kernel* at_round(const Slot& s, std::int64_t r) {
  const Kernel* k = nullptr;
  for (const Kernel* x = s.begin; x != s.end && x->round <= r; ++x) k = x;
  return k;
}

/// Per task, the sums of statistic vectors that `add(slot, unit)` fills, one unit per task.
template <class Add>
std::vector<std::vector<double>> units_by_task(const std::vector<Slot>& slots, std::size_t width,
                                               Add add) {
  std::vector<std::vector<double>> units;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (i == 0 || slots[i - 1].task != slots[i].task) units.emplace_back(width, 0.0)[0] = 1;
    add(slots[i], units.back());
  }
  return units;
}

/// Statistics a task adds up for the rescue table, by index.
enum RescueStat {
  kSTasks,
  kSSlots,
  kSFirst,
  kSRescued,
  kSNever,
  kSTimedFirst,
  kSLogFirst,
  kSTimedRescued,
  kSLogRescued,
  kSWidth
};

void add_rescue(const Slot& s, Level level, std::vector<double>& u) {
  u[kSSlots] += 1;
  const Kernel& first = s.first();
  if (first.correct[level]) {
    u[kSFirst] += 1;
    if (first.timed()) u[kSTimedFirst] += 1, u[kSLogFirst] += std::log(first.speedup);
    return;
  }
  for (const Kernel* k = s.begin; k != s.end; ++k) {
    if (!k->correct[level]) continue;
    u[kSRescued] += 1;
    if (k->timed()) u[kSTimedRescued] += 1, u[kSLogRescued] += std::log(k->speedup);
    return;
  }
  u[kSNever] += 1;
}

Table rescue_table(Level level) {
  Table t;
  t.analysis = "refinement";
  t.name = "refinement_rescued";
  t.title = "Kernels rescued by refinement against kernels correct from the first round";
  t.columns = {{"method", "method", Kind::Text},
               {"gpu", "gpu", Kind::Text},
               {"class", "class", Kind::Text},
               {"kernels", "kernels", Kind::Count},
               {"share", "share", Kind::Rate},
               {"timed", "timed", Kind::Count},
               {"geomean_speedup", "geomean speedup", Kind::Ratio}};
  t.notes.push_back(fmt::format(
      "per (task, sample): correct ({}) in its first round; rescued: wrong in its first round, "
      "correct in a later one (its speedup is that of its first correct round); never correct",
      level_name(level)));
  return t;
}

std::vector<Cell> rescue_row(const std::string& method, const std::string& gpu, const char* label,
                             int count, int timed, int log_sum,
                             const std::vector<std::vector<double>>& units,
                             const AnalyzeOptions& o) {
  std::vector<Metric> metrics = {
      {{"kernels", "", Kind::Count}, [=](const auto& s) { return s[count]; }, false},
      {{"share", "", Kind::Rate}, [=](const auto& s) { return ratio(s[count], s[kSSlots]); }},
      {{"timed", "", Kind::Count},
       [=](const auto& s) { return timed < 0 ? std::nan("") : s[timed]; },
       false},
      {{"geomean_speedup", "", Kind::Ratio}, [=](const auto& s) {
         return timed < 0 ? std::nan("") : std::exp(ratio(s[log_sum], s[timed]));
       }}};
  std::vector<Cell> row = {method, gpu, label};
  for (auto& c :
       metric_cells(metrics, units, o, fmt::format("refinement/{}/{}/{}", method, gpu, label))) {
    row.push_back(std::move(c));
  }
  return row;
}

}  // namespace

std::vector<Table> refinement_tables(const KernelSet& set, const AnalyzeOptions& o, Level level) {
  Table t;
  t.analysis = t.name = "refinement";
  t.title = "Per round of refinement: compile and correctness rates, speedups";
  t.columns = {{"method", "method", Kind::Text},
               {"gpu", "gpu", Kind::Text},
               {"round", "round", Kind::Count}};
  const auto metrics = round_metrics();
  for (const auto& m : metrics) t.columns.push_back(m.column);
  Table rescued = rescue_table(level);
  std::vector<std::string> without;
  const auto order = every_index(set.all.size());
  for_each_run(order, set.all, same_method_gpu, [&](std::size_t first, std::size_t last) {
    const std::string method = set.name(set.all[first].method);
    const std::string gpu = set.name(set.all[first].gpu);
    std::set<std::int64_t> rounds;
    for (std::size_t i = first; i < last; ++i) {
      if (set.all[i].round >= 0) rounds.insert(set.all[i].round);
    }
    if (rounds.size() < 2) {
      without.push_back(method + " (" + gpu + ")");
      return;
    }
    const auto slots = slots_of(set.all, first, last);
    for (auto r : rounds) {
      auto units = units_by_task(slots, kRWidth, [&](const Slot& s, std::vector<double>& u) {
        const Kernel* k = at_round(s, r);
        if (!k) return;
        u[kRSlots] += 1;
        u[kRCompiled] += k->compiled;
        u[kRCorrect] += k->correct[level];
        if (k->correct[level] && k->timed()) {
          u[kRTimed] += 1;
          u[kRLogSum] += std::log(k->speedup);
          u[kRSlower] += k->speedup < 1;
        }
      });
      std::vector<Cell> row = {method, gpu, Cell::number(double(r))};
      for (auto& c :
           metric_cells(metrics, units, o, fmt::format("refinement/{}/{}/{}", method, gpu, r))) {
        row.push_back(std::move(c));
      }
      t.rows.push_back(std::move(row));
    }
    auto units = units_by_task(
        slots, kSWidth, [&](const Slot& s, std::vector<double>& u) { add_rescue(s, level, u); });
    rescued.rows.push_back(rescue_row(method, gpu, "correct from the first round", kSFirst,
                                      kSTimedFirst, kSLogFirst, units, o));
    rescued.rows.push_back(rescue_row(method, gpu, "rescued by refinement", kSRescued,
                                      kSTimedRescued, kSLogRescued, units, o));
    rescued.rows.push_back(rescue_row(method, gpu, "never correct", kSNever, -1, -1, units, o));
  });
  t.notes.push_back(fmt::format(
      "methods with rounds (candidates imported with a \"round\" field, two rounds or more); "
      "at round r each (task, sample) counts its kernel of the last round <= r; correct at the "
      "{} level",
      level_name(level)));
  if (!without.empty()) {
    t.notes.push_back(fmt::format("without rounds: {}", fmt::join(without, ", ")));
  }
  return {std::move(t), std::move(rescued)};
}

}  // namespace kbx::report::detail
