// Graph launches under KERNEL_REPLAY (DESIGN.md §2c, docs/sdk.md "Graph launches"), pinned on the
// host device: node profiling (every kernel node a dispatch of its own, replayed with memory
// restored), whole-graph profiling, graphs that are profiled as a whole (conditional nodes),
// graphs that cannot be replayed (host-function nodes), copy nodes between kernel nodes, memory
// nodes (allocations tracked while they live),
// counters per node and per graph, and captured launches that are not dispatches.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "harness.hpp"
#include "replay/engine.hpp"
#include "sdk/runtime.hpp"

namespace kreplay::test {
namespace {

class Graphs : public ::testing::Test {
 protected:
  void SetUp() override {
    init_runtime();
    module();
    tool().reset();
    *module().launch_counter = 0;
    opts_ = sdk::Runtime::get().engine().options();
    stream_ = *hostrt::stream_create();
  }
  void TearDown() override {
    EXPECT_TRUE(hostrt::stream_destroy(stream_).ok());
    sdk::Runtime::get().engine().set_options(opts_);
    tool().reset();
  }
  void graph_nodes(bool on) {
    auto o = sdk::Runtime::get().engine().options();
    o.graph_nodes = on;
    sdk::Runtime::get().engine().set_options(o);
  }
  float* buffer(uint32_t n, float first) {
    auto* x = static_cast<float*>(*hostrt::malloc(n * sizeof(float)));
    for (uint32_t i = 0; i < n; ++i) x[i] = first;
    return x;
  }
  // A graph of two `update` kernel nodes over x (n floats) and y, built by stream capture.
  hostrt::Graph captured_graph(float* x, float* y, uint32_t n) {
    EXPECT_TRUE(hostrt::stream_begin_capture(stream_).ok());
    EXPECT_TRUE(launch_update(x, n, stream_).ok());
    EXPECT_TRUE(launch_update(y, n, stream_).ok());
    auto g = hostrt::stream_end_capture(stream_);
    EXPECT_TRUE(g.ok());
    return *g;
  }
  std::vector<Event> config_exits() {
    std::vector<Event> out;
    for (const auto& e : tool().of(KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY, KREPLAY_KERNEL_REPLAY_CONFIG)) {
      if (e.phase == KREPLAY_CALLBACK_PHASE_EXIT) out.push_back(e);
    }
    return out;
  }
  void sync() { ASSERT_TRUE(hostrt::stream_synchronize(stream_).ok()); }

