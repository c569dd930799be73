#include "sched/ref_pipeline.h"

#include <fmt/format.h>

#include <deque>
#include <future>
#include <numeric>
#include <optional>
#include <utility>

#include "common/util.h"
#include "sched/gpu_slot.h"
#include "store/baselines.h"

namespace kbx::sched {
using nlohmann::json;

namespace {

std::string chunk_names(const std::vector<ReferenceJob>& ref_jobs) {  // for the pipeline trace
  std::string names;
  for (const auto& job : ref_jobs) names += (names.empty() ? "" : ",") + job.task->id();
  return names;
}

}  // namespace

/// A chunk past the lane's gates, until its worker ends or takes the next chunk: what its
/// tasks are guessed to write, which have all their files written (set from its lane, read by
/// the room gate from the others: such a task counts its whole guess as written, so that none
/// of it is still to write while its eager timing waits for the slot; session 19, H200, cold:
/// the lanes waited 785 s for room, guesses of such tasks among what held it), its ticket.
struct ReferencePipeline::ChunkInFlight {
  RoomGate& room;
  const std::vector<ReferenceJob>& jobs;
  std::vector<std::uint64_t> task_guess;
  std::vector<std::atomic<bool>> files_done;
  std::optional<int> ticket;
  ChunkInFlight(RoomGate& gate, const std::vector<ReferenceJob>& chunk)
      : room(gate), jobs(chunk), files_done(chunk.size()) {}
  ChunkInFlight(const ChunkInFlight&) = delete;
  ChunkInFlight& operator=(const ChunkInFlight&) = delete;
  ~ChunkInFlight() {
    if (ticket) room.leave(*ticket);
  }
  void written(const std::string& task) {
    for (size_t k = 0; k < jobs.size(); ++k) {
      if (jobs[k].task->id() == task) files_done[k] = true;
    }
  }
};

ReferencePipeline::ReferencePipeline(ReferenceRunParts parts, ReferenceBaselines baselines,
                                     std::vector<std::vector<ReferenceJob>> chunks,
                                     FootprintGuess& footprint)
    : parts_(std::move(parts)),
      baselines_(std::move(baselines)),
      chunks_(std::move(chunks)),
      footprint_(footprint) {}

ReferencePipeline::~ReferencePipeline() = default;

// What a chunk's tasks need once their references are computed, for those of `ref_jobs` in
// `refs`: the cached baselines added (or the new ones saved), the reference cache stored, the
// files' size measured, and the jobs handed to the lanes (or the task deferred to run alone;
// alone, a put-off task's, held for its batch's end).
// Called for a task as soon as its worker has finished it, or for the rest of the chunk at the
// worker's end; several at once for one chunk.
void ReferencePipeline::finish_tasks(const std::vector<ReferenceJob>& ref_jobs,
                                     std::map<std::string, ReferenceCases>& refs,
                                     const ChunkBaselines& chunk_of, bool alone) {
  const std::string& fp = baselines_.fingerprint;
  if (baselines_.eager) {
    std::lock_guard<std::mutex> lock(parts_.db_mu);
    use_eager_baselines(parts_.db, fp, baselines_.worker_hash, ref_jobs, chunk_of.eager, refs);
  }
  for (const auto& job : ref_jobs) {
    const std::string task = job.task->id();
    auto it = refs.find(task + "|ref");
    if (parts_.ref_cache && !chunk_of.restored.count(task) && it != refs.end())
      parts_.ref_cache->store(chunk_of.cache_key.at(task), job, it->second);
  }
  if (baselines_.compile) {
    std::lock_guard<std::mutex> lock(parts_.db_mu);
    use_compile_baselines(parts_.db, fp, ref_jobs, chunk_of.compile, refs);
  }
  for (const auto& job : ref_jobs) {
    const std::uint64_t bytes = reference_folder_bytes(job);
    footprint_.measured(job.task->category, bytes);
    auto it = refs.find(job.task->id() + "|ref");
    if (!fp.empty() && it != refs.end() && it->second.error.empty()) {
      std::lock_guard<std::mutex> lock(parts_.db_mu);
      remember_footprint(parts_.db, fp, *job.task, parts_.options.device, bytes);
    }
  }
  for (const auto& job : ref_jobs) {
    const std::string task = job.task->id();
    std::vector<const store::Candidate*> todo;
    for (const auto& c : parts_.pending) {
      if (c.task == task) todo.push_back(&c);
    }
    auto it = refs.find(task + "|ref");
    if (it == refs.end()) continue;
    if (const auto retry = alone_retry(it->second.error)) {
      if (!alone) {
        say(fmt::format("reference {}: {}; computed again alone once the rest is done", task,
                        retry->deferred_because));
        trace_pipeline("refs_deferred", task);
        std::lock_guard<std::mutex> lock(deferred_mu_);
        deferred_.push_back(job);
        continue;
      }
      it->second.error =
          retry->prefix + " (computed again alone, after the rest of the run): " + it->second.error;
    }
    if (alone) {  // a put-off reference's batch: its tasks go on together (run_deferred)
      held_.push_back({task, std::move(it->second), std::move(todo)});
      continue;
    }
    trace_pipeline("fed", task);
    parts_.feed.add(task, std::move(it->second), std::move(todo));
  }
}

// What a chunk's jobs take from the machine's caches before its worker starts: cached
// baselines (a task with them times none), references restored from the reference cache.
void ReferencePipeline::prepare_chunk(std::vector<ReferenceJob>& ref_jobs,
                                      ChunkBaselines& chunk_of) {
  const EvalOptions& o = parts_.options;
  const std::string& fp = baselines_.fingerprint;
  for (auto& job : ref_jobs) {
    if (!baselines_.compile) break;
    if (!o.retime_baselines) {
      std::lock_guard<std::mutex> lock(parts_.db_mu);
      chunk_of.compile[job.task->id()] =
          store::cached_baseline(parts_.db, fp, job.task->id(), job.task->hash, "compile");
    }
    job.compile_baseline = chunk_of.compile[job.task->id()].empty();
  }
  for (auto& job : ref_jobs) {
    if (!baselines_.eager) break;
    if (auto it = baselines_.cached_eager.find(job.task->id());
        it != baselines_.cached_eager.end()) {
      chunk_of.eager[job.task->id()] = it->second;
    }
    // the compile baseline is timed in the eager pass (the same inputs, under the slot)
    job.time_eager = chunk_of.eager[job.task->id()].events.empty() || job.compile_baseline;
    if (!job.time_eager) {
      say(
          fmt::format("reference {}: eager timings from this machine's cache "
                      "(--retime-baselines times them again)",
                      job.task->id()));
    }
  }
  ReferenceCache* cache = parts_.ref_cache;
  for (const auto& job : ref_jobs) {
    const std::string task = job.task->id();
    chunk_of.cache_key[task] =
        cache ? cache->key(job, fp, o.time, baselines_.eager_timer_settings) : "";
    if (cache && !job.compile_baseline && cache->restore(chunk_of.cache_key[task], job)) {
      chunk_of.restored.insert(task);
      say(fmt::format("reference {}: from the cache", task));
    }
  }
}

// One chunk's references (and compile baselines), its jobs then handed to the lanes; alone:
// nothing else runs on the GPU (an error of its references is their own). With next_chunk
// (--reference-worker-life lane), the worker goes on with the chunks it gives (after the
// lane's gates) while all its tasks go on as they finish.
void ReferencePipeline::feed_chunk(std::vector<ReferenceJob>& ref_jobs, json* hello,
                                   const std::function<void(const std::string&)>& files_written,
                                   bool alone, const NextChunk& next_chunk) {
  std::deque<ChunkBaselines> baselines(1);  // per chunk the worker took
  std::vector<std::vector<ReferenceJob>*> taken = {&ref_jobs};
  prepare_chunk(ref_jobs, baselines.front());
  trace_pipeline("refs_start", chunk_names(ref_jobs));
  const auto ref_parent = parts_.ref_warm.get();  // null: started cold
  // the hello (with the machine's facts) only until the run's environment is saved: the first
  // chunk's, as a rule
  if (environment_saved_) hello = nullptr;
  // A task the worker has finished goes on at once (session 43: on the H100 a task waited for
  // its chunk's other task and the worker's end), unless the run's environment is still to be
  // saved from this chunk's hello, or the chunk is alone on the GPU (its later tasks too).
  std::vector<std::future<void>> finishing;  // those tasks' finish_tasks
  std::function<void(const std::string&, ReferenceCases&&)> task_ready;
  if (hello == nullptr && !alone) {
    task_ready = [&](const std::string& task, ReferenceCases&& rc) {
      for (size_t k = 0; k < taken.size(); ++k) {
        for (const auto& job : *taken[k]) {
          if (job.task->id() != task) continue;
          auto one = std::make_shared<std::map<std::string, ReferenceCases>>();
          one->emplace(task + "|ref", std::move(rc));
          const ChunkBaselines* chunk_of = &baselines[k];
          finishing.push_back(std::async(std::launch::async, [this, job, one, chunk_of, alone] {
            finish_tasks({job}, *one, *chunk_of, alone);
          }));
          return;  // a task is in one chunk only
        }
      }
    };
  }
  // the worker's next chunk: the lane's gates passed, its caches read (this thread, as
  // task_ready: deque elements stay put for the finishing threads)
  std::function<std::vector<ReferenceJob>()> next_jobs;
  if (next_chunk && task_ready) {
    next_jobs = [&]() -> std::vector<ReferenceJob> {
      trace_pipeline("refs_done", chunk_names(*taken.back()));
      std::vector<ReferenceJob>* chunk = next_chunk();
      if (chunk == nullptr) return {};
      prepare_chunk(*chunk, baselines.emplace_back());
      taken.push_back(chunk);
      trace_pipeline("refs_start", chunk_names(*chunk));
      return *chunk;
    };
  }
  std::map<std::string, ReferenceCases> refs;
  try {
    refs = run_references(parts_.env, ref_jobs, parts_.options.time, hello, ref_parent.get(),
                          files_written, task_ready, next_jobs);
  } catch (...) {
    for (auto& f : finishing) f.wait();
    throw;
  }
  trace_pipeline("refs_done", chunk_names(*taken.back()));
  for (auto& f : finishing) f.get();
  if (hello && !hello->is_null() && !environment_saved_) {
    parts_.save_environment(*hello);
    environment_saved_ = true;
  }
  // each chunk's tasks not handed on: those run_references returns
  for (size_t k = 0; k < taken.size(); ++k) {
    std::vector<ReferenceJob> rest;
    for (const auto& job : *taken[k]) {
      if (refs.count(job.task->id() + "|ref")) rest.push_back(job);
    }
    finish_tasks(rest, refs, baselines[k], alone);
  }
}

void ReferencePipeline::run_first_chunk(json& hello) {
  if (!chunks_.empty()) feed_chunk(chunks_.front(), &hello, {}, false);
}

// Chunk i through the lane's gates: at most live_cap tasks live, room for its files
std::unique_ptr<ReferencePipeline::ChunkInFlight> ReferencePipeline::enter_chunk(size_t i) {
  JobFeed& feed = parts_.feed;
  trace_pipeline("gate_wait", fmt::format("chunk{}", i));
  feed.wait_until_live_at_most(live_cap_);
  trace_pipeline("gate_pass", fmt::format("chunk{}", i));
  auto chunk = std::make_unique<ChunkInFlight>(*room_, chunks_[i]);
  for (const auto& job : chunks_[i])
    chunk->task_guess.push_back(footprint_.guess(job.task->category, job.task->id()));
  const std::uint64_t guess =
      std::accumulate(chunk->task_guess.begin(), chunk->task_guess.end(), std::uint64_t{0});
  trace_pipeline("room_wait", fmt::format("chunk{}", i));
  // no task's files to wait for: none live, and none kept for parked jobs (those are made
  // to run alone, which frees theirs)
  const auto nothing_live = [&feed] { return feed.live() == 0 && !feed.parked_hold_files(); };
  // what the chunk's references have written so far (their folders)
  const ChunkInFlight* in_flight = chunk.get();
  chunk->ticket = room_
                      ->enter(guess, nothing_live,
                              [in_flight] {
                                return chunk_written_bytes(in_flight->jobs, in_flight->files_done,
                                                           in_flight->task_guess);
                              })
                      .ticket;
  trace_pipeline("room_pass", fmt::format("chunk{}", i));
  return chunk;
}

void ReferencePipeline::fail(std::exception_ptr failure) {
  std::lock_guard<std::mutex> lock(failure_mu_);
  if (!failure_) failure_ = std::move(failure);
}

// One reference lane: chunk after chunk, each through the lane's gates, a worker per chunk or
// (keep_workers_) one worker taking the lane's next chunks.
void ReferencePipeline::reference_lane() {
  try {
    for (size_t i; (i = next_chunk_++) < chunks_.size();) {
      std::unique_ptr<ChunkInFlight> in_flight = enter_chunk(i);
      json hello;
      std::optional<ReferenceTurn> turn(std::in_place, parts_.feed);
      NextChunk more;
      if (keep_workers_) {
        more = [&]() -> std::vector<ReferenceJob>* {
          const size_t k = next_chunk_++;
          if (k >= chunks_.size()) return nullptr;
          // Idle while it waits at the gates: not a reference in flight then, or jobs made to
          // run alone (JobFeed's drain, which waits for those) and this worker, which waits
          // for the drain, would wait for each other. The alone jobs then run beside its idle
          // CUDA context.
          turn.reset();
          in_flight.reset();  // the last chunk's files are written, its tasks gone on
          in_flight = enter_chunk(k);
          turn.emplace(parts_.feed);
          return &chunks_[k];
        };
      }
      feed_chunk(
          chunks_[i], &hello, [&](const std::string& task) { in_flight->written(task); }, false,
          more);
    }
  } catch (...) {
    fail(std::current_exception());
    next_chunk_ = chunks_.size();  // the others stop after their chunk
  }
}

// The references put off to run alone, in batches, each batch once nothing else is live (no
// reference lane is left to add to them): each reference computed by a worker of its own (a
// fresh process, as its first try's error may have come from its process's state), one after
// the other, alone on the GPU; the batch's tasks then go to the lanes together, so that their
// jobs run side by side rather than each reference waiting for the previous task's jobs
// (session 45, H100: two put-off tasks, one after the other, made a 10.6 s tail of the 184
// references' warm run). A batch holds as many tasks as the room takes their guessed files
// (they all stay until their jobs end; such references can be the largest), at least one.
void ReferencePipeline::run_deferred() {
  try {
    for (std::size_t first = 0; first < deferred_.size();) {
      parts_.feed.wait_until_live_at_most(0);
      const std::uint64_t free_now = free_bytes_for(parts_.env.work_dir);
      const std::uint64_t reserve = room_reserve_bytes();
      const std::uint64_t room = free_now > reserve ? free_now - reserve : 0;
      std::vector<ReferenceJob> batch;
      for (std::uint64_t guessed = 0; first < deferred_.size(); ++first) {
        const ReferenceJob& job = deferred_[first];
        guessed += footprint_.guess(job.task->category, job.task->id());
        if (!batch.empty() && guessed > room) break;
        batch.push_back(job);
        batch.back().alone = true;
      }
      for (const ReferenceJob& job : batch) {
        std::vector<ReferenceJob> one{job};
        json hello;
        const ReferenceTurn turn(parts_.feed);
        feed_chunk(one, &hello, {}, true);
      }
      for (HeldTask& held : held_) {
        trace_pipeline("fed", held.task);
        parts_.feed.add(held.task, std::move(held.refs), std::move(held.jobs));
      }
      held_.clear();
    }
  } catch (...) {
    fail(std::current_exception());
  }
}

void ReferencePipeline::start(int reference_lanes, std::size_t live_cap, bool keep_workers) {
  live_cap_ = live_cap;
  keep_workers_ = keep_workers;
  // ... and while the machine has room for their files (on a GPU machine the work folder is
  // often /dev/shm: 184 tasks' references ran the H200 host out of memory at 113 GB of files).
  const std::filesystem::path work_dir = parts_.env.work_dir;
  room_ = std::make_unique<RoomGate>(room_reserve_bytes(),
                                     [work_dir] { return free_bytes_for(work_dir); });
  thread_ = std::thread([this, reference_lanes] {
    std::vector<std::thread> workers;
    for (int k = 0; k < reference_lanes; ++k) workers.emplace_back([this] { reference_lane(); });
    for (auto& w : workers) w.join();
    run_deferred();
    parts_.feed.close();
  });
}

void ReferencePipeline::join() {
  if (thread_.joinable()) thread_.join();
  if (failure_) std::rethrow_exception(failure_);
}

}  // namespace kbx::sched
