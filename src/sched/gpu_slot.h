#pragma once
#include <filesystem>
#include <string>

#include "sandbox/process.h"

namespace kbx::sched {

/// The timing slot of one GPU, shared by every job of every kbx process on this machine: at
/// most one holder at a time runs full-size cases and timed loops there (issue 14). A job's
/// worker holds it through sandbox::Spawn::slot (a reference worker per task, handed back after);
/// calibration takes it whole.
class GpuSlot : public sandbox::ExclusiveSlot {
 public:
  /// The slot of the GPU that CUDA_VISIBLE_DEVICES (as given, or its first entry) names. The
  /// holder's label names it in the slot trace ($KBX_SLOT_TRACE, see slot_trace_path).
  explicit GpuSlot(const std::string& visible_devices, std::string holder = {});
  ~GpuSlot() override;
  GpuSlot(const GpuSlot&) = delete;
  GpuSlot& operator=(const GpuSlot&) = delete;

  bool try_acquire() override;
  void release() override;
  /// Waits until the slot is free, then holds it.
  void acquire();
  bool held() const { return held_; }
  const std::filesystem::path& lock_path() const { return path_; }

 private:
  bool lock(bool wait);
  void trace(const char* what) const;
  std::filesystem::path path_;
  std::string holder_;
  std::filesystem::path trace_path_;
  int fd_ = -1;
  bool held_ = false;
};

/// Where the slots' lock files live: $KBX_SLOT_DIR, else /tmp/kbx-gpu-slots.
std::filesystem::path slot_dir();

/// Where every acquire and release of a slot is appended as a line "<monotonic seconds>
/// <acquire|release> <lock file name> <holder>" ($KBX_SLOT_TRACE; empty: no trace). For
/// bench/slot_profile.py: how busy the slot was and when it sat idle.
std::filesystem::path slot_trace_path();

/// Appends a line "<monotonic seconds> <what> pipeline <who>" to the slot trace, when there is
/// one: the run's own steps (a reference chunk started or done, a task fed to the lanes, a job
/// started or ended, the reference lanes held at the cap on tasks with files), for
/// bench/slot_profile.py's view of where the pipeline waits.
void trace_pipeline(const char* what, const std::string& who);

/// The GPU a worker with this CUDA_VISIBLE_DEVICES value runs on, as a lock file name part:
/// its first entry ("0" when unset or empty).
std::string slot_key(const std::string& visible_devices);

/// Holds a GpuSlot for a scope (references, calibration): waits for it on construction.
class SlotHold {
 public:
  explicit SlotHold(GpuSlot& slot) : slot_(slot) { slot_.acquire(); }
  ~SlotHold() { slot_.release(); }
  SlotHold(const SlotHold&) = delete;
  SlotHold& operator=(const SlotHold&) = delete;

 private:
  GpuSlot& slot_;
};

}  // namespace kbx::sched
