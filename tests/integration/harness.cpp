#include "harness.hpp"

#include <gtest/gtest.h>

#include <thread>

#include "common/env.hpp"
#include "common/util.hpp"
#include "sdk/runtime.hpp"

namespace kreplay::test {
namespace {

ToolState& state() {
  static ToolState* s = new ToolState();  // NOLINT
  return *s;
}

uint64_t pass_count_cb(kreplay_kernel_dispatch_info_t info, kreplay_user_data_t) {
  auto& t = state();
  std::function<uint64_t(const kreplay_kernel_dispatch_info_t&)> fn;
  {
    std::lock_guard lock(t.mu);
    t.pass_count_calls.push_back(info.dispatch_id);
    fn = t.scenario.pass_count;
  }
  return fn ? fn(info) : 1;
}

int continue_cb(kreplay_kernel_dispatch_info_t info, uint64_t pass, uint64_t total,
                kreplay_user_data_t) {
  auto& t = state();
  std::function<int(uint64_t, uint64_t)> fn;
  {
    std::lock_guard lock(t.mu);
    t.continue_calls.push_back({info.dispatch_id, pass, total});
    fn = t.scenario.cont;
  }
  return fn ? fn(pass, total) : 1;
}

void record(const kreplay_callback_tracing_record_t& rec, Event e) {
  e.kind = rec.kind;
  e.operation = rec.operation;
  e.phase = rec.phase;
  e.correlation = rec.correlation_id.internal;
  e.context = rec.context_id.handle;
  e.thread = rec.thread_id;
  std::lock_guard lock(state().mu);
  state().events.push_back(std::move(e));
}

void replay_cb(kreplay_callback_tracing_record_t rec, kreplay_user_data_t* user_data, void*) {
  auto* p = static_cast<kreplay_callback_tracing_kernel_replay_data_t*>(rec.payload);
  Event e;
  e.dispatch_id = p->dispatch_info.dispatch_id;
  e.pass = p->current_pass;
  e.total = p->total_passes;
  e.user_data = *user_data;
  e.name = p->dispatch_info.kernel_name;
  e.start = p->start_timestamp;
  e.end = p->end_timestamp;
  e.flags = p->dispatch_info.flags;
  e.graph_id = p->graph_id;
  e.graph_node = p->graph_node;
  auto& t = state();
  Scenario sc;
  {
    std::lock_guard lock(t.mu);
    sc = t.scenario;
  }
  if (rec.operation == KREPLAY_KERNEL_REPLAY_CONFIG && rec.phase == KREPLAY_CALLBACK_PHASE_ENTER) {
    if (sc.pass_count) p->replay_pass_count = &pass_count_cb;
    if (sc.cont) p->replay_continue = &continue_cb;
    if (sc.on_config_enter) sc.on_config_enter(*p, user_data);
    e.user_data = *user_data;
  } else if (rec.operation == KREPLAY_KERNEL_REPLAY_CONFIG) {
    if (p->outcome) e.outcome = *p->outcome;
  } else if (rec.operation == KREPLAY_KERNEL_REPLAY_PASS &&
             rec.phase == KREPLAY_CALLBACK_PHASE_ENTER) {
    record(rec, e);  // record before the hook, so nested launches log after it
    if (sc.on_pass_enter) sc.on_pass_enter(*p);
    return;
  } else if (rec.operation == KREPLAY_KERNEL_REPLAY_PASS) {
    if (sc.on_pass_exit) sc.on_pass_exit(*p);
  }
  record(rec, e);
}

void trace_cb(kreplay_callback_tracing_record_t rec, kreplay_user_data_t*, void*) {
  Event e;
  if (rec.kind == KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH) {
    auto* p = static_cast<kreplay_callback_tracing_kernel_dispatch_data_t*>(rec.payload);
    e.dispatch_id = p->dispatch_info.dispatch_id;
    e.pass = p->replay_pass;
    e.start = p->start_timestamp;
    e.end = p->end_timestamp;
    e.name = p->dispatch_info.kernel_name;
  } else if (rec.kind == KREPLAY_CALLBACK_TRACING_CODE_OBJECT) {
    auto* p = static_cast<kreplay_callback_tracing_code_object_data_t*>(rec.payload);
    e.name = p->kernel_name ? p->kernel_name : p->module_name;
    e.mangled = p->mangled_name ? p->mangled_name : "";
    e.dispatch_id = p->kernel_id;
  } else if (rec.kind == KREPLAY_CALLBACK_TRACING_MEMORY_ALLOCATION) {
    auto* p = static_cast<kreplay_callback_tracing_memory_allocation_data_t*>(rec.payload);
    e.address = p->address;
    e.bytes = p->allocation_size;
    e.pass = p->memory_kind;
  }
  record(rec, e);
}

void counting_dispatch_cb(const kreplay_dispatch_counting_data_t* data,
                          kreplay_counter_config_id_t* config, kreplay_user_data_t* user_data,
                          void*) {
  std::function<kreplay_counter_config_id_t(const kreplay_dispatch_counting_data_t&)> fn;
  {
    std::lock_guard lock(state().mu);
    fn = state().scenario.counters;
  }
  if (fn) *config = fn(*data);
  user_data->value = data->replay_pass + 1000;
}

void counting_record_cb(const kreplay_dispatch_counting_data_t* data,
                        const kreplay_counter_record_t* records, size_t count,
                        kreplay_user_data_t user_data, void*) {
  std::lock_guard lock(state().mu);
  EXPECT_EQ(user_data.value, data->replay_pass + 1000);
  if (data->status != KREPLAY_STATUS_SUCCESS) {
    EXPECT_EQ(count, 0u);
    EXPECT_NE(data->status_message, nullptr);
    state().counters.push_back(
        {data->dispatch_info.dispatch_id, data->replay_pass, "", 0.0, data->status});
  }
  for (size_t i = 0; i < count; ++i) {
    kreplay_counter_info_t info{};
    info.size = sizeof(info);
    EXPECT_EQ(kreplay_query_counter_info(records[i].counter_id, &info), KREPLAY_STATUS_SUCCESS);
    EXPECT_EQ(records[i].dispatch_id, data->dispatch_info.dispatch_id);
    state().counters.push_back(
        {records[i].dispatch_id, records[i].replay_pass, info.name, records[i].value});
  }
}

int tool_init(kreplay_client_finalize_t, void*) {
  auto& t = state();
  EXPECT_EQ(kreplay_create_context(&t.replay_ctx), KREPLAY_STATUS_SUCCESS);
  EXPECT_EQ(kreplay_configure_callback_tracing_service(
                t.replay_ctx, KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY, nullptr, 0, replay_cb, nullptr),
            KREPLAY_STATUS_SUCCESS);
  // A second KERNEL_REPLAY subscriber is refused.
  kreplay_context_id_t second{};
  EXPECT_EQ(kreplay_create_context(&second), KREPLAY_STATUS_SUCCESS);
  t.second_replay_status = kreplay_configure_callback_tracing_service(
      second, KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY, nullptr, 0, replay_cb, nullptr);

  EXPECT_EQ(kreplay_create_context(&t.trace_ctx), KREPLAY_STATUS_SUCCESS);
  uint32_t exec = KREPLAY_KERNEL_DISPATCH_EXECUTE;
  EXPECT_EQ(kreplay_configure_callback_tracing_service(
                t.trace_ctx, KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH, &exec, 1, trace_cb, nullptr),
            KREPLAY_STATUS_SUCCESS);

  EXPECT_EQ(kreplay_create_context(&t.count_ctx), KREPLAY_STATUS_SUCCESS);
  EXPECT_EQ(kreplay_configure_dispatch_counting_service(t.count_ctx, counting_dispatch_cb, nullptr,
                                                        counting_record_cb, nullptr),
            KREPLAY_STATUS_SUCCESS);

  EXPECT_EQ(kreplay_create_context(&t.misc_ctx), KREPLAY_STATUS_SUCCESS);
  EXPECT_EQ(kreplay_configure_callback_tracing_service(
                t.misc_ctx, KREPLAY_CALLBACK_TRACING_CODE_OBJECT, nullptr, 0, trace_cb, nullptr),
            KREPLAY_STATUS_SUCCESS);
  EXPECT_EQ(kreplay_configure_callback_tracing_service(
                t.misc_ctx, KREPLAY_CALLBACK_TRACING_MEMORY_ALLOCATION, nullptr, 0, trace_cb,
                nullptr),
            KREPLAY_STATUS_SUCCESS);

  // Configured but never started: local control must refuse it.
  EXPECT_EQ(kreplay_create_context(&t.never_started_ctx), KREPLAY_STATUS_SUCCESS);
  EXPECT_EQ(kreplay_configure_callback_tracing_service(t.never_started_ctx,
                                                       KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH,
                                                       nullptr, 0, trace_cb, nullptr),
            KREPLAY_STATUS_SUCCESS);

  for (auto ctx : {t.replay_ctx, t.trace_ctx, t.count_ctx, t.misc_ctx}) {
    EXPECT_EQ(kreplay_start_context(ctx), KREPLAY_STATUS_SUCCESS);
  }
  t.initialized = true;
  return 0;
}

kreplay_tool_configure_result_t* test_configure(uint32_t, const char*, uint32_t,
                                                kreplay_client_id_t* id) {
  static kreplay_tool_configure_result_t result{sizeof(result), tool_init, nullptr, nullptr};
  id->name = "contract-test-tool";
  return &result;
}

// Kernels. Parameters are (float* x, uint32_t n) for update; see TestModule.
uint32_t* g_launch_counter = nullptr;
uint32_t* g_exec_counter = nullptr;

void k_update(hostrt::ThreadContext& t) {
  auto* x = t.arg<float*>(0);
  auto n = t.arg<uint32_t>(1);
  uint64_t i = t.global_thread_id();
  if (i < n) t.store(&x[i], t.load(&x[i]) * 2.0f + 1.0f);
  if (i == 0) t.atomic_add(g_launch_counter, 1u);
}

// `update` with a device-side assert: a thread whose element is negative traps.
void k_checked(hostrt::ThreadContext& t) {
  auto* x = t.arg<float*>(0);
  auto n = t.arg<uint32_t>(1);
  uint64_t i = t.global_thread_id();
  if (i >= n) return;
  float v = t.load(&x[i]);
  if (v < 0.0f) {
    t.trap();
    return;
  }
  t.store(&x[i], v * 2.0f + 1.0f);
}

void k_touch(hostrt::ThreadContext& t) {
  auto* x = t.arg<float*>(0);
  auto k = t.arg<uint32_t>(1);
  if (t.global_thread_id() == 0) t.store(&x[k], t.load(&x[k]) + 1.0f);
}

void k_spin(hostrt::ThreadContext& t) {
  auto* flag = t.arg<uint32_t*>(0);
  if (t.global_thread_id() != 0) return;
  while (std::atomic_ref<uint32_t>(*flag).load() == 0) std::this_thread::yield();
}

// Counts executions outside device memory, so restores do not rewind it.
std::atomic<uint32_t> g_spin_second_execs{0};

void k_spin_second(hostrt::ThreadContext& t) {
  auto* flag = t.arg<uint32_t*>(0);
  if (t.global_thread_id() != 0) return;
  uint32_t n = g_spin_second_execs.fetch_add(1);
  if (n >= 1) {
    while (std::atomic_ref<uint32_t>(*flag).load() == 0) std::this_thread::yield();
  }
}

void k_histogram(hostrt::ThreadContext& t) {
  auto* data = t.arg<uint32_t*>(0);
  auto* bins = t.arg<uint32_t*>(1);
  auto n = t.arg<uint32_t>(2);
  uint64_t i = t.global_thread_id();
  if (i < n) t.atomic_add(&bins[t.load(&data[i]) % 16], 1u);
}

}  // namespace

void ToolState::reset() {
  std::lock_guard lock(mu);
  scenario = Scenario{};
  events.clear();
  counters.clear();
  continue_calls.clear();
  pass_count_calls.clear();
}

std::vector<Event> ToolState::of(kreplay_callback_tracing_kind_t kind, uint32_t op) const {
  std::vector<Event> out;
  for (const auto& e : events) {
    if (e.kind == kind && (op == 0 || e.operation == op)) out.push_back(e);
  }
  return out;
}

std::vector<Event> ToolState::for_dispatch(uint64_t id) const {
  std::vector<Event> out;
  for (const auto& e : events) {
    if ((e.kind == KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY ||
         e.kind == KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH) &&
        e.dispatch_id == id)
      out.push_back(e);
  }
  return out;
}

const Event* ToolState::config_exit(uint64_t dispatch_id) const {
  for (const auto& e : events) {
    if (e.kind == KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY &&
        e.operation == KREPLAY_KERNEL_REPLAY_CONFIG && e.phase == KREPLAY_CALLBACK_PHASE_EXIT &&
        e.dispatch_id == dispatch_id)
      return &e;
  }
  return nullptr;
}

uint64_t ToolState::last_dispatch_id() const {
  for (auto it = events.rbegin(); it != events.rend(); ++it) {
    if (it->kind == KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY) return it->dispatch_id;
  }
  return 0;
}

ToolState& tool() { return state(); }

std::atomic<uint32_t>& spin_second_executions() { return g_spin_second_execs; }

void init_runtime() {
  static std::once_flag once;
  std::call_once(once, [] {
    ASSERT_EQ(kreplay_force_configure(&test_configure), KREPLAY_STATUS_SUCCESS);
    hostrt::Config c;
    c.device_count = static_cast<int>(env::get_int("KREPLAY_HOST_DEVICES", 1));
    c.memory_bytes = 64ull << 20;
    c.pinned_bytes = 48ull << 20;
    ASSERT_TRUE(hostrt::init(c).ok());
    ASSERT_TRUE(state().initialized);
  });
}

TestModule& module() {
  static TestModule m = [] {
    TestModule t;
    hostrt::ModuleDesc d;
    d.name = "contract_module";
    d.kernels = {{"_Z6updatePfj", k_update, {8, 4}},
                 {"_Z5touchPfj", k_touch, {8, 4}},
                 {"_Z4spinPj", k_spin, {8}},
                 {"_Z11spin_secondPj", k_spin_second, {8}},
                 {"_Z9histogramPjS_j", k_histogram, {8, 8, 4}},
                 {"_Z36ncclDevKernel_AllReduce_Sum_f32_RINGPfj", k_update, {8, 4}},
                 {"_Z7checkedPfj", k_checked, {8, 4}}};
    d.globals = {{"launch_counter", 4, {}}, {"exec_counter", 4, {}}};
    auto mod = hostrt::load_module(d);
    EXPECT_TRUE(mod.ok());
    t.module = *mod;
    t.update = *hostrt::get_kernel(t.module, "_Z6updatePfj");
    t.touch = *hostrt::get_kernel(t.module, "touch(float*, unsigned int)");
    t.spin = *hostrt::get_kernel(t.module, "_Z4spinPj");
    t.spin_second = *hostrt::get_kernel(t.module, "_Z11spin_secondPj");
    t.histogram = *hostrt::get_kernel(t.module, "_Z9histogramPjS_j");
    t.collective = *hostrt::get_kernel(t.module, "_Z36ncclDevKernel_AllReduce_Sum_f32_RINGPfj");
    t.checked = *hostrt::get_kernel(t.module, "_Z7checkedPfj");
    t.launch_counter = static_cast<uint32_t*>(*hostrt::get_global(t.module, "launch_counter"));
    t.exec_counter = static_cast<uint32_t*>(*hostrt::get_global(t.module, "exec_counter"));
    hostrt::ModuleDesc heap;
    heap.name = "heap_module";
    heap.kernels = {{"_Z11heap_updatePfj", k_update, {8, 4}}};
    heap.uses_device_heap = true;
    t.heap_update = *hostrt::get_kernel(*hostrt::load_module(heap), "_Z11heap_updatePfj");
    g_launch_counter = t.launch_counter;
    g_exec_counter = t.exec_counter;
    return t;
  }();
  return m;
}

Status launch_update(float* x, uint32_t n, hostrt::Stream stream) {
  if (stream == 0) stream = hostrt::default_stream();
  return hostrt::launch_args(module().update, {(n + 63) / 64}, {64}, stream, x, n);
}

float updated(float v, int k) {
  for (int i = 0; i < k; ++i) v = v * 2.0f + 1.0f;
  return v;
}

void HostDeviceTest::SetUp() {
  init_runtime();
  module();
  tool().reset();
  opts_ = sdk::Runtime::get().engine().options();
  tool().scenario.pass_count = [](const auto&) { return uint64_t{3}; };
}

void HostDeviceTest::TearDown() {
  sdk::Runtime::get().engine().set_options(opts_);
  tool().reset();
  for (float* b : buffers_) EXPECT_TRUE(hostrt::free(b).ok());
}

void HostDeviceTest::set_options(const std::function<void(replay::Options&)>& change) {
  replay::Options o = sdk::Runtime::get().engine().options();
  change(o);
  sdk::Runtime::get().engine().set_options(o);
}

float* HostDeviceTest::buffer(uint32_t n) {
  auto* p = static_cast<float*>(*hostrt::malloc(n * sizeof(float)));
  for (uint32_t i = 0; i < n; ++i) p[i] = 0.25f;
  buffers_.push_back(p);
  return p;
}

}  // namespace kreplay::test
