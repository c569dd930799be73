#include "timing/probe_timing.h"

#include <map>

namespace kbx::timing {

ProbeTimes analyze_calls(const std::vector<probe::Record>& records,
                         const std::vector<std::uint64_t>& ids,
                         const std::vector<std::string>& triton_functions) {
  ProbeTimes t;
  const auto groups = probe::group_by_external_id(records);
  probe::Attribution total;
  for (std::uint64_t id : ids) {
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
    const auto a = probe::attribute(group, triton_functions);
    total.candidate_ns += a.candidate_ns;
    total.library_ns += a.library_ns;
    total.inductor_ns += a.inductor_ns;
    total.unknown_ns += a.unknown_ns;
    total.copy_ns += a.copy_ns;
    if (auto window = probe::call_window(records, id)) {
      for (const auto& r : probe::unattributed(records, *window)) {
        if (t.unattributed_records++ == 0) t.unattributed_example = std::string(r.name_view());
      }
    }
  }
  if (!triton_functions.empty() && total.kernel_ns() > 0) {
    t.kernel_share = total.candidate_share();
  }
  return t;
}

bool events_disagree(double event_median_ms, double probe_median_ms) {
  return event_median_ms < 0.9 * probe_median_ms - 0.002;
}

}  // namespace kbx::timing
