// The range replay contract tests' tool and fixture on the host device (range_contract_test.cpp,
// range_cache_control_test.cpp): a tool linked into the test binary that records every range
// replay callback, kernel trace and counter record, self-checking kernels, and the Range fixture.
// Included by exactly one source file of each test binary (its definitions are that binary's).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "backends/host/hostrt.hpp"
#include "common/util.hpp"
#include "kreplay/kreplay.h"
#include "sdk/runtime.hpp"

namespace kreplay::test {
namespace {

namespace hr = hostrt;

struct RangeEvent {
  uint32_t op = 0;
  kreplay_callback_phase_t phase = KREPLAY_CALLBACK_PHASE_NONE;
  uint64_t range_id = 0, pass = 0, total = 0;
  uint64_t dispatch_id = 0;  // LAUNCH
  kreplay_range_outcome_record_t outcome{};
  std::vector<uint64_t> dispatch_ids;
  std::string close_call;  // outcome.close_call, copied
};

struct Trace {
  uint64_t dispatch_id, pass;
  std::string kernel;
};

struct Counter {
  uint64_t dispatch_id, pass;
  std::string name;
  double value;
};

struct State {
  std::mutex mu;
  std::vector<RangeEvent> ranges;
  std::vector<Trace> traces;
  std::vector<Counter> counters;
  std::function<uint64_t()> passes = [] { return uint64_t{3}; };
  std::function<bool(const kreplay_kernel_dispatch_info_t&)> select;
  /// Which dispatches the counting callback gives `config` (unset: all).
  std::function<bool(const kreplay_kernel_dispatch_info_t&)> count_if;
  std::function<void(const kreplay_callback_tracing_range_replay_data_t&)> on_pass_enter;
  bool thread_bound = false;  ///< CONFIG ENTER sets thread_bound
  kreplay_counter_config_id_t config{};
  kreplay_context_id_t range_ctx{}, trace_ctx{}, count_ctx{};
  kreplay_status_t second = KREPLAY_STATUS_SUCCESS;
  // kreplay_configure_range_replay_options(synchronize = ...) during initialize.
  kreplay_status_t bad_sync = KREPLAY_STATUS_SUCCESS;
  bool span_after_close = true, span_after_span = false, span_after_default = false;

