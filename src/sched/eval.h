#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "dist/shard.h"

namespace kbx::sched {

/// Everything `kbx eval` is asked to do.
struct EvalOptions {
  std::string method;
  std::string candidates;  ///< folder or .jsonl; empty: the method's stored candidates
  /// Only these stored candidates (kbx run: one round's new ones); empty: as `candidates` says.
  std::vector<std::int64_t> candidate_ids;
  std::vector<std::string> tasks;  ///< "Category/name" filter; empty: all
  std::string category;
  std::string device = "cuda";
  std::string track = "triton";
  std::filesystem::path db = "kbx.db";
  std::filesystem::path suite_root;
  std::filesystem::path work_root;  ///< scratch space for tensor files
  std::string python;
  int jobs = 0;  ///< candidates at once; 0: default_jobs(device), at least one per GPU
  /// The reference cache (sched/ref_cache.h): its folder, "off", or empty for the default.
  std::string ref_cache;
  std::uint64_t ref_cache_mb = 16384;  ///< its size cap
  /// PyTorch's compiled-kernel cache of the reference workers (kernel_cache_folder): its folder,
  /// "off", or empty for the default.
  std::string kernel_cache;
  int reference_workers = 0;  ///< chunks of references at once; 0: reference_workers(device, jobs)
  /// Tasks per reference worker (after the first chunk's one); 0: reference_chunk(device).
  int reference_chunk = 0;
  /// "lane" or "chunk" (reference_worker_life); empty: $KBX_REFERENCE_WORKER_LIFE, else "lane".
  std::string reference_worker_life;
  /// Most tasks with reference files on disk before another chunk of references starts; 0:
  /// live_task_cap(device, chunk, lanes, reference workers).
  int live_tasks = 0;
  /// Jobs that may be finishing beside the lanes' next jobs (sched::LaneGate; on the CPU only
  /// from the worker's exit, there being no slot); 0: none.
  int finishing_jobs = 0;
  /// From when such a job no longer holds its lane (JobContext::finishing_from_exit):
  /// "exit" (its worker's processes are gone: kbx's comparisons remain) or "handback" (it handed
  /// the GPU's slot back: its files and teardown remain too); empty: $KBX_FINISHING_FROM, else
  /// "exit".
  std::string finishing_from;
  /// Which timed loops run on a quiet host (sandbox/quiet.h): "host-bound", "all" or "off";
  /// empty: $KBX_QUIET_TIMING, else "all".
  std::string quiet_timing;
  /// When a candidate asks for the GPU's timing slot (worker.h, WorkerEnv::slot_at): "call",
  /// "launch" or "early"; empty: $KBX_SLOT_AT, else "launch".
  std::string slot_at;
  /// --gpus: the GPUs jobs run on (resolve_gpus); empty: CUDA_VISIBLE_DEVICES's first GPU.
  std::vector<std::string> gpus;
  bool fresh = false;  ///< start a new run even if the same command ran before
  std::optional<std::uint64_t> seed;
  double timeout_s = 0;  ///< per candidate; 0: a device-dependent default
  bool keep_files = false;
  bool time = true;
  bool warm = true;                  ///< fork candidates from a warm parent (imports done once)
  std::vector<std::string> tiers;    ///< case tiers to run; empty: the device's default
  bool compile_baseline = false;     ///< also time torch.compile of each reference (GPU)
  bool retime_baselines = false;     ///< time baselines again even when cached for this machine
  bool allow_unisolated = false;     ///< run candidates even where they cannot be confined
  std::uint64_t job_disk_mb = 0;     ///< a job folder's size cap; 0: 4 GiB on cpu, 64 GiB on cuda
  std::uint64_t job_memory_mb = 0;   ///< a job's memory cap (cgroup); 0: half the machine's
  std::optional<dist::Shard> shard;  ///< only this shard of the jobs (dist/shard.h); none: all
};

/// Exit code of `kbx eval` when another kbx eval holds the database (store::WriterLock).
inline constexpr int kExitBusy = 4;

/// Candidates evaluated at once when --jobs is not given: on the GPU three quarters of the cores
/// (at most 12, as measured on the H200's 16 since session 16: the slot idles less than at 8;
/// their full-size cases and timed loops take turns on the GPU's timing slot, so more jobs only
/// overlap imports, compiles and small cases), on the CPU every core.
int default_jobs(const std::string& device, unsigned cores);

/// The reference workers' kernel cache (WorkerEnv::kernel_cache) for a --kernel-cache value,
/// made if need be (kbx's own, 0700); empty when off or when candidates are not confined (said
/// when the option asked for one).
std::filesystem::path references_kernel_cache(const std::string& option, bool candidates_confined);

/// Reference workers at once (each a chunk of tasks): on the GPU half the lanes and two more, up
/// to eight (one with a single lane), whose full-size work takes turns on the GPU's timing slot
/// while their small cases, imports and file writes overlap (on the H200 writing a task's files
/// took 90% of a reference worker's time, three workers were the pipeline's bottleneck); on the
/// CPU one (the lanes have the cores).
int reference_workers(const std::string& device, int lanes);

/// The default tasks per reference worker on a device (the run's first worker gets one task).
std::size_t reference_chunk(const std::string& device);

/// The most tasks with reference files on disk ("live": fed to the lanes, last job not ended)
/// before another chunk of references starts: on the GPU a task for every lane and a chunk of
/// `chunk` tasks for every reference worker, at least four chunks (with fewer, the references
/// stop while lanes still run: session 20 on the H200, 12 lanes and 8 workers under a cap of 20,
/// the reference lanes waited 252 s at the cap and the lanes lacked a task 87 s; the room gate
/// keeps the files within memory); on the CPU two chunks.
std::size_t live_task_cap(const std::string& device, std::size_t chunk, int lanes,
                          int reference_workers);

/// The values of the run modes below, for their flags and variables alike.
inline const std::vector<std::string> kQuietTimingModes = {"host-bound", "all", "off"};
inline const std::vector<std::string> kSlotAtModes = {"call", "launch", "early"};
inline const std::vector<std::string> kFinishingFromModes = {"exit", "handback"};
inline const std::vector<std::string> kReferenceWorkerLives = {"lane", "chunk"};

/// The quiet-timing mode of a run: the flag's value, else $KBX_QUIET_TIMING, else "all";
/// throws naming the variable and the modes when it is none of host-bound, all, off.
std::string quiet_timing_mode(const std::string& flag);

/// How long a reference worker lives: the flag's value, else $KBX_REFERENCE_WORKER_LIFE, else
/// "lane" (a worker whose tasks have all gone on takes its lane's next chunk: one CUDA start per
/// reference lane; session 45, H100: the 184 references' warm run 147.6 and 145.0 s against
/// 162.1 and 165.6 s) or "chunk" (a worker per chunk). Throws naming the variable and the
/// values on anything else.
std::string reference_worker_life(const std::string& flag);

/// Until when a candidate's job is CPU-only for the quiet host (WorkerEnv::quiet_cpu_first):
/// $KBX_QUIET_CPU_FIRST: unset, 1 or cuda: "cuda" (the default since session 29: on the H200
/// the 184 references' warm run took 184.5 s against 199-201 s frozen from the start, the same
/// verdicts); context: "context" (an experiment: on the H200 in session 32 the candidates' slot
/// time went from 142 to 177 s, host-bound calls slowed beside unfrozen CUDA starts); 0: ""
/// (never). Throws naming the variable and its values on anything else.
std::string quiet_cpu_first_mode();

/// Whether the warm parents import torch.compile's Dynamo and Inductor once for all jobs
/// (kbx_worker.__main__.preload_compiler_modules): $KBX_PRELOAD_COMPILER 1 or 0, else not (an
/// experiment: on the GPU machine's torch 2.11 the import started CUDA in the warm parent,
/// session 31). Throws naming the variable on anything else.
bool preload_compiler();

/// The candidates' timer warm-up in ms when $KBX_TIMER_WARMUP_MS is unset: shorter than the
/// timer's own 10 ms, which the references' eager timing keeps (session 29's
/// bench/timer_overhead.py: most of a timed case's fixed cost; session 38's 184 references on an
/// H100: self-speedups as with 10 ms, the candidates' estimate phase 11.0 -> 6.2 s).
inline constexpr double kCandidateTimerWarmupMs = 3;

/// The candidates' timer warm-up in ms from $KBX_TIMER_WARMUP_MS, else kCandidateTimerWarmupMs.
/// Throws naming the variable unless it is a number of milliseconds above 0 and at most 100.
double timer_warmup_ms_from_environment();

/// The candidates' timer hold factor from $KBX_TIMER_HOLD_FACTOR (an experiment: a batch's GPU
/// hold is this many times the last batch's enqueue time; session 29's bench/timer_overhead.py
/// tried 1.25 against the timer's 2); 0 when unset (the timer's own). Throws naming the variable
/// unless it is a number above 1 and at most 4.
double timer_hold_factor_from_environment();

/// Whether the reference worker draws a short eager timing a second time, on inputs made again
/// after its allocator's kept segments went back, and keeps it when the first was more than 8%
/// slower: $KBX_EAGER_REDRAW 1 or 0, else yes (on by default since session 41: cases apart by more
/// than 8% between a reference and itself as its candidate went from 7-12 to 2 of 507 on an H100;
/// the two states of identical calls, python/kbx_worker/reference_mode.py's EAGER_REDRAW_MAX_MS).
/// Throws naming the variable on anything else.
bool eager_redraw_from_environment();

/// The timers' kept outputs from $KBX_TIMER_KEEP_OUTPUTS (an experiment: call i of a batch runs
/// beside the outputs of the i % (K + 1) calls before it, so that consecutive calls' outputs get
/// K + 1 different blocks; session 38's two states of identical calls, bench/two_states.py); the
/// candidates' and the references' timers alike; 0 when unset. Throws naming the variable unless
/// it is a whole number from 1 to 4.
int timer_keep_outputs_from_environment();

/// From when a finishing job frees its lane: the flag's value, else $KBX_FINISHING_FROM, else
/// "exit"; throws naming the variable and the modes when it is neither exit nor handback.
std::string finishing_from_mode(const std::string& flag);

/// When candidates ask for the timing slot: the flag's value, else $KBX_SLOT_AT, else "launch";
/// throws naming the variable and the modes when it is none of call, launch and early.
std::string slot_at_mode(const std::string& flag);

/// The most jobs a GPU of that much memory takes at once when --jobs is not given: 32 GiB kept
/// for the slot holder's full-size tensors, 8 GiB for each other job (its CUDA context, small
/// cases, the full-size inputs it builds before the slot, and its share of the reference
/// workers': 12 jobs and 8 reference workers used up to 129 GB of the H200's 141 in session 25).
int jobs_for_gpu_memory(std::uint64_t gpu_memory_bytes);

/// Runs `kbx eval`; returns the process exit code: 0 when every job got a verdict (or a shard
/// has no jobs), 2 when some job met a harness fault (stored as harness_error, run again by the
/// next kbx eval), kExitBusy when another kbx eval is writing the database.
int run_eval(const EvalOptions& options);

/// Imports candidates into the database without evaluating them (`kbx import`).
int run_import(const std::filesystem::path& path, const std::string& method,
               const std::filesystem::path& db, const std::filesystem::path& suite_root);

}  // namespace kbx::sched
