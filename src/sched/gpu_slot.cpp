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

GpuSlot::GpuSlot(const std::string& visible_devices)
    : path_(slot_dir() / ("gpu-" + slot_key(visible_devices) + ".lock")) {}

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
  flock(fd_, LOCK_UN);
  held_ = false;
}

}  // namespace kbx::sched
