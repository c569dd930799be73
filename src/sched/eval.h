#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "dist/shard.h"

namespace kbx::sched {

/// Everything `kbx eval` is asked to do.
struct EvalOptions {
  std::string method;
  std::string candidates;          ///< folder or .jsonl; empty: the method's stored candidates
  std::vector<std::string> tasks;  ///< "Category/name" filter; empty: all
  std::string category;
  std::string device = "cuda";
  std::string track = "triton";
  std::filesystem::path db = "kbx.db";
  std::filesystem::path suite_root;
  std::filesystem::path work_root;  ///< scratch space for tensor files
  std::string python;
  int jobs = 1;
  bool fresh = false;  ///< start a new run even if the same command ran before
  std::optional<std::uint64_t> seed;
  double timeout_s = 0;  ///< per candidate; 0: a device-dependent default
  bool keep_files = false;
  bool time = true;
  bool warm = true;                  ///< fork candidates from a warm parent (imports done once)
  std::vector<std::string> tiers;    ///< case tiers to run; empty: the device's default
  bool compile_baseline = false;     ///< also time torch.compile of each reference (GPU)
  bool retime_baselines = false;     ///< time baselines again even when cached for this machine
  bool allow_unisolated = false;     ///< run candidates even where they cannot be confined
  std::uint64_t job_disk_mb = 0;     ///< a job folder's size cap; 0: 4 GiB on cpu, 64 GiB on cuda
  std::uint64_t job_memory_mb = 0;   ///< a job's memory cap (cgroup); 0: half the machine's
  std::optional<dist::Shard> shard;  ///< only this shard of the jobs (dist/shard.h); none: all
};

/// Exit code of `kbx eval` when another kbx eval holds the database (store::WriterLock).
inline constexpr int kExitBusy = 4;

/// Runs `kbx eval`; returns the process exit code: 0 when every job got a verdict (or a shard
/// has no jobs), 2 when some job met a harness fault (stored as harness_error, run again by the
/// next kbx eval), kExitBusy when another kbx eval is writing the database.
int run_eval(const EvalOptions& options);

/// Imports candidates into the database without evaluating them (`kbx import`).
int run_import(const std::filesystem::path& path, const std::string& method,
               const std::filesystem::path& db, const std::filesystem::path& suite_root);

}  // namespace kbx::sched
