#include "store/verdicts.h"

#include <array>
#include <charconv>
#include <cmath>
#include <exception>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/util.h"
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

/// Interns one column's values, remembering the last one: consecutive rows mostly repeat it.
class ColumnInterner {
 public:
  explicit ColumnInterner(StringPool& pool) : pool_(pool) {}
  std::int32_t operator()(std::string_view s) {
    if (last_ < 0 || pool_.at(last_) != s) last_ = pool_.intern(s);
    return last_;
  }

 private:
  StringPool& pool_;
  std::int32_t last_ = -1;
};

/// A read-only connection of its own (no mutex: one thread uses it), for reading in parallel.
class Reader {
 public:
  explicit Reader(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &h_, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) !=
        SQLITE_OK) {
      const std::string msg = h_ ? sqlite3_errmsg(h_) : "out of memory";
      sqlite3_close(h_);
      throw Error(path + ": cannot open database to read verdicts: " + msg);
    }
    sqlite3_busy_timeout(h_, 10000);
    // pages mapped, not copied: a scan of a large database reads each page once
    sqlite3_exec(h_, "PRAGMA mmap_size=4294967296", nullptr, nullptr, nullptr);
  }
  ~Reader() { sqlite3_close(h_); }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  sqlite3* handle() const { return h_; }

 private:
  sqlite3* h_ = nullptr;
};

/// The results with ids in [lo, hi] and their core and kbx levels, each table read in one
/// sequential scan (a join would seek once per row); string indices are into `pool`, and the
/// candidate's fields and the GPU are filled in later.
struct Part {
  StringPool pool;
  std::vector<VerdictRow> rows;
  std::vector<std::int64_t> candidate;  ///< per row, its candidate's id
};

void read_part(const std::string& path, std::int64_t lo, std::int64_t hi, Part& part) {
  Reader db(path);
  std::vector<std::array<std::int32_t, 2>> levels;  // by result id - lo: core, kbx
  {
    Stmt g(db.handle(),
           "SELECT result_id, core, kbx FROM result_grades WHERE result_id BETWEEN ? AND ?");
    g.bind(1, lo).bind(2, hi);
    ColumnInterner core(part.pool), kbx(part.pool);
    levels.assign(static_cast<std::size_t>(hi - lo + 1), {-1, -1});
    sqlite3_stmt* st = g.raw();
    while (g.step()) {
      levels[static_cast<std::size_t>(sqlite3_column_int64(st, 0) - lo)] = {
          core(column_view(st, 1)), kbx(column_view(st, 2))};
    }
  }
  Stmt s(db.handle(),
         "SELECT id, run_id, candidate_id, method, task, category, status, speedup FROM results "
         "WHERE id BETWEEN ? AND ?");
  s.bind(1, lo).bind(2, hi);
  sqlite3_stmt* st = s.raw();
  ColumnInterner method(part.pool), task(part.pool), category(part.pool), status(part.pool);
  part.rows.reserve(levels.size());
  part.candidate.reserve(levels.size());
  while (s.step()) {
    VerdictRow v;
    v.result_id = sqlite3_column_int64(st, 0);
    v.run_id = sqlite3_column_int64(st, 1);
    part.candidate.push_back(sqlite3_column_int64(st, 2));
    v.method = method(column_view(st, 3));
    v.task = task(column_view(st, 4));
    v.category = category(column_view(st, 5));
    v.status = v.strict = status(column_view(st, 6));
    v.speedup =
        sqlite3_column_type(st, 7) == SQLITE_NULL ? std::nan("") : sqlite3_column_double(st, 7);
    // a result stored before schema 3 has no grades: its status at every level
    const auto& l = levels[static_cast<std::size_t>(v.result_id - lo)];
    v.core = l[0] >= 0 ? l[0] : v.status;
    v.kbx = l[1] >= 0 ? l[1] : v.status;
    part.rows.push_back(v);
  }
}

/// Every candidate's round, sample and source hash, by id (-1, -1, 0 for an id with none).
struct CandidateFacts {
  std::vector<std::int64_t> round, sample;
  std::vector<std::uint64_t> source;
};

