#include "report/kernels.h"

#include <algorithm>
#include <tuple>

#include "common/error.h"
#include "verdict/status.h"

namespace kbx::report {
namespace {

/// What a pooled status says about a kernel.
struct StatusFacts {
  bool judged = true;    ///< a verdict on the kernel (not a fault of kbx or of the reference)
  bool compiled = true;  ///< it got past parsing, import and compilation
  bool passed = false;
};

std::vector<StatusFacts> status_facts(const store::StringPool& pool) {
  std::vector<StatusFacts> facts(pool.size());
  for (std::size_t i = 0; i < pool.size(); ++i) {
    verdict::Status s{};
    if (!verdict::parse_status(pool.at(static_cast<std::int32_t>(i)), &s)) continue;
    facts[i] = {verdict::judges_kernel(s), verdict::compiled(s), s == verdict::Status::Passed};
  }
  return facts;
}

/// Sort order of verdict rows: by kernel, then oldest first (the last of a kernel wins).
auto kernel_key(const store::VerdictRow& r) {
  return std::tie(r.method, r.gpu, r.task, r.sample, r.round, r.database, r.run_id, r.result_id);
}

bool same_kernel(const store::VerdictRow& a, const store::VerdictRow& b) {
  return a.method == b.method && a.gpu == b.gpu && a.task == b.task && a.sample == b.sample &&
         a.round == b.round;
}

}  // namespace

Level parse_level(const std::string& name) {
  if (name == "strict") return kStrict;
  if (name == "core") return kCore;
  if (name == "kbx") return kKbx;
  throw Error("--level " + name + ": expected strict, core or kbx");
}

const char* level_name(Level level) {
  return level == kStrict ? "strict" : level == kCore ? "core" : "kbx";
}

KernelSet kernel_set(const store::Verdicts& verdicts) {
  KernelSet set;
  set.strings = &verdicts.strings;
  const auto facts = status_facts(verdicts.strings);
  std::vector<const store::VerdictRow*> rows;
  rows.reserve(verdicts.rows.size());
  for (const auto& r : verdicts.rows) {
    if (facts[static_cast<std::size_t>(r.status)].judged) {
      rows.push_back(&r);
    } else {
      ++set.excluded[verdicts.strings.at(r.status)];
    }
  }
  std::sort(rows.begin(), rows.end(),
            [](const auto* a, const auto* b) { return kernel_key(*a) < kernel_key(*b); });
  set.all.reserve(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = *rows[i];
    if (i + 1 < rows.size() && same_kernel(r, *rows[i + 1])) {
      ++set.replaced;
      continue;
    }
    Kernel k;
    k.method = r.method;
    k.gpu = r.gpu;
    k.task = r.task;
    k.category = r.category;
    k.round = r.round;
    k.sample = r.sample;
    k.source = r.source;
    k.compiled = facts[static_cast<std::size_t>(r.status)].compiled;
    k.correct = {facts[static_cast<std::size_t>(r.strict)].passed,
                 facts[static_cast<std::size_t>(r.core)].passed,
                 facts[static_cast<std::size_t>(r.kbx)].passed};
    k.speedup = r.speedup;
    set.any_rounds = set.any_rounds || r.round >= 0;
    set.all.push_back(k);
  }
  for (std::size_t i = 0; i < set.all.size(); ++i) {
    const auto& k = set.all[i];
    const bool last_round = i + 1 == set.all.size() || set.all[i + 1].method != k.method ||
                            set.all[i + 1].gpu != k.gpu || set.all[i + 1].task != k.task ||
                            set.all[i + 1].sample != k.sample;
    if (last_round) set.final.push_back(i);
  }
  return set;
}

}  // namespace kbx::report
