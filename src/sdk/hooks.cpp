// The SDK's side of the engine (replay::Hooks): turns engine events into tool callbacks and runs
// the per-pass services (dispatch tracing, counter collection), honouring local context control.
#include "sdk/hooks.hpp"

#include <fmt/format.h>

#include <exception>

#include "common/exit_safe.hpp"
#include "common/logging.hpp"
#include "common/util.hpp"
#include "replay/local_context.hpp"
#include "sdk/pass_services.hpp"
#include "sdk/runtime.hpp"

namespace kreplay::sdk {
namespace {

// A context takes part in the current pass when it is globally active and no local override of
// the running replay loop (on this thread) stopped it.
bool effective(const Context& c) {
  if (!c.active.load(std::memory_order_acquire)) return false;
  if (!replay::local_overrides_present()) return true;
  auto o = replay::local_override(c.handle);
  return o.value_or(true);
}

template <typename Fn>
void guarded(const char* what, Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    KR_ERROR("a tool's {} callback threw: {}", what, e.what());
  } catch (...) {
    KR_ERROR("a tool's {} callback threw an unknown exception", what);
  }
}

kreplay_callback_tracing_record_t make_record(const Context& c, const replay::DispatchState& st,
                                              kreplay_callback_tracing_kind_t kind, uint32_t op,
                                              kreplay_callback_phase_t phase, void* payload) {
  kreplay_callback_tracing_record_t r{};
  r.context_id.handle = c.handle;
  r.thread_id = st.thread_id;
  r.correlation_id = st.correlation;
  r.kind = kind;
  r.operation = op;
  r.phase = phase;
  r.payload = payload;
  return r;
}

}  // namespace

// Per-dispatch scratch: which contexts saw KERNEL_DISPATCH ENTER and which counters are armed.
struct HookData {
  struct Traced {
    Context* ctx;
    kreplay_user_data_t user_data;
  };
  struct Armed {
    Context* ctx;
    kreplay_user_data_t user_data;
    const ConfigEntry* config;
  };
  std::vector<Traced> traced;
  std::vector<Armed> armed;
  std::vector<device::CounterSet*> sets;
  std::vector<kreplay_counter_record_t> records;
  Status lost;              ///< the counters armed for this pass could not be collected
  PassServiceRun services;  ///< the per-pass services of this pass
};

namespace {

// Exit-safe: a range closed by an exit handler releases its launches' hook data.
struct HookFreeList {
  std::vector<std::unique_ptr<HookData>> list;
};
std::vector<std::unique_ptr<HookData>>& hook_free_list() {
  return exit_safe_thread_local<HookFreeList>().list;
}

// Dispatches begin and end on the same thread, so a thread-local free list suffices.
HookData* acquire_hook_data() {
  auto& list = hook_free_list();
  if (list.empty()) return new HookData();  // NOLINT: owned by DispatchState until released
  HookData* d = list.back().release();
  list.pop_back();
  return d;
}

void release_hook_data(HookData* d) {
  hook_free_list().emplace_back(d);
}

}  // namespace

SdkHooks::SdkHooks(Runtime& rt) : rt_(rt) {}

bool SdkHooks::any_dispatch_service() {
  return rt_.registry().any_dispatch_level_active();
}

bool SdkHooks::replay_configured() {
  return rt_.registry().replay_context() != nullptr;
}

std::vector<uint64_t> SdkHooks::active_contexts() {
  return rt_.registry().active_handles();
}

void SdkHooks::config_enter(replay::DispatchState& st) {
  Context* c = rt_.registry().replay_context();
  if (c == nullptr || !c->active.load(std::memory_order_acquire)) return;
  const auto& sub = c->callbacks[KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY];
  if (!sub.wants(KREPLAY_KERNEL_REPLAY_CONFIG)) return;
  kreplay_callback_tracing_kernel_replay_data_t payload{};
  payload.size = sizeof(payload);
  payload.dispatch_info = st.info;
  payload.graph_id = st.graph_id;
  payload.graph_node = st.graph_node;
  kreplay_user_data_t user_data{};
  auto rec = make_record(*c, st, KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY,
                         KREPLAY_KERNEL_REPLAY_CONFIG, KREPLAY_CALLBACK_PHASE_ENTER, &payload);
  guarded("CONFIG", [&] { sub.callback(rec, &user_data, sub.args); });
  st.pass_count = payload.replay_pass_count;
  st.replay_continue = payload.replay_continue;
  st.user_data = user_data;
  st.config_fired = true;
}

