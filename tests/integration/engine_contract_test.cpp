// The replay contract of DESIGN.md §2, pinned rule by rule on the host device, through the public C
// API as a tool sees it. Each test names the rule it pins.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <cstring>
#include <thread>

#include "common/util.hpp"
#include "harness.hpp"
#include "kreplay/cxx/names.hpp"
#include "replay/engine.hpp"
#include "sdk/runtime.hpp"

namespace kreplay::test {
namespace {

class Contract : public ::testing::Test {
 protected:
  void SetUp() override {
    init_runtime();
    module();
    tool().reset();
    *module().launch_counter = 0;
    *module().exec_counter = 0;
    spin_second_executions() = 0;
    opts_ = sdk::Runtime::get().engine().options();
  }
  void TearDown() override {
    sdk::Runtime::get().engine().set_options(opts_);
    tool().reset();
  }

  // A buffer of n floats with known contents.
  float* make_buffer(uint32_t n, float first = 0.25f) {
    auto p = hostrt::malloc(n * sizeof(float));
    EXPECT_TRUE(p.ok());
    auto* x = static_cast<float*>(*p);
    for (uint32_t i = 0; i < n; ++i) x[i] = first + 0.001f * static_cast<float>(i % 97);
    buffers_.push_back(x);
    return x;
  }
  void sync() { ASSERT_TRUE(hostrt::device_synchronize().ok()); }
  // At 3 passes, @p kernel (which does what `update` does) is declined for @p reason and runs
  // exactly once; the next ordinary launch is replayed again.
  void expect_declined_once_then_replayed(hostrt::Kernel kernel, kreplay_decline_reason_t reason,
                                          const char* reason_name) {
    tool().scenario.pass_count = [](const auto&) { return uint64_t{3}; };
    float* x = make_buffer(64);
    ASSERT_TRUE(hostrt::launch_args(kernel, {1}, {64}, hostrt::default_stream(), x, 64u).ok());
    sync();
    const auto* exit = tool().config_exit(tool().last_dispatch_id());
    ASSERT_NE(exit, nullptr);
    EXPECT_EQ(exit->outcome.outcome, KREPLAY_REPLAY_OUTCOME_DECLINED);
    EXPECT_EQ(exit->outcome.reason, reason);
    EXPECT_STREQ(kreplay_get_decline_reason_name(reason), reason_name);
    EXPECT_EQ(x[0], updated(0.25f, 1));  // ran exactly once
    EXPECT_EQ(*module().launch_counter, 1u);
    ASSERT_TRUE(launch_update(x, 64).ok());
    sync();
    EXPECT_EQ(tool().config_exit(tool().last_dispatch_id())->outcome.outcome,
              KREPLAY_REPLAY_OUTCOME_REPLAYED);
    EXPECT_EQ(x[0], updated(0.25f, 2));
    EXPECT_EQ(*module().launch_counter, 2u);
  }
  // A tool that counts every launch at @p passes, short host waits (50 ms; drains 4 s), and a
  // mapped flag for module().spin, the latch kernel of the host-waiter tests, initially closed.
  uint32_t* count_with_a_latch(uint64_t passes) {
    auto o = sdk::Runtime::get().engine().options();
    o.host_wait_ms = 50;
    o.drain_timeout_ms = 4000;
    sdk::Runtime::get().engine().set_options(o);
    const char* names[] = {"launches"};
    kreplay_counter_config_id_t cfg{};
    EXPECT_EQ(kreplay_create_counter_config({hostrt::testing::agent_of()}, names, 1, &cfg),
              KREPLAY_STATUS_SUCCESS);
    tool().scenario.pass_count = [passes](const auto&) { return passes; };
    tool().scenario.counters = [cfg](const auto&) { return cfg; };
    auto* flag = static_cast<uint32_t*>(*hostrt::malloc_host_mapped(sizeof(uint32_t)));
    *flag = 0;
    return flag;
  }
  std::vector<Event> passes(uint64_t id, kreplay_callback_phase_t phase) {
    std::vector<Event> out;
    for (const auto& e : tool().for_dispatch(id)) {
      if (e.kind == KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY &&
          e.operation == KREPLAY_KERNEL_REPLAY_PASS && e.phase == phase)
        out.push_back(e);
    }
    return out;
  }
  std::vector<Event> dispatch_exits(uint64_t id) {
    std::vector<Event> out;
    for (const auto& e : tool().for_dispatch(id)) {
      if (e.kind == KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH && e.phase == KREPLAY_CALLBACK_PHASE_EXIT)
        out.push_back(e);
    }
    return out;
  }
  ~Contract() override {
    for (float* b : buffers_) EXPECT_TRUE(hostrt::free(b).ok());
  }

