#include "report/database.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "output/records.hpp"
#include "report/sqlite.hpp"

namespace kreplay::report {
namespace {

// The launch rows with the view's duration and kernel name (schema.sql, dispatch_counters), then
// bytes_changed and snapshot_mode (0 and '' from databases older than them: kLaunchSnapshotOld).
constexpr const char* kLaunchSnapshot = "d.bytes_changed, d.snapshot_mode";
constexpr const char* kLaunchSnapshotOld = "0, ''";
constexpr const char* kLaunchSql =
    "WITH pass_time AS (SELECT app_pass, dispatch_id, AVG(end_ns - start_ns) AS avg_ns "
    "FROM passes GROUP BY app_pass, dispatch_id) "
    "SELECT d.app_pass, d.dispatch_id, d.agent_id, d.stream_id, d.kernel_id, "
    "d.grid_x, d.grid_y, d.grid_z, d.block_x, d.block_y, d.block_z, "
    "d.cluster_x, d.cluster_y, d.cluster_z, d.static_shared_bytes, d.dynamic_shared_bytes, "
    "d.registers, d.outcome, d.reason, d.passes_requested, d.passes_executed, "
    "d.bytes_snapshotted, d.bytes_restored, d.snapshot_ns, d.restore_ns, d.start_ns, d.end_ns, "
    "COALESCE(t.avg_ns, CAST(d.end_ns - d.start_ns AS REAL)), "
    "COALESCE(NULLIF(k.demangled_name, ''), NULLIF(k.mangled_name, ''), "
    "'kernel ' || d.kernel_id), COALESCE(k.mangled_name, ''), {} "
    "FROM dispatches d "
    "LEFT JOIN kernels k ON k.app_pass = d.app_pass AND k.kernel_id = d.kernel_id "
    "LEFT JOIN pass_time t ON t.app_pass = d.app_pass AND t.dispatch_id = d.dispatch_id "
    "ORDER BY d.app_pass, d.dispatch_id";

// A database merged by rank (kreplay merge) has a rank column on every table, and its ids repeat
// between ranks. It is read through temporary views of the same names (they come before the
// tables) in which every id is rank * kRankIdStride + id: each rank's launches are launches of
// their own, and a kernel launched on several ranks is one kernel of the report.
Status read_by_rank(SqlDb& db) {
  for (const char* table : {"devices", "kernels", "dispatches", "passes", "counters",
                            "replay_phases", "source_counters"}) {
    if (!db.has_table(table)) continue;
    ASSIGN_OR_RETURN(
        SqlStmt s,
        db.prepare(fmt::format("SELECT name FROM pragma_table_info('{}') ORDER BY cid", table)));
    std::string columns;
    while (s.step()) {
      const std::string c = s.text(0);
      const bool id = c == "dispatch_id" || c == "kernel_id" || c == "agent_id" || c == "stream_id";
      columns += fmt::format("{}{}", columns.empty() ? "" : ", ",
                             id ? fmt::format("rank * {0} + \"{1}\" AS \"{1}\"", kRankIdStride, c)
                                : fmt::format("\"{}\"", c));
    }
    const std::string sql =
        fmt::format("CREATE TEMP VIEW {0} AS SELECT {1} FROM main.{0}", table, columns);
    if (sqlite3_exec(db.get(), sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
      return db.failed(table);
  }
  return Status::Ok();
}

Result<SqlDb> open_database(const std::string& path) {
  ASSIGN_OR_RETURN(SqlDb db, SqlDb::open_readonly(path));
  if (db.has_column("dispatches", "rank")) RETURN_IF_ERROR(read_by_rank(db));
  return db;
}

}  // namespace

Result<Database> Database::open(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return InvalidArgument(
        fmt::format("{}: no such file; give the results database of a run "
                    "(<host>/<pid>_results.db by default)",
                    path));
  }
  ASSIGN_OR_RETURN(SqlDb db, open_database(path));
  Database out;
  out.path = path;
  out.by_rank = db.has_column("dispatches", "rank");
  if (!db.has_table("metadata") || !db.has_table("dispatches") || !db.has_table("counters")) {
    return InvalidArgument(
        fmt::format("{} is not a kreplay results database (it has no dispatches and "
                    "counters tables); give a *_results.db that kreplay wrote",
                    path));
  }
  {
    ASSIGN_OR_RETURN(SqlStmt s,
                     db.prepare("SELECT value FROM metadata WHERE key = 'schema_version'"));
    if (s.step()) out.schema_version = std::atoi(s.raw_text(0));
  }
  if (out.schema_version < kOldestSchemaVersion || out.schema_version > output::kSchemaVersion) {
    return InvalidArgument(
        fmt::format("{} has results schema version {}, this kreplay reads versions {} "
                    "to {}; use the kreplay that wrote it",
                    path, out.schema_version, kOldestSchemaVersion, output::kSchemaVersion));
  }
  out.has_seq = db.has_column("counters", "seq");
  {
    ASSIGN_OR_RETURN(SqlStmt s,
                     db.prepare("SELECT app_pass, app_pass_count, kreplay_version, command, "
                                "hostname, pid, replay_mode, counter_names, options, start_ns, "
                                "start_unix_ns, end_ns, exit_code, launches, replayed, declined, "
                                "not_selected, passes, " +
                                std::string(out.by_rank ? "rank" : "NULL") + " FROM run ORDER BY " +
                                (out.by_rank ? "rank, " : "") + "app_pass"));
    while (s.step()) {
      DbRun r;
      r.app_pass = s.u32(0);
      r.app_pass_count = s.u32(1);
      r.kreplay_version = s.text(2);
      r.command_json = s.text(3);
      r.hostname = s.text(4);
      r.pid = s.u64(5);
      r.replay_mode = s.text(6);
      r.counter_names_json = s.text(7);
      r.options_json = s.text(8);
      r.start_ns = s.i64(9);
      r.start_unix_ns = s.i64(10);
      r.end_ns = s.opt_i64(11);
      r.exit_code = s.opt_i64(12);
      r.launches = s.opt_i64(13);
      r.replayed = s.opt_i64(14);
      r.declined = s.opt_i64(15);
      r.not_selected = s.opt_i64(16);
      r.passes = s.opt_i64(17);
      r.rank = s.opt_i64(18);
      out.runs.push_back(std::move(r));
    }
    if (!s.done_ok()) return db.failed("run");
  }
  {
    ASSIGN_OR_RETURN(SqlStmt s,
                     db.prepare("SELECT app_pass, agent_id, type, device_index, name, chip, "
                                "memory_bytes, multiprocessor_count, cc_major, cc_minor FROM "
                                "devices ORDER BY app_pass, agent_id"));
    while (s.step()) {
      DbDevice d;
      d.app_pass = s.u32(0);
      d.agent_id = s.u64(1);
      d.type = s.text(2);
      d.device_index = s.u32(3);
      d.name = s.text(4);
      d.chip = s.text(5);
      d.memory_bytes = s.u64(6);
      d.sm_count = s.u32(7);
      d.cc_major = s.u32(8);
      d.cc_minor = s.u32(9);
      out.devices.push_back(std::move(d));
    }
    if (!s.done_ok()) return db.failed("devices");
  }
  std::map<std::pair<uint32_t, uint64_t>, size_t> index;
  {
    const bool has_snapshot_mode = db.has_column("dispatches", "snapshot_mode");
    ASSIGN_OR_RETURN(SqlStmt s, db.prepare(fmt::format(
                                    kLaunchSql, has_snapshot_mode ? kLaunchSnapshot
                                                                  : kLaunchSnapshotOld)));
    while (s.step()) {
      DbLaunch l;
      l.app_pass = s.u32(0);
      l.dispatch_id = s.u64(1);
      l.agent_id = s.u64(2);
      l.stream_id = s.u64(3);
      l.kernel_id = s.u64(4);
      for (int i = 0; i < 3; ++i) {
        l.grid[i] = s.u32(5 + i);
        l.block[i] = s.u32(8 + i);
        l.cluster[i] = s.u32(11 + i);
      }
      l.static_shared = s.u32(14);
      l.dynamic_shared = s.u32(15);
      l.registers = s.u32(16);
      l.outcome = s.text(17);
      l.reason = s.text(18);
      l.passes_requested = s.u64(19);
      l.passes_executed = s.u64(20);
      l.bytes_snapshotted = s.u64(21);
      l.bytes_restored = s.u64(22);
      l.snapshot_ns = s.u64(23);
      l.restore_ns = s.u64(24);
      l.start_ns = s.i64(25);
      l.end_ns = s.i64(26);
      l.duration_ns = s.real(27);
      l.kernel_name = s.text(28);
      l.mangled_name = s.text(29);
      l.bytes_changed = s.u64(30);
      l.snapshot_mode = s.text(31);
      index[{l.app_pass, l.dispatch_id}] = out.launches.size();
      out.launches.push_back(std::move(l));
    }
    if (!s.done_ok()) return db.failed("dispatches");
  }
  {
    // Primary-key order: per dispatch and name, the lowest replay_pass comes first.
    ASSIGN_OR_RETURN(SqlStmt s, db.prepare("SELECT app_pass, dispatch_id, name, value FROM "
                                           "counters ORDER BY app_pass, dispatch_id, name, "
                                           "replay_pass"));
    std::unordered_map<std::string, uint32_t> names;
    uint32_t last_pass = 0;
    uint64_t last_dispatch = 0;
    bool have_last = false;
    DbLaunch* launch = nullptr;
    std::string last_name;
    while (s.step()) {
      const uint32_t app_pass = s.u32(0);
      const uint64_t dispatch = s.u64(1);
      const char* name = s.raw_text(2);
      const bool same_dispatch = have_last && app_pass == last_pass && dispatch == last_dispatch;
      if (!same_dispatch) {
        auto it = index.find({app_pass, dispatch});
        launch = it == index.end() ? nullptr : &out.launches[it->second];
        last_pass = app_pass;
        last_dispatch = dispatch;
        have_last = true;
        last_name.clear();
      } else if (last_name == name) {
        continue;  // a later pass of the same counter
      }
      last_name = name;
      auto [it, inserted] = names.emplace(last_name, static_cast<uint32_t>(names.size()));
      if (inserted) out.counter_names.push_back(last_name);
      if (launch != nullptr && !s.null(3)) launch->counters.emplace_back(it->second, s.real(3));
    }
    if (!s.done_ok()) return db.failed("counters");
  }
  if (db.has_table("source_counters")) {
    auto s = db.prepare("SELECT 1 FROM source_counters LIMIT 1");
    out.has_source_counters = s.ok() && s->step();
  }
  return out;
}

Status Database::read_timeline(size_t max_launches, std::vector<DbPass>* passes,
                               std::vector<DbPhase>* phases) const {
  ASSIGN_OR_RETURN(SqlDb db, open_database(path));
  const std::string chosen = fmt::format(
      "SELECT app_pass, dispatch_id FROM dispatches WHERE (app_pass, dispatch_id) IN "
      "(SELECT app_pass, dispatch_id FROM passes) ORDER BY app_pass, start_ns, dispatch_id "
      "LIMIT {}",
      max_launches);
  {
    ASSIGN_OR_RETURN(SqlStmt s, db.prepare("SELECT app_pass, dispatch_id, replay_pass, stream_id, "
                                           "start_ns, end_ns FROM passes WHERE (app_pass, "
                                           "dispatch_id) IN (" +
                                           chosen + ") ORDER BY app_pass, dispatch_id, replay_pass"));
    while (s.step()) {
      DbPass p;
      p.app_pass = s.u32(0);
      p.dispatch_id = s.u64(1);
      p.replay_pass = s.u64(2);
      p.stream_id = s.u64(3);
      p.start_ns = s.i64(4);
      p.end_ns = s.i64(5);
      passes->push_back(p);
    }
    if (!s.done_ok()) return db.failed("passes");
  }
  ASSIGN_OR_RETURN(SqlStmt s, db.prepare("SELECT app_pass, dispatch_id, phase, after_pass, "
                                         "start_ns, end_ns, bytes, stream_id FROM replay_phases "
                                         "WHERE (app_pass, dispatch_id) IN (" +
                                         chosen + ") ORDER BY id"));
  while (s.step()) {
    DbPhase p;
    p.app_pass = s.u32(0);
    p.dispatch_id = s.u64(1);
    p.phase = s.text(2);
    p.after_pass = s.u64(3);
    p.start_ns = s.i64(4);
    p.end_ns = s.i64(5);
    p.bytes = s.u64(6);
    p.stream_id = s.u64(7);
    phases->push_back(std::move(p));
  }
  if (!s.done_ok()) return db.failed("replay_phases");
  return Status::Ok();
}

Result<std::vector<DbSourceCounter>> Database::read_source_counters() const {
  std::vector<DbSourceCounter> out;
  if (!has_source_counters) return out;
  ASSIGN_OR_RETURN(SqlDb db, open_database(path));
  ASSIGN_OR_RETURN(SqlStmt s, db.prepare("SELECT app_pass, kernel_id, location, "
                                         "SUM(inst_executed) FROM source_counters GROUP BY "
                                         "app_pass, kernel_id, location"));
  while (s.step()) {
    DbSourceCounter c;
    c.app_pass = s.u32(0);
    c.kernel_id = s.u64(1);
    c.location = s.text(2);
    c.inst_executed = s.real(3);
    out.push_back(std::move(c));
  }
  if (!s.done_ok()) return db.failed("source_counters");
  return out;
}

const DbDevice* Database::device(uint32_t app_pass, uint64_t agent_id) const {
  for (const auto& d : devices) {
    if (d.app_pass == app_pass && d.agent_id == agent_id) return &d;
  }
  for (const auto& d : devices) {
    if (d.agent_id == agent_id) return &d;
  }
  return nullptr;
}

}  // namespace kreplay::report
