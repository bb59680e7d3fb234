// Merging results databases into one: the pass_N databases of one application-replay run
// (merge_sqlite: every row keeps its app_pass) and the databases of the ranks of one job
// (merge_ranks, `kreplay merge`: every table gains a rank column and every key starts with it).
// Both copy the tables the same way (merge_one) and rebuild the counter views over the union of
// the counters.
#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <functional>
#include <map>
#include <regex>
#include <set>

#include "output/sqlite_db.hpp"
#include "output/sqlite_writer.hpp"
#include "output/writer.hpp"

namespace kreplay::output {
namespace {

using namespace sqlite;  // NOLINT: the shared helpers (sqlite_db.hpp)

constexpr const char* kMergedTables[] = {
    "run",         "devices",       "kernels",    "dispatches",   "passes",     "counters",
    "allocations", "replay_phases", "pc_samples", "sass_metrics", "pm_samples", "sass"};

/// Column names of @p table in the attached database @p schema, without the surrogate `id`.
Result<std::vector<std::string>> column_names(Db& db, const std::string& schema,
                                              const std::string& table) {
  ASSIGN_OR_RETURN(Stmt stmt,
                   db.prepare("SELECT name FROM pragma_table_info(?1, ?2) ORDER BY cid"));
  if (sqlite3_bind_text(stmt.get(), 1, table.c_str(), -1, SQLITE_TRANSIENT) != SQLITE_OK ||
      sqlite3_bind_text(stmt.get(), 2, schema.c_str(), -1, SQLITE_TRANSIENT) != SQLITE_OK) {
    return db.error("table_info");
  }
  std::vector<std::string> out;
  while (sqlite3_step(stmt.get()) == SQLITE_ROW) {
    std::string name = reinterpret_cast<const char*>(sqlite3_column_text(stmt.get(), 0));
    if (name != "id") out.push_back(std::move(name));
  }
  return out;
}

/// Copy every table of @p input into the main database. Columns are those both have (an input
/// written before a column was added leaves it at its default). With @p rank, every row gets it
/// in the main database's rank column (the input's own run.rank is replaced).
Status merge_one(Db& db, const std::string& input, std::optional<int64_t> rank) {
  ASSIGN_OR_RETURN(Stmt attach, db.prepare("ATTACH DATABASE ?1 AS src"));
  RETURN_IF_ERROR(db.run(attach, "attach " + input, input));
  auto detach = [&db] { (void)db.exec("DETACH DATABASE src"); };

  auto version = db.query_text("SELECT value FROM src.metadata WHERE key = 'schema_version'");
  if (!version.ok() || *version != std::to_string(kSchemaVersion)) {
    detach();
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 fmt::format("cannot merge '{}': it is not a kreplay results database of schema "
                             "version {} ({}); merge databases written by this kreplay version",
                             input, kSchemaVersion,
                             version.ok() ? "schema_version '" + *version + "'"
                                          : version.status().message()));
  }
  if (!rank) {
    auto clash =
        db.query_text("SELECT app_pass FROM src.run WHERE app_pass IN (SELECT app_pass FROM run)");
    if (!clash.ok() || !clash->empty()) {
      detach();
      if (!clash.ok()) return clash.status();
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   fmt::format("cannot merge '{}': app_pass {} is already in another input; "
                               "merge the pass_N databases of one application-replay run, once "
                               "each",
                               input, *clash));
    }
  }
  Status status = db.exec("BEGIN");
  for (const char* table : kMergedTables) {
    if (!status.ok()) break;
    auto main_columns = column_names(db, "main", table);
    auto src_columns = column_names(db, "src", table);
    if (!main_columns.ok() || !src_columns.ok()) {
      status = main_columns.ok() ? src_columns.status() : main_columns.status();
      break;
    }
    const std::set<std::string> in_src(src_columns->begin(), src_columns->end());
    std::string into, from;
    if (rank) {
      into = "rank";
      from = std::to_string(*rank);
    }
    for (const std::string& c : *main_columns) {
      if (in_src.count(c) == 0 || (rank && c == "rank")) continue;
      into += fmt::format("{}{}", into.empty() ? "" : ", ", quote_identifier(c));
      from += fmt::format("{}{}", from.empty() ? "" : ", ", quote_identifier(c));
    }
    status = db.exec(
        fmt::format("INSERT INTO main.{} ({}) SELECT {} FROM src.{}", table, into, from, table));
    if (!status.ok()) {
      status = Error(status.code(), fmt::format("cannot merge '{}': {}", input, status.message()));
    }
  }
  if (status.ok()) {
    status = db.exec("COMMIT");
  } else {
    (void)db.exec("ROLLBACK");
  }
  detach();
  return status;
}

