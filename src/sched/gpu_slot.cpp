#include "sched/gpu_slot.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/error.h"
#include "common/util.h"

namespace fs = std::filesystem;

namespace kbx::sched {

fs::path slot_dir() {
  if (const char* env = std::getenv("KBX_SLOT_DIR"); env && *env) return fs::path(env);
  return fs::path("/tmp") / "kbx-gpu-slots";
}

std::string slot_key(const std::string& visible_devices) {
  std::string first = visible_devices.substr(0, visible_devices.find(','));
  std::string key;
  for (char c : first) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-') key += c;
  }
  return key.empty() ? "0" : key;
}

fs::path slot_trace_path() {
  const char* env = std::getenv("KBX_SLOT_TRACE");
  return env ? fs::path(env) : fs::path();
}

GpuSlot::GpuSlot(const std::string& visible_devices, std::string holder)
    : path_(slot_dir() / ("gpu-" + slot_key(visible_devices) + ".lock")),
      holder_(std::move(holder)),
      trace_path_(slot_trace_path()) {}

namespace {

void append_trace_line(const fs::path& trace, const char* what, const std::string& where,
                       const std::string& who) {
  if (trace.empty()) return;
  // One write per line on an O_APPEND file: lines of concurrent writers do not interleave.
  const std::string line =
      fmt::format("{:.6f} {} {} {}\n", monotonic_seconds(), what, where, who.empty() ? "-" : who);
  const int fd = open(trace.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;  // a trace is a debugging aid: never a reason to fail a job
  [[maybe_unused]] const ssize_t n = write(fd, line.data(), line.size());
  close(fd);
}

}  // namespace

void trace_pipeline(const char* what, const std::string& who) {
  append_trace_line(slot_trace_path(), what, "pipeline", who);
}

void GpuSlot::trace(const char* what) const {
  append_trace_line(trace_path_, what, path_.filename().string(), holder_);
}

GpuSlot::~GpuSlot() {
  release();
  if (fd_ >= 0) close(fd_);
}

bool GpuSlot::lock(bool wait) {
  if (held_) return true;
  if (fd_ < 0) {
    // Shared by every user's kbx on the machine: a sticky folder anyone may write, files anyone
    // may lock (best effort; a folder that exists keeps its modes).
    std::error_code ec;
    if (fs::create_directories(path_.parent_path(), ec)) {
      fs::permissions(path_.parent_path(), fs::perms::all | fs::perms::sticky_bit, ec);
    }
    fd_ = open(path_.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0666);  // flock needs no write
    if (fd_ >= 0) fchmod(fd_, 0666);
    if (fd_ < 0) {
      throw Error(
          fmt::format("GPU timing slot {}: cannot open it ({}); set KBX_SLOT_DIR to a "
                      "writable folder shared by the kbx processes of this machine",
                      path_.string(), std::strerror(errno)));
    }
  }
  while (flock(fd_, LOCK_EX | (wait ? 0 : LOCK_NB)) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) return false;
    throw Error(fmt::format("GPU timing slot {}: {}", path_.string(), std::strerror(errno)));
  }
  held_ = true;
  trace("acquire");
  return true;
}

bool GpuSlot::try_acquire() {
  return lock(false);
}

void GpuSlot::acquire() {
  lock(true);
}

void GpuSlot::release() {
  if (!held_) return;
  trace("release");
  flock(fd_, LOCK_UN);
  held_ = false;
}

}  // namespace kbx::sched
