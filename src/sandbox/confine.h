#pragma once
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kbx::sandbox {

/// How far this machine lets kbx isolate a candidate.
enum class Isolation {
  Full,     ///< own uid, mount/PID/IPC/network namespaces, minimal filesystem (needs root)
  Network,  ///< a new network namespace only (through a user namespace), same uid
  None,     ///< nothing: the candidate runs as the invoking user, with its view of the machine
};

/// "full", "network" or "none".
std::string isolation_name(Isolation i);

/// What the sandbox can do on this machine (probed once by forking test children).
struct Abilities {
  Isolation isolation = Isolation::None;
  std::string isolation_note;  ///< why not full, when it is not
  bool network_namespace = false;
  std::string network_namespace_note;  ///< why not, when it cannot
  bool cgroup = false;                 ///< a writable cgroup v2 with memory and pids controllers
  std::string cgroup_note;             ///< why not, when there is none
  /// The protections in force for candidates, as recorded with every run.
  nlohmann::json describe() const;
};

const Abilities& abilities();

/// The view and limits of one confined candidate worker; python/kbx_worker/confine.py carries
/// it out in the child before any candidate code runs.
struct ConfinePlan {
  uid_t uid = 0;
  gid_t gid = 0;
  std::filesystem::path root;  ///< an empty folder that becomes the candidate's "/"
  std::vector<std::filesystem::path> read_only;
  std::vector<std::filesystem::path> read_write;
  std::vector<std::filesystem::path> devices;
  std::uint64_t tmp_bytes = 1ULL << 30;  ///< size of its private /tmp and /dev/shm each
  std::uint64_t nproc = 1024;            ///< RLIMIT_NPROC of its uid (threads count)
  std::uint64_t address_space = 0;       ///< RLIMIT_AS when no cgroup limits memory; 0: none
  std::filesystem::path cgroup;          ///< the job's cgroup folder, or empty
  std::filesystem::path cwd;             ///< where the worker starts (inside read_write)

  nlohmann::json to_json() const;
};

/// The system folders every confined worker sees read-only (/usr, /etc, /sys, and /bin, /lib,
/// /lib64, /sbin as links or folders), those that exist here.
std::vector<std::filesystem::path> system_read_only_paths();

/// The device nodes a confined worker gets: null, zero, full, random, urandom and the GPU's.
std::vector<std::filesystem::path> device_nodes();

/// Drops every path that lies inside another path of the list, and the paths that do not exist.
std::vector<std::filesystem::path> outermost_existing(std::vector<std::filesystem::path> paths);

/// A uid (and gid) for one sandboxed job: unprivileged, unused by the system, drawn at random.
uid_t fresh_sandbox_uid();

/// A candidate's private, writable folder: a size-capped tmpfs owned by the sandbox's uid when
/// kbx runs as root, else a plain folder. Unmounted and removed when destroyed.
class JobFolder {
 public:
  JobFolder(std::filesystem::path path, uid_t owner, std::uint64_t max_bytes, bool as_tmpfs);
  ~JobFolder();
  JobFolder(const JobFolder&) = delete;
  JobFolder& operator=(const JobFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }
  /// Keep the files after the job (--keep-files): the tmpfs is copied to a plain folder.
  void keep() { keep_ = true; }

 private:
  std::filesystem::path path_;
  bool mounted_ = false;
  bool keep_ = false;
};

/// A cgroup v2 folder with memory and pids limits for one job, removed when destroyed (after
/// killing what is left in it). Empty path() when the machine has none.
class JobCgroup {
 public:
  JobCgroup(const std::string& name, std::uint64_t memory_bytes, std::uint64_t max_pids);
  ~JobCgroup();
  JobCgroup(const JobCgroup&) = delete;
  JobCgroup& operator=(const JobCgroup&) = delete;
  const std::filesystem::path& path() const { return path_; }
  /// True when the job was stopped by its memory limit (memory.events: oom_kill > 0).
  bool oom_killed() const;

 private:
  std::filesystem::path path_;
};

/// Puts kbx itself into a private mount namespace (as root, before any thread starts), so that
/// the job folders it mounts are seen by its workers only and vanish with it. False when it
/// cannot (not root): then job folders are plain folders.
bool enter_private_mount_namespace();

}  // namespace kbx::sandbox