/// The counter view columns of a merged database: each run's counter_names in app_pass order,
/// then the other names in the counters table, alphabetically.
Result<std::vector<std::string>> merged_counter_names(Db& db) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  auto add = [&](std::string name) {
    if (seen.insert(name).second) names.push_back(std::move(name));
  };
  {
    ASSIGN_OR_RETURN(Stmt stmt, db.prepare("SELECT counter_names FROM run ORDER BY app_pass"));
    while (sqlite3_step(stmt.get()) == SQLITE_ROW) {
      const unsigned char* text = sqlite3_column_text(stmt.get(), 0);
      ojson list = ojson::parse(text != nullptr ? reinterpret_cast<const char*>(text) : "[]",
                                nullptr, /*allow_exceptions=*/false);
      if (!list.is_array()) continue;
      for (const auto& item : list) {
        if (item.is_string()) add(item.get<std::string>());
      }
    }
  }
  ASSIGN_OR_RETURN(Stmt stmt, db.prepare("SELECT DISTINCT name FROM counters ORDER BY name"));
  while (sqlite3_step(stmt.get()) == SQLITE_ROW) {
    add(reinterpret_cast<const char*>(sqlite3_column_text(stmt.get(), 0)));
  }
  return names;
}

/// One input of merge_ranks, as read before anything is merged.
struct RankInput {
  std::string path;
  std::string schema_version;
  std::set<std::string> counters;  ///< every run's counter_names
  std::optional<int64_t> rank;     ///< run.rank, when the run knew it
  int64_t launches = 0;            ///< every run's launches
};

Result<RankInput> read_rank_input(const std::string& path) {
  RankInput in;
  in.path = path;
  ASSIGN_OR_RETURN(Db db, Db::open(path, SQLITE_OPEN_READONLY));
  auto version = db.query_text("SELECT value FROM metadata WHERE key = 'schema_version'");
  if (!version.ok()) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 fmt::format("cannot merge '{}': it is not a kreplay results database ({})", path,
                             version.status().message()));
  }
  in.schema_version = *version;
  auto merged = db.query_text("SELECT COUNT(*) FROM metadata WHERE key = 'merged_ranks'");
  if (merged.ok() && *merged != "0") {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 fmt::format("cannot merge '{}': it is a merged database already; merge the "
                             "ranks' own databases",
                             path));
  }
  ASSIGN_OR_RETURN(Stmt stmt, db.prepare("SELECT counter_names FROM run ORDER BY app_pass"));
  while (sqlite3_step(stmt.get()) == SQLITE_ROW) {
    const unsigned char* text = sqlite3_column_text(stmt.get(), 0);
    ojson list = ojson::parse(text != nullptr ? reinterpret_cast<const char*>(text) : "[]", nullptr,
                              /*allow_exceptions=*/false);
    for (const auto& item : list) {
      if (item.is_string()) in.counters.insert(item.get<std::string>());
    }
  }
  auto has_rank =
      db.query_text("SELECT COUNT(*) FROM pragma_table_info('run') WHERE name = 'rank'");
  if (has_rank.ok() && *has_rank == "1") {
    auto rank = db.query_text("SELECT COALESCE(MIN(rank), '') FROM run");
    if (rank.ok() && !rank->empty()) in.rank = std::stoll(*rank);
  }
  auto launches = db.query_text("SELECT COALESCE(SUM(launches), 0) FROM run");
  if (launches.ok()) in.launches = std::stoll(*launches);
  return in;
}