  replay::Options opts_;
  std::vector<float*> buffers_;
};

// ---- The pass-count table, row by row ----

TEST_F(Contract, NullPassCountRunsOnceWithoutPasses) {
  float* x = make_buffer(256);
  ASSERT_TRUE(launch_update(x, 256).ok());
  sync();
  uint64_t id = tool().last_dispatch_id();
  EXPECT_TRUE(passes(id, KREPLAY_CALLBACK_PHASE_ENTER).empty());
  const Event* out = tool().config_exit(id);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->outcome.outcome, KREPLAY_REPLAY_OUTCOME_NOT_REQUESTED);
  EXPECT_EQ(out->outcome.bytes_snapshotted, 0u);
  EXPECT_TRUE(tool().pass_count_calls.empty());
  EXPECT_EQ(*module().launch_counter, 1u);
  EXPECT_EQ(x[5], updated(0.25f + 0.005f, 1));
}

TEST_F(Contract, PassCountOneIsNotReplayed) {
  tool().scenario.pass_count = [](const auto&) { return uint64_t{1}; };
  float* x = make_buffer(256);
  ASSERT_TRUE(launch_update(x, 256).ok());
  sync();
  uint64_t id = tool().last_dispatch_id();
  EXPECT_EQ(tool().pass_count_calls.size(), 1u);
  EXPECT_TRUE(passes(id, KREPLAY_CALLBACK_PHASE_ENTER).empty());
  EXPECT_EQ(tool().config_exit(id)->outcome.outcome, KREPLAY_REPLAY_OUTCOME_NOT_REQUESTED);
  EXPECT_EQ(tool().config_exit(id)->outcome.bytes_snapshotted, 0u);
  EXPECT_EQ(*module().launch_counter, 1u);
}

TEST_F(Contract, FixedCountWithoutContinueRunsExactlyN) {
  tool().scenario.pass_count = [](const auto&) { return uint64_t{3}; };
  float* x = make_buffer(256);
  ASSERT_TRUE(launch_update(x, 256).ok());
  sync();
  uint64_t id = tool().last_dispatch_id();
  auto enters = passes(id, KREPLAY_CALLBACK_PHASE_ENTER);
  auto exits = passes(id, KREPLAY_CALLBACK_PHASE_EXIT);
  ASSERT_EQ(enters.size(), 3u);
  ASSERT_EQ(exits.size(), 3u);
  for (uint64_t p = 0; p < 3; ++p) {
    EXPECT_EQ(enters[p].pass, p);
    EXPECT_EQ(enters[p].total, 3u);
  }
  EXPECT_TRUE(tool().continue_calls.empty());
  for (const auto& e : exits) EXPECT_GT(e.end, e.start);  // PASS EXIT carries the pass's times
  for (const auto& e : enters) EXPECT_EQ(e.end, 0u);
  const auto& o = tool().config_exit(id)->outcome;
  EXPECT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(o.passes_requested, 3u);
  EXPECT_EQ(o.passes_executed, 3u);
  EXPECT_GT(o.bytes_snapshotted, 0u);
  EXPECT_EQ(*module().launch_counter, 1u);
  EXPECT_EQ(x[5], updated(0.25f + 0.005f, 1));
}

TEST_F(Contract, ContinueEndsEarlyAndIsNeverAskedAfterTheLastPass) {
  tool().scenario.pass_count = [](const auto&) { return uint64_t{5}; };
  tool().scenario.cont = [](uint64_t pass, uint64_t) { return pass < 1 ? 1 : 0; };
  float* x = make_buffer(64);
  ASSERT_TRUE(launch_update(x, 64).ok());
  sync();
  uint64_t id = tool().last_dispatch_id();
  EXPECT_EQ(passes(id, KREPLAY_CALLBACK_PHASE_EXIT).size(), 2u);
  ASSERT_EQ(tool().continue_calls.size(), 2u);
  EXPECT_EQ(tool().continue_calls[0].pass, 0u);
  EXPECT_EQ(tool().continue_calls[1].pass, 1u);
  EXPECT_EQ(tool().continue_calls[0].total, 5u);
  EXPECT_EQ(tool().config_exit(id)->outcome.passes_executed, 2u);
  EXPECT_EQ(*module().launch_counter, 1u);
  EXPECT_EQ(x[0], updated(0.25f, 1));
}

TEST_F(Contract, ContinueCannotExtendAFixedLoop) {
  tool().scenario.pass_count = [](const auto&) { return uint64_t{3}; };
  tool().scenario.cont = [](uint64_t, uint64_t) { return 1; };
  float* x = make_buffer(64);
  ASSERT_TRUE(launch_update(x, 64).ok());
  sync();
  uint64_t id = tool().last_dispatch_id();
  EXPECT_EQ(passes(id, KREPLAY_CALLBACK_PHASE_EXIT).size(), 3u);
  // Asked after passes 0 and 1 only: never after pass N-1.
  ASSERT_EQ(tool().continue_calls.size(), 2u);
  EXPECT_EQ(tool().continue_calls.back().pass, 1u);
  EXPECT_EQ(*module().launch_counter, 1u);
}

TEST_F(Contract, IndefiniteLoopAsksAfterEveryPassAndReportsZeroTotal) {
  tool().scenario.pass_count = [](const auto&) { return uint64_t{0}; };
  tool().scenario.cont = [](uint64_t pass, uint64_t total) {
    EXPECT_EQ(total, 0u);
    return pass < 4 ? 1 : 0;
  };
  float* x = make_buffer(64);
  ASSERT_TRUE(launch_update(x, 64).ok());
  sync();
  uint64_t id = tool().last_dispatch_id();
  auto enters = passes(id, KREPLAY_CALLBACK_PHASE_ENTER);
  ASSERT_EQ(enters.size(), 5u);
  for (const auto& e : enters) EXPECT_EQ(e.total, 0u);
  ASSERT_EQ(tool().continue_calls.size(), 5u);  // including the pass that ends the loop
  EXPECT_EQ(tool().continue_calls.back().pass, 4u);
  const auto& o = tool().config_exit(id)->outcome;
  EXPECT_EQ(o.passes_requested, 0u);
  EXPECT_EQ(o.passes_executed, 5u);
  EXPECT_EQ(*module().launch_counter, 1u);
  EXPECT_EQ(x[0], updated(0.25f, 1));
}

TEST_F(Contract, ZeroWithoutContinueIsRejectedAndRunsOnce) {
  tool().scenario.pass_count = [](const auto&) { return uint64_t{0}; };
  float* x = make_buffer(64);
  ASSERT_TRUE(launch_update(x, 64).ok());
  sync();
  uint64_t id = tool().last_dispatch_id();
  EXPECT_TRUE(passes(id, KREPLAY_CALLBACK_PHASE_ENTER).empty());
  const auto& o = tool().config_exit(id)->outcome;
  EXPECT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_DECLINED);
  EXPECT_EQ(o.reason, KREPLAY_DECLINE_REASON_INVALID_PLAN);
  EXPECT_EQ(*module().launch_counter, 1u);
}

// ---- Identity ----

TEST_F(Contract, OneDispatchIdAndCorrelationIdAcrossEveryPass) {
  tool().scenario.pass_count = [](const auto&) { return uint64_t{4}; };
  const char* names[] = {"launches"};
  kreplay_counter_config_id_t cfg{};
  ASSERT_EQ(kreplay_create_counter_config({hostrt::testing::agent_of()}, names, 1, &cfg),
            KREPLAY_STATUS_SUCCESS);
  tool().scenario.counters = [cfg](const auto&) { return cfg; };
  float* x = make_buffer(64);
  ASSERT_TRUE(launch_update(x, 64).ok());
  ASSERT_TRUE(launch_update(x, 64).ok());
  sync();
  std::vector<uint64_t> ids;
  for (const auto& e : tool().of(KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY, KREPLAY_KERNEL_REPLAY_CONFIG)) {
    if (e.phase == KREPLAY_CALLBACK_PHASE_ENTER) ids.push_back(e.dispatch_id);
  }
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_NE(ids[0], ids[1]);
  EXPECT_NE(ids[0], 0u);
  for (uint64_t id : ids) {
    auto evs = tool().for_dispatch(id);
    ASSERT_FALSE(evs.empty());
    uint64_t corr = evs.front().correlation;
    size_t dispatch_exits_seen = 0;
    for (const auto& e : evs) {
      EXPECT_EQ(e.correlation, corr) << "correlation id changed between passes";
      if (e.kind == KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH && e.phase == KREPLAY_CALLBACK_PHASE_EXIT)
        ++dispatch_exits_seen;
    }
    EXPECT_EQ(dispatch_exits_seen, 4u);
    size_t counter_records = 0;
    for (const auto& c : tool().counters) {
      if (c.dispatch_id == id) {
        EXPECT_EQ(c.name, "launches");
        EXPECT_EQ(c.value, 1.0);
        EXPECT_LT(c.pass, 4u);
        ++counter_records;
      }
    }
    EXPECT_EQ(counter_records, 4u);
  }
  EXPECT_EQ(*module().launch_counter, 2u);
}

TEST_F(Contract, DeclinedSingleRunKeepsTheReservedId) {
  tool().scenario.pass_count = [](const auto&) { return uint64_t{3}; };
  hostrt::testing::fail_next_snapshot();
  float* x = make_buffer(64);
  ASSERT_TRUE(launch_update(x, 64).ok());
  sync();
  uint64_t id = tool().last_dispatch_id();
  const auto& o = tool().config_exit(id)->outcome;
  EXPECT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_DECLINED);
  EXPECT_EQ(o.reason, KREPLAY_DECLINE_REASON_SNAPSHOT_FAILED);
  auto exits = dispatch_exits(id);
  ASSERT_EQ(exits.size(), 1u);  // the single run carries the same id, pass 0
  EXPECT_EQ(exits[0].pass, 0u);
  EXPECT_EQ(*module().launch_counter, 1u);
}

TEST_F(Contract, UserDataFromConfigReachesEveryPass) {
  tool().scenario.pass_count = [](const auto&) { return uint64_t{3}; };
  tool().scenario.on_config_enter = [](auto&, kreplay_user_data_t* ud) { ud->value = 0xfeed; };
  float* x = make_buffer(64);
  ASSERT_TRUE(launch_update(x, 64).ok());
  sync();
  uint64_t id = tool().last_dispatch_id();
  for (const auto& e : tool().for_dispatch(id)) {
    if (e.kind == KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY) {
      EXPECT_EQ(e.user_data.value, 0xfeedu);
    }
  }
}

