#include "sched/worker.h"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>

#include "common/error.h"
#include "common/util.h"

namespace kbx::sched {
namespace fs = std::filesystem;

namespace {

/// sys.executable of a python that imports torch, or "" when it does not.
std::string probe_python(const std::string& candidate) {
  std::string cmd = "'" + candidate + "' -c 'import sys, torch; print(sys.executable)' 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return "";
  std::array<char, 4096> buf{};
  std::string out;
  while (fgets(buf.data(), buf.size(), p)) out += buf.data();
  int rc = pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (rc != 0 || out.empty()) return "";
  return out;
}

}  // namespace

Python find_python(const std::string& flag) {
  if (!flag.empty()) {
    std::string exe = probe_python(flag);
    if (exe.empty()) throw Error("--python " + flag + ": cannot run it or it cannot import torch");
    return {exe, "--python"};
  }
  if (const char* env = std::getenv("KBX_PYTHON"); env && *env) {
    std::string exe = probe_python(env);
    if (exe.empty()) throw Error(std::string("KBX_PYTHON=") + env + ": cannot import torch");
    return {exe, "KBX_PYTHON"};
  }
  std::string tried;
  const char* path = std::getenv("PATH");
  for (const auto& dir : split(path ? path : "", ':')) {
    fs::path cand = fs::path(dir) / "python3";
    if (access(cand.c_str(), X_OK) != 0) continue;
    std::string exe = probe_python(cand.string());
    if (!exe.empty()) return {exe, "PATH"};
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

std::map<std::string, std::string> worker_environment(const WorkerEnv& env,
                                                      const fs::path& job_dir) {
  std::map<std::string, std::string> overrides = {
      {"PYTHONPATH", (kbx_home() / "python").string()},
      {"HOME", job_dir.string()},
      {"TMPDIR", job_dir.string()},
      {"PYTHONDONTWRITEBYTECODE", "1"},
      {"PYTHONUNBUFFERED", "1"},
      {"PYTHONHASHSEED", "0"},
      {"TRITON_CACHE_DIR", (env.work_dir / "triton-cache").string()},
  };
  if (env.device == "cpu") {
    overrides["TRITON_INTERPRET"] = "1";
    overrides["CUDA_VISIBLE_DEVICES"] = "";
  } else if (!env.probe_lib.empty()) {
    overrides["CUDA_INJECTION64_PATH"] = env.probe_lib.string();
    overrides["KBX_PROBE_FD"] = "5";
    overrides["KBX_PROBE_LIB"] = env.probe_lib.string();
  }
  return sandbox::scrubbed_environment(overrides);
}

sandbox::Outcome run_worker(const WorkerEnv& env, const nlohmann::json& request,
                            const fs::path& job_dir,
                            const std::function<void(const nlohmann::json&)>& on_event) {
  fs::create_directories(job_dir);
  sandbox::Spawn spawn;
  spawn.argv = {env.python.path, "-m", "kbx_worker", "--request-fd", "3", "--event-fd", "4"};
  spawn.env = worker_environment(env, job_dir);
  spawn.cwd = job_dir;
  spawn.request = request.dump();
  spawn.limits.wall_seconds = env.timeout_s;
  spawn.limits.isolate_network = env.isolate_network;
  spawn.probe_pipe = env.device != "cpu" && !env.probe_lib.empty();
  return env.launcher ? sandbox::run(spawn, on_event, *env.launcher)
                      : sandbox::run(spawn, on_event);
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
  for (const auto& e : o.events) {
    if (e.value("ev", "") == name) return e;
  }
  return nullptr;
}

}  // namespace kbx::sched
