#include "timing/probe_timing.h"

#include <map>

namespace kbx::timing {

namespace {

using Groups = std::map<std::uint64_t, std::vector<probe::Record>>;

/// The window of call `id` from its host markers (see probe::call_window).
std::optional<probe::Interval> host_window(const CallRecords& index, std::uint64_t id) {
  std::vector<probe::Record> own;
  if (auto m = index.markers.find(id); m != index.markers.end()) own = m->second;
  if (auto a = index.activity.find(id); a != index.activity.end()) {
    own.insert(own.end(), a->second.begin(), a->second.end());
  }
  return probe::call_window(own, id);
}

/// Where call `id` ran on the GPU: between the timer's work just before and just after it.
std::optional<probe::Interval> gpu_window(const Groups& groups, std::uint64_t id) {
  const auto before = groups.find((id - 1) | kHarnessBit);
  const auto after = groups.find((id + 1) | kHarnessBit);
  if (before == groups.end() || after == groups.end()) return std::nullopt;
  const auto b = probe::device_span(before->second);
  const auto a = probe::device_span(after->second);
  if (!b || !a || a->start_ns < b->end_ns) return std::nullopt;
  return probe::Interval{b->end_ns, a->start_ns};
}

/// CUpti_ActivityMemcpyKind's CUPTI_ACTIVITY_MEMCPY_KIND_HTOD.
constexpr std::uint32_t kMemcpyHostToDevice = 1;

/// CUPTI timestamps of neighbouring work on one stream may touch; allow this much overlap.
constexpr std::uint64_t kOverlapToleranceNs = 1000;

}  // namespace

CallRecords::CallRecords(const std::vector<probe::Record>& records)
    : activity(probe::group_by_external_id(records)) {
  for (const auto& r : records) {
    if (r.kind == probe::Kind::Push || r.kind == probe::Kind::Pop) {
      markers[r.external_id].push_back(r);
    } else if (r.is_timed() && r.external_id == 0) {
      untagged.push_back(r);
    }
  }
}

ProbeTimes analyze_calls(const std::vector<probe::Record>& records,
                         const std::vector<std::uint64_t>& ids,
                         const std::vector<std::string>& triton_functions, bool glue_is_work) {
  return analyze_calls(CallRecords(records), ids, triton_functions, glue_is_work);
}

std::optional<ProbeTimes> every_call_analyzed(const CallRecords& records,
                                              const std::vector<std::uint64_t>& ids) {
  auto calls = analyze_calls(records, ids, {});
  if (calls.span_ms.size() != ids.size()) return std::nullopt;
  return calls;
}

ProbeTimes analyze_calls(const CallRecords& index, const std::vector<std::uint64_t>& ids,
                         const std::vector<std::string>& triton_functions, bool glue_is_work) {
  ProbeTimes t;
  const Groups& groups = index.activity;
  probe::Attribution total;
  for (std::uint64_t id : ids) {
    const auto on_gpu = gpu_window(groups, id);
    const auto window = on_gpu ? on_gpu : host_window(index, id);
    if (window) {
      for (const auto& r : probe::unattributed(index.untagged, *window)) {
        if (t.unattributed_records++ == 0) t.unattributed_example = std::string(r.name_view());
      }
    }
    auto it = groups.find(id);
    if (it == groups.end()) {
      ++t.calls_without_work;
      continue;
    }
    const auto& group = it->second;
    if (auto span = probe::device_span(group)) {
      t.span_ms.push_back(static_cast<double>(span->length_ns()) * 1e-6);
      t.busy_ms.push_back(static_cast<double>(probe::busy_ns(group)) * 1e-6);
    }
    if (on_gpu) {
      for (const auto& r : group) {
        if (r.is_timed() && r.end_ns > on_gpu->end_ns + kOverlapToleranceNs) {
          if (t.escaped_records++ == 0) t.escaped_example = std::string(r.name_view());
        }
      }
    }
    for (const auto& r : group) {
      if (r.kind == probe::Kind::Memcpy && r.detail == kMemcpyHostToDevice && r.is_timed()) {
        t.upload_ns += r.duration_ns();
        t.upload_bytes += r.bytes;
      }
    }
    const auto a = probe::attribute(group, triton_functions);
    total.candidate_ns += a.candidate_ns;
    total.library_ns += a.library_ns;
    total.inductor_ns += a.inductor_ns;
    total.unknown_ns += a.unknown_ns;
    total.copy_ns += a.copy_ns;
    total.glue_ns += a.glue_ns;
  }
  const std::uint64_t glue = total.all_glue_ns();
  const std::uint64_t compute = total.kernel_ns() + (glue_is_work ? glue : 0);
  if (!triton_functions.empty() && compute > 0) {
    t.kernel_share = static_cast<double>(total.candidate_ns) / static_cast<double>(compute);
  }
  if (total.kernel_ns() + glue > 0) {
    t.glue_share = static_cast<double>(glue) / static_cast<double>(total.kernel_ns() + glue);
  }
  t.candidate_ns = total.candidate_ns;
  return t;
}

bool mostly_uploads(const ProbeTimes& t, std::size_t calls) {
  constexpr std::uint64_t kMinBytesPerCall = 1 << 20;
  return calls > 0 && t.upload_bytes >= kMinBytesPerCall * calls && t.upload_ns > t.candidate_ns;
}

bool events_disagree(double event_median_ms, double probe_median_ms) {
  return event_median_ms < 0.9 * probe_median_ms - 0.002;
}

}  // namespace kbx::timing
