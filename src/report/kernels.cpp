#include "report/kernels.h"

#include <fmt/format.h>

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

/// A verdict row's place in the sort: by kernel (method, GPU, task, sample, round), then oldest
/// first (database, run, result), so that the last row of a kernel is its newest verdict. Packed
/// into three words: a million rows sort in a tenth of a second.
struct SortKey {
  std::uint64_t kernel_hi, kernel_lo, age;
  std::uint32_t row;
  bool operator<(const SortKey& o) const {
    return std::tie(kernel_hi, kernel_lo, age) < std::tie(o.kernel_hi, o.kernel_lo, o.age);
  }
  bool same_kernel(const SortKey& o) const {
    return kernel_hi == o.kernel_hi && kernel_lo == o.kernel_lo;
  }
};

/// v in [0, 2^bits): an id or a small number, offset so that -1 (none) sorts first; `what` names
/// it in the error when it does not fit.
std::uint64_t field(std::int64_t v, int bits, const char* what) {
  const auto u = static_cast<std::uint64_t>(v + 1);
  if (v < -1 || u >= (std::uint64_t{1} << bits)) {
    throw Error(fmt::format("kbx analyze: {} {} is beyond what it handles (0 to {})", what, v,
                            (std::uint64_t{1} << bits) - 2));
  }
  return u;
}

SortKey sort_key(const store::VerdictRow& r, std::uint32_t row) {
  return {field(r.method, 21, "string") << 42 | field(r.gpu, 21, "string") << 21 |
              field(r.task, 21, "string"),
          field(r.sample, 32, "sample") << 32 | field(r.round, 32, "round"),
          field(r.database, 8, "database number") << 56 | field(r.run_id, 20, "run id") << 36 |
              field(r.result_id, 36, "result id"),
          row};
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
  std::vector<SortKey> keys;
  keys.reserve(verdicts.rows.size());
  for (std::size_t i = 0; i < verdicts.rows.size(); ++i) {
    const auto& r = verdicts.rows[i];
    if (facts[static_cast<std::size_t>(r.status)].judged) {
      keys.push_back(sort_key(r, static_cast<std::uint32_t>(i)));
    } else {
      ++set.excluded[verdicts.strings.at(r.status)];
    }
  }
  std::sort(keys.begin(), keys.end());
  set.all.reserve(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i + 1 < keys.size() && keys[i].same_kernel(keys[i + 1])) {
      ++set.replaced;
      continue;
    }
    const auto& r = verdicts.rows[keys[i].row];
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
