// The records the profiler tool hands to output writers. Plain data, no behaviour.
//
// Order of arrival, per logical dispatch: its kernel (once), then per executed pass its counter
// records and its pass record, then the dispatch record (after the last pass). Devices come before
// anything that names them. Timestamps are nanoseconds in the SDK's domain (CLOCK_MONOTONIC).
//
// `app_pass` is the application-replay pass (1..N) when kreplay runs the application once per
// counter group (--replay-mode application), and 0 otherwise. `replay_pass` is the kernel-replay
// pass inside one logical dispatch (0-based).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kreplay::output {

/// Version of every output format's schema; bump on any incompatible change.
inline constexpr int kSchemaVersion = 3;

struct RunInfo {
  std::string kreplay_version;             // "0.1.0"
  std::vector<std::string> command;        // application argv
  std::string hostname;
  uint64_t pid = 0;
  uint64_t start_ns = 0;                   // SDK clock
  int64_t start_unix_ns = 0;               // wall clock at start_ns, for humans
  std::string replay_mode;                 // "kernel", "application", "range"
  uint32_t app_pass = 0;                   // see header comment
  uint32_t app_pass_count = 0;             // N when app_pass > 0
  std::vector<std::string> counter_names;  // every counter the run collects, in request order
  std::map<std::string, std::string> environment;  // KREPLAY_*, CUDA_* and other relevant vars
  std::map<std::string, std::string> options;      // effective options, for the record
  std::optional<int64_t> rank;        // MPI/torchrun rank from the launcher's environment
  std::optional<int64_t> local_rank;  // rank within the node (LOCAL_RANK, ...)
};

struct DeviceRecord {
  uint64_t agent_id = 0;
  std::string type;  // "host" or "cuda"
  uint32_t device_index = 0;
  std::string name;
  std::string chip;
  std::string uuid;
  uint64_t memory_bytes = 0;
  uint32_t multiprocessor_count = 0;
  uint32_t cc_major = 0, cc_minor = 0;
};

struct KernelRecord {
  uint64_t kernel_id = 0;
  uint64_t agent_id = 0;
  uint64_t code_object_id = 0;
  std::string mangled_name;
  std::string demangled_name;
};

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

struct DispatchRecord {
  uint64_t dispatch_id = 0;
  uint64_t agent_id = 0;
  uint64_t stream_id = 0;
  uint64_t kernel_id = 0;
  uint64_t correlation_id = 0;
  uint64_t thread_id = 0;
  Dim3 grid, block, cluster;
  uint32_t dynamic_shared_bytes = 0;
  uint32_t static_shared_bytes = 0;
  uint32_t registers = 0;
  std::string outcome;  // "replayed", "declined", "not_requested"
  std::string reason;   // "" or a decline reason: "snapshot_too_large", ...
  uint64_t passes_requested = 0;  // 0 = indefinite
  uint64_t passes_executed = 0;
  uint64_t bytes_snapshotted = 0;
  uint64_t bytes_restored = 0;
  uint64_t snapshot_ns = 0;   // duration
  uint64_t restore_ns = 0;    // duration, summed over restores
  uint64_t start_ns = 0;      // first pass start
  uint64_t end_ns = 0;        // last pass end
  uint32_t app_pass = 0;
  uint64_t graph_id = 0;      // the CUDA graph that launched it (0: none)
  uint64_t graph_node = 0;    // a kernel node run node by node: its place in the graph's order
  bool divergence_checked = false;  // --check-divergence compared every pass's memory
  uint64_t diverged_passes = 0;     // passes whose memory differed from the first pass's
  /// Bytes of the chunks the application's own pass changed, as the snapshot's digests found
  /// them (0 when nothing was measured); next to bytes_snapshotted it says how close the save
  /// came to the writes. A range's is booked on its first kept launch, as bytes_snapshotted is.
  uint64_t bytes_changed = 0;
  /// How the window saved memory: "full" (every tracked region of the scope), "write_set" (the
  /// chunks the launch was predicted to write) or "" (nothing was saved).
  std::string snapshot_mode;
};

struct PassRecord {
  uint64_t dispatch_id = 0;
  uint64_t replay_pass = 0;
  uint64_t agent_id = 0;
  uint64_t stream_id = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t app_pass = 0;
  /// Counters of this pass: "" none were asked for; "ok" collected (a multi-pass set delivers its
  /// values with its last pass); "lost" CUPTI failed and nothing could be read.
  std::string counter_status;
};

struct CounterRecord {
  uint64_t dispatch_id = 0;
  uint64_t replay_pass = 0;
  uint64_t agent_id = 0;
  uint64_t kernel_id = 0;
  std::string name;
  double value = 0.0;
  uint32_t app_pass = 0;
};

/// One value of a per-pass service (include/kreplay/services.h) on one pass.
struct ServiceSampleRecord {
  std::string service;  // "pc_sampling", "sass_metrics" or "pm_sampling"
  uint64_t dispatch_id = 0;
  uint64_t replay_pass = 0;
  uint64_t agent_id = 0;
  uint64_t kernel_id = 0;
  std::string function;  // mangled name of the function holding the instruction
  uint64_t pc_offset = 0;
  std::string instruction;  // "" for PM sampling
  std::string source_file;
  uint32_t source_line = 0;
  std::string name;           // stall reason or metric
  uint64_t timestamp_ns = 0;  // PM sampling: the interval's end
  double value = 0.0;
  uint32_t app_pass = 0;
};

struct AllocationRecord {
  uint64_t agent_id = 0;
  std::string operation;  // "alloc" or "free"
  std::string kind;       // "device", "pool", "virtual", "managed", "host_mapped", "module_global"
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t timestamp_ns = 0;
  uint32_t app_pass = 0;
};

/// A snapshot or restore interval inside a replay window (for timelines).
struct ReplayPhaseRecord {
  uint64_t dispatch_id = 0;
  uint64_t agent_id = 0;
  uint64_t stream_id = 0;
  std::string phase;        // "snapshot" or "restore"
  uint64_t after_pass = 0;  // for "restore": the pass it follows
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t bytes = 0;
  uint32_t app_pass = 0;
};

struct RunSummary {
  uint64_t end_ns = 0;
  int exit_code = 0;         // application's exit status (128+signal when killed)
  uint64_t launches = 0;     // logical launches seen
  uint64_t replayed = 0;
  uint64_t declined = 0;
  uint64_t not_selected = 0;  // filtered out at CONFIG
  uint64_t passes = 0;        // executed passes, all dispatches
  std::map<std::string, uint64_t> declined_by_reason;
  uint64_t counter_passes_lost = 0;  // passes whose counters could not be read
  std::vector<uint32_t> devices_used;  // device_index of every device that ran a launch, sorted
  /// Snapshot storage kreplay held, summed over the devices' peaks (kreplay_query_replay_storage):
  /// the most device and pinned host memory held at once, and how often it was given back to the
  /// application. All 0 when nothing was saved, when the SDK cannot say, or when the run ended on
  /// a signal (the tool does not ask then).
  uint64_t snapshot_device_peak_bytes = 0;
  uint64_t snapshot_host_peak_bytes = 0;
  uint64_t snapshot_storage_releases = 0;
};

}  // namespace kreplay::output