void read_candidates(const std::string& path, CandidateFacts& out) {
  Reader db(path);
  Stmt s(db.handle(), "SELECT id, round, sample, sha256 FROM candidates ORDER BY id");
  sqlite3_stmt* st = s.raw();
  while (s.step()) {
    const auto id = sqlite3_column_int64(st, 0);
    if (id < 0) continue;
    const auto at = static_cast<std::size_t>(id);
    if (at >= out.round.size()) {
      out.round.resize(at + 1, -1);
      out.sample.resize(at + 1, -1);
      out.source.resize(at + 1, 0);
    }
    if (sqlite3_column_type(st, 1) != SQLITE_NULL) out.round[at] = sqlite3_column_int64(st, 1);
    if (sqlite3_column_type(st, 2) != SQLITE_NULL) out.sample[at] = sqlite3_column_int64(st, 2);
    out.source[at] = source_key(column_view(st, 3));
  }
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
  std::vector<std::int32_t> gpu_of_run;  // by run id
  for (const auto& run : db.runs()) {
    if (run.id < 0) continue;
    const auto at = static_cast<size_t>(run.id);
    if (at >= gpu_of_run.size()) gpu_of_run.resize(at + 1, -1);
    gpu_of_run[static_cast<size_t>(run.id)] = into.strings.intern(run_gpu(run));
  }
  std::int64_t lo = 0, hi = -1;  // MIN and MAX of a rowid are a lookup each; COUNT(*) a scan
  {
    Stmt s(db.handle(), "SELECT MIN(id), MAX(id) FROM results");
    if (s.step() && s.opt_integer(0)) lo = s.integer(0), hi = s.integer(1);
  }
  if (hi < lo) return;
  const std::int64_t count = hi - lo + 1;  // at most; ids of replaced rows are gaps
  // A million rows take about a second on one core: the results in parts, each on a
  // connection of its own, and the candidates on another.
  const std::size_t parts = part_count(static_cast<std::size_t>(count), 250000, 4);
  std::vector<Part> read(parts);
  CandidateFacts candidates;
  const char* file = sqlite3_db_filename(db.handle(), "main");
  const std::string path = file && *file ? file : name;
  const std::int64_t span = (hi - lo) / static_cast<std::int64_t>(parts) + 1;
  std::vector<std::exception_ptr> failed(parts + 1);
  run_in_parts(parts + 1, [&](std::size_t k) {
    try {
      if (k == parts) return read_candidates(path, candidates);
      const std::int64_t from = lo + span * static_cast<std::int64_t>(k);
      read_part(path, from, std::min(hi, from + span - 1), read[k]);
    } catch (...) {
      failed[k] = std::current_exception();
    }
  });
  for (const auto& e : failed) {
    if (e) std::rethrow_exception(e);
  }
  // Each part's strings into the shared pool, then its rows into their place, in parallel.
  const std::int32_t unknown_gpu = into.strings.intern("unknown");
  std::vector<std::vector<std::int32_t>> global(parts);
  std::vector<std::size_t> offset(parts + 1, into.rows.size());
  for (std::size_t k = 0; k < parts; ++k) {
    for (std::size_t i = 0; i < read[k].pool.size(); ++i) {
      global[k].push_back(into.strings.intern(read[k].pool.at(static_cast<std::int32_t>(i))));
    }
    offset[k + 1] = offset[k] + read[k].rows.size();
  }
  into.rows.resize(offset[parts]);
  run_in_parts(parts, [&](std::size_t k) {
    auto g = [&](std::int32_t id) { return global[k][static_cast<std::size_t>(id)]; };
    const Part& part = read[k];
    for (std::size_t r = 0; r < part.rows.size(); ++r) {
      VerdictRow v = part.rows[r];
      v.database = database;
      const auto c = static_cast<std::size_t>(part.candidate[r]);
      if (part.candidate[r] >= 0 && c < candidates.round.size()) {
        v.round = candidates.round[c];
        v.sample = candidates.sample[c];
        v.source = candidates.source[c];
      }
      v.method = g(v.method);
      v.task = g(v.task);
      v.category = g(v.category);
      v.status = g(v.status);
      v.strict = g(v.strict);
      v.core = g(v.core);
      v.kbx = g(v.kbx);
      const auto run = static_cast<std::size_t>(v.run_id);
      const bool known = v.run_id >= 0 && run < gpu_of_run.size() && gpu_of_run[run] >= 0;
      v.gpu = known ? gpu_of_run[run] : unknown_gpu;
      into.rows[offset[k] + r] = v;
    }
  });
}

}  // namespace kbx::store
