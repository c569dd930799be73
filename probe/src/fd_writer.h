// Bounded writes of whole byte blocks to the probe's pipe or file.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <span>
#include <string>

namespace kbx::probe {

/// Writes to a descriptor without ever blocking longer than a set timeout per call. Pipes and
/// sockets are switched to non-blocking mode; SIGPIPE is suppressed (a closed reader is EPIPE).
/// After a failed write the writer is broken and refuses further writes, so a reader never sees
/// records after a gap. Move-only; closes the descriptor on destruction when it owns it.
class FdWriter {
 public:
  /// Adopts an inherited descriptor (not owned): checks it is open, sets FD_CLOEXEC so programs
  /// the process executes do not hold the pipe open, and O_NONBLOCK on pipes and sockets.
  static std::optional<FdWriter> adopt(int fd, std::chrono::milliseconds timeout,
                                       std::string* error);
  /// Creates or truncates `path` (owned, close-on-exec).
  static std::optional<FdWriter> create_file(const std::string& path,
                                             std::chrono::milliseconds timeout, std::string* error);

  FdWriter(FdWriter&& other) noexcept;
  FdWriter& operator=(FdWriter&& other) noexcept;
  FdWriter(const FdWriter&) = delete;
  FdWriter& operator=(const FdWriter&) = delete;
  ~FdWriter();

  /// Writes all of `bytes`, waiting for a full pipe at most the timeout in total. Returns false
  /// (and breaks the writer) on error, on timeout, or when already broken.
  bool write_all(std::span<const std::byte> bytes);
  /// True after a failed write.
  bool broken() const { return !error_.empty(); }
  /// Why the writer broke; empty while it works.
  const std::string& error() const { return error_; }

 private:
  FdWriter(int fd, bool owned, std::chrono::milliseconds timeout);
  bool fail(std::string message);
  int fd_ = -1;
  bool owned_ = false;
  std::chrono::milliseconds timeout_;
  std::string error_;
};

}  // namespace kbx::probe
