// libkreplay_tool.so: kreplay's profiler tool. It is an ordinary SDK tool — it uses only the public
// C API — loaded into the application by the kreplay command (KREPLAY_TOOL_LIBRARIES), configured
// through KREPLAY_TOOL_CONFIG (config/tool_config.hpp).
//
// Per logical launch: at CONFIG the kernel filter decides (once per launch, never per pass); a
// selected launch gets the agent's pass plan (pass_plan.hpp) as its pass count; the counting
// service picks the config of the current pass; PASS ENTER switches the counters off for timing
// passes (local context control); records stream to the output writers. At exit the tool prints
// one tally line (then, when there are any, divergence, ranges, the snapshots line -- bytes saved
// and found changed, windows per snapshot mode, peak storage -- and the per-pass services) and
// where the outputs are.
//
// The Profiler's state is declared in profiler.hpp; this file holds the C callbacks, kernel replay,
// counters, traces and the exit; profiler_setup.cpp initialize(), profiler_range.cpp range replay.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/logging.hpp"
#include "common/util.hpp"
#include "config/output_path.hpp"
#include "tool/profiler.hpp"
#include "tool/progress.hpp"

namespace kreplay::tool {

thread_local const PlannedPass* tl_pass = nullptr;
thread_local uint64_t tl_range_launch_id = 0;

// ---- C callbacks ------------------------------------------------------------------------------

uint64_t pass_count_cb(kreplay_kernel_dispatch_info_t info, kreplay_user_data_t) {
  return Profiler::get().pass_count_of(info);
}

void replay_cb(kreplay_callback_tracing_record_t rec, kreplay_user_data_t*, void*) {
  auto& p = *static_cast<kreplay_callback_tracing_kernel_replay_data_t*>(rec.payload);
  auto& prof = Profiler::get();
  if (rec.operation == KREPLAY_KERNEL_REPLAY_CONFIG) {
    if (rec.phase == KREPLAY_CALLBACK_PHASE_ENTER) prof.on_config_enter(p);
    else prof.on_config_exit(p, rec.correlation_id.internal);
  } else if (rec.operation == KREPLAY_KERNEL_REPLAY_PASS) {
    if (rec.phase == KREPLAY_CALLBACK_PHASE_ENTER) prof.on_pass_enter(p); else prof.on_pass_exit(p);
  }
}

uint64_t range_pass_count_cb(kreplay_range_info_t info, kreplay_user_data_t) {
  return Profiler::get().range_pass_count(info);
}

void range_cb(kreplay_callback_tracing_record_t rec, kreplay_user_data_t*, void*) {
  auto& p = *static_cast<kreplay_callback_tracing_range_replay_data_t*>(rec.payload);
  auto& prof = Profiler::get();
  const bool enter = rec.phase == KREPLAY_CALLBACK_PHASE_ENTER;
  switch (rec.operation) {
    case KREPLAY_RANGE_REPLAY_CONFIG:
      if (enter) prof.on_range_config_enter(p); else prof.on_range_config_exit(p);
      break;
    case KREPLAY_RANGE_REPLAY_LAUNCH: prof.on_range_launch(p, rec.correlation_id.internal); break;
    case KREPLAY_RANGE_REPLAY_PASS: prof.on_range_pass(p, enter); break;
    default: break;
  }
}

void counting_cb(const kreplay_dispatch_counting_data_t* d, kreplay_counter_config_id_t* config,
                 kreplay_user_data_t*, void*) {
  config->handle = Profiler::get().pick_config(*d);
}

void record_cb(const kreplay_dispatch_counting_data_t* d, const kreplay_counter_record_t* r,
               size_t n, kreplay_user_data_t, void*) {
  Profiler::get().on_counters(*d, r, n);
}

void trace_cb(kreplay_callback_tracing_record_t rec, kreplay_user_data_t*, void*) {
  auto& prof = Profiler::get();
  if (rec.kind == KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH) {
    prof.on_trace(*static_cast<kreplay_callback_tracing_kernel_dispatch_data_t*>(rec.payload),
                  rec.phase == KREPLAY_CALLBACK_PHASE_EXIT);
  } else if (rec.kind == KREPLAY_CALLBACK_TRACING_CODE_OBJECT) {
    prof.on_code_object(*static_cast<kreplay_callback_tracing_code_object_data_t*>(rec.payload),
                        rec.phase, rec.operation);
  } else if (rec.kind == KREPLAY_CALLBACK_TRACING_MEMORY_ALLOCATION) {
    prof.on_memory(*static_cast<kreplay_callback_tracing_memory_allocation_data_t*>(rec.payload),
                   rec.operation);
  }
}

const AgentPlan* Profiler::plan_for(uint64_t agent) {
  auto it = plans_.find(agent);
  return it == plans_.end() ? nullptr : &it->second;
}

uint64_t Profiler::pass_count_of(const kreplay_kernel_dispatch_info_t& info) {
  std::lock_guard lock(mu_);
  auto it = dispatches_.find(info.dispatch_id);
  if (it == dispatches_.end() || !it->second.plan) return 1;
  return it->second.plan->passes.size();
}

void Profiler::write_kernel_locked(const kreplay_kernel_dispatch_info_t& info) {
  if (!kernels_written_.insert(info.kernel_id).second) return;
  output::KernelRecord k;
  k.kernel_id = info.kernel_id;
  k.agent_id = info.agent_id.handle;
  auto co = kernel_code_object_.find(info.kernel_id);
  k.code_object_id = co == kernel_code_object_.end() ? 0 : co->second;
  k.mangled_name = info.mangled_name ? info.mangled_name : "";
  k.demangled_name = info.kernel_name ? info.kernel_name : "";
  if (Status s = writer_->kernel(k); !s.ok()) KR_WARN("{}", s.message());
}

namespace {
// Whether a dispatch's single run counts: not when it was declined and pass 0's counter config
// needs more passes than this one run (first_pass_completes): its counter session would only
// cost time.
bool single_run_counts(const Dispatch& d) {
  return !d.declined || !d.plan || first_pass_completes(*d.plan);
}
}  // namespace

bool Profiler::select_launch(const kreplay_kernel_dispatch_info_t& info) {
  if (filter->selects_everything()) return true;
  config::KernelFilter::Launch launch;
  launch.demangled = info.kernel_name ? info.kernel_name : "";
  launch.mangled = info.mangled_name ? info.mangled_name : "";
  auto dev = device_index_.find(info.agent_id.handle);  // read-only after initialize
  launch.context = dev == device_index_.end() ? 0 : dev->second;
  launch.stream = info.stream_id.handle;
  launch.markers = markers ? markers->verdict(thread_id()) : config::KernelFilter::Markers::kSelected;
  return filter->select(launch);
}

void Profiler::on_config_enter(kreplay_callback_tracing_kernel_replay_data_t& p) {
  const auto& info = p.dispatch_info;
  tl_range_launch_id = info.dispatch_id;
  launches_.fetch_add(1, std::memory_order_relaxed);
  bool selected = select_launch(info);
  std::lock_guard lock(mu_);
  Dispatch& d = dispatches_[info.dispatch_id];
  d.selected = selected;
  if (!selected) {
    not_selected_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  d.plan = plan_for(info.agent_id.handle);
  if (d.plan && !d.plan->rotation.empty()) {
    uint64_t n = ++launches_per_agent_[info.agent_id.handle];
    uint64_t interval = std::max<uint64_t>(1, config.rotation.interval);
    d.rotation_config = d.plan->rotation[((n - 1) / interval) % d.plan->rotation.size()];
  }
  if (d.plan && d.plan->passes.size() > 1) p.replay_pass_count = &pass_count_cb;
  write_kernel_locked(info);
}

void Profiler::on_config_exit(const kreplay_callback_tracing_kernel_replay_data_t& p,
                              uint64_t correlation_id) {
  const auto& info = p.dispatch_info;
  const auto* o = p.outcome;
  std::lock_guard lock(mu_);
  auto it = dispatches_.find(info.dispatch_id);
  if (it == dispatches_.end()) return;
  Dispatch& d = it->second;
  if (o) {
    if (o->outcome == KREPLAY_REPLAY_OUTCOME_REPLAYED) {
      replayed_.fetch_add(1, std::memory_order_relaxed);
      d.replayed = true;
    } else if (o->outcome == KREPLAY_REPLAY_OUTCOME_DECLINED) {
      declined_.fetch_add(1, std::memory_order_relaxed);
      ++declined_by_reason_[reason_name(o->reason)];
      d.declined = true;
    }
    if (o->size >= KREPLAY_STRUCT_SIZE(kreplay_replay_outcome_record_t, divergence_checked) &&
        o->diverged_passes > 0) {
      divergence_.add(info.kernel_name ? info.kernel_name : "");
    }
    if (o->outcome == KREPLAY_REPLAY_OUTCOME_REPLAYED)
      passes_.fetch_add(o->passes_executed, std::memory_order_relaxed);
    else
      passes_.fetch_add(1, std::memory_order_relaxed);
    if (o->size >= KREPLAY_STRUCT_SIZE(kreplay_replay_outcome_record_t, snapshot_mode)) {
      snapshot_tally_.add(o->bytes_snapshotted, o->bytes_changed,
                          snapshot_mode_name(o->snapshot_mode));
    } else {
      snapshot_tally_.add(o->bytes_snapshotted, 0, "");
    }
  }
  if (!d.selected && !config.output.kernel_trace) {
    dispatches_.erase(it);
    return;
  }
  auto& r = d.record;
  fill_launch(r, info, correlation_id);
  r.graph_id = p.graph_id;
  r.graph_node = p.graph_node;
  if (o) {
    r.outcome = outcome_name(o->outcome);
    r.reason = reason_name(o->reason);
    r.passes_requested = o->passes_requested;
    r.passes_executed = o->passes_executed;
    r.bytes_snapshotted = o->bytes_snapshotted;
    r.bytes_restored = o->bytes_restored;
    r.snapshot_ns = o->snapshot_ns;
    r.restore_ns = o->restore_ns;
    if (o->size >= KREPLAY_STRUCT_SIZE(kreplay_replay_outcome_record_t, divergence_checked)) {
      r.divergence_checked = o->divergence_checked != 0;
      r.diverged_passes = o->diverged_passes;
    }
    if (o->size >= KREPLAY_STRUCT_SIZE(kreplay_replay_outcome_record_t, snapshot_mode)) {
      r.bytes_changed = o->bytes_changed;
      r.snapshot_mode = snapshot_mode_name(o->snapshot_mode);
    }
    write_phases_locked(r, o->intervals, o->interval_count);
  }
  d.record_ready = true;
  // A replayed dispatch is complete now. One that runs once completes when its counters or its
  // trace arrive; without either there is nothing more to learn.
  bool more_to_come = !d.replayed && ((counting && (d.plan && !d.plan->passes.empty() &&
                                                    d.plan->passes[0].kind ==
                                                        PlannedPass::Kind::kCounters) &&
                                        single_run_counts(d)) ||
                                       d.rotation_config != 0 || tracing);
  if (!more_to_come) finish_dispatch_locked(info.dispatch_id);
}

void Profiler::fill_launch(output::DispatchRecord& r, const kreplay_kernel_dispatch_info_t& info,
                           uint64_t correlation_id) const {
  r.dispatch_id = info.dispatch_id;
  r.correlation_id = correlation_id;
  r.agent_id = info.agent_id.handle;
  r.stream_id = info.stream_id.handle;
  r.kernel_id = info.kernel_id;
  r.grid = {info.grid_size.x, info.grid_size.y, info.grid_size.z};
  r.block = {info.block_size.x, info.block_size.y, info.block_size.z};
  r.cluster = {info.cluster_size.x, info.cluster_size.y, info.cluster_size.z};
  r.dynamic_shared_bytes = info.dynamic_shared_memory_bytes;
  r.static_shared_bytes = info.static_shared_memory_bytes;
  r.registers = info.registers_per_thread;
  r.thread_id = thread_id();
  r.app_pass = record_app_pass();
}

void Profiler::write_phases_locked(const output::DispatchRecord& r,
                                   const kreplay_replay_interval_t* intervals, uint64_t count) {
  for (uint64_t i = 0; i < count; ++i) {
    const auto& iv = intervals[i];
    output::ReplayPhaseRecord ph;
    ph.dispatch_id = r.dispatch_id;
    ph.agent_id = r.agent_id;
    ph.stream_id = r.stream_id;
    ph.phase = iv.kind == KREPLAY_REPLAY_INTERVAL_SNAPSHOT ? "snapshot" : "restore";
    ph.after_pass = iv.after_pass;
    ph.start_ns = iv.start_timestamp;
    ph.end_ns = iv.end_timestamp;
    ph.bytes = iv.bytes;
    ph.app_pass = r.app_pass;
    if (Status s = writer_->replay_phase(ph); !s.ok()) KR_WARN("{}", s.message());
  }
}

void Profiler::finish_dispatch_locked(uint64_t id) {
  auto it = dispatches_.find(id);
  if (it == dispatches_.end()) return;
  if (it->second.record_ready) {
    if (auto dev = device_index_.find(it->second.record.agent_id); dev != device_index_.end())
      devices_used_.insert(dev->second);
    if (Status s = writer_->dispatch(it->second.record); !s.ok()) KR_WARN("{}", s.message());
  }
  dispatches_.erase(it);
}

void Profiler::on_pass_enter(const kreplay_callback_tracing_kernel_replay_data_t& p) {
  tl_pass = nullptr;
  std::lock_guard lock(mu_);
  auto it = dispatches_.find(p.dispatch_info.dispatch_id);
  if (it == dispatches_.end() || !it->second.plan) return;
  it->second.replayed = true;
  const auto& passes = it->second.plan->passes;
  if (p.current_pass >= passes.size()) return;
  tl_pass = &passes[p.current_pass];
  set_services_for_pass(*tl_pass, p.replay_start_context, p.replay_stop_context);
}

void Profiler::on_pass_exit(const kreplay_callback_tracing_kernel_replay_data_t& p) {
  tl_pass = nullptr;
  std::lock_guard lock(mu_);
  auto it = dispatches_.find(p.dispatch_info.dispatch_id);
  if (it == dispatches_.end()) return;
  if (p.end_timestamp == 0) return;  // the pass did not complete
  extend_span(it->second.record, p.start_timestamp, p.end_timestamp);
  if (tracing) return;  // the trace writes pass records
  write_pass_locked(p.dispatch_info, p.current_pass, p.start_timestamp, p.end_timestamp);
}

void Profiler::write_pass_locked(const kreplay_kernel_dispatch_info_t& info, uint64_t pass,
                                 uint64_t start, uint64_t end) {
  output::PassRecord pr;
  if (auto it = dispatches_.find(info.dispatch_id); it != dispatches_.end()) {
    if (auto s = it->second.counter_status.find(pass); s != it->second.counter_status.end())
      pr.counter_status = s->second;
  }
  pr.dispatch_id = info.dispatch_id;
  pr.replay_pass = pass;
  pr.agent_id = info.agent_id.handle;
  pr.stream_id = info.stream_id.handle;
  pr.start_ns = start;
  pr.end_ns = end;
  pr.app_pass = record_app_pass();
  if (Status s = writer_->pass(pr); !s.ok()) KR_WARN("{}", s.message());
}

const PlannedPass* Profiler::pass_of(const kreplay_kernel_dispatch_info_t& info, uint64_t pass) {
  const PlannedPass* current = tl_pass;
  std::lock_guard lock(mu_);
  auto it = dispatches_.find(info.dispatch_id);
  if (it == dispatches_.end() || !it->second.selected) return nullptr;
  const Dispatch& d = it->second;
  if (current == nullptr && d.plan && !d.plan->passes.empty() && pass == 0)
    current = &d.plan->passes[0];  // a single run runs pass 0's service
  return current;
}

void Profiler::on_samples(config::PassKind kind, const kreplay_pass_service_data_t& data,
                          const kreplay_pass_service_record_t* records, size_t count) {
  std::lock_guard lock(mu_);
  ServiceTally& t = service_tally_[kind];
  if (data.status != KREPLAY_STATUS_SUCCESS) {
    ++t.refused;
    t.why = data.status_message ? data.status_message : "";
    return;
  }
  ++t.passes;
  t.records += count;
  output::ServiceSampleRecord o;
  o.service = std::string(config::to_string(kind));
  o.app_pass = record_app_pass();
  for (size_t i = 0; i < count; ++i) {
    const auto& r = records[i];
    o.dispatch_id = r.dispatch_id;
    o.replay_pass = r.replay_pass;
    o.agent_id = r.agent_id.handle;
    o.kernel_id = r.kernel_id;
    o.function = r.function ? r.function : "";
    o.pc_offset = r.pc_offset;
    o.instruction = r.instruction ? r.instruction : "";
    o.source_file = r.source_file ? r.source_file : "";
    o.source_line = r.source_line;
    o.name = r.name ? r.name : "";
    o.timestamp_ns = r.timestamp;
    o.value = r.value;
    if (Status s = writer_->service_sample(o); !s.ok()) KR_WARN("{}", s.message());
  }
}

uint64_t Profiler::pick_config(const kreplay_dispatch_counting_data_t& data) {
  const PlannedPass* pass = tl_pass;
  std::lock_guard lock(mu_);
  auto it = dispatches_.find(data.dispatch_info.dispatch_id);
  if (it == dispatches_.end() || !it->second.selected) return 0;
  const Dispatch& d = it->second;
  if (d.rotation_config != 0) {
    it->second.counter_status.try_emplace(data.replay_pass, "ok");
    ++counter_passes_asked_;
    return d.rotation_config;
  }
  if (pass == nullptr && d.plan && !d.plan->passes.empty() && data.replay_pass == 0) {
    pass = &d.plan->passes[0];  // a single run (not replayed, or declined) runs pass 0's service
    if (!single_run_counts(d)) {
      if (log::first_time("declined-not-counted")) {
        KR_INFO("launches that are not replayed run without counters: their counter set needs "
                "more passes than the one run they get, so it would complete no value");
      }
      return 0;
    }
  }
  if (pass == nullptr || pass->kind != PlannedPass::Kind::kCounters) return 0;
  it->second.counter_status.try_emplace(data.replay_pass, "ok");
  if (pass->config != 0) ++counter_passes_asked_;
  return pass->config;
}

std::string Profiler::counter_name(uint64_t id) {
  auto it = counter_names_.find(id);
  if (it != counter_names_.end()) return it->second;
  kreplay_counter_info_t info{};
  info.size = sizeof(info);
  std::string name = kreplay_query_counter_info({id}, &info) == KREPLAY_STATUS_SUCCESS && info.name
                         ? info.name
                         : fmt::format("counter{}", id);
  counter_names_.emplace(id, name);
  return name;
}

void Profiler::on_counters(const kreplay_dispatch_counting_data_t& data,
                           const kreplay_counter_record_t* records, size_t n) {
  std::lock_guard lock(mu_);
  uint32_t app_pass = record_app_pass();
  if (data.size >= KREPLAY_STRUCT_SIZE(kreplay_dispatch_counting_data_t, status_message) &&
      data.status != KREPLAY_STATUS_SUCCESS) {
    // The counters of this pass were lost: its pass record says so and the summary counts it.
    ++counter_passes_lost_;
    if (data.status_message && *data.status_message) counter_lost_why_ = data.status_message;
    auto it = dispatches_.find(data.dispatch_info.dispatch_id);
    if (it != dispatches_.end()) it->second.counter_status[data.replay_pass] = "lost";
  }
  for (size_t i = 0; i < n; ++i) {
    output::CounterRecord c;
    c.dispatch_id = records[i].dispatch_id;
    c.replay_pass = records[i].replay_pass;
    c.agent_id = records[i].agent_id.handle;
    c.kernel_id = data.dispatch_info.kernel_id;
    c.name = counter_name(records[i].counter_id.handle);
    c.value = records[i].value;
    c.app_pass = app_pass;
    if (Status s = writer_->counter(c); !s.ok()) KR_WARN("{}", s.message());
  }
  auto it = dispatches_.find(data.dispatch_info.dispatch_id);
  if (range_mode() || it == dispatches_.end() || it->second.replayed) return;
  // A single run: its pass and its dispatch are complete with these values.
  auto& r = it->second.record;
  r.start_ns = data.start_timestamp;
  r.end_ns = data.end_timestamp;
  if (!tracing) {
    write_pass_locked(data.dispatch_info, data.replay_pass, data.start_timestamp,
                      data.end_timestamp);
    finish_dispatch_locked(data.dispatch_info.dispatch_id);
  }
}

void Profiler::on_trace(const kreplay_callback_tracing_kernel_dispatch_data_t& p, bool exit) {
  if (!exit) {
    // Range mode sees a launch through RANGE_REPLAY only when it joins a range (LAUNCH comes just
    // before this ENTER, on this thread). One that runs outside any range (outside the markers,
    // or a graph launch) is tallied here: declined for a graph, otherwise not selected.
    if (range_mode() && p.replay_pass == 0 && p.dispatch_info.dispatch_id != tl_range_launch_id) {
      launches_.fetch_add(1, std::memory_order_relaxed);
      passes_.fetch_add(1, std::memory_order_relaxed);  // it runs once, as in kernel replay
      // (Graph launches are ranges of their own, declined ones included: the range outcome
      // counts them.)
      const uint32_t flags = p.dispatch_info.flags;
      kreplay_decline_reason_t why = KREPLAY_DECLINE_REASON_NONE;
      if (flags & KREPLAY_DISPATCH_FLAG_COLLECTIVE) {
        why = KREPLAY_DECLINE_REASON_COLLECTIVE;
      } else if (flags & KREPLAY_DISPATCH_FLAG_DEVICE_HEAP) {
        why = KREPLAY_DECLINE_REASON_DEVICE_HEAP;
      }
      if (why != KREPLAY_DECLINE_REASON_NONE) {
        std::lock_guard lock(mu_);
        declined_.fetch_add(1, std::memory_order_relaxed);
        ++declined_by_reason_[reason_name(why)];
      } else {
        not_selected_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    return;
  }
  std::lock_guard lock(mu_);
  auto it = dispatches_.find(p.dispatch_info.dispatch_id);
  if (it == dispatches_.end()) return;  // a dispatch the tool did not keep
  write_kernel_locked(p.dispatch_info);
  write_pass_locked(p.dispatch_info, p.replay_pass, p.start_timestamp, p.end_timestamp);
  extend_span(it->second.record, p.start_timestamp, p.end_timestamp);
  if (!range_mode() && !it->second.replayed && it->second.record_ready)
    finish_dispatch_locked(p.dispatch_info.dispatch_id);
}

void Profiler::on_code_object(const kreplay_callback_tracing_code_object_data_t& p,
                              kreplay_callback_phase_t phase, uint32_t op) {
  if (op != KREPLAY_CODE_OBJECT_KERNEL_SYMBOL_REGISTER || phase != KREPLAY_CALLBACK_PHASE_ENTER)
    return;
  std::lock_guard lock(mu_);
  kernel_code_object_[p.kernel_id] = p.code_object_id;
}

void Profiler::on_memory(const kreplay_callback_tracing_memory_allocation_data_t& p, uint32_t op) {
  std::lock_guard lock(mu_);
  if (!writer_ || finished_) return;
  output::AllocationRecord a;
  a.agent_id = p.agent_id.handle;
  a.operation = op == KREPLAY_MEMORY_ALLOCATION_FREE ? "free" : "alloc";
  a.kind = memory_kind_name(p.memory_kind);
  a.address = p.address;
  a.size = p.allocation_size;
  a.timestamp_ns = p.timestamp;
  a.app_pass = record_app_pass();
  if (Status s = writer_->allocation(a); !s.ok()) KR_WARN("{}", s.message());
}

void Profiler::progress_loop() {
  uint64_t next = start_ns_ + 2000000000ull;
  TerminalProgress line(TerminalProgress::wanted());  // on a terminal only (tool/progress.hpp)
  std::unique_lock lock(progress_mu_);
  while (!stop_progress_) {
    progress_cv_.wait_for(lock, std::chrono::milliseconds(200));
    if (stop_progress_) break;
    uint64_t now = now_ns();
    line.update(now - start_ns_, {launches_.load(), replayed_.load(), passes_.load(),
                                  declined_.load(), not_selected_.load()});
    if (now < next) continue;
    next = now + 2000000000ull;
    std::lock_guard wlock(mu_);
    if (writer_ && !finished_) (void)writer_->flush();
  }
}

// A range still open when the process ends on a signal holds launches that ran once and have
// only their first pass's values: close it (its passes run, its records arrive) before the
// outputs are closed, unless this thread cannot make device calls (the signal interrupted a CUDA
// call or kreplay's own replay), which is said once. At a normal exit the SDK closes ranges.
void Profiler::close_ranges_on_signal() {
  if (finished_) return;
  uint64_t launches = 0;
  kreplay_status_t s = kreplay_range_replay_close_open(2000, &launches);
  if (s != KREPLAY_STATUS_SUCCESS && launches > 0) {
    KR_WARN("the open range's {} launches were not replayed ({}): they keep no counter values",
            launches, kreplay_get_last_error_message());
  }
}

void Profiler::query_storage(output::RunSummary& sum) {
  size_t agents = 0;
  if (kreplay_get_agent_count(&agents) != KREPLAY_STATUS_SUCCESS) return;
  for (size_t i = 0; i < agents; ++i) {
    kreplay_agent_t a{};
    a.size = sizeof(a);
    if (kreplay_query_agent(i, &a) != KREPLAY_STATUS_SUCCESS) continue;
    kreplay_replay_storage_t st{};
    st.size = sizeof(st);
    if (kreplay_query_replay_storage(a.id, &st) != KREPLAY_STATUS_SUCCESS) continue;
    sum.snapshot_device_peak_bytes += st.device_bytes_peak;
    sum.snapshot_host_peak_bytes += st.host_bytes_peak;
    sum.snapshot_storage_releases += st.releases;
  }
}

void Profiler::finalize(bool from_signal) {
  {
    std::lock_guard lock(progress_mu_);
    stop_progress_ = true;
  }
  progress_cv_.notify_all();
  if (!from_signal && progress_.joinable()) progress_.join();
  if (from_signal) close_ranges_on_signal();
  output::RunSummary sum;
  // The storage peaks, before mu_ (see query_storage). Not on a signal: the thread it interrupted
  // may hold the engine's storage lock.
  if (!from_signal) query_storage(sum);

  std::unique_lock lock(mu_, std::defer_lock);
  if (from_signal) {
    // The signal may have interrupted a thread holding the lock: do not wait forever.
    for (int i = 0; i < 100 && !lock.try_lock(); ++i) usleep(10000);
    if (!lock.owns_lock()) return;
  } else {
    lock.lock();
  }
  if (finished_ || !writer_) return;
  finished_ = true;
  // Dispatches still waiting for their completion (e.g. the process exits mid-launch).
  std::vector<uint64_t> pending;
  for (const auto& [id, d] : dispatches_) pending.push_back(id);
  for (uint64_t id : pending) finish_dispatch_locked(id);
  sum.end_ns = now_ns();
  sum.launches = launches_.load();
  sum.replayed = replayed_.load();
  sum.declined = declined_.load();
  sum.not_selected = not_selected_.load();
  sum.passes = passes_.load();
  sum.declined_by_reason = declined_by_reason_;
  sum.counter_passes_lost = counter_passes_lost_;
  sum.devices_used.assign(devices_used_.begin(), devices_used_.end());
  sum.exit_code = from_signal ? -1 : 0;
  if (Status s = writer_->finish(sum); !s.ok()) KR_ERROR("{}", s.message());

  std::string declined;
  for (const auto& [reason, n] : declined_by_reason_) {
    declined += fmt::format("{}{}: {}", declined.empty() ? " (" : ", ", reason, n);
  }
  if (!declined.empty()) declined += ")";
  KR_NOTICE("{} launches: {} replayed ({} passes), {} declined{}, {} not selected{}",
         sum.launches, sum.replayed, sum.passes, sum.declined, declined, sum.not_selected,
         sum.counter_passes_lost == 0
             ? std::string()
             : fmt::format("; the counters of {} passes were lost (counter_status 'lost' in the "
                           "passes table)",
                           sum.counter_passes_lost));
  // A filter that selected nothing, and counters that were all lost, are said loudly: the run
  // then collected nothing of what was asked, which the tally alone leaves to the reader.
  // (Not on a signal: the interrupted thread may hold the filter's lock.)
  if (filter && !from_signal) {
    if (std::string line = filter->nothing_selected_line(); !line.empty()) KR_WARN("{}", line);
  }
  if (counter_passes_lost_ > 0 && counter_passes_lost_ >= counter_passes_asked_) {
    KR_ERROR("the counters of all {} counted passes were lost{}, so this run has no counter "
             "values; the usual cause is another profiler holding the GPU's counters (ncu, or a "
             "DCGM or nvidia-smi profiling session): stop it and run again, or run without "
             "counters (--set none)",
             counter_passes_lost_,
             counter_lost_why_.empty() ? std::string() : fmt::format(" ({})", counter_lost_why_));
  }
  if (std::string line = divergence_.line(); !line.empty()) KR_WARN("{}", line);
  if (std::string line = range_tally_.line(); !line.empty()) KR_NOTICE("{}", line);
  if (std::string line = snapshot_tally_.line(sum); !line.empty()) KR_NOTICE("snapshots: {}", line);
  for (const auto& [kind, t] : service_tally_) {
    KR_NOTICE("{}: {} records from {} passes{}", config::to_string(kind), t.records, t.passes,
              t.refused == 0 ? std::string()
                             : fmt::format("; {} passes collected nothing: {}", t.refused, t.why));
  }
  for (const auto& f : outputs_) KR_NOTICE("output: {}", f);
}

// A configuration the user got wrong (a counter that does not exist, a group that does not fit, an
// output location that cannot be written) stops the application before it does any work, with the
// one-line error initialize() printed and exit status 2, as a command-line tool would: profiling
// it with part of the request silently missing would waste the run.
int tool_init(kreplay_client_finalize_t, void*) {
  int rc = Profiler::get().initialize();
  if (rc != 0) {
    std::fflush(stderr);
    _exit(2);
  }
  return rc;
}
void tool_fini(void*) { Profiler::get().finalize(false); }

void note_tool_started() {
  if (const char* status = std::getenv("KREPLAY_TOOL_STATUS_FILE"); status && *status) {  // NOLINT
    if (std::FILE* f = std::fopen(status, "a")) {
      std::fprintf(f, "%d\n", static_cast<int>(getpid()));
      std::fclose(f);
    }
  }
}

bool rank_selected(const config::ToolConfig& config) {
  if (config.ranks.empty()) return true;
  const auto& ranks = config.ranks;
  std::string list;
  for (int64_t r : ranks) {
    if (!list.empty()) list += ',';
    list += std::to_string(r);
  }
  auto rank = config::mpi_rank(config::ExpansionContext::current());
  if (!rank) {
    KR_WARN("--ranks {}: this process has no rank in its environment (RANK, "
            "OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID, ...); it is profiled",
            list);
    return true;
  }
  if (std::binary_search(ranks.begin(), ranks.end(), *rank)) return true;
  // One line for the whole job: said by the lowest rank that is not profiled.
  int64_t lowest = 0;
  while (std::binary_search(ranks.begin(), ranks.end(), lowest)) ++lowest;
  if (*rank == lowest) {
    KR_NOTICE("--ranks {}: only rank{} {} {} profiled; the other ranks run without profiling",
              list, ranks.size() > 1 ? "s" : "", list, ranks.size() > 1 ? "are" : "is");
  }
  // The command warns when no process started the tool: this one did, and chose not to profile.
  note_tool_started();
  return false;
}

}  // namespace kreplay::tool

extern "C" __attribute__((visibility("default"))) kreplay_tool_configure_result_t* kreplay_configure(
    uint32_t, const char*, uint32_t, kreplay_client_id_t* id) {
  using kreplay::tool::Profiler;
  auto cfg = kreplay::config::load_tool_config_from_env();
  if (!cfg.ok()) {
    if (cfg.status().code() != KREPLAY_STATUS_ERROR_NOT_AVAILABLE)
      KR_ERROR("kreplay tool: {}", cfg.status().message());
    return nullptr;  // not run by the kreplay command, or a broken config: do not load
  }
  if (!kreplay::tool::rank_selected(*cfg)) return nullptr;  // --ranks: this rank runs unprofiled
  Profiler::get().config = std::move(cfg).value();
  id->name = "kreplay";
  static kreplay_tool_configure_result_t result{sizeof(result), &kreplay::tool::tool_init,
                                                &kreplay::tool::tool_fini, nullptr};
  return &result;
}