/// Inputs that cannot be merged by rank: another schema version or another metric set than the
/// first input, one line each.
Status check_rank_inputs(const std::vector<RankInput>& inputs) {
  const RankInput& first = inputs.front();
  for (const RankInput& in : inputs) {
    if (in.schema_version != first.schema_version) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   fmt::format("cannot merge '{}' (results schema version {}) with '{}' (version "
                               "{}): merge databases written by one kreplay version",
                               in.path, in.schema_version, first.path, first.schema_version));
    }
  }
  for (const RankInput& in : inputs) {
    if (in.counters == first.counters) continue;
    std::string only;
    for (const auto& c : in.counters) {
      if (first.counters.count(c) == 0) {
        only = fmt::format("{} has {}, '{}' does not", in.path, c, first.path);
        break;
      }
    }
    for (const auto& c : first.counters) {
      if (!only.empty()) break;
      if (in.counters.count(c) == 0)
        only = fmt::format("{} has {}, '{}' does not", first.path, c, in.path);
    }
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 fmt::format("cannot merge '{}' and '{}': they collected different metrics ({}); "
                             "merge the ranks of one run, profiled with the same counters",
                             first.path, in.path, only));
  }
  return Status::Ok();
}

/// The ranks of the inputs: each one's own, else (a run that knew none) the lowest rank no input
/// has, in input order. Two inputs of one rank are an error.
Result<std::vector<int64_t>> assign_ranks(const std::vector<RankInput>& inputs) {
  std::map<int64_t, const RankInput*> taken;
  for (const RankInput& in : inputs) {
    if (!in.rank) continue;
    auto [it, inserted] = taken.emplace(*in.rank, &in);
    if (!inserted) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   fmt::format("cannot merge: '{}' and '{}' are both rank {}; give each rank's "
                               "database once",
                               it->second->path, in.path, *in.rank));
    }
  }
  std::vector<int64_t> out;
  int64_t next = 0;
  for (const RankInput& in : inputs) {
    if (in.rank) {
      out.push_back(*in.rank);
      continue;
    }
    while (taken.count(next) != 0) ++next;
    taken.emplace(next, &in);
    out.push_back(next);
  }
  return out;
}

Status check_inputs(const std::vector<std::string>& inputs, const std::string& output) {
  if (inputs.empty()) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 fmt::format("cannot merge into '{}': no input databases given", output));
  }
  std::error_code ec;
  for (const auto& input : inputs) {
    if (!fs::is_regular_file(input, ec)) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   fmt::format("cannot merge '{}': no such file", input));
    }
    if (fs::exists(output, ec) && fs::equivalent(input, output, ec)) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   fmt::format("cannot merge '{}' into itself; choose another output file", input));
    }
  }
  return Status::Ok();
}

/// Run @p merge on a new @p output; on failure nothing of @p output remains.
Status merge_guarded(const std::vector<std::string>& inputs, const std::string& output,
                     const std::function<Status()>& merge) {
  try {
    RETURN_IF_ERROR(check_inputs(inputs, output));
    Status status = merge();
    if (!status.ok()) {
      std::error_code ec;
      for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(output + suffix, ec);
    }
    return status;
  } catch (const std::exception& e) {
    return Error(KREPLAY_STATUS_ERROR_INTERNAL,
                 fmt::format("merging into '{}' failed: {}", output, e.what()));
  }
}

/// The metadata of a merged database and its counter views (rewritten by @p views_sql).
Status finish_merge(Db& db, const std::vector<std::string>& inputs,
                    const std::function<std::string(const std::string&)>& views_sql) {
  ASSIGN_OR_RETURN(std::string version,
                   db.query_text("SELECT kreplay_version FROM run ORDER BY app_pass LIMIT 1"));
  ojson sources = inputs;
  ASSIGN_OR_RETURN(Stmt meta, db.prepare("INSERT OR REPLACE INTO metadata (key, value) "
                                         "VALUES (?1, ?2)"));
  RETURN_IF_ERROR(db.run(meta, "metadata", std::string("kreplay_version"), version));
  RETURN_IF_ERROR(db.run(meta, "metadata", std::string("merged_from"), dump_json(sources)));
  ASSIGN_OR_RETURN(std::vector<std::string> names, merged_counter_names(db));
  return db.exec(views_sql(counter_views_sql(names)));
}

}  // namespace

