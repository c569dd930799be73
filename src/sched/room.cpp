#include "sched/room.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <limits>
#include <string>

#include "common/util.h"

namespace kbx::sched {
namespace fs = std::filesystem;

namespace {

/// A /proc/meminfo field in bytes; max when it cannot be read (no limit known).
std::uint64_t meminfo_bytes(const std::string& field) {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  std::uint64_t kib = 0;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == field + ":") return kib * 1024;
  }
  return std::numeric_limits<std::uint64_t>::max();
}

/// How often a waiting chunk looks at the free bytes again (they also grow when a task's last
/// job ends, which does not pass through this gate).
constexpr auto kPollInterval = std::chrono::milliseconds(250);

}  // namespace

std::uint64_t free_bytes_for(const fs::path& work_dir) {
  std::uint64_t free = meminfo_bytes("MemAvailable");
  struct statvfs vfs {};
  fs::path probe = work_dir;
  std::error_code ec;
  while (!probe.empty() && !fs::exists(probe, ec)) probe = probe.parent_path();
  if (!probe.empty() && statvfs(probe.c_str(), &vfs) == 0) {
    free = std::min<std::uint64_t>(free, static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize);
  }
  return free;
}

std::uint64_t room_reserve_bytes() {
  const std::uint64_t total = meminfo_bytes("MemTotal");
  const std::uint64_t floor = 2ULL << 30;
  if (total == std::numeric_limits<std::uint64_t>::max()) return floor;
  return std::max(floor, total / 8);
}

std::uint64_t task_bytes_guess(const std::string& device) {
  return device == "cpu" ? 256ULL << 20 : 8ULL << 30;
}

RoomGate::RoomGate(std::uint64_t reserve_bytes, std::uint64_t chunk_bytes,
                   std::function<std::uint64_t()> free_bytes)
    : reserve_bytes_(reserve_bytes),
      chunk_bytes_(chunk_bytes),
      free_bytes_(std::move(free_bytes)) {}

bool RoomGate::has_room() const {
  const std::uint64_t needed =
      reserve_bytes_ + chunk_bytes_ * static_cast<std::uint64_t>(in_flight_ + 1);
  return free_bytes_() >= needed;
}

double RoomGate::enter(const std::function<bool()>& nothing_live) {
  const double t0 = monotonic_seconds();
  std::unique_lock<std::mutex> lock(mu_);
  while (!has_room() && !(in_flight_ == 0 && nothing_live())) {
    left_.wait_for(lock, kPollInterval);
  }
  ++in_flight_;
  return monotonic_seconds() - t0;
}

void RoomGate::leave() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --in_flight_;
  }
  left_.notify_all();
}

int RoomGate::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_;
}

}  // namespace kbx::sched
