// Graph launches profiled node by node (DESIGN.md §2c, --graph-profiling node).
//
// A graph launch cannot be split while the application's own call runs: the driver executes the
// whole graph. So the engine lets it run, unobserved, with the graph's entry state saved; then it
// restores that state and runs the graph's nodes again, one at a time, in an order the graph
// allows (Launch::decompose()): every kernel node is a launch kreplay submits itself and goes
// through the ordinary path -- enter(), its first submission as pass 0, exit() -- so it is a
// dispatch of its own (own id, CONFIG, passes, counters, restores) in kernel replay, and joins
// ranges in range replay; copy and memset nodes are submitted in their place. What the
// application sees at the end is what the nodes run one after another produced, which is a valid
// execution of the graph. The call returns once every node completed.
//
// Host-function nodes are left out of the second run: their host code ran once, in the
// application's own launch, with the same data. Memory nodes become steps that change what is
// tracked: an allocation of the graph's is memory like any other from its alloc node on (the
// kernel nodes after it save and restore it) and retires at its free node; an allocation that
// outlives the launch was tracked before the nodes run, as it stays after them. Graphs whose nodes
// cannot run one at a time (GraphInfo::whole_only: conditional nodes, ...) and graphs whose nodes
// cannot be run again (GraphInfo::nodes_unreplayable) take the ordinary path as one dispatch for
// the whole graph launch.
#include "common/logging.hpp"
#include "common/util.hpp"
#include "replay/engine.hpp"

