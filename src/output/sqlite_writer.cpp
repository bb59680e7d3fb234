#include "output/sqlite_writer.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <concepts>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "common/logging.hpp"
#include "output/output_file.hpp"
#include "output/sqlite_db.hpp"
#include "output/text.hpp"

namespace kreplay::output {
namespace {

using namespace sqlite;  // NOLINT: the shared helpers (sqlite_db.hpp)

}  // namespace

std::string counter_views_sql(const std::vector<std::string>& counters) {
  std::vector<std::string> columns = counter_columns(counters);
  std::string sql =
      "DROP VIEW IF EXISTS kernel_summary;\n"
      "DROP VIEW IF EXISTS dispatch_counters;\n"
      "CREATE VIEW dispatch_counters AS\n"
      "WITH pass_time AS (\n"
      "  SELECT app_pass, dispatch_id, AVG(end_ns - start_ns) AS avg_ns\n"
      "  FROM passes GROUP BY app_pass, dispatch_id),\n"
      "first_pass AS (\n"
      "  SELECT app_pass, dispatch_id, name, value, MIN(replay_pass) AS replay_pass\n"
      "  FROM counters GROUP BY app_pass, dispatch_id, name)\n"
      "SELECT d.app_pass, d.dispatch_id, d.agent_id, d.stream_id, d.kernel_id,\n"
      "  COALESCE(NULLIF(k.demangled_name, ''), NULLIF(k.mangled_name, ''),\n"
      "           'kernel ' || d.kernel_id) AS kernel_name,\n"
      "  d.outcome, d.reason, d.passes_executed, d.start_ns, d.end_ns,\n"
      "  COALESCE(t.avg_ns, CAST(d.end_ns - d.start_ns AS REAL)) AS duration_ns";
  for (size_t i = 0; i < counters.size(); ++i) {
    sql += fmt::format(",\n  MAX(CASE WHEN f.name = {} THEN f.value END) AS {}",
                       quote_literal(counters[i]), quote_identifier(columns[i]));
  }
  sql +=
      "\nFROM dispatches d\n"
      "LEFT JOIN kernels k ON k.app_pass = d.app_pass AND k.kernel_id = d.kernel_id\n"
      "LEFT JOIN pass_time t ON t.app_pass = d.app_pass AND t.dispatch_id = d.dispatch_id\n"
      "LEFT JOIN first_pass f ON f.app_pass = d.app_pass AND f.dispatch_id = d.dispatch_id\n"
      "GROUP BY d.app_pass, d.dispatch_id;\n"
      "CREATE VIEW kernel_summary AS\n"
      "SELECT app_pass, kernel_id, kernel_name, COUNT(*) AS launches,\n"
      "  SUM(passes_executed) AS passes, SUM(duration_ns) AS total_ns, AVG(duration_ns) AS "
      "avg_ns,\n"
      "  MIN(duration_ns) AS min_ns, MAX(duration_ns) AS max_ns";
  for (const auto& column : columns) {
    sql += fmt::format(",\n  AVG({0}) AS {0}", quote_identifier(column));
  }
  sql += "\nFROM dispatch_counters GROUP BY app_pass, kernel_id;\n";
  return sql;
}

// ---------------------------------------------------------------------------------------------

struct SqliteWriter::Impl {
  Db db;
  Stmt run_insert, run_update, device_insert, kernel_insert, dispatch_insert, pass_insert,
      counter_insert, allocation_insert, phase_insert, pc_insert, sass_metric_insert, pm_insert,
      sass_insert;
  bool begun = false;
  bool finished = false;
  bool in_transaction = false;
  size_t since_commit = 0;
  uint32_t app_pass = 0;
  uint64_t seq = 0;  // records received so far: the seq column
  std::vector<std::string> counter_names;  // view columns, in order
  std::set<std::string> known_counters;
  bool views_stale = false;

  Status usable() const {
    if (finished) return db.error("write after finish");
    return Status::Ok();
  }

  Status open_transaction() {
    if (in_transaction) return Status::Ok();
    RETURN_IF_ERROR(db.exec("BEGIN"));
    in_transaction = true;
    return Status::Ok();
  }

  Status commit() {
    if (!in_transaction) return Status::Ok();
    in_transaction = false;
    since_commit = 0;
    return db.exec("COMMIT");
  }

