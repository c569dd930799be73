#pragma once
#include <filesystem>
#include <map>
#include <string>

#include "sandbox/process.h"
#include "sched/reference.h"
#include "store/store.h"
#include "suite/task.h"

namespace kbx::sched {

/// Settings of candidate jobs that the track and timer decide.
struct JobSettings {
  std::string track = "triton";  ///< "triton" (own Triton kernels required) or "any"
  bool time = true;              ///< time the full cases (CUDA only)
  bool keep_files = false;       ///< keep the job folder after the verdict
  std::uint64_t seed = 0;        ///< run seed (random cases derive their torch seeds from it)
  /// Peaks of the run's calibration (store::calibration_for_run) for the physical floor
  /// (timing/guards.h); empty: no calibration, no floor (cases flagged no_floor).
  std::map<std::string, double> peaks;
};

/// A job's harness overhead: its wall time less the candidate's own (import, calls, timed
/// work), the wait for the GPU's slot and the time it was frozen while another job timed its
/// calls (both the queue of a run with several jobs, not this job's cost); never below 0.
double harness_overhead_seconds(double wall_seconds, double own_seconds,
                                const sandbox::Outcome& outcome);

/// Evaluates one candidate on its task: runs it in a fresh sandboxed worker over the
/// reference's cases, judges every case in this process, times the full ones. Always returns
/// a Result (failures are rows, not exceptions).
store::Result evaluate(const WorkerEnv& env, const JobSettings& settings, const suite::Task& task,
                       const store::Candidate& candidate, const ReferenceCases& reference,
                       const std::filesystem::path& job_dir);

}  // namespace kbx::sched