namespace kreplay::replay {

bool Engine::begin_graph_nodes(DispatchState& st) {
  const device::GraphInfo* g = st.launch->graph();
  if (g == nullptr || !options().graph_nodes || !g->whole_only.empty() ||
      g->nodes_unreplayable != KREPLAY_DECLINE_REASON_NONE || st.slot == nullptr || st.reentrant ||
      st.peer_agent != 0) {  // over peer memory: declined as a whole (the nodes would run twice)
    return false;
  }
  const bool ranges = hooks_.range_configured();
  if (!ranges && !hooks_.any_dispatch_service()) return false;
  if (ranges) range_barrier(st.slot->agent, KREPLAY_RANGE_CLOSE_GRAPH);
  DeviceSlot& slot = *st.slot;
  st.exclusive = std::unique_lock(slot.window_mu);
  detail::thread_windows().push_back(&slot);
  if (kreplay_decline_reason_t why = save_entry_state(st, st.snapshot, /*write_bounded=*/true);
      why != KREPLAY_DECLINE_REASON_NONE) {
    // The graph's entry state cannot be saved: its nodes could not be replayed either. It takes
    // the ordinary path as one dispatch, declined for this reason.
    st.ws.kind = SaveKind::kNone;
    auto& windows = detail::thread_windows();
    windows.erase(std::find(windows.begin(), windows.end(), &slot));
    st.exclusive.unlock();
    st.outcome = {};
    st.intervals.clear();
    st.forced_decline = why;
    return false;
  }
  st.graph_nodes = true;
  st.wait_needed = true;  // the backend times the submission, so it can be waited for
  return true;
}

void Engine::run_graph_nodes(DispatchState& st, bool submitted) {
  const Options opt = options();
  DeviceSlot& slot = *st.slot;
  device::Device& dev = *slot.device;
  auto drop_window = [&] {
    if (!st.exclusive.owns_lock()) return;
    auto& windows = detail::thread_windows();
    windows.erase(std::find(windows.begin(), windows.end(), &slot));
    st.exclusive.unlock();
  };
  if (!submitted) {  // the application's launch failed: nothing ran
    drop_window();
    return;
  }
  if (Status w = st.work->wait(opt.drain_timeout_ms, &st.timing); !w.ok()) {
    KR_WARN("{}: {}; its nodes are not profiled", st.info.kernel_name, w.message());
    drop_window();
    return;
  }
  if (st.ws.kind == SaveKind::kWriteSet) {
    // Only what the graph is predicted to write was saved: did it write nothing else?
    uint64_t changed = 0;
    bool covered = false;
    Status m = measure_writes(slot, st.ws, /*range=*/false, &changed, &covered);
    if (m.ok()) keep_baseline(slot, st.ws);
    if (!covered) {
      // Its own run was the only one: the nodes are not run again. It is reported as one
      // declined dispatch for the whole graph, so the tool counts it.
      KR_WARN_ONCE("graph-write-set-miss",
                   "{} wrote outside the {} kreplay {}{}: its nodes are not replayed this time "
                   "(counted as declined: write_set_unknown); later launches of the graph save "
                   "what it wrote",
                   st.info.kernel_name, format_bytes(extent_bytes(st.ws.saved)),
                   st.ws.predicted ? "predicted and saved" : "could save (its first launch)",
                   m.ok() ? "" : " (" + m.message() + ")");
      drop_window();
      // The tool is asked for its plan as for any dispatch (its replay_pass_count called once):
      // a graph it does not want replayed is NOT_REQUESTED, not declined.
      hooks_.config_enter(st);
      st.plan = make_plan(st.pass_count, st.replay_continue, st.info, st.user_data);
      auto& out = st.outcome;
      out = {};
      out.size = sizeof(out);
      out.dispatch_id = st.info.dispatch_id;
      out.agent_id = st.info.agent_id;
      out.passes_requested = st.plan.requested;
      out.passes_executed = 1;
      out.bytes_changed = changed;
      if (st.plan.invalid) {
        out.outcome = KREPLAY_REPLAY_OUTCOME_DECLINED;
        out.reason = KREPLAY_DECLINE_REASON_INVALID_PLAN;
      } else if (!st.plan.replay) {
        out.outcome = KREPLAY_REPLAY_OUTCOME_NOT_REQUESTED;
      } else {
        out.outcome = KREPLAY_REPLAY_OUTCOME_DECLINED;
        out.reason = KREPLAY_DECLINE_REASON_WRITE_SET_UNKNOWN;
      }
      if (out.outcome == KREPLAY_REPLAY_OUTCOME_DECLINED)
        stats_.declined.fetch_add(1, std::memory_order_relaxed);
      hooks_.config_exit(st);
      return;
    }
  }
  Result<std::vector<device::GraphStep>> steps = st.launch->decompose();
  if (!steps.ok()) {
    // Nothing is restored, so the application keeps what its own launch produced.
    KR_WARN_ONCE("graph-decompose", "{}: its nodes cannot be run one at a time ({}); graphs like "
                                    "it are not profiled",
                 st.info.kernel_name, steps.status().message());
    drop_window();
    return;
  }
  Result<uint64_t> restored = st.snapshot.restore(dev, /*verify=*/false);
  if (restored.ok() && st.ws.kind == SaveKind::kWriteSet) {
    Result<uint64_t> zeroed = restore_zeroed(slot, st.ws);
    if (!zeroed.ok()) restored = zeroed.status();
  }
  slot.baseline_valid = false;  // the restore changed memory the baseline had measured
  drop_window();
  if (!restored.ok()) {
    // The state may be partly restored: run the graph again so the application sees one
    // execution's result.
    const device::GraphInfo* g = st.launch->graph();
    if (g->unreplayable != KREPLAY_DECLINE_REASON_NONE) {
      KR_ERROR(
          "{}: restoring its entry state failed: {}; its memory may not hold what one "
          "execution would leave (the graph cannot be launched again)",
          st.info.kernel_name, restored.status().message());
      return;
    }
    KR_ERROR("{}: restoring its entry state failed: {}; running it again", st.info.kernel_name,
             restored.status().message());
    if (st.launch->relaunch().ok()) (void)st.launch->wait(opt.drain_timeout_ms, nullptr);
    return;
  }
  const bool ranges = hooks_.range_configured();
  for (auto& step : *steps) {
    if (step.kernel) {
      DispatchState* node = enter(*step.kernel);
      Status s = step.kernel->submit();
      if (!s.ok()) KR_WARN("{}: a kernel node did not launch: {}", st.info.kernel_name, s.message());
      exit(node, s.ok());
    } else if (step.other) {
      // A copy, memset or memory node between kernel nodes: a range of the nodes before it
      // closes first, so that its passes do not run without it (or without the memory).
      if (ranges) range_barrier(slot.agent, KREPLAY_RANGE_CLOSE_MEMORY);
      if (Status s = step.other(); !s.ok()) {
        KR_WARN("{}: a copy, memset or memory node failed: {}", st.info.kernel_name, s.message());
      }
    }
  }
  if (ranges) range_barrier(slot.agent, KREPLAY_RANGE_CLOSE_GRAPH);
  // The application may look at the graph's results as soon as its call returns.
  if (Status s = st.launch->wait_stream(opt.drain_timeout_ms); !s.ok()) {
    KR_WARN("{}: {}", st.info.kernel_name, s.message());
  }
}

}  // namespace kreplay::replay
