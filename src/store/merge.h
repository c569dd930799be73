#pragma once
#include <cstdint>
#include <filesystem>
#include <vector>

namespace kbx::store {

/// What `kbx merge` wrote.
struct MergeSummary {
  int inputs = 0;
  std::int64_t runs = 0, candidates = 0, results = 0;  ///< rows in the merged database
  int shared_runs = 0;  ///< runs found in several inputs (copies of one run), stored once
};

/// Merges kbx databases (the shards of `kbx eval --shard`, or any others) into a new database:
/// runs, candidates (one per method, task and hash), results with their cases, samples and
/// grades, attempts, calibrations and cached baselines (the newest measurement of each), every id
/// renumbered. Runs are numbered in the order they started, and candidates and calibrations in
/// the order they were stored, so that "the newest" means the same as in one database. A run
/// found in several inputs (same key, start time and seed: a copy) is stored once, each of its
/// jobs with the verdict an input has (a verdict replaces a harness_error).
/// The output is written beside itself under a temporary name and renamed when complete: a
/// failed merge leaves no output. Throws Error naming the file when an input is missing, given
/// twice, not a kbx database, of another schema version, or being written by a kbx eval; when
/// the output exists (unless force) or is an input; and when two inputs disagree on a job, i.e.
/// the same candidate in runs of the same key (the same command, shard included) has different
/// statuses (harness_error aside): every such conflict is named (run key, shard, method, task,
/// both files and statuses).
MergeSummary merge_databases(const std::vector<std::filesystem::path>& inputs,
                             const std::filesystem::path& output, bool force);

}  // namespace kbx::store
