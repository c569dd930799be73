#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "sched/baselines.h"
#include "sched/eval.h"
#include "sched/jobs.h"
#include "sched/ref_cache.h"
#include "sched/reference.h"
#include "sched/room.h"
#include "store/store.h"

namespace kbx::sched {

/// What a chunk of references starts from, per task: the baselines cached for it, and its key
/// in the reference cache (restored: read from the cache, so not stored again).
struct ChunkBaselines {
  std::map<std::string, store::CaseSamples> compile;  ///< cached torch.compile samples
  std::map<std::string, EagerSamples> eager;          ///< cached eager samples
  std::map<std::string, std::string> cache_key;
  std::set<std::string> restored;
};

/// The parts of a run that its reference pipeline uses: run_eval owns them all, and they outlive
/// the pipeline.
struct ReferenceRunParts {
  const EvalOptions& options;
  const WorkerEnv& env;  ///< the reference workers' (with the kernel cache)
  store::Store& db;
  std::mutex& db_mu;  ///< db's, shared with the lanes
  std::int64_t run_id = 0;
  const std::vector<store::Candidate>& pending;  ///< the run's jobs still to do
  WarmParents& ref_warm;                         ///< the trusted workers' warm parent
  JobFeed& feed;                                 ///< where a task's jobs go, its references done
  ReferenceCache* ref_cache = nullptr;           ///< null: off
  /// Saves the run's environment from a reference worker's hello (once).
  std::function<void(const nlohmann::json& hello)> save_environment;
};

/// How the run's baselines are taken: this machine's fingerprint, the eager timer's keys, and the
/// eager samples cached per task (read once at the run's start).
struct ReferenceBaselines {
  std::string fingerprint;  ///< empty: no baselines or cache used
  std::string worker_hash;
  std::string eager_timer_settings;
  bool eager = false;                                ///< eager timings (cached per machine)
  bool compile = false;                              ///< torch.compile baselines too
  std::map<std::string, EagerSamples> cached_eager;  ///< task -> samples (empty: none)
};

/// The run's reference work (issue 14's pipeline): the tasks in chunks, each chunk's references
/// computed by a reference worker while the lanes run the candidates of earlier chunks, each
/// task's jobs handed to the lanes (JobFeed) as soon as its references are done. Several workers
/// at once, each through its lane's gates (live tasks, room for files), each kept across its
/// lane's chunks by default; references that met other work's memory or GPU time are computed
/// again alone at the end.
class ReferencePipeline {
 public:
  ReferencePipeline(ReferenceRunParts parts, ReferenceBaselines baselines,
                    std::vector<std::vector<ReferenceJob>> chunks, FootprintGuess& footprint);
  ReferencePipeline(const ReferencePipeline&) = delete;
  ReferencePipeline& operator=(const ReferencePipeline&) = delete;
  ~ReferencePipeline();

  /// The first chunk, before any lane starts: its worker's hello (the machine's facts) goes into
  /// `hello` and the run's environment.
  void run_first_chunk(nlohmann::json& hello);
  /// Whether the run's environment has been saved from a hello.
  bool environment_saved() const { return environment_saved_; }
  /// The other chunks on reference_lanes workers at once, in the background; a chunk starts only
  /// while at most live_cap tasks are live. keep_workers: a worker takes its lane's next chunk
  /// instead of ending (--reference-worker-life lane).
  void start(int reference_lanes, std::size_t live_cap, bool keep_workers);
  /// Waits for every chunk (and the feed's end); rethrows a reference worker's failure.
  void join();

 private:
  struct ChunkInFlight;
  using NextChunk = std::function<std::vector<ReferenceJob>*()>;

  void finish_tasks(const std::vector<ReferenceJob>& ref_jobs,
                    std::map<std::string, ReferenceCases>& refs, const ChunkBaselines& chunk_of,
                    bool alone);
  void prepare_chunk(std::vector<ReferenceJob>& ref_jobs, ChunkBaselines& chunk_of);
  void feed_chunk(std::vector<ReferenceJob>& ref_jobs, nlohmann::json* hello,
                  const std::function<void(const std::string&)>& files_written, bool alone,
                  const NextChunk& next_chunk = {});
  std::unique_ptr<ChunkInFlight> enter_chunk(std::size_t i);
  void reference_lane();
  void run_deferred();
  void fail(std::exception_ptr failure);

  ReferenceRunParts parts_;
  ReferenceBaselines baselines_;
  std::vector<std::vector<ReferenceJob>> chunks_;
  FootprintGuess& footprint_;
  std::atomic<bool> environment_saved_{false};
  /// References that ran out of the GPU's memory beside other work, or whose baselines met
  /// another process's GPU work that did not drain (alone_retry): computed again at the end,
  /// alone on the GPU, before their jobs run (their error stands only then). Otherwise a
  /// candidate holding the GPU's memory could turn another method's tasks into reference_error
  /// (session 29 on the H200: a 32 GiB float64 shadow of an honest reference met 108 GiB held by
  /// the jobs beside it), and one that queues seconds of kernels could slow the eager baselines
  /// timed meanwhile (session 30: 2x for calls of 3 ms and more).
  std::mutex deferred_mu_;
  std::vector<ReferenceJob> deferred_;
  /// A put-off task whose references are done (finish_tasks with alone), held back from the
  /// lanes until its batch is done (run_deferred, on the reference thread alone).
  struct HeldTask {
    std::string task;
    ReferenceCases refs;
    std::vector<const store::Candidate*> jobs;
  };
  std::vector<HeldTask> held_;
  std::mutex failure_mu_;
  std::exception_ptr failure_;
  std::atomic<std::size_t> next_chunk_{1};
  std::unique_ptr<RoomGate> room_;
  std::size_t live_cap_ = 0;
  bool keep_workers_ = true;
  std::thread thread_;
};

}  // namespace kbx::sched