// ---- Memory: the last pass is not restored; one completion per launch ----

class SelfCheck : public Contract, public ::testing::WithParamInterface<int> {};

TEST_P(SelfCheck, FinalMemoryEqualsARunWithoutReplay) {
  const int n_passes = GetParam();
  if (n_passes > 0) {
    tool().scenario.pass_count = [n_passes](const auto&) { return uint64_t(n_passes); };
  } else {
    // Indefinite loop that stops by itself at the 6th pass.
    tool().scenario.pass_count = [](const auto&) { return uint64_t{0}; };
    tool().scenario.cont = [](uint64_t pass, uint64_t) { return pass < 5 ? 1 : 0; };
  }
  constexpr uint32_t n = 5000;
  constexpr int launches = 6;
  float* x = make_buffer(n);
  std::vector<float> expect(x, x + n);
  for (auto& v : expect) v = updated(v, launches);
  for (int i = 0; i < launches; ++i) ASSERT_TRUE(launch_update(x, n).ok());
  sync();
  EXPECT_EQ(std::memcmp(x, expect.data(), n * sizeof(float)), 0);
  EXPECT_EQ(*module().launch_counter, static_cast<uint32_t>(launches));
  size_t completions = 0;
  for (const auto& e : tool().of(KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY, KREPLAY_KERNEL_REPLAY_CONFIG)) {
    if (e.phase == KREPLAY_CALLBACK_PHASE_EXIT) {
      ++completions;
      EXPECT_EQ(e.outcome.outcome, n_passes == 1 ? KREPLAY_REPLAY_OUTCOME_NOT_REQUESTED
                                                 : KREPLAY_REPLAY_OUTCOME_REPLAYED);
      EXPECT_EQ(e.outcome.passes_executed, n_passes > 0 ? uint64_t(n_passes) : 6u);
    }
  }
  EXPECT_EQ(completions, static_cast<size_t>(launches));
}

INSTANTIATE_TEST_SUITE_P(Passes, SelfCheck, ::testing::Values(1, 2, 3, 8, 0),
                         [](const auto& info) {
                           return info.param == 0 ? std::string("indefinite_early_stop")
                                                  : "passes_" + std::to_string(info.param);
                         });

TEST_F(Contract, AtomicHistogramIsExactUnderReplay) {
  tool().scenario.pass_count = [](const auto&) { return uint64_t{4}; };
  constexpr uint32_t n = 3000;
  auto* data = static_cast<uint32_t*>(*hostrt::malloc(n * 4));
  auto* bins = static_cast<uint32_t*>(*hostrt::malloc(16 * 4));
  std::vector<uint32_t> expect(16, 0);
  for (uint32_t i = 0; i < n; ++i) data[i] = i * 2654435761u;
  std::memset(bins, 0, 64);
  for (int rep = 0; rep < 3; ++rep) {
    for (uint32_t i = 0; i < n; ++i) expect[data[i] % 16]++;
    ASSERT_TRUE(hostrt::launch_args(module().histogram, {(n + 127) / 128}, {128},
                                    hostrt::default_stream(), data, bins, n)
                    .ok());
  }
  sync();
  EXPECT_TRUE(std::equal(expect.begin(), expect.end(), bins));
  ASSERT_TRUE(hostrt::free(data).ok());
  ASSERT_TRUE(hostrt::free(bins).ok());
}

TEST_F(Contract, RestoreCopiesBackOnlyChangedChunks) {
  tool().scenario.pass_count = [](const auto&) { return uint64_t{4}; };
  constexpr uint32_t n = 1 << 18;  // 1 MiB of floats = 16 chunks of 64 KiB
  float* x = make_buffer(n);
  ASSERT_TRUE(hostrt::launch_args(module().touch, {1}, {1}, hostrt::default_stream(), x,
                                  uint32_t{70000})
                  .ok());
  sync();
  const auto& o = tool().config_exit(tool().last_dispatch_id())->outcome;
  EXPECT_GE(o.bytes_snapshotted, uint64_t{n} * 4);
  // Three restores, each one 64 KiB chunk.
  EXPECT_EQ(o.bytes_restored, 3u * 64 * 1024);
  ASSERT_EQ(o.interval_count, 4u);
  EXPECT_EQ(o.intervals[0].kind, KREPLAY_REPLAY_INTERVAL_SNAPSHOT);
  EXPECT_EQ(o.intervals[1].kind, KREPLAY_REPLAY_INTERVAL_RESTORE);
  EXPECT_EQ(o.intervals[3].after_pass, 2u);
  EXPECT_EQ(x[70000], 0.25f + 0.001f * static_cast<float>(70000 % 97) + 1.0f);
}

TEST_F(Contract, ArgsScopeSnapshotsOnlyArgumentRegionsAndGlobals) {
  auto opt = opts_;
  opt.scope = KREPLAY_SNAPSHOT_SCOPE_ARGS;
  sdk::Runtime::get().engine().set_options(opt);
  tool().scenario.pass_count = [](const auto&) { return uint64_t{2}; };
  float* x = make_buffer(1024);
  float* other = make_buffer(1 << 18);  // 1 MiB the launch does not name
  (void)other;
  ASSERT_TRUE(launch_update(x, 1024).ok());
  sync();
  const auto& o = tool().config_exit(tool().last_dispatch_id())->outcome;
  EXPECT_EQ(o.scope, KREPLAY_SNAPSHOT_SCOPE_ARGS);
  EXPECT_EQ(o.bytes_snapshotted, 1024u * 4 + 4 + 4);  // x plus the module's two globals
  EXPECT_EQ(*module().launch_counter, 1u);
}

// ---- Local context control ----

TEST_F(Contract, LocalControlOutsidePassEnterIsAContextError) {
  tool().scenario.pass_count = [](const auto&) { return uint64_t{2}; };
  std::vector<kreplay_status_t> seen;
  tool().scenario.on_pass_exit = [&](const auto& p) {
    seen.push_back(p.replay_stop_context(tool().trace_ctx));
  };
  tool().scenario.on_config_enter = [&](auto&, kreplay_user_data_t*) {
    seen.push_back(replay::replay_stop_context(tool().trace_ctx));
  };
  float* x = make_buffer(64);
  ASSERT_TRUE(launch_update(x, 64).ok());
  sync();
  ASSERT_EQ(seen.size(), 3u);
  for (auto s : seen) EXPECT_EQ(s, KREPLAY_STATUS_ERROR_CONTEXT_ERROR);
  // Refused calls record nothing: every pass was traced.
  EXPECT_EQ(dispatch_exits(tool().last_dispatch_id()).size(), 2u);
}

TEST_F(Contract, LocalControlOfAContextNotActiveAtLoopStartIsRefused) {
  tool().scenario.pass_count = [](const auto&) { return uint64_t{2}; };
  std::vector<kreplay_status_t> seen;
  tool().scenario.on_pass_enter = [&](const auto& p) {
    seen.push_back(p.replay_start_context(tool().never_started_ctx));
    seen.push_back(p.replay_stop_context(kreplay_context_id_t{999}));
  };
  float* x = make_buffer(64);
  ASSERT_TRUE(launch_update(x, 64).ok());
  sync();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0], KREPLAY_STATUS_ERROR_CONTEXT_NOT_STARTED);
  EXPECT_EQ(seen[1], KREPLAY_STATUS_ERROR_CONTEXT_NOT_FOUND);
  int active = -1;
  ASSERT_EQ(kreplay_context_is_active(tool().never_started_ctx, &active), KREPLAY_STATUS_SUCCESS);
  EXPECT_EQ(active, 0);
}

