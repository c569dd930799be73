#pragma once
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/process.h"

namespace kbx::sandbox {

/// A warm parent: one Python process that has imported torch, triton and the worker once and
/// forks a fresh, sandboxed child per job (python -m kbx_worker.zygote), so that a candidate
/// does not pay the interpreter's start-up. Children get the same limits, namespace, process
/// group and descriptors as directly started ones; CUDA is first touched in the child.
class WarmParent : public Launcher {
 public:
  /// Starts the parent (argv: the interpreter's absolute path, its flags and the zygote module,
  /// ending in "--socket-fd 3") with env in cwd; `ok()` says whether it came up.
  WarmParent(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
             const std::filesystem::path& cwd);
  ~WarmParent() override;
  WarmParent(const WarmParent&) = delete;
  WarmParent& operator=(const WarmParent&) = delete;

  bool ok() const;
  pid_t launch(const Spawn& spawn, const int fds[kLaunchFds]) override;
  bool try_reap(pid_t pid, int* status) override;
  int reap(pid_t pid) override;

 private:
  void read_messages();

  pid_t pid_ = -1;
  int sock_ = -1;
  bool alive_ = false;
  std::thread reader_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  long next_id_ = 1;
  std::map<long, pid_t> started_;
  std::map<pid_t, int> exited_;
};

}  // namespace kbx::sandbox
