#pragma once
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/process.h"

namespace kbx::sandbox {

/// How long a warm parent's launch waits: for the parent's imports to end (its "ready": on a
/// loaded machine torch's import took over a minute, session 17's CI), then for the fork.
struct WarmWaits {
  std::chrono::milliseconds ready{std::chrono::minutes(10)};
  std::chrono::milliseconds fork{std::chrono::seconds(60)};
};

/// A warm parent: one Python process that has imported torch, triton and the worker once and
/// forks a fresh, sandboxed child per job (python -m kbx_worker.zygote), so that a candidate
/// does not pay the interpreter's start-up. Children get the same limits, namespace, process
/// group and descriptors as directly started ones; CUDA is first touched in the child.
class WarmParent : public Launcher {
 public:
  /// Starts the parent (argv: the interpreter's absolute path, its flags and the zygote module,
  /// ending in "--socket-fd 3") with env in cwd; `ok()` says whether it came up.
  WarmParent(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
             const std::filesystem::path& cwd, WarmWaits waits = {});
  ~WarmParent() override;
  WarmParent(const WarmParent&) = delete;
  WarmParent& operator=(const WarmParent&) = delete;

  bool ok() const;
  pid_t launch(const Spawn& spawn, const int fds[kLaunchFds]) override;
  bool try_reap(pid_t pid, int* status) override;
  int reap(pid_t pid) override;

 private:
  void read_messages();

  WarmWaits waits_;
  pid_t pid_ = -1;
  int sock_ = -1;
  bool alive_ = false;
  bool ready_ = false;  ///< the parent said "ready" (its imports done)
  std::thread reader_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  long next_id_ = 1;
  std::map<long, pid_t> started_;
  std::map<pid_t, int> exited_;
};

}  // namespace kbx::sandbox
