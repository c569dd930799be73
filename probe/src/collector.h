// Joins CUPTI activity records with their external correlation ids before they are written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "kbx/probe_records.h"

namespace kbx::probe {

/// Holds records until the next flush and the correlation id -> external id map that resolves
/// them. CUPTI delivers EXTERNAL_CORRELATION records in other buffers than the kernel records
/// (and not necessarily first), so resolution waits until take(). The map keeps the most recent
/// `map_capacity` ids (a graph launch gives many kernels one correlation id, so entries are not
/// dropped when used). Not thread-safe: the caller locks.
class Collector {
 public:
  static constexpr std::size_t kDefaultMapCapacity = std::size_t{1} << 20;

  explicit Collector(std::size_t map_capacity = kDefaultMapCapacity) : capacity_(map_capacity) {}

  /// Records that API call `correlation_id` ran with `external_id` pushed.
  void add_external(std::uint32_t correlation_id, std::uint64_t external_id);
  /// Queues a Kernel, Memcpy or Memset record; its external id is looked up by its
  /// correlation_id, then by `alt_correlation_id` when non-zero (a memcpy's runtime id).
  void add_activity(const Record& record, std::uint32_t alt_correlation_id = 0);
  /// Queues a Push, Pop, Flush or Error record as it is.
  void add_marker(const Record& record);
  /// Records queued and not yet taken.
  std::size_t pending() const { return pending_.size(); }
  /// Correlation ids currently mapped.
  std::size_t mapped() const { return map_.size(); }
  /// Resolves the external ids of the queued records (0 where none is known) and returns them in
  /// the order they were queued.
  std::vector<Record> take();

 private:
  struct Pending {
    Record record;
    std::uint32_t alt_correlation_id;
  };
  std::uint64_t lookup(std::uint32_t correlation_id) const;

  std::size_t capacity_;
  std::unordered_map<std::uint32_t, std::uint64_t> map_;
  std::deque<std::uint32_t> order_;  // insertion order of map_ keys, for eviction
  std::vector<Pending> pending_;
};

}  // namespace kbx::probe