void SdkHooks::config_exit(replay::DispatchState& st) {
  if (!st.config_fired) return;
  Context* c = rt_.registry().replay_context();
  const auto& sub = c->callbacks[KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY];
  kreplay_callback_tracing_kernel_replay_data_t payload{};
  payload.size = sizeof(payload);
  payload.dispatch_info = st.info;
  payload.graph_id = st.graph_id;
  payload.graph_node = st.graph_node;
  payload.outcome = &st.outcome;
  kreplay_user_data_t user_data = st.user_data;
  auto rec = make_record(*c, st, KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY,
                         KREPLAY_KERNEL_REPLAY_CONFIG, KREPLAY_CALLBACK_PHASE_EXIT, &payload);
  guarded("CONFIG", [&] { sub.callback(rec, &user_data, sub.args); });
}

void SdkHooks::deliver_pass(replay::DispatchState& st, kreplay_callback_phase_t phase,
                            replay::LocalContextScope* local) {
  Context* c = rt_.registry().replay_context();
  if (c == nullptr) return;
  const auto& sub = c->callbacks[KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY];
  if (!sub.wants(KREPLAY_KERNEL_REPLAY_PASS)) return;
  kreplay_callback_tracing_kernel_replay_data_t payload{};
  payload.size = sizeof(payload);
  payload.dispatch_info = st.info;
  payload.graph_id = st.graph_id;
  payload.graph_node = st.graph_node;
  payload.current_pass = st.pass;
  payload.total_passes = st.plan.indefinite ? 0 : st.plan.requested;
  payload.replay_start_context = &replay::replay_start_context;
  payload.replay_stop_context = &replay::replay_stop_context;
  if (phase == KREPLAY_CALLBACK_PHASE_EXIT) {
    payload.start_timestamp = st.timing.start_ns;
    payload.end_timestamp = st.timing.end_ns;
  }
  kreplay_user_data_t user_data = st.user_data;  // a copy: PASS writes do not persist
  auto rec = make_record(*c, st, KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY, KREPLAY_KERNEL_REPLAY_PASS,
                         phase, &payload);
  if (local) local->arm(true);
  guarded("PASS", [&] { sub.callback(rec, &user_data, sub.args); });
  if (local) local->arm(false);
}

void SdkHooks::pass_enter(replay::DispatchState& st, replay::LocalContextScope& local) {
  deliver_pass(st, KREPLAY_CALLBACK_PHASE_ENTER, &local);
}

void SdkHooks::pass_exit(replay::DispatchState& st) {
  deliver_pass(st, KREPLAY_CALLBACK_PHASE_EXIT, nullptr);
}

bool SdkHooks::range_services_begin(replay::DispatchState& st) {
  auto* d = static_cast<HookData*>(st.hook_data);
  if (d == nullptr || d->services.empty() || !st.in_range || st.pass == 0) return false;
  return d->services.begin(rt_, st);
}

void SdkHooks::range_services_end(replay::DispatchState& st) {
  if (auto* d = static_cast<HookData*>(st.hook_data)) d->services.end(st);
}