  /// Insert one record row (within the open transaction; committed every kCommitEvery).
  template <typename... Args>
  Status insert(Stmt& stmt, std::string_view what, const Args&... args) {
    RETURN_IF_ERROR(usable());
    RETURN_IF_ERROR(open_transaction());
    RETURN_IF_ERROR(db.run(stmt, what, args...));
    if (++since_commit >= kCommitEvery) return commit();
    return Status::Ok();
  }

  void note_counter(const std::string& name) {
    if (known_counters.insert(name).second) {
      counter_names.push_back(name);
      views_stale = true;
    }
  }

  Status refresh_views() {
    RETURN_IF_ERROR(open_transaction());
    RETURN_IF_ERROR(db.exec(counter_views_sql(counter_names)));
    views_stale = false;
    return Status::Ok();
  }

  Status prepare_all() {
    ASSIGN_OR_RETURN(run_insert,
                     db.prepare("INSERT INTO run (app_pass, app_pass_count, kreplay_version, "
                                "command, hostname, pid, replay_mode, counter_names, environment, "
                                "options, start_ns, start_unix_ns, rank, local_rank) "
                                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
                                "?14)"));
    ASSIGN_OR_RETURN(run_update,
                     db.prepare("UPDATE run SET end_ns = ?2, exit_code = ?3, launches = ?4, "
                                "replayed = ?5, declined = ?6, not_selected = ?7, passes = ?8, "
                                "declined_by_reason = ?9, counter_passes_lost = ?10, "
                                "devices_used = ?11, snapshot_device_peak_bytes = ?12, "
                                "snapshot_host_peak_bytes = ?13, snapshot_storage_releases = ?14 "
                                "WHERE app_pass = ?1"));
    ASSIGN_OR_RETURN(device_insert,
                     db.prepare("INSERT OR REPLACE INTO devices (app_pass, agent_id, type, "
                                "device_index, name, chip, uuid, memory_bytes, "
                                "multiprocessor_count, cc_major, cc_minor, seq) "
                                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"));
    ASSIGN_OR_RETURN(kernel_insert,
                     db.prepare("INSERT OR REPLACE INTO kernels (app_pass, kernel_id, agent_id, "
                                "code_object_id, mangled_name, demangled_name, seq) "
                                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
    ASSIGN_OR_RETURN(
        dispatch_insert,
        db.prepare("INSERT INTO dispatches (app_pass, dispatch_id, agent_id, stream_id, "
                   "kernel_id, correlation_id, thread_id, grid_x, grid_y, grid_z, block_x, "
                   "block_y, block_z, cluster_x, cluster_y, cluster_z, dynamic_shared_bytes, "
                   "static_shared_bytes, registers, outcome, reason, passes_requested, "
                   "passes_executed, bytes_snapshotted, bytes_restored, snapshot_ns, restore_ns, "
                   "start_ns, end_ns, graph_id, graph_node, divergence_checked, "
                   "diverged_passes, bytes_changed, snapshot_mode, seq) VALUES (?1, ?2, ?3, ?4, "
                   "?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, "
                   "?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35, "
                   "?36)"));
    ASSIGN_OR_RETURN(pass_insert,
                     db.prepare("INSERT INTO passes (app_pass, dispatch_id, replay_pass, "
                                "agent_id, stream_id, start_ns, end_ns, counter_status, seq) "
                                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"));
    ASSIGN_OR_RETURN(counter_insert,
                     db.prepare("INSERT INTO counters (app_pass, dispatch_id, name, replay_pass, "
                                "value, agent_id, kernel_id, seq) "
                                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"));
    ASSIGN_OR_RETURN(allocation_insert,
                     db.prepare("INSERT INTO allocations (app_pass, agent_id, operation, kind, "
                                "address, size, timestamp_ns, seq) "
                                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"));
    ASSIGN_OR_RETURN(phase_insert,
                     db.prepare("INSERT INTO replay_phases (app_pass, dispatch_id, agent_id, "
                                "stream_id, phase, after_pass, start_ns, end_ns, bytes, seq) "
                                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"));
    ASSIGN_OR_RETURN(pc_insert,
                     db.prepare("INSERT INTO pc_samples (app_pass, dispatch_id, replay_pass, "
                                "function, pc_offset, stall_reason, samples, agent_id, kernel_id, "
                                "seq) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"));
    ASSIGN_OR_RETURN(sass_metric_insert,
                     db.prepare("INSERT INTO sass_metrics (app_pass, dispatch_id, replay_pass, "
                                "function, pc_offset, metric, value, agent_id, kernel_id, seq) "
                                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"));
    ASSIGN_OR_RETURN(pm_insert,
                     db.prepare("INSERT INTO pm_samples (app_pass, dispatch_id, replay_pass, "
                                "metric, timestamp_ns, value, agent_id, kernel_id, seq) "
                                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"));
    ASSIGN_OR_RETURN(sass_insert,
                     db.prepare("INSERT OR IGNORE INTO sass (app_pass, agent_id, function, "
                                "pc_offset, instruction, source_file, source_line) "
                                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
    return Status::Ok();
  }

  /// Commit, fold the WAL into the database and leave a single file.
  Status close_cleanly() {
    Status status = commit();
    for (Stmt* stmt : {&run_insert, &run_update, &device_insert, &kernel_insert, &dispatch_insert,
                       &pass_insert, &counter_insert, &allocation_insert, &phase_insert, &pc_insert,
                       &sass_metric_insert, &pm_insert, &sass_insert}) {
      *stmt = Stmt();
    }
    if (status.ok()) status = db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    if (status.ok()) status = db.exec("PRAGMA journal_mode=DELETE");
    db.close();
    return status;
  }
};

SqliteWriter::SqliteWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

SqliteWriter::~SqliteWriter() {
  if (impl_ && !impl_->finished) {
    Status status = impl_->commit();
    if (!status.ok()) KR_WARN("{}", status.message());
  }
}

Result<std::unique_ptr<SqliteWriter>> SqliteWriter::create(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  ASSIGN_OR_RETURN(impl->db, create_database(path));
  ASSIGN_OR_RETURN(std::string mode, impl->db.query_text("PRAGMA journal_mode=WAL"));
  if (mode != "wal") {
    KR_WARN(
        "SQLite cannot use WAL for '{}' (journal mode '{}'); data is still committed at "
        "every flush",
        path, mode);
  }
  RETURN_IF_ERROR(impl->db.exec("PRAGMA synchronous=NORMAL"));
  RETURN_IF_ERROR(impl->prepare_all());
  return std::unique_ptr<SqliteWriter>(new SqliteWriter(std::move(impl)));
}

std::vector<std::string> SqliteWriter::output_files() const {
  return {impl_->db.path()};
}

Status SqliteWriter::begin(const RunInfo& run) {
  Impl& m = *impl_;
  RETURN_IF_ERROR(m.usable());
  if (m.begun) return m.db.error("begin called twice");
  m.begun = true;
  m.app_pass = run.app_pass;
  for (const auto& name : run.counter_names) m.note_counter(name);
  ojson command = run.command;
  ojson counters = run.counter_names;
  ojson environment = ojson::object();
  for (const auto& [k, v] : run.environment) environment[k] = v;
  ojson options = ojson::object();
  for (const auto& [k, v] : run.options) options[k] = v;
  RETURN_IF_ERROR(m.open_transaction());
  RETURN_IF_ERROR(m.db.run(m.run_insert, "run", run.app_pass, run.app_pass_count,
                           run.kreplay_version, dump_json(command), run.hostname, run.pid,
                           run.replay_mode, dump_json(counters), dump_json(environment),
                           dump_json(options), run.start_ns, run.start_unix_ns, run.rank,
                           run.local_rank));
  ASSIGN_OR_RETURN(Stmt meta, m.db.prepare("INSERT OR REPLACE INTO metadata (key, value) "
                                           "VALUES ('kreplay_version', ?1)"));
  RETURN_IF_ERROR(m.db.run(meta, "metadata", run.kreplay_version));
  RETURN_IF_ERROR(m.refresh_views());
  return m.commit();
}

Status SqliteWriter::device(const DeviceRecord& r) {
  Impl& m = *impl_;
  return m.insert(m.device_insert, "device", m.app_pass, r.agent_id, r.type, r.device_index, r.name,
                  r.chip, r.uuid, r.memory_bytes, r.multiprocessor_count, r.cc_major, r.cc_minor,
                  ++m.seq);
}

Status SqliteWriter::kernel(const KernelRecord& r) {
  Impl& m = *impl_;
  return m.insert(m.kernel_insert, "kernel", m.app_pass, r.kernel_id, r.agent_id, r.code_object_id,
                  r.mangled_name, r.demangled_name, ++m.seq);
}

/// Name the record in an insert error (a duplicate key names the dispatch and pass).
static Status name_record(const Status& status, std::string_view what) {
  return Error(status.code(), fmt::format("{} (writing {})", status.message(), what));
}

Status SqliteWriter::dispatch(const DispatchRecord& r) {
  Impl& m = *impl_;
  Status status = m.insert(
      m.dispatch_insert, "dispatch", r.app_pass, r.dispatch_id, r.agent_id, r.stream_id,
      r.kernel_id, r.correlation_id, r.thread_id, r.grid.x, r.grid.y, r.grid.z, r.block.x,
      r.block.y, r.block.z, r.cluster.x, r.cluster.y, r.cluster.z, r.dynamic_shared_bytes,
      r.static_shared_bytes, r.registers, r.outcome, r.reason, r.passes_requested,
      r.passes_executed, r.bytes_snapshotted, r.bytes_restored, r.snapshot_ns, r.restore_ns,
      r.start_ns, r.end_ns, r.graph_id, r.graph_node, r.divergence_checked ? 1 : 0,
      r.diverged_passes, r.bytes_changed, r.snapshot_mode, ++m.seq);
  if (!status.ok()) return name_record(status, fmt::format("dispatch {}", r.dispatch_id));
  return status;
}

Status SqliteWriter::pass(const PassRecord& r) {
  Impl& m = *impl_;
  Status status = m.insert(m.pass_insert, "pass", r.app_pass, r.dispatch_id, r.replay_pass,
                           r.agent_id, r.stream_id, r.start_ns, r.end_ns, r.counter_status,
                           ++m.seq);
  if (!status.ok()) {
    return name_record(status, fmt::format("pass {} of dispatch {}", r.replay_pass, r.dispatch_id));
  }
  return status;
}

Status SqliteWriter::counter(const CounterRecord& r) {
  Impl& m = *impl_;
  m.note_counter(r.name);
  Status status = m.insert(m.counter_insert, "counter", r.app_pass, r.dispatch_id, r.name,
                           r.replay_pass, r.value, r.agent_id, r.kernel_id, ++m.seq);
  if (!status.ok()) {
    return name_record(status, fmt::format("counter '{}' of dispatch {} pass {}", r.name,
                                           r.dispatch_id, r.replay_pass));
  }
  return status;
}

Status SqliteWriter::service_sample(const ServiceSampleRecord& r) {
  Impl& m = *impl_;
  if (r.service == "pm_sampling") {
    return m.insert(m.pm_insert, "PM sample", r.app_pass, r.dispatch_id, r.replay_pass, r.name,
                    r.timestamp_ns, r.value, r.agent_id, r.kernel_id, ++m.seq);
  }
  const bool pc = r.service == "pc_sampling";
  if (!pc && r.service != "sass_metrics") {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 fmt::format("no table for service '{}'", r.service));
  }
  RETURN_IF_ERROR(m.insert(m.sass_insert, "instruction", r.app_pass, r.agent_id, r.function,
                           r.pc_offset, r.instruction, r.source_file, r.source_line));
  if (pc) {
    return m.insert(m.pc_insert, "PC sample", r.app_pass, r.dispatch_id, r.replay_pass, r.function,
                    r.pc_offset, r.name, static_cast<uint64_t>(r.value), r.agent_id, r.kernel_id,
                    ++m.seq);
  }
  return m.insert(m.sass_metric_insert, "SASS metric", r.app_pass, r.dispatch_id, r.replay_pass,
                  r.function, r.pc_offset, r.name, r.value, r.agent_id, r.kernel_id, ++m.seq);
}

Status SqliteWriter::allocation(const AllocationRecord& r) {
  Impl& m = *impl_;
  return m.insert(m.allocation_insert, "allocation", r.app_pass, r.agent_id, r.operation, r.kind,
                  r.address, r.size, r.timestamp_ns, ++m.seq);
}

Status SqliteWriter::replay_phase(const ReplayPhaseRecord& r) {
  Impl& m = *impl_;
  return m.insert(m.phase_insert, "replay phase", r.app_pass, r.dispatch_id, r.agent_id,
                  r.stream_id, r.phase, r.after_pass, r.start_ns, r.end_ns, r.bytes, ++m.seq);
}

Status SqliteWriter::flush() {
  Impl& m = *impl_;
  RETURN_IF_ERROR(m.usable());
  if (m.views_stale) RETURN_IF_ERROR(m.refresh_views());
  RETURN_IF_ERROR(m.commit());
  // Copy what the WAL holds into the database file when no reader is in the way.
  sqlite3_wal_checkpoint_v2(m.db.get(), nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
  return Status::Ok();
}

Status SqliteWriter::finish(const RunSummary& s) {
  Impl& m = *impl_;
  RETURN_IF_ERROR(m.usable());
  ojson reasons = ojson::object();
  for (const auto& [k, v] : s.declined_by_reason) reasons[k] = v;
  RETURN_IF_ERROR(m.open_transaction());
  RETURN_IF_ERROR(m.db.run(m.run_update, "run summary", m.app_pass, s.end_ns, s.exit_code,
                           s.launches, s.replayed, s.declined, s.not_selected, s.passes,
                           dump_json(reasons), s.counter_passes_lost,
                           dump_json(ojson(s.devices_used)), s.snapshot_device_peak_bytes,
                           s.snapshot_host_peak_bytes, s.snapshot_storage_releases));
  RETURN_IF_ERROR(m.refresh_views());
  m.finished = true;
  return m.close_cleanly();
}

// ---------------------------------------------------------------------------------------------

Result<std::string> dump_sqlite(const std::string& path) {
  if (!fs::exists(path)) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 fmt::format("cannot dump '{}': no such file", path));
  }
  ASSIGN_OR_RETURN(Db db, Db::open(path, SQLITE_OPEN_READONLY));
  std::string out = "-- schema\n";
  std::vector<std::pair<std::string, std::string>> objects;  // (type, name) of tables and views
  {
    ASSIGN_OR_RETURN(Stmt stmt,
                     db.prepare("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL "
                                "AND name NOT LIKE 'sqlite_%' ORDER BY type, name"));
    int rc;
    while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
      auto col = [&](int i) {
        return std::string(reinterpret_cast<const char*>(sqlite3_column_text(stmt.get(), i)));
      };
      out += col(2) + ";\n";
      if (col(0) == "table" || col(0) == "view") objects.emplace_back(col(0), col(1));
    }
    if (rc != SQLITE_DONE) return db.error("read schema");
  }
  for (const auto& [type, name] : objects) {
    ASSIGN_OR_RETURN(Stmt probe, db.prepare("SELECT * FROM " + quote_identifier(name)));
    int columns = sqlite3_column_count(probe.get());
    std::string order;
    for (int i = 1; i <= columns; ++i) order += fmt::format("{}{}", i > 1 ? ", " : "", i);
    ASSIGN_OR_RETURN(Stmt stmt,
                     db.prepare("SELECT * FROM " + quote_identifier(name) + " ORDER BY " + order));
    out += fmt::format("\n-- {} {}\n", type, name);
    for (int i = 0; i < columns; ++i) {
      out += fmt::format("{}{}", i > 0 ? "|" : "", sqlite3_column_name(stmt.get(), i));
    }
    out += "\n";
    int rc;
    while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
      for (int i = 0; i < columns; ++i) {
        if (i > 0) out += "|";
        switch (sqlite3_column_type(stmt.get(), i)) {
          case SQLITE_NULL:
            out += "NULL";
            break;
          case SQLITE_INTEGER:
            out += std::to_string(sqlite3_column_int64(stmt.get(), i));
            break;
          case SQLITE_FLOAT: {
            // Keep REAL distinguishable from INTEGER: 1000.0, not 1000.
            std::string text = format_double(sqlite3_column_double(stmt.get(), i));
            if (text.find_first_of(".eni") == std::string::npos) text += ".0";
            out += text;
            break;
          }
          case SQLITE_TEXT:
            out += json_string(reinterpret_cast<const char*>(sqlite3_column_text(stmt.get(), i)));
            break;
          default:
            out += fmt::format("<blob {} bytes>", sqlite3_column_bytes(stmt.get(), i));
        }
      }
      out += "\n";
    }
    if (rc != SQLITE_DONE) return db.error("read " + name);
  }
  return out;
}

}  // namespace kreplay::output
