// The summary writer: at finish(), a per-kernel table on a stream (stderr by default), every line
// tagged "==KREPLAY==".
//
// One row per kernel, sorted by total time descending (then by name): Time(%), Total, Avg, Min,
// Max, Launches, Passes, Spread (the largest spread of one launch's pass durations, 100 * (max -
// min) / min, "-" when no launch had two timed passes), one column per counter (its average per
// launch), and the demangled name (cut at kNameWidth characters with "..."). Then, when there are
// any, one line each for launches whose passes differ by more than kPassSpreadFlagPct, counts
// (is_count_counter) that differ between the passes of one launch, and launches whose passes
// left different memory (--check-divergence); then, when any window saved memory, the snapshots
// line (SnapshotTally: bytes saved and found changed, windows per snapshot mode, and the peak
// storage from RunSummary); then a totals line from RunSummary.
//
// A launch's time is the mean duration of its passes (end - start when it has no pass records);
// a launch's counter value is the value of the lowest replay_pass that collected it, as in the
// other formats' one-row-per-dispatch views. Memory: O(kernels x counters) plus the dispatches in
// flight.
//
// With per-pass services, each kernel that has PC samples or SASS counts then gets one line of
// its top kTopInstructions instructions by samples and by SASS count (smsp__sass_inst_executed,
// else the first SASS metric seen), with their source lines (memory: O(instructions)).
#pragma once

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "output/pending.hpp"
#include "output/text.hpp"
#include "output/writer.hpp"

namespace kreplay::output {

/// What the replay windows of a run saved: the totals of the snapshots line, which the summary
/// writer (from dispatch records) and the profiler tool's exit tally (from outcomes, a range
/// counted once) print alike.
struct SnapshotTally {
  uint64_t bytes_saved = 0;    ///< sum of bytes_snapshotted
  uint64_t bytes_changed = 0;  ///< sum of bytes_changed
  uint64_t full = 0;           ///< windows whose snapshot_mode was "full"
  uint64_t write_set = 0;      ///< ... "write_set"

  /// One window (a dispatch record's, or a range's booked on its first launch).
  void add(uint64_t snapshotted, uint64_t changed, std::string_view mode);
  /// "1.2 GiB saved for 600.0 MiB changed (412 write-set, 3 full)", then, when @p s has any,
  /// "; peak storage 256.0 MiB device, 0 B host" and ", given back to the application 2 times"; ""
  /// when nothing was saved. The window counts are left out when no window named its mode.
  std::string line(const RunSummary& s) const;
};

class SummaryWriter final : public Writer {
 public:
  static constexpr size_t kNameWidth = 60;
  static constexpr size_t kTopInstructions = 3;

  /// @p stream is not owned and not closed.
  explicit SummaryWriter(FILE* stream) : stream_(stream) {}

  Status begin(const RunInfo& run) override;
  Status device(const DeviceRecord& record) override;
  Status kernel(const KernelRecord& record) override;
  Status dispatch(const DispatchRecord& record) override;
  Status pass(const PassRecord& record) override;
  Status counter(const CounterRecord& record) override;
  Status allocation(const AllocationRecord& record) override;
  Status replay_phase(const ReplayPhaseRecord& record) override;
  Status service_sample(const ServiceSampleRecord& record) override;
  Status flush() override;
  Status finish(const RunSummary& summary) override;

  /// The table finish() prints (exposed for tests).
  std::string render(const RunSummary& summary) const;

 private:
  struct Average {
    double sum = 0;
    uint64_t count = 0;
  };
  struct KernelStats {
    uint64_t launches = 0;
    uint64_t passes = 0;
    double total_ns = 0, min_ns = 0, max_ns = 0;
    std::map<std::string, Average> counters;
    uint64_t spread_launches = 0;  // launches with two or more timed passes
    uint64_t spread_flagged = 0;   // ... whose spread exceeds kPassSpreadFlagPct
    double max_spread_pct = -1;    // < 0: none
    uint64_t diverged = 0;         // launches with diverged passes
    struct Disagreement {
      uint64_t launches = 0;
      double max_pct = 0;
    };
    std::map<std::string, Disagreement> counts_differ;  // by counter name
  };
  /// The lines after the table: uneven passes, counts that differ, divergence.
  std::string render_trust() const;
  void account(const DispatchRecord& dispatch, const PendingDispatch& pending);
  struct Instruction {
    std::string text;  // "main.cpp:54 LDG.E.32"
    double samples = 0, sass = 0;
  };
  /// The top-instruction lines of render().
  std::string render_instructions() const;

  FILE* stream_;
  bool finished_ = false;
  std::vector<std::string> counter_order_;
  std::set<std::string> counter_set_;
  KernelNames kernel_names_;
  std::map<uint64_t, KernelStats> stats_;  // by kernel_id
  PendingDispatches pending_;
  std::map<uint64_t, std::map<std::pair<std::string, uint64_t>, Instruction>> instructions_;
  std::string sass_metric_;  // the SASS metric ranked
  SnapshotTally snapshots_;
};

}  // namespace kreplay::output
