#include "suite/task.h"

#include <toml++/toml.h>

#include <algorithm>
#include <set>

#include "common/error.h"
#include "common/util.h"
#include "suite/toml_fields.h"

namespace kbx::suite {
namespace fs = std::filesystem;

const char* tolerance_name(Tolerance t) {
  switch (t) {
    case Tolerance::Shadow: return "shadow";
    case Tolerance::Exact: return "exact";
    case Tolerance::Allclose: return "allclose";
    case Tolerance::Statistical: return "statistical";
  }
  return "?";
}

const std::vector<std::string>& categories() {
  static const std::vector<std::string> all = {
      "Activation", "Convolution",  "Fusion",         "Index",         "LinearAlgebra",
      "Loss",       "Math",         "MatrixMultiply", "Normalization", "Optimizer",
      "Pooling",    "Quantization", "Random",         "Reduce",        "SpatialOps"};
  return all;
}

namespace {

Tolerance parse_tolerance(Fields& f) {
  std::string t = f.str("tolerance", false, "shadow");
  if (t == "shadow") return Tolerance::Shadow;
  if (t == "exact") return Tolerance::Exact;
  if (t == "allclose") return Tolerance::Allclose;
  if (t == "statistical") return Tolerance::Statistical;
  f.fail("tolerance", "'" + t + "' is not one of shadow, exact, allclose, statistical");
}

Contract parse_contract(const toml::table* table, const std::string& file) {
  Contract c;
  if (!table) return c;
  Fields f(*table, file, "contract.");
  static const std::set<std::string> dtypes = {"float64", "float32", "float16",   "bfloat16",
                                               "int64",   "int32",   "int16",     "int8",
                                               "uint8",   "bool",    "complex64", "complex128"};
  c.dtypes = f.strings("dtypes");
  for (const auto& d : c.dtypes) {
    if (!dtypes.count(d)) f.fail("dtypes", "unknown dtype '" + d + "'");
  }
  c.tolerance = parse_tolerance(f);
  c.ratio = f.number("ratio", c.ratio);
  c.ulp_floor = f.number("ulp_floor", c.ulp_floor);
  c.rtol = f.number("rtol", c.rtol);
  c.atol = f.number("atol", c.atol);
  c.tf32 = f.boolean("tf32", c.tf32);
  c.note = f.str("note", false);
  const std::string special = f.str("special_check", false);
  if (!special.empty() && special != "element" && special != "norm") {
    f.fail("special_check", "'" + special + "' is not one of element, norm");
  }
  if (!special.empty()) c.per_element_special = special == "element";
  if (c.ratio < 1.0) f.fail("ratio", "must be at least 1");
  if (c.ulp_floor < 0.0) f.fail("ulp_floor", "must not be negative");
  f.reject_unknown();
  return c;
}

Compat parse_compat(const toml::table* table, const std::string& file) {
  Compat c;
  if (!table) return c;
  Fields f(*table, file, "compat.");
  c.deviation = f.boolean("deviation", false);
  c.note = f.str("note", false);
  c.kbx_cases = f.strings("kbx_cases");
  if (c.deviation && c.note.empty()) f.fail("note", "deviation = true needs a note saying why");
  f.reject_unknown();
  return c;
}

/// The shared worker modules a reference.py may import (case builders, statistical judges):
/// their text is part of every task's hash, since they are part of its semantics.
const std::string& shared_reference_code() {
  static const std::string text = [] {
    std::string all;
    for (const char* name : {"casegen.py", "contracts.py"}) {
      const fs::path path = kbx_home() / "python" / "kbx_worker" / name;
      if (fs::exists(path)) all += read_file(path) + '\0';
    }
    return all;
  }();
  return text;
}

/// An elementwise task by its tags: "elementwise" and nothing that combines elements (a
/// reduction, a product, a normalization ...), where an output element depends on one input
/// element and a per-element check is sound.
bool elementwise_by_tags(const std::vector<std::string>& tags) {
  static const std::set<std::string> combining = {
      "reduction", "matmul",  "gemm", "gemv",       "convolution", "normalization",
      "softmax",   "pooling", "scan", "cumulative", "loss",        "attention"};
  bool elementwise = false;
  for (const auto& t : tags) {
    if (combining.count(t)) return false;
    elementwise = elementwise || t == "elementwise";
  }
  return elementwise;
}

}  // namespace

Task load_task(const fs::path& dir) {
  const fs::path manifest = dir / "task.toml";
  const std::string file = manifest.string();
  if (!fs::exists(manifest)) throw Error(file + ": missing (every task folder needs a task.toml)");
  std::string text = read_file(manifest);
  toml::table root;
  try {
    root = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    throw Error(file + ":" + std::to_string(where.line) + ":" + std::to_string(where.column) +
                ": TOML syntax error: " + std::string(e.description()));
  }
  Fields f(root, file, "");
  Task t;
  long long schema = f.integer("schema", 0);
  if (schema != 1) f.fail("schema", "expected schema = 1");
  t.name = f.str("name", true);
  t.category = f.str("category", true);
  t.entry = f.str("entry", true);
  t.signature = f.str("signature", true);
  t.set = f.str("set", false, "v1");
  t.difficulty = static_cast<int>(f.integer("difficulty", 0));
  t.summary = f.str("summary", true);
  t.tags = f.strings("tags");
  const std::string work = f.str("work", false, "compute");
  if (work == "data_movement") {
    t.work = Work::DataMovement;
  } else if (work != "compute") {
    f.fail("work", "'" + work + "' is not one of compute, data_movement");
  }
  t.contract = parse_contract(f.table("contract"), file);
  const toml::table* contract_table = root["contract"].as_table();
  if (!contract_table || !contract_table->contains("special_check")) {
    t.contract.per_element_special = elementwise_by_tags(t.tags);
  }
  t.compat = parse_compat(f.table("compat"), file);
  f.reject_unknown();

  const auto& cats = categories();
  if (std::find(cats.begin(), cats.end(), t.category) == cats.end()) {
    f.fail("category", "'" + t.category + "' is not a KernelBenchX category");
  }
  if (t.set != "v1" && t.set != "extra") f.fail("set", "expected \"v1\" or \"extra\"");
  if (t.summary.size() < 40) f.fail("summary", "too short: one paragraph is expected");
  if (t.signature.rfind(t.entry + "(", 0) != 0) {
    f.fail("signature", "does not start with the entry name '" + t.entry + "('");
  }
  if (dir.filename() != t.name) {
    f.fail("name",
           "'" + t.name + "' differs from the folder name '" + dir.filename().string() + "'");
  }
  if (dir.parent_path().filename() != t.category) {
    f.fail("category", "'" + t.category + "' differs from the parent folder '" +
                           dir.parent_path().filename().string() + "'");
  }
  const fs::path reference = dir / "reference.py";
  if (!fs::exists(reference)) throw Error(reference.string() + ": missing (the task's reference)");
  t.dir = dir;
  t.hash = sha256_hex(text + '\0' + read_file(reference) + '\0' + shared_reference_code());
  return t;
}

const Task* Suite::find(const std::string& id) const {
  for (const auto& t : tasks) {
    if (t.id() == id) return &t;
  }
  return nullptr;
}

Suite load_suite(const fs::path& root) {
  Suite suite;
  suite.root = root;
  if (!fs::is_directory(root)) {
    suite.errors.push_back(root.string() + ": no such task folder (use --suite DIR)");
    return suite;
  }
  std::vector<fs::path> dirs;
  for (const auto& cat : fs::directory_iterator(root)) {
    if (!cat.is_directory()) continue;
    for (const auto& task : fs::directory_iterator(cat.path())) {
      if (task.is_directory() && fs::exists(task.path() / "task.toml")) dirs.push_back(task.path());
    }
  }
  std::sort(dirs.begin(), dirs.end());
  for (const auto& dir : dirs) {
    try {
      suite.tasks.push_back(load_task(dir));
    } catch (const Error& e) {
      suite.errors.push_back(e.what());
    }
  }
  return suite;
}

std::vector<const Task*> select(const Suite& suite, const std::string& category,
                                const std::vector<std::string>& ids) {
  if (!category.empty()) {
    const auto& cats = categories();
    if (std::find(cats.begin(), cats.end(), category) == cats.end()) {
      throw Error("--category " + category + ": not a category (kbx suite list shows them)");
    }
  }
  std::vector<const Task*> out;
  for (const auto& id : ids) {
    if (!suite.find(id)) throw Error("--tasks " + id + ": no such task in " + suite.root.string());
  }
  for (const auto& t : suite.tasks) {
    if (!category.empty() && t.category != category) continue;
    if (!ids.empty() && std::find(ids.begin(), ids.end(), t.id()) == ids.end()) continue;
    out.push_back(&t);
  }
  return out;
}

}  // namespace kbx::suite
