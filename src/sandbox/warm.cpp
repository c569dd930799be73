#include "sandbox/warm.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

extern char** environ;

namespace kbx::sandbox {
namespace {

constexpr int kSocketFd = 3;

}  // namespace

WarmParent::WarmParent(const std::vector<std::string>& argv_in,
                       const std::map<std::string, std::string>& env,
                       const std::filesystem::path& cwd, WarmWaits waits)
    : waits_(waits) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return;
  // Everything the child needs is built before the fork: no allocation happens after it.
  std::vector<std::string> env_strings, args = argv_in;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    setpgid(0, 0);
    int high = fcntl(sv[1], F_DUPFD, 64);
    dup2(high, kSocketFd);
    int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, 0);
    dup2(devnull, 1);  // its children get their own stdout; the parent itself prints nothing
    for (int fd = kSocketFd + 1; fd < 1024; ++fd) close(fd);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(127);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(sv[1]);
  if (pid_ < 0) {
    close(sv[0]);
    return;
  }
  sock_ = sv[0];
  alive_ = true;
  reader_ = std::thread([this] { read_messages(); });
}

WarmParent::~WarmParent() {
  if (pid_ > 0) {
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (sock_ >= 0) shutdown(sock_, SHUT_RDWR);
  if (reader_.joinable()) reader_.join();
  if (sock_ >= 0) close(sock_);
}

bool WarmParent::ok() const {
  std::lock_guard<std::mutex> lock(mu_);
  return alive_;
}

void WarmParent::read_messages() {
  std::vector<char> buf(65536);
  while (true) {
    ssize_t n = recv(sock_, buf.data(), buf.size(), 0);
    if (n <= 0) break;
    try {
      auto msg = nlohmann::json::parse(std::string(buf.data(), static_cast<size_t>(n)));
      std::lock_guard<std::mutex> lock(mu_);
      if (msg.value("ev", "") == "ready") {
        ready_ = true;
      } else if (msg.value("ev", "") == "started") {
        started_[msg.value("id", 0L)] = msg.value("pid", -1);
      } else if (msg.value("ev", "") == "exit") {
        exited_[msg.value("pid", -1)] = msg.value("status", 0);
      }
    } catch (const std::exception&) {
      // a malformed message from our own parent process: ignore it, the child's pipes still tell
    }
    cv_.notify_all();
  }
  std::lock_guard<std::mutex> lock(mu_);
  alive_ = false;
  cv_.notify_all();
}

pid_t WarmParent::launch(const Spawn& s, const int fds[kLaunchFds]) {
  long id;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, waits_.ready, [&] { return ready_ || !alive_; }) || !alive_) {
      return -1;
    }
    id = next_id_++;
  }
  nlohmann::json req = {{"id", id},
                        {"env", s.env},
                        {"cwd", s.cwd.string()},
                        {"argv", s.argv},
                        {"isolate_network", s.limits.isolate_network},
                        {"max_file_bytes", s.limits.max_file_bytes},
                        {"probe", fds[4] >= 0},
                        {"confine", s.confine}};
  if (!s.confine.is_null()) req["confine"]["init_pid_fd"] = kInitPidFd;
  const std::string text = req.dump();
  iovec iov{const_cast<char*>(text.data()), text.size()};
  int sent[kLaunchFds];  // the probe and init pipes travel only when there are some
  int nfds = 0;
  for (int k = 0; k < kLaunchFds; ++k) {
    if (fds[k] >= 0) sent[nfds++] = fds[k];
  }
  char control[CMSG_SPACE(kLaunchFds * sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
  cmsghdr* cm = CMSG_FIRSTHDR(&msg);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
  std::memcpy(CMSG_DATA(cm), sent, nfds * sizeof(int));
  {
    std::lock_guard<std::mutex> lock(mu_);  // one message at a time on the socket
    if (sendmsg(sock_, &msg, MSG_NOSIGNAL) < 0) return -1;
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, waits_.fork, [&] { return started_.count(id) || !alive_; })) return -1;
  if (!started_.count(id)) return -1;
  pid_t pid = started_[id];
  started_.erase(id);
  return pid;
}

bool WarmParent::try_reap(pid_t pid, int* status) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = exited_.find(pid);
  if (it == exited_.end()) {
    if (alive_) return false;
    // The warm parent is gone, and with it the report of this child, which nobody reaps now:
    // its group is killed here (the warm parent kills a child's group before it reaps it).
    kill(-pid, SIGKILL);
    *status = SIGKILL;
    return true;
  }
  *status = it->second;
  exited_.erase(it);
  return true;
}

int WarmParent::reap(pid_t pid) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return exited_.count(pid) || !alive_; });
  auto it = exited_.find(pid);
  if (it == exited_.end()) {
    kill(-pid, SIGKILL);  // the warm parent is gone (see try_reap)
    return SIGKILL;
  }
  int status = it->second;
  exited_.erase(it);
  return status;
}

}  // namespace kbx::sandbox
