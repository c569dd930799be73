#include "sched/reference.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>
#include <string_view>

#include "common/util.h"
#include "kbx/probe_records.h"
#include "sched/gpu_slot.h"
#include "sched/room.h"
#include "timing/case_timing.h"
#include "timing/probe_timing.h"

namespace kbx::sched {

std::uint64_t reference_folder_bytes(const ReferenceJob& job) {
  const bool inputs_apart = !job.in_dir.empty() && job.in_dir != job.out_dir;
  return folder_bytes(job.out_dir) + (inputs_apart ? folder_bytes(job.in_dir) : 0);
}

namespace fs = std::filesystem;
using nlohmann::json;

std::uint64_t chunk_written_bytes(const std::vector<ReferenceJob>& jobs,
                                  const std::vector<std::atomic<bool>>& files_done,
                                  const std::vector<std::uint64_t>& guesses) {
  std::uint64_t bytes = 0;
  for (size_t k = 0; k < jobs.size(); ++k) {
    const bool done = k < files_done.size() && files_done[k].load();
    bytes += done && k < guesses.size() ? guesses[k] : reference_folder_bytes(jobs[k]);
  }
  return bytes;
}

bool time_by_probe(json& ev, const timing::CallRecords& index) {
  bool changed = false;
  for (const auto& [ids_key, ms_key] : {std::pair{"probe_ids", "eager_probe_ms"},
                                        std::pair{"compile_probe_ids", "compile_probe_ms"}}) {
    const auto ids = ev.value(ids_key, std::vector<std::uint64_t>{});
    if (ids.empty()) continue;
    const auto calls = timing::every_call_analyzed(index, ids);
    if (!calls) {  // some calls have no records: their events stand
      std::fprintf(stderr,
                   "kbx: reference %s %s: the probe did not record GPU work for all %zu timed "
                   "calls (%s); its time stays from CUDA events\n",
                   ev.value("task", "").c_str(), ev.value("case", "").c_str(), ids.size(), ids_key);
      continue;
    }
    if (std::string_view(ms_key) == "eager_probe_ms") timing::mark_eager_launch_gaps(ev, *calls);
    ev[ms_key] = calls->span_ms;
    changed = true;
  }
  return changed;
}

namespace {

/// Eager timings from the probe's records ("eager_probe_ms" per timed case), written back to
/// each task's cases.json; the CUDA-event samples stay as the cross-check.
void add_probe_spans(const sandbox::Outcome& o, const json& pending,
                     std::map<std::string, ReferenceCases>& out) {
  std::vector<probe::Record> records;
  std::string error;
  if (!probe_records(o, &records, &error)) {
    std::fprintf(stderr,
                 "kbx: the reference worker's probe stream is invalid (%s); eager timings stay "
                 "from CUDA events\n",
                 error.c_str());
    return;
  }
  if (o.probe_truncated) {
    std::fprintf(stderr,
                 "kbx: the reference worker's probe stream passed its cap (%zu MiB) and was cut: "
                 "timed calls after the cut keep their CUDA-event times\n",
                 sandbox::kMaxProbeBytes >> 20);
  }
  const timing::CallRecords index(records);
  for (const auto& job : pending) {
    ReferenceCases& rc =
        out[job["task"].get<std::string>() + "|" + job["label"].get<std::string>()];
    bool changed = false;
    for (auto& ev : rc.cases) changed = time_by_probe(ev, index) || changed;
    if (changed && fs::exists(rc.dir / "cases.json")) {
      write_file(rc.dir / "cases.json", json(rc.cases).dump());
    }
  }
}

/// With KBX_DEBUG_TIMING: where a reference case's time went (seconds per step).
void print_case_phases(const json& ev) {
  std::string line =
      fmt::format("kbx: reference {} {} ({}): {:.2f} s", ev.value("task", ""), ev.value("case", ""),
                  ev.value("tier", ""), ev.value("seconds", 0.0));
  if (ev.contains("phases") && ev["phases"].is_object()) {
    for (const auto& [name, seconds] : ev["phases"].items()) {
      if (seconds.is_number()) line += fmt::format(" {}={:.3f}", name, seconds.get<double>());
    }
  }
  std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace

bool out_of_gpu_memory(const std::string& error) {
  return error.starts_with("OutOfMemoryError:") ||
         error.find("CUDA out of memory") != std::string::npos ||
         error.find("CUDA error: out of memory") != std::string::npos ||
         error.find("CUBLAS_STATUS_ALLOC_FAILED") != std::string::npos ||
         error.find("CUDNN_STATUS_ALLOC_FAILED") != std::string::npos ||
         error.find("CUSOLVER_STATUS_ALLOC_FAILED") != std::string::npos ||
         error.find("CUSPARSE_STATUS_ALLOC_FAILED") != std::string::npos ||
         error.find("CUFFT_ALLOC_FAILED") != std::string::npos;
}

std::string gpu_library_internal_error_name(const std::string& error) {
  // cuDNN's (session 35, an H100 with 80 GB in use), cuSOLVER's handle (session 40, 12 jobs on an
  // H100: `cusolverDnCreate(handle)`), cuBLAS's handle (cublasCreate's usual word for no room) and
  // cuFFT's plan: each library's word when its own allocation failed inside
  static constexpr std::array<std::string_view, 5> kNames{
      "CUDNN_STATUS_INTERNAL_ERROR", "CUSOLVER_STATUS_INTERNAL_ERROR",
      "CUSOLVER_STATUS_NOT_INITIALIZED", "CUBLAS_STATUS_NOT_INITIALIZED", "CUFFT_INTERNAL_ERROR"};
  for (std::string_view name : kNames) {
    if (error.find(name) != std::string::npos) return std::string(name);
  }
  return "";
}

bool gpu_library_internal_error(const std::string& error) {
  return !gpu_library_internal_error_name(error).empty();
}

bool gpu_contended(const std::string& error) {
  return error.starts_with("GpuContended:");
}

bool gpu_starved(const std::string& error) {
  return error.starts_with("GpuStarved:");
}

std::optional<AloneRetry> alone_retry(const std::string& error) {
  if (out_of_gpu_memory(error)) {
    return AloneRetry{"out of the GPU's memory beside other work",
                      "out of the GPU's memory with the GPU to itself"};
  }
  if (const std::string name = gpu_library_internal_error_name(error); !name.empty()) {
    return AloneRetry{
        fmt::format("a GPU library's internal error ({}) beside other work (most often its "
                    "memory ran out)",
                    name),
        fmt::format("a GPU library's internal error ({}) with the GPU to itself", name)};
  }
  if (gpu_contended(error)) {
    return AloneRetry{"its baselines met another process's GPU work that did not drain",
                      "another process's GPU work even with the GPU to itself"};
  }
  if (gpu_starved(error)) {
    return AloneRetry{
        "its worker ran out of the GPU's memory before its baselines were timed "
        "(a library may keep a slower plan)",
        "out of the GPU's memory before its baselines, with the GPU to itself"};
  }
  return std::nullopt;
}

std::vector<std::string> tiers_for(const std::string& device) {
  if (device == "cpu") return {"edge", "small"};
  return {"edge", "small", "full"};
}

namespace {

using TaskReady = std::function<void(const std::string& task, ReferenceCases&& refs)>;

/// "task|label", the key of a reference job's cases.
std::string job_key(const json& job) {
  return job["task"].get<std::string>() + "|" + job["label"].get<std::string>();
}

/// One reference worker's jobs, from their folders to what run_references returns: their cases
/// as the worker sends them, those handed on as they finish (task_ready), and the chunks a kept
/// worker takes next (next_jobs).
class ReferenceRun {
 public:
  ReferenceRun(const WorkerEnv& env, bool time_eager, json* hello,
               std::function<void(const std::string&)> files_written, TaskReady task_ready,
               std::function<std::vector<ReferenceJob>()> next_jobs)
      : env_(env),
        time_eager_(time_eager),
        hello_(hello),
        files_written_(std::move(files_written)),
        task_ready_(std::move(task_ready)),
        next_jobs_(std::move(next_jobs)) {}

  /// The chunk's folders made (or, for a job finished before, its cases read back) and the
  /// worker's entries for the jobs to compute, which are added to pending().
  json prepare(const std::vector<ReferenceJob>& chunk) {
    json entries = json::array();
    for (const auto& job : chunk) {
      const std::string key = job.task->id() + "|" + job.label;
      ReferenceCases& rc = out_[key];
      rc.dir = job.out_dir;
      rc.in_dir = job.in_dir.empty() ? job.out_dir : job.in_dir;
      if (read_back(rc)) {
        if (next_jobs_ && task_ready_) reused_.push_back(key);
        continue;
      }
      fs::remove_all(job.out_dir);
      fs::create_directories(job.out_dir);
      if (rc.in_dir != rc.dir) {
        fs::remove_all(rc.in_dir);
        fs::create_directories(rc.in_dir);
      }
      entries.push_back(entry(job, rc));
    }
    // Handed on at once: a job that times nothing in this worker (its probe records, read at
    // the worker's end, would add to its cases)
    for (const auto& job : entries) {
      const bool timed_here =
          time_eager_ && env_.device == "cuda" &&
          (job.value("time_eager", true) || job.value("compile_baseline", false));
      if (task_ready_ && !timed_here) {
        early_.insert(job_key(job));
      } else {
        all_early_ = false;
      }
      pending_.push_back(job);
    }
    // A kept worker's jobs finished before (as restored from the reference cache) go on at
    // once, not at the end of a worker that may live long
    for (const auto& key : reused_) hand_on(key);
    reused_.clear();
    return entries;
  }

  /// Every job given to the worker so far.
  const json& pending() const { return pending_; }
  /// KBX_DEBUG_TIMING is set: per-case phases and the worker's timeline are printed.
  bool debug_timing() const { return debug_timing_; }

  void on_event(const json& ev) {
    const std::string kind = ev.value("ev", "");
    const std::string key = ev.value("task", "") + "|" + ev.value("label", "");
    if (kind == "case") {
      if (debug_timing_) print_case_phases(ev);
      out_[key].cases.push_back(ev);
    } else if (kind == "files_written") {
      if (files_written_) files_written_(ev.value("task", ""));
    } else if (kind == "task_done") {
      write_file(out_[key].dir / "cases.json", json(out_[key].cases).dump());
      std::fprintf(stderr, "kbx: reference %s [%s]: %zu cases in %.1f s\n",
                   ev.value("task", "").c_str(), ev.value("label", "").c_str(),
                   out_[key].cases.size(), ev.value("seconds", 0.0));
      if (early_.erase(key) > 0) hand_on(key);
    } else if (kind == "task_error") {
      all_early_ = false;  // a kept worker ends: its GPU context may be what failed
      out_[key].error = ev.value("type", "") + ": " + ev.value("message", "");
      std::fprintf(stderr, "kbx: reference %s [%s] failed: %s\n", ev.value("task", "").c_str(),
                   ev.value("label", "").c_str(), out_[key].error.substr(0, 300).c_str());
    } else if (kind == "hello" && hello_) {
      *hello_ = ev;
    }
  }

  /// A kept worker's next chunk, while every job it had went on at its task_done (one whose
  /// probe records it waits for ends the worker); chunks whose jobs are all done before are
  /// skipped. A failure ends the worker and is thrown by finish(): the sandbox's loop must not
  /// unwind with the worker running.
  sandbox::MoreWork more_work() {
    try {
      while (all_early_) {
        const std::vector<ReferenceJob> chunk = next_jobs_();
        if (chunk.empty()) break;
        json more = prepare(chunk);
        if (more.empty()) continue;
        return {json{{"jobs", more}}.dump(), env_.timeout_s * static_cast<double>(more.size())};
      }
    } catch (...) {
      more_failure_ = std::current_exception();
    }
    return {};
  }

  /// The cases of the jobs not handed on, once the worker has ended: their probe spans added,
  /// and an error for those it left without cases.
  std::map<std::string, ReferenceCases> finish(const sandbox::Outcome& o) {
    if (more_failure_) std::rethrow_exception(more_failure_);
    const bool finished = !first_event(o, "done").is_null();
    json kept = json::array();
    for (const auto& job : pending_) {
      if (!handed_.count(job_key(job))) kept.push_back(job);
    }
    if (!o.probe_bytes.empty()) add_probe_spans(o, kept, out_);
    for (const auto& job : kept) {
      ReferenceCases& rc = out_[job_key(job)];
      if (rc.error.empty() && !fs::exists(rc.dir / "cases.json")) {
        rc.error = finished ? "reference produced no cases"
                            : fmt::format("reference worker ended early ({}): {}", o.describe(),
                                          o.stderr_kept.substr(o.stderr_kept.size() > 2000
                                                                   ? o.stderr_kept.size() - 2000
                                                                   : 0));
      }
    }
    return std::move(out_);
  }

 private:
  /// Reads back a job's cases.json from an earlier, interrupted run; false when there is none
  /// (or it is unreadable: recomputed).
  static bool read_back(ReferenceCases& rc) {
    const fs::path done = rc.dir / "cases.json";
    if (!fs::exists(done)) return false;
    try {
      rc.cases = json::parse(read_file(done)).get<std::vector<json>>();
      return true;
    } catch (const std::exception&) {
      rc.cases.clear();
      return false;
    }
  }

  /// The worker's entry for a job.
  json entry(const ReferenceJob& job, const ReferenceCases& rc) const {
    return {{"task", job.task->id()},
            {"task_dir", fs::absolute(job.task->dir).string()},
            {"entry", job.task->entry},
            {"seed", job.seed},
            {"label", job.label},
            {"tiers", job.tiers},
            {"save_tiers", job.save_tiers.empty() ? job.tiers : job.save_tiers},
            {"out_dir", fs::absolute(job.out_dir).string()},
            {"in_dir", fs::absolute(rc.in_dir).string()},
            {"tf32", job.task->contract.tf32},
            {"fresh_twin", time_eager_ && env_.device == "cuda"},
            {"compile_baseline", job.compile_baseline && time_eager_},
            {"eager_redraw", env_.eager_redraw && time_eager_},
            {"time_eager", job.time_eager},
            {"lean_inputs", job.lean_inputs},
            {"alone", job.alone},
            {"ulp_floor", job.task->contract.ulp_floor},
            {"shadow", job.task->contract.tolerance == suite::Tolerance::Shadow ||
                           job.task->contract.tolerance == suite::Tolerance::Statistical}};
  }

  /// Gives a job's cases to task_ready, out of what finish() returns.
  void hand_on(const std::string& key) {
    handed_.insert(key);
    ReferenceCases rc = std::move(out_[key]);
    out_.erase(key);
    task_ready_(key.substr(0, key.rfind('|')), std::move(rc));
  }

  const WorkerEnv& env_;
  const bool time_eager_;
  json* hello_;
  const std::function<void(const std::string&)> files_written_;
  const TaskReady task_ready_;
  const std::function<std::vector<ReferenceJob>()> next_jobs_;
  const bool debug_timing_ = std::getenv("KBX_DEBUG_TIMING") != nullptr;
  std::map<std::string, ReferenceCases> out_;
  json pending_ = json::array();
  std::set<std::string> early_;   ///< keys of the jobs to hand on at their task_done
  std::set<std::string> handed_;  ///< keys handed on (out of early_ and out_)
  std::vector<std::string> reused_;
  bool all_early_ = true;  ///< so far: a kept worker may take more jobs
  std::exception_ptr more_failure_;
};

}  // namespace

std::map<std::string, ReferenceCases> run_references(
    const WorkerEnv& env, const std::vector<ReferenceJob>& jobs, bool time_eager, json* hello,
    sandbox::Launcher* launcher, const std::function<void(const std::string& task)>& files_written,
    const TaskReady& task_ready, const std::function<std::vector<ReferenceJob>()>& next_jobs) {
  ReferenceRun run(env, time_eager, hello, files_written, task_ready, next_jobs);
  const json first = run.prepare(jobs);
  if (first.empty()) return run.finish(sandbox::Outcome{});
  json request = {{"mode", "reference"},
                  {"device", env.device},
                  {"jobs", first},
                  {"time", time_eager && env.device == "cuda"},
                  {"gpu_slot", env.device == "cuda"},
                  // the driver and clocks (one nvidia-smi call) only where the hello is read
                  {"machine_facts", hello != nullptr},
                  // it asks for the next chunk when done with its jobs (next_jobs)
                  {"more", static_cast<bool>(next_jobs)}};
  // the eager baselines' timer keeps outputs as the candidates' does (eager_worker_key)
  if (env.timer_keep_outputs > 0) request["timer"]["keep_outputs"] = env.timer_keep_outputs;
  WorkerEnv ref_env = env;
  ref_env.timeout_s = env.timeout_s * static_cast<double>(first.size()) + 120;
  ref_env.isolate_network = false;  // trusted code; no need to pay for a namespace
  // Several reference workers run at once (one chunk each): each its own folder (HOME, TMPDIR).
  const fs::path job_dir = env.work_dir / "trusted" / "reference-workers" /
                           jobs.front().task->category / jobs.front().task->name;
  // On the GPU, each task's full-size cases and their eager and compiled timing hold the GPU's
  // timing slot, as a candidate's timed loops do; the edge and small cases run beside other jobs
  // (the worker asks for the slot per task and hands it back after).
  std::optional<GpuSlot> slot;
  if (env.device == "cuda") slot.emplace(worker_gpu(env), "references " + jobs.front().task->id());
  sandbox::Outcome o = run_worker(
      ref_env, request, job_dir, [&run](const json& ev) { run.on_event(ev); },
      slot ? &*slot : nullptr, launcher,
      next_jobs ? std::function<sandbox::MoreWork()>([&run] { return run.more_work(); }) : nullptr);
  if (run.debug_timing()) {  // how long the worker took to start (warm or cold)
    // ... and where the rest of its life went: its end after "done" (the CUDA context's
    // teardown), and the time it spent frozen for other jobs' timed loops
    std::fprintf(stderr,
                 "kbx: reference worker for %s (%zu tasks): %s, hello after %.2f s, done at "
                 "%.2f s, exited at %.2f s, frozen %.2f s\n",
                 jobs.front().task->id().c_str(), run.pending().size(),
                 launcher ? "forked from the warm parent" : "started cold",
                 seconds_to_event(o, "hello"), seconds_to_event(o, "done"), o.exited_seconds,
                 o.frozen_seconds);
  }
  return run.finish(o);
}

}  // namespace kbx::sched
