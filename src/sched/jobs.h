#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
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
  /// enabled false: every candidate starts cold (fork/exec), get() gives null. argv, env and cwd
  /// start the parent (a trusted process: sched::trusted_argv, in a folder no candidate sees).
  WarmParents(bool enabled, std::vector<std::string> argv, std::map<std::string, std::string> env,
              std::filesystem::path cwd);
  /// The live parent, started (again) when there is none or it died; null when warm starts are
  /// off or the parent will not stay up (then candidates start cold).
  std::shared_ptr<sandbox::WarmParent> get();
  /// Stops the parent (when no job holds it any more); a later get() starts a new one.
  void stop();

 private:
  std::mutex mu_;
  bool enabled_;
  std::vector<std::string> argv_;
  std::map<std::string, std::string> env_;
  std::filesystem::path cwd_;
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
  std::atomic<int> harness_errors{0};  ///< harness_error rows stored and lane faults
  /// --gpus: lane k runs its jobs on gpus[k % size] (one timing slot per GPU); empty: the GPU
  /// of this process's CUDA_VISIBLE_DEVICES.
  std::vector<std::string> gpus;
};

/// Strikes at which a job is stored as killed_harness instead of being run again.
inline constexpr int kStrikesToSkip = 2;

/// Stores killed_harness for the pending jobs that took kbx or its warm parent down twice
/// (attempts without an end), and returns the others.
std::vector<store::Candidate> skip_struck(JobContext& ctx, std::vector<store::Candidate> pending,
                                          const std::map<std::string, const suite::Task*>& tasks);

/// Runs jobs in ctx.lanes lanes, then, one at a time, the jobs that met a harness fault (the warm
/// parent died, or kbx failed on it): each job ends with exactly one stored verdict, which is
/// killed_harness for one that took the warm parent down twice. No exception leaves a lane.
void run_jobs(JobContext& ctx, const std::vector<const store::Candidate*>& jobs,
              const std::map<std::string, const suite::Task*>& tasks,
              const std::map<std::string, ReferenceCases>& refs);

}  // namespace kbx::sched
