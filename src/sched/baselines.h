#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sched/reference.h"
#include "store/baselines.h"
#include "store/store.h"

namespace kbx::sched {

/// A task's cached eager samples per full case: the CUDA events', the probe's, for a case whose
/// eager call waited on the host inside the host's speed then (`host_loop_ms`, one value), and
/// the cases whose eager calls waited for their own launches (`eager_launch_gaps`, the value 1):
/// the speedups of both kinds follow the host (report::follows_host), cached or not.
struct EagerSamples {
  store::CaseSamples events;
  store::CaseSamples probe;
  store::CaseSamples host_waits;
  store::CaseSamples launch_gaps;
};

/// torch.compile baselines: cached samples go into the reference's events, fresh ones into the
/// cache (per environment fingerprint and task hash).
void use_compile_baselines(store::Store& db, const std::string& fp,
                           const std::vector<ReferenceJob>& jobs,
                           const std::map<std::string, store::CaseSamples>& cached,
                           std::map<std::string, ReferenceCases>& refs);

/// The baseline kinds of a reference's eager timings at a seed (the values of some cases, such
/// as a mask's, set the work) and by the worker's code (its timer; eager_worker_key): the CUDA
/// events' samples and the probe's.
std::pair<std::string, std::string> eager_kinds(std::uint64_t seed, const std::string& worker);

/// What the eager baselines' kinds name of the worker: its sources' hash, and the settings that
/// change what it measures (KBX_TIMER_KEEP_OUTPUTS, KBX_EAGER_REDRAW, when on).
std::string eager_worker_key(const std::string& worker_hash, int keep_outputs,
                             bool eager_redraw = false);

/// A task's cached eager samples at a seed under the machine's fingerprint fp; `events` is
/// empty when nothing is cached.
EagerSamples cached_eager(store::Store& db, const std::string& fp, const suite::Task& task,
                          std::uint64_t seed, const std::string& worker);

/// Eager timings done once per machine (issue 14): a job that was not timed (time_eager false)
/// gets its cached samples in its full cases' events ("eager_cached": true); a timed job's
/// samples are cached when every full case has them. Call before the reference cache stores
/// the events.
void use_eager_baselines(store::Store& db, const std::string& fp, const std::string& worker,
                         const std::vector<ReferenceJob>& jobs,
                         const std::map<std::string, EagerSamples>& cached,
                         std::map<std::string, ReferenceCases>& refs);

/// The bytes a task's references wrote (files in the work folder) on this machine when it was
/// last computed on `device`: kept beside the baselines (kind "reference_bytes/..."), so that a
/// later run's room gate (sched/room.h) guesses each task by its own files rather than by the
/// largest of its category. 0 when never measured.
std::uint64_t remembered_footprint(store::Store& db, const std::string& fp, const suite::Task& task,
                                   const std::string& device);

/// Keeps what a task's references wrote on `device` for later runs on this machine.
void remember_footprint(store::Store& db, const std::string& fp, const suite::Task& task,
                        const std::string& device, std::uint64_t bytes);

/// Seconds a task's eager loops took on this machine, from its cached samples (their sum over
/// the full cases); 0 when none are cached.
double cached_eager_seconds(const EagerSamples& samples);

/// The order tasks go in when some are known to hold the timing slot long (issue 14): the first
/// task stays first (its references start the run), then those whose weight is at least
/// `heavy_seconds`, heaviest first, then the others in their order. A heavy task left for the
/// end of a run kept the slot busy alone while the lanes idled.
std::vector<std::string> heavy_tasks_first(const std::vector<std::string>& order,
                                           const std::map<std::string, double>& weight_seconds,
                                           double heavy_seconds);

}  // namespace kbx::sched
