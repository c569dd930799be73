#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "store/verdicts.h"

namespace kbx::report {

/// The verdict levels, as indices into Kernel::correct.
enum Level { kStrict = 0, kCore = 1, kKbx = 2 };

/// "strict", "core" or "kbx" as a Level; throws Error naming --level for anything else.
Level parse_level(const std::string& name);
const char* level_name(Level level);

/// One kernel's verdict on one GPU: the unit every analysis counts.
struct Kernel {
  std::int32_t method = 0, gpu = 0, task = 0, category = 0;  ///< StringPool indices
  std::int64_t round = -1, sample = -1;                      ///< -1 when the candidate has none
  std::uint64_t source = 0;                                  ///< its source's hash (64 bits)
  bool compiled = false;          ///< it got past parsing, import and Triton's compiler
  std::array<bool, 3> correct{};  ///< passed at strict, core, kbx
  double speedup = std::nan("");  ///< over eager; NaN when untimed
  bool timed() const { return !std::isnan(speedup) && speedup > 0; }
};

/// The kernels of one or more databases: the newest verdict of each kernel (method, GPU, task,
/// round, sample), without the rows that are no verdict on the kernel (harness_error,
/// reference_error), sorted by method, GPU, task, sample and round (ids, not names).
struct KernelSet {
  const store::StringPool* strings = nullptr;
  std::vector<Kernel> all;
  /// Indices into all: each (method, GPU, task, sample)'s last round, the method's output.
  std::vector<std::size_t> final;
  std::map<std::string, int> excluded;  ///< rows left out, by status
  int replaced = 0;                     ///< older verdicts of a kernel, left out
  bool any_rounds = false;              ///< some kernel has a round
  const std::string& name(std::int32_t id) const { return strings->at(id); }
};

/// The kernel set of the verdicts. Of several verdicts of one kernel, the one from the database
/// given last wins, and within a database the newest run's.
KernelSet kernel_set(const store::Verdicts& verdicts);

}  // namespace kbx::report
