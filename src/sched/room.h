#pragma once
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace kbx::sched {

/// Bytes a run can still fill: the smaller of the memory the kernel says is available
/// (/proc/meminfo's MemAvailable: files on a tmpfs count against it) and the free space of the
/// file system that holds `work_dir`.
std::uint64_t free_bytes_for(const std::filesystem::path& work_dir);

/// What a run keeps free beside its reference files: an eighth of the machine's memory (the
/// workers' own memory, the candidates' outputs), at least 2 GiB.
std::uint64_t room_reserve_bytes();

/// A guess at the files one task's references write on a device before any task of its
/// category was measured: 8 GiB on a GPU (the largest suite tasks' inputs, outputs, float64
/// shadows and fresh twins: 5-10 GB on the H200), 256 MiB on the CPU (small cases only).
std::uint64_t task_bytes_guess(const std::string& device);

/// Bytes of the regular files under a folder (0 when it does not exist).
std::uint64_t folder_bytes(const std::filesystem::path& folder);

/// What a task's references will write: what they wrote on this machine before (a run's
/// database remembers it), with an eighth more; else the largest of its category's tasks measured
/// so far in the run (tasks of a category have cases of alike sizes), else a default.
class FootprintGuess {
 public:
  explicit FootprintGuess(std::uint64_t unmeasured_bytes) : unmeasured_bytes_(unmeasured_bytes) {}
  std::uint64_t guess(const std::string& category, const std::string& task = "") const;
  /// What the task's references wrote in an earlier run (0: nothing known).
  void remembered(const std::string& task, std::uint64_t bytes);
  void measured(const std::string& category, std::uint64_t bytes);

 private:
  std::uint64_t unmeasured_bytes_;
  mutable std::mutex mu_;
  std::map<std::string, std::uint64_t> largest_;     ///< by category
  std::map<std::string, std::uint64_t> remembered_;  ///< by task
};

/// Keeps a run's reference chunks from filling the machine (issue 14): a chunk's references put
/// gigabytes of files in the work folder (on /dev/shm, memory), which stay until the task's
/// jobs end. A chunk starts only while the free bytes cover a reserve plus what each chunk being
/// computed, this one included, has still to write (its guess less what its folders hold
/// already: those bytes are gone from the free bytes); when nothing is live and no chunk is
/// being computed, it starts regardless (the run always moves on).
class RoomGate {
 public:
  /// What a chunk in flight has written so far (the bytes of its folders).
  using WrittenBytes = std::function<std::uint64_t()>;

  /// free_bytes: what is free now (tests give their own).
  RoomGate(std::uint64_t reserve_bytes, std::function<std::uint64_t()> free_bytes);
  RoomGate(const RoomGate&) = delete;
  RoomGate& operator=(const RoomGate&) = delete;

  /// A chunk let in: the ticket that leave() takes, and the seconds it waited.
  struct Pass {
    int ticket = 0;
    double waited_s = 0;
  };

  /// Waits for room for a chunk that will write about chunk_bytes, then counts it in flight
  /// (less what `written` says it wrote, when given); nothing_live() says whether no task has
  /// files on disk any more.
  Pass enter(std::uint64_t chunk_bytes, const std::function<bool()>& nothing_live,
             WrittenBytes written = {});
  /// The chunk of this ticket has its files written (they count as free bytes used from now on).
  void leave(int ticket);
  /// Chunks between enter() and leave().
  int in_flight() const;

 private:
  struct InFlight {
    std::uint64_t guess = 0;
    WrittenBytes written;
  };
  bool has_room(std::uint64_t chunk_bytes) const;  ///< under mu_
  std::uint64_t still_to_write() const;            ///< under mu_

  std::uint64_t reserve_bytes_;
  std::function<std::uint64_t()> free_bytes_;
  mutable std::mutex mu_;
  std::condition_variable left_;
  std::map<int, InFlight> in_flight_;
  int next_ticket_ = 1;
};

}  // namespace kbx::sched
