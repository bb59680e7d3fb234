// Dispatches in flight: their counter and pass records arrive before the dispatch record, and
// the CSV, perfetto and summary writers need them together. Only in-flight dispatches are kept.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "output/records.hpp"

namespace kreplay::output {

struct PendingDispatch {
  std::vector<CounterRecord> counters;  ///< arrival order
  std::vector<PassRecord> passes;       ///< arrival order
};

class PendingDispatches {
 public:
  PendingDispatch& get(uint32_t app_pass, uint64_t dispatch_id);
  /// Keep a counter or pass record with its dispatch until the dispatch record comes.
  void add(const CounterRecord& r) { get(r.app_pass, r.dispatch_id).counters.push_back(r); }
  void add(const PassRecord& r) { get(r.app_pass, r.dispatch_id).passes.push_back(r); }
  /// Remove and return the dispatch's records (empty when none arrived).
  PendingDispatch take(uint32_t app_pass, uint64_t dispatch_id);
  /// Remove every dispatch whose dispatch record never came (the run ended mid-dispatch) and
  /// return it with a DispatchRecord rebuilt from its records: outcome "incomplete", ids, start
  /// and end from its passes, passes_executed = pass records seen. Ordered by (app_pass, id).
  std::vector<std::pair<DispatchRecord, PendingDispatch>> take_incomplete();
  size_t size() const { return map_.size(); }

 private:
  std::map<std::pair<uint32_t, uint64_t>, PendingDispatch> map_;
};

/// Per counter name, the record of the lowest replay_pass that collected it (first arrival on a
/// tie). This is the value a one-row-per-dispatch view shows.
std::map<std::string, const CounterRecord*> first_pass_values(const PendingDispatch& pending);

/// The dispatch's kernel time: the mean duration of its passes, or end_ns - start_ns when no
/// pass record came.
double dispatch_duration_ns(const DispatchRecord& dispatch, const PendingDispatch& pending);

/// How much the durations of a dispatch's passes differ: 100 * (max - min) / min over its passes
/// with a positive duration, or NaN with fewer than two (issue: a replay is trusted when every
/// pass ran the same work; kPassSpreadFlagPct marks those that did not look like it).
double pass_spread_pct(const PendingDispatch& pending);
inline constexpr double kPassSpreadFlagPct = 10.0;

/// Whether a counter counts events (equal on every pass of one launch that collects it), judged
/// by its name: durations, cycles, rates, ratios and per-unit averages or maxima are not.
bool is_count_counter(const std::string& name);

/// The pass record for @p replay_pass, or nullptr.
const PassRecord* find_pass(const PendingDispatch& pending, uint64_t replay_pass);

}  // namespace kreplay::output
