#include "store/baselines.h"

#include <sqlite3.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/util.h"

namespace kbx::store {
namespace {

void ensure_table(sqlite3* db) {
  const char* sql =
      "CREATE TABLE IF NOT EXISTS baselines(fingerprint TEXT NOT NULL, task TEXT NOT NULL, "
      "task_hash TEXT NOT NULL, kind TEXT NOT NULL, case_name TEXT NOT NULL, samples TEXT NOT "
      "NULL, measured_at TEXT NOT NULL, PRIMARY KEY(fingerprint, task_hash, kind, case_name))";
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw Error("database: cannot create the baselines table: " + msg);
  }
}

/// A prepared statement that is finalized however the scope ends.
struct Prepared {
  sqlite3_stmt* st = nullptr;
  Prepared(sqlite3* db, const char* sql) {
    if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) {
      throw Error(std::string("database: ") + sqlite3_errmsg(db));
    }
  }
  ~Prepared() { sqlite3_finalize(st); }
  void text(int i, const std::string& v) {
    sqlite3_bind_text(st, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
};

}  // namespace

CaseSamples cached_baseline(Store& db, const std::string& fingerprint, const std::string& task,
                            const std::string& task_hash, const std::string& kind) {
  ensure_table(db.handle());
  Prepared q(db.handle(),
             "SELECT case_name, samples FROM baselines WHERE fingerprint=? AND task=? AND "
             "task_hash=? AND kind=?");
  q.text(1, fingerprint);
  q.text(2, task);
  q.text(3, task_hash);
  q.text(4, kind);
  CaseSamples out;
  while (sqlite3_step(q.st) == SQLITE_ROW) {
    const auto* name = reinterpret_cast<const char*>(sqlite3_column_text(q.st, 0));
    const auto* json_text = reinterpret_cast<const char*>(sqlite3_column_text(q.st, 1));
    out[name ? name : ""] =
        nlohmann::json::parse(json_text ? json_text : "[]").get<std::vector<double>>();
  }
  return out;
}

void save_baseline(Store& db, const std::string& fingerprint, const std::string& task,
                   const std::string& task_hash, const std::string& kind,
                   const CaseSamples& samples) {
  ensure_table(db.handle());
  Prepared del(db.handle(),
               "DELETE FROM baselines WHERE fingerprint=? AND task_hash=? AND kind=?");
  del.text(1, fingerprint);
  del.text(2, task_hash);
  del.text(3, kind);
  sqlite3_step(del.st);
  for (const auto& [name, values] : samples) {
    Prepared ins(db.handle(),
                 "INSERT INTO baselines(fingerprint, task, task_hash, kind, case_name, samples, "
                 "measured_at) VALUES(?,?,?,?,?,?,?)");
    ins.text(1, fingerprint);
    ins.text(2, task);
    ins.text(3, task_hash);
    ins.text(4, kind);
    ins.text(5, name);
    ins.text(6, nlohmann::json(values).dump());
    ins.text(7, utc_now_iso());
    if (sqlite3_step(ins.st) != SQLITE_DONE) {
      throw Error(std::string("database: ") + sqlite3_errmsg(db.handle()));
    }
  }
}

}  // namespace kbx::store
