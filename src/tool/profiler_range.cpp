// The profiler tool under range replay: pass counts, launches joining ranges, passes, outcomes.
#include <fmt/format.h>
#include <unistd.h>

#include <cstring>

#include "common/logging.hpp"
#include "common/util.hpp"
#include "config/output_path.hpp"
#include "tool/profiler.hpp"
#include "tool/progress.hpp"

namespace kreplay::tool {

namespace {
uint64_t range_one_pass_cb(kreplay_range_info_t, kreplay_user_data_t) {
  return 1;
}
}  // namespace

uint64_t Profiler::range_pass_count(const kreplay_range_info_t& info) {
  std::lock_guard lock(mu_);
  const AgentPlan* plan = plan_for(info.agent_id.handle);
  return plan ? std::max<uint64_t>(1, plan->passes.size()) : 1;
}

void Profiler::on_range_config_enter(kreplay_callback_tracing_range_replay_data_t& p) {
  std::lock_guard lock(mu_);
  const AgentPlan* plan = plan_for(p.range.agent_id.handle);
  // Every range gets a pass count, even 1: a range of one pass runs without a snapshot, but its
  // launches still share one counter session. A range that opens where the markers select nothing
  // (--profile-from-start off before cudaProfilerStart, outside --nvtx-include) gets 1: it closes
  // where the selection changes (tool/markers.hpp), so none of its launches can be selected, and
  // it needs no snapshot.
  if (plan) {
    const bool outside =
        markers && markers->verdict(thread_id()) != config::KernelFilter::Markers::kSelected;
    p.replay_pass_count = outside ? &range_one_pass_cb : &range_pass_count_cb;
  }
  // An NVTX selection's verdict is the calling thread's: another thread's launch may sit on the
  // other side of it, so it closes the range rather than join a range whose pass count was chosen
  // for this thread.
  if (markers && markers->per_thread()) p.thread_bound = 1;
}

void Profiler::on_range_launch(kreplay_callback_tracing_range_replay_data_t& p,
                               uint64_t correlation_id) {
  const auto& info = p.dispatch_info;
  tl_range_launch_id = info.dispatch_id;
  launches_.fetch_add(1, std::memory_order_relaxed);
  bool selected = select_launch(info);
  p.launch_selected = selected ? 1 : 0;
  std::lock_guard lock(mu_);
  if (!selected) {
    not_selected_.fetch_add(1, std::memory_order_relaxed);
    if (!config.output.kernel_trace) return;
  }
  Dispatch& d = dispatches_[info.dispatch_id];
  d.selected = selected;
  d.replayed = true;  // in a range: completes when the range closes
  d.plan = plan_for(info.agent_id.handle);
  auto& r = d.record;
  fill_launch(r, info, correlation_id);
  r.graph_id = p.graph_id;
  r.graph_node = p.graph_node;
  write_kernel_locked(info);
}

void Profiler::on_range_pass(const kreplay_callback_tracing_range_replay_data_t& p, bool enter) {
  tl_pass = nullptr;
  if (!enter) return;
  std::lock_guard lock(mu_);
  const AgentPlan* plan = plan_for(p.range.agent_id.handle);
  if (plan == nullptr || p.current_pass >= plan->passes.size()) return;
  tl_pass = &plan->passes[p.current_pass];
  set_services_for_pass(*tl_pass, p.replay_start_context, p.replay_stop_context);
}

void Profiler::on_range_config_exit(const kreplay_callback_tracing_range_replay_data_t& p) {
  const auto* o = p.outcome;
  if (o == nullptr) return;
  std::lock_guard lock(mu_);
  // The tally counts the selected launches as replayed or declined (the others are counted as not
  // selected when they join the range); passes count every execution of every launch, as in
  // kernel replay.
  uint64_t selected = 0;
  for (uint64_t i = 0; i < o->launches; ++i) {
    auto it = dispatches_.find(o->dispatch_ids[i]);
    if (it != dispatches_.end() && it->second.selected) ++selected;
  }
  if (o->outcome == KREPLAY_REPLAY_OUTCOME_REPLAYED) {
    replayed_.fetch_add(selected, std::memory_order_relaxed);
    passes_.fetch_add(o->launches * o->passes_executed, std::memory_order_relaxed);
  } else {
    passes_.fetch_add(o->launches, std::memory_order_relaxed);
    if (o->outcome == KREPLAY_REPLAY_OUTCOME_DECLINED && selected > 0) {
      declined_.fetch_add(selected, std::memory_order_relaxed);
      declined_by_reason_[reason_name(o->reason)] += selected;
    }
  }
  range_tally_.add(*o);
  const bool measured =
      o->size >= KREPLAY_STRUCT_SIZE(kreplay_range_outcome_record_t, snapshot_mode);
  snapshot_tally_.add(o->bytes_snapshotted, measured ? o->bytes_changed : 0,
                      measured ? snapshot_mode_name(o->snapshot_mode) : "");
  bool phases_booked = false;
  for (uint64_t i = 0; i < o->launches; ++i) {
    auto it = dispatches_.find(o->dispatch_ids[i]);
    if (it == dispatches_.end()) continue;
    auto& r = it->second.record;
    r.outcome = outcome_name(o->outcome);
    r.reason = reason_name(o->reason);
    r.passes_requested = o->passes_requested;
    r.passes_executed = o->passes_executed;
    // The range's snapshot and restores are shared by its launches: they are booked on the first
    // launch the outputs keep.
    if (!phases_booked) {
      phases_booked = true;
      r.bytes_snapshotted = o->bytes_snapshotted;
      r.bytes_restored = o->bytes_restored;
      r.snapshot_ns = o->snapshot_ns;
      r.restore_ns = o->restore_ns;
      if (measured) {
        r.bytes_changed = o->bytes_changed;
        r.snapshot_mode = snapshot_mode_name(o->snapshot_mode);
      }
      write_phases_locked(r, o->intervals, o->interval_count);
    }
    it->second.record_ready = true;
    finish_dispatch_locked(o->dispatch_ids[i]);
  }
}

void Profiler::RangeTally::add(const kreplay_range_outcome_record_t& o) {
  ++ranges;
  launches += o.launches;
  largest = std::max(largest, o.launches);
  ++by_size[o.launches <= 1 ? 0 : o.launches < 8 ? 1 : o.launches < 64 ? 2 : 3];
  if (o.size >= KREPLAY_STRUCT_SIZE(kreplay_range_outcome_record_t, memory_calls)) {
    if (o.memory_calls > 0) ++memory_ranges;
    memory_calls += o.memory_calls;
  }
  if (o.size >= KREPLAY_STRUCT_SIZE(kreplay_range_outcome_record_t, streams)) {
    if (o.synchronizations_spanned > 0) ++spanned_ranges;
    syncs_spanned += o.synchronizations_spanned;
    if (o.streams > 1) ++multi_stream;
  }
  if (o.size >= KREPLAY_STRUCT_SIZE(kreplay_range_outcome_record_t, close_call) && o.close_call &&
      *o.close_call)
    ++closed_by_call[o.close_call];
  if (const char* why = kreplay_get_range_close_reason_name(o.close_reason); why && *why)
    ++closed_by[why];
}

std::string Profiler::RangeTally::line() const {
  if (ranges == 0) return {};
  std::string out = fmt::format(
      "{} ranges held {} launches ({:.1f} per range, largest {}; 1 launch: {}, 2-7: {}, 8-63: {}, "
      "64+: {})",
      ranges, launches, static_cast<double>(launches) / static_cast<double>(ranges), largest,
      by_size[0], by_size[1], by_size[2], by_size[3]);
  if (spanned_ranges > 0)
    out +=
        fmt::format("; {} stayed open across {} synchronizations", spanned_ranges, syncs_spanned);
  if (multi_stream > 0) out += fmt::format("; {} spanned streams ordered by events", multi_stream);
  if (memory_calls > 0) {
    out += fmt::format("; {} memory calls stayed inside {} range{} (memsets, copies, allocations)",
                       memory_calls, memory_ranges, memory_ranges == 1 ? "" : "s");
  }
  std::string closed;
  for (const auto& [why, n] : closed_by)
    closed += fmt::format("{}{} {}", closed.empty() ? "" : ", ", why, n);
  if (!closed.empty()) out += "; closed by " + closed;
  // The calls that closed most ranges, most first (ties by name).
  std::vector<std::pair<std::string, uint64_t>> calls(closed_by_call.begin(), closed_by_call.end());
  std::stable_sort(calls.begin(), calls.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string top;
  for (size_t i = 0; i < calls.size() && i < 4; ++i)
    top += fmt::format("{}{} {}", top.empty() ? "" : ", ", calls[i].first, calls[i].second);
  if (calls.size() > 4) top += fmt::format(", {} other calls", calls.size() - 4);
  if (!top.empty()) out += " (at " + top + ")";
  return out;
}

}  // namespace kreplay::tool