  replay::Options opts_;
  hostrt::Stream stream_ = 0;
};

// Launches into a capturing stream execute nothing: they are not dispatches.
TEST_F(Graphs, CapturedLaunchesAreNotDispatches) {
  tool().scenario.pass_count = [](const auto&) { return uint64_t{3}; };
  float* x = buffer(64, 0.25f);
  float* y = buffer(64, 0.5f);
  captured_graph(x, y, 64);
  EXPECT_TRUE(config_exits().empty());
  EXPECT_EQ(x[0], 0.25f);  // nothing ran
  EXPECT_EQ(*module().launch_counter, 0u);
}

// Node profiling: after the graph's own launch its entry state is restored and its nodes run
// again one at a time; every kernel node is a dispatch of its own (flag GRAPH, the graph's id and
// the node's place), replayed with memory restored between passes, and memory ends as one
// execution of the graph leaves it -- for every launch of the same executable graph.
TEST_F(Graphs, NodeProfilingMakesEveryKernelNodeADispatch) {
  graph_nodes(true);
  tool().scenario.pass_count = [](const auto&) { return uint64_t{3}; };
  float* x = buffer(64, 0.25f);
  float* y = buffer(64, 0.5f);
  auto g = captured_graph(x, y, 64);
  ASSERT_TRUE(hostrt::graph_launch(g, stream_).ok());
  ASSERT_TRUE(hostrt::graph_launch(g, stream_).ok());
  sync();
  EXPECT_EQ(x[0], updated(0.25f, 2));
  EXPECT_EQ(y[5], updated(0.5f, 2));
  EXPECT_EQ(*module().launch_counter, 4u);  // 2 nodes x 2 launches, each counted once
  auto exits = config_exits();
  ASSERT_EQ(exits.size(), 4u);
  std::set<uint64_t> ids;
  for (size_t i = 0; i < exits.size(); ++i) {
    const auto& e = exits[i];
    ids.insert(e.dispatch_id);
    EXPECT_EQ(e.outcome.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
    EXPECT_EQ(e.outcome.passes_executed, 3u);
    EXPECT_TRUE(e.flags & KREPLAY_DISPATCH_FLAG_GRAPH);
    EXPECT_FALSE(e.flags & KREPLAY_DISPATCH_FLAG_GRAPH_WHOLE);
    EXPECT_EQ(e.graph_id, g);
    EXPECT_EQ(e.graph_node, i % 2);
    EXPECT_EQ(e.name, "update(float*, unsigned int)");
  }
  EXPECT_EQ(ids.size(), 4u);
}

// Whole-graph profiling: one dispatch per graph launch (GRAPH | GRAPH_WHOLE), replayed by launching
// the graph again, restored between passes.
TEST_F(Graphs, GraphProfilingMakesTheLaunchOneDispatch) {
  graph_nodes(false);
  tool().scenario.pass_count = [](const auto&) { return uint64_t{4}; };
  float* x = buffer(64, 0.25f);
  float* y = buffer(64, 0.5f);
  auto g = captured_graph(x, y, 64);
  ASSERT_TRUE(hostrt::graph_launch(g, stream_).ok());
  sync();
  EXPECT_EQ(x[0], updated(0.25f, 1));
  EXPECT_EQ(y[0], updated(0.5f, 1));
  EXPECT_EQ(*module().launch_counter, 2u);
  auto exits = config_exits();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].outcome.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(exits[0].outcome.passes_executed, 4u);
  EXPECT_TRUE(exits[0].flags & KREPLAY_DISPATCH_FLAG_GRAPH_WHOLE);
  EXPECT_EQ(exits[0].graph_id, g);
  EXPECT_EQ(exits[0].name, "host graph " + std::to_string(g));
}

// A copy node between kernel nodes runs once in its place when the nodes run one at a time.
TEST_F(Graphs, CopyNodesRunInTheirPlace) {
  graph_nodes(true);
  tool().scenario.pass_count = [](const auto&) { return uint64_t{3}; };
  float* x = buffer(64, 0.25f);
  float* y = buffer(64, 0.0f);
  auto g = *hostrt::graph_create();
  uint32_t n = 64;
  void* args[] = {&x, &n};
  ASSERT_TRUE(hostrt::graph_add_kernel(g, module().update, {1}, {64}, args).ok());
  ASSERT_TRUE(hostrt::graph_add_memcpy(g, y, x, 64 * sizeof(float)).ok());
  void* yargs[] = {&y, &n};
  ASSERT_TRUE(hostrt::graph_add_kernel(g, module().update, {1}, {64}, yargs).ok());
  ASSERT_TRUE(hostrt::graph_launch(g, stream_).ok());
  sync();
  EXPECT_EQ(x[0], updated(0.25f, 1));
  EXPECT_EQ(y[0], updated(updated(0.25f, 1), 1));  // the copy saw x after the first node
  auto exits = config_exits();
  ASSERT_EQ(exits.size(), 2u);
  EXPECT_EQ(exits[0].graph_node, 0u);
  EXPECT_EQ(exits[1].graph_node, 2u);  // the copy is node 1
}

// Counters: per kernel node in node profiling, one set for the whole graph in graph profiling.
TEST_F(Graphs, CountersPerNodeAndPerGraph) {
  const char* names[] = {"threads_launched"};
  kreplay_counter_config_id_t cfg{};
  ASSERT_EQ(kreplay_create_counter_config({hostrt::testing::agent_of()}, names, 1, &cfg),
            KREPLAY_STATUS_SUCCESS);
  tool().scenario.counters = [cfg](const auto&) { return cfg; };
  float* x = buffer(256, 0.25f);
  float* y = buffer(64, 0.5f);
  auto g = *hostrt::graph_create();
  uint32_t nx = 256, ny = 64;
  void* xa[] = {&x, &nx};
  void* ya[] = {&y, &ny};
  ASSERT_TRUE(hostrt::graph_add_kernel(g, module().update, {4}, {64}, xa).ok());
  ASSERT_TRUE(hostrt::graph_add_kernel(g, module().update, {1}, {64}, ya).ok());
  graph_nodes(true);
  ASSERT_TRUE(hostrt::graph_launch(g, stream_).ok());
  sync();
  ASSERT_EQ(tool().counters.size(), 2u);
  EXPECT_EQ(tool().counters[0].value, 256.0);
  EXPECT_EQ(tool().counters[1].value, 64.0);
  tool().reset();
  tool().scenario.counters = [cfg](const auto&) { return cfg; };
  graph_nodes(false);
  ASSERT_TRUE(hostrt::graph_launch(g, stream_).ok());
  sync();
  ASSERT_EQ(tool().counters.size(), 1u);
  EXPECT_EQ(tool().counters[0].value, 320.0);
}

// A graph with a conditional node is profiled as a whole even in node profiling; each pass takes
// the branch the restored data selects.
TEST_F(Graphs, ConditionalGraphsAreProfiledAsAWhole) {
  graph_nodes(true);
  tool().scenario.pass_count = [](const auto&) { return uint64_t{3}; };
  float* x = buffer(64, 0.25f);
  auto* flag = static_cast<uint32_t*>(*hostrt::malloc(sizeof(uint32_t)));
  *flag = 1;
  auto body = *hostrt::graph_create();
  uint32_t n = 64;
  void* args[] = {&x, &n};
  ASSERT_TRUE(hostrt::graph_add_kernel(body, module().update, {1}, {64}, args).ok());
  auto g = *hostrt::graph_create();
  ASSERT_TRUE(hostrt::graph_add_conditional(g, body, flag).ok());
  ASSERT_TRUE(hostrt::graph_launch(g, stream_).ok());
  sync();
  EXPECT_EQ(x[0], updated(0.25f, 1));
  auto exits = config_exits();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].outcome.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_TRUE(exits[0].flags & KREPLAY_DISPATCH_FLAG_GRAPH_WHOLE);
}

// A graph with a host-function node, launched again, would run its host code once per pass: as a
// whole it is declined with its own reason and runs once. Run node by node, its host node is left
// out (it ran in the application's own launch) and its kernel nodes are replayed.
TEST_F(Graphs, HostNodeGraphsAreReplayedNodeByNodeAndDeclinedWhole) {
  for (bool nodes : {true, false}) {
    graph_nodes(nodes);
    tool().reset();
    tool().scenario.pass_count = [](const auto&) { return uint64_t{3}; };
    float* x = buffer(64, 0.25f);
    static int calls;
    calls = 0;
    auto g = *hostrt::graph_create();
    uint32_t n = 64;
    void* args[] = {&x, &n};
    ASSERT_TRUE(hostrt::graph_add_kernel(g, module().update, {1}, {64}, args).ok());
    ASSERT_TRUE(hostrt::graph_add_host(g, [](void*) { ++calls; }, nullptr).ok());
    ASSERT_TRUE(hostrt::graph_launch(g, stream_).ok());
    sync();
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(x[0], updated(0.25f, 1));
    auto exits = config_exits();
    ASSERT_EQ(exits.size(), 1u);
    if (nodes) {
      EXPECT_EQ(exits[0].outcome.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
      EXPECT_FALSE(exits[0].flags & KREPLAY_DISPATCH_FLAG_GRAPH_WHOLE);
    } else {
      EXPECT_EQ(exits[0].outcome.outcome, KREPLAY_REPLAY_OUTCOME_DECLINED);
      EXPECT_EQ(exits[0].outcome.reason, KREPLAY_DECLINE_REASON_GRAPH_HOST_NODE);
    }
  }
}

// The snapshot scope "args" does not apply to a graph launch (it has no arguments of its own):
// whole graphs save everything, and are still restored correctly.
TEST_F(Graphs, WholeGraphsSaveEverythingUnderArgsScope) {
  graph_nodes(false);
  auto o = sdk::Runtime::get().engine().options();
  o.scope = KREPLAY_SNAPSHOT_SCOPE_ARGS;
  sdk::Runtime::get().engine().set_options(o);
  tool().scenario.pass_count = [](const auto&) { return uint64_t{3}; };
  float* x = buffer(64, 0.25f);
  float* y = buffer(64, 0.5f);
  auto g = captured_graph(x, y, 64);
  ASSERT_TRUE(hostrt::graph_launch(g, stream_).ok());
  sync();
  EXPECT_EQ(x[0], updated(0.25f, 1));
  EXPECT_EQ(y[0], updated(0.5f, 1));
  auto exits = config_exits();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_GT(exits[0].outcome.bytes_snapshotted, 0u);
}

// Memory nodes, node by node: an allocation the graph makes and frees is tracked between its two
// nodes, so a kernel node that updates it in place is restored between its passes (untracked, its
// three passes would leave three updates), and it is not tracked once the launch is over.
TEST_F(Graphs, AllocationsInsideAGraphAreTrackedWhileTheyLive) {
  graph_nodes(true);
  tool().scenario.pass_count = [](const auto&) { return uint64_t{3}; };
  float* x = buffer(64, 0.25f);
  auto g = *hostrt::graph_create();
  auto tmp = hostrt::graph_add_mem_alloc(g, 64 * sizeof(float));
  ASSERT_TRUE(tmp.ok());
  auto* t = static_cast<float*>(*tmp);
  uint32_t n = 64;
  void* args[] = {&t, &n};
  ASSERT_TRUE(hostrt::graph_add_memcpy(g, t, x, 64 * sizeof(float)).ok());
  ASSERT_TRUE(hostrt::graph_add_kernel(g, module().update, {1}, {64}, args).ok());
  ASSERT_TRUE(hostrt::graph_add_memcpy(g, x, t, 64 * sizeof(float)).ok());
  ASSERT_TRUE(hostrt::graph_add_mem_free(g, t).ok());
  for (int launch = 1; launch <= 2; ++launch) {
    ASSERT_TRUE(hostrt::graph_launch(g, stream_).ok());
    sync();
    EXPECT_EQ(x[0], updated(0.25f, launch));
    replay::Region r;
    EXPECT_FALSE(sdk::Runtime::get().inventory().find(hostrt::testing::agent_of(),
                                                      reinterpret_cast<uint64_t>(t), &r));
  }
  auto exits = config_exits();
  ASSERT_EQ(exits.size(), 2u);
  for (const auto& e : exits) {
    EXPECT_EQ(e.outcome.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
    EXPECT_EQ(e.outcome.passes_executed, 3u);
    EXPECT_EQ(e.graph_node, 2u);  // alloc, copy, kernel
  }
}

// An allocation that outlives its graph's launch is tracked from the launch on: the graph's own
// kernel node and a plain launch after it update it in place and are replayed correctly. The graph
// that frees it (memory it did not allocate) cannot be run again, as a whole or node by node: it
// is declined GRAPH_MEMORY and runs once, and the allocation retires with it. As a whole, the
// allocating graph is declined too (a second launch would find its allocation alive).
TEST_F(Graphs, AllocationsThatOutliveTheLaunchAreTrackedUntilFreed) {
  for (bool nodes : {true, false}) {
    graph_nodes(nodes);
    tool().reset();
    tool().scenario.pass_count = [](const auto&) { return uint64_t{3}; };
    float* x = buffer(64, 0.25f);
    auto ga = *hostrt::graph_create();
    auto buf = hostrt::graph_add_mem_alloc(ga, 64 * sizeof(float));
    ASSERT_TRUE(buf.ok());
    auto* b = static_cast<float*>(*buf);
    uint32_t n = 64;
    void* args[] = {&b, &n};
    ASSERT_TRUE(hostrt::graph_add_memcpy(ga, b, x, 64 * sizeof(float)).ok());
    ASSERT_TRUE(hostrt::graph_add_kernel(ga, module().update, {1}, {64}, args).ok());
    auto gf = *hostrt::graph_create();
    ASSERT_TRUE(hostrt::graph_add_memcpy(gf, x, b, 64 * sizeof(float)).ok());
    ASSERT_TRUE(hostrt::graph_add_mem_free(gf, b).ok());
    ASSERT_TRUE(hostrt::graph_launch(ga, stream_).ok());
    sync();
    replay::Region r;
    const uint64_t agent = hostrt::testing::agent_of();
    EXPECT_TRUE(sdk::Runtime::get().inventory().find(agent, reinterpret_cast<uint64_t>(b), &r));
    ASSERT_TRUE(launch_update(b, 64, stream_).ok());
    ASSERT_TRUE(hostrt::graph_launch(gf, stream_).ok());
    sync();
    EXPECT_EQ(x[0], updated(0.25f, 2)) << (nodes ? "node" : "graph") << " profiling";
    EXPECT_FALSE(sdk::Runtime::get().inventory().find(agent, reinterpret_cast<uint64_t>(b), &r));
    auto exits = config_exits();
    ASSERT_EQ(exits.size(), 3u);
    EXPECT_EQ(exits[0].outcome.outcome,
              nodes ? KREPLAY_REPLAY_OUTCOME_REPLAYED : KREPLAY_REPLAY_OUTCOME_DECLINED);
    if (!nodes) {
      EXPECT_EQ(exits[0].outcome.reason, KREPLAY_DECLINE_REASON_GRAPH_MEMORY);
    }
    EXPECT_EQ(exits[1].outcome.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);  // the plain launch
    EXPECT_EQ(exits[1].outcome.passes_executed, 3u);
    EXPECT_EQ(exits[2].outcome.outcome, KREPLAY_REPLAY_OUTCOME_DECLINED);
    EXPECT_EQ(exits[2].outcome.reason, KREPLAY_DECLINE_REASON_GRAPH_MEMORY);
    EXPECT_TRUE(exits[2].flags & KREPLAY_DISPATCH_FLAG_GRAPH_WHOLE);
  }
}

}  // namespace
}  // namespace kreplay::test
