#pragma once
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>

#include "sched/reference.h"

namespace kbx::sched {

/// SHA-256 over the Python worker's sources that references and their eager timings run through:
/// a change there invalidates every cached reference and timing. The modules that only run,
/// check or judge candidates (kCandidateOnlyModules) are left out: a change to how candidates are
/// run does not make a machine time its eager baselines again.
std::string worker_sources_hash(const std::filesystem::path& worker_dir);
std::string worker_sources_hash();  ///< of kbx's own python/kbx_worker

/// The worker's modules that a reference worker never imports (sched::worker_sources_hash).
inline constexpr const char* kCandidateOnlyModules[] = {
    "candidate_mode.py", "judge_mode.py", "static.py",     "confine.py",
    "selfcheck.py",      "errmodel.py",   "gemm_kernel.py"};

/// The seconds a computed reference job's cases took outside the GPU's timing slot (their eager,
/// torch.compile and input-remaking steps left out: eager timings have a cache of their own):
/// what a hit on its cache entry saves.
double reference_seconds(const ReferenceCases& computed);

/// What a cache entry is worth: the seconds a hit saves per GiB it holds (an entry of under a
/// MiB counts as a MiB).
double seconds_per_gib(double seconds, std::uint64_t bytes);

/// Entries worth less are not kept: restoring one from a disk cache copies about a GiB a second,
/// so a hit would save little or nothing. On the H200 (session 24) the references worth at least
/// this were 61 of 184 tasks, 505 of their 878 s in 21.9 GB: the full-size elementwise tasks
/// (2-5 GB for 1-3 s) are not.
inline constexpr double kMinSecondsPerGiB = 4.0;

/// Reference work kept across runs and methods (issue 14): a task's reference outputs, float64
/// shadows, inputs and case events (with the eager timings), under a key of everything they
/// depend on (task hash, seed, tiers, whether eager is timed, the machine's fingerprint, the
/// worker's code). Its folder is kbx's own: candidates run confined and never see it, and kbx
/// uses it only when they are confined.
class ReferenceCache {
 public:
  /// root: the cache folder (created on first store); max_bytes: its size cap. The entries kept
  /// are those worth the most per byte (seconds_per_gib): one that does not fit evicts those
  /// worth less than itself, or is not kept.
  ReferenceCache(std::filesystem::path root, std::uint64_t max_bytes);

  /// The cache's folder for a --ref-cache value: none for "off" (or, with no value,
  /// KBX_REF_CACHE=off); the value; else $KBX_REF_CACHE, else ~/.cache/kbx/references
  /// (XDG_CACHE_HOME when set).
  static std::optional<std::filesystem::path> folder(const std::string& option);

  /// The key of a reference job in a run: fingerprint is the machine's (GPU, driver, CUDA,
  /// torch, triton), time whether eager is timed (which adds fresh twins on the GPU), timer the
  /// eager timer's settings that change what it measures (eager_worker_key's; empty: none).
  std::string key(const ReferenceJob& job, const std::string& fingerprint, bool time,
                  const std::string& timer = "") const;

  /// Puts a stored entry into the job's folders (hard links on one filesystem, else copies;
  /// out_dir, in_dir; its cases.json makes
  /// run_references take the job as done; a copy that fails is removed, so a half-copied entry
  /// is computed again); false on a miss or a broken entry.
  bool restore(const std::string& key, const ReferenceJob& job) const;

  /// Keeps a computed job's folders under key (linked or copied to a temporary folder, then
  /// renamed) with its worth (reference_seconds per GiB), when that is at least
  /// kMinSecondsPerGiB and the cap has room once entries worth less are evicted (least worth
  /// first); otherwise nothing. A job with an error or without cases.json is not kept. So a
  /// sweep over more tasks than the cap holds converges on the entries that save the most, and
  /// an entry is never evicted by one worth less (no sweep evicts what the next one needs).
  void store(const std::string& key, const ReferenceJob& job, const ReferenceCases& computed) const;

  const std::filesystem::path& root() const { return root_; }

 private:
  /// Under mu_: evicts entries worth less than `worth` (least first) until `bytes` more fit
  /// under the cap beside pending_bytes_; false when they cannot (then only what exceeds the
  /// cap by itself, as after the cap was lowered, is evicted).
  bool make_room(std::uint64_t bytes, double worth) const;
  std::filesystem::path root_;
  std::uint64_t max_bytes_;
  std::string worker_hash_;  ///< the Python worker's sources: a change there invalidates all
  mutable std::mutex mu_;    ///< reference lanes store and restore at once
  mutable std::uint64_t pending_bytes_ = 0;  ///< entries being written by other lanes
  mutable bool told_full_ = false;
};

/// The folder of PyTorch's run-time compiled kernels for the reference workers (WorkerEnv::
/// kernel_cache) for a --kernel-cache value: none for "off" (or, with no value,
/// KBX_KERNEL_CACHE=off); the value; else $KBX_KERNEL_CACHE, else ~/.cache/kbx/torch-kernels
/// (XDG_CACHE_HOME when set). Like the reference cache, kbx uses it only while candidates are
/// confined: a kernel there runs in every later run's references.
std::optional<std::filesystem::path> kernel_cache_folder(const std::string& option);

}  // namespace kbx::sched
