#pragma once
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "store/store.h"
#include "suite/task.h"

namespace kbx::plan {

/// The most bytes a candidate's source may have: KernelBenchX's kernels are a few kilobytes, and a
/// larger one (a generation that ran away, or a file planted to fill kbx's memory and database) is
/// bad_input; only this much of it, and one byte more, is read and stored.
inline constexpr std::size_t kMaxSourceBytes = std::size_t{1} << 20;

/// Candidates read from disk, plus one line per input that could not be used.
struct Found {
  std::vector<store::Candidate> candidates;
  std::vector<std::string> problems;  ///< "path: what is wrong; skipped"
};

/// A folder of Category/name.py files.
Found from_directory(const std::filesystem::path& dir, const std::string& method);

/// A KernelBenchX JSONL file: one {"file": "Category/name.py", "predict": code} per line, with
/// optional "round" and "sample" (non-negative integers) and "worker" (a string or integer) from
/// a generating method; a line with a bad one is a problem, skipped.
Found from_jsonl(const std::filesystem::path& file, const std::string& method);

/// Either of the above, by what the path is, with one candidate per task (keep_last_per_task).
/// Throws Error when the path is neither a folder nor a file.
Found from_path(const std::filesystem::path& path, const std::string& method);

/// One candidate per task (per task, round and sample when lines give them): when several lines
/// or files give the same one, the last one wins and a problem line names all of them (file and
/// line numbers).
void keep_last_per_task(Found& found);

/// Drops candidates whose task is not in the suite (adding a problem line for each).
void keep_known_tasks(Found& found, const suite::Suite& suite);

/// Key identifying "the same command": rerunning with the same key resumes that run. `shard`
/// ("i/N", kbx eval --shard) makes each shard a run of its own; empty for a whole run, whose key
/// is the same as before shards existed.
std::string run_key(const std::string& method, const std::string& device, const std::string& track,
                    const std::vector<std::string>& tiers,
                    const std::vector<store::Candidate>& candidates, const std::string& shard = "");

}  // namespace kbx::plan
