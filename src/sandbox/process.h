#pragma once
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "sandbox/confine.h"
#include "sandbox/quiet.h"

namespace kbx::sandbox {

/// What a worker process may do and see.
struct Limits {
  double wall_seconds = 600;                   ///< killed (whole process group) after this
  bool isolate_network = true;                 ///< new network namespace when the OS allows it
  std::uint64_t max_file_bytes = 64ULL << 30;  ///< RLIMIT_FSIZE
  size_t keep_output_bytes = 16384;            ///< head and tail kept of stdout and stderr each
  /// Protocol events beyond either bound are a protocol error and end the worker: what the
  /// supervisor keeps of them is in its own memory (a candidate writing events without end ran
  /// it out of memory). A job's events are a few MB at most.
  std::uint64_t max_event_bytes = 64ULL << 20;
  size_t max_events = 200000;
};

/// The right to run a job's heavy GPU work (its full-size cases and its timed loops) with no
/// other job's heavy work on the same GPU. A worker asks for it with a "slot_wanted" event and
/// holds it until it has ended: it cannot hand it back early.
class ExclusiveSlot {
 public:
  virtual ~ExclusiveSlot() = default;
  /// True once this job holds the slot; false while another holds it (asked again later).
  virtual bool try_acquire() = 0;
  virtual void release() = 0;
};

/// More work for a worker that asked for it (Spawn::more_work).
struct MoreWork {
  std::string line;      ///< one JSON line for its request pipe; empty: none ("end" is sent)
  double seconds = 0.0;  ///< added to its time limit for that work
};

/// A process to start: argv[0] is an absolute path; env is the whole environment it gets.
struct Spawn {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::filesystem::path cwd;
  std::string request;  ///< written to the request pipe (fd 3 in the child), then closed
  Limits limits;
  /// Gives the child a pipe on fd 5 whose bytes the supervisor keeps (Outcome::probe_bytes):
  /// the timing probe's records, which the child cannot take back once written.
  bool probe_pipe = false;
  /// The confinement plan (sandbox/confine.h) a candidate worker carries out before any of its
  /// code runs; null for trusted workers. With a plan, the child gets a pipe on kInitPidFd on
  /// which it reports the host pid of its namespace's init, which the supervisor kills at the
  /// end of the job (and with it every process in the namespace).
  nlohmann::json confine;
  /// With a slot, the request is sent as one line and fd 3 stays open: when the worker sends
  /// "slot_wanted", the line "go" follows on fd 3 once the slot is this job's. The time spent
  /// waiting for it does not count against limits.wall_seconds.
  ExclusiveSlot* slot = nullptr;
  /// A trusted worker (the references) may hand the slot back with a "slot_done" event and ask
  /// for it again later.
  bool slot_handback = false;
  /// A candidate may hand it back once, with "slot_done" when its timed loops are over (its file
  /// writes and teardown then run beside other jobs); it is never granted again, and any timing
  /// after that is not trusted (Outcome::slot_released_after). Otherwise a candidate's slot is
  /// released only once its processes are dead.
  bool slot_handback_once = false;
  /// Called once, from the supervising thread, when the worker hands the slot back for good
  /// (slot_handback_once): what the job does after it no longer needs the GPU alone.
  std::function<void()> on_slot_handed_back;
  /// The worker's "done" ends it: its processes are killed at once and the slot released then,
  /// not after its teardown (the worker synchronised the GPU and flushed its probe records before
  /// saying done); an exit by that kill counts as exit 0. A worker that says done early is cut
  /// off, like one that exits.
  bool end_at_done = false;
  /// A trusted worker may ask for more work with a "more_wanted" event: called then, from the
  /// supervising thread (it may wait), and its line written on the request pipe, which stays
  /// open for it. The time it took does not count against limits.wall_seconds, and the work's
  /// seconds and a new allowance of events are added to the limits. Empty: never asked.
  std::function<MoreWork()> more_work;
  /// The jobs of this run that share the host: the job is a member while it runs (frozen while
  /// another job's host-bound calls are timed), and while it holds the slot its worker may ask
  /// for a quiet host with a "quiet_wanted" event: the line "quiet" (the others are frozen) or
  /// "loud" (refused) follows on fd 3; "quiet_done" thaws them. Null: no quiet host. Asked again
  /// while its hush lasts, the answer is "still" (the others stayed frozen since the last answer).
  QuietRoom* quiet = nullptr;
  /// A hush that has lasted this long is ended and begun anew at the holder's next ask ("quiet"
  /// rather than "still"), well before QuietRoom's cap would end it inside a timed case.
  double quiet_renew_after_seconds = QuietRoom::kMaxQuietSeconds / 2;
  /// Until its worker's "cuda_next" event (answered "ok" on fd 3, which must stay open:
  /// Spawn::slot) the job runs kbx's own code only (its start, hello, the source check: CPU
  /// work, no GPU context): `quiet` freezes it then only for host-bound timed calls
  /// (QuietRoom::join_cpu_only), not for those that only queue GPU work. A "slot_wanted" ends
  /// that too.
  bool cpu_only_until_cuda = false;
  /// While it holds the slot, the worker's main thread runs on this CPU only (one near the GPU,
  /// the same in every run: a host-bound call's gaps depend on the core it waits on); -1: any.
  int slot_cpu = -1;
};

/// The descriptor on which a confined child reports its namespace init's pid.
inline constexpr int kInitPidFd = 9;

/// How a worker process ended, with what it said.
struct Outcome {
  enum class End { Exited, Signaled, TimedOut, SpawnFailed };
  End end = End::Exited;
  int exit_code = 0;
  int signal = 0;
  bool network_isolated = false;
  pid_t init_pid = 0;  ///< host pid of a confined worker's namespace init (0: none reported)
  bool memory_limit_hit = false;  ///< the job's cgroup killed a process for memory
  double wall_seconds = 0;
  std::string stdout_kept;  ///< head (and tail, if long) of what it printed
  std::string stderr_kept;
  std::uint64_t event_bytes = 0;  ///< bytes the worker wrote on its event pipe
  std::uint64_t stdout_bytes = 0;
  std::uint64_t stderr_bytes = 0;
  std::vector<nlohmann::json> events;  ///< the worker's protocol events, in order
  std::vector<double> event_seconds;   ///< when each event arrived, seconds after the spawn
  double exited_seconds = 0;           ///< when the worker was reaped, seconds after the spawn
  std::string protocol_error;    ///< a malformed event, or events past Limits (the worker ended)
  std::string probe_bytes;       ///< what the child wrote to fd 5 (Spawn::probe_pipe)
  bool probe_truncated = false;  ///< more than kMaxProbeBytes came; the rest was dropped
  /// How many events had come when the worker was given the slot (Spawn::slot); -1: never.
  int slot_granted_after = -1;
  /// How many events had come when the worker handed the slot back for good
  /// (Spawn::slot_handback_once); -1: never.
  int slot_released_after = -1;
  /// The spans of events between an interim hand-back ("slot_done" with "again": true, from a
  /// Spawn::slot_handback_once worker) and its next grant: [released after, granted after), the
  /// second -1 when it was never granted again. No timing may come inside one.
  std::vector<std::pair<int, int>> slot_gaps;
  /// The worker asked for the slot again after handing it back for good: it is never granted,
  /// and the worker was ended at once (its wait would only have run into the time limit).
  bool slot_asked_after_close = false;
  double slot_wait_seconds = 0;  ///< from "slot_wanted" to the grant
  /// How long it was frozen while other jobs' timed loops ran on a quiet host (Spawn::quiet).
  double frozen_seconds = 0;

