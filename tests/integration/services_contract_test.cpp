// Per-pass services (include/kreplay/services.h, DESIGN.md §4) pinned on the host device: each
// service is configured on a context of its own, collects only on the passes where its context
// takes part (local context control), delivers records naming dispatch, pass, agent and kernel
// before PASS EXIT, services that cannot share a pass are refused together with
// SERVICE_CONFLICT, and the host device's values follow from what the kernel did.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "backends/host/hostrt.hpp"
#include "kreplay/kreplay.h"

namespace kreplay::test {
namespace {

namespace hr = hostrt;

enum Svc { kCounters, kPc, kSass, kPm, kSvcCount };

struct Rec {
  Svc svc = kCounters;
  uint64_t dispatch_id = 0, pass = 0, agent = 0, kernel_id = 0;
  kreplay_status_t status = KREPLAY_STATUS_SUCCESS;
  std::string function, instruction, file, name;
  uint64_t pc = 0;
  uint32_t line = 0;
  uint64_t timestamp = 0, pass_start = 0;
  double value = 0;
  bool empty_callback = false;  ///< the callback had no records (status set, or nothing)
  uint64_t seq = 0;
};

struct State {
  std::mutex mu;
  std::vector<Rec> recs;
  std::vector<std::pair<uint64_t, uint64_t>> pass_exits;  // (pass, seq)
  uint64_t seq = 0;
  uint64_t passes = 1;
  /// Services on for each pass; a pass beyond the plan leaves the contexts as they are.
  std::vector<std::set<Svc>> plan;
  kreplay_context_id_t replay_ctx{}, ctx[kSvcCount]{};
  kreplay_counter_config_id_t config{};
  std::map<std::string, kreplay_status_t> init_status;
  std::string unknown_metric_message;
  /// The SASS service's dispatch callback: passes it sits out; every call it got.
  std::set<uint64_t> sass_skips;
  std::vector<std::pair<uint64_t, uint64_t>> sass_asked;  // (dispatch, pass)

