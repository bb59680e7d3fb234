// Internal to src/output: the SQLite handles, binding and quoting that the results writer
// (sqlite_writer.cpp) and the merges (sqlite_merge.cpp) share, and the creation of a database with
// the schema (share/kreplay/schema.sql).
#pragma once

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <concepts>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.hpp"
#include "output/output_file.hpp"
#include "output/records.hpp"
#include "output/schema_sql.hpp"
#include "output/text.hpp"

namespace kreplay::output::sqlite {


namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

inline std::string dump_json(const ojson& value) {
  return value.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

inline std::string quote_identifier(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

inline std::string quote_literal(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

inline std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// ---------------------------------------------------------------------------------------------
// A thin RAII layer over the C API: every failure becomes a Status naming the database file.

class Stmt {
 public:
  Stmt() = default;
  Stmt(sqlite3_stmt* stmt) : stmt_(stmt) {}  // NOLINT(google-explicit-constructor)
  Stmt(Stmt&& other) noexcept : stmt_(std::exchange(other.stmt_, nullptr)) {}
  Stmt& operator=(Stmt&& other) noexcept {
    if (this != &other) {
      sqlite3_finalize(stmt_);
      stmt_ = std::exchange(other.stmt_, nullptr);
    }
    return *this;
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  sqlite3_stmt* get() const { return stmt_; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

template <std::integral T>
inline int bind_one(sqlite3_stmt* s, int i, T v) {
  return sqlite3_bind_int64(s, i, static_cast<sqlite3_int64>(v));  // u64: two's complement
}
inline int bind_one(sqlite3_stmt* s, int i, double v) {
  return sqlite3_bind_double(s, i, v);
}
inline int bind_one(sqlite3_stmt* s, int i, const std::string& v) {
  return sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}
inline int bind_one(sqlite3_stmt* s, int i, const std::optional<int64_t>& v) {
  return v ? sqlite3_bind_int64(s, i, *v) : sqlite3_bind_null(s, i);
}

class Db {
 public:
  Db() = default;
  Db(Db&& other) noexcept : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}
  Db& operator=(Db&& other) noexcept {
    if (this != &other) {
      close();
      db_ = std::exchange(other.db_, nullptr);
      path_ = std::move(other.path_);
    }
    return *this;
  }
  ~Db() { close(); }

  static Result<Db> open(const std::string& path, int flags) {
    Db db;
    db.path_ = path;
    int rc = sqlite3_open_v2(path.c_str(), &db.db_, flags, nullptr);
    if (rc != SQLITE_OK) {
      std::string why = db.db_ != nullptr ? sqlite3_errmsg(db.db_) : sqlite3_errstr(rc);
      return Error(
          KREPLAY_STATUS_ERROR,
          fmt::format(
              "cannot open SQLite database '{}': {}{}", path, why,
              (flags & SQLITE_OPEN_CREATE) != 0 ? "; choose a writable output directory" : ""));
    }
    sqlite3_extended_result_codes(db.db_, 1);
    sqlite3_busy_timeout(db.db_, 5000);
    return db;
  }

  void close() {
    if (db_ != nullptr) sqlite3_close_v2(db_);
    db_ = nullptr;
  }
  sqlite3* get() const { return db_; }
  const std::string& path() const { return path_; }

  Status error(std::string_view what) const {
    return Error(KREPLAY_STATUS_ERROR,
                 fmt::format("SQLite error in '{}' ({}): {}", path_, what,
                             db_ != nullptr ? sqlite3_errmsg(db_) : "not open"));
  }

  Status exec(const std::string& sql) {
    char* message = nullptr;
    int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message);
    if (rc != SQLITE_OK) {
      std::string text = message != nullptr ? message : sqlite3_errstr(rc);
      sqlite3_free(message);
      std::string head = sql.substr(0, std::min<size_t>(sql.find('\n'), 60));
      return Error(KREPLAY_STATUS_ERROR,
                   fmt::format("SQLite error in '{}' ({}): {}", path_, head, text));
    }
    return Status::Ok();
  }

  Result<Stmt> prepare(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                           SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) != SQLITE_OK) {
      return error("prepare");
    }
    return Stmt(stmt);
  }

  /// Bind @p args to ?1.., run to completion, reset.
  template <typename... Args>
  Status run(Stmt& stmt, std::string_view what, const Args&... args) {
    sqlite3_stmt* s = stmt.get();
    int index = 0;
    int rc = SQLITE_OK;
    ((rc = rc == SQLITE_OK ? bind_one(s, ++index, args) : rc), ...);
    if (rc == SQLITE_OK) {
      do {
        rc = sqlite3_step(s);
      } while (rc == SQLITE_ROW);
    }
    Status status = (rc == SQLITE_DONE || rc == SQLITE_OK) ? Status::Ok() : error(what);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return status;
  }

  /// First column of the first row of @p sql as text ("" when no row).
  Result<std::string> query_text(const std::string& sql) {
    ASSIGN_OR_RETURN(Stmt stmt, prepare(sql));
    int rc = sqlite3_step(stmt.get());
    if (rc == SQLITE_ROW) {
      const unsigned char* text = sqlite3_column_text(stmt.get(), 0);
      return std::string(text != nullptr ? reinterpret_cast<const char*>(text) : "");
    }
    if (rc != SQLITE_DONE) return error(sql);
    return std::string();
  }

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

/// The line of schema.sql after which come the views of a database merged by rank (kreplay
/// merge): a results database is made from the text before it.
inline constexpr std::string_view kRankViewsMarker = "-- @rank-views";

/// schema.sql up to kRankViewsMarker (false), or from it on (true).
inline std::string schema_part(bool rank_views) {
  std::string_view all(kSchemaSql);
  size_t at = all.find(kRankViewsMarker);
  if (at == std::string_view::npos) return rank_views ? std::string() : std::string(all);
  return std::string(rank_views ? all.substr(at) : all.substr(0, at));
}

/// Replace @p path and any journal of it with a new database holding @p schema (the results
/// schema when empty).
inline Result<Db> create_database(const std::string& path, const std::string& schema = {}) {
  RETURN_IF_ERROR(create_parent_directories(path));
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    RETURN_IF_ERROR(remove_file(path + suffix));
  }
  ASSIGN_OR_RETURN(Db db, Db::open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                             SQLITE_OPEN_NOMUTEX));  // callers serialize
  RETURN_IF_ERROR(db.exec("BEGIN"));
  RETURN_IF_ERROR(db.exec(schema.empty() ? schema_part(false) : schema));
  ASSIGN_OR_RETURN(Stmt meta, db.prepare("INSERT OR REPLACE INTO metadata (key, value) "
                                         "VALUES (?1, ?2)"));
  const std::pair<const char*, std::string> rows[] = {
      {"schema_version", std::to_string(kSchemaVersion)},
      {"format", "kreplay results"},
      {"timestamp_clock", "CLOCK_MONOTONIC nanoseconds (run.start_unix_ns: wall clock)"},
      {"counter_value_pick",
       "dispatch_counters and kernel_summary show, per dispatch, the value of the lowest "
       "replay_pass that collected the counter; table counters keeps every pass"},
  };
  for (const auto& [key, value] : rows) {
    RETURN_IF_ERROR(db.run(meta, "metadata", std::string(key), value));
  }
  RETURN_IF_ERROR(db.exec("COMMIT"));
  return db;
}

/// View column names for @p counters: the counter name, made unique (case-insensitively, as
/// SQLite compares names) against the fixed columns and the earlier counters.
inline std::vector<std::string> counter_columns(const std::vector<std::string>& counters) {
  std::set<std::string> taken = {
      "app_pass", "dispatch_id", "agent_id",        "stream_id", "kernel_id", "kernel_name",
      "outcome",  "reason",      "passes_executed", "start_ns",  "end_ns",    "duration_ns",
      "launches", "passes",      "total_ns",        "avg_ns",    "min_ns",    "max_ns",
      "rank"};
  std::vector<std::string> out;
  for (const auto& name : counters) {
    std::string column = name;
    for (int n = 2; taken.count(lower(column)) != 0; ++n) column = fmt::format("{}#{}", name, n);
    taken.insert(lower(column));
    out.push_back(column);
  }
  return out;
}

}  // namespace kreplay::output::sqlite
