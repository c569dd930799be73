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

std::uint64_t folder_bytes(const fs::path& folder) {
  std::uint64_t bytes = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) {
      const auto size = it->file_size(size_ec);
      if (!size_ec) bytes += size;
    }
  }
  return bytes;
}

std::uint64_t FootprintGuess::guess(const std::string& category, const std::string& task) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto known = remembered_.find(task); known != remembered_.end()) {
    return known->second + known->second / 8;
  }
  auto it = largest_.find(category);
  return it == largest_.end() ? unmeasured_bytes_ : it->second;
}

void FootprintGuess::remembered(const std::string& task, std::uint64_t bytes) {
  if (bytes == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  remembered_[task] = bytes;
}

void FootprintGuess::measured(const std::string& category, std::uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, added] = largest_.emplace(category, bytes);
  if (!added) it->second = std::max(it->second, bytes);
}

RoomGate::RoomGate(std::uint64_t reserve_bytes, std::function<std::uint64_t()> free_bytes)
    : reserve_bytes_(reserve_bytes), free_bytes_(std::move(free_bytes)) {}

std::uint64_t RoomGate::still_to_write() const {
  std::uint64_t bytes = 0;
  for (const auto& [ticket, chunk] : in_flight_) {
    const std::uint64_t written = chunk.written ? chunk.written() : 0;
    bytes += chunk.guess - std::min(chunk.guess, written);
  }
  return bytes;
}

bool RoomGate::has_room(std::uint64_t chunk_bytes) const {
  return free_bytes_() >= reserve_bytes_ + still_to_write() + chunk_bytes;
}

RoomGate::Pass RoomGate::enter(std::uint64_t chunk_bytes, const std::function<bool()>& nothing_live,
                               WrittenBytes written) {
  const double t0 = monotonic_seconds();
  std::unique_lock<std::mutex> lock(mu_);
  while (!has_room(chunk_bytes) && !(in_flight_.empty() && nothing_live())) {
    left_.wait_for(lock, kPollInterval);
  }
  const int ticket = next_ticket_++;
  in_flight_[ticket] = InFlight{chunk_bytes, std::move(written)};
  return {ticket, monotonic_seconds() - t0};
}

void RoomGate::leave(int ticket) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_.erase(ticket);
  }
  left_.notify_all();
}

int RoomGate::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(in_flight_.size());
}

}  // namespace kbx::sched
