// The Perfetto writer: Chrome trace JSON (<stem>_trace.json, or .json.gz with gzip) that
// ui.perfetto.dev opens.
//
// Layout: a process per device ("GPU <index>: <name>"), a thread track per stream of it
// ("Stream <id>"), named with "ph":"M" metadata. On a stream's track: one "X" slice per executed
// pass, named by the kernel (args: dispatch_id, replay_pass, correlation_id, outcome, reason,
// grid/block/cluster [x,y,z], when the window saved memory bytes_snapshotted, bytes_changed and
// snapshot_mode, and "counters" collected on that pass), and "snapshot"/"restore"
// slices of the replay window (cat "replay"). A per-device counter track "Tracked memory (bytes)"
// follows allocations and frees. PM samples (per-pass services) are counter tracks "PM <metric>"
// of their device, one series per kernel (named by the kernel), a point at the end of each
// sample's interval. ts/dur are microseconds of the SDK clock with three decimals.
// otherData carries schema_version and the run information.
//
// Streaming: pass slices are written when the dispatch record arrives (it names the kernel);
// only dispatches in flight are held. flush() leaves an uncompressed trace complete (its closing
// brackets are written and overwritten by the next event); a gzip trace is sync-flushed.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "output/output_file.hpp"
#include "output/pending.hpp"
#include "output/text.hpp"
#include "output/writer.hpp"

namespace kreplay::output {

class PerfettoWriter final : public Writer {
 public:
  static Result<std::unique_ptr<PerfettoWriter>> create(const std::string& path, bool gzip);
  ~PerfettoWriter() override;  ///< without finish(): finishes, so the trace is complete

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
  PerfettoWriter() = default;
  Status write_head(const std::string& other_data);
  Status event(const std::string& json);
  Result<int> pid_for(uint64_t agent_id);
  Result<int> tid_for(uint64_t agent_id, uint64_t stream_id);
  Status write_passes(const DispatchRecord& dispatch, const PendingDispatch& pending);

  std::unique_ptr<OutputFile> out_;
  bool begun_ = false;
  bool finished_ = false;
  bool any_event_ = false;
  std::map<uint64_t, int> pids_;                       // agent -> pid
  std::map<std::pair<uint64_t, uint64_t>, int> tids_;  // (agent, stream) -> tid
  std::map<uint64_t, int> streams_per_agent_;
  KernelNames kernel_names_;
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> live_;  // (agent, address) -> size
  std::map<uint64_t, uint64_t> tracked_bytes_;              // agent -> live tracked bytes
  PendingDispatches pending_;
};

}  // namespace kreplay::output