  void reset() {
    std::lock_guard lock(mu);
    recs.clear();
    pass_exits.clear();
    passes = 1;
    plan.clear();
    sass_skips.clear();
    sass_asked.clear();
  }
  std::vector<Rec> of(Svc s) {
    std::lock_guard lock(mu);
    std::vector<Rec> out;
    for (const auto& r : recs) {
      if (r.svc == s) out.push_back(r);
    }
    return out;
  }
};

State& S() {
  static State* s = new State();  // NOLINT: lives for the process
  return *s;
}

uint64_t pass_count(kreplay_kernel_dispatch_info_t, kreplay_user_data_t) {
  return S().passes;
}

void on_replay(kreplay_callback_tracing_record_t rec, kreplay_user_data_t*, void*) {
  auto* p = static_cast<kreplay_callback_tracing_kernel_replay_data_t*>(rec.payload);
  if (rec.operation == KREPLAY_KERNEL_REPLAY_CONFIG && rec.phase == KREPLAY_CALLBACK_PHASE_ENTER) {
    p->replay_pass_count = &pass_count;
    return;
  }
  if (rec.operation != KREPLAY_KERNEL_REPLAY_PASS) return;
  if (rec.phase == KREPLAY_CALLBACK_PHASE_EXIT) {
    std::lock_guard lock(S().mu);
    S().pass_exits.emplace_back(p->current_pass, ++S().seq);
    return;
  }
  if (p->current_pass >= S().plan.size()) return;
  const auto& on = S().plan[p->current_pass];
  for (int s = 0; s < kSvcCount; ++s) {
    auto st = on.count(static_cast<Svc>(s)) ? p->replay_start_context(S().ctx[s])
                                            : p->replay_stop_context(S().ctx[s]);
    EXPECT_EQ(st, KREPLAY_STATUS_SUCCESS);
  }
}

Rec head(Svc svc, const kreplay_kernel_dispatch_info_t& info, uint64_t pass,
         kreplay_status_t status) {
  Rec e;
  e.svc = svc;
  e.dispatch_id = info.dispatch_id;
  e.pass = pass;
  e.agent = info.agent_id.handle;
  e.kernel_id = info.kernel_id;
  e.status = status;
  return e;
}

void on_count(const kreplay_dispatch_counting_data_t*, kreplay_counter_config_id_t* config,
              kreplay_user_data_t*, void*) {
  *config = S().config;
}

void on_counter_record(const kreplay_dispatch_counting_data_t* d, const kreplay_counter_record_t* r,
                       size_t n, kreplay_user_data_t, void*) {
  std::lock_guard lock(S().mu);
  Rec e = head(kCounters, d->dispatch_info, d->replay_pass, d->status);
  e.seq = ++S().seq;
  e.empty_callback = n == 0;
  if (n == 0) S().recs.push_back(e);
  for (size_t i = 0; i < n; ++i) {
    e.value = r[i].value;
    S().recs.push_back(e);
  }
}

void on_service(const kreplay_pass_service_data_t* d, const kreplay_pass_service_record_t* r,
                size_t n, void* args) {
  const Svc svc = static_cast<Svc>(reinterpret_cast<intptr_t>(args));
  std::lock_guard lock(S().mu);
  Rec e = head(svc, d->dispatch_info, d->replay_pass, d->status);
  e.seq = ++S().seq;
  e.pass_start = d->start_timestamp;
  if (n == 0) {
    e.empty_callback = true;
    S().recs.push_back(e);
  }
  for (size_t i = 0; i < n; ++i) {
    Rec x = e;
    // Every record names its own dispatch, pass, agent and kernel.
    EXPECT_EQ(r[i].dispatch_id, d->dispatch_info.dispatch_id);
    EXPECT_EQ(r[i].replay_pass, d->replay_pass);
    EXPECT_EQ(r[i].agent_id.handle, d->dispatch_info.agent_id.handle);
    EXPECT_EQ(r[i].kernel_id, d->dispatch_info.kernel_id);
    EXPECT_EQ(r[i].kind, d->kind);
    x.function = r[i].function;
    x.instruction = r[i].instruction;
    x.file = r[i].source_file;
    x.line = r[i].source_line;
    x.name = r[i].name;
    x.pc = r[i].pc_offset;
    x.timestamp = r[i].timestamp;
    x.value = r[i].value;
    S().recs.push_back(x);
  }
}

int sass_wants(const kreplay_pass_service_data_t* d, void*) {
  EXPECT_EQ(d->kind, KREPLAY_PASS_SERVICE_SASS_METRICS);
  EXPECT_EQ(d->status, KREPLAY_STATUS_SUCCESS);
  std::lock_guard lock(S().mu);
  S().sass_asked.emplace_back(d->dispatch_info.dispatch_id, d->replay_pass);
  return S().sass_skips.count(d->replay_pass) ? 0 : 1;
}

void* arg(Svc s) {
  return reinterpret_cast<void*>(static_cast<intptr_t>(s));
}

int tool_init(kreplay_client_finalize_t, void*) {
  auto& s = S();
  kreplay_create_context(&s.replay_ctx);
  kreplay_configure_callback_tracing_service(s.replay_ctx, KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY,
                                             nullptr, 0, on_replay, nullptr);
  for (auto& c : s.ctx) kreplay_create_context(&c);
  kreplay_configure_dispatch_counting_service(s.ctx[kCounters], on_count, nullptr,
                                              on_counter_record, nullptr);
  kreplay_pc_sampling_config_t pc{};
  pc.size = sizeof(pc);
  pc.period_log2 = 5;
  s.init_status["pc"] = kreplay_configure_pc_sampling_service(s.ctx[kPc], &pc, nullptr, nullptr,
                                                              on_service, arg(kPc));
  s.init_status["pc_again"] = kreplay_configure_pc_sampling_service(s.ctx[kPc], &pc, nullptr,
                                                                    nullptr, on_service, arg(kPc));
  kreplay_pc_sampling_config_t bad_period = pc;
  bad_period.period_log2 = 40;
  s.init_status["pc_period"] = kreplay_configure_pc_sampling_service(
      s.ctx[kSass], &bad_period, nullptr, nullptr, on_service, arg(kPc));
  kreplay_pc_sampling_config_t small = pc;
  small.size = 4;
  s.init_status["pc_size"] = kreplay_configure_pc_sampling_service(s.ctx[kSass], &small, nullptr,
                                                                   nullptr, on_service, arg(kPc));
  s.init_status["pc_null_cb"] =
      kreplay_configure_pc_sampling_service(s.ctx[kSass], &pc, nullptr, nullptr, nullptr, nullptr);

  const char* typo[] = {"smsp__sass_inst_executd"};
  kreplay_sass_metrics_config_t bad_sass{sizeof(bad_sass), typo, 1};
  s.init_status["sass_unknown"] = kreplay_configure_sass_metrics_service(
      s.ctx[kSass], &bad_sass, nullptr, nullptr, on_service, arg(kSass));
  s.unknown_metric_message = kreplay_get_last_error_message();
  kreplay_sass_metrics_config_t sass{sizeof(sass), nullptr, 0};  // the default set
  s.init_status["sass"] = kreplay_configure_sass_metrics_service(s.ctx[kSass], &sass, sass_wants,
                                                                 nullptr, on_service, arg(kSass));

  kreplay_pm_sampling_config_t no_metrics{sizeof(no_metrics), nullptr, 0, 64};
  s.init_status["pm_none"] = kreplay_configure_pm_sampling_service(s.ctx[kPm], &no_metrics, nullptr,
                                                                   nullptr, on_service, arg(kPm));
  const char* pm_metrics[] = {"pm__bytes_read", "pm__bytes_written"};
  kreplay_pm_sampling_config_t pm{sizeof(pm), pm_metrics, 2, 64};
  s.init_status["pm"] = kreplay_configure_pm_sampling_service(s.ctx[kPm], &pm, nullptr, nullptr,
                                                              on_service, arg(kPm));

  kreplay_start_context(s.replay_ctx);
  for (auto c : s.ctx) kreplay_start_context(c);
  return 0;
}

kreplay_tool_configure_result_t* configure(uint32_t, const char*, uint32_t, kreplay_client_id_t*) {
  static kreplay_tool_configure_result_t r{sizeof(r), tool_init, nullptr, nullptr};
  return &r;
}

// x[i] = x[i] * 2 + 1 over n floats; thread 0 bumps a module-scope counter.
uint32_t* g_counter = nullptr;
constexpr uint32_t kUpdateLine = __LINE__ + 5;  // the line of the load and the store below
void k_update(hr::ThreadContext& t) {
  auto* x = t.arg<float*>(0);
  auto n = t.arg<uint32_t>(1);
  uint64_t i = t.global_thread_id();
  if (i < n) t.store(&x[i], t.load(&x[i]) * 2.0f + 1.0f);
  if (i == 0) t.atomic_add(g_counter, 1u);
}
// A compute phase then a memory phase: each thread counts 64 ops, then copies 16 floats.
void k_phases(hr::ThreadContext& t) {
  auto* x = t.arg<float*>(0);
  uint64_t i = t.global_thread_id();
  t.count_ops(64);
  for (int k = 0; k < 16; ++k) t.store(&x[i * 16 + k], t.load(&x[i * 16 + k]) + 1.0f);
}

struct Fixture {
  hr::Kernel update = 0, phases = 0;
};

Fixture& fx() {
  static Fixture f = [] {
    EXPECT_EQ(kreplay_force_configure(&configure), KREPLAY_STATUS_SUCCESS);
    hr::Config c;
    c.memory_bytes = 64ull << 20;
    c.pinned_bytes = 64ull << 20;
    EXPECT_TRUE(hr::init(c).ok());
    hr::ModuleDesc d{"services_module",
                     {{"_Z6updatePfj", k_update, {8, 4}}, {"_Z6phasesPf", k_phases, {8}}},
                     {{"counter", 4, {}}}};
    auto m = hr::load_module(d);
    Fixture out;
    out.update = *hr::get_kernel(*m, "_Z6updatePfj");
    out.phases = *hr::get_kernel(*m, "_Z6phasesPf");
    g_counter = static_cast<uint32_t*>(*hr::get_global(*m, "counter"));
    const char* names[] = {"bytes_written"};
    size_t agents = 0;
    kreplay_get_agent_count(&agents);
    kreplay_agent_t a{};
    a.size = sizeof(a);
    kreplay_query_agent(0, &a);
    EXPECT_EQ(kreplay_create_counter_config(a.id, names, 1, &S().config), KREPLAY_STATUS_SUCCESS);
    return out;
  }();
  return f;
}

constexpr uint32_t kN = 1000;

class Services : public ::testing::Test {
 protected:
  void SetUp() override {
    fx();
    S().reset();
    *g_counter = 0;
    x_ = static_cast<float*>(*hr::malloc(kN * 16 * sizeof(float)));
    for (uint32_t i = 0; i < kN * 16; ++i) x_[i] = 1.0f;
  }
  void TearDown() override { EXPECT_TRUE(hr::free(x_).ok()); }
  void update() {
    ASSERT_TRUE(
        hr::launch_args(fx().update, {(kN + 63) / 64}, {64}, hr::default_stream(), x_, kN).ok());
    ASSERT_TRUE(hr::device_synchronize().ok());
  }
  // The launch ran exactly once as the application sees it.
  void expect_updated_once() {
    EXPECT_EQ(*g_counter, 1u);
    EXPECT_EQ(x_[0], 3.0f);
    EXPECT_EQ(x_[kN - 1], 3.0f);
    EXPECT_EQ(x_[kN], 1.0f);
  }
  static std::set<uint64_t> passes_of(const std::vector<Rec>& recs) {
    std::set<uint64_t> out;
    for (const auto& r : recs) out.insert(r.pass);
    return out;
  }
  float* x_ = nullptr;
};

TEST_F(Services, ConfigurationStatuses) {
  fx();
  const auto& st = S().init_status;
  EXPECT_EQ(st.at("pc"), KREPLAY_STATUS_SUCCESS);
  EXPECT_EQ(st.at("pc_again"), KREPLAY_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED);
  EXPECT_EQ(st.at("pc_period"), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(st.at("pc_size"), KREPLAY_STATUS_ERROR_INCOMPATIBLE_ABI);
  EXPECT_EQ(st.at("pc_null_cb"), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(st.at("sass_unknown"), KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND);
  EXPECT_NE(S().unknown_metric_message.find("smsp__sass_inst_executed"), std::string::npos)
      << S().unknown_metric_message;
  EXPECT_EQ(st.at("sass"), KREPLAY_STATUS_SUCCESS);
  EXPECT_EQ(st.at("pm_none"), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(st.at("pm"), KREPLAY_STATUS_SUCCESS);
  // Outside initialize the configuration is locked.
  kreplay_pc_sampling_config_t pc{sizeof(pc), 0};
  EXPECT_EQ(kreplay_configure_pc_sampling_service(S().ctx[kPm], &pc, nullptr, nullptr, on_service,
                                                  arg(kPc)),
            KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED);
  EXPECT_STREQ(kreplay_get_status_name(KREPLAY_STATUS_ERROR_SERVICE_CONFLICT),
               "KREPLAY_STATUS_ERROR_SERVICE_CONFLICT");
  EXPECT_STREQ(kreplay_get_pass_service_name(KREPLAY_PASS_SERVICE_SASS_METRICS), "sass_metrics");
  EXPECT_EQ(kreplay_get_pass_service_name(KREPLAY_PASS_SERVICE_LAST), nullptr);
}

TEST_F(Services, EachServiceCollectsOnlyOnItsPass) {
  S().passes = 4;
  S().plan = {{kCounters}, {kPc}, {kSass}, {kPm}};
  update();
  expect_updated_once();
  EXPECT_EQ(passes_of(S().of(kCounters)), (std::set<uint64_t>{0}));
  EXPECT_EQ(passes_of(S().of(kPc)), (std::set<uint64_t>{1}));
  EXPECT_EQ(passes_of(S().of(kSass)), (std::set<uint64_t>{2}));
  EXPECT_EQ(passes_of(S().of(kPm)), (std::set<uint64_t>{3}));
  std::set<uint64_t> dispatches;
  for (const auto& r : S().recs) {
    EXPECT_EQ(r.status, KREPLAY_STATUS_SUCCESS) << r.svc << " pass " << r.pass;
    EXPECT_FALSE(r.empty_callback) << r.svc << " pass " << r.pass;
    EXPECT_NE(r.kernel_id, 0u);
    EXPECT_NE(r.agent, 0u);
    dispatches.insert(r.dispatch_id);
  }
  EXPECT_EQ(dispatches.size(), 1u);
  // Each pass's records arrive before its PASS EXIT.
  for (const auto& r : S().recs) {
    auto exit = std::find_if(S().pass_exits.begin(), S().pass_exits.end(),
                             [&](const auto& e) { return e.first == r.pass; });
    ASSERT_NE(exit, S().pass_exits.end());
    EXPECT_LT(r.seq, exit->second);
  }
}

TEST_F(Services, LocalStopIsStickyAcrossPasses) {
  S().passes = 3;
  S().plan = {{kPc}};  // passes 1 and 2 keep pass 0's choice
  update();
  EXPECT_EQ(passes_of(S().of(kPc)), (std::set<uint64_t>{0, 1, 2}));
  EXPECT_TRUE(S().of(kSass).empty());
  EXPECT_TRUE(S().of(kPm).empty());
  EXPECT_TRUE(S().of(kCounters).empty());
  expect_updated_once();
}

TEST_F(Services, SassMetricsCountWhatTheKernelExecuted) {
  S().passes = 2;
  S().plan = {{kSass}, {}};
  update();
  std::map<std::string, std::map<std::string, double>> by_instruction;  // instr -> metric -> v
  std::set<uint64_t> pcs;
  for (const auto& r : S().of(kSass)) {
    EXPECT_EQ(r.function, "_Z6updatePfj");
    EXPECT_NE(r.file.find("services_contract_test.cpp"), std::string::npos) << r.file;
    EXPECT_EQ(r.pc % 16, 0u);
    pcs.insert(r.pc);
    by_instruction[r.instruction][r.name] = r.value;
    const uint32_t line = r.instruction == "ATOMG.E.ADD.32" ? kUpdateLine + 1 : kUpdateLine;
    EXPECT_EQ(r.line, line) << r.instruction;
  }
  EXPECT_EQ(pcs.size(), 3u);
  // 1000 active threads in 16 blocks of 64 (32 warps, each with an active thread); thread 0 alone
  // does the atomic.
  EXPECT_EQ(by_instruction["LDG.E.32"]["smsp__sass_thread_inst_executed"], kN);
  EXPECT_EQ(by_instruction["LDG.E.32"]["smsp__sass_inst_executed"], 32);
  EXPECT_EQ(by_instruction["LDG.E.32"]["smsp__sass_inst_executed_op_global_ld"], 32);
  EXPECT_EQ(by_instruction["LDG.E.32"].count("smsp__sass_inst_executed_op_global_st"), 0u);
  EXPECT_EQ(by_instruction["STG.E.32"]["smsp__sass_inst_executed_op_global_st"], 32);
  EXPECT_EQ(by_instruction["ATOMG.E.ADD.32"]["smsp__sass_thread_inst_executed"], 1);
  EXPECT_EQ(by_instruction["ATOMG.E.ADD.32"]["smsp__sass_inst_executed_op_global_atom"], 1);
}

TEST_F(Services, PcSamplesFollowTheVirtualClockAndRepeatPerPass) {
  S().passes = 2;
  S().plan = {{kPc}, {kPc}};
  update();
  std::map<uint64_t, std::map<std::string, double>> per_pass;  // pass -> instr/reason -> samples
  std::map<uint64_t, double> total;
  for (const auto& r : S().of(kPc)) {
    per_pass[r.pass][r.instruction + "/" + r.name] += r.value;
    total[r.pass] += r.value;
  }
  // Loads cost 8 cycles, stores 4, the atomic 16: 12016 cycles, one sample every 2^5.
  EXPECT_EQ(total[0], 12016 / 32);
  EXPECT_EQ(per_pass[0], per_pass[1]);  // every pass samples the same work the same way
  EXPECT_GT(per_pass[0]["LDG.E.32/long_scoreboard"], per_pass[0]["STG.E.32/lg_throttle"]);
  EXPECT_GT(per_pass[0]["STG.E.32/lg_throttle"], 0);
  for (const auto& [key, v] : per_pass[0]) {
    EXPECT_TRUE(key == "LDG.E.32/long_scoreboard" || key == "STG.E.32/lg_throttle" ||
                key == "ATOMG.E.ADD.32/membar")
        << key;
  }
}

TEST_F(Services, PmSamplesShowComputeThenMemory) {
  S().passes = 2;
  S().plan = {{kPm}, {}};
  ASSERT_TRUE(hr::launch_args(fx().phases, {1}, {32}, hr::default_stream(), x_).ok());
  ASSERT_TRUE(hr::device_synchronize().ok());
  auto pm = S().of(kPm);
  ASSERT_FALSE(pm.empty());
  double read = 0, written = 0;
  uint64_t last_ts = 0;
  std::vector<double> read_series;
  for (const auto& r : pm) {
    EXPECT_EQ(r.pass, 0u);
    EXPECT_GE(r.timestamp, r.pass_start);
    if (r.name == "pm__bytes_read") {
      read += r.value;
      read_series.push_back(r.value);
      EXPECT_GT(r.timestamp, last_ts);
      last_ts = r.timestamp;
    } else {
      EXPECT_EQ(r.name, "pm__bytes_written");
      written += r.value;
    }
  }
  // 32 threads, each 16 loads and 16 stores of 4 bytes.
  EXPECT_EQ(read, 32 * 16 * 4);
  EXPECT_EQ(written, 32 * 16 * 4);
  // Per thread: 64 cycles of ops, then 16 * 12 cycles of memory; 64 ns intervals.
  EXPECT_EQ(read_series.size(), (32 * (64 + 16 * 12) + 63) / 64);
  EXPECT_EQ(read_series.front(), 0);  // the first interval is thread 0's compute phase
  EXPECT_GT(read_series[2], 0);       // then its memory phase
}

TEST_F(Services, ServicesThatCannotSharePassAreRefusedTogether) {
  S().passes = 3;
  S().plan = {{kPc, kSass}, {kCounters, kPm}, {kPc}};
  update();
  expect_updated_once();
  for (Svc s : {kPc, kSass}) {
    auto recs = S().of(s);
    auto p0 = std::count_if(recs.begin(), recs.end(), [](const Rec& r) { return r.pass == 0; });
    ASSERT_EQ(p0, 1) << s;  // one callback, no records
    for (const auto& r : recs) {
      if (r.pass != 0) continue;
      EXPECT_EQ(r.status, KREPLAY_STATUS_ERROR_SERVICE_CONFLICT);
      EXPECT_TRUE(r.empty_callback);
    }
  }
  for (Svc s : {kCounters, kPm}) {
    auto recs = S().of(s);
    ASSERT_EQ(recs.size(), 1u) << s;
    EXPECT_EQ(recs[0].pass, 1u);
    EXPECT_EQ(recs[0].status, KREPLAY_STATUS_ERROR_SERVICE_CONFLICT);
    EXPECT_TRUE(recs[0].empty_callback);
  }
  // Alone on its pass, PC sampling collects.
  auto pc = S().of(kPc);
  EXPECT_TRUE(std::any_of(pc.begin(), pc.end(), [](const Rec& r) {
    return r.pass == 2 && r.status == KREPLAY_STATUS_SUCCESS && !r.empty_callback;
  }));
}

TEST_F(Services, DispatchCallbackSitsOutAPass) {
  // Pass 0 has PC sampling and SASS metrics on, but SASS sits it out: no conflict.
  S().passes = 2;
  S().plan = {{kPc, kSass}, {kSass}};
  S().sass_skips = {0};
  update();
  expect_updated_once();
  auto pc = S().of(kPc);
  ASSERT_FALSE(pc.empty());
  for (const auto& r : pc) {
    EXPECT_EQ(r.pass, 0u);
    EXPECT_EQ(r.status, KREPLAY_STATUS_SUCCESS);
  }
  EXPECT_EQ(passes_of(S().of(kSass)), (std::set<uint64_t>{1}));
  // Asked once per pass its context took part in, never for a pass it was stopped on.
  std::vector<uint64_t> asked;
  for (const auto& [dispatch, pass] : S().sass_asked) asked.push_back(pass);
  EXPECT_EQ(asked, (std::vector<uint64_t>{0, 1}));
}

TEST_F(Services, SingleRunObeysTheSameRule) {
  // Not replayed: every context is on for the one run, so the services conflict.
  S().passes = 1;
  update();
  expect_updated_once();
  for (Svc s : {kCounters, kPc, kSass, kPm}) {
    auto recs = S().of(s);
    ASSERT_EQ(recs.size(), 1u) << s;
    EXPECT_EQ(recs[0].status, KREPLAY_STATUS_ERROR_SERVICE_CONFLICT) << s;
  }
}

TEST_F(Services, ListsWhatEachServiceCollects) {
  kreplay_agent_t a{};
  a.size = sizeof(a);
  ASSERT_EQ(kreplay_query_agent(0, &a), KREPLAY_STATUS_SUCCESS);
  struct Listed {
    std::vector<const char*> names;  // read after the callback: the strings outlive it
    std::vector<int> defaults;
  } listed;
  auto cb = [](kreplay_agent_id_t, kreplay_pass_service_kind_t,
               const kreplay_pass_service_metric_t* m, size_t n, void* ud) {
    auto* l = static_cast<Listed*>(ud);
    for (size_t i = 0; i < n; ++i) {
      l->names.push_back(m[i].name);
      l->defaults.push_back(m[i].in_default_set);
    }
    return KREPLAY_STATUS_SUCCESS;
  };
  auto has = [](const Listed& l, const char* name) {
    return std::any_of(l.names.begin(), l.names.end(),
                       [&](const char* n) { return std::strcmp(n, name) == 0; });
  };
  ASSERT_EQ(
      kreplay_iterate_pass_service_metrics(a.id, KREPLAY_PASS_SERVICE_SASS_METRICS, cb, &listed),
      KREPLAY_STATUS_SUCCESS);
  EXPECT_TRUE(has(listed, "smsp__sass_inst_executed"));
  EXPECT_EQ(listed.defaults.front(), 1);
  listed = {};
  ASSERT_EQ(
      kreplay_iterate_pass_service_metrics(a.id, KREPLAY_PASS_SERVICE_PM_SAMPLING, cb, &listed),
      KREPLAY_STATUS_SUCCESS);
  EXPECT_TRUE(has(listed, "pm__bytes_read"));
  EXPECT_EQ(kreplay_iterate_pass_service_metrics(a.id, KREPLAY_PASS_SERVICE_NONE, cb, &listed),
            KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(
      kreplay_iterate_pass_service_metrics({999}, KREPLAY_PASS_SERVICE_PC_SAMPLING, cb, &listed),
      KREPLAY_STATUS_ERROR_AGENT_NOT_FOUND);
}

}  // namespace
}  // namespace kreplay::test
