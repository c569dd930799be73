#pragma once
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/warm.h"
#include "sched/evaluate.h"
#include "sched/progress.h"
#include "sched/reference.h"
#include "store/store.h"
#include "suite/task.h"

namespace kbx::sched {

/// The warm parent candidates fork from, started again when it dies (a candidate may kill it).
/// Shared by the lanes: each job holds the parent it started under until it ends.
class WarmParents {
 public:
  /// enabled false: every job starts cold (fork/exec), get() gives null. argv, env and cwd
  /// start the parent (a trusted process: sched::trusted_argv, in a folder no candidate sees);
  /// `whose` names its jobs in messages ("candidates", "references").
  WarmParents(bool enabled, std::vector<std::string> argv, std::map<std::string, std::string> env,
              std::filesystem::path cwd, std::string whose = "candidates");
  /// The live parent, started (again) when there is none or it died; null when warm starts are
  /// off or the parent will not stay up (then its jobs start cold).
  std::shared_ptr<sandbox::WarmParent> get();
  /// Stops the parent (when no job holds it any more); a later get() starts a new one.
  void stop();

 private:
  std::mutex mu_;
  bool enabled_;
  std::vector<std::string> argv_;
  std::map<std::string, std::string> env_;
  std::filesystem::path cwd_;
  std::string whose_;
  std::shared_ptr<sandbox::WarmParent> current_;
  int starts_ = 0;
};

/// While alive: SIGINT or SIGTERM from anyone but kbx's own descendants (a terminal, a user, a
/// batch system's time limit) closes this kbx's open attempts as "interrupted" before kbx dies of
/// the signal as it would have, so that the jobs it interrupted get no strike. A signal from a
/// descendant (a candidate) kills kbx with the attempt left open: a strike.
class InterruptGuard {
 public:
  InterruptGuard(store::Store& db, std::mutex& db_mu, std::int64_t run_id);
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  void watch(store::Store& db, std::mutex& db_mu, std::int64_t run_id);
  int stop_[2] = {-1, -1};
  std::thread watcher_;
};

/// A job's ties to the run: the database (under db_mu), the progress line and the counters.
struct JobContext {
  store::Store& db;
  std::mutex& db_mu;
  std::int64_t run_id;
  Progress& progress;
  const WorkerEnv& cand_env;  ///< launcher is replaced per job by warm's parent
  WarmParents& warm;
  const JobSettings& settings;
  int lanes = 1;
  /// Jobs beyond `lanes` that may still be finishing: a lane is a job from its start until its
  /// worker exited (finishing_from_exit: kbx's comparisons remain) or handed the GPU's slot back
  /// (its files and teardown remain too) (LaneGate); --finishing-jobs, 0 by default.
  int finishing_jobs = 0;
  std::atomic<int> harness_errors{0};  ///< harness_error rows stored and lane faults
  /// --gpus: lane k runs its jobs on gpus[k % size] (one timing slot per GPU); empty: the GPU
  /// of this process's CUDA_VISIBLE_DEVICES.
  std::vector<std::string> gpus;
  /// The CPU slot holders of gpus[k] are pinned to (sandbox::Spawn::slot_cpu); empty: the one of
  /// cand_env for every job.
  std::vector<int> slot_cpus;
  /// The warm parent of trusted workers (a job's judge forks from it); null: they start cold.
  WarmParents* trusted_warm = nullptr;
  bool finishing_from_exit = true;  ///< --finishing-from exit, else handback (finishing_jobs)
};

/// The lanes of a run: at most `lanes` jobs hold one at a time, each from its start until it no
/// longer needs its lane (its worker handed the GPU's slot back, or it ended), whichever first.
class LaneGate {
 public:
  explicit LaneGate(int lanes) : free_(std::max(1, lanes)) {}
  /// One job's hold on a lane: taken when made (waits for a free one), given back once, by
  /// release() or when destroyed.
  class Hold {
   public:
    explicit Hold(LaneGate& gate);
    ~Hold() { release(); }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    void release();

