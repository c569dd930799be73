#include "store/verdicts.h"

#include <charconv>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "store/statement.h"

namespace kbx::store {
namespace {

std::string_view column_view(sqlite3_stmt* st, int i) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st, i));
  return p ? std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(st, i)))
           : std::string_view();
}

/// The first 16 hex digits of a SHA-256 as a number (0 when the text is not hex).
std::uint64_t source_key(std::string_view sha) {
  std::uint64_t v = 0;
  const auto n = std::min<size_t>(16, sha.size());
  std::from_chars(sha.data(), sha.data() + n, v, 16);
  return v;
}

}  // namespace

std::int32_t StringPool::intern(std::string_view s) {
  if (auto it = index_.find(s); it != index_.end()) return it->second;
  const auto id = static_cast<std::int32_t>(strings_.size());
  strings_.emplace_back(s);
  index_.emplace(strings_.back(), id);
  return id;
}

std::string run_gpu(const Run& run) {
  try {
    const auto env =
        nlohmann::json::parse(run.environment_json.empty() ? "{}" : run.environment_json);
    if (env.is_object() && env.contains("gpu") && env["gpu"].is_string()) {
      const auto gpu = env["gpu"].get<std::string>();
      if (!gpu.empty()) return gpu;
    }
  } catch (const std::exception&) {
    // an unreadable environment: the device says what it can
  }
  return run.device;
}

void read_verdicts(Store& db, const std::string& name, Verdicts& into) {
  const auto database = static_cast<std::int32_t>(into.databases.size());
  into.databases.push_back(name);
  std::map<std::int64_t, std::int32_t> gpu_of_run;
  for (const auto& run : db.runs()) gpu_of_run[run.id] = into.strings.intern(run_gpu(run));
  const std::int32_t unknown_gpu = into.strings.intern("unknown");
  Stmt s(db.handle(),
         "SELECT r.id, r.run_id, r.method, r.task, r.category, r.status, r.speedup, g.strict, "
         "g.core, g.kbx, c.round, c.sample, c.sha256 FROM results r "
         "LEFT JOIN result_grades g ON g.result_id = r.id "
         "LEFT JOIN candidates c ON c.id = r.candidate_id");
  sqlite3_stmt* st = s.raw();
  auto& pool = into.strings;
  while (s.step()) {
    VerdictRow v;
    v.database = database;
    v.result_id = sqlite3_column_int64(st, 0);
    v.run_id = sqlite3_column_int64(st, 1);
    v.method = pool.intern(column_view(st, 2));
    v.task = pool.intern(column_view(st, 3));
    v.category = pool.intern(column_view(st, 4));
    v.status = pool.intern(column_view(st, 5));
    v.speedup =
        sqlite3_column_type(st, 6) == SQLITE_NULL ? std::nan("") : sqlite3_column_double(st, 6);
    const bool graded = sqlite3_column_type(st, 7) != SQLITE_NULL;
    v.strict = graded ? pool.intern(column_view(st, 7)) : v.status;
    v.core = graded ? pool.intern(column_view(st, 8)) : v.status;
    v.kbx = graded ? pool.intern(column_view(st, 9)) : v.status;
    if (sqlite3_column_type(st, 10) != SQLITE_NULL) v.round = sqlite3_column_int64(st, 10);
    if (sqlite3_column_type(st, 11) != SQLITE_NULL) v.sample = sqlite3_column_int64(st, 11);
    v.source = source_key(column_view(st, 12));
    auto g = gpu_of_run.find(v.run_id);
    v.gpu = g != gpu_of_run.end() ? g->second : unknown_gpu;
    into.rows.push_back(v);
  }
}

}  // namespace kbx::store
