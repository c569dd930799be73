#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace kbx::suite {

/// How a task's floating outputs are judged (docs/task-format.md).
enum class Tolerance { Shadow, Exact, Allclose, Statistical };

const char* tolerance_name(Tolerance t);

/// The numerical contract of a task: dtypes and the tolerance model with its parameters.
struct Contract {
  std::vector<std::string> dtypes;
  Tolerance tolerance = Tolerance::Shadow;
  double ratio = 10.0;     ///< shadow: allowed error ratio against PyTorch's own error
  double ulp_floor = 4.0;  ///< shadow: error floor in units of the dtype's epsilon
  double rtol = 1e-5;      ///< allclose only
  double atol = 1e-6;      ///< allclose only
  bool tf32 = false;       ///< float32 matrix products may use TF32
  std::string note;
};

/// Where and why kbx differs from KernelBenchX for this task.
struct Compat {
  bool deviation = false;
  std::string note;
};

/// One benchmark task as its manifest describes it.
struct Task {
  std::string name;       ///< KernelBenchX task name, also the candidate file's stem
  std::string category;   ///< one of the 15 categories
  std::string entry;      ///< entry function name
  std::string signature;  ///< entry signature, verbatim from KernelBenchX
  std::string set;        ///< "v1" or "extra"
  int difficulty = 0;
  std::string summary;
  std::vector<std::string> tags;
  Contract contract;
  Compat compat;
  std::filesystem::path dir;  ///< tasks/<Category>/<name>
  std::string hash;  ///< SHA-256 of task.toml, reference.py and the worker's casegen/contracts

  /// "Category/name", the task's identifier everywhere in kbx.
  std::string id() const { return category + "/" + name; }
};

/// The 15 KernelBenchX categories, in the paper's order.
const std::vector<std::string>& categories();

/// Reads and validates tasks/<Category>/<name>/task.toml; throws Error naming file and field.
Task load_task(const std::filesystem::path& dir);

/// All tasks under a root folder, sorted by id.
struct Suite {
  std::filesystem::path root;
  std::vector<Task> tasks;
  std::vector<std::string> errors;  ///< one line per manifest that failed to load

  const Task* find(const std::string& id) const;
};

/// Loads every task under root; bad manifests are collected in Suite::errors, not thrown.
Suite load_suite(const std::filesystem::path& root);

/// Tasks matching an optional category and an optional list of ids ("Category/name").
/// Throws Error naming an id or category that matches nothing.
std::vector<const Task*> select(const Suite& suite, const std::string& category,
                                const std::vector<std::string>& ids);

}  // namespace kbx::suite