  void reset() {
    std::lock_guard lock(mu);
    ranges.clear();
    traces.clear();
    counters.clear();
    passes = [] { return uint64_t{3}; };
    select = nullptr;
    count_if = nullptr;
    on_pass_enter = nullptr;
    thread_bound = false;
    config = {};
  }
  std::vector<RangeEvent> exits() {
    std::lock_guard lock(mu);
    std::vector<RangeEvent> out;
    for (const auto& e : ranges) {
      if (e.op == KREPLAY_RANGE_REPLAY_CONFIG && e.phase == KREPLAY_CALLBACK_PHASE_EXIT)
        out.push_back(e);
    }
    return out;
  }
};

State& S() {
  static State* s = new State();  // NOLINT
  return *s;
}

uint64_t pass_count(kreplay_range_info_t, kreplay_user_data_t) { return S().passes(); }

void on_range(kreplay_callback_tracing_record_t rec, kreplay_user_data_t*, void*) {
  auto* p = static_cast<kreplay_callback_tracing_range_replay_data_t*>(rec.payload);
  RangeEvent e;
  e.op = rec.operation;
  e.phase = rec.phase;
  e.range_id = p->range.range_id;
  e.pass = p->current_pass;
  e.total = p->total_passes;
  e.dispatch_id = p->dispatch_info.dispatch_id;
  if (rec.operation == KREPLAY_RANGE_REPLAY_CONFIG && rec.phase == KREPLAY_CALLBACK_PHASE_ENTER) {
    EXPECT_EQ(p->range.launch_count, 0u);
    p->replay_pass_count = &pass_count;
    if (S().thread_bound) p->thread_bound = 1;
  }
  if (rec.operation == KREPLAY_RANGE_REPLAY_LAUNCH && S().select)
    p->launch_selected = S().select(p->dispatch_info) ? 1 : 0;
  if (rec.operation == KREPLAY_RANGE_REPLAY_PASS && rec.phase == KREPLAY_CALLBACK_PHASE_ENTER &&
      S().on_pass_enter)
    S().on_pass_enter(*p);
  if (rec.operation == KREPLAY_RANGE_REPLAY_CONFIG && rec.phase == KREPLAY_CALLBACK_PHASE_EXIT) {
    e.outcome = *p->outcome;
    if (p->outcome->close_call) e.close_call = p->outcome->close_call;
    e.dispatch_ids.assign(p->outcome->dispatch_ids, p->outcome->dispatch_ids + p->outcome->launches);
  }
  std::lock_guard lock(S().mu);
  S().ranges.push_back(e);
}

void on_trace(kreplay_callback_tracing_record_t rec, kreplay_user_data_t*, void*) {
  if (rec.phase != KREPLAY_CALLBACK_PHASE_EXIT) return;
  auto* p = static_cast<kreplay_callback_tracing_kernel_dispatch_data_t*>(rec.payload);
  std::lock_guard lock(S().mu);
  S().traces.push_back({p->dispatch_info.dispatch_id, p->replay_pass, p->dispatch_info.kernel_name});
}

void on_count(const kreplay_dispatch_counting_data_t* d, kreplay_counter_config_id_t* config,
              kreplay_user_data_t*, void*) {
  if (S().count_if && !S().count_if(d->dispatch_info)) return;
  *config = S().config;
}

void on_record(const kreplay_dispatch_counting_data_t*, const kreplay_counter_record_t* r, size_t n,
               kreplay_user_data_t, void*) {
  std::lock_guard lock(S().mu);
  for (size_t i = 0; i < n; ++i) {
    kreplay_counter_info_t info{};
    info.size = sizeof(info);
    kreplay_query_counter_info(r[i].counter_id, &info);
    S().counters.push_back({r[i].dispatch_id, r[i].replay_pass, info.name, r[i].value});
  }
}

int tool_init(kreplay_client_finalize_t, void*) {
  auto& s = S();
  kreplay_create_context(&s.range_ctx);
  EXPECT_EQ(kreplay_configure_callback_tracing_service(s.range_ctx, KREPLAY_CALLBACK_TRACING_RANGE_REPLAY,
                                                       nullptr, 0, on_range, nullptr),
            KREPLAY_STATUS_SUCCESS);
  kreplay_context_id_t second{};
  kreplay_create_context(&second);
  s.second = kreplay_configure_callback_tracing_service(
      second, KREPLAY_CALLBACK_TRACING_RANGE_REPLAY, nullptr, 0, on_range, nullptr);
  kreplay_range_replay_options_t ro{};
  ro.size = sizeof(ro);
  ro.synchronize = KREPLAY_RANGE_SYNC_LAST;
  s.bad_sync = kreplay_configure_range_replay_options(&ro);
  ro.synchronize = KREPLAY_RANGE_SYNC_CLOSE;
  EXPECT_EQ(kreplay_configure_range_replay_options(&ro), KREPLAY_STATUS_SUCCESS);
  s.span_after_close = sdk::Runtime::get().engine().range_options().span_syncs;
  ro.synchronize = KREPLAY_RANGE_SYNC_DEFAULT;  // leaves the setting as it is
  EXPECT_EQ(kreplay_configure_range_replay_options(&ro), KREPLAY_STATUS_SUCCESS);
  s.span_after_default = sdk::Runtime::get().engine().range_options().span_syncs;
  ro.synchronize = KREPLAY_RANGE_SYNC_SPAN;
  EXPECT_EQ(kreplay_configure_range_replay_options(&ro), KREPLAY_STATUS_SUCCESS);
  s.span_after_span = sdk::Runtime::get().engine().range_options().span_syncs;
  kreplay_create_context(&s.trace_ctx);
  kreplay_configure_callback_tracing_service(s.trace_ctx, KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH,
                                             nullptr, 0, on_trace, nullptr);
  kreplay_create_context(&s.count_ctx);
  kreplay_configure_dispatch_counting_service(s.count_ctx, on_count, nullptr, on_record, nullptr);
  for (auto c : {s.range_ctx, s.trace_ctx, s.count_ctx}) kreplay_start_context(c);
  return 0;
}

kreplay_tool_configure_result_t* configure(uint32_t, const char*, uint32_t, kreplay_client_id_t*) {
  static kreplay_tool_configure_result_t r{sizeof(r), tool_init, nullptr, nullptr};
  return &r;
}

// x[i] = x[i] * 2 + 1; a module-scope counter bumped once per execution.
uint32_t* g_counter = nullptr;
void k_update(hr::ThreadContext& t) {
  auto* x = t.arg<float*>(0);
  auto n = t.arg<uint32_t>(1);
  uint64_t i = t.global_thread_id();
  if (i < n) t.store(&x[i], t.load(&x[i]) * 2.0f + 1.0f);
  if (i == 0) t.atomic_add(g_counter, 1u);
}
// y[i] = y[i] + x[i]: reads what update wrote (kernels of a range read each other's outputs).
void k_accumulate(hr::ThreadContext& t) {
  auto* y = t.arg<float*>(0);
  auto* x = t.arg<const float*>(1);
  auto n = t.arg<uint32_t>(2);
  uint64_t i = t.global_thread_id();
  if (i < n) t.store(&y[i], t.load(&y[i]) + t.load(&x[i]));
}

// Spins while *flag == 0 (a latch the host opens).
void k_spin(hr::ThreadContext& t) {
  auto* flag = t.arg<uint32_t*>(0);
  if (t.global_thread_id() != 0) return;
  while (std::atomic_ref<uint32_t>(*flag).load() == 0) std::this_thread::yield();
}

struct Fixture {
  hr::Kernel update = 0, accumulate = 0, collective = 0, heap_update = 0, spin = 0;
};

Fixture& fx() {
  static Fixture f = [] {
    EXPECT_EQ(kreplay_force_configure(&configure), KREPLAY_STATUS_SUCCESS);
    hr::Config c;
    c.memory_bytes = 64ull << 20;
    c.pinned_bytes = 64ull << 20;
    EXPECT_TRUE(hr::init(c).ok());
    hr::ModuleDesc d{"range_module",
                     {{"_Z6updatePfj", k_update, {8, 4}},
                      {"_Z10accumulatePfPKfj", k_accumulate, {8, 8, 4}},
                      {"_Z36ncclDevKernel_AllReduce_Sum_f32_RINGPfj", k_update, {8, 4}},
                      {"_Z4spinPj", k_spin, {8}}},
                     {{"counter", 4, {}}}};
    auto m = hr::load_module(d);
    Fixture f;
    f.update = *hr::get_kernel(*m, "_Z6updatePfj");
    f.accumulate = *hr::get_kernel(*m, "_Z10accumulatePfPKfj");
    f.collective = *hr::get_kernel(*m, "_Z36ncclDevKernel_AllReduce_Sum_f32_RINGPfj");
    f.spin = *hr::get_kernel(*m, "_Z4spinPj");
    g_counter = static_cast<uint32_t*>(*hr::get_global(*m, "counter"));
    hr::ModuleDesc heap{"range_heap_module", {{"_Z11heap_updatePfj", k_update, {8, 4}}}, {}};
    heap.uses_device_heap = true;
    f.heap_update = *hr::get_kernel(*hr::load_module(heap), "_Z11heap_updatePfj");
    return f;
  }();
  return f;
}

class Range : public ::testing::Test {
 protected:
  void SetUp() override {
    fx();
    S().reset();
    *g_counter = 0;
    stream_ = hr::default_stream();
    saved_ = sdk::Runtime::get().engine().range_options();
    // These tests read the host device's memory directly after a synchronization (which a CUDA
    // program can do only with managed memory): synchronizations close ranges here, except in
    // the tests of ranges that stay open across them (span_syncs(true)).
    options_ = saved_;
    options_.span_syncs = false;
    sdk::Runtime::get().engine().set_range_options(options_);
  }
  void TearDown() override {
    sdk::Runtime::get().engine().range_barrier(0, KREPLAY_RANGE_CLOSE_EXIT);
    ASSERT_TRUE(hr::device_synchronize().ok());
    sdk::Runtime::get().engine().set_range_options(saved_);
    for (float* b : bufs_) EXPECT_TRUE(hr::free(b).ok());
  }
  float* buffer(uint32_t n, float v) {
    auto* p = static_cast<float*>(*hr::malloc(n * sizeof(float)));
    for (uint32_t i = 0; i < n; ++i) p[i] = v + 0.001f * static_cast<float>(i % 31);
    bufs_.push_back(p);
    return p;
  }
  void update(float* x, uint32_t n, hr::Stream s = 0) {
    ASSERT_TRUE(hr::launch_args(fx().update, {(n + 63) / 64}, {64}, s ? s : stream_, x, n).ok());
  }
  // UnifiedMemoryPerf's pattern, twice: a latch kernel over mapped host memory, two updates of @p x
  // queued behind it on @p s and a copy (which closes any open range), then the host opens the
  // latch. With host waits of 50 ms and drains of 4 s, the thread must come back from every call
  // without waiting for the latch.
  void run_behind_a_latch(float* x, hr::Stream s) {
    const auto saved = sdk::Runtime::get().engine().options();
    auto o = saved;
    o.host_wait_ms = 50;
    o.drain_timeout_ms = 4000;
    sdk::Runtime::get().engine().set_options(o);
    auto* flag = static_cast<uint32_t*>(*hr::malloc_host_mapped(sizeof(uint32_t)));
    for (int round = 1; round <= 2; ++round) {
      std::atomic_ref<uint32_t>(*flag).store(0);
      const uint64_t t0 = now_ns();
      ASSERT_TRUE(hr::launch_args(fx().spin, {1}, {1}, s, flag).ok());
      update(x, 256, s);
      update(x, 256, s);
      float out = 0;
      ASSERT_TRUE(hr::memcpy_async(&out, x, sizeof(out), s).ok());  // closes any open range
      EXPECT_LT(now_ns() - t0, 2'000'000'000u) << "round " << round << ": waited for the latch";
      std::atomic_ref<uint32_t>(*flag).store(1);
      ASSERT_TRUE(hr::stream_synchronize(s).ok());
    }
    EXPECT_TRUE(hr::free(flag).ok());
    sdk::Runtime::get().engine().set_options(saved);
  }
  void set_range(const std::function<void(replay::RangeOptions&)>& f) {
    auto o = sdk::Runtime::get().engine().range_options();
    f(o);
    sdk::Runtime::get().engine().set_range_options(o);
  }
  void span_syncs(bool on) {
    set_range([on](replay::RangeOptions& o) { o.span_syncs = on; });
  }
  // The value at x[i] read back with a copy (which closes an open range first).
  float read(const float* x, uint32_t i = 7) {
    float v = 0;
    EXPECT_TRUE(hr::memcpy(&v, x + i, sizeof(v)).ok());
    return v;
  }
  float expect(float v, int k) {
    for (int i = 0; i < k; ++i) v = v * 2.0f + 1.0f;
    return v;
  }
  hr::Stream stream_ = 0;
  replay::RangeOptions saved_, options_;  // as the test started; what it starts from
  std::vector<float*> bufs_;
};

}  // namespace
}  // namespace kreplay::test