TEST_F(Contract, LocalControlIsStickyScopedToTheLoopAndLeavesGlobalStateAlone) {
  tool().scenario.pass_count = [](const auto&) { return uint64_t{4}; };
  std::vector<int> active_during;
  tool().scenario.on_pass_enter = [&](const auto& p) {
    if (p.current_pass == 1) {
      EXPECT_EQ(p.replay_stop_context(tool().trace_ctx), KREPLAY_STATUS_SUCCESS);
    }
    if (p.current_pass == 3) {
      EXPECT_EQ(p.replay_start_context(tool().trace_ctx), KREPLAY_STATUS_SUCCESS);
    }
    int a = -1;
    kreplay_context_is_active(tool().trace_ctx, &a);
    active_during.push_back(a);
  };
  float* x = make_buffer(64);
  ASSERT_TRUE(launch_update(x, 64).ok());
  sync();
  uint64_t first = tool().last_dispatch_id();
  std::vector<uint64_t> traced;
  for (const auto& e : dispatch_exits(first)) traced.push_back(e.pass);
  EXPECT_EQ(traced, (std::vector<uint64_t>{0, 3}));  // stopped at 1, still stopped at 2
  for (int a : active_during) EXPECT_EQ(a, 1);       // globally still active throughout

  // The next loop starts with no overrides.
  tool().scenario.on_pass_enter = nullptr;
  ASSERT_TRUE(launch_update(x, 64).ok());
  sync();
  EXPECT_EQ(dispatch_exits(tool().last_dispatch_id()).size(), 4u);
}

TEST_F(Contract, CountersThenTimingWithLocalControl) {
  // The counters_then_timing pattern: counters on passes 0..N-2, timing on the last pass.
  const char* names[] = {"threads_launched", "bytes_written"};
  kreplay_counter_config_id_t cfg{};
  ASSERT_EQ(kreplay_create_counter_config({hostrt::testing::agent_of()}, names, 2, &cfg),
            KREPLAY_STATUS_SUCCESS);
  tool().scenario.pass_count = [](const auto&) { return uint64_t{3}; };
  tool().scenario.counters = [cfg](const auto&) { return cfg; };
  tool().scenario.on_pass_enter = [](const auto& p) {
    if (p.current_pass == 0) p.replay_stop_context(tool().trace_ctx);
    if (p.current_pass == p.total_passes - 1) {
      p.replay_stop_context(tool().count_ctx);
      p.replay_start_context(tool().trace_ctx);
    }
  };
  float* x = make_buffer(1000);
  ASSERT_TRUE(launch_update(x, 1000).ok());
  sync();
  uint64_t id = tool().last_dispatch_id();
  auto exits = dispatch_exits(id);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].pass, 2u);
  EXPECT_GT(exits[0].end, exits[0].start);
  std::vector<uint64_t> counted;
  for (const auto& c : tool().counters) {
    if (c.dispatch_id != id) continue;
    counted.push_back(c.pass);
    if (c.name == "threads_launched") {
      EXPECT_EQ(c.value, 16.0 * 64);
    }
    if (c.name == "bytes_written") {
      EXPECT_EQ(c.value, 1000.0 * 4 + 4);  // x plus the counter
    }
  }
  EXPECT_EQ(counted, (std::vector<uint64_t>{0, 0, 1, 1}));
}

// ---- Registration rules ----

TEST_F(Contract, SecondReplaySubscriberIsRefused) {
  EXPECT_EQ(tool().second_replay_status, KREPLAY_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED);
}

TEST_F(Contract, ConfigurationIsLockedAfterInitialize) {
  kreplay_context_id_t ctx{};
  EXPECT_EQ(kreplay_create_context(&ctx), KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED);
  EXPECT_EQ(kreplay_configure_callback_tracing_service(tool().trace_ctx,
                                                       KREPLAY_CALLBACK_TRACING_CODE_OBJECT,
                                                       nullptr, 0,
                                                       [](auto, auto*, void*) {}, nullptr),
            KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED);
  kreplay_kernel_replay_options_t o{};
  o.size = sizeof(o);
  EXPECT_EQ(kreplay_configure_kernel_replay_options(&o), KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED);
  int init = 0;
  EXPECT_EQ(kreplay_is_initialized(&init), KREPLAY_STATUS_SUCCESS);
  EXPECT_EQ(init, 1);
}

// ---- Declines: every reason ----

// --snapshot full (under auto a launch whose write set is known saves only that).
TEST_F(Contract, SnapshotFallsBackToPinnedHostStorage) {
  tool().scenario.pass_count = [](const auto&) { return uint64_t{2}; };
  auto full = opts_;
  full.snapshot_mode = KREPLAY_SNAPSHOT_MODE_FULL;
  sdk::Runtime::get().engine().set_options(full);
  sdk::Runtime::get().engine().release_storage(hostrt::testing::agent_of());
  // 40 MiB in use of 64 MiB: the 40 MiB region does not fit the device tier, so its copy goes to
  // pinned host storage (48 MiB).
  float* big = make_buffer(10u << 20);
  ASSERT_TRUE(launch_update(big, 1024).ok());
  sync();
  auto o = tool().config_exit(tool().last_dispatch_id())->outcome;
  EXPECT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_GE(o.host_storage_bytes, 40u << 20);
  EXPECT_EQ(big[0], updated(0.25f, 1));
  EXPECT_EQ(*module().launch_counter, 1u);
  sdk::Runtime::get().engine().release_storage(hostrt::testing::agent_of());
}

// --snapshot full: a footprint no storage holds is declined (under auto, the default, such a
// launch runs once to learn what it writes instead: write_set_contract_test.cpp).
TEST_F(Contract, DeclineSnapshotTooLarge) {
  tool().scenario.pass_count = [](const auto&) { return uint64_t{2}; };
  auto full = opts_;
  full.snapshot_mode = KREPLAY_SNAPSHOT_MODE_FULL;
  sdk::Runtime::get().engine().set_options(full);
  sdk::Runtime::get().engine().release_storage(hostrt::testing::agent_of());
  // 54 MiB in use: 10 MiB of device storage left and 48 MiB of pinned host storage cannot hold
  // both regions.
  float* a = make_buffer(10u << 20);
  float* b = make_buffer(14u << 18);
  (void)b;
  ASSERT_TRUE(launch_update(a, 1024).ok());
  sync();
  auto o = tool().config_exit(tool().last_dispatch_id())->outcome;
  EXPECT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_DECLINED);
  EXPECT_EQ(o.reason, KREPLAY_DECLINE_REASON_SNAPSHOT_TOO_LARGE);
  EXPECT_EQ(o.passes_executed, 1u);
  EXPECT_EQ(a[0], updated(0.25f, 1));

  // A user limit below the footprint declines too.
  sdk::Runtime::get().engine().release_storage(hostrt::testing::agent_of());
  ASSERT_TRUE(hostrt::free(b).ok());
  buffers_.pop_back();
  auto opt = full;
  opt.max_snapshot_bytes = 1 << 20;
  sdk::Runtime::get().engine().set_options(opt);
  ASSERT_TRUE(launch_update(a, 1024).ok());
  sync();
  o = tool().config_exit(tool().last_dispatch_id())->outcome;
  EXPECT_EQ(o.reason, KREPLAY_DECLINE_REASON_SNAPSHOT_TOO_LARGE);
  EXPECT_EQ(a[0], updated(0.25f, 2));
  EXPECT_EQ(*module().launch_counter, 2u);
}