   private:
    LaneGate& gate_;
    std::atomic<bool> held_{true};
  };
  int free_lanes() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable freed_;
  int free_;
};

/// Strikes at which a job is stored as killed_harness instead of being run again.
inline constexpr int kStrikesToSkip = 2;

/// Stores killed_harness for the pending jobs that took kbx or its warm parent down twice
/// (attempts without an end), and returns the others.
std::vector<store::Candidate> skip_struck(JobContext& ctx, std::vector<store::Candidate> pending,
                                          const std::map<std::string, const suite::Task*>& tasks);

/// The jobs of a run, handed to the lanes as their tasks' references become ready: the
/// references of later tasks are computed while the lanes run the earlier tasks' candidates
/// (issue 14's pipeline), and a task's files go as soon as its last job has ended.
class JobFeed {
 public:
  struct Item {
    const store::Candidate* candidate = nullptr;
    const ReferenceCases* refs = nullptr;  ///< the task's references (kept until its jobs end)
    /// A parked job handed back to run alone: no other job and no reference runs meanwhile.
    bool alone = false;
  };
  /// Called once per task, after its last job ended, with the task's id and references (their
  /// folders are what goes then).
  using TaskDone = std::function<void(const std::string& task, const ReferenceCases& refs)>;
  explicit JobFeed(TaskDone on_task_done = {});
  /// Adds a task's references and its jobs (none: the task is done at once).
  void add(const std::string& task, ReferenceCases refs, std::vector<const store::Candidate*> jobs);
  /// No task will be added any more: next() ends once the queue is empty.
  void close();
  /// The next job, waiting while none is ready and the feed is open; none when the feed is
  /// closed, empty and no parked job is left. Parked jobs come back marked `alone`, one at a time,
  /// once no other job runs and no reference is being computed: when the parked tasks reach the
  /// bound (set_parked_bound), when the room gate needs their files gone (parked_hold_files),
  /// and when the feed is closed. No other job is handed out while parked ones wait for that.
  std::optional<Item> next();
  /// One of the task's jobs ended (its verdict stored, or given up on).
  void job_ended(const std::string& task);
  /// A job whose result beside the others was no verdict (not_a_verdict_beside_others): it runs
  /// again alone (next()); its task's files stay until then, but the task no longer counts as
  /// live.
  void park(const Item& item);
  /// The number of parked jobs' tasks (their files kept) at which they run alone before any
  /// other job (0: only once the feed is closed or the room gate asks).
  void set_parked_bound(size_t tasks);
  /// Whether parked jobs hold files (then they are made to run alone soon, which frees them).
  bool parked_hold_files();
  /// A reference chunk starts (waits while parked jobs run alone) or ends: parked jobs run alone
  /// only while none is being computed.
  void reference_started();
  void reference_ended();
  /// Waits until at most `live` tasks have jobs that are ready or running (files on disk).
  void wait_until_live_at_most(size_t live);
  /// Tasks with jobs ready or running now.
  size_t live();

 private:
  size_t live_locked() const;  ///< under mu_
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, ReferenceCases> refs_;  ///< by task; nodes stay put while jobs use them
  std::map<std::string, size_t> open_jobs_;     ///< by task, while some have not ended
  std::map<std::string, size_t> parked_jobs_;   ///< by task: open jobs waiting for the retries
  std::deque<Item> ready_;
  std::vector<Item> parked_;         ///< not yet handed back to run alone
  std::deque<Item> alone_;           ///< handed back one at a time while draining_
  bool draining_ = false;            ///< parked jobs are being run alone
  bool drain_asked_ = false;         ///< by parked_hold_files()
  bool alone_running_ = false;       ///< an alone job is out
  size_t parked_bound_ = 0;          ///< see set_parked_bound
  size_t running_ = 0;               ///< jobs handed out, neither ended nor parked
  size_t references_in_flight_ = 0;  ///< reference chunks being computed
  bool closed_ = false;
  bool drain_due_locked() const;  ///< under mu_
  TaskDone on_task_done_;
};

/// A reference chunk being computed (JobFeed::reference_started, then reference_ended), for as
/// long as it lives.
class ReferenceTurn {
 public:
  explicit ReferenceTurn(JobFeed& feed) : feed_(feed) { feed_.reference_started(); }
  ~ReferenceTurn() { feed_.reference_ended(); }
  ReferenceTurn(const ReferenceTurn&) = delete;
  ReferenceTurn& operator=(const ReferenceTurn&) = delete;

 private:
  JobFeed& feed_;
};

/// Why a job's result beside other jobs is no verdict, as the attempt's outcome: the warm parent
/// died ("warm_parent_died"), kbx failed on it ("retry"), it ran out of the GPU's memory, which
/// the others share ("oom_beside"), or a timed case began with another process's GPU work still
/// running ("contended_beside": a neighbour's queued kernels time-slice with the timed calls), or
/// its process ran out of the GPU's memory before a timing ended ("starved_beside": a library
/// may have kept a slower plan for want of workspace).
/// Empty when the result stands. Such a job runs again alone, where its outcome is its own.
std::string not_a_verdict_beside_others(const store::Result& result, bool parent_died);

/// Whether a case of the result was timed with another process's GPU work running (its timing
/// flag `contended`).
bool timed_contended(const store::Result& result);

/// Whether a case of the result was timed in a process that had found no room on the GPU for
/// an allocation (its timing flag `starved`).
bool timed_starved(const store::Result& result);

/// The line that says how many of a run's jobs ran again alone and why, from its attempts'
/// outcomes (Store::attempt_outcomes): "3 jobs ran again alone (contended_beside 2, oom_beside
/// 1)"; empty when none did.
std::string again_alone_summary(const std::map<std::string, int>& outcomes);

/// Runs the feed's jobs in ctx.lanes lanes until it is closed and empty; the jobs whose result
/// was no verdict beside the others (not_a_verdict_beside_others) run again alone, one at a time
/// (JobFeed::next says when): each
/// job ends with exactly one stored verdict, which is killed_harness for one that took the warm
/// parent down twice. No exception leaves a lane.
void run_jobs(JobContext& ctx, JobFeed& feed,
              const std::map<std::string, const suite::Task*>& tasks);

}  // namespace kbx::sched
