#include "fd_writer.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace kbx::probe {
namespace {

// Blocks SIGPIPE on this thread for its lifetime and discards a SIGPIPE raised meanwhile by
// our own write, so a closed pipe yields EPIPE instead of killing the process.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeGuard() {
    sigset_t pending;
    sigpending(&pending);
    if (!was_pending_ && sigismember(&pending, SIGPIPE) == 1) {
      const timespec zero{};
      while (sigtimedwait(&pipe_, nullptr, &zero) == -1 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t pipe_{};
  sigset_t old_{};
  bool was_pending_ = false;
};

std::string errno_text(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

}  // namespace

FdWriter::FdWriter(int fd, bool owned, std::chrono::milliseconds timeout)
    : fd_(fd), owned_(owned), timeout_(timeout) {}

std::optional<FdWriter> FdWriter::adopt(int fd, std::chrono::milliseconds timeout,
                                        std::string* error) {
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    if (error) *error = "KBX_PROBE_FD=" + std::to_string(fd) + ": " + errno_text("fstat");
    return std::nullopt;
  }
  const int access = fcntl(fd, F_GETFL);
  if (access == -1 || (access & O_ACCMODE) == O_RDONLY) {
    if (error) *error = "KBX_PROBE_FD=" + std::to_string(fd) + " is not open for writing";
    return std::nullopt;
  }
  const int fd_flags = fcntl(fd, F_GETFD);
  if (fd_flags != -1) fcntl(fd, F_SETFD, fd_flags | FD_CLOEXEC);
  if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) fcntl(fd, F_SETFL, access | O_NONBLOCK);
  return FdWriter(fd, false, timeout);
}

std::optional<FdWriter> FdWriter::create_file(const std::string& path,
                                              std::chrono::milliseconds timeout,
                                              std::string* error) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd == -1) {
    if (error) *error = "KBX_PROBE_FILE=" + path + ": " + errno_text("open");
    return std::nullopt;
  }
  return FdWriter(fd, true, timeout);
}

FdWriter::FdWriter(FdWriter&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      owned_(std::exchange(other.owned_, false)),
      timeout_(other.timeout_),
      error_(std::move(other.error_)) {}

FdWriter& FdWriter::operator=(FdWriter&& other) noexcept {
  if (this != &other) {
    if (owned_ && fd_ != -1) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    owned_ = std::exchange(other.owned_, false);
    timeout_ = other.timeout_;
    error_ = std::move(other.error_);
  }
  return *this;
}

FdWriter::~FdWriter() {
  if (owned_ && fd_ != -1) ::close(fd_);
}

bool FdWriter::fail(std::string message) {
  error_ = std::move(message);
  return false;
}

bool FdWriter::write_all(std::span<const std::byte> bytes) {
  if (broken()) return false;
  if (fd_ == -1) return fail("no descriptor");
  SigpipeGuard guard;
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n > 0) {
      bytes = bytes.subspan(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        return fail("write timed out after " + std::to_string(timeout_.count()) +
                    " ms (reader not draining)");
      }
      pollfd p{fd_, POLLOUT, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) < 0 && errno != EINTR)
        return fail(errno_text("poll"));
      continue;
    }
    return fail(n == 0 ? std::string("write returned 0") : errno_text("write"));
  }
  return true;
}

}  // namespace kbx::probe
