#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kbx/probe_records.h"

namespace kbx::timing {

/// What the probe's records say about a series of timed calls (one performance case).
struct ProbeTimes {
  std::vector<double> span_ms;         ///< per call that ran GPU work: first start to last end
  std::vector<double> busy_ms;         ///< per call: time with at least one kernel or copy running
  size_t calls_without_work = 0;       ///< pushed ids with no GPU record at all
  std::optional<double> kernel_share;  ///< the candidate's own kernels' share of kernel time
  std::uint64_t unattributed_records = 0;  ///< untagged GPU work inside the calls' windows
  std::string unattributed_example;        ///< the name of one such kernel
};

/// Per-call device spans, busy time, attribution and untagged work of the calls `ids`.
/// `triton_functions` are the candidate's @triton.jit names (empty: no share is computed).
ProbeTimes analyze_calls(const std::vector<probe::Record>& records,
                         const std::vector<std::uint64_t>& ids,
                         const std::vector<std::string>& triton_functions);

/// The stated bound between the two clocks: the in-process CUDA-event median may not be
/// shorter than the probe's span median by more than 10% and 2 µs (events bracket the
/// launches, so they can only be longer, unless work escaped them or the timer was patched).
bool events_disagree(double event_median_ms, double probe_median_ms);

}  // namespace kbx::timing
