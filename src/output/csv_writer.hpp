// The CSV writer. Files (LF line ends, RFC 4180 quoting, header row always present):
//
//   <stem>_counter_collection.csv       rocprofv3's long layout adapted to CUDA: one row per
//       counter value per pass, plus Replay_Pass and App_Pass. Columns: kLongColumns.
//   <stem>_counter_collection_wide.csv  one row per dispatch, one column per counter (kWideColumns,
//       then the counters). A counter collected on several passes shows the value of the lowest
//       replay_pass that collected it. Counter columns: RunInfo::counter_names, then names first
//       seen in records (appended; at finish the header is rewritten and earlier rows padded).
//   <stem>_kernel_trace.csv             (only when OutputConfig::kernel_trace) one row per executed
//       pass (kTraceColumns); a dispatch without pass records gets one row with Replay_Pass 0.
//   <stem>_pass_services.csv            (only when OutputConfig::pass_services) one row per value
//       of a per-pass service (PC sampling, SASS metrics, PM sampling), written as it arrives
//       (kServiceColumns): the instruction with its source line, the stall reason or metric
//       (Name), Timestamp_Ns (PM sampling) and Value.
//
// CUDA units: Grid_Size* count blocks (rocprofv3 counts work-items), Block_Size* count threads,
// Cluster_Size* count blocks, Registers_Per_Thread, shared memory sizes in bytes, timestamps in
// ns (SDK clock). Kernel_Name is the demangled name (mangled when demangling failed).
//
// Rows are written when the dispatch record arrives: its counters and passes come before it and
// are held until then (only dispatches in flight). Dispatches still in flight at finish() are
// written with Outcome "incomplete".
#pragma once

#include <array>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "output/output_file.hpp"
#include "output/pending.hpp"
#include "output/text.hpp"
#include "output/writer.hpp"

namespace kreplay::output {

class CsvWriter final : public Writer {
 public:
  static constexpr std::array<const char*, 25> kLongColumns = {"Correlation_Id",
                                                               "Dispatch_Id",
                                                               "Agent_Id",
                                                               "Stream_Id",
                                                               "Process_Id",
                                                               "Thread_Id",
                                                               "Grid_Size",
                                                               "Grid_Size_X",
                                                               "Grid_Size_Y",
                                                               "Grid_Size_Z",
                                                               "Kernel_Id",
                                                               "Kernel_Name",
                                                               "Block_Size",
                                                               "Block_Size_X",
                                                               "Block_Size_Y",
                                                               "Block_Size_Z",
                                                               "Static_Shared_Memory_Size",
                                                               "Dynamic_Shared_Memory_Size",
                                                               "Registers_Per_Thread",
                                                               "Counter_Name",
                                                               "Counter_Value",
                                                               "Start_Timestamp",
                                                               "End_Timestamp",
                                                               "Replay_Pass",
                                                               "App_Pass"};
  static constexpr std::array<const char*, 39> kWideColumns = {
      "Correlation_Id",
      "Dispatch_Id",
      "Agent_Id",
      "Stream_Id",
      "Process_Id",
      "Thread_Id",
      "Kernel_Id",
      "Kernel_Name",
      "Grid_Size_X",
      "Grid_Size_Y",
      "Grid_Size_Z",
      "Block_Size_X",
      "Block_Size_Y",
      "Block_Size_Z",
      "Cluster_Size_X",
      "Cluster_Size_Y",
      "Cluster_Size_Z",
      "Static_Shared_Memory_Size",
      "Dynamic_Shared_Memory_Size",
      "Registers_Per_Thread",
      "Outcome",
      "Reason",
      "Passes_Requested",
      "Passes_Executed",
      "Bytes_Snapshotted",
      "Bytes_Restored",
      "Snapshot_Ns",
      "Restore_Ns",
      "Start_Timestamp",
      "End_Timestamp",
      "Duration_Ns",  // mean pass duration; End - Start when the dispatch has no pass records
      "App_Pass",
      "Graph_Id",             // the CUDA graph that launched it (0: none)
      "Graph_Node",           // a kernel node's place in its graph's order
      "Counter_Passes_Lost",  // passes whose counters CUPTI could not deliver
      "Pass_Spread_Pct",      // 100 * (max - min) / min of its pass durations; "" with < 2
      "Diverged_Passes",      // --check-divergence: passes whose memory differed; "" unchecked
      "Bytes_Changed",        // bytes of the chunks its own pass changed (0: not measured)
      "Snapshot_Mode"};       // full | write_set | "" (nothing saved)
  static constexpr std::array<const char*, 28> kTraceColumns = {"Kind",
                                                                "Agent_Id",
                                                                "Stream_Id",
                                                                "Process_Id",
                                                                "Thread_Id",
                                                                "Dispatch_Id",
                                                                "Kernel_Id",
                                                                "Kernel_Name",
                                                                "Correlation_Id",
                                                                "Start_Timestamp",
                                                                "End_Timestamp",
                                                                "Replay_Pass",
                                                                "Passes_Executed",
                                                                "Outcome",
                                                                "Static_Shared_Memory_Size",
                                                                "Dynamic_Shared_Memory_Size",
                                                                "Registers_Per_Thread",
                                                                "Block_Size_X",
                                                                "Block_Size_Y",
                                                                "Block_Size_Z",
                                                                "Grid_Size_X",
                                                                "Grid_Size_Y",
                                                                "Grid_Size_Z",
                                                                "Cluster_Size_X",
                                                                "Cluster_Size_Y",
                                                                "Cluster_Size_Z",
                                                                "App_Pass",
                                                                "Counter_Status"};

  /// Create the files; @p trace_path "" means no kernel trace file.
  static constexpr std::array<const char*, 14> kServiceColumns = {
      "Service",  "Dispatch_Id",  "Replay_Pass", "Agent_Id",    "Kernel_Id",
      "Function", "Pc_Offset",    "Instruction", "Source_File", "Source_Line",
      "Name",     "Timestamp_Ns", "Value",       "App_Pass"};

  static Result<std::unique_ptr<CsvWriter>> create(const std::string& long_path,
                                                   const std::string& wide_path,
                                                   const std::string& trace_path,
                                                   const std::string& services_path = "");

  Status begin(const RunInfo& run) override;
  Status device(const DeviceRecord& record) override;
  Status kernel(const KernelRecord& record) override;
  Status dispatch(const DispatchRecord& record) override;
  Status pass(const PassRecord& record) override;
  Status counter(const CounterRecord& record) override;
  Status service_sample(const ServiceSampleRecord& record) override;
  Status allocation(const AllocationRecord& record) override;
  Status replay_phase(const ReplayPhaseRecord& record) override;
  Status flush() override;
  Status finish(const RunSummary& summary) override;
  std::vector<std::string> output_files() const override;

 private:
  CsvWriter() = default;
  Status write_headers();
  Status write_rows(const DispatchRecord& dispatch, const PendingDispatch& pending);
  Status rewrite_wide_header();

  std::unique_ptr<OutputFile> long_, wide_, trace_, services_;
  PendingDispatches pending_;
  KernelNames kernel_names_;
  uint64_t pid_ = 0;
  std::vector<std::string> counters_;  // wide counter columns, in order
  std::set<std::string> counter_set_;
  size_t header_counters_ = 0;  // counter columns in the wide header as written
  bool headers_written_ = false;
  bool finished_ = false;
};

/// Rewrite the CSV file @p path with @p header (a full line, newline included) in place of its
/// first record, padding every later record with empty fields up to @p fields fields.
Status rewrite_csv_header(const std::string& path, const std::string& header, size_t fields);

}  // namespace kreplay::output
