#pragma once
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/worker_events.h"
#include "verdict/status.h"

namespace kbx::verdict {

// The rules that give a job its status from what its worker and its process reported; the
// cases' own verdicts are case_judge.h's. docs/architecture.md, "Verdict rules".

/// A status with the sentence that explains it (Passed with no detail: nothing failed).
struct Failure {
  Status status = Status::Passed;
  std::string detail;
};

/// A broken event stream (a missing or mistyped field; sched/events.h): the job is a crash,
/// since the candidate's own process wrote the stream, and nothing else in it is trusted.
/// nullopt when `problem` is empty.
std::optional<Failure> protocol_failure(const std::string& problem);

/// On the GPU a job's timed loops run only once it holds the GPU's timing slot (issue 14): a
/// "timing" event that came before the grant (first_timing: its index among the job's events,
/// -1 when none came; granted_after: how many events had come at the grant, -1 when never)
/// means the worker's code skipped the wait, and its times may overlap another job's
/// (TimerTampered). nullopt when the timings came after the grant.
std::optional<Failure> timed_without_slot(int first_timing, int granted_after);

/// A "timing" event after the worker handed the slot back for good (last_timing: the index of
/// the last one, -1 when none; released_after: how many events had come at the hand-back, -1
/// when never) was timed beside other jobs' GPU work (TimerTampered); nullopt otherwise.
std::optional<Failure> timed_after_handback(int last_timing, int released_after);

/// A worker that asked for the GPU's timing slot again after handing it back for good (sandbox
/// ended it then): only a worker whose slot wait was replaced does that (TimerTampered).
std::optional<Failure> asked_after_handback(bool asked_after_close);

/// timer_tampered when a timing event (by its index among the events) came between an interim
/// hand-back of the slot and its next grant (sandbox::Outcome::slot_gaps; a gap's end -1: never
/// granted again).
std::optional<Failure> timed_between_grants(const std::vector<int>& timings,
                                            const std::vector<std::pair<int, int>>& gaps);

/// What the source alone decides, before any of its code runs: a syntax error, no `entry`
/// function at module level, or under track "triton" no @triton.jit kernel (StaticReject: the
/// job fails, but its cases still run, untimed, for the levels). nullopt when the source passes
/// or no static facts came.
std::optional<Failure> static_failure(const std::optional<StaticEvent>& facts,
                                      const std::string& entry, const std::string& track);

/// The status of an error the worker reported: by its kind (compile error, out of memory, CUDA
/// error), else an import error when it happened while importing, else a runtime error.
Status status_of_error(const ErrorEvent& err);

/// The verdict of a case whose call raised while the worker went on: the error's status, with
/// its type and (the end of) its message.
Failure case_error(const ErrorEvent& err);

/// confine.py's exit code when it could not confine the worker.
inline constexpr int kExitConfineFailed = 123;

/// How a worker's process ended, as the supervisor saw it (sandbox::Outcome, in plain facts).
struct ProcessEnd {
  enum class End { Exited, Signaled, TimedOut, SpawnFailed };
  End end = End::Exited;
  int exit_code = 0;
  bool memory_limit_hit = false;  ///< the job's cgroup killed a process for memory
  bool said_hello = false;        ///< a "hello" event came: the worker's own code had started
  bool said_static = false;  ///< a "static" event came: the worker had read the candidate's source
  bool said_done = false;    ///< a "done" event came: the worker finished
  std::string protocol_error;  ///< a malformed event line, or events without end, if any
  std::string description;     ///< "exit 0", "signal 11 (SIGSEGV)", "timeout after 30 s"
};

/// The process's end as a failure: a timeout; kbx's own fault (harness_error) when the worker
/// could not start or be confined before it said hello, or exited before it read the candidate's
/// source (no candidate code had run: a broken CUDA or torch of the machine's, session 31); the
/// job's memory limit (oom); else a
/// crash for a protocol error (named before a signal: kbx kills for one), a signal, or an end
/// without "done". Passed when it ended as a worker should.
Failure process_failure(const ProcessEnd& end);

/// The detail of a job killed by its own host-memory limit (its cgroup's memory.max): an oom that
/// other jobs did not cause, so one that running the job alone would not change.
inline constexpr const char* kOwnMemoryLimit = "killed by the job's memory limit (cgroup)";

/// The start of a case's harness_error detail when the judge of its random contract (kbx's own
/// process) ran out of the GPU's memory, which other jobs share.
inline constexpr const char* kJudgeOutOfGpuMemory =
    "the judge of this random case ran out of the GPU's memory";

/// What failed in a job apart from its cases.
struct JobWide {
  std::set<std::string> tampered;        ///< timing functions the candidate replaced
  std::optional<ErrorEvent> job_error;   ///< the first error that is no case's (import, timing)
  std::optional<ErrorEvent> last_error;  ///< the last error: what stopped the worker
  Failure process;                       ///< process_failure() of the worker
  std::string stderr_kept;               ///< what the worker wrote on stderr (head and tail)
  bool cases_missing = false;            ///< the worker reported fewer cases than it was given
};

/// The job-wide failure (it applies at every level), first in this order: a replaced timing
/// function (timer_tampered), an error outside the cases, the process's end, missing cases (the
/// status of the error that stopped the worker, else harness_error). Passed when none.
Failure job_wide_failure(const JobWide& job);

/// The job's status: the track's static reject, else its first failing case, else the
/// job-wide failure, else passed.
Failure job_status(const std::optional<Failure>& track_reject, const Failure& first_case,
                   const Failure& job_wide);

}  // namespace kbx::verdict