bool SdkHooks::before_submit(replay::DispatchState& st) {
  HookData* d = static_cast<HookData*>(st.hook_data);
  if (d == nullptr) {
    d = acquire_hook_data();
    st.hook_data = d;
  }
  // Every launch's first submission, replayed or not (a window's came after warm_start did the
  // same): CUDA PC sampling must be enabled before any kernel runs next to another collection.
  if (st.pass == 0) prepare_pass_services(rt_, st);
  d->traced.clear();
  d->armed.clear();
  d->sets.clear();
  d->lost = Status::Ok();
  d->services.clear();
  for (const auto& cptr : rt_.registry().contexts()) {
    Context& c = *cptr;
    if (!c.dispatch_level() || !effective(c)) continue;
    const auto& dsub = c.callbacks[KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH];
    if (dsub.wants(KREPLAY_KERNEL_DISPATCH_EXECUTE)) {
      kreplay_callback_tracing_kernel_dispatch_data_t payload{};
      payload.size = sizeof(payload);
      payload.dispatch_info = st.info;
      payload.replay_pass = st.pass;
      kreplay_user_data_t ud{};
      auto rec =
          make_record(c, st, KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH,
                      KREPLAY_KERNEL_DISPATCH_EXECUTE, KREPLAY_CALLBACK_PHASE_ENTER, &payload);
      guarded("KERNEL_DISPATCH", [&] { dsub.callback(rec, &ud, dsub.args); });
      d->traced.push_back({&c, ud});
    }
    // A launch that reads mapped host memory is counted only on passes kreplay submits after its
    // probe: counting its own run would synchronize inside its launch, and it may wait for the
    // host.
    if (c.counting.configured() && st.behind_host_waiter) {
      // Said once by the engine's decline; counting would wait behind the host waiter.
    } else if (c.counting.configured() && st.host_visible && !st.window) {
      KR_WARN_ONCE("host-visible-uncounted",
                   "dispatch {} ({}) reads mapped host memory and is not replayed; its counters "
                   "are not collected (counting it would wait inside its launch, and it may be "
                   "waiting for the host)",
                   st.info.dispatch_id, st.info.kernel_name);
    } else if (c.counting.configured()) {
      kreplay_dispatch_counting_data_t data{};
      data.size = sizeof(data);
      data.dispatch_info = st.info;
      data.correlation_id = st.correlation;
      data.replay_pass = st.pass;
      kreplay_counter_config_id_t config{};
      kreplay_user_data_t ud{};
      guarded("dispatch counting",
              [&] { c.counting.dispatch_callback(&data, &config, &ud, c.counting.dispatch_args); });
      if (config.handle != 0) {
        const ConfigEntry* e = rt_.counters().config(config.handle);
        if (e == nullptr || e->agent != st.info.agent_id.handle) {
          KR_WARN_ONCE("bad-config",
                       "a tool picked a counter config that does not exist or is "
                       "for another agent; nothing is counted for that pass");
        } else {
          d->armed.push_back({&c, ud, e});
          d->sets.push_back(e->set.get());
        }
      }
    }
    // Per-pass services follow the same rule as counting (host-visible single runs excepted).
    if (c.any_pass_service() && !(st.host_visible && !st.window)) d->services.gather(c, st);
  }
  // One kind of instrumentation per pass: counters, or one per-pass service. More than one are
  // refused together, and each hears why after the pass.
  if (d->services.kinds() + (d->sets.empty() ? 0 : 1) > 1) {
    auto names = d->services.names();
    if (!d->sets.empty()) names.insert(names.begin(), "counters");
    Status why = Error(KREPLAY_STATUS_ERROR_SERVICE_CONFLICT,
                       fmt::format("{} cannot share one pass; none of them collected on pass {} "
                                   "of dispatch {} (stop all but one of their contexts for the "
                                   "pass with replay_stop_context)",
                                   fmt::join(names, " and "), st.pass, st.info.dispatch_id));
    KR_WARN_ONCE("service-conflict", "{}", why.message());
    d->services.refuse(why);
    if (!d->sets.empty()) {
      d->lost = why;
      d->sets.clear();
    }
  }
  if (!d->services.empty()) {
    if (st.in_range && st.pass == 0) {
      // The application submits a range's first pass itself, launches in flight together.
      d->services.refuse(Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                               "per-pass services do not run on a range's first pass (the "
                               "application's own submission); give them a later pass"));
    } else if (!st.in_range) {
      d->services.begin(rt_, st);
    }  // in a range's later passes the engine arms them launch by launch (range_services_begin)
  }
  if (!d->sets.empty() && !st.in_range) {
    const AgentEntry* agent = rt_.agent(st.info.agent_id.handle);
    device::CounterBackend* backend = agent && agent->device ? agent->device->counters() : nullptr;
    Status s = backend ? backend->begin_pass(*st.launch, d->sets)
                       : Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE, "the agent has no counters");
    if (!s.ok()) {
      KR_WARN("dispatch {} pass {}: counters not collected: {}", st.info.dispatch_id, st.pass,
              s.message());
      // The tools that armed counters hear of the loss after the pass (after_complete).
      d->lost = s;
      d->sets.clear();
    }
  }
  return !d->traced.empty() || !d->sets.empty() || !d->lost.ok() || !d->services.empty();
}

