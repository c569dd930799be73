#pragma once
#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>

namespace kbx::sandbox {

/// What one hush cost the holder: how long freezing the other members took, how long it then
/// waited for their cgroups to report frozen (a host-bound call's hush only), and how many had
/// not by the wait's end.
struct HushCost {
  bool host_bound = true;  ///< the holder's call waits on the host (kbx's own CPU work waits too)
  double freeze_seconds = 0;
  double wait_seconds = 0;
  int frozen = 0;       ///< members frozen by this hush
  int not_stopped = 0;  ///< of them, cgroups still running work when the wait ended
};

/// A quiet host for one job's host-bound timed calls (issue 14): while the GPU's slot holder
/// times a call that waits on the host inside (a sync, as masked_select's), every other job of
/// this kbx process is frozen, so that its CPU work (compiles, file writes) cannot stretch the
/// holder's host gaps. Only a slot holder may hush the room, one at a time, for at most
/// kMaxQuietSeconds; other slot holders (one per GPU) are never frozen; the time a job spends
/// frozen does not count against its time limit.
class QuietRoom {
 public:
  /// Longest a hush lasts: past it the room thaws even if the holder did not say so (a hostile
  /// holder cannot stall the other jobs for longer than this per request).
  static constexpr double kMaxQuietSeconds = 10.0;

  explicit QuietRoom(double max_quiet_seconds = kMaxQuietSeconds)
      : max_quiet_seconds_(max_quiet_seconds) {}
  ~QuietRoom();
  QuietRoom(const QuietRoom&) = delete;
  QuietRoom& operator=(const QuietRoom&) = delete;

  /// A job's processes: its process group, and its cgroup when confined in one (frozen through
  /// cgroup.freeze then, which a process cannot leave; else SIGSTOP to the group). Returns the
  /// member's id; a job that joins while the room is hushed is frozen at once.
  int join(pid_t process_group, const std::filesystem::path& cgroup);
  /// The same for a job that runs CPU work only until it says otherwise (gpu_from_now): kbx's
  /// own code before a candidate's CUDA starts. A hush for a call that only queues GPU work
  /// leaves it running; a host-bound call's hush freezes it as any member.
  int join_cpu_only(pid_t process_group, const std::filesystem::path& cgroup);
  /// The member may do GPU work from now on (its CUDA starts, then the candidate's code runs):
  /// frozen at once when the room is hushed, by any hush from then on.
  void gpu_from_now(int id);
  /// The member is gone (thawed first when frozen).
  void leave(int id);
  /// Whether the member holds a GPU's slot now: a holder is never frozen.
  void set_holding(int id, bool holding);
  /// Freezes every member but the holders; false when the room is already hushed by another
  /// member or id does not hold a slot. host_bound: the holder's timed call waits on the host
  /// inside, so kbx's own CPU work waits the hush out as well (wait_while_hushed); a call that
  /// only queues GPU work is hushed for the other jobs' GPU work, which kbx's comparisons do not
  /// make.
  bool hush(int id, bool host_bound = true);
  /// Called after each hush that froze members (outside the room's lock), e.g. to trace it.
  void on_hush(std::function<void(const HushCost&)> observer) { observer_ = std::move(observer); }
  /// Thaws the room when id hushed it.
  void unhush(int id);
  /// Thaws the room when its hush has lasted max_quiet_seconds (called from the holder's loop).
  void expire(int id);
  /// Seconds this member has spent frozen, the ongoing freeze included.
  double frozen_seconds(int id) const;
  /// The member that hushed the room; -1 when none.
  int hushed_by() const;
  /// How long the hush that id holds has lasted, in seconds; -1 when id holds none.
  double hush_seconds(int id) const;
  /// Blocks while the room is hushed for a host-bound call: kbx's own CPU work (comparing
  /// outputs) calls it between chunks, so that no CPU work of the run but the holder's overlaps
  /// a quiet timed loop that the host's speed enters.
  void wait_while_hushed() const;

 private:
  struct Member {
    pid_t process_group = 0;
    std::filesystem::path cgroup;
    bool holding = false;
    bool frozen = false;
    bool cpu_only = false;  ///< does no GPU work yet (join_cpu_only)
    double frozen_since = 0;
    double frozen_total = 0;
  };
  int add_member(pid_t process_group, const std::filesystem::path& cgroup, bool cpu_only);
  void freeze(Member& m, double now);
  /// Whether the hush now on (host_bound_) freezes m: every member but the holders, and of the
  /// CPU-only ones only for a host-bound call.
  bool hush_freezes(const Member& m) const;
  /// Freezes every member but `id` that the hush now on freezes and is not frozen yet; returns
  /// how many it froze.
  int freeze_others(int id, double now);
  void thaw(Member& m, double now);
  void end_hush();  ///< no owner; every member thawed
  /// How many frozen members' cgroups still run work, waiting for them until `until` (monotonic
  /// seconds; a time past gives one look).
  int count_not_stopped(double until) const;

  double max_quiet_seconds_;
  std::function<void(const HushCost&)> observer_;
  mutable std::mutex mu_;
  mutable std::condition_variable calm_;  ///< notified when a hush ends
  std::atomic<bool> hushed_{false};       ///< owner_ >= 0, read without the lock
  std::atomic<bool> host_bound_{true};    ///< the hush's call waits on the host
  std::map<int, Member> members_;
  int next_id_ = 1;
  int owner_ = -1;
  double hushed_at_ = 0;
};

}  // namespace kbx::sandbox
