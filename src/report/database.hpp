// Reading a results database (share/kreplay/schema.sql) for `kreplay report`: runs, devices,
// kernels, launches with their counters (the value of the lowest replay_pass, as the view
// dispatch_counters shows it), passes and replay phases. Read-only; works on databases of every
// kreplay of the same schema version (columns added later, such as seq, are optional).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.hpp"

namespace kreplay::report {

/// The oldest results schema version report and convert read. Later versions only add columns
/// (2: graph ids on dispatches, a counter status per pass), which report does not need and
/// convert reads where they exist, so every version from this one to output::kSchemaVersion is
/// read.
inline constexpr int kOldestSchemaVersion = 1;

/// In a database merged by rank, launch (and kernel, device, stream) ids are rank * this + id:
/// launch 7 of rank 2 is 2000000007 (kreplay report --launch 2000000007).
inline constexpr uint64_t kRankIdStride = 1000000000;

struct DbRun {
  uint32_t app_pass = 0;
  uint32_t app_pass_count = 0;
  std::string kreplay_version, hostname, replay_mode;
  std::string command_json, counter_names_json, options_json;
  uint64_t pid = 0;
  int64_t start_ns = 0, start_unix_ns = 0;
  std::optional<int64_t> end_ns, exit_code, launches, replayed, declined, not_selected, passes;
  std::optional<int64_t> rank;  ///< a database merged by rank (Database::by_rank): the run's rank
};

struct DbDevice {
  uint32_t app_pass = 0;
  uint64_t agent_id = 0;
  std::string type, name, chip;
  uint32_t device_index = 0, sm_count = 0, cc_major = 0, cc_minor = 0;
  uint64_t memory_bytes = 0;
};

struct DbLaunch {
  uint32_t app_pass = 0;
  uint64_t dispatch_id = 0, agent_id = 0, stream_id = 0, kernel_id = 0;
  uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, cluster[3] = {1, 1, 1};
  uint32_t static_shared = 0, dynamic_shared = 0, registers = 0;
  std::string outcome, reason;
  uint64_t passes_requested = 0, passes_executed = 0;
  uint64_t bytes_snapshotted = 0, bytes_restored = 0, snapshot_ns = 0, restore_ns = 0;
  int64_t start_ns = 0, end_ns = 0;
  /// Mean pass duration, or end_ns - start_ns without pass rows (the view's duration_ns).
  double duration_ns = 0;
  std::string kernel_name;  ///< demangled, else mangled, else "kernel <id>"
  std::string mangled_name;
  /// (index into Database::counter_names, value) for each counter with a value; NaN (NULL) values
  /// are left out.
  std::vector<std::pair<uint32_t, double>> counters;
  /// Write-bounded snapshots (0 and "" in databases older than them): bytes of the chunks its own
  /// pass changed, and "full", "write_set" or "" (nothing saved).
  uint64_t bytes_changed = 0;
  std::string snapshot_mode;
};

struct DbPass {
  uint32_t app_pass = 0;
  uint64_t dispatch_id = 0, replay_pass = 0, stream_id = 0;
  int64_t start_ns = 0, end_ns = 0;
};

struct DbPhase {
  uint32_t app_pass = 0;
  uint64_t dispatch_id = 0, after_pass = 0, bytes = 0, stream_id = 0;
  std::string phase;
  int64_t start_ns = 0, end_ns = 0;
};

struct DbSourceCounter {  ///< a row of the future source_counters table
  uint32_t app_pass = 0;
  uint64_t kernel_id = 0;
  std::string location;
  double inst_executed = 0;
};

struct Database {
  std::string path;
  int schema_version = 0;
  std::vector<DbRun> runs;
  std::vector<DbDevice> devices;
  std::vector<DbLaunch> launches;  ///< by (app_pass, dispatch_id)
  std::vector<std::string> counter_names;  ///< every name in the counters table, sorted
  bool has_seq = false;  ///< the seq column exists (written by this kreplay)
  /// Merged by rank (kreplay merge): runs has one run per rank, and the ids of devices, kernels,
  /// launches and streams are rank * kRankIdStride + id, so every rank's launches are their own.
  bool by_rank = false;
  bool has_source_counters = false;  ///< a source_counters table with rows

  /// Open @p path read-only and read runs, devices and launches with their counters. Errors: no
  /// such file, not a kreplay database, another schema version (each says what to do).
  static Result<Database> open(const std::string& path);

  /// Passes and replay phases (for the timeline), of the first @p max_launches launches that
  /// have them.
  Status read_timeline(size_t max_launches, std::vector<DbPass>* passes,
                       std::vector<DbPhase>* phases) const;
  /// Rows of source_counters, when has_source_counters.
  Result<std::vector<DbSourceCounter>> read_source_counters() const;

  const DbDevice* device(uint32_t app_pass, uint64_t agent_id) const;
};

}  // namespace kreplay::report
