#pragma once
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>

#include "common/error.h"

namespace kbx::store {

/// A prepared statement with positional binding; finalized on destruction.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) : db_(db) {
    const char* text = sql.c_str();
    if (sqlite3_prepare_v2(db, text, -1, &st_, nullptr) != SQLITE_OK) {
      throw Error(std::string("database: ") + sqlite3_errmsg(db) + " in: " + sql);
    }
  }
  ~Stmt() { sqlite3_finalize(st_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(st_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind(int i, std::int64_t v) {
    sqlite3_bind_int64(st_, i, v);
    return *this;
  }
  Stmt& bind(int i, double v) {
    sqlite3_bind_double(st_, i, v);
    return *this;
  }
  Stmt& bind(int i, const std::optional<double>& v) {
    if (v) return bind(i, *v);
    sqlite3_bind_null(st_, i);
    return *this;
  }
  Stmt& bind(int i, const std::optional<std::int64_t>& v) {
    if (v) return bind(i, *v);
    sqlite3_bind_null(st_, i);
    return *this;
  }
  /// Makes the statement ready to be bound and stepped again.
  void reset() {
    sqlite3_reset(st_);
    sqlite3_clear_bindings(st_);
  }
  bool step() {
    int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw Error(std::string("database: ") + sqlite3_errmsg(db_));
  }
  std::string text(int i) const {
    auto p = sqlite3_column_text(st_, i);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  std::int64_t integer(int i) const { return sqlite3_column_int64(st_, i); }
  double real(int i) const { return sqlite3_column_double(st_, i); }
  std::optional<double> opt_real(int i) const {
    if (sqlite3_column_type(st_, i) == SQLITE_NULL) return std::nullopt;
    return real(i);
  }
  /// The statement itself, for reading many rows without copying their text.
  sqlite3_stmt* raw() const { return st_; }
  std::optional<std::int64_t> opt_integer(int i) const {
    if (sqlite3_column_type(st_, i) == SQLITE_NULL) return std::nullopt;
    return integer(i);
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* st_ = nullptr;
};

}  // namespace kbx::store
