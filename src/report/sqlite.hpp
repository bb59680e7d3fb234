// A small read-side wrapper over SQLite's C API for src/report (the writers keep their own in
// output/sqlite_writer.cpp). Every failure is a Status naming the database file.
#pragma once

#include <fmt/format.h>
#include <sqlite3.h>

#include <optional>
#include <string>
#include <utility>

#include "common/status.hpp"

namespace kreplay::report {

class SqlStmt {
 public:
  SqlStmt() = default;
  explicit SqlStmt(sqlite3_stmt* s) : s_(s) {}
  SqlStmt(SqlStmt&& o) noexcept : s_(std::exchange(o.s_, nullptr)), rc_(o.rc_) {}
  SqlStmt& operator=(SqlStmt&& o) noexcept {
    if (this != &o) {
      sqlite3_finalize(s_);
      s_ = std::exchange(o.s_, nullptr);
      rc_ = o.rc_;
    }
    return *this;
  }
  ~SqlStmt() { sqlite3_finalize(s_); }

  /// true: a row; false: done (check done_ok()).
  bool step() {
    rc_ = sqlite3_step(s_);
    return rc_ == SQLITE_ROW;
  }
  bool done_ok() const { return rc_ == SQLITE_DONE; }
  bool null(int i) const { return sqlite3_column_type(s_, i) == SQLITE_NULL; }
  int64_t i64(int i) const { return sqlite3_column_int64(s_, i); }
  uint64_t u64(int i) const { return static_cast<uint64_t>(sqlite3_column_int64(s_, i)); }
  uint32_t u32(int i) const { return static_cast<uint32_t>(sqlite3_column_int64(s_, i)); }
  double real(int i) const { return sqlite3_column_double(s_, i); }
  std::optional<int64_t> opt_i64(int i) const {
    if (null(i)) return std::nullopt;
    return i64(i);
  }
  std::string text(int i) const {
    const unsigned char* t = sqlite3_column_text(s_, i);
    return t ? std::string(reinterpret_cast<const char*>(t),
                           static_cast<size_t>(sqlite3_column_bytes(s_, i)))
             : std::string();
  }
  const char* raw_text(int i) const {
    const unsigned char* t = sqlite3_column_text(s_, i);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
  sqlite3_stmt* get() const { return s_; }

 private:
  sqlite3_stmt* s_ = nullptr;
  int rc_ = SQLITE_OK;
};

class SqlDb {
 public:
  SqlDb() = default;
  SqlDb(SqlDb&& o) noexcept : db_(std::exchange(o.db_, nullptr)), path_(std::move(o.path_)) {}
  SqlDb& operator=(SqlDb&& o) noexcept {
    if (this != &o) {
      if (db_) sqlite3_close_v2(db_);
      db_ = std::exchange(o.db_, nullptr);
      path_ = std::move(o.path_);
    }
    return *this;
  }
  ~SqlDb() {
    if (db_) sqlite3_close_v2(db_);
  }

  static Result<SqlDb> open_readonly(const std::string& path) {
    SqlDb db;
    db.path_ = path;
    if (sqlite3_open_v2(path.c_str(), &db.db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   fmt::format("cannot open {}: {}; give a kreplay results database (*_results.db)",
                               path, db.db_ ? sqlite3_errmsg(db.db_) : "out of memory"));
    }
    sqlite3_busy_timeout(db.db_, 5000);
    return db;
  }

  Result<SqlStmt> prepare(const std::string& sql) const {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   fmt::format("{} is not a kreplay results database this kreplay can read ({}); "
                               "give a *_results.db that kreplay wrote",
                               path_, sqlite3_errmsg(db_)));
    }
    return SqlStmt(s);
  }

  Status failed(const std::string& what) const {
    return Error(KREPLAY_STATUS_ERROR,
                 fmt::format("reading {} from {} failed: {}", what, path_, sqlite3_errmsg(db_)));
  }

  bool has_table(const std::string& name) const {
    auto s = prepare("SELECT 1 FROM sqlite_master WHERE type IN ('table','view') AND name = '" +
                     name + "'");
    return s.ok() && s->step();
  }
  bool has_column(const std::string& table, const std::string& column) const {
    auto s = prepare("SELECT 1 FROM pragma_table_info('" + table + "') WHERE name = '" + column +
                     "'");
    return s.ok() && s->step();
  }
  sqlite3* get() const { return db_; }
  const std::string& path() const { return path_; }

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

}  // namespace kreplay::report
