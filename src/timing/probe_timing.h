#pragma once
#include <cstdint>
#include <map>
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
  std::optional<double> kernel_share;  ///< the candidate's own kernels' share of the compute
                                       ///< time (candidate and library kernels, glue left out
                                       ///< unless the task's work is data movement)
  std::optional<double> glue_share;    ///< copies, casts, fills, memcpy and memset: their share
                                       ///< of all timed GPU time of the calls
  std::uint64_t unattributed_records = 0;  ///< untagged GPU work inside the calls' windows
  std::string unattributed_example;        ///< the name of one such kernel
  std::uint64_t escaped_records = 0;       ///< a call's own GPU work still running after the call
                                           ///< ended on the timed stream (a stream not waited for)
  std::string escaped_example;             ///< the name of one such kernel
  std::uint64_t upload_ns = 0;             ///< host-to-device copies inside the calls: time
  std::uint64_t upload_bytes = 0;          ///< and bytes
  std::uint64_t candidate_ns = 0;          ///< time in the candidate's own kernels
};

/// True when the calls' GPU work was mostly uploads from host memory: a result computed on the
/// CPU (which the GPU clock does not see) and copied over. At least 1 MiB per call, and more
/// time uploading than in the candidate's own kernels.
bool mostly_uploads(const ProbeTimes& t, std::size_t calls);

/// Bit set in the ids of the timer's own work (L2 scrub, loading values, holding the stream,
/// the end-of-batch marker); call c is preceded by id (c-1)|kHarnessBit and followed by
/// (c+1)|kHarnessBit.
inline constexpr std::uint64_t kHarnessBit = 1ull << 62;

/// A worker's probe records indexed by call id: built once, read by the analysis of every case.
struct CallRecords {
  explicit CallRecords(const std::vector<probe::Record>& records);
  std::map<std::uint64_t, std::vector<probe::Record>> activity;  ///< kernels, copies by id
  std::map<std::uint64_t, std::vector<probe::Record>> markers;   ///< Push/Pop markers by id
  std::vector<probe::Record> untagged;  ///< timed activity records without an external id
};

/// Per-call device spans, busy time, attribution, untagged work and escaped work of the calls
/// `ids`. A call's GPU window runs from the end of the timer's work before it to the start of the
/// timer's work after it, both on the timed stream; without those records, from its host
/// markers.
/// `triton_functions` are the candidate's @triton.jit names (empty: no share is computed).
/// Glue (probe::looks_like_glue_kernel, copies, sets) is kept out of the kernel share and
/// reported as glue_share; when `glue_is_work` (a task whose work is data movement, task.toml's
/// `work = "data_movement"`) it counts as library work in the kernel share.
ProbeTimes analyze_calls(const CallRecords& records, const std::vector<std::uint64_t>& ids,
                         const std::vector<std::string>& triton_functions,
                         bool glue_is_work = false);
/// The same over records not yet indexed.
ProbeTimes analyze_calls(const std::vector<probe::Record>& records,
                         const std::vector<std::uint64_t>& ids,
                         const std::vector<std::string>& triton_functions,
                         bool glue_is_work = false);

/// The analysis of the calls `ids` (a reference's eager or compiled calls: their device spans,
/// busy times), or nothing when the records hold no GPU work for some of them (a stream cut at
/// its cap, say): a median over the calls that happen to be recorded would be another
/// measurement than the events'.
std::optional<ProbeTimes> every_call_analyzed(const CallRecords& records,
                                              const std::vector<std::uint64_t>& ids);

/// The stated bound between the two clocks: the in-process CUDA-event median may not be
/// shorter than the probe's span median by more than 10% and 2 µs (events bracket the
/// launches, so they can only be longer, unless work escaped them or the timer was patched).
bool events_disagree(double event_median_ms, double probe_median_ms);

}  // namespace kbx::timing
