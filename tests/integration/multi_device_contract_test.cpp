// Many devices in one process (issue 15, item 1), on the host device with KREPLAY_HOST_DEVICES
// devices (ctest runs this binary with 2 and with 4): a replay window on one device never holds
// up launches on another, a launch's snapshot holds only its own device's memory, threads
// launching on every device at once all get the right results, and a kernel whose arguments
// point into another device's memory (peer memory) is declined PEER_MEMORY, never replayed with
// that memory unrestored. Peer copies wait for the windows of both devices.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <thread>

#include "harness.hpp"
#include "kreplay/kreplay.h"
#include "sdk/runtime.hpp"

namespace kreplay::test {
namespace {

using namespace std::chrono_literals;

// The gate: a kernel adds 1 to x[0] and then waits (thread 0) until the test opens the gate. It
// keeps the window of its device open as long as the test wants.
std::atomic<int> g_gate_open{0};
std::atomic<int> g_gate_entered{0};

void k_scale(hostrt::ThreadContext& t) {
  auto* x = t.arg<float*>(0);
  auto n = t.arg<uint32_t>(1);
  uint64_t i = t.global_thread_id();
  if (i < n) t.store(&x[i], t.load(&x[i]) * 2.0f + 1.0f);
}

void k_gate(hostrt::ThreadContext& t) {
  auto* x = t.arg<float*>(0);
  if (t.global_thread_id() != 0) return;
  t.store(&x[0], t.load(&x[0]) + 1.0f);
  g_gate_entered.fetch_add(1);
  while (g_gate_open.load() == 0) std::this_thread::yield();
}

// y[i] += x[i]: y on the launching device, x possibly on another (peer memory).
void k_accumulate(hostrt::ThreadContext& t) {
  auto* y = t.arg<float*>(0);
  auto* x = t.arg<const float*>(1);
  auto n = t.arg<uint32_t>(2);
  uint64_t i = t.global_thread_id();
  if (i < n) t.store(&y[i], t.load(&y[i]) + t.load(&x[i]));
}

struct DeviceKernels {
  hostrt::Kernel scale = 0, gate = 0, accumulate = 0;
};

int device_count() {
  return hostrt::config().device_count;
}

DeviceKernels& kernels(int device) {
  static std::map<int, DeviceKernels> loaded;
  static std::mutex mu;
  std::lock_guard lock(mu);
  auto it = loaded.find(device);
  if (it != loaded.end()) return it->second;
  hostrt::ModuleDesc d;
  d.name = "multi_device_module";
  d.kernels = {{"_Z5scalePfj", k_scale, {8, 4}},
               {"_Z4gatePfj", k_gate, {8, 4}},
               {"_Z10accumulatePfPKfj", k_accumulate, {8, 8, 4}}};
  auto mod = hostrt::load_module(d, device);
  EXPECT_TRUE(mod.ok());
  DeviceKernels k;
  k.scale = *hostrt::get_kernel(*mod, "_Z5scalePfj");
  k.gate = *hostrt::get_kernel(*mod, "_Z4gatePfj");
  k.accumulate = *hostrt::get_kernel(*mod, "_Z10accumulatePfPKfj");
  return loaded[device] = k;
}

class MultiDevice : public HostDeviceTest {
 protected:
  void SetUp() override {
    HostDeviceTest::SetUp();
    ASSERT_GE(device_count(), 2) << "run with KREPLAY_HOST_DEVICES=2 or more";
    for (int d = 0; d < device_count(); ++d) kernels(d);
    g_gate_open = 0;
    g_gate_entered = 0;
  }
  void TearDown() override {
    g_gate_open = 1;
    HostDeviceTest::TearDown();
  }
  /// A case of a test that runs several: @p change to the options, the tool's log cleared, every
  /// launch planned for 3 passes.
  void next_case(const std::function<void(replay::Options&)>& change) {
    set_options(change);
    tool().reset();
    tool().scenario.pass_count = [](const auto&) { return uint64_t{3}; };
  }
  /// n floats on @p device, each 0.25, freed after the test.
  float* buffer_on(int device, uint32_t n) {
    auto* p = static_cast<float*>(*hostrt::malloc(n * sizeof(float), device));
    for (uint32_t i = 0; i < n; ++i) p[i] = 0.25f;
    buffers_.push_back(p);
    return p;
  }
  /// The gate's launch and synchronization on another thread; the gate opens when it goes out of
  /// scope (before the future waits), so a failed assertion does not leave it waiting.
  struct GateRun {
    std::future<bool> done;
    ~GateRun() { g_gate_open = 1; }
  };
  /// Launch the gate over @p x on @p device from another thread (3 passes) and wait until it
  /// waits at the gate inside its first pass (at most 10 s).
  static GateRun start_gate(int device, float* x) {
    auto gate = std::async(std::launch::async, [device, x] {
      hostrt::Stream s = hostrt::default_stream(device);
      Status st = hostrt::launch_args(kernels(device).gate, {1}, {64}, s, x, 64u);
      return st.ok() && hostrt::stream_synchronize(s).ok();
    });
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (g_gate_entered.load() == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    return GateRun{std::move(gate)};
  }
  static Status scale(int device, float* x, uint32_t n, hostrt::Stream s) {
    return hostrt::launch_args(kernels(device).scale, {(n + 63) / 64}, {64}, s, x, n);
  }
  /// The outcomes of every dispatch so far, by dispatch id.
  static std::map<uint64_t, kreplay_replay_outcome_record_t> outcomes() {
    std::lock_guard lock(tool().mu);
    std::map<uint64_t, kreplay_replay_outcome_record_t> out;
    for (const auto& e :
         tool().of(KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY, KREPLAY_KERNEL_REPLAY_CONFIG)) {
      if (e.phase == KREPLAY_CALLBACK_PHASE_EXIT) out[e.dispatch_id] = e.outcome;
    }
    return out;
  }
  /// Start and end of every executed pass of every dispatch (KERNEL_DISPATCH EXIT).
  static std::map<uint64_t, std::vector<std::pair<uint64_t, uint64_t>>> pass_times() {
    std::lock_guard lock(tool().mu);
    std::map<uint64_t, std::vector<std::pair<uint64_t, uint64_t>>> out;
    for (const auto& e : tool().of(KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH)) {
      if (e.phase == KREPLAY_CALLBACK_PHASE_EXIT) out[e.dispatch_id].push_back({e.start, e.end});
    }
    return out;
  }
};

// A window held open on device 0 (its kernel waits at the gate inside pass 0) while every other
// device replays launches: those launches complete, all their passes inside the gate's pass.
TEST_F(MultiDevice, AWindowOnOneDeviceDoesNotHoldUpTheOthers) {
  float* a = buffer_on(0, 64);
  std::vector<float*> bufs;
  for (int d = 1; d < device_count(); ++d) bufs.push_back(buffer_on(d, 256));
  auto gate = start_gate(0, a);
  ASSERT_EQ(g_gate_entered.load(), 1) << "the gate kernel did not start";
  const auto deadline = std::chrono::steady_clock::now() + 10s;

  constexpr int kLaunches = 5;
  std::vector<std::future<bool>> others;
  for (int d = 1; d < device_count(); ++d) {
    others.push_back(std::async(std::launch::async, [this, d, x = bufs[d - 1]] {
      hostrt::Stream s = hostrt::default_stream(d);
      bool ok = true;
      for (int i = 0; i < kLaunches; ++i) ok = ok && scale(d, x, 256, s).ok();
      return ok && hostrt::stream_synchronize(s).ok();
    }));
  }
  bool all_done_while_gated = true;
  for (auto& f : others) {
    all_done_while_gated =
        all_done_while_gated && f.wait_until(deadline) == std::future_status::ready;
  }
  EXPECT_EQ(g_gate_entered.load(), 1) << "the gate's window went on while the others ran";
  EXPECT_TRUE(all_done_while_gated) << "launches on other devices waited for device 0's window";
  g_gate_open = 1;
  ASSERT_TRUE(gate.done.get());
  for (auto& f : others) EXPECT_TRUE(f.get());

  // Every result is right: the gate ran 3 passes, restored between them.
  EXPECT_EQ(g_gate_entered.load(), 3);
  EXPECT_EQ(a[0], 1.25f);
  for (float* b : bufs) {
    for (int i = 0; i < 256; ++i) ASSERT_EQ(b[i], updated(0.25f, kLaunches)) << i;
  }
  // The other devices' passes lie inside the gate's first pass.
  auto outs = outcomes();
  auto times = pass_times();
  ASSERT_EQ(outs.size(), 1u + kLaunches * (device_count() - 1));
  const uint64_t gate_id = outs.begin()->first;
  ASSERT_EQ(times[gate_id].size(), 3u);
  const auto [gate_start, gate_end] = times[gate_id][0];
  for (const auto& [id, out] : outs) {
    EXPECT_EQ(out.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED) << id;
    EXPECT_EQ(out.passes_executed, 3u) << id;
    if (id == gate_id) continue;
    ASSERT_EQ(times[id].size(), 3u) << id;
    for (const auto& [start, end] : times[id]) {
      EXPECT_GT(start, gate_start) << id;
      EXPECT_LT(end, gate_end) << id;
    }
  }
}

// Two threads per device, each with a stream and a buffer of its own, launching at once on every
// device: every launch replayed 3 times, every result right, and each launch's snapshot holds
// exactly its own device's memory (the buffers of a device differ in size from those of others).
TEST_F(MultiDevice, ThreadsOnEveryDeviceAreReplayedRight) {
  const int devices = device_count();
  constexpr int kThreadsPerDevice = 2, kLaunches = 12;
  std::vector<std::vector<float*>> bufs(devices);
  std::vector<uint32_t> sizes(devices);
  for (int d = 0; d < devices; ++d) {
    sizes[d] = 64u * (d + 1);
    for (int t = 0; t < kThreadsPerDevice; ++t) bufs[d].push_back(buffer_on(d, sizes[d]));
  }
  std::vector<uint64_t> device_bytes(devices);
  std::map<uint64_t, int> device_of_agent;
  for (int d = 0; d < devices; ++d) {
    device_bytes[d] =
        sdk::Runtime::get().engine().inventory().total_bytes(hostrt::testing::agent_of(d));
    device_of_agent[hostrt::testing::agent_of(d)] = d;
  }
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int d = 0; d < devices; ++d) {
    for (int t = 0; t < kThreadsPerDevice; ++t) {
      threads.emplace_back([&, d, t] {
        auto s = hostrt::stream_create(d);
        if (!s.ok()) return void(failures++);
        std::vector<float> host(sizes[d]);
        for (int i = 0; i < kLaunches; ++i) {
          if (!scale(d, bufs[d][t], sizes[d], *s).ok()) failures++;
          // Now and then a copy back, as an application checks progress.
          if (i % 4 == 3 && !hostrt::memcpy(host.data(), bufs[d][t], sizes[d] * 4).ok()) failures++;
        }
        if (!hostrt::stream_synchronize(*s).ok()) failures++;
        if (!hostrt::stream_destroy(*s).ok()) failures++;
      });
    }
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  for (int d = 0; d < devices; ++d) {
    for (float* b : bufs[d]) {
      for (uint32_t i = 0; i < sizes[d]; ++i) ASSERT_EQ(b[i], updated(0.25f, kLaunches)) << d;
    }
  }
  auto outs = outcomes();
  ASSERT_EQ(outs.size(), size_t(devices) * kThreadsPerDevice * kLaunches);
  for (const auto& [id, out] : outs) {
    EXPECT_EQ(out.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED) << id;
    EXPECT_EQ(out.passes_executed, 3u) << id;
    const int d = device_of_agent.at(out.agent_id.handle);
    EXPECT_EQ(out.bytes_snapshotted, device_bytes[d]) << "dispatch " << id << " on device " << d;
  }
}

// A kernel on device 0 that writes through a pointer into device 1's memory: device 0's snapshot
// cannot restore it, so it runs once, declined PEER_MEMORY (replayed, y would be 1.0 after three
// unrestored passes instead of 0.5).
TEST_F(MultiDevice, APeerPointerIsDeclined) {
  for (auto scope : {KREPLAY_SNAPSHOT_SCOPE_ALL, KREPLAY_SNAPSHOT_SCOPE_ARGS}) {
    next_case([&](replay::Options& o) { o.scope = scope; });
    float* own = buffer_on(0, 64);
    float* peer = buffer_on(1, 64);
    hostrt::Stream s = hostrt::default_stream(0);
    // Written on the peer: y (device 1) += x (device 0).
    ASSERT_TRUE(hostrt::launch_args(kernels(0).accumulate, {1}, {64}, s, peer, own, 64u).ok());
    // Read from the peer: y (device 0) += x (device 1).
    ASSERT_TRUE(hostrt::launch_args(kernels(0).accumulate, {1}, {64}, s, own, peer, 64u).ok());
    // Both on device 0: replayed.
    ASSERT_TRUE(hostrt::launch_args(kernels(0).accumulate, {1}, {64}, s, own, own, 64u).ok());
    ASSERT_TRUE(hostrt::device_synchronize(0).ok());
    for (int i = 0; i < 64; ++i) {
      ASSERT_EQ(peer[i], 0.5f) << i;
      ASSERT_EQ(own[i], 1.5f) << i;  // (0.25 + 0.5) * 2
    }
    auto outs = outcomes();
    ASSERT_EQ(outs.size(), 3u);
    auto it = outs.begin();
    for (int k = 0; k < 2; ++k, ++it) {
      EXPECT_EQ(it->second.outcome, KREPLAY_REPLAY_OUTCOME_DECLINED);
      EXPECT_EQ(it->second.reason, KREPLAY_DECLINE_REASON_PEER_MEMORY);
      EXPECT_EQ(it->second.passes_executed, 1u);
    }
    EXPECT_EQ(it->second.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
    EXPECT_EQ(it->second.passes_executed, 3u);
  }
  EXPECT_STREQ(kreplay_get_decline_reason_name(KREPLAY_DECLINE_REASON_PEER_MEMORY), "peer_memory");
}

// A graph on device 0 whose kernel node writes device 1's memory: declined PEER_MEMORY as a whole,
// profiled as one workload or node by node (run node by node, its nodes would run twice), and
// run once.
TEST_F(MultiDevice, AGraphOverPeerMemoryIsDeclined) {
  for (bool nodes : {true, false}) {
    next_case([&](replay::Options& o) { o.graph_nodes = nodes; });
    float* own = buffer_on(0, 64);
    float* peer = buffer_on(1, 64);
    auto g = hostrt::graph_create();
    ASSERT_TRUE(g.ok());
    uint32_t n = 64;
    void* params[] = {&peer, &own, &n};
    ASSERT_TRUE(hostrt::graph_add_kernel(*g, kernels(0).accumulate, {1}, {64}, params).ok());
    ASSERT_TRUE(hostrt::graph_launch(*g, hostrt::default_stream(0)).ok());
    ASSERT_TRUE(hostrt::device_synchronize(0).ok());
    for (int i = 0; i < 64; ++i) ASSERT_EQ(peer[i], 0.5f) << i << (nodes ? " node" : " graph");
    auto outs = outcomes();
    ASSERT_EQ(outs.size(), 1u) << (nodes ? "node" : "graph");
    EXPECT_EQ(outs.begin()->second.outcome, KREPLAY_REPLAY_OUTCOME_DECLINED);
    EXPECT_EQ(outs.begin()->second.reason, KREPLAY_DECLINE_REASON_PEER_MEMORY);
  }
}

// A copy from device 1's memory made while device 1's window is open waits for the window: it
// sees the memory the kernel left, not the entry state a restore brings back between passes.
TEST_F(MultiDevice, APeerCopyWaitsForThePeersWindow) {
  float* src = buffer_on(1, 64);
  float* dst = buffer_on(0, 64);
  auto gate = start_gate(1, src);
  ASSERT_EQ(g_gate_entered.load(), 1) << "the gate kernel did not start";
  auto sync_copy = std::async(std::launch::async, [&] {
    return hostrt::memcpy(dst, src, 32 * sizeof(float)).ok();  // dst[0, 32) from src[0, 32)
  });
  auto async_copy = std::async(std::launch::async, [&] {
    hostrt::Stream s = hostrt::default_stream(0);
    bool ok = hostrt::memcpy_async(dst + 32, src, 32 * sizeof(float), s).ok();  // dst[32, 64)
    return ok && hostrt::stream_synchronize(s).ok();
  });
  EXPECT_EQ(sync_copy.wait_for(200ms), std::future_status::timeout)
      << "a copy from device 1 went on while device 1's window was open";
  EXPECT_EQ(async_copy.wait_for(10ms), std::future_status::timeout);
  g_gate_open = 1;
  ASSERT_TRUE(gate.done.get());
  EXPECT_TRUE(sync_copy.get());
  EXPECT_TRUE(async_copy.get());
  EXPECT_EQ(g_gate_entered.load(), 3);
  EXPECT_EQ(src[0], 1.25f);
  EXPECT_EQ(dst[0], 1.25f);
  EXPECT_EQ(dst[32], 1.25f);
}

}  // namespace
}  // namespace kreplay::test