TEST_F(Contract, DeclineDrainTimeout) {
  auto opt = opts_;
  opt.drain_timeout_ms = 200;
  sdk::Runtime::get().engine().set_options(opt);
  tool().scenario.pass_count = [](const auto& info) {
    return std::string(info.kernel_name).find("spin") == 0 ? uint64_t{1} : uint64_t{2};
  };
  // Dispatch tracing waits for every launch; the spinning one must not be waited for.
  ASSERT_EQ(kreplay_stop_context(tool().trace_ctx), KREPLAY_STATUS_SUCCESS);
  auto flag_mem = hostrt::malloc(4);
  auto* flag = static_cast<uint32_t*>(*flag_mem);
  *flag = 0;
  auto other = *hostrt::stream_create();
  ASSERT_TRUE(hostrt::launch_args(module().spin, {1}, {1}, other, flag).ok());
  float* x = make_buffer(64);
  ASSERT_TRUE(launch_update(x, 64).ok());
  uint64_t id = tool().last_dispatch_id();
  std::atomic_ref<uint32_t>(*flag).store(1);
  sync();
  const auto& o = tool().config_exit(id)->outcome;
  EXPECT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_DECLINED);
  EXPECT_EQ(o.reason, KREPLAY_DECLINE_REASON_DRAIN_TIMEOUT);
  EXPECT_EQ(x[0], updated(0.25f, 1));
  EXPECT_TRUE(hostrt::stream_destroy(other).ok());
  EXPECT_TRUE(hostrt::free(flag).ok());
  ASSERT_EQ(kreplay_start_context(tool().trace_ctx), KREPLAY_STATUS_SUCCESS);
}

TEST_F(Contract, DeclineReentrantLaunchFromAToolCallback) {
  float* inner = make_buffer(64);
  tool().scenario.pass_count = [](const auto&) { return uint64_t{2}; };
  std::vector<uint64_t> inner_ids;
  tool().scenario.on_pass_enter = [&](const auto& p) {
    // On the last pass: work a tool launches from a pass is reverted by the next restore.
    if (p.current_pass == 1) {
      ASSERT_TRUE(launch_update(inner, 64).ok());
      ASSERT_TRUE(hostrt::stream_synchronize(hostrt::default_stream()).ok());
      inner_ids.push_back(tool().last_dispatch_id());
    }
  };
  float* x = make_buffer(64);
  ASSERT_TRUE(launch_update(x, 64).ok());
  sync();
  tool().scenario.on_pass_enter = nullptr;
  ASSERT_EQ(inner_ids.size(), 1u);
  const auto& o = tool().config_exit(inner_ids[0])->outcome;
  EXPECT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_DECLINED);
  EXPECT_EQ(o.reason, KREPLAY_DECLINE_REASON_REENTRANT_LAUNCH);
  EXPECT_EQ(inner[0], updated(0.25f, 1));  // ran once
  EXPECT_EQ(x[0], updated(0.25f, 1));
  EXPECT_EQ(*module().launch_counter, 2u);
}

// A kernel whose module uses the device-side heap (device malloc/free/new/delete) would allocate
// or free its objects again on a second pass: on a device that cannot save and restore its heap it
// is declined with its own reason and runs once; kernels of other modules are still replayed
// (heap_contract_test: the host device replays them with the heap put back).
TEST_F(Contract, DeclineDeviceHeapKernel) {
  hostrt::testing::set_heap_restorable(false);
  expect_declined_once_then_replayed(module().heap_update, KREPLAY_DECLINE_REASON_DEVICE_HEAP,
                                     "device_heap");
  hostrt::testing::set_heap_restorable(true);
}

