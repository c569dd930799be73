#include "sched/worker.h"

#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "common/error.h"
#include "common/util.h"

namespace kbx::sched {
namespace fs = std::filesystem;

namespace {

/// What a command printed, or "" when it failed.
std::string command_output(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return "";
  std::array<char, 4096> buf{};
  std::string out;
  while (fgets(buf.data(), buf.size(), p)) out += buf.data();
  int rc = pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return rc == 0 ? out : "";
}

/// A python that has torch as workers run it (isolated, -I): its sys.executable and the folders
/// it runs from (prefixes, standard library, site-packages, where torch, triton and numpy live),
/// which a confined worker sees read-only. Empty path when it has no torch. The packages are
/// found, not imported (importlib's find_spec: the same folders, in hundredths of a second where
/// importing torch takes seconds, at every kbx command's start); the workers import them.
Python probe_python(const std::string& candidate, const std::string& chosen) {
  static const char* kQuery =
      "import importlib.util, json, os, site, sys, sysconfig\n"
      "p = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,\n"
      "     os.path.dirname(os.path.realpath(sys.executable))]\n"
      "p += list(sysconfig.get_paths().values()) + list(site.getsitepackages())\n"
      "p += [x for x in sys.path if x and os.path.isdir(x)]\n"
      "for m in (\"torch\", \"triton\", \"numpy\"):\n"
      "    try:\n"
      "        spec = importlib.util.find_spec(m)\n"
      "    except Exception:\n"
      "        spec = None\n"
      "    if spec is None or not spec.origin:\n"
      "        if m == \"torch\":\n"
      "            sys.exit(1)\n"
      "        continue\n"
      "    p.append(os.path.dirname(os.path.dirname(os.path.realpath(spec.origin))))\n"
      "print(json.dumps({\"executable\": sys.executable,\n"
      "                  \"folders\": sorted(set(os.path.realpath(x) for x in p))}))\n";
  const std::string out =
      command_output("'" + candidate + "' -I -c '" + std::string(kQuery) + "' 2>/dev/null");
  Python py;
  py.chosen = chosen;
  try {
    const auto answer = nlohmann::json::parse(out);
    py.path = answer.at("executable").get<std::string>();
    for (const auto& f : answer.at("folders")) py.folders.emplace_back(f.get<std::string>());
  } catch (const std::exception&) {
    return {};
  }
  // A folder that holds everything (a prefix of "/") would undo the minimal view.
  std::erase_if(py.folders, [](const fs::path& f) { return f == "/" || f.parent_path() == "/"; });
  return py;
}

/// Host folders of the CUDA toolkit and libraries the worker's environment names.
std::vector<fs::path> cuda_folders(const std::map<std::string, std::string>& env) {
  std::vector<fs::path> out;
  for (const char* key : {"CUDA_HOME", "CUDA_PATH"}) {
    if (auto it = env.find(key); it != env.end() && !it->second.empty())
      out.emplace_back(it->second);
  }
  if (auto it = env.find("LD_LIBRARY_PATH"); it != env.end()) {
    for (const auto& d : split(it->second, ':')) {
      if (!d.empty()) out.emplace_back(d);
    }
  }
  return out;
}

}  // namespace

Python find_python(const std::string& flag) {
  if (!flag.empty()) {
    Python py = probe_python(flag, "--python");
    if (py.path.empty())
      throw Error("--python " + flag + ": cannot run it or it cannot import torch");
    return py;
  }
  if (const char* env = std::getenv("KBX_PYTHON"); env && *env) {
    Python py = probe_python(env, "KBX_PYTHON");
    if (py.path.empty()) throw Error(std::string("KBX_PYTHON=") + env + ": cannot import torch");
    return py;
  }
  std::string tried;
  const char* path = std::getenv("PATH");
  for (const auto& dir : split(path ? path : "", ':')) {
    fs::path cand = fs::path(dir) / "python3";
    if (access(cand.c_str(), X_OK) != 0) continue;
    Python py = probe_python(cand.string(), "PATH");
    if (!py.path.empty()) return py;
    tried += " " + cand.string();
  }
  throw Error("no Python with torch found (tried --python, KBX_PYTHON, and python3 on PATH:" +
              tried + "); install torch or pass --python /path/to/python3");
}

fs::path find_probe_library() {
  if (const char* env = std::getenv("KBX_PROBE_LIB"); env && *env) {
    if (std::string(env) == "off") return {};
    if (!fs::exists(env)) throw Error(std::string("KBX_PROBE_LIB=") + env + ": no such file");
    return fs::absolute(env);
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  const std::vector<fs::path> places = {
      ec ? fs::path() : self.parent_path().parent_path() / "lib" / "libkbx_probe.so",
      kbx_home() / "build" / "probe" / "libkbx_probe.so"};
  for (const auto& p : places) {
    if (!p.empty() && fs::exists(p)) return fs::absolute(p);
  }
  return {};
}

std::map<std::string, std::string> worker_environment(const WorkerEnv& env, const fs::path& home) {
  std::map<std::string, std::string> overrides = {
      {"PYTHONPATH", (kbx_home() / "python").string()},
      {"HOME", home.string()},
      {"TMPDIR", home.string()},
      {"USER", "kbx"},
      {"LOGNAME", "kbx"},
      {"PYTHONDONTWRITEBYTECODE", "1"},
      {"PYTHONUNBUFFERED", "1"},
      {"PYTHONHASHSEED", "0"},
      {"TRITON_CACHE_DIR", (home / ".triton-cache").string()},
  };
  if (!env.kernel_cache.empty()) overrides["PYTORCH_KERNEL_CACHE_PATH"] = env.kernel_cache.string();
  if (env.device == "cpu") {
    overrides["TRITON_INTERPRET"] = "1";
    overrides["CUDA_VISIBLE_DEVICES"] = "";
    // One torch thread a worker unless OMP_NUM_THREADS says otherwise: kbx runs CPU jobs side by
    // side, and a pool of a thread per core in each made small calls 100x slower (a 33K-element
    // isfinite: 22 ms on two threads, 0.06 ms on one; the CPU calibration's test 110 s, not 12).
    if (const char* omp = std::getenv("OMP_NUM_THREADS"); omp == nullptr || *omp == '\0') {
      overrides["OMP_NUM_THREADS"] = "1";
    }
  } else if (!env.probe_lib.empty()) {
    overrides["CUDA_INJECTION64_PATH"] = env.probe_lib.string();
    overrides["KBX_PROBE_FD"] = "5";
    overrides["KBX_PROBE_LIB"] = env.probe_lib.string();
  }
  if (env.device != "cpu" && !env.gpu.empty()) overrides["CUDA_VISIBLE_DEVICES"] = env.gpu;
  if (env.quiet && env.quiet_all) overrides["KBX_QUIET_TIMING"] = "all";
  // Switches that turn off, in the workers, what is on by default; only "0" is passed on:
  // - KBX_TIMER_SETTLE: the candidates' timer's settle before timed batches
  //   (python/kbx_worker/timer.py; on since session 31: a contended case's job runs again alone);
  // - KBX_BASELINE_SETTLE: the reference worker's settle before its baselines (on since session
  //   30: a neighbour's queued GPU work doubled 3 ms calls on the H200), should its check
  //   misjudge a GPU;
  // - KBX_KEEP_QUIET: a candidate's quiet host kept from one timed case to the next, one settle a
  //   job (since session 35); off, it ends after each case, as before (an A/B: the kept hush
  //   also spans the warm-ups between cases, when the other jobs stay frozen).
  for (const char* name : {"KBX_TIMER_SETTLE", "KBX_BASELINE_SETTLE", "KBX_KEEP_QUIET"}) {
    if (const char* value = std::getenv(name); value && std::string(value) == "0") {
      overrides[name] = "0";
    }
  }
  // Inductor's compile workers per job (torch.compile candidates): by default one per CPU, a
  // pool in each of the lanes' jobs; KBX_INDUCTOR_THREADS=N sets TORCHINDUCTOR_COMPILE_THREADS
  // (an experiment for the compile workload, not measured on a GPU yet)
  if (const char* threads = std::getenv("KBX_INDUCTOR_THREADS"); threads && *threads != '\0') {
    overrides["TORCHINDUCTOR_COMPILE_THREADS"] = std::to_string(std::max(1, std::atoi(threads)));
  }
  return sandbox::scrubbed_environment(overrides);
}

std::vector<std::string> trusted_argv(const Python& python, const std::string& module,
                                      const std::vector<std::string>& args) {
  const std::string bootstrap = "import sys; sys.path.insert(0, " +
                                nlohmann::json((kbx_home() / "python").string()).dump() +
                                "); from " + module + " import main; sys.exit(main(sys.argv[1:]))";
  std::vector<std::string> argv = {python.path, "-I", "-B", "-u", "-c", bootstrap};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

sandbox::Outcome run_worker(const WorkerEnv& env, const nlohmann::json& request,
                            const fs::path& dir,
                            const std::function<void(const nlohmann::json&)>& on_event,
                            sandbox::ExclusiveSlot* slot, sandbox::Launcher* launcher,
                            const std::function<sandbox::MoreWork()>& more_work) {
  fs::create_directories(dir);
  sandbox::Spawn spawn;
  spawn.more_work = more_work;
  spawn.slot = slot;
  spawn.slot_handback = slot != nullptr;
  spawn.quiet = env.quiet;
  spawn.slot_cpu = env.slot_cpu;
  spawn.argv =
      trusted_argv(env.python, "kbx_worker.__main__", {"--request-fd", "3", "--event-fd", "4"});
  spawn.env = worker_environment(env, dir);
  spawn.cwd = dir;
  spawn.request = request.dump();
  spawn.limits.wall_seconds = env.timeout_s;
  spawn.limits.isolate_network = false;  // trusted code
  spawn.probe_pipe = env.device != "cpu" && !env.probe_lib.empty();
  return launcher ? sandbox::run(spawn, on_event, *launcher) : sandbox::run(spawn, on_event);
}

namespace {

/// The confinement plan of a candidate worker.
sandbox::ConfinePlan candidate_plan(const WorkerEnv& env, const CandidateView& view,
                                    const std::map<std::string, std::string>& worker_env) {
  sandbox::ConfinePlan plan;
  plan.uid = view.uid;
  plan.gid = view.uid;
  plan.root = view.job_dir.string() + ".root";
  std::vector<fs::path> ro = sandbox::system_read_only_paths();
  for (const auto& f : env.python.folders) ro.push_back(f);
  for (const auto& f : cuda_folders(worker_env)) ro.push_back(f);
  ro.push_back(kbx_home() / "python" / "kbx_worker");
  ro.push_back(fs::absolute(view.task_dir));
  ro.push_back(fs::absolute(view.inputs_dir));
  if (!env.probe_lib.empty()) ro.push_back(env.probe_lib);
  // The top-level links (/lib -> usr/lib) are kept as they are; the rest, outermost only.
  std::vector<fs::path> links, folders;
  for (const auto& p : ro) {
    std::error_code ec;
    (p.parent_path() == "/" && fs::is_symlink(p, ec) ? links : folders).push_back(p);
  }
  plan.read_only = links;
  for (const auto& f : sandbox::outermost_existing(folders)) plan.read_only.push_back(f);
  plan.read_write = {fs::absolute(view.job_dir)};
  plan.devices = sandbox::device_nodes();
  plan.cwd = fs::absolute(view.job_dir);
  plan.tmp_bytes = std::min<std::uint64_t>(env.job_disk_bytes, 1ULL << 30);
  if (env.device == "cpu" && !sandbox::abilities().cgroup && env.job_memory_bytes) {
    plan.address_space = env.job_memory_bytes;  // no CUDA here, whose reservations it would break
  }
  return plan;
}

}  // namespace

sandbox::Outcome run_candidate_worker(const WorkerEnv& env, const nlohmann::json& request,
                                      const CandidateView& view,
                                      const std::function<void(const nlohmann::json&)>& on_event,
                                      sandbox::ExclusiveSlot* slot) {
  sandbox::Spawn spawn;
  spawn.slot = slot;
  // On the GPU its teardown (0.15-0.2 s of the driver freeing the CUDA context on the H200)
  // would hold the timing slot for nothing: the job ends at its "done".
  spawn.end_at_done = slot != nullptr;
  spawn.slot_handback_once = slot != nullptr;  // after its timed loops: files, teardown beside
  spawn.on_slot_handed_back = env.on_slot_handed_back;
  spawn.quiet = env.quiet;
  spawn.cpu_only_until_cuda = slot != nullptr && request.contains("quiet_join");
  spawn.slot_cpu = env.slot_cpu;
  spawn.env = worker_environment(env, view.job_dir);
  spawn.cwd = view.job_dir;
  spawn.request = request.dump();
  spawn.limits.wall_seconds = env.timeout_s;
  spawn.limits.isolate_network = env.isolate_network;
  spawn.probe_pipe = env.device != "cpu" && !env.probe_lib.empty();
  std::optional<sandbox::JobCgroup> cgroup;
  std::optional<fs::path> root;
  if (env.confine) {
    spawn.env["TMPDIR"] = "/tmp";
    sandbox::ConfinePlan plan = candidate_plan(env, view, spawn.env);
    cgroup.emplace(view.job_dir.filename().string(),
                   env.job_memory_bytes ? env.job_memory_bytes : (1ULL << 62), plan.nproc);
    plan.cgroup = cgroup->path();
    fs::create_directories(plan.root);
    root = plan.root;
    spawn.confine = plan.to_json();
    spawn.confine["init_pid_fd"] = sandbox::kInitPidFd;
    spawn.argv = trusted_argv(env.python, "kbx_worker.confine", {spawn.confine.dump()});
  } else {
    spawn.argv =
        trusted_argv(env.python, "kbx_worker.__main__", {"--request-fd", "3", "--event-fd", "4"});
  }
  sandbox::Outcome o =
      env.launcher ? sandbox::run(spawn, on_event, *env.launcher) : sandbox::run(spawn, on_event);
  if (cgroup && cgroup->oom_killed()) o.memory_limit_hit = true;
  if (root) {
    std::error_code ec;
    fs::remove(*root, ec);
  }
  return o;
}

bool probe_records(const sandbox::Outcome& o, std::vector<probe::Record>* records,
                   std::string* error) {
  const auto* bytes = reinterpret_cast<const std::byte*>(o.probe_bytes.data());
  probe::Stream stream;
  const bool valid = probe::parse_stream({bytes, o.probe_bytes.size()}, stream, error);
  *records = std::move(stream.records);
  return valid || o.probe_truncated;
}

nlohmann::json first_event(const sandbox::Outcome& o, const std::string& name) {
  const int i = first_event_index(o, name);
  return i < 0 ? nlohmann::json(nullptr) : o.events[static_cast<size_t>(i)];
}

int first_event_index(const sandbox::Outcome& o, const std::string& name) {
  for (size_t i = 0; i < o.events.size(); ++i) {
    if (o.events[i].value("ev", "") == name) return static_cast<int>(i);
  }
  return -1;
}

double seconds_to_event(const sandbox::Outcome& o, const std::string& name) {
  const int i = first_event_index(o, name);
  return i >= 0 && static_cast<size_t>(i) < o.event_seconds.size()
             ? o.event_seconds[static_cast<size_t>(i)]
             : -1.0;
}

int last_event_index(const sandbox::Outcome& o, const std::string& name) {
  for (size_t i = o.events.size(); i-- > 0;) {
    if (o.events[i].value("ev", "") == name) return static_cast<int>(i);
  }
  return -1;
}

std::vector<int> event_indices(const sandbox::Outcome& o, const std::string& name) {
  std::vector<int> found;
  for (size_t i = 0; i < o.events.size(); ++i) {
    if (o.events[i].value("ev", "") == name) found.push_back(static_cast<int>(i));
  }
  return found;
}

std::string visible_devices() {
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  return env ? env : "";
}

std::string worker_gpu(const WorkerEnv& env) {
  return env.gpu.empty() ? visible_devices() : env.gpu;
}

namespace {

/// The PCI bus ids of the GPUs the driver lists (one folder each under nvidia_proc), sorted.
std::vector<std::string> gpu_bus_ids(const fs::path& nvidia_proc) {
  std::vector<std::string> buses;
  std::error_code ec;
  for (auto it = fs::directory_iterator(nvidia_proc, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    buses.push_back(it->path().filename().string());
  }
  std::sort(buses.begin(), buses.end());
  return buses;
}

}  // namespace

std::vector<std::string> resolve_gpus(const std::string& flag, const std::string& visible,
                                      const fs::path& nvidia_proc) {
  std::vector<std::string> gpus;
  auto add_list = [&](const std::string& list) {
    for (std::string entry : split(list, ',')) {
      entry.erase(0, entry.find_first_not_of(' '));
      entry.erase(entry.find_last_not_of(' ') + 1);
      if (!entry.empty()) gpus.push_back(entry);
    }
  };
  if (flag == "all") {
    if (!visible.empty()) {
      add_list(visible);
    } else {
      const size_t count = gpu_bus_ids(nvidia_proc).size();
      for (size_t i = 0; i < count; ++i) gpus.push_back(std::to_string(i));
    }
    if (gpus.empty()) {
      throw Error("--gpus all: no NVIDIA GPU found (" + nvidia_proc.string() +
                  " lists none and CUDA_VISIBLE_DEVICES is unset); name them, e.g. --gpus 0,1");
    }
    return gpus;
  }
  add_list(flag);
  for (const auto& g : gpus) {
    if (g.find_first_not_of("0123456789abcdefABCDEF-GPUMIG/") != std::string::npos) {
      throw Error("--gpus " + flag + ": '" + g +
                  "' is not a CUDA_VISIBLE_DEVICES entry (an index such as 0, or a GPU-... uuid)");
    }
  }
  if (gpus.empty()) throw Error("--gpus: empty list; give 'all' or indices such as 0,1");
  return gpus;
}

std::vector<int> parse_cpulist(const std::string& text) {
  std::vector<int> cpus;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    while (!part.empty() && std::isspace(static_cast<unsigned char>(part.back()))) part.pop_back();
    if (part.empty()) continue;
    const auto dash = part.find('-');
    try {
      size_t used = 0;
      const int lo = std::stoi(part.substr(0, dash), &used);
      if (used != (dash == std::string::npos ? part.size() : dash)) return {};
      const int hi = dash == std::string::npos ? lo : std::stoi(part.substr(dash + 1), &used);
      if (dash != std::string::npos && used != part.size() - dash - 1) return {};
      if (lo < 0 || hi < lo || hi > 65535) return {};
      for (int c = lo; c <= hi; ++c) cpus.push_back(c);
    } catch (const std::exception&) {
      return {};
    }
  }
  return cpus;
}

bool leave_cpus_to_holders(const std::vector<int>& cpus) {
  cpu_set_t mine;
  if (sched_getaffinity(0, sizeof mine, &mine) != 0) return false;
  for (int c : cpus) {
    if (c >= 0 && c < CPU_SETSIZE) CPU_CLR(c, &mine);
  }
  if (CPU_COUNT(&mine) == 0) return false;
  return sched_setaffinity(0, sizeof mine, &mine) == 0;
}

int slot_cpu_for(const std::string& gpu, const fs::path& nvidia_proc, const fs::path& pci_devices,
                 int skip) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return -1;
  const auto usable = [&](int c) { return c >= 0 && c < CPU_SETSIZE && CPU_ISSET(c, &allowed); };
  const std::vector<std::string> buses = gpu_bus_ids(nvidia_proc);
  int index = 0;
  try {
    index = gpu.empty() ? 0 : std::stoi(gpu);
  } catch (const std::exception&) {
    index = -1;  // a UUID: no position to look up
  }
  if (index >= 0 && index < static_cast<int>(buses.size())) {
    std::string bus = buses[static_cast<size_t>(index)];
    std::transform(bus.begin(), bus.end(), bus.begin(), ::tolower);
    std::ifstream in(pci_devices / bus / "local_cpulist");
    std::string text;
    std::getline(in, text);
    const std::vector<int> local = parse_cpulist(text);
    int left = skip;
    for (auto c = local.rbegin(); c != local.rend(); ++c) {
      if (usable(*c) && left-- == 0) return *c;
    }
  }
  int left = skip;
  for (int c = CPU_SETSIZE - 1; c >= 0; --c) {
    if (usable(c) && left-- == 0) return c;
  }
  return -1;
}

}  // namespace kbx::sched
