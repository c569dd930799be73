#include "sandbox/confine.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <glob.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>

#include "common/util.h"

namespace kbx::sandbox {
namespace fs = std::filesystem;

namespace {

constexpr unsigned long kCgroup2Magic = 0x63677270;
const fs::path kCgroupRoot = "/sys/fs/cgroup";

/// Runs fn in a forked child; true when it exits 0.
template <typename Fn>
bool in_child(Fn fn) {
  pid_t pid = fork();
  if (pid == 0) _exit(fn() ? 0 : 1);
  int status = 0;
  return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

bool write_text(const fs::path& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

std::string cgroup_problem() {
  struct statfs st {};
  if (statfs(kCgroupRoot.c_str(), &st) != 0 ||
      static_cast<unsigned long>(st.f_type) != kCgroup2Magic)
    return "/sys/fs/cgroup is not a cgroup v2 hierarchy";
  if (geteuid() != 0) return "not root";
  const fs::path probe = kCgroupRoot / fmt::format("kbx-probe-{}", getpid());
  std::error_code ec;
  if (!fs::create_directory(probe, ec) || ec) return "cannot create a cgroup under /sys/fs/cgroup";
  std::string controllers;
  std::getline(std::ifstream(probe / "cgroup.controllers"), controllers);
  fs::remove(probe, ec);
  if (controllers.find("memory") == std::string::npos ||
      controllers.find("pids") == std::string::npos)
    return "the memory and pids controllers are not delegated to /sys/fs/cgroup's children";
  return "";
}

}  // namespace

std::string isolation_name(Isolation i) {
  switch (i) {
    case Isolation::Full: return "full";
    case Isolation::Network: return "network";
    case Isolation::None: return "none";
  }
  return "?";
}

nlohmann::json Abilities::describe() const {
  nlohmann::json d = {{"isolation", isolation_name(isolation)}};
  if (isolation == Isolation::Full) {
    d["own_uid"] = true;
    d["namespaces"] = {"mount", "pid", "ipc", "uts", "network"};
    d["filesystem"] = "minimal: read-only system, Python and task; read-write job folder and /tmp";
    d["limits"] =
        cgroup ? "cgroup v2 memory.max, pids.max" : "rlimits (nproc; address space on cpu)";
    d["job_folder"] = "size-capped tmpfs";
  } else {
    d["note"] = isolation_note;
    d["network_namespace"] = network_namespace;
  }
  if (!cgroup) d["cgroup_note"] = cgroup_note;
  return d;
}

const Abilities& abilities() {
  static const Abilities probed = [] {
    Abilities a;
    a.network_namespace = in_child(
        [] { return unshare(CLONE_NEWNET) == 0 || unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0; });
    if (!a.network_namespace) {
      a.network_namespace_note =
          "unshare(CLONE_NEWNET) refused (no root and no unprivileged user namespaces)";
    }
    const bool root = geteuid() == 0;
    const bool namespaces = root && in_child([] {
                              return unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC |
                                             CLONE_NEWUTS | CLONE_NEWNET) == 0;
                            });
    if (namespaces) {
      a.isolation = Isolation::Full;
    } else {
      a.isolation = a.network_namespace ? Isolation::Network : Isolation::None;
      a.isolation_note = root ? "unshare of the mount/PID/IPC/network namespaces refused"
                              : "kbx is not root: candidates cannot get a uid of their own and a "
                                "minimal filesystem (run as root, or pass --allow-unisolated)";
    }
    a.cgroup_note = cgroup_problem();
    a.cgroup = a.cgroup_note.empty();
    return a;
  }();
  return probed;
}

nlohmann::json ConfinePlan::to_json() const {
  auto strings = [](const std::vector<fs::path>& ps) {
    std::vector<std::string> out;
    for (const auto& p : ps) out.push_back(p.string());
    return out;
  };
  return {{"uid", uid},
          {"gid", gid},
          {"root", root.string()},
          {"ro", strings(read_only)},
          {"rw", strings(read_write)},
          {"devices", strings(devices)},
          {"tmp_bytes", tmp_bytes},
          {"nproc", nproc},
          {"address_space", address_space},
          {"cgroup", cgroup.string()},
          {"cwd", cwd.string()}};
}

std::vector<fs::path> system_read_only_paths() {
  std::vector<fs::path> out;
  for (const char* p :
       {"/usr", "/etc", "/sys", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
    std::error_code ec;
    if (fs::exists(fs::symlink_status(p, ec))) out.emplace_back(p);
  }
  return out;
}

std::vector<fs::path> device_nodes() {
  std::vector<fs::path> out;
  for (const char* p : {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}) {
    if (fs::exists(p)) out.emplace_back(p);
  }
  glob_t g{};
  if (glob("/dev/nvidia*", 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  }
  globfree(&g);
  return out;
}

std::vector<fs::path> outermost_existing(std::vector<fs::path> paths) {
  std::vector<fs::path> norm;
  for (auto& p : paths) {
    if (p.empty() || !p.is_absolute()) continue;
    fs::path n = p.lexically_normal();
    if (n.has_filename() == false && n != "/") n = n.parent_path();
    std::error_code ec;
    if (fs::exists(n, ec)) norm.push_back(n);
  }
  std::sort(norm.begin(), norm.end());
  norm.erase(std::unique(norm.begin(), norm.end()), norm.end());
  std::vector<fs::path> out;
  for (const auto& p : norm) {
    const bool inside = std::any_of(out.begin(), out.end(), [&](const fs::path& q) {
      auto rel = p.lexically_relative(q);
      return !rel.empty() && *rel.begin() != "..";
    });
    if (!inside) out.push_back(p);
  }
  return out;
}

uid_t fresh_sandbox_uid() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return static_cast<uid_t>(2'000'000'000 + rng() % 100'000'000);
}

JobFolder::JobFolder(fs::path path, uid_t owner, std::uint64_t max_bytes, bool as_tmpfs)
    : path_(std::move(path)) {
  std::error_code ec;
  fs::remove_all(path_, ec);
  fs::create_directories(path_);
  if (as_tmpfs) {
    const std::string opts =
        fmt::format("size={},mode=0700,uid={},gid={}", max_bytes, owner, owner);
    // Huge pages where the kernel has them for tmpfs: writing and reading back a job's
    // gigabytes of outputs costs a fraction of the page faults (bench/spawn_cost.py).
    const std::string huge = opts + ",huge=within_size";
    if (mount("tmpfs", path_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, huge.c_str()) != 0 &&
        mount("tmpfs", path_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) != 0) {
      throw std::runtime_error(fmt::format("cannot mount the job folder {} as tmpfs: {}",
                                           path_.string(), std::strerror(errno)));
    }
    mounted_ = true;
  } else if (owner != geteuid()) {
    if (chown(path_.c_str(), owner, owner) != 0 || chmod(path_.c_str(), 0700) != 0) {
      throw std::runtime_error(fmt::format("cannot hand the job folder {} to uid {}: {}",
                                           path_.string(), owner, std::strerror(errno)));
    }
  }
}

JobFolder::~JobFolder() {
  std::error_code ec;
  if (keep_ && mounted_) {
    const fs::path kept = path_.string() + ".kept";
    fs::remove_all(kept, ec);
    fs::copy(path_, kept, fs::copy_options::recursive, ec);
  }
  if (mounted_) umount2(path_.c_str(), MNT_DETACH);
  if (!keep_ || mounted_) fs::remove_all(path_, ec);
}

JobCgroup::JobCgroup(const std::string& name, std::uint64_t memory_bytes, std::uint64_t max_pids) {
  if (!abilities().cgroup) return;
  const fs::path dir = kCgroupRoot / fmt::format("kbx-{}-{}", getpid(), name);
  std::error_code ec;
  if (!fs::create_directory(dir, ec) || ec) return;
  write_text(dir / "memory.max", std::to_string(memory_bytes));
  write_text(dir / "memory.swap.max", "0");
  write_text(dir / "pids.max", std::to_string(max_pids));
  path_ = dir;
}

bool JobCgroup::oom_killed() const {
  if (path_.empty()) return false;
  std::ifstream in(path_ / "memory.events");
  std::string key;
  long value = 0;
  while (in >> key >> value) {
    if (key == "oom_kill" && value > 0) return true;
  }
  return false;
}

JobCgroup::~JobCgroup() {
  if (path_.empty()) return;
  write_text(path_ / "cgroup.kill", "1");
  for (int attempt = 0; attempt < 50; ++attempt) {
    if (rmdir(path_.c_str()) == 0 || errno == ENOENT) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool enter_private_mount_namespace() {
  if (geteuid() != 0) return false;
  if (unshare(CLONE_NEWNS) != 0) return false;
  return mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0;
}

}  // namespace kbx::sandbox
