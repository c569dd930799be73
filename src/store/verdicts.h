#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "store/store.h"

namespace kbx::store {

/// Strings stored once and named by their index: a million verdicts carry a few hundred
/// distinct methods, tasks, categories, statuses and GPUs.
class StringPool {
 public:
  /// The index of s, added when new.
  std::int32_t intern(std::string_view s);
  const std::string& at(std::int32_t id) const { return strings_[static_cast<size_t>(id)]; }
  std::size_t size() const { return strings_.size(); }

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::vector<std::string> strings_;
  std::unordered_map<std::string, std::int32_t, Hash, std::equal_to<>> index_;
};

/// One stored verdict in compact form, for analysis across databases (kbx analyze).
struct VerdictRow {
  std::int32_t database = 0;  ///< which database it came from (the order they were read)
  std::int32_t method = 0, task = 0, category = 0, gpu = 0;  ///< StringPool indices
  std::int32_t status = 0;                     ///< the job's status (strict level), pooled
  std::int32_t strict = 0, core = 0, kbx = 0;  ///< each level's status, pooled
  std::int64_t run_id = 0, result_id = 0;
  std::int64_t round = -1, sample = -1;  ///< the candidate's; -1 when it has none
  std::uint64_t source = 0;              ///< the first 64 bits of its source's SHA-256
  double speedup = 0;                    ///< geometric mean over performance cases; NaN: untimed
};

/// Every verdict of one or more databases, strings pooled across them.
struct Verdicts {
  StringPool strings;
  std::vector<VerdictRow> rows;
  std::vector<std::string> databases;  ///< their paths, by VerdictRow::database
};

/// The GPU a run ran on, from its environment ("gpu"), else its device ("cpu", or "cuda" when
/// the environment was not recorded).
std::string run_gpu(const Run& run);

/// Appends every result row of db (harness faults included; the analysis decides) to `into`,
/// with its levels (a row stored before schema 3 has its status at every level), its
/// candidate's round, sample and source hash, and its run's GPU. `name` is what the rows'
/// database is called in reports.
void read_verdicts(Store& db, const std::string& name, Verdicts& into);

}  // namespace kbx::store
