#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace kbx::sched {

/// What `kbx suite check` is asked to check.
struct CheckOptions {
  std::filesystem::path suite_root;
  std::string device = "cpu";
  std::string category;
  std::vector<std::string> tasks;
  std::string python;
  std::filesystem::path work_root;
  double timeout_s = 1800;
};

/// Checks every selected reference: it runs, is deterministic for a seed, depends on its
/// inputs, has its float64 shadow, and rejects all-zeros and identity candidates.
/// Returns 0 only when every task passes.
int run_suite_check(const CheckOptions& options);

}  // namespace kbx::sched
