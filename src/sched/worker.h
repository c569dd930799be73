#pragma once
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kbx/probe_records.h"
#include "sandbox/process.h"

namespace kbx::sched {

/// The Python interpreter workers run under, and how it was chosen.
struct Python {
  std::string path;    ///< absolute path of the interpreter
  std::string chosen;  ///< "--python", "KBX_PYTHON" or "PATH"
  /// The folders it runs from (prefixes, standard library, site-packages), which a confined
  /// worker sees read-only.
  std::vector<std::filesystem::path> folders;
};

/// --python, else KBX_PYTHON, else the first python3 on PATH that imports torch.
/// Throws Error saying what was tried when none works.
Python find_python(const std::string& flag);

/// Where workers run and what they get: interpreter, device, scratch folder, limits.
struct WorkerEnv {
  Python python;
  std::string device = "cpu";      ///< "cpu" or "cuda"
  std::filesystem::path work_dir;  ///< run-wide scratch (Triton cache lives here)
  double timeout_s = 600;
  bool isolate_network = true;
  sandbox::Launcher* launcher = nullptr;  ///< a warm parent for candidate jobs; null: fork/exec
  /// A warm parent of trusted workers only (references, judges), never of a candidate; null:
  /// they start cold.
  sandbox::Launcher* trusted_launcher = nullptr;
  /// The CUPTI probe loaded into GPU workers (CUDA_INJECTION64_PATH), its records read from
  /// their fd 5; empty: no probe, timing from CUDA events alone.
  std::filesystem::path probe_lib;
  /// Candidates run confined (sandbox/confine.h): own uid, namespaces, minimal filesystem.
  bool confine = false;
  /// PyTorch's cache of the kernels it compiles at run time (NVRTC: torch.special's airy_ai,
  /// zeta, polygamma...), shared by the trusted workers of every run (PYTORCH_KERNEL_CACHE_PATH);
  /// empty: each worker compiles them again in its own folder. Never a candidate's: a kernel
  /// written there runs in the references.
  std::filesystem::path kernel_cache;
  std::uint64_t job_disk_bytes = 4ULL << 30;  ///< a confined job folder's size cap
  std::uint64_t job_memory_bytes = 0;         ///< a confined job's memory cap (cgroup); 0: none
  /// The GPU the worker runs on, as a CUDA_VISIBLE_DEVICES entry (--gpus); empty: the one this
  /// process's CUDA_VISIBLE_DEVICES names.
  std::string gpu;
  /// The run's jobs that share this host (sandbox::Spawn::quiet); null: none is ever frozen.
  sandbox::QuietRoom* quiet = nullptr;
  /// The CPU a slot holder's main thread is pinned to (sandbox::Spawn::slot_cpu); -1: none.
  int slot_cpu = -1;
  /// A candidate's worker handed the GPU's slot back for good (sandbox::Spawn::
  /// on_slot_handed_back): its lane may start the next job (jobs.h, LaneGate).
  std::function<void()> on_slot_handed_back;
  /// A candidate's worker and every process of its job are gone; kbx's comparisons of its
  /// outputs may remain: its lane may start the next job (--finishing-from exit).
  std::function<void()> on_worker_exited;
  /// Every timed loop, not only a host-bound one, runs on a quiet host ($KBX_QUIET_TIMING=all:
  /// other jobs' GPU work outside the slot, their small cases, cannot overlap it either).
  bool quiet_all = false;
  /// When a candidate asks for the GPU's slot (--slot-at): "call" (before its first full-size
  /// call), "launch" (a full-size call whose inputs are built asks at its first GPU work, the
  /// probe's launch callback: what it compiles first runs beside the other jobs) or "early"
  /// (after its first edge or small case, taking it between the later ones: the rest run after
  /// its hand-back).
  std::string slot_at = "call";
  /// Until when a candidate's job is frozen only by host-bound calls' hushes
  /// (sandbox::Spawn::cpu_only_until_cuda): "cuda" (its worker's CUDA starts), "context" (its
  /// CUDA context made, the candidate's import next: an experiment) or "" (never: frozen from
  /// its start); from $KBX_QUIET_CPU_FIRST (eval's default: "cuda").
  std::string quiet_cpu_first;
  /// The candidates' timer warm-up in ms (the request's "timer"); 0: the timer's own
  /// (sched::timer_warmup_ms_from_environment).
  double timer_warmup_ms = 0;
  /// The candidates' timer hold factor; 0: the timer's own
  /// (sched::timer_hold_factor_from_environment).
  double timer_hold_factor = 0;
  /// The timers' kept outputs, the candidates' and the references' alike (the request's "timer");
  /// 0: none (sched::timer_keep_outputs_from_environment).
  int timer_keep_outputs = 0;
  /// The reference worker's second eager draw (each job's "eager_redraw";
  /// sched::eager_redraw_from_environment).
  bool eager_redraw = false;
};

/// What a candidate worker sees of the run: its own folder (read-write) and, read-only, its
/// task's folder and its case inputs; it runs as uid.
struct CandidateView {
  std::filesystem::path job_dir;
  std::filesystem::path task_dir;
  std::filesystem::path inputs_dir;
  uid_t uid = 0;
};

/// libkbx_probe.so: $KBX_PROBE_LIB, else ../lib/ beside the kbx binary (an install prefix),
/// else build/probe/ under kbx's home; empty when none exists or KBX_PROBE_LIB is "off".
std::filesystem::path find_probe_library();

/// The environment a worker of env gets, with home as its HOME and TMPDIR.
std::map<std::string, std::string> worker_environment(const WorkerEnv& env,
                                                      const std::filesystem::path& home);

/// The command line of a trusted Python process running `module`'s main(args): an isolated
/// interpreter (-I: no cwd, PYTHONPATH or user site on sys.path) that imports kbx_worker
/// from kbx's own tree only.
std::vector<std::string> trusted_argv(const Python& python, const std::string& module,
                                      const std::vector<std::string>& args);

/// Runs a trusted worker (reference, judge, calibrate, hello) with a request, in dir (a folder
/// no candidate can write), which is also its HOME and TMPDIR.
/// With a slot, the worker asks for the GPU's timing slot for each task's full-size work and
/// hands it back after (sandbox::Spawn::slot_handback). With a launcher (a warm parent that
/// only ever starts trusted workers), the worker is forked from it instead of started cold.
/// With more_work, it may ask for more work of its kind instead of ending (sandbox::Spawn::
/// more_work).
sandbox::Outcome run_worker(const WorkerEnv& env, const nlohmann::json& request,
                            const std::filesystem::path& dir,
                            const std::function<void(const nlohmann::json&)>& on_event = {},
                            sandbox::ExclusiveSlot* slot = nullptr,
                            sandbox::Launcher* launcher = nullptr,
                            const std::function<sandbox::MoreWork()>& more_work = {});

/// Runs a candidate worker with a request: confined to view when env.confine, else in a new
/// network namespace as the invoking user. With a slot, its full-size cases and timed loops
/// wait for the GPU's timing slot (sandbox::Spawn::slot).
sandbox::Outcome run_candidate_worker(const WorkerEnv& env, const nlohmann::json& request,
                                      const CandidateView& view,
                                      const std::function<void(const nlohmann::json&)>& on_event,
                                      sandbox::ExclusiveSlot* slot = nullptr);

/// The probe records a worker wrote to its fd 5. False (with *error) when the stream is invalid;
/// a stream cut at Outcome's size bound still counts as valid, with the records it holds.
bool probe_records(const sandbox::Outcome& o, std::vector<probe::Record>* records,
                   std::string* error);

/// The index of the worker's first event of that name; -1 when none came.
int first_event_index(const sandbox::Outcome& o, const std::string& name);
/// The index of the last event named `name`; -1 when there is none.
int last_event_index(const sandbox::Outcome& o, const std::string& name);
/// The indices of the worker's events of that name, in order.
std::vector<int> event_indices(const sandbox::Outcome& o, const std::string& name);
/// Seconds from the worker's start to its first event of that name; -1 when none came.
double seconds_to_event(const sandbox::Outcome& o, const std::string& name);

/// This process's CUDA_VISIBLE_DEVICES ("" when unset): the GPU its workers run on.
std::string visible_devices();

/// The GPU a worker of env runs on, as named for its timing slot (sched/gpu_slot.h).
std::string worker_gpu(const WorkerEnv& env);

/// The GPUs of --gpus: "all" (the entries of CUDA_VISIBLE_DEVICES when set, else one per folder
/// of nvidia_proc, the driver's /proc/driver/nvidia/gpus) or a comma-separated list of
/// CUDA_VISIBLE_DEVICES entries; throws naming the flag when none is found or one is malformed.
std::vector<std::string> resolve_gpus(const std::string& flag, const std::string& visible,
                                      const std::filesystem::path& nvidia_proc);

/// Takes `cpus` (the slot holders') out of the calling thread's CPUs, which every thread and
/// process it starts later inherits: a holder waking from a host sync inside a timed call then
/// never waits behind kbx's own judging or another job on its core. False (nothing changed)
/// when no CPU would be left or the call failed.
bool leave_cpus_to_holders(const std::vector<int>& cpus);

/// The CPU a GPU's slot holders run on: the highest-numbered of the CPUs local to the GPU (the
/// `local_cpulist` of the PCI device that nvidia_proc lists at the position of the GPU's
/// CUDA_VISIBLE_DEVICES index, in bus order) that this process may use; else the highest it may
/// use; -1 when none is left. `skip`: the GPU's position among the run's GPUs, so that each
/// GPU's holders get a CPU of their own (the skip-th next one down).
int slot_cpu_for(const std::string& gpu, const std::filesystem::path& nvidia_proc,
                 const std::filesystem::path& pci_devices, int skip = 0);

/// Where the NVIDIA driver lists the GPUs (one folder per PCI bus id) and where the PCI devices'
/// NUMA-local CPUs are read.
inline const std::filesystem::path kNvidiaProc = "/proc/driver/nvidia/gpus";
inline const std::filesystem::path kPciDevices = "/sys/bus/pci/devices";

/// The CPUs of a Linux cpulist ("0-7,16-23"); empty when malformed.
std::vector<int> parse_cpulist(const std::string& text);

/// The first event named `name` in an outcome, or null json.
nlohmann::json first_event(const sandbox::Outcome& o, const std::string& name);

}  // namespace kbx::sched
