// The model analyses of `kbx analyze`: speedup spread across GPUs, and the deviance that
// category and method explain in a logistic model of correctness.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "report/analyses.h"
#include "stats/bootstrap.h"
#include "stats/glm.h"

namespace kbx::report::detail {
namespace {

/// The spread bins of the distribution table: [edge[i], edge[i + 1]).
const std::vector<double> kSpreadEdges = {1, 1.1, 1.25, 1.5, 2, 5, 10, INFINITY};

std::string bin_label(std::size_t i) {
  if (std::isinf(kSpreadEdges[i + 1])) return fmt::format(">= {}x", kSpreadEdges[i]);
  return fmt::format("{}x to {}x", kSpreadEdges[i], kSpreadEdges[i + 1]);
}

/// One kernel (same method, slot and source) timed correct on two GPUs or more.
struct Spread {
  std::int32_t task = 0;
  double spread = 1;  ///< highest speedup over lowest
  std::vector<std::pair<std::int32_t, double>> speedup_by_gpu;
};

/// Per method with kernels on two GPUs or more: its GPUs and its kernels' spreads.
struct MethodSpreads {
  std::set<std::int32_t> gpus;
  std::vector<Spread> spreads;
  int shared = 0;  ///< kernels seen on two GPUs or more, correct or not
};

/// A kernel's slot: its task, sample and round (one method's kernels on one GPU are sorted by it).
auto slot_key(const Kernel& k) {
  return std::tie(k.task, k.sample, k.round);
}

/// Adds the kernels of one slot, one per GPU, to the method's spreads: those with the same
/// source are one kernel seen on several GPUs.
void add_slot(const std::vector<const Kernel*>& slot, Level level, MethodSpreads& m) {
  std::vector<char> done(slot.size(), 0);
  for (std::size_t a = 0; a < slot.size(); ++a) {
    if (done[a]) continue;
    Spread s;
    s.task = slot[a]->task;
    int seen = 0;
    for (std::size_t b = a; b < slot.size(); ++b) {
      if (done[b] || slot[b]->source != slot[a]->source) continue;
      done[b] = 1;
      ++seen;
      if (slot[b]->correct[level] && slot[b]->timed()) {
        s.speedup_by_gpu.push_back({slot[b]->gpu, slot[b]->speedup});
      }
    }
    m.shared += seen > 1;
    if (s.speedup_by_gpu.size() < 2) continue;
    double lo = INFINITY, hi = 0;
    for (const auto& [gpu, v] : s.speedup_by_gpu) lo = std::min(lo, v), hi = std::max(hi, v);
    s.spread = hi / lo;
    m.spreads.push_back(std::move(s));
  }
}

/// One method's kernels on each of its GPUs (ranges of the kernel set, each sorted by slot),
/// merged slot by slot.
MethodSpreads merge_gpus(const KernelSet& set,
                         const std::vector<std::pair<std::size_t, std::size_t>>& ranges,
                         Level level) {
  MethodSpreads m;
  std::vector<std::size_t> head;
  for (const auto& [begin, end] : ranges) {
    m.gpus.insert(set.all[begin].gpu);
    head.push_back(begin);
  }
  std::vector<const Kernel*> slot;
  while (true) {
    const Kernel* least = nullptr;
    for (std::size_t r = 0; r < ranges.size(); ++r) {
      if (head[r] == ranges[r].second) continue;
      const Kernel& k = set.all[head[r]];
      if (!least || slot_key(k) < slot_key(*least)) least = &k;
    }
    if (!least) break;
    slot.clear();
    const auto key = slot_key(*least);
    for (std::size_t r = 0; r < ranges.size(); ++r) {
      if (head[r] < ranges[r].second && slot_key(set.all[head[r]]) == key) {
        slot.push_back(&set.all[head[r]++]);
      }
    }
    add_slot(slot, level, m);
  }
  return m;
}

/// Per method with kernels on two GPUs or more, the spreads of its kernels (a kernel: the same
/// source in the same task, sample and round). Linear: the kernel set is sorted by method, GPU
/// and slot already.
std::map<std::int32_t, MethodSpreads> spreads_by_method(const KernelSet& set, Level level) {
  std::map<std::int32_t, MethodSpreads> out;
  const auto& all = set.all;
  for (std::size_t i = 0; i < all.size();) {
    std::vector<std::pair<std::size_t, std::size_t>> ranges;  // one per GPU
    std::size_t j = i;
    while (j < all.size() && all[j].method == all[i].method) {
      std::size_t end = j;
      while (end < all.size() && all[end].method == all[j].method && all[end].gpu == all[j].gpu) {
        ++end;
      }
      ranges.emplace_back(j, end);
      j = end;
    }
    if (ranges.size() > 1) out[all[i].method] = merge_gpus(set, ranges, level);
    i = j;
  }
  return out;
}

std::string gpu_list(const KernelSet& set, const std::set<std::int32_t>& gpus) {
  std::vector<std::string> names;
  for (auto g : gpus) names.push_back(set.name(g));
  std::sort(names.begin(), names.end());
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

std::vector<Table> hardware_tables(const KernelSet& set, const AnalyzeOptions&, Level level) {
  Table t;
  t.analysis = t.name = "hardware";
  t.title = "The same kernels on several GPUs: spread of their speedups (highest over lowest)";
  t.columns = {{"method", "method", Kind::Text},         {"gpus", "gpus", Kind::Text},
               {"shared", "on 2+ GPUs", Kind::Count},    {"kernels", "timed 2+", Kind::Count},
               {"median_spread", "median", Kind::Ratio}, {"p90_spread", "p90", Kind::Ratio},
               {"max_spread", "max", Kind::Ratio},       {"max_task", "max at", Kind::Text}};
  Table dist;
  dist.analysis = "hardware";
  dist.name = "hardware_spread";
  dist.title = "Distribution of the speedup spread across GPUs";
  dist.columns = {{"method", "method", Kind::Text},
                  {"spread", "spread", Kind::Text},
                  {"kernels", "kernels", Kind::Count},
                  {"share", "share", Kind::Rate}};
  Table per_gpu;
  per_gpu.analysis = "hardware";
  per_gpu.name = "hardware_gpus";
  per_gpu.title = "Geometric-mean speedup of those kernels on each GPU";
  per_gpu.columns = {{"method", "method", Kind::Text},
                     {"gpu", "gpu", Kind::Text},
                     {"kernels", "kernels", Kind::Count},
                     {"geomean_speedup", "geomean speedup", Kind::Ratio}};
  const auto by_method = spreads_by_method(set, level);
  for (const auto& [method, m] : by_method) {
    std::vector<double> spreads;
    const Spread* widest = nullptr;
    std::map<std::int32_t, std::pair<int, double>> logs;  // per GPU: kernels, sum of logs
    for (const auto& s : m.spreads) {
      spreads.push_back(s.spread);
      if (!widest || s.spread > widest->spread) widest = &s;
      for (const auto& [gpu, v] : s.speedup_by_gpu) {
        logs[gpu].first += 1;
        logs[gpu].second += std::log(v);
      }
    }
    std::sort(spreads.begin(), spreads.end());
    auto q = [&](double p) {
      return spreads.empty() ? std::nullopt : std::optional(stats::quantile_sorted(spreads, p));
    };
    t.rows.push_back({set.name(method), gpu_list(set, m.gpus), Cell::number(double(m.shared)),
                      Cell::number(double(spreads.size())), Cell::number(q(0.5)),
                      Cell::number(q(0.9)), Cell::number(q(1.0)),
                      widest ? set.name(widest->task) : "-"});
    for (std::size_t b = 0; b + 1 < kSpreadEdges.size(); ++b) {
      const auto n = std::count_if(spreads.begin(), spreads.end(), [&](double v) {
        return v >= kSpreadEdges[b] && v < kSpreadEdges[b + 1];
      });
      dist.rows.push_back({set.name(method), bin_label(b), Cell::number(double(n)),
                           Cell::number(ratio(double(n), double(spreads.size())))});
    }
    for (const auto& [gpu, l] : logs) {
      per_gpu.rows.push_back({set.name(method), set.name(gpu), Cell::number(double(l.first)),
                              Cell::number(std::exp(l.second / l.first))});
    }
  }
  t.notes.push_back(fmt::format(
      "a kernel is one method's source for one task, sample and round, judged on each GPU (the "
      "run's environment names it); its spread needs it correct at the {} level and timed on "
      "two GPUs or more",
      level_name(level)));
  if (by_method.empty()) t.notes.push_back("no method has kernels on two GPUs or more");
  return {std::move(t), std::move(dist), std::move(per_gpu)};
}

namespace {

/// Kernels grouped by (method, category): the GLM's data, one row per cell of many trials.
struct Cells {
  std::vector<std::string> method, category;
  std::vector<double> correct, kernels;
};

Cells cells_of(const KernelSet& set, Level level) {
  std::map<std::pair<std::string, std::string>, std::pair<double, double>> counts;
  std::map<std::pair<std::int32_t, std::int32_t>, std::pair<double, double>> by_id;
  for (auto i : set.final) {
    const Kernel& k = set.all[i];
    auto& c = by_id[{k.method, k.category}];
    c.first += k.correct[level];
    c.second += 1;
  }
  for (const auto& [key, c] : by_id) counts[{set.name(key.first), set.name(key.second)}] = c;
  Cells cells;
  for (const auto& [key, c] : counts) {
    cells.method.push_back(key.first);
    cells.category.push_back(key.second);
    cells.correct.push_back(c.first);
    cells.kernels.push_back(c.second);
  }
  return cells;
}

/// A note naming the levels of a factor in which every kernel fails or every kernel passes
/// (separation); "" when there are none.
std::string separation_note(const stats::Factor& f, const Cells& cells) {
  std::vector<std::pair<double, double>> sums(f.levels.size());
  for (std::size_t i = 0; i < f.codes.size(); ++i) {
    sums[static_cast<std::size_t>(f.codes[i])].first += cells.correct[i];
    sums[static_cast<std::size_t>(f.codes[i])].second += cells.kernels[i];
  }
  std::vector<std::string> none, all;
  for (std::size_t l = 0; l < f.levels.size(); ++l) {
    if (sums[l].first == 0) none.push_back(f.levels[l]);
    if (sums[l].first == sums[l].second) all.push_back(f.levels[l]);
  }
  std::string note;
  if (!none.empty())
    note += fmt::format("no correct kernel in {} {}", f.name, fmt::join(none, ", "));
  if (!all.empty()) {
    note += fmt::format("{}every kernel correct in {} {}", note.empty() ? "" : "; ", f.name,
                        fmt::join(all, ", "));
  }
  if (note.empty()) return note;
  return "separation: " + note +
         " (such a level's coefficient runs off towards infinity until IRLS stops; the deviance "
         "is then near its limit, the coefficient and its standard error mean little)";
}

struct Model {
  std::string name;
  stats::GlmFit fit;
};

}  // namespace

std::vector<Table> deviance_tables(const KernelSet& set, const AnalyzeOptions&, Level level) {
  const Cells cells = cells_of(set, level);
  Table models;
  models.analysis = models.name = "deviance";
  models.title = "Logistic models of correctness: deviance explained by category and by method";
  models.columns = {{"model", "model", Kind::Text},
                    {"parameters", "parameters", Kind::Count},
                    {"deviance", "deviance", Kind::Number},
                    {"null_deviance", "null deviance", Kind::Number},
                    {"explained", "explained", Kind::Rate},
                    {"df_residual", "df resid", Kind::Count},
                    {"iterations", "iterations", Kind::Count},
                    {"converged", "converged", Kind::Flag},
                    {"separation", "separation", Kind::Flag}};
  Table tests;
  tests.analysis = "deviance";
  tests.name = "deviance_tests";
  tests.title = "Likelihood-ratio tests between nested models (chi-square)";
  tests.columns = {{"model", "model", Kind::Text},
                   {"against", "against", Kind::Text},
                   {"statistic", "deviance drop", Kind::Number},
                   {"df", "df", Kind::Count},
                   {"p_value", "p", Kind::PValue}};
  Table coefs;
  coefs.analysis = "deviance";
  coefs.name = "deviance_coefficients";
  coefs.title = "Coefficients (log-odds of a correct kernel; treatment contrasts)";
  coefs.columns = {{"model", "model", Kind::Text},
                   {"term", "term", Kind::Text},
                   {"estimate", "estimate", Kind::Number},
                   {"std_error", "std. error", Kind::Number}};
  if (cells.kernels.empty()) {
    models.notes.push_back("no kernels");
    return {std::move(models), std::move(tests), std::move(coefs)};
  }
  const auto category = stats::make_factor("category", cells.category);
  const auto method = stats::make_factor("method", cells.method);
  const std::size_t n = cells.kernels.size();
  auto fit = [&](const std::string& name, std::vector<const stats::Factor*> factors) {
    return Model{
        name, stats::fit_logit(stats::treatment_design(factors, n), cells.correct, cells.kernels)};
  };
  const std::vector<Model> fits = {fit("null", {}), fit("category", {&category}),
                                   fit("method", {&method}),
                                   fit("category + method", {&category, &method})};
  for (const auto& m : fits) {
    models.rows.push_back({m.name, Cell::number(m.fit.rank), Cell::number(m.fit.deviance),
                           Cell::number(m.fit.null_deviance), Cell::number(m.fit.explained()),
                           Cell::number(m.fit.df_residual()), Cell::number(m.fit.iterations),
                           Cell::number(m.fit.converged), Cell::number(m.fit.separation)});
    for (std::size_t j = 0; j < m.fit.terms.size(); ++j) {
      coefs.rows.push_back({m.name, m.fit.terms[j], Cell::number(m.fit.coefficients[j]),
                            Cell::number(m.fit.std_errors[j])});
    }
  }
  for (auto [larger, smaller] :
       {std::pair{1, 0}, std::pair{2, 0}, std::pair{3, 1}, std::pair{3, 2}}) {
    const auto lr = stats::lr_test(fits[smaller].fit, fits[larger].fit);
    tests.rows.push_back({fits[larger].name, fits[smaller].name, Cell::number(lr.statistic),
                          Cell::number(lr.df), Cell::number(lr.p_value)});
  }
  models.notes.push_back(fmt::format(
      "binomial GLM, logit link, fitted by IRLS (Eigen); one trial per kernel (each method's "
      "last round; a kernel judged on several GPUs counts once per GPU), correct at the {} "
      "level; explained = 1 - deviance / null deviance; {} kernels",
      level_name(level), fits[0].fit.trials));
  models.notes.push_back(
      "levels in byte order, the first the baseline (R: factor(x, levels = sort(unique(x), "
      "method = \"radix\")))");
  for (const auto* f : {&category, &method}) {
    if (auto note = separation_note(*f, cells); !note.empty()) models.notes.push_back(note);
  }
  for (const auto& m : fits) {
    if (!m.fit.converged) {
      models.notes.push_back(
          fmt::format("{}: IRLS did not converge in {} iterations", m.name, m.fit.iterations));
    }
  }
  return {std::move(models), std::move(tests), std::move(coefs)};
}

}  // namespace kbx::report::detail
