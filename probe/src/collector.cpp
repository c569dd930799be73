#include "collector.h"

namespace kbx::probe {

void Collector::add_external(std::uint32_t correlation_id, std::uint64_t external_id) {
  const auto [it, inserted] = map_.insert_or_assign(correlation_id, external_id);
  if (!inserted) return;
  order_.push_back(correlation_id);
  while (map_.size() > capacity_ && !order_.empty()) {
    map_.erase(order_.front());
    order_.pop_front();
  }
}

void Collector::add_activity(const Record& record, std::uint32_t alt_correlation_id) {
  pending_.push_back({record, alt_correlation_id});
}

void Collector::add_marker(const Record& record) {
  pending_.push_back({record, 0});
}

std::uint64_t Collector::lookup(std::uint32_t correlation_id) const {
  if (correlation_id == 0) return 0;
  const auto it = map_.find(correlation_id);
  return it == map_.end() ? 0 : it->second;
}

std::vector<Record> Collector::take() {
  std::vector<Record> out;
  out.reserve(pending_.size());
  for (Pending& p : pending_) {
    if (p.record.is_activity()) {
      p.record.external_id = lookup(p.record.correlation_id);
      if (p.record.external_id == 0) p.record.external_id = lookup(p.alt_correlation_id);
    }
    out.push_back(p.record);
  }
  pending_.clear();
  return out;
}

}  // namespace kbx::probe
