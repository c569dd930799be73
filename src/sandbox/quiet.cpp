#include "sandbox/quiet.h"

#include <signal.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "common/util.h"

namespace kbx::sandbox {
namespace fs = std::filesystem;

namespace {

/// How long a host-bound call's hush waits for the frozen cgroups to report it (their tasks stop
/// at their next return to user space: a process inside a long system call takes that long).
constexpr double kFreezeWaitSeconds = 0.05;

bool write_control(const fs::path& file, const char* value) {
  std::ofstream out(file);
  out << value;
  out.flush();
  return static_cast<bool>(out);
}

bool cgroup_frozen(const fs::path& cgroup) {
  std::ifstream in(cgroup / "cgroup.events");
  std::string key;
  int value = 0;
  while (in >> key >> value) {
    if (key == "frozen") return value == 1;
  }
  return true;  // no such file: nothing to wait for
}

}  // namespace

QuietRoom::~QuietRoom() {
  std::lock_guard<std::mutex> lock(mu_);
  end_hush();
}

int QuietRoom::join(pid_t process_group, const fs::path& cgroup) {
  return add_member(process_group, cgroup, false);
}

int QuietRoom::join_cpu_only(pid_t process_group, const fs::path& cgroup) {
  return add_member(process_group, cgroup, true);
}

int QuietRoom::add_member(pid_t process_group, const fs::path& cgroup, bool cpu_only) {
  std::lock_guard<std::mutex> lock(mu_);
  const int id = next_id_++;
  Member& m = members_[id];
  m.process_group = process_group;
  m.cgroup = cgroup;
  m.cpu_only = cpu_only;
  if (owner_ >= 0 && hush_freezes(m)) freeze(m, monotonic_seconds());
  return id;
}

void QuietRoom::gpu_from_now(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(id);
  if (it == members_.end()) return;
  it->second.cpu_only = false;
  if (owner_ >= 0 && owner_ != id && hush_freezes(it->second)) {
    freeze(it->second, monotonic_seconds());
  }
}

int QuietRoom::freeze_others(int id, double now) {
  int frozen = 0;
  for (auto& [other, m] : members_) {
    if (other != id && !m.frozen && hush_freezes(m)) {
      freeze(m, now);
      frozen += m.frozen ? 1 : 0;
    }
  }
  return frozen;
}

bool QuietRoom::hush_freezes(const Member& m) const {
  return !m.holding && (!m.cpu_only || host_bound_.load());
}

void QuietRoom::leave(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(id);
  if (it == members_.end()) return;
  if (owner_ == id) end_hush();
  thaw(it->second, monotonic_seconds());
  members_.erase(it);
}

void QuietRoom::set_holding(int id, bool holding) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(id);
  if (it == members_.end()) return;
  if (!holding && owner_ == id) end_hush();
  it->second.holding = holding;
  if (holding) thaw(it->second, monotonic_seconds());  // another GPU's holder hushed it
}

bool QuietRoom::hush(int id, bool host_bound) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = members_.find(id);
  if (it == members_.end() || !it->second.holding || (owner_ >= 0 && owner_ != id)) return false;
  const bool was_host_bound = host_bound_.exchange(host_bound);
  if (owner_ == id) {
    if (was_host_bound && !host_bound) calm_.notify_all();
    if (!was_host_bound && host_bound) {
      const double now = monotonic_seconds();
      freeze_others(id, now);  // the CPU-only ones, left running so far
      count_not_stopped(now + kFreezeWaitSeconds);
    }
    return true;
  }
  owner_ = id;
  hushed_ = true;
  const double now = monotonic_seconds();
  hushed_at_ = now;
  HushCost cost;
  cost.host_bound = host_bound;
  cost.frozen = freeze_others(id, now);
  const double frozen_at = monotonic_seconds();
  cost.freeze_seconds = frozen_at - now;
  // A host-bound call waits (briefly) until the cgroups say their tasks are stopped: a task not
  // yet stopped is inside the kernel, on the host's CPUs. A call that only queues GPU work does
  // not wait: such a task queues no GPU work until it returns to user space, where it stops, and
  // the work it queued before is what the timer's settle waits for (session 25 on the H200: 393
  // of 728 hushes waited over 10 ms, 11.9 s of the slot's 147.7 s in a warm run).
  cost.not_stopped = count_not_stopped(host_bound ? now + kFreezeWaitSeconds : 0);
  cost.wait_seconds = monotonic_seconds() - frozen_at;
  lock.unlock();
  if (observer_ && cost.frozen > 0) observer_(cost);
  return true;
}

void QuietRoom::unhush(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (id >= 0 && owner_ == id) end_hush();
}

void QuietRoom::expire(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (id >= 0 && owner_ == id && monotonic_seconds() - hushed_at_ >= max_quiet_seconds_) {
    end_hush();
  }
}

double QuietRoom::frozen_seconds(int id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(id);
  if (it == members_.end()) return 0;
  const Member& m = it->second;
  return m.frozen_total + (m.frozen ? monotonic_seconds() - m.frozen_since : 0);
}

int QuietRoom::hushed_by() const {
  std::lock_guard<std::mutex> lock(mu_);
  return owner_;
}

double QuietRoom::hush_seconds(int id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return id >= 0 && owner_ == id ? monotonic_seconds() - hushed_at_ : -1;
}

int QuietRoom::count_not_stopped(double until) const {
  int not_stopped = 0;
  for (const auto& [id, m] : members_) {
    if (!m.frozen || m.cgroup.empty()) continue;
    bool stopped = cgroup_frozen(m.cgroup);
    while (!stopped && monotonic_seconds() < until) {
      std::this_thread::sleep_for(std::chrono::microseconds(500));
      stopped = cgroup_frozen(m.cgroup);
    }
    not_stopped += stopped ? 0 : 1;
  }
  return not_stopped;
}

void QuietRoom::freeze(Member& m, double now) {
  if (m.frozen) return;
  if (!m.cgroup.empty() && write_control(m.cgroup / "cgroup.freeze", "1")) {
    // frozen through the cgroup: every process of the job, whatever its process group
  } else if (m.process_group > 0) {
    kill(-m.process_group, SIGSTOP);
  } else {
    return;
  }
  m.frozen = true;
  m.frozen_since = now;
}

void QuietRoom::thaw(Member& m, double now) {
  if (!m.frozen) return;
  if (!m.cgroup.empty()) write_control(m.cgroup / "cgroup.freeze", "0");
  if (m.process_group > 0) kill(-m.process_group, SIGCONT);
  m.frozen = false;
  m.frozen_total += now - m.frozen_since;
}

void QuietRoom::end_hush() {
  owner_ = -1;
  const double now = monotonic_seconds();
  for (auto& [id, m] : members_) thaw(m, now);
  if (hushed_.exchange(false)) calm_.notify_all();
}

void QuietRoom::wait_while_hushed() const {
  if (!hushed_.load(std::memory_order_relaxed) || !host_bound_.load(std::memory_order_relaxed)) {
    return;
  }
  std::unique_lock<std::mutex> lock(mu_);
  // The hush ends at the holder's word, its release, its exit or max_quiet_seconds (expire(),
  // from the holder's supervisor); past that bound the comparisons go on regardless.
  while (owner_ >= 0 && host_bound_ && monotonic_seconds() - hushed_at_ < max_quiet_seconds_) {
    calm_.wait_for(lock, std::chrono::milliseconds(100));
  }
}

}  // namespace kbx::sandbox
