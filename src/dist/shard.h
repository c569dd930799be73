#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kbx::dist {

/// One part of a run split over machines: the index-th of count shards, numbered from 1
/// (`--shard 1/4` .. `--shard 4/4`, as Slurm's `--array=1-4` numbers its tasks).
struct Shard {
  int index = 1;
  int count = 1;
  /// "i/N", as given on the command line and stored in the run's settings and key.
  std::string text() const;
};

/// Parses "i/N" with 1 <= i <= N; throws Error naming --shard, what is wrong and an example.
Shard parse_shard(std::string_view text);

/// The positions (ascending) of the jobs that belong to `shard`, given every job's key (a
/// stable identity such as "task|method|sha256"). Keys are sorted bytewise and dealt round-robin:
/// the k-th smallest key goes to shard (k mod N) + 1. The N shards of the same keys therefore
/// cover every job exactly once, whatever the order the keys come in, and differ in size by at
/// most one job; neighbouring tasks (one category) are spread over the shards. Duplicate keys
/// are kept apart by their position.
std::vector<std::size_t> shard_members(const std::vector<std::string>& job_keys, Shard shard);

}  // namespace kbx::dist