  /// "exit 0", "signal 11 (SIGSEGV)", "timeout after 30 s", ...
  std::string describe() const;
};

/// Most bytes of probe records kept per worker.
inline constexpr size_t kMaxProbeBytes = size_t{1} << 30;

/// How many descriptors a Launcher hands to a child.
inline constexpr int kLaunchFds = 6;

/// Starts sandboxed processes and collects their exit status: by fork/exec (the default), or
/// through a warm parent that has its imports done (sandbox/warm.h).
class Launcher {
 public:
  virtual ~Launcher() = default;
  /// Starts spawn with fds[0..5] as its request, event, stdout, stderr, probe and init-pid
  /// descriptors (fds[4] and fds[5] are -1 when unused); returns the pid (also its process
  /// group), or -1 when it could not start.
  virtual pid_t launch(const Spawn& spawn, const int fds[kLaunchFds]) = 0;
  /// True (with the wait status) once the process has ended. What is left of its process group
  /// is killed before it is reaped, while its pid still names the group: after the reap, the
  /// number may go to another process (and group).
  virtual bool try_reap(pid_t pid, int* status) = 0;
  /// Waits for the process to end; returns its wait status. Kills its group first, as try_reap.
  virtual int reap(pid_t pid) = 0;
};

/// fork/exec of spawn.argv.
Launcher& direct_launcher();

/// Runs a worker: fds 3 (request, read) and 4 (events, write) in the child; stdout/stderr
/// captured; new process group killed at the end. on_event is called per event as it arrives.
Outcome run(const Spawn& spawn, const std::function<void(const nlohmann::json&)>& on_event = {},
            Launcher& launcher = direct_launcher());

/// The environment a worker gets: an allowlist of the parent's variables (PATH, locale, CUDA
/// and library paths), never credentials, plus the given overrides.
std::map<std::string, std::string> scrubbed_environment(
    const std::map<std::string, std::string>& overrides);

}  // namespace kbx::sandbox
