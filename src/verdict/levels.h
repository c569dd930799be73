#pragma once
#include <string>
#include <vector>

#include "store/store.h"
#include "verdict/status.h"

namespace kbx::verdict {

/// How strict a job's verdict is (docs/task-format.md, "Levels"):
enum class Level {
  Strict,  ///< every case
  Core,    ///< every case except the edge tier (special values, empty tensors, fixed edge cases)
  Kbx,     ///< the cases inside KernelBenchX's own test scope (task.toml's compat.kbx_cases)
};

/// A status that only a track rule gives (static_reject, no_triton_launch, fallback): the
/// outputs were right, and the job would pass under --track any.
bool is_track_status(Status s);

/// One case of a job as the grading sees it: the reference's case list, whether the candidate's
/// verdict for it exists, and that verdict.
struct GradedCase {
  std::string name;
  std::string tier;                           ///< "edge", "small", "full", "fresh" (a fresh twin)
  bool in_kbx = false;                        ///< inside KernelBenchX's test scope
  const store::CaseResult* result = nullptr;  ///< null when the worker never got to it
};

/// A status the timed cases give about the candidate itself, whatever the inputs: fallback,
/// unattributed_work, timing_mismatch, stale_result. It holds at every level.
bool is_job_wide(Status s);

/// True when a case of this tier and scope counts at `level`.
bool in_level(Level level, const std::string& tier, bool in_kbx);

/// The job at one level, from its cases' verdicts: the first failing case of the level (in
/// case order) gives the status, else the first job-wide status (is_job_wide) of any case; else
/// `job_status`, a failure not tied to a case (tampered timer, crash, an error that stopped the
/// worker: it applies at every level; Passed when none); a level case that never ran fails with
/// `job_status` (harness_error when none). `track_reject` (static_reject) overrides the status at
/// every level, values aside. A task with no case in KernelBenchX's scope is graded at kbx as at
/// core.
store::LevelVerdict grade(Level level, const std::vector<GradedCase>& cases, Status job_status,
                          bool track_reject);

}  // namespace kbx::verdict