// A launch whose arguments point into mapped host memory may wait for the host, which cannot act
// while kreplay holds its thread. Its own run is a probe: one that does not finish in time is
// declined WAITS_FOR_HOST and its thread released at once; launches made while it still runs are
// declined without a drain that would wait for it; once it finished, replay resumes.
TEST_F(Contract, DeclineLaunchesThatWaitForTheHost) {
  auto o = sdk::Runtime::get().engine().options();
  o.host_wait_ms = 50;
  sdk::Runtime::get().engine().set_options(o);
  tool().scenario.pass_count = [](const auto&) { return uint64_t{3}; };
  auto* flag = static_cast<uint32_t*>(*hostrt::malloc_host_mapped(sizeof(uint32_t)));
  *flag = 0;
  float* x = make_buffer(64);
  auto s = *hostrt::stream_create();
  ASSERT_TRUE(hostrt::launch_args(module().spin, {1}, {1}, s, flag).ok());
  const auto* spin = tool().config_exit(tool().last_dispatch_id());
  ASSERT_NE(spin, nullptr);
  EXPECT_EQ(spin->outcome.outcome, KREPLAY_REPLAY_OUTCOME_DECLINED);
  EXPECT_EQ(spin->outcome.reason, KREPLAY_DECLINE_REASON_WAITS_FOR_HOST);
  EXPECT_STREQ(kreplay_get_decline_reason_name(KREPLAY_DECLINE_REASON_WAITS_FOR_HOST),
               "waits_for_host");
  ASSERT_TRUE(launch_update(x, 64).ok());  // the spinning launch still runs: no window
  EXPECT_EQ(tool().config_exit(tool().last_dispatch_id())->outcome.reason,
            KREPLAY_DECLINE_REASON_WAITS_FOR_HOST);
  *flag = 1;  // the host acts: the first launch finishes
  ASSERT_TRUE(hostrt::stream_synchronize(s).ok());
  sync();
  // The same kernel again: it waited for the host before, so it is declined at once, without a
  // probe (which would now wait 5 s for a kernel that finishes only when the host acts).
  o.host_wait_ms = 5000;
  sdk::Runtime::get().engine().set_options(o);
  *flag = 0;
  const uint64_t t0 = now_ns();
  ASSERT_TRUE(hostrt::launch_args(module().spin, {1}, {1}, s, flag).ok());
  EXPECT_EQ(tool().config_exit(tool().last_dispatch_id())->outcome.reason,
            KREPLAY_DECLINE_REASON_WAITS_FOR_HOST);
  EXPECT_LT(now_ns() - t0, 2'500'000'000u);  // the thread came back without the 5 s probe
  *flag = 1;
  ASSERT_TRUE(hostrt::stream_synchronize(s).ok());

  ASSERT_TRUE(launch_update(x, 64).ok());
  sync();
  EXPECT_EQ(tool().config_exit(tool().last_dispatch_id())->outcome.outcome,
            KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(x[0], updated(0.25f, 2));
  EXPECT_TRUE(hostrt::stream_destroy(s).ok());
}

// A launch queued on the stream behind a launch that waits for the host (UnifiedMemoryPerf of the
// cuda-samples: a latch kernel, then its work, then the host opens the latch) is declined and
// neither counted nor waited for: waiting would wait for the host, whose thread is held. Before,
// a counted run waited the whole drain time here.
TEST_F(Contract, LaunchesBehindAHostWaiterAreNotWaitedFor) {
  uint32_t* flag = count_with_a_latch(3);
  float* x = make_buffer(64);
  auto s = *hostrt::stream_create();
  ASSERT_TRUE(hostrt::launch_args(module().spin, {1}, {1}, s, flag).ok());
  const uint64_t t0 = now_ns();
  ASSERT_TRUE(launch_update(x, 64, s).ok());  // queued behind the spinning launch
  EXPECT_LT(now_ns() - t0, 2'000'000'000u) << "the thread waited for a launch behind the latch";
  const auto* e = tool().config_exit(tool().last_dispatch_id());
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->outcome.outcome, KREPLAY_REPLAY_OUTCOME_DECLINED);
  EXPECT_EQ(e->outcome.reason, KREPLAY_DECLINE_REASON_WAITS_FOR_HOST);
  std::atomic_ref<uint32_t>(*flag).store(1);  // the host opens the latch
  ASSERT_TRUE(hostrt::stream_synchronize(s).ok());
  EXPECT_EQ(x[0], updated(0.25f, 1));
  EXPECT_TRUE(hostrt::stream_destroy(s).ok());
}

// The same with one pass, the app's own run counted (the kreplay command when every counter fits
// one pass: UnifiedMemoryPerf under --pmc A --pmc B --pmc C on the H200 stopped at the first latch
// kernel). A run that is not replayed is still waited for when counted; the latch kernel, uncounted
// and not replayed, must be held as a host waiter once it outlives its brief wait, and the counted
// launch queued behind it must then be neither counted nor waited for.
TEST_F(Contract, OnePassLaunchesBehindAHostWaiterAreNotWaitedFor) {
  uint32_t* flag = count_with_a_latch(1);
  float* x = make_buffer(64);
  auto s = *hostrt::stream_create();
  const uint64_t t0 = now_ns();
  ASSERT_TRUE(hostrt::launch_args(module().spin, {1}, {1}, s, flag).ok());
  ASSERT_TRUE(launch_update(x, 64, s).ok());  // queued behind the spinning launch
  EXPECT_LT(now_ns() - t0, 2'000'000'000u) << "the thread waited for a launch behind the latch";
  std::atomic_ref<uint32_t>(*flag).store(1);  // the host opens the latch
  ASSERT_TRUE(hostrt::stream_synchronize(s).ok());
  EXPECT_EQ(x[0], updated(0.25f, 1));
  // Once the latch kernel finished, launches are counted again.
  ASSERT_TRUE(launch_update(x, 64, s).ok());
  sync();
  ASSERT_FALSE(tool().counters.empty());
  EXPECT_EQ(tool().counters.back().status, KREPLAY_STATUS_SUCCESS);
  EXPECT_EQ(tool().counters.back().dispatch_id, tool().last_dispatch_id());
  EXPECT_TRUE(hostrt::stream_destroy(s).ok());
}

// A launch over mapped host memory that does not wait is replayed after its probe: every pass is
// a resubmission, the last is not restored, and memory holds one execution.
TEST_F(Contract, HostMemoryLaunchesAreReplayedAfterTheirProbe) {
  tool().scenario.pass_count = [](const auto&) { return uint64_t{3}; };
  auto* x = static_cast<float*>(*hostrt::malloc_host_mapped(64 * sizeof(float)));
  for (int i = 0; i < 64; ++i) x[i] = 0.25f;
  ASSERT_TRUE(launch_update(x, 64).ok());
  sync();
  const auto* e = tool().config_exit(tool().last_dispatch_id());
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->outcome.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(e->outcome.passes_executed, 3u);
  EXPECT_EQ(passes(e->dispatch_id, KREPLAY_CALLBACK_PHASE_ENTER).size(), 3u);
  EXPECT_EQ(x[0], updated(0.25f, 1));
  EXPECT_EQ(*module().launch_counter, 1u);
}

// A counter pass that fails (CUPTI can) loses that pass's counters and nothing else: the tool gets
// a record callback with no records and the status, the dispatch is still replayed, and the next
// pass and the next dispatch count again.
TEST_F(Contract, ALostCounterPassIsReportedAndTheRunGoesOn) {
  const char* names[] = {"launches"};
  kreplay_counter_config_id_t cfg{};
  ASSERT_EQ(kreplay_create_counter_config({hostrt::testing::agent_of()}, names, 1, &cfg),
            KREPLAY_STATUS_SUCCESS);
  tool().scenario.pass_count = [](const auto&) { return uint64_t{3}; };
  tool().scenario.counters = [cfg](const auto&) { return cfg; };
  float* x = make_buffer(64);
  hostrt::testing::fail_counter_passes(1);
  ASSERT_TRUE(launch_update(x, 64).ok());
  ASSERT_TRUE(launch_update(x, 64).ok());
  sync();
  ASSERT_EQ(tool().counters.size(), 6u);  // 2 dispatches x 3 passes
  EXPECT_NE(tool().counters[0].status, KREPLAY_STATUS_SUCCESS);  // pass 0 of the first: lost
  EXPECT_EQ(tool().counters[0].pass, 0u);
  for (size_t i = 1; i < 6; ++i) {
    EXPECT_EQ(tool().counters[i].status, KREPLAY_STATUS_SUCCESS) << i;
    EXPECT_EQ(tool().counters[i].value, 1.0) << i;
  }
  EXPECT_EQ(x[0], updated(0.25f, 2));
  for (const auto& e : tool().of(KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY, KREPLAY_KERNEL_REPLAY_CONFIG)) {
    if (e.phase == KREPLAY_CALLBACK_PHASE_EXIT) {
      EXPECT_EQ(e.outcome.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
    }
  }
}

// A collective communication kernel (NCCL) waits for its peers; replayed alone it would wait for
// ever. It is declined and runs once; the next ordinary launch is replayed again.
TEST_F(Contract, DeclineCollectiveKernel) {
  expect_declined_once_then_replayed(module().collective, KREPLAY_DECLINE_REASON_COLLECTIVE,
                                     "collective");
  EXPECT_TRUE(replay::is_collective_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"));
  EXPECT_TRUE(replay::is_collective_kernel("_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE"));
  EXPECT_TRUE(replay::is_collective_kernel("ncclKernel_AllGather_RING_LL_Sum_int8_t"));
  EXPECT_FALSE(replay::is_collective_kernel("update(float*, unsigned int)"));
  EXPECT_FALSE(replay::is_collective_kernel(nullptr));
}

TEST_F(Contract, DeclineUntrackedMemory) {
  tool().scenario.pass_count = [](const auto&) { return uint64_t{2}; };
  auto hidden = hostrt::malloc_untracked(4096);
  ASSERT_TRUE(hidden.ok());
  float* x = make_buffer(64);
  ASSERT_TRUE(launch_update(x, 64).ok());
  sync();
  EXPECT_EQ(tool().config_exit(tool().last_dispatch_id())->outcome.reason,
            KREPLAY_DECLINE_REASON_UNTRACKED_MEMORY);
  ASSERT_TRUE(hostrt::free(*hidden).ok());
  ASSERT_TRUE(launch_update(x, 64).ok());
  sync();
  EXPECT_EQ(tool().config_exit(tool().last_dispatch_id())->outcome.outcome,
            KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(x[0], updated(0.25f, 2));
}

TEST_F(Contract, DeclineLaunchFailed) {
  tool().scenario.pass_count = [](const auto&) { return uint64_t{2}; };
  float* x = make_buffer(64);
  uint32_t n = 64;
  Status s = hostrt::launch_args(module().update, {1}, {2048}, hostrt::default_stream(), x, n);
  EXPECT_FALSE(s.ok());
  const auto& o = tool().config_exit(tool().last_dispatch_id())->outcome;
  EXPECT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_DECLINED);
  EXPECT_EQ(o.reason, KREPLAY_DECLINE_REASON_LAUNCH_FAILED);
  EXPECT_EQ(o.passes_executed, 0u);
  EXPECT_EQ(x[0], 0.25f);
}

// A kernel that fails on the device (an assert) ends its loop in the pass that failed: PASS EXIT
// still fires, the outcome says LAUNCH_FAILED with no completed pass, and nothing runs again (on
// CUDA the context could run nothing more). Not a pass timeout: no time limit was reached.
TEST_F(Contract, DeviceFaultEndsTheLoopAsLaunchFailed) {
  tool().scenario.pass_count = [](const auto&) { return uint64_t{3}; };
  float* x = make_buffer(64);
  x[3] = -1.0f;
  uint32_t n = 64;
  ASSERT_TRUE(
      hostrt::launch_args(module().checked, {1}, {64}, hostrt::default_stream(), x, n).ok());
  sync();
  uint64_t id = tool().last_dispatch_id();
  const auto& o = tool().config_exit(id)->outcome;
  EXPECT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(o.reason, KREPLAY_DECLINE_REASON_LAUNCH_FAILED);
  EXPECT_EQ(o.passes_executed, 0u);
  EXPECT_EQ(passes(id, KREPLAY_CALLBACK_PHASE_ENTER).size(), 1u);
  EXPECT_EQ(passes(id, KREPLAY_CALLBACK_PHASE_EXIT).size(), 1u);
  EXPECT_EQ(x[0], updated(0.25f, 1));  // what the one execution left, not restored
  EXPECT_EQ(x[3], -1.0f);
}

TEST_F(Contract, PassTimeoutEndsTheLoop) {
  auto opt = opts_;
  opt.drain_timeout_ms = 200;
  sdk::Runtime::get().engine().set_options(opt);
  tool().scenario.pass_count = [](const auto&) { return uint64_t{3}; };
  auto flag_mem = hostrt::malloc(4);
  auto* flag = static_cast<uint32_t*>(*flag_mem);
  *flag = 0;
  ASSERT_TRUE(
      hostrt::launch_args(module().spin_second, {1}, {1}, hostrt::default_stream(), flag).ok());
  uint64_t id = tool().last_dispatch_id();
  const auto& o = tool().config_exit(id)->outcome;
  EXPECT_EQ(o.reason, KREPLAY_DECLINE_REASON_PASS_TIMEOUT);
  EXPECT_EQ(o.passes_executed, 1u);
  std::atomic_ref<uint32_t>(*flag).store(1);
  sync();
  EXPECT_EQ(passes(id, KREPLAY_CALLBACK_PHASE_ENTER).size(), passes(id, KREPLAY_CALLBACK_PHASE_EXIT).size());
  EXPECT_TRUE(hostrt::free(flag).ok());
}

// ---- Concurrency ----

TEST_F(Contract, FourThreadsLaunchConcurrentlyWhileReplaying) {
  tool().scenario.pass_count = [](const auto&) { return uint64_t{3}; };
  constexpr int kThreads = 4, kLaunches = 50;
  constexpr uint32_t n = 512;
  std::vector<float*> bufs;
  for (int t = 0; t < kThreads; ++t) bufs.push_back(make_buffer(n, 0.1f * static_cast<float>(t + 1)));
  std::vector<std::vector<float>> expect;
  for (int t = 0; t < kThreads; ++t) {
    std::vector<float> e(bufs[t], bufs[t] + n);
    for (auto& v : e) {
      for (int k = 0; k < kLaunches; ++k) v = ((v * 2.0f + 1.0f - 1.0f) / 2.0f) * 0.5f + 1.0f;
    }
    expect.push_back(e);
  }
  // x = x*2+1 would overflow in 50 launches, so the host scales each result back between launches:
  // the host work must see exactly one execution every time.
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto s = hostrt::stream_create();
      if (!s.ok()) {
        ++failures;
        return;
      }
      for (int k = 0; k < kLaunches; ++k) {
        if (!launch_update(bufs[t], n, *s).ok()) ++failures;
        if (!hostrt::stream_synchronize(*s).ok()) ++failures;
        std::vector<float> tmp(n);
        if (!hostrt::memcpy(tmp.data(), bufs[t], n * 4).ok()) ++failures;
        for (auto& v : tmp) v = ((v - 1.0f) / 2.0f) * 0.5f + 1.0f;
        if (!hostrt::memcpy(bufs[t], tmp.data(), n * 4).ok()) ++failures;
      }
      if (!hostrt::stream_destroy(*s).ok()) ++failures;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(std::memcmp(bufs[t], expect[t].data(), n * 4), 0) << "thread " << t;
  }
  EXPECT_EQ(*module().launch_counter, static_cast<uint32_t>(kThreads * kLaunches));
  size_t replayed = 0;
  for (const auto& e : tool().of(KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY, KREPLAY_KERNEL_REPLAY_CONFIG)) {
    if (e.phase == KREPLAY_CALLBACK_PHASE_EXIT && e.outcome.outcome == KREPLAY_REPLAY_OUTCOME_REPLAYED)
      ++replayed;
  }
  EXPECT_EQ(replayed, static_cast<size_t>(kThreads * kLaunches));
}

// ---- Code objects, memory, agents, counters ----

TEST_F(Contract, CodeObjectAndMemoryEvents) {
  hostrt::ModuleDesc d;
  d.name = "events_module";
  d.kernels = {{"_Z3fooPfj", [](hostrt::ThreadContext&) {}, {8, 4}}};
  auto m = hostrt::load_module(d);
  ASSERT_TRUE(m.ok());
  bool saw_load = false, saw_symbol = false;
  for (const auto& e : tool().of(KREPLAY_CALLBACK_TRACING_CODE_OBJECT)) {
    if (e.operation == KREPLAY_CODE_OBJECT_LOAD && e.name == "events_module") saw_load = true;
    if (e.operation == KREPLAY_CODE_OBJECT_KERNEL_SYMBOL_REGISTER && e.mangled == "_Z3fooPfj") {
      saw_symbol = true;
      EXPECT_EQ(e.name, "foo(float*, unsigned int)");
    }
  }
  EXPECT_TRUE(saw_load);
  EXPECT_TRUE(saw_symbol);
  auto p = hostrt::malloc(12345);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(hostrt::free(*p).ok());
  int allocs = 0, frees = 0;
  for (const auto& e : tool().of(KREPLAY_CALLBACK_TRACING_MEMORY_ALLOCATION)) {
    if (e.address != reinterpret_cast<uint64_t>(*p)) continue;
    EXPECT_EQ(e.bytes, 12345u);
    if (e.operation == KREPLAY_MEMORY_ALLOCATION_ALLOCATE) ++allocs;
    if (e.operation == KREPLAY_MEMORY_ALLOCATION_FREE) ++frees;
  }
  EXPECT_EQ(allocs, 1);
  EXPECT_EQ(frees, 1);
}

TEST_F(Contract, AgentQueryIsSizeChecked) {
  size_t count = 0;
  ASSERT_EQ(kreplay_get_agent_count(&count), KREPLAY_STATUS_SUCCESS);
  ASSERT_GE(count, 1u);
  kreplay_agent_t a{};
  a.size = 8;
  EXPECT_EQ(kreplay_query_agent(0, &a), KREPLAY_STATUS_ERROR_INCOMPATIBLE_ABI);
  a.size = sizeof(a);
  ASSERT_EQ(kreplay_query_agent(0, &a), KREPLAY_STATUS_SUCCESS);
  EXPECT_EQ(a.type, KREPLAY_AGENT_TYPE_HOST_DEVICE);
  EXPECT_EQ(a.counters_per_pass, 2u);
  EXPECT_STREQ(a.chip_name, "HOSTDEV");
  EXPECT_EQ(kreplay_query_agent(count, &a), KREPLAY_STATUS_ERROR_AGENT_NOT_FOUND);
  // An older, smaller struct gets only its prefix.
  kreplay_agent_t old{};
  old.size = KREPLAY_AGENT_V1_SIZE;
  ASSERT_EQ(kreplay_query_agent_by_id(a.id, &old), KREPLAY_STATUS_SUCCESS);
  EXPECT_EQ(old.size, KREPLAY_AGENT_V1_SIZE);
}

TEST_F(Contract, CounterListingConfigsAndErrors) {
  kreplay_agent_id_t agent{hostrt::testing::agent_of()};
  struct Seen {
    std::vector<std::string> names;
    bool described = true;
  } seen;
  ASSERT_EQ(kreplay_iterate_agent_counters(
                agent,
                [](kreplay_agent_id_t, const kreplay_counter_info_t* c, size_t n, void* ud) {
                  auto* s = static_cast<Seen*>(ud);
                  for (size_t i = 0; i < n; ++i) {
                    s->names.emplace_back(c[i].name);
                    if (c[i].description == nullptr || c[i].description[0] == 0) s->described = false;
                  }
                  return KREPLAY_STATUS_SUCCESS;
                },
                &seen),
            KREPLAY_STATUS_SUCCESS);
  EXPECT_GE(seen.names.size(), 6u);
  EXPECT_TRUE(seen.described);

  const char* bad[] = {"bytes_writen"};
  kreplay_counter_config_id_t cfg{};
  EXPECT_EQ(kreplay_create_counter_config(agent, bad, 1, &cfg),
            KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND);
  std::string msg = kreplay_get_last_error_message();
  EXPECT_NE(msg.find("bytes_writen"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bytes_written"), std::string::npos) << msg;

  const char* too_many[] = {"threads_launched", "bytes_written", "launches"};
  EXPECT_EQ(kreplay_create_counter_config(agent, too_many, 3, &cfg),
            KREPLAY_STATUS_ERROR_EXCEEDS_HW_LIMIT);
  msg = kreplay_get_last_error_message();
  EXPECT_NE(msg.find("threads_launched, bytes_written, launches"), std::string::npos) << msg;

  const char* ok[] = {"ops", "blocks_launched"};
  ASSERT_EQ(kreplay_create_counter_config(agent, ok, 2, &cfg), KREPLAY_STATUS_SUCCESS);
  kreplay_counter_config_info_t info{};
  info.size = sizeof(info);
  ASSERT_EQ(kreplay_query_counter_config(cfg, &info), KREPLAY_STATUS_SUCCESS);
  EXPECT_EQ(info.counter_count, 2u);
  EXPECT_EQ(info.pass_count, 1u);
  EXPECT_EQ(kreplay_query_counter_config({9999}, &info), KREPLAY_STATUS_ERROR_CONFIG_NOT_FOUND);
}

TEST_F(Contract, CountersPerPassCarryDispatchAndPass) {
  kreplay_agent_id_t agent{hostrt::testing::agent_of()};
  const char* g0[] = {"threads_launched", "blocks_launched"};
  const char* g1[] = {"bytes_written", "launches"};
  kreplay_counter_config_id_t c0{}, c1{};
  ASSERT_EQ(kreplay_create_counter_config(agent, g0, 2, &c0), KREPLAY_STATUS_SUCCESS);
  ASSERT_EQ(kreplay_create_counter_config(agent, g1, 2, &c1), KREPLAY_STATUS_SUCCESS);
  tool().scenario.pass_count = [](const auto&) { return uint64_t{2}; };
  tool().scenario.counters = [c0, c1](const kreplay_dispatch_counting_data_t& d) {
    return d.replay_pass == 0 ? c0 : c1;
  };
  float* x = make_buffer(300);
  ASSERT_TRUE(launch_update(x, 300).ok());
  sync();
  uint64_t id = tool().last_dispatch_id();
  std::map<std::pair<uint64_t, std::string>, double> got;
  for (const auto& c : tool().counters) {
    if (c.dispatch_id == id) got[{c.pass, c.name}] = c.value;
  }
  EXPECT_EQ(got.size(), 4u);
  EXPECT_EQ((got[{0, "threads_launched"}]), 5.0 * 64);
  EXPECT_EQ((got[{0, "blocks_launched"}]), 5.0);
  EXPECT_EQ((got[{1, "bytes_written"}]), 300.0 * 4 + 4);
  EXPECT_EQ((got[{1, "launches"}]), 1.0);
}

// ---- Status codes ----

TEST(Status, EveryCodeHasAUniqueNameAndDescription) {
  std::set<std::string> names;
  for (int s = 0; s < KREPLAY_STATUS_LAST; ++s) {
    const char* name = kreplay_get_status_name(static_cast<kreplay_status_t>(s));
    const char* text = kreplay_get_status_string(static_cast<kreplay_status_t>(s));
    ASSERT_NE(name, nullptr) << s;
    ASSERT_NE(text, nullptr) << s;
    EXPECT_EQ(std::string(name).rfind("KREPLAY_STATUS_", 0), 0u) << name;
    EXPECT_GT(std::strlen(text), 5u);
    EXPECT_TRUE(names.insert(name).second) << "duplicate " << name;
  }
  EXPECT_EQ(kreplay_get_status_name(KREPLAY_STATUS_LAST), nullptr);
  EXPECT_EQ(kreplay_get_status_string(static_cast<kreplay_status_t>(-1)), nullptr);
  EXPECT_STREQ(kreplay_get_status_name(KREPLAY_STATUS_ERROR_CONTEXT_ERROR),
               "KREPLAY_STATUS_ERROR_CONTEXT_ERROR");
}

TEST(Names, KindsAndOperations) {
  const char* n = nullptr;
  ASSERT_EQ(kreplay_query_callback_tracing_kind_name(KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY, &n),
            KREPLAY_STATUS_SUCCESS);
  EXPECT_STREQ(n, "KERNEL_REPLAY");
  ASSERT_EQ(kreplay_query_callback_tracing_kind_operation_name(
                KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY, KREPLAY_KERNEL_REPLAY_RESTORE, &n),
            KREPLAY_STATUS_SUCCESS);
  EXPECT_STREQ(n, "RESTORE");
  EXPECT_EQ(kreplay_query_callback_tracing_kind_operation_name(
                KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY, KREPLAY_KERNEL_REPLAY_LAST, &n),
            KREPLAY_STATUS_ERROR_OPERATION_NOT_FOUND);
  EXPECT_EQ(kreplay_query_callback_tracing_kind_name(KREPLAY_CALLBACK_TRACING_LAST, &n),
            KREPLAY_STATUS_ERROR_KIND_NOT_FOUND);
}

}  // namespace
}  // namespace kreplay::test

namespace kreplay::test {
namespace {

TEST(Names, OutcomesAndReasonsHavePublicNames) {
  for (int r = 0; r < KREPLAY_DECLINE_REASON_LAST; ++r) {
    EXPECT_NE(kreplay_get_decline_reason_name(static_cast<kreplay_decline_reason_t>(r)), nullptr);
  }
  EXPECT_EQ(kreplay_get_decline_reason_name(KREPLAY_DECLINE_REASON_LAST), nullptr);
  EXPECT_STREQ(kreplay_get_decline_reason_name(KREPLAY_DECLINE_REASON_GRAPH_LAUNCH), "graph_launch");
  EXPECT_EQ(kreplay::cxx::name(KREPLAY_REPLAY_OUTCOME_REPLAYED), "replayed");
  EXPECT_EQ(kreplay::cxx::name(KREPLAY_STATUS_ERROR_CONTEXT_ERROR),
            "KREPLAY_STATUS_ERROR_CONTEXT_ERROR");
}

}  // namespace
}  // namespace kreplay::test
