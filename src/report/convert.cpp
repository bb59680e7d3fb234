#include "report/convert.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "output/records.hpp"
#include "output/writer.hpp"
#include "report/database.hpp"
#include "report/sqlite.hpp"

namespace kreplay::report {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

double value_or_nan(const SqlStmt& s, int i) {
  return s.null(i) ? std::numeric_limits<double>::quiet_NaN() : s.real(i);
}

// One table read in record order: each row becomes a record for the writer.
struct Cursor {
  const char* table = "";
  SqlStmt stmt;
  bool live = false;
  std::function<Status(const SqlStmt&, output::Writer&)> emit;
  int64_t key() const { return stmt.i64(0); }
  void next() { live = stmt.step(); }
};

// SELECT <order key>, <columns...>: the key is seq, or a stand-in for databases without it.
// A column written "name=DEFAULT" is optional: databases of an older schema version that lack it
// read DEFAULT instead (a column added later, such as graph ids, goes in this way).
struct TableSpec {
  const char* table;
  const char* columns;
  const char* fallback_key;  // an expression that orders like seq, roughly
  std::function<Status(const SqlStmt&, output::Writer&)> emit;
  std::string from = {};  // the FROM clause when it is not the table alone (a join)
};

// The per-pass services' tables (schema version 3), each joined with `sass` for the instruction
// and its source line. One spec per table; the emitted record is the same shape for all three.
TableSpec service_spec(const char* table, const char* service, const char* name_column,
                       const char* value_column, bool pm, uint32_t app_pass) {
  TableSpec t{table,
              "dispatch_id, replay_pass, agent_id, kernel_id, function, pc_offset, name, value, "
              "instruction, source_file, source_line, timestamp_ns",
              "0", [service, app_pass](const SqlStmt& s, output::Writer& w) {
                output::ServiceSampleRecord r;
                r.service = service;
                r.dispatch_id = s.u64(1);
                r.replay_pass = s.u64(2);
                r.agent_id = s.u64(3);
                r.kernel_id = s.u64(4);
                r.function = s.text(5);
                r.pc_offset = s.u64(6);
                r.name = s.text(7);
                r.value = value_or_nan(s, 8);
                r.instruction = s.text(9);
                r.source_file = s.text(10);
                r.source_line = s.u32(11);
                r.timestamp_ns = s.u64(12);
                r.app_pass = app_pass;
                return w.service_sample(r);
              }};
  const std::string instruction =
      pm ? "COALESCE(k.mangled_name, '') AS function, 0 AS pc_offset, '' AS instruction, "
           "'' AS source_file, 0 AS source_line"
         : "x.function, x.pc_offset, COALESCE(s.instruction, '') AS instruction, "
           "COALESCE(s.source_file, '') AS source_file, COALESCE(s.source_line, 0) AS source_line";
  t.from = fmt::format(
      "(SELECT x.app_pass, x.seq, x.dispatch_id, x.replay_pass, x.agent_id, x.kernel_id, {}, "
      "x.{} AS name, x.{} AS value, {} AS timestamp_ns FROM {} x{}) AS t",
      instruction, name_column, value_column, pm ? "x.timestamp_ns" : "0", table,
      // PM samples name their kernel's function (the kernels table has it).
      pm ? " LEFT JOIN kernels k ON k.app_pass = x.app_pass AND k.kernel_id = x.kernel_id"
         : " LEFT JOIN sass s ON s.app_pass = x.app_pass AND s.agent_id = x.agent_id AND "
           "s.function = x.function AND s.pc_offset = x.pc_offset");
  return t;
}

std::vector<TableSpec> table_specs(uint32_t app_pass) {
  std::vector<TableSpec> t;
  t.push_back({"devices",
               "agent_id, type, device_index, name, chip, uuid, memory_bytes, "
               "multiprocessor_count, cc_major, cc_minor",
               "rowid - 4000000000000000000", [](const SqlStmt& s, output::Writer& w) {
                 output::DeviceRecord d;
                 d.agent_id = s.u64(1);
                 d.type = s.text(2);
                 d.device_index = s.u32(3);
                 d.name = s.text(4);
                 d.chip = s.text(5);
                 d.uuid = s.text(6);
                 d.memory_bytes = s.u64(7);
                 d.multiprocessor_count = s.u32(8);
                 d.cc_major = s.u32(9);
                 d.cc_minor = s.u32(10);
                 return w.device(d);
               }});
  t.push_back({"kernels", "kernel_id, agent_id, code_object_id, mangled_name, demangled_name",
               "rowid - 3000000000000000000", [](const SqlStmt& s, output::Writer& w) {
                 output::KernelRecord k;
                 k.kernel_id = s.u64(1);
                 k.agent_id = s.u64(2);
                 k.code_object_id = s.u64(3);
                 k.mangled_name = s.text(4);
                 k.demangled_name = s.text(5);
                 return w.kernel(k);
               }});
  // Without seq: per dispatch (in arrival order) its counters, passes, phases, then the record.
  t.push_back({"counters", "dispatch_id, replay_pass, agent_id, kernel_id, name, value",
               "(SELECT d.rowid FROM dispatches d WHERE d.app_pass = counters.app_pass AND "
               "d.dispatch_id = counters.dispatch_id) * 1000000 + replay_pass * 1000",
               [app_pass](const SqlStmt& s, output::Writer& w) {
                 output::CounterRecord c;
                 c.dispatch_id = s.u64(1);
                 c.replay_pass = s.u64(2);
                 c.agent_id = s.u64(3);
                 c.kernel_id = s.u64(4);
                 c.name = s.text(5);
                 c.value = value_or_nan(s, 6);
                 c.app_pass = app_pass;
                 return w.counter(c);
               }});
  t.push_back({"passes",
               "dispatch_id, replay_pass, agent_id, stream_id, start_ns, end_ns, "
               "counter_status=''",
               "(SELECT d.rowid FROM dispatches d WHERE d.app_pass = passes.app_pass AND "
               "d.dispatch_id = passes.dispatch_id) * 1000000 + replay_pass * 1000 + 500",
               [app_pass](const SqlStmt& s, output::Writer& w) {
                 output::PassRecord p;
                 p.dispatch_id = s.u64(1);
                 p.replay_pass = s.u64(2);
                 p.agent_id = s.u64(3);
                 p.stream_id = s.u64(4);
                 p.start_ns = s.u64(5);
                 p.end_ns = s.u64(6);
                 p.counter_status = s.text(7);
                 p.app_pass = app_pass;
                 return w.pass(p);
               }});
  t.push_back({"replay_phases",
               "dispatch_id, agent_id, stream_id, phase, after_pass, start_ns, end_ns, bytes",
               "COALESCE((SELECT d.rowid FROM dispatches d WHERE d.app_pass = "
               "replay_phases.app_pass AND d.dispatch_id = replay_phases.dispatch_id), 0) * "
               "1000000 + 999000 + id % 1000",
               [app_pass](const SqlStmt& s, output::Writer& w) {
                 output::ReplayPhaseRecord p;
                 p.dispatch_id = s.u64(1);
                 p.agent_id = s.u64(2);
                 p.stream_id = s.u64(3);
                 p.phase = s.text(4);
                 p.after_pass = s.u64(5);
                 p.start_ns = s.u64(6);
                 p.end_ns = s.u64(7);
                 p.bytes = s.u64(8);
                 p.app_pass = app_pass;
                 return w.replay_phase(p);
               }});
  t.push_back({"dispatches",
               "dispatch_id, agent_id, stream_id, kernel_id, correlation_id, thread_id, grid_x, "
               "grid_y, grid_z, block_x, block_y, block_z, cluster_x, cluster_y, cluster_z, "
               "dynamic_shared_bytes, static_shared_bytes, registers, outcome, reason, "
               "passes_requested, passes_executed, bytes_snapshotted, bytes_restored, "
               "snapshot_ns, restore_ns, start_ns, end_ns, graph_id=0, graph_node=0, "
               "divergence_checked=0, diverged_passes=0, bytes_changed=0, snapshot_mode=''",
               "rowid * 1000000 + 999999", [app_pass](const SqlStmt& s, output::Writer& w) {
                 output::DispatchRecord d;
                 d.dispatch_id = s.u64(1);
                 d.agent_id = s.u64(2);
                 d.stream_id = s.u64(3);
                 d.kernel_id = s.u64(4);
                 d.correlation_id = s.u64(5);
                 d.thread_id = s.u64(6);
                 d.grid = {s.u32(7), s.u32(8), s.u32(9)};
                 d.block = {s.u32(10), s.u32(11), s.u32(12)};
                 d.cluster = {s.u32(13), s.u32(14), s.u32(15)};
                 d.dynamic_shared_bytes = s.u32(16);
                 d.static_shared_bytes = s.u32(17);
                 d.registers = s.u32(18);
                 d.outcome = s.text(19);
                 d.reason = s.text(20);
                 d.passes_requested = s.u64(21);
                 d.passes_executed = s.u64(22);
                 d.bytes_snapshotted = s.u64(23);
                 d.bytes_restored = s.u64(24);
                 d.snapshot_ns = s.u64(25);
                 d.restore_ns = s.u64(26);
                 d.start_ns = s.u64(27);
                 d.end_ns = s.u64(28);
                 d.graph_id = s.u64(29);
                 d.graph_node = s.u64(30);
                 d.divergence_checked = s.u64(31) != 0;
                 d.diverged_passes = s.u64(32);
                 d.bytes_changed = s.u64(33);
                 d.snapshot_mode = s.text(34);
                 d.app_pass = app_pass;
                 return w.dispatch(d);
               }});
  // Allocations carry no dispatch: without seq they go first, in arrival order.
  t.push_back({"allocations", "agent_id, operation, kind, address, size, timestamp_ns",
               "id - 2000000000000000000", [app_pass](const SqlStmt& s, output::Writer& w) {
                 output::AllocationRecord a;
                 a.agent_id = s.u64(1);
                 a.operation = s.text(2);
                 a.kind = s.text(3);
                 a.address = s.u64(4);
                 a.size = s.u64(5);
                 a.timestamp_ns = s.u64(6);
                 a.app_pass = app_pass;
                 return w.allocation(a);
               }});
  t.push_back(
      service_spec("pc_samples", "pc_sampling", "stall_reason", "samples", false, app_pass));
  t.push_back(service_spec("sass_metrics", "sass_metrics", "metric", "value", false, app_pass));
  t.push_back(service_spec("pm_samples", "pm_sampling", "metric", "value", true, app_pass));
  return t;
}

// "a, b, c=0" -> "a, b, c" or "a, b, 0 AS c", as the table has c or not.
std::string select_columns(const SqlDb& db, const std::string& table, const std::string& columns) {
  std::string out;
  size_t start = 0;
  while (start < columns.size()) {
    size_t end = columns.find(',', start);
    if (end == std::string::npos) end = columns.size();
    std::string item = columns.substr(start, end - start);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    const size_t eq = item.find('=');
    if (eq != std::string::npos) {
      const std::string name = item.substr(0, eq);
      item = db.has_column(table, name) ? name : item.substr(eq + 1) + " AS " + name;
    }
    out += (out.empty() ? "" : ", ") + item;
    start = end + 1;
  }
  return out;
}

std::map<std::string, std::string> string_map(const std::string& text) {
  std::map<std::string, std::string> out;
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return out;
  for (auto& [k, v] : j.items()) {
    if (v.is_string()) out[k] = v.get<std::string>();
  }
  return out;
}

std::vector<std::string> string_list(const std::string& text) {
  std::vector<std::string> out;
  json j = json::parse(text, nullptr, false);
  if (!j.is_array()) return out;
  for (const auto& v : j) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

Status convert_run(const SqlDb& db, uint32_t app_pass, bool has_seq,
                   const output::OutputConfig& config, std::vector<std::string>* files) {
  output::RunInfo run;
  output::RunSummary summary;
  {
    ASSIGN_OR_RETURN(SqlStmt s, db.prepare(fmt::format(
                                    "SELECT kreplay_version, command, hostname, pid, replay_mode, "
                                    "app_pass_count, counter_names, environment, options, "
                                    "start_ns, start_unix_ns, end_ns, exit_code, launches, "
                                    "replayed, declined, not_selected, passes, declined_by_reason "
                                    "FROM run WHERE app_pass = {}",
                                    app_pass)));
    if (!s.step()) return db.failed("run");
    run.kreplay_version = s.text(0);
    run.command = string_list(s.text(1));
    run.hostname = s.text(2);
    run.pid = s.u64(3);
    run.replay_mode = s.text(4);
    run.app_pass = app_pass;
    run.app_pass_count = s.u32(5);
    run.counter_names = string_list(s.text(6));
    run.environment = string_map(s.text(7));
    run.options = string_map(s.text(8));
    run.start_ns = s.u64(9);
    run.start_unix_ns = s.i64(10);
    summary.end_ns = s.u64(11);
    summary.exit_code = static_cast<int>(s.i64(12));
    summary.launches = s.u64(13);
    summary.replayed = s.u64(14);
    summary.declined = s.u64(15);
    summary.not_selected = s.u64(16);
    summary.passes = s.u64(17);
    json reasons = json::parse(s.text(18), nullptr, false);
    if (reasons.is_object()) {
      for (auto& [k, v] : reasons.items()) {
        if (v.is_number_unsigned()) summary.declined_by_reason[k] = v.get<uint64_t>();
      }
    }
  }
  if (db.has_column("run", "counter_passes_lost")) {  // schema version 2 and later
    ASSIGN_OR_RETURN(SqlStmt s, db.prepare(fmt::format(
                                    "SELECT COALESCE(counter_passes_lost, 0) FROM run WHERE "
                                    "app_pass = {}",
                                    app_pass)));
    if (s.step()) summary.counter_passes_lost = s.u64(0);
  }
  if (db.has_column("run", "rank")) {  // many GPUs and ranks
    ASSIGN_OR_RETURN(SqlStmt s, db.prepare(fmt::format(
                                    "SELECT rank, local_rank, COALESCE(devices_used, '[]') FROM "
                                    "run WHERE app_pass = {}",
                                    app_pass)));
    if (s.step()) {
      run.rank = s.opt_i64(0);
      run.local_rank = s.opt_i64(1);
      json used = json::parse(s.text(2), nullptr, false);
      if (used.is_array()) {
        for (const auto& v : used) {
          if (v.is_number_unsigned()) summary.devices_used.push_back(v.get<uint32_t>());
        }
      }
    }
  }
  if (db.has_column("run", "snapshot_storage_releases")) {  // write-bounded snapshots
    ASSIGN_OR_RETURN(SqlStmt s, db.prepare(fmt::format(
                                    "SELECT COALESCE(snapshot_device_peak_bytes, 0), "
                                    "COALESCE(snapshot_host_peak_bytes, 0), "
                                    "COALESCE(snapshot_storage_releases, 0) FROM run WHERE "
                                    "app_pass = {}",
                                    app_pass)));
    if (s.step()) {
      summary.snapshot_device_peak_bytes = s.u64(0);
      summary.snapshot_host_peak_bytes = s.u64(1);
      summary.snapshot_storage_releases = s.u64(2);
    }
  }
  // The run's CSV had a _pass_services.csv when it configured a per-pass service (recorded in its
  // options; older databases: when it has service rows).
  output::OutputConfig cfg = config;
  if (auto it = run.options.find("pass_services"); it != run.options.end()) {
    cfg.pass_services = it->second == "true";
  } else {
    for (const char* t : {"pc_samples", "sass_metrics", "pm_samples"}) {
      if (!db.has_table(t)) continue;
      ASSIGN_OR_RETURN(
          SqlStmt s,
          db.prepare(fmt::format("SELECT 1 FROM {} WHERE app_pass = {} LIMIT 1", t, app_pass)));
      cfg.pass_services = cfg.pass_services || s.step();
    }
  }
  ASSIGN_OR_RETURN(auto writer, output::make_writer(cfg));
  RETURN_IF_ERROR(writer->begin(run));

  std::vector<TableSpec> specs = table_specs(app_pass);
  std::vector<Cursor> cursors;
  for (auto& spec : specs) {
    if (!spec.from.empty() && !db.has_table(spec.table)) continue;  // older than its table
    Cursor c;
    ASSIGN_OR_RETURN(
        c.stmt, db.prepare(fmt::format(
                    "SELECT {} AS k, {} FROM {} WHERE app_pass = "
                    "{} ORDER BY k",
                    has_seq ? "seq" : spec.fallback_key,
                    spec.from.empty() ? select_columns(db, spec.table, spec.columns) : spec.columns,
                    spec.from.empty() ? spec.table : spec.from, app_pass)));
    c.emit = spec.emit;
    c.table = spec.table;
    c.next();
    cursors.push_back(std::move(c));
  }
  while (true) {
    Cursor* best = nullptr;
    for (auto& c : cursors) {
      if (c.live && (best == nullptr || c.key() < best->key())) best = &c;
    }
    if (best == nullptr) break;
    RETURN_IF_ERROR(best->emit(best->stmt, *writer));
    best->next();
  }
  for (const auto& c : cursors) {
    if (!c.stmt.done_ok()) return db.failed(c.table);
  }
  RETURN_IF_ERROR(writer->finish(summary));
  for (auto& f : writer->output_files()) files->push_back(std::move(f));
  return Status::Ok();
}

}  // namespace

Result<ConvertResult> convert_database(const ConvertOptions& o) {
  std::error_code ec;
  if (!fs::is_regular_file(o.database, ec)) {
    return InvalidArgument(
        fmt::format("{}: no such file; give the results database of a run "
                    "(<host>/<pid>_results.db by default)",
                    o.database));
  }
  if (o.formats.empty()) {
    return InvalidArgument(
        "convert needs --to FORMAT: csv, json or perfetto (a comma list for several)");
  }
  for (const auto& f : o.formats) {
    if (f != "csv" && f != "json" && f != "perfetto") {
      return InvalidArgument(
          fmt::format("--to {}: convert writes csv, json or perfetto{}", f,
                      f == "sqlite" ? " (the database is the sqlite output)" : ""));
    }
  }
  ASSIGN_OR_RETURN(SqlDb db, SqlDb::open_readonly(o.database));
  if (!db.has_table("run") || !db.has_table("counters")) {
    return InvalidArgument(
        fmt::format("{} is not a kreplay results database; give a *_results.db that "
                    "kreplay wrote",
                    o.database));
  }
  {
    ASSIGN_OR_RETURN(SqlStmt s, db.prepare("SELECT value FROM metadata WHERE key = "
                                           "'schema_version'"));
    const std::string version = s.step() ? s.text(0) : "";
    const int number = std::atoi(version.c_str());
    if (number < kOldestSchemaVersion || number > output::kSchemaVersion) {
      return InvalidArgument(
          fmt::format("{} has results schema version '{}', this kreplay converts "
                      "versions {} to {}; use the kreplay that wrote it",
                      o.database, version, kOldestSchemaVersion, output::kSchemaVersion));
    }
  }
  ConvertResult result;
  const bool has_seq = db.has_column("counters", "seq");
  if (has_seq) {
    auto s = db.prepare("SELECT 1 FROM dispatches WHERE seq IS NULL LIMIT 1");
    if (s.ok() && s->step()) {
      return InvalidArgument(
          fmt::format("{} mixes rows with and without record order (seq); convert "
                      "the databases of each run on its own",
                      o.database));
    }
  } else {
    result.notes.push_back(fmt::format(
        "{} was written by a kreplay that did not record the order of its rows; the files "
        "hold the same records, in table order rather than necessarily the run's",
        o.database));
  }
  std::vector<uint32_t> passes;
  {
    ASSIGN_OR_RETURN(SqlStmt s, db.prepare("SELECT app_pass FROM run ORDER BY app_pass"));
    while (s.step()) passes.push_back(s.u32(0));
  }
  if (passes.empty())
    return InvalidArgument(fmt::format("{} has no run row; nothing to convert", o.database));

  fs::path db_path(o.database);
  std::string stem = o.stem;
  if (stem.empty()) {
    stem = db_path.filename().string();
    const std::string suffix = "_results.db";
    if (stem.size() > suffix.size() && stem.compare(stem.size() - suffix.size(), suffix.size(), suffix) == 0) {
      stem.resize(stem.size() - suffix.size());
    } else {
      stem = db_path.stem().string();
    }
  }
  const std::string directory =
      o.directory.empty() ? db_path.parent_path().string() : o.directory;
  for (uint32_t app_pass : passes) {
    output::OutputConfig config;
    config.directory = directory;
    if (passes.size() > 1) {
      config.directory = (fs::path(directory.empty() ? "." : directory) /
                          fmt::format("pass_{}", app_pass)).string();
    }
    config.file_stem = stem;
    config.formats = o.formats;
    config.kernel_trace = o.kernel_trace;
    config.gzip_trace = o.gzip;
    RETURN_IF_ERROR(convert_run(db, app_pass, has_seq, config, &result.files));
  }
  return result;
}

}  // namespace kreplay::report