void SdkHooks::after_complete(replay::DispatchState& st) {
  HookData* d = static_cast<HookData*>(st.hook_data);
  if (d == nullptr) return;
  const bool completed = st.timing.end_ns != 0;
  // What a record callback is told of this dispatch's pass.
  auto counting_data = [&](kreplay_status_t status, const char* message) {
    kreplay_dispatch_counting_data_t data{};
    data.size = sizeof(data);
    data.dispatch_info = st.info;
    data.correlation_id = st.correlation;
    data.replay_pass = st.pass;
    data.start_timestamp = st.timing.start_ns;
    data.end_timestamp = st.timing.end_ns;
    data.status = status;
    data.status_message = message;
    return data;
  };
  // Counters lost: each tool that armed them gets a record callback with no records and the status.
  auto report_lost = [&](const Status& why) {
    for (const auto& armed : d->armed) {
      kreplay_dispatch_counting_data_t data =
          counting_data(why.code() != KREPLAY_STATUS_SUCCESS ? why.code() : KREPLAY_STATUS_ERROR,
                        why.message().c_str());
      guarded("counter record", [&] {
        armed.ctx->counting.record_callback(&data, nullptr, 0, armed.user_data,
                                            armed.ctx->counting.record_args);
      });
    }
  };
  if (!d->lost.ok()) report_lost(d->lost);
  if (st.in_range && !st.range_counters_lost.ok() && !d->sets.empty()) {
    report_lost(st.range_counters_lost);
    d->sets.clear();
  }
  if (!d->sets.empty()) {
    Result<std::vector<std::vector<device::CounterValue>>> values =
        std::vector<std::vector<device::CounterValue>>{};
    if (st.in_range) {
      // The engine ran one counter session over the range's pass: this launch's values apply to
      // the armed configs that chose the session's set.
      if (st.range_values) {
        for (size_t i = 0; i < d->armed.size(); ++i) {
          values->push_back(d->sets[i] == d->sets[0] ? *st.range_values
                                                     : std::vector<device::CounterValue>{});
        }
      }
    } else {
      const AgentEntry* agent = rt_.agent(st.info.agent_id.handle);
      values = agent->device->counters()->end_pass(*st.launch);
    }
    if (!completed) {
      // Nothing ran (or the pass timed out): no values to report.
    } else if (!values.ok()) {
      KR_WARN("dispatch {} pass {}: reading counters failed: {}", st.info.dispatch_id, st.pass,
              values.status().message());
      report_lost(values.status());
    } else {
      for (size_t i = 0; i < d->armed.size() && i < values->size(); ++i) {
        const auto& armed = d->armed[i];
        const auto& vals = (*values)[i];
        if (vals.empty()) continue;  // the set needs more passes before it has values
        d->records.clear();
        for (const auto& v : vals) {
          kreplay_counter_record_t r{};
          r.size = sizeof(r);
          r.dispatch_id = st.info.dispatch_id;
          r.replay_pass = st.pass;
          r.agent_id = st.info.agent_id;
          r.counter_id.handle = rt_.counters().id_for(st.info.agent_id.handle, v.name);
          r.value = v.value;
          d->records.push_back(r);
        }
        kreplay_dispatch_counting_data_t data = counting_data(KREPLAY_STATUS_SUCCESS, "");
        guarded("counter record", [&] {
          armed.ctx->counting.record_callback(&data, d->records.data(), d->records.size(),
                                              armed.user_data, armed.ctx->counting.record_args);
        });
      }
    }
  }
  d->services.finish(rt_, st);
  for (auto& t : d->traced) {
    const auto& dsub = t.ctx->callbacks[KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH];
    kreplay_callback_tracing_kernel_dispatch_data_t payload{};
    payload.size = sizeof(payload);
    payload.dispatch_info = st.info;
    payload.replay_pass = st.pass;
    payload.start_timestamp = st.timing.start_ns;
    payload.end_timestamp = st.timing.end_ns;
    auto rec = make_record(*t.ctx, st, KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH,
                           KREPLAY_KERNEL_DISPATCH_EXECUTE, KREPLAY_CALLBACK_PHASE_EXIT, &payload);
    guarded("KERNEL_DISPATCH", [&] { dsub.callback(rec, &t.user_data, dsub.args); });
  }
  d->traced.clear();
  d->armed.clear();
  d->sets.clear();
}

device::CounterSet* SdkHooks::armed_set(replay::DispatchState& st) {
  auto* d = static_cast<HookData*>(st.hook_data);
  return d != nullptr && !d->sets.empty() ? d->sets[0] : nullptr;
}

void SdkHooks::warm_start(replay::DispatchState& st, bool range) {
  if (st.launch == nullptr) return;
  // First what the per-pass services need on the device before anything collects there (CUDA PC
  // sampling must be enabled before the counters start), then the counters' warm start.
  prepare_pass_services(rt_, st);
  bool counting = false;
  for (const auto& cptr : rt_.registry().contexts()) {
    if (cptr->counting.configured() && cptr->active.load(std::memory_order_acquire)) {
      counting = true;
      break;
    }
  }
  if (!counting) return;
  const AgentEntry* agent = rt_.agent(st.info.agent_id.handle);
  device::CounterBackend* backend = agent && agent->device ? agent->device->counters() : nullptr;
  if (backend != nullptr) backend->warm_start(*st.launch, range);
}

