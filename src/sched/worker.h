#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "kbx/probe_records.h"
#include "sandbox/process.h"

namespace kbx::sched {

/// The Python interpreter workers run under, and how it was chosen.
struct Python {
  std::string path;    ///< absolute path of the interpreter
  std::string chosen;  ///< "--python", "KBX_PYTHON" or "PATH"
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
  /// The CUPTI probe loaded into GPU workers (CUDA_INJECTION64_PATH), its records read from
  /// their fd 5; empty: no probe, timing from CUDA events alone.
  std::filesystem::path probe_lib;
};

/// libkbx_probe.so: $KBX_PROBE_LIB, else ../lib/ beside the kbx binary (an install prefix),
/// else build/probe/ under kbx's home; empty when none exists or KBX_PROBE_LIB is "off".
std::filesystem::path find_probe_library();

/// The environment a worker of env gets, with job_dir as its HOME and TMPDIR.
std::map<std::string, std::string> worker_environment(const WorkerEnv& env,
                                                      const std::filesystem::path& job_dir);

/// Runs `python -m kbx_worker` with a request in a sandboxed process whose cwd, HOME and
/// TMPDIR are job_dir.
sandbox::Outcome run_worker(const WorkerEnv& env, const nlohmann::json& request,
                            const std::filesystem::path& job_dir,
                            const std::function<void(const nlohmann::json&)>& on_event = {});

/// The probe records a worker wrote to its fd 5. False (with *error) when the stream is invalid;
/// a stream cut at Outcome's size bound still counts as valid, with the records it holds.
bool probe_records(const sandbox::Outcome& o, std::vector<probe::Record>* records,
                   std::string* error);

/// The first event named `name` in an outcome, or null json.
nlohmann::json first_event(const sandbox::Outcome& o, const std::string& name);

}  // namespace kbx::sched
