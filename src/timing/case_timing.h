#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "store/store.h"
#include "timing/probe_timing.h"

namespace kbx::timing {

// The timing of one case of a candidate job: its samples from each clock, its cost model, its
// flags, and the timing faults that fail it. What status a fault gives is the verdict's.

/// A candidate worker's probe records, read once per job.
struct ProbeData {
  bool expected = false;         ///< the worker ran under the probe
  bool ok = false;               ///< a valid stream with a header came back
  std::string problem;           ///< why not, when expected and not ok
  bool harness_problem = false;  ///< the probe failed on its own: events time the job
  /// The stream passed its size cap (sandbox::kMaxProbeBytes) and its end was dropped: calls
  /// after the cut have no records, so no case of the job gets a time (a candidate that floods
  /// the probe must not choose which of its cases are timed).
  bool truncated = false;
  std::optional<CallRecords> index;           ///< the records by call, when ok
  std::vector<std::string> triton_functions;  ///< the candidate's @triton.jit names
  bool glue_is_work = false;  ///< the task's work is data movement: copies are library work
};

/// The timed calls of one case as the candidate's worker reported them ("timing" event).
struct TimedCalls {
  std::vector<double> ms;                ///< CUDA-event time per call
  std::vector<double> host_ms;           ///< host time per call (its launches, GPU held)
  std::vector<std::uint64_t> probe_ids;  ///< the probe's id of each call
  bool varied = false;  ///< the calls ran on several value variants, not the same values each
  /// another process's GPU work did not drain before the calls (the timer's settle gave up)
  bool contended = false;
  /// the worker timed it as a call that waits on the host inside (a sync): its time follows the
  /// host's speed (the worker's word; a diagnostic for the analysis, never a verdict)
  bool waits_on_host = false;
  /// most of its batches took longer to queue than their GPU hold lasted (the worker's word): a
  /// call that launches slower than it runs may then have waited for its own launches on the GPU
  /// (one batch is not enough: a case's first hold is sized by the case before it)
  bool holds_outrun = false;
  /// the worker's process had found no room on the GPU for an allocation by the calls' end (the
  /// worker's word): a library may have kept a slower plan for want of workspace (cuDNN's
  /// convolution); beside other jobs that is no verdict, and the job runs again alone
  bool starved = false;
};

/// Above this share of a call's device span with none of its GPU work running (the median over
/// the calls), a launch-bound call whose batches outran their hold is flagged `launch_gaps`.
inline constexpr double kLaunchGapIdleShare = 0.10;

/// Whether most of a timed case's batches took longer to queue than their GPU hold lasted (the
/// timer's counts). One batch is not enough: a case's first hold is sized by the case before it.
inline bool most_holds_outrun(std::int64_t batches, std::int64_t short_holds) {
  return 2 * short_holds > batches;
}

/// Whether timed calls waited for their own launches on the GPU: most batches outran their hold,
/// one call took longer to launch than to run (medians), and the GPU sat idle for more than
/// kLaunchGapIdleShare of a call's span (median). The rule behind `launch_gaps` (a candidate's
/// case) and `eager_launch_gaps` (its eager baseline): such a time follows the host's speed.
bool waited_for_launches(bool holds_outrun, std::optional<double> launch_median_ms,
                         std::optional<double> span_median_ms, std::optional<double> idle_share);

/// The share of a call's device span in which none of its GPU work ran, the median over calls.
std::optional<double> idle_share(const ProbeTimes& t);

/// Marks a reference's eager timing of a case (its event, with the probe's analysis of its timed
/// calls) `eager_launch_gaps` in its phases when its calls waited for their own launches
/// (waited_for_launches, from the worker's eager_launch_ms, eager_batch_count and
/// eager_short_holds); never a call that waited on the host inside, which eager_waits_on_host
/// marks already. Returns whether it did.
bool mark_eager_launch_gaps(nlohmann::json& ref_ev, const ProbeTimes& eager);

/// A timing fault that fails a case that was right.
enum class Fault {
  UnattributedWork,  ///< GPU work not launched by the call ran inside it, or host work
  TimingMismatch,    ///< the clocks disagree, a side stream escaped, the probe was defeated
  Fallback,          ///< track triton: library kernels did most of the compute
  ImpossibleSpeed,   ///< faster than the calibrated roofline allows
};

/// A fault and the sentence that explains it.
struct Violation {
  Fault fault;
  std::string detail;
};

/// Appends a flag to a comma-separated list of flags.
void add_flag(std::string& flags, const std::string& flag);

/// Whether a comma-separated list of flags holds `flag` as a whole word.
bool has_flag(const std::string& flags, const std::string& flag);

/// The torch.compile baseline's samples in a reference case event: the probe's spans when the
/// probe timed it, else CUDA events (or cached samples); empty when it was not timed.
std::vector<double> compile_samples(const nlohmann::json& ref_ev);

/// The dtype a case computes in, for picking its roofline peak: the one its cost model names
/// (`cost()["compute"]`), else the first floating-point output's, else the first output's (""
/// when it returns no tensor). `ref_ev` is the reference worker's event of the case.
std::string compute_dtype(const nlohmann::json& ref_ev);

/// Fills a case's cost model, compute dtype and samples: eager from the reference's event (the
/// probe's spans when it ran under the probe, its CUDA events kept as the cross-check), the
/// candidate's CUDA-event and host samples from `timed` (none: the case was not timed).
void fill_timing(store::CaseResult& cr, const nlohmann::json& ref_ev, const TimedCalls* timed);

/// Replaces a timed case's candidate samples with the probe's spans (the CUDA events kept as
/// the cross-check), with its kernel and glue shares and flags; returns the fault the records
/// show, if any. A probe that failed on its own leaves the events and flags probe_silent.
/// `track` is "triton" or "any".
std::optional<Violation> fill_probe_timing(store::CaseResult& cr, const ProbeData& probe,
                                           const TimedCalls& timed, const std::string& track);

/// The physical floor on a timed case that passed so far: impossible_speed when its median is
/// below the roofline minimum at the calibration's `peaks` by more than kFloorMargin (flag
/// below_roofline); without peaks the case is flagged no_floor. A case timed on one set of
/// values only (`varied_values` false) is flagged same_values.
std::optional<Violation> check_floor(store::CaseResult& cr, bool varied_values,
                                     const std::map<std::string, double>& peaks);

/// Eager over candidate medians from one clock (same_clock_speedup in stats.h); flags a case
/// whose candidate the probe timed while eager had only events (eager_not_probe_timed).
std::optional<double> same_clock_speedup(store::CaseResult& cr);

}  // namespace kbx::timing