std::string rank_schema_sql(const std::string& sql) {
  std::string out = sql;
  auto replace = [&out](const char* pattern, const char* with) {
    out = std::regex_replace(out, std::regex(pattern), with);
  };
  // Joins and groups of views: the rank before the app_pass.
  replace(R"((\w+)\.app_pass = (\w+)\.app_pass)",
          "$1.rank = $2.rank AND $1.app_pass = $2.app_pass");
  replace(R"(\bSELECT (\w+\.)?app_pass\b)", "SELECT $1rank, $1app_pass");
  replace(R"(\bGROUP BY (\w+\.)?app_pass\b)", "GROUP BY $1rank, $1app_pass");
  // Tables: a rank column first (run has one already) and the rank first in every key.
  replace(R"(CREATE TABLE (?!metadata\b|run\b)(\w+) \(\n)",
          "CREATE TABLE $1 (\n  rank INTEGER NOT NULL DEFAULT 0,  -- kreplay merge: the rank\n");
  replace(R"(PRIMARY KEY \(app_pass)", "PRIMARY KEY (rank, app_pass");
  replace(R"(\bON (\w+) \(app_pass)", "ON $1 (rank, app_pass");
  replace(R"((\n  app_pass +INTEGER) PRIMARY KEY NOT NULL,)", "$1 NOT NULL,");
  if (sql.find("CREATE TABLE run (") != std::string::npos)
    out += "\nCREATE UNIQUE INDEX run_by_rank ON run (rank, app_pass);\n";
  return out;
}

Status merge_sqlite(const std::vector<std::string>& inputs, const std::string& output) {
  return merge_guarded(inputs, output, [&]() -> Status {
    ASSIGN_OR_RETURN(Db db, create_database(output));
    for (const auto& input : inputs) RETURN_IF_ERROR(merge_one(db, input, std::nullopt));
    RETURN_IF_ERROR(finish_merge(db, inputs, [](const std::string& sql) { return sql; }));
    db.close();
    return Status::Ok();
  });
}

/// Next to inputs that know their rank, one that knows none and saw no launch is the launcher's
/// own process (`kreplay -- torchrun ...` profiles torchrun too): it is left out.
std::vector<RankInput> drop_launchers(std::vector<RankInput> read,
                                      std::vector<std::string>* left_out) {
  const bool ranked =
      std::any_of(read.begin(), read.end(), [](const RankInput& in) { return in.rank; });
  if (!ranked) return read;
  std::vector<RankInput> kept;
  for (RankInput& in : read) {
    if (!in.rank && in.launches == 0) {
      if (left_out != nullptr) left_out->push_back(in.path);
      continue;
    }
    kept.push_back(std::move(in));
  }
  return kept;
}

Status merge_ranks(const std::vector<std::string>& all_inputs, const std::string& output,
                   std::vector<int64_t>* ranks, std::vector<std::string>* left_out) {
  return merge_guarded(all_inputs, output, [&]() -> Status {
    std::vector<RankInput> read;
    for (const auto& input : all_inputs) {
      ASSIGN_OR_RETURN(RankInput in, read_rank_input(input));
      read.push_back(std::move(in));
    }
    read = drop_launchers(std::move(read), left_out);
    std::vector<std::string> inputs;
    for (const RankInput& in : read) inputs.push_back(in.path);
    RETURN_IF_ERROR(check_rank_inputs(read));
    ASSIGN_OR_RETURN(std::vector<int64_t> assigned, assign_ranks(read));
    ASSIGN_OR_RETURN(Db db, create_database(output, rank_schema_sql(schema_part(false))));
    for (size_t i = 0; i < inputs.size(); ++i) {
      RETURN_IF_ERROR(merge_one(db, inputs[i], assigned[i]));
    }
    RETURN_IF_ERROR(finish_merge(db, inputs, rank_schema_sql));
    ojson by_rank = ojson::object();
    for (size_t i = 0; i < inputs.size(); ++i) by_rank[std::to_string(assigned[i])] = inputs[i];
    ASSIGN_OR_RETURN(Stmt meta, db.prepare("INSERT OR REPLACE INTO metadata (key, value) "
                                           "VALUES ('merged_ranks', ?1)"));
    RETURN_IF_ERROR(db.run(meta, "metadata", dump_json(by_rank)));
    RETURN_IF_ERROR(db.exec(schema_part(true)));
    db.close();
    if (ranks != nullptr) *ranks = std::move(assigned);
    return Status::Ok();
  });
}

}  // namespace kreplay::output
