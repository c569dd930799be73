#pragma once
#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sched/worker.h"
#include "suite/task.h"
#include "timing/probe_timing.h"

namespace kbx::sched {

/// The reference side of a task in a run: its case events and the folder of its files.
struct ReferenceCases {
  std::filesystem::path dir;     ///< reference outputs: never shown to a candidate
  std::filesystem::path in_dir;  ///< the cases' inputs (<case>.in.kbt), read-only to candidates
  std::vector<nlohmann::json> cases;  ///< "case" events, in case order
  std::string error;                  ///< set when the reference failed
};

/// One reference job: a task at a seed, under a label (several labels per task are allowed).
struct ReferenceJob {
  const suite::Task* task = nullptr;
  std::uint64_t seed = 0;
  std::string label;
  std::vector<std::string> tiers;
  std::filesystem::path out_dir;
  std::vector<std::string> save_tiers;  ///< tiers whose files are written; empty: all of tiers
  bool compile_baseline = false;        ///< also time torch.compile of the reference (full cases)
  std::filesystem::path in_dir;         ///< where the inputs go; empty: out_dir
  bool time_eager = true;  ///< time the full cases' eager calls (false: their samples are cached)
  /// No inputs file for a full-size case that its generator rebuilds bit for bit and the
  /// reference leaves unchanged (candidates' workers rebuild those inputs themselves).
  bool lean_inputs = false;
  /// Runs with the GPU to itself (a reference put off until the rest of the run was done): a
  /// starved process's baselines (the worker's GpuStarved) then stand.
  bool alone = false;
};

/// Bytes of the files a reference job's folders hold (its outputs, and its inputs when they go
/// elsewhere).
std::uint64_t reference_folder_bytes(const ReferenceJob& job);

/// What a chunk of reference jobs counts as written for the room gate (sched/room.h): a job
/// whose files are all written (files_done) its whole guess, so that nothing of it is still to
/// write; any other job its folders' bytes.
std::uint64_t chunk_written_bytes(const std::vector<ReferenceJob>& jobs,
                                  const std::vector<std::atomic<bool>>& files_done,
                                  const std::vector<std::uint64_t>& guesses);

/// Whether a reference's error (ReferenceCases::error, "type: message") is the GPU running out of
/// memory (torch's OutOfMemoryError, a CUDA context that found no room, cuBLAS's or cuDNN's
/// failed allocation; also in the stderr of a worker that ended early): beside other work on the
/// GPU that may be the others' doing, so it is no verdict until it failed alone.
bool out_of_gpu_memory(const std::string& error);

/// Whether an error is a GPU library's internal error that memory running out beside other work
/// also gives (cuDNN's CUDNN_STATUS_INTERNAL_ERROR: session 35 on an H100 with 80 GB in use, an
/// honest convolution's reference failed so; cuSOLVER's handle: session 40, an honest QR's
/// reference beside 12 jobs): no verdict until it failed alone.
bool gpu_library_internal_error(const std::string& error);

/// The library's status word that makes gpu_library_internal_error true ("" when none).
std::string gpu_library_internal_error_name(const std::string& error);

/// Whether a reference's error is its baselines' timing refused because another process's work
/// on the GPU did not drain (the worker's GpuContended): beside other jobs that may be a
/// candidate's doing (a queue of seconds of kernels, left running while it is frozen), so it is
/// timed again alone.
bool gpu_contended(const std::string& error);

/// Whether a reference's error is its baselines refused because the worker's process had found
/// no room on the GPU for an allocation by the end of their timing (the worker's GpuStarved):
/// a library may then keep a slower plan (cuDNN's convolution, for want of workspace), and
/// beside other jobs the memory may be theirs, so it is timed again alone.
bool gpu_starved(const std::string& error);

/// Why a reference's error is no verdict yet: it is computed again with the GPU to itself.
struct AloneRetry {
  std::string deferred_because;  ///< said when the task is put off ("out of the GPU's memory ...")
  std::string prefix;            ///< put before the error should it fail alone too
};

/// What a reference's error needs before it stands (out_of_gpu_memory, gpu_contended,
/// gpu_starved): nullopt when it stands as it is.
std::optional<AloneRetry> alone_retry(const std::string& error);

/// Runs the reference worker over many jobs in one process (references are trusted code) and
/// returns the cases per "task|label". Jobs whose out_dir holds a complete cases.json from an
/// earlier, interrupted run are read from disk instead of recomputed. With a launcher (a warm
/// parent of trusted workers only), the worker is forked from it rather than started cold.
/// files_written(task), when given, is called as soon as a task's reference files are all
/// written (before its eager timing, which may wait for the GPU's slot). hello, when given, gets
/// the worker's hello with the machine's facts (driver, clocks); without it the worker skips
/// them (an nvidia-smi call per worker).
/// task_ready, when given, takes a task's references as soon as the worker has finished it,
/// while the worker goes on with the chunk's next task, where nothing of the task waits for the
/// worker's end (no eager or torch.compile timing of its own, whose probe records come then);
/// such a task is not in the returned map.
/// next_jobs, when given, keeps the worker across chunks: once it has finished its jobs, and
/// while every one of them went on through task_ready, it takes next_jobs()'s (called from this
/// thread, it may wait; none: the worker ends) instead of ending; the returned map then holds the
/// jobs of every chunk it took that did not go on.
std::map<std::string, ReferenceCases> run_references(
    const WorkerEnv& env, const std::vector<ReferenceJob>& jobs, bool time_eager,
    nlohmann::json* hello = nullptr, sandbox::Launcher* launcher = nullptr,
    const std::function<void(const std::string& task)>& files_written = {},
    const std::function<void(const std::string& task, ReferenceCases&& refs)>& task_ready = {},
    const std::function<std::vector<ReferenceJob>()>& next_jobs = {});

/// Case tiers run on a device: edge and small on the CPU, all three on CUDA.
std::vector<std::string> tiers_for(const std::string& device);

/// A reference case's eager (and torch.compile) timing from the probe's records of its timed
/// calls: `eager_probe_ms` (`compile_probe_ms`) the calls' device spans, and the eager calls'
/// `eager_launch_gaps` mark among its phases (timing::mark_eager_launch_gaps). A timing some of
/// whose calls have no records keeps its CUDA events alone. Returns whether it changed `ev`.
bool time_by_probe(nlohmann::json& ev, const timing::CallRecords& index);

}  // namespace kbx::sched