bool SdkHooks::range_configured() {
  Context* c = rt_.registry().range_context();
  return c != nullptr && c->active.load(std::memory_order_acquire);
}

void SdkHooks::deliver_range(replay::RangeState& r, uint32_t op, kreplay_callback_phase_t phase,
                             replay::LocalContextScope* local, replay::DispatchState* launch,
                             bool* selected) {
  Context* c = rt_.registry().range_context();
  if (c == nullptr) return;
  const auto& sub = c->callbacks[KREPLAY_CALLBACK_TRACING_RANGE_REPLAY];
  if (!sub.wants(op)) return;
  kreplay_callback_tracing_range_replay_data_t payload{};
  payload.size = sizeof(payload);
  payload.range = r.info;
  payload.launch_selected = 1;
  if (op == KREPLAY_RANGE_REPLAY_PASS) {
    payload.current_pass = r.pass;
    payload.total_passes = r.plan.indefinite ? 0 : r.plan.requested;
    payload.replay_start_context = &replay::replay_start_context;
    payload.replay_stop_context = &replay::replay_stop_context;
    if (phase == KREPLAY_CALLBACK_PHASE_EXIT) {
      payload.start_timestamp = r.pass_timing.start_ns;
      payload.end_timestamp = r.pass_timing.end_ns;
    }
  }
  if (op == KREPLAY_RANGE_REPLAY_CONFIG && phase == KREPLAY_CALLBACK_PHASE_EXIT)
    payload.outcome = &r.outcome;
  if (launch != nullptr) {
    payload.dispatch_info = launch->info;
    payload.graph_id = launch->graph_id;
    payload.graph_node = launch->graph_node;
  }
  kreplay_user_data_t user_data = r.user_data;
  kreplay_callback_tracing_record_t rec{};
  rec.context_id.handle = c->handle;
  rec.thread_id = thread_id();
  // A LAUNCH record carries its launch's correlation id; the others the range's first launch's.
  rec.correlation_id = launch != nullptr ? launch->correlation : r.correlation;
  rec.kind = KREPLAY_CALLBACK_TRACING_RANGE_REPLAY;
  rec.operation = op;
  rec.phase = phase;
  rec.payload = &payload;
  if (op == KREPLAY_RANGE_REPLAY_CONFIG && phase == KREPLAY_CALLBACK_PHASE_ENTER) {
    user_data = {};
    guarded("range CONFIG", [&] { sub.callback(rec, &user_data, sub.args); });
    r.pass_count = payload.replay_pass_count;
    r.replay_continue = payload.replay_continue;
    r.thread_bound = r.thread_bound || payload.thread_bound != 0;
    r.user_data = user_data;
    r.config_fired = true;
    return;
  }
  if (local) local->arm(true);
  guarded("range", [&] { sub.callback(rec, &user_data, sub.args); });
  if (local) local->arm(false);
  if (selected) *selected = payload.launch_selected != 0;
}

void SdkHooks::range_config_enter(replay::RangeState& r) {
  deliver_range(r, KREPLAY_RANGE_REPLAY_CONFIG, KREPLAY_CALLBACK_PHASE_ENTER, nullptr, nullptr,
                nullptr);
}

void SdkHooks::range_config_exit(replay::RangeState& r) {
  if (!r.config_fired) return;
  deliver_range(r, KREPLAY_RANGE_REPLAY_CONFIG, KREPLAY_CALLBACK_PHASE_EXIT, nullptr, nullptr,
                nullptr);
}

bool SdkHooks::range_launch(replay::RangeState& r, replay::DispatchState& launch) {
  bool selected = true;
  deliver_range(r, KREPLAY_RANGE_REPLAY_LAUNCH, KREPLAY_CALLBACK_PHASE_ENTER, nullptr, &launch,
                &selected);
  return selected;
}

void SdkHooks::range_pass_enter(replay::RangeState& r, replay::LocalContextScope& local) {
  deliver_range(r, KREPLAY_RANGE_REPLAY_PASS, KREPLAY_CALLBACK_PHASE_ENTER, &local, nullptr,
                nullptr);
}

void SdkHooks::range_pass_exit(replay::RangeState& r) {
  deliver_range(r, KREPLAY_RANGE_REPLAY_PASS, KREPLAY_CALLBACK_PHASE_EXIT, nullptr, nullptr,
                nullptr);
}

void SdkHooks::end_dispatch(replay::DispatchState& st) {
  if (st.hook_data != nullptr) {
    release_hook_data(static_cast<HookData*>(st.hook_data));
    st.hook_data = nullptr;
  }
}

}  // namespace kreplay::sdk
