// Range replay (DESIGN.md §2b, include/kreplay/range_replay.h) pinned on the host device: ranges
// open at a launch and close before any call that could observe or change memory, every launch
// keeps its own dispatch id, the last pass is not restored, and the closing call sees exactly one
// execution.
#include <thread>

#include "range_harness.hpp"

namespace kreplay::test {
namespace {

TEST_F(Range, TheSynchronizeOptionIsCheckedAndApplied) {
  fx();
  EXPECT_EQ(S().bad_sync, KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  EXPECT_FALSE(S().span_after_close);
  EXPECT_FALSE(S().span_after_default);  // DEFAULT kept CLOSE
  EXPECT_TRUE(S().span_after_span);
}

TEST_F(Range, SecondSubscriberIsRefused) {
  fx();
  EXPECT_EQ(S().second, KREPLAY_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED);
}

TEST_F(Range, LaunchesBetweenSynchronizationsFormOneRangeReplayedAsAUnit) {
  float* x = buffer(1000, 0.5f);
  for (int i = 0; i < 5; ++i) update(x, 1000);
  ASSERT_TRUE(hr::stream_synchronize(stream_).ok());  // closes the range
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 1u);
  const auto& o = exits[0].outcome;
  EXPECT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(o.close_reason, KREPLAY_RANGE_CLOSE_SYNCHRONIZE);
  EXPECT_EQ(o.launches, 5u);
  EXPECT_EQ(o.passes_executed, 3u);
  EXPECT_GT(o.bytes_snapshotted, 4000u);
  EXPECT_GT(o.bytes_restored, 0u);
  // One execution's memory, and the module-scope counter bumped once per logical launch.
  EXPECT_EQ(x[7], expect(0.5f + 0.007f, 5));
  EXPECT_EQ(*g_counter, 5u);
  // Every launch keeps its own dispatch id; every trace names its launch and pass.
  std::set<uint64_t> ids(exits[0].dispatch_ids.begin(), exits[0].dispatch_ids.end());
  EXPECT_EQ(ids.size(), 5u);
  std::map<uint64_t, std::set<uint64_t>> passes_of;
  for (const auto& t : S().traces) passes_of[t.dispatch_id].insert(t.pass);
  for (uint64_t id : ids) EXPECT_EQ(passes_of[id], (std::set<uint64_t>{0, 1, 2})) << id;
  // PASS ENTER/EXIT once per pass, LAUNCH once per launch.
  int pass_enters = 0, launches = 0;
  for (const auto& e : S().ranges) {
    if (e.op == KREPLAY_RANGE_REPLAY_PASS && e.phase == KREPLAY_CALLBACK_PHASE_ENTER) ++pass_enters;
    if (e.op == KREPLAY_RANGE_REPLAY_LAUNCH) ++launches;
  }
  EXPECT_EQ(pass_enters, 3);
  EXPECT_EQ(launches, 5);
}

TEST_F(Range, KernelsOfARangeReadEachOthersOutputs) {
  float* x = buffer(512, 0.25f);
  float* y = buffer(512, 1.0f);
  std::vector<float> ex(x, x + 512), ey(y, y + 512);
  for (int r = 0; r < 4; ++r) {
    update(x, 512);
    ASSERT_TRUE(hr::launch_args(fx().accumulate, {8}, {64}, stream_, y,
                                static_cast<const float*>(x), uint32_t{512})
                    .ok());
    for (int i = 0; i < 512; ++i) {
      ex[i] = ex[i] * 2.0f + 1.0f;
      ey[i] = ey[i] + ex[i];
    }
  }
  ASSERT_TRUE(hr::device_synchronize().ok());
  EXPECT_EQ(std::memcmp(x, ex.data(), 512 * 4), 0);
  EXPECT_EQ(std::memcmp(y, ey.data(), 512 * 4), 0);
  ASSERT_EQ(S().exits().size(), 1u);
  EXPECT_EQ(S().exits()[0].outcome.launches, 8u);
}

TEST_F(Range, EveryClosingCallSeesExactlyOneExecution) {
  float* x = buffer(256, 0.5f);
  float host = 0;
  update(x, 256);
  update(x, 256);
  ASSERT_TRUE(hr::memcpy(&host, x, 4).ok());  // a copy closes the range first
  EXPECT_EQ(host, expect(0.5f, 2));
  update(x, 256);
  auto extra = hr::malloc_host_mapped(64);  // an allocation the host can see closes it
  ASSERT_TRUE(extra.ok());
  EXPECT_EQ(x[0], expect(0.5f, 3));
  update(x, 256);
  auto other = *hr::stream_create();
  update(x, 256, other);  // a launch on another stream closes it
  ASSERT_TRUE(hr::device_synchronize().ok());
  EXPECT_EQ(x[0], expect(0.5f, 5));
  EXPECT_EQ(*g_counter, 5u);
  ASSERT_TRUE(hr::free(*extra).ok());
  ASSERT_TRUE(hr::stream_destroy(other).ok());
  std::vector<kreplay_range_close_reason_t> reasons;
  for (const auto& e : S().exits()) reasons.push_back(e.outcome.close_reason);
  EXPECT_EQ(reasons, (std::vector<kreplay_range_close_reason_t>{
                         KREPLAY_RANGE_CLOSE_MEMORY, KREPLAY_RANGE_CLOSE_MEMORY,
                         KREPLAY_RANGE_CLOSE_OTHER_STREAM, KREPLAY_RANGE_CLOSE_SYNCHRONIZE}));
}

// PyTorch runs a step's backward on its autograd thread, on the stream the forward used: that
// thread's launches join the range the main thread opened, in the order they reached the stream.
TEST_F(Range, AnotherThreadsLaunchOnTheRangesStreamJoinsIt) {
  float* x = buffer(256, 0.5f);
  float* y = buffer(256, 0.5f);
  update(x, 256);
  std::thread t([&] { update(y, 256); });
  t.join();
  update(x, 256);
  EXPECT_TRUE(S().exits().empty()) << "another thread's launch on the range's stream closed it";
  EXPECT_EQ(read(x, 3), expect(0.5f + 0.003f, 2));  // a copy to the host closes the range
  EXPECT_EQ(read(y, 3), expect(0.5f + 0.003f, 1));
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].outcome.close_reason, KREPLAY_RANGE_CLOSE_MEMORY);
  EXPECT_EQ(exits[0].outcome.launches, 3u);
  EXPECT_EQ(exits[0].outcome.passes_executed, 3u);
  EXPECT_EQ(*g_counter, 3u);
}

// A tool whose selection depends on the thread (the profiler's NVTX include) keeps each range to
// its thread: another thread's launch, even on the range's stream, closes it.
TEST_F(Range, AThreadBoundRangeClosesAtAnotherThreadsLaunch) {
  S().thread_bound = true;
  float* x = buffer(256, 0.5f);
  float* y = buffer(256, 0.5f);
  update(x, 256);
  std::thread t([&] { update(y, 256); });
  t.join();
  EXPECT_EQ(read(x, 3), expect(0.5f + 0.003f, 1));
  EXPECT_EQ(read(y, 3), expect(0.5f + 0.003f, 1));
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 2u);
  EXPECT_EQ(exits[0].outcome.close_reason, KREPLAY_RANGE_CLOSE_OTHER_THREAD);
  EXPECT_EQ(exits[0].outcome.launches, 1u);
  EXPECT_EQ(exits[1].outcome.launches, 1u);
}

// Another thread's launch on a stream of its own is not ordered with the range's.
TEST_F(Range, AnotherThreadsLaunchOnAnotherStreamClosesTheRange) {
  float* x = buffer(256, 0.5f);
  float* y = buffer(256, 0.5f);
  update(x, 256);
  update(x, 256);
  std::thread t([&] {
    auto s = *hr::stream_create();
    update(y, 256, s);
    ASSERT_TRUE(hr::stream_synchronize(s).ok());
    ASSERT_TRUE(hr::stream_destroy(s).ok());
  });
  t.join();
  ASSERT_TRUE(hr::device_synchronize().ok());
  auto exits = S().exits();
  ASSERT_GE(exits.size(), 2u);
  EXPECT_EQ(exits[0].outcome.close_reason, KREPLAY_RANGE_CLOSE_OTHER_STREAM);
  EXPECT_EQ(exits[0].outcome.launches, 2u);
  EXPECT_EQ(x[3], expect(0.5f + 0.003f, 2));
  EXPECT_EQ(y[3], expect(0.5f + 0.003f, 1));
}

// A thread's own stream (CUDA's per-thread default stream) has one handle on every thread but is
// another stream on each: another thread's launch there is not ordered with the range's, though
// the handle is the range's.
TEST_F(Range, AnotherThreadsLaunchOnItsOwnStreamClosesTheRange) {
  float* x = buffer(256, 0.5f);
  float* y = buffer(256, 0.5f);
  update(x, 256, hr::kPerThreadStream);
  update(x, 256, hr::kPerThreadStream);
  std::thread t([&] {
    update(y, 256, hr::kPerThreadStream);
    ASSERT_TRUE(hr::stream_synchronize(hr::kPerThreadStream).ok());
  });
  t.join();
  ASSERT_TRUE(hr::device_synchronize().ok());
  auto exits = S().exits();
  ASSERT_GE(exits.size(), 2u);
  EXPECT_EQ(exits[0].outcome.close_reason, KREPLAY_RANGE_CLOSE_OTHER_THREAD);
  EXPECT_EQ(exits[0].outcome.launches, 2u);
  EXPECT_EQ(exits[1].outcome.launches, 1u);
  EXPECT_EQ(x[3], expect(0.5f + 0.003f, 2));
  EXPECT_EQ(y[3], expect(0.5f + 0.003f, 1));
}

// A copy that found no open range may still have to wait for the window while another thread
// opens one: that range's snapshot predates the copy, so its restore would undo the copy unless
// the copy closes it first. (Seen on the H200 as a wrong result in multistream_threads under
// 10-pass range replay.)
TEST_F(Range, ARangeOpenedBetweenACopysBarrierAndItsWindowIsClosedBeforeTheCopy) {
  float* x = buffer(256, 0.5f);  // updated by the other thread
  float* y = buffer(256, 1.0f);  // the copy's target
  std::atomic<bool> fired{false};
  sdk::Runtime::get().engine().set_guard_probe_for_test([&] {
    if (fired.exchange(true)) return;
    std::thread other([&] { update(x, 256); });  // opens a range owned by `other`
    other.join();
  });
  const float seven = 7.0f;
  ASSERT_TRUE(hr::memcpy(y, &seven, sizeof(seven)).ok());
  sdk::Runtime::get().engine().set_guard_probe_for_test(nullptr);
  ASSERT_TRUE(fired.load());
  ASSERT_TRUE(hr::device_synchronize().ok());
  EXPECT_EQ(y[0], 7.0f);
  EXPECT_EQ(y[1], 1.0f + 0.001f * 1.0f);
  EXPECT_EQ(x[3], expect(0.5f + 0.003f, 1));
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].outcome.close_reason, KREPLAY_RANGE_CLOSE_MEMORY);
  EXPECT_EQ(exits[0].outcome.launches, 1u);
  EXPECT_EQ(exits[0].outcome.passes_executed, 3u);
}

// A copy from another thread in the moments after a range took its snapshot, before the range is
// published (the engine flushes the caches then): it must wait for the range and close it, not
// slip in and be undone by the range's restore. (Seen on the H200 as thread 3's buffer wrong in
// multistream_threads under 3-pass range replay, once the cache flush widened those moments.)
TEST_F(Range, ACopyWhileARangeIsBeingOpenedWaitsForTheRange) {
  // With memory calls closing ranges (KREPLAY_RANGE_MEMORY=close): joining, the copy would be
  // one of the range's items (range_memory_test.cpp).
  set_range([](replay::RangeOptions& o) { o.join_memory = false; });
  float* x = buffer(256, 0.5f);  // updated by this thread: its launch opens the range
  float* y = buffer(256, 1.0f);  // the other thread's copy target
  std::atomic<bool> fired{false};
  std::atomic<bool> copied{false};
  std::thread other;
  hr::testing::on_cache_flush([&] {
    if (fired.exchange(true)) return;
    other = std::thread([&] {
      const float seven = 7.0f;
      EXPECT_TRUE(hr::memcpy(y, &seven, sizeof(seven)).ok());
      copied = true;
    });
    // Give the copy time to slip in, should nothing stop it (it must not finish: the range holds
    // it).
    for (int i = 0; i < 100 && !copied.load(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  });
  update(x, 256);
  hr::testing::on_cache_flush(nullptr);
  ASSERT_TRUE(fired.load());
  other.join();
  ASSERT_TRUE(hr::device_synchronize().ok());
  EXPECT_EQ(y[0], 7.0f);  // 1.0 when the range's restore undid the copy
  EXPECT_EQ(x[3], expect(0.5f + 0.003f, 1));
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].outcome.close_reason, KREPLAY_RANGE_CLOSE_MEMORY);
  EXPECT_EQ(exits[0].outcome.passes_executed, 3u);
}

// CUDA_MODULE_LOADING=LAZY: a module is loaded, and its variables come to exist, at the first
// launch of one of its kernels. That load closes the open range first: its snapshot does not hold
// the new variables, so each later pass would add to what the pass before wrote there.
uint32_t* g_lazy_counter = nullptr;
void k_lazy_count(hr::ThreadContext& t) {
  if (t.global_thread_id() == 0) t.atomic_add(g_lazy_counter, 1u);
}

TEST_F(Range, ALazilyLoadedModuleClosesTheRangeBeforeItsVariablesExist) {
  hr::ModuleDesc d{
      "range_lazy_module", {{"_Z10lazy_countv", k_lazy_count, {}}}, {{"lazy_counter", 4, {}}}};
  d.lazy = true;
  auto m = hr::load_module(d);
  ASSERT_TRUE(m.ok());
  g_lazy_counter = static_cast<uint32_t*>(*hr::testing::module_global(*m, "lazy_counter"));
  const hr::Kernel count = *hr::get_kernel(*m, "_Z10lazy_countv");
  float* x = buffer(256, 0.5f);
  update(x, 256);                                                    // opens a range
  ASSERT_TRUE(hr::launch(count, {1}, {32}, stream_, nullptr).ok());  // loads the module
  update(x, 256);
  EXPECT_EQ(read(x, 3), expect(0.5f + 0.003f, 2));
  EXPECT_EQ(*g_lazy_counter, 1u);  // 3 when a range's passes bumped it past its snapshot
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 2u);
  EXPECT_EQ(exits[0].outcome.close_reason, KREPLAY_RANGE_CLOSE_MODULE);
  EXPECT_EQ(exits[0].close_call, "hostrt: lazy module load");
  EXPECT_EQ(exits[0].outcome.launches, 1u);
  EXPECT_EQ(exits[1].outcome.launches, 2u);
  EXPECT_EQ(exits[1].outcome.passes_executed, 3u);
}

// A lazily loaded module without variables stays inside the open range, unless the counters patch
// the kernels' code (CUDA's SASS metrics): code loaded inside a range's counter session crashed
// CUPTI when a later pass launched it again, so then its load closes the range first.
void k_lazy_noop(hr::ThreadContext&) {}

TEST_F(Range, ALazyLoadClosesTheRangeOnlyWhenTheCountersPatchCode) {
  for (const bool patching : {false, true}) {
    S().reset();
    hr::testing::set_counters_patch_code(patching);
    hr::ModuleDesc d{patching ? "range_lazy_code_patched" : "range_lazy_code",
                     {{"_Z9lazy_noopv", k_lazy_noop, {}}}, {}};
    d.lazy = true;
    auto m = hr::load_module(d);
    ASSERT_TRUE(m.ok());
    const hr::Kernel noop = *hr::get_kernel(*m, "_Z9lazy_noopv");
    float* x = buffer(256, 0.5f);
    update(x, 256);                                                   // opens a range
    ASSERT_TRUE(hr::launch(noop, {1}, {32}, stream_, nullptr).ok());  // loads the module
    update(x, 256);
    EXPECT_EQ(read(x, 3), expect(0.5f + 0.003f, 2));
    auto exits = S().exits();
    hr::testing::set_counters_patch_code(false);
    if (!patching) {
      ASSERT_EQ(exits.size(), 1u);
      EXPECT_EQ(exits[0].outcome.launches, 3u);
    } else {
      ASSERT_EQ(exits.size(), 2u);
      EXPECT_EQ(exits[0].outcome.close_reason, KREPLAY_RANGE_CLOSE_MODULE);
      EXPECT_EQ(exits[0].close_call, "hostrt: lazy module load");
      EXPECT_EQ(exits[0].outcome.launches, 1u);
      EXPECT_EQ(exits[1].outcome.launches, 2u);
    }
  }
}

// A collective communication kernel (NCCL) closes the open range and runs once, outside any range:
// replaying it would wait for peers that do not replay.
TEST_F(Range, ACollectiveKernelClosesTheRangeAndRunsOnce) {
  float* x = buffer(256, 0.5f);
  update(x, 256);
  update(x, 256);
  ASSERT_TRUE(hr::launch_args(fx().collective, {4}, {64}, stream_, x, 256u).ok());
  update(x, 256);
  ASSERT_TRUE(hr::device_synchronize().ok());
  EXPECT_EQ(x[3], expect(0.5f + 0.003f, 4));  // every launch ran once
  EXPECT_EQ(*g_counter, 4u);
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 2u);
  EXPECT_EQ(exits[0].outcome.close_reason, KREPLAY_RANGE_CLOSE_OTHER);
  EXPECT_EQ(exits[0].outcome.launches, 2u);
  EXPECT_EQ(exits[0].outcome.passes_executed, 3u);
  EXPECT_EQ(exits[1].outcome.launches, 1u);  // the launch after the collective one
}

// A kernel whose module uses the device heap closes the open range and is a range of its own,
// replayed with the heap saved after its snapshot and put back after every restore (the device
// heap's own tests: heap_contract_test); on a device that cannot save its heap that range is
// declined DEVICE_HEAP and its launch runs once.
TEST_F(Range, ADeviceHeapKernelIsARangeOfItsOwn) {
  for (bool restorable : {true, false}) {
    S().reset();
    hr::testing::set_heap_set_up(true);  // (the first heap launch runs once: heap_contract_test)
    hr::testing::set_heap_restorable(restorable);
    float* x = buffer(256, 0.5f);
    update(x, 256);
    ASSERT_TRUE(hr::launch_args(fx().heap_update, {4}, {64}, stream_, x, 256u).ok());
    update(x, 256);
    ASSERT_TRUE(hr::device_synchronize().ok());
    hr::testing::set_heap_restorable(true);
    EXPECT_EQ(x[3], expect(0.5f + 0.003f, 3));  // every launch ran once
    auto exits = S().exits();
    ASSERT_EQ(exits.size(), 3u);
    EXPECT_EQ(exits[0].outcome.close_reason, KREPLAY_RANGE_CLOSE_OTHER);
    EXPECT_EQ(exits[0].outcome.launches, 1u);
    EXPECT_EQ(exits[1].outcome.launches, 1u);  // the heap launch
    EXPECT_EQ(exits[1].outcome.close_reason, KREPLAY_RANGE_CLOSE_OTHER);
    if (restorable) {
      EXPECT_EQ(exits[1].outcome.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
      EXPECT_EQ(exits[1].outcome.passes_executed, 3u);
      EXPECT_EQ(exits[1].outcome.snapshot_mode, KREPLAY_SNAPSHOT_MODE_FULL);
    } else {
      EXPECT_EQ(exits[1].outcome.outcome, KREPLAY_REPLAY_OUTCOME_DECLINED);
      EXPECT_EQ(exits[1].outcome.reason, KREPLAY_DECLINE_REASON_DEVICE_HEAP);
    }
    EXPECT_EQ(exits[2].outcome.launches, 1u);
  }
}

// Graph launches in range replay. Node profiling: the graph's kernel nodes, run one at a time
// after its own launch, form a range of their own (closed at the end of the graph launch) and are
// replayed as one; the memory ends as one execution of the graph leaves it.
TEST_F(Range, AGraphsKernelNodesFormOneRange) {
  auto o = sdk::Runtime::get().engine().options();
  o.graph_nodes = true;
  sdk::Runtime::get().engine().set_options(o);
  float* x = buffer(256, 0.5f);
  float* y = buffer(256, 0.25f);
  update(x, 256);  // a range before the graph: the graph launch closes it
  auto g = *hr::graph_create();
  uint32_t n = 256;
  void* xa[] = {&x, &n};
  void* ya[] = {&y, &n};
  ASSERT_TRUE(hr::graph_add_kernel(g, fx().update, {4}, {64}, xa).ok());
  ASSERT_TRUE(hr::graph_add_kernel(g, fx().update, {4}, {64}, ya).ok());
  ASSERT_TRUE(hr::graph_launch(g, stream_).ok());
  ASSERT_TRUE(hr::device_synchronize().ok());
  EXPECT_EQ(x[3], expect(0.5f + 0.003f, 2));
  EXPECT_EQ(y[3], expect(0.25f + 0.003f, 1));
  EXPECT_EQ(*g_counter, 3u);
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 2u);
  EXPECT_EQ(exits[0].outcome.close_reason, KREPLAY_RANGE_CLOSE_GRAPH);
  EXPECT_EQ(exits[0].outcome.launches, 1u);
  EXPECT_EQ(exits[1].outcome.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(exits[1].outcome.close_reason, KREPLAY_RANGE_CLOSE_GRAPH);
  EXPECT_EQ(exits[1].outcome.launches, 2u);
  EXPECT_EQ(exits[1].outcome.passes_executed, 3u);
}

// Whole-graph profiling: a graph launch is a range of its own with one launch, replayed by
// launching the graph again.
TEST_F(Range, AWholeGraphIsARangeOfItsOwn) {
  auto o = sdk::Runtime::get().engine().options();
  o.graph_nodes = false;
  sdk::Runtime::get().engine().set_options(o);
  float* x = buffer(256, 0.5f);
  auto g = *hr::graph_create();
  uint32_t n = 256;
  void* xa[] = {&x, &n};
  ASSERT_TRUE(hr::graph_add_kernel(g, fx().update, {4}, {64}, xa).ok());
  ASSERT_TRUE(hr::graph_add_kernel(g, fx().update, {4}, {64}, xa).ok());
  ASSERT_TRUE(hr::graph_launch(g, stream_).ok());
  update(x, 256);  // after the graph: a new range
  ASSERT_TRUE(hr::device_synchronize().ok());
  EXPECT_EQ(x[3], expect(0.5f + 0.003f, 3));
  EXPECT_EQ(*g_counter, 3u);
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 2u);
  EXPECT_EQ(exits[0].outcome.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(exits[0].outcome.close_reason, KREPLAY_RANGE_CLOSE_GRAPH);
  EXPECT_EQ(exits[0].outcome.launches, 1u);
  EXPECT_EQ(exits[0].outcome.passes_executed, 3u);
  EXPECT_EQ(exits[1].outcome.launches, 1u);
  o.graph_nodes = true;
  sdk::Runtime::get().engine().set_options(o);
}

// A graph that cannot be run again as a whole (graph profiling) is a declined range of one launch:
// it runs once and its outcome says why.
TEST_F(Range, AGraphWithAHostNodeIsADeclinedRange) {
  auto o = sdk::Runtime::get().engine().options();
  o.graph_nodes = false;
  sdk::Runtime::get().engine().set_options(o);
  float* x = buffer(256, 0.5f);
  static int calls;
  calls = 0;
  auto g = *hr::graph_create();
  uint32_t n = 256;
  void* xa[] = {&x, &n};
  ASSERT_TRUE(hr::graph_add_kernel(g, fx().update, {4}, {64}, xa).ok());
  ASSERT_TRUE(hr::graph_add_host(
                  g, [](void*) { ++calls; }, nullptr)
                  .ok());
  ASSERT_TRUE(hr::graph_launch(g, stream_).ok());
  ASSERT_TRUE(hr::device_synchronize().ok());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(x[3], expect(0.5f + 0.003f, 1));
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].outcome.outcome, KREPLAY_REPLAY_OUTCOME_DECLINED);
  EXPECT_EQ(exits[0].outcome.reason, KREPLAY_DECLINE_REASON_GRAPH_HOST_NODE);
  EXPECT_EQ(exits[0].outcome.launches, 1u);
  EXPECT_EQ(exits[0].outcome.passes_executed, 1u);
  o.graph_nodes = true;
  sdk::Runtime::get().engine().set_options(o);
}

// A launch over mapped host memory is a range of its own: its own run is a short probe, then it is
// replayed like any range; the memory holds one execution.
TEST_F(Range, AHostMemoryLaunchIsARangeOfItsOwn) {
  float* x = buffer(256, 0.5f);
  auto* h = static_cast<float*>(*hr::malloc_host_mapped(256 * sizeof(float)));
  for (int i = 0; i < 256; ++i) h[i] = 0.25f;
  update(x, 256);
  update(h, 256);
  update(x, 256);
  ASSERT_TRUE(hr::device_synchronize().ok());
  EXPECT_EQ(h[0], expect(0.25f, 1));
  EXPECT_EQ(x[3], expect(0.5f + 0.003f, 2));
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 3u);
  EXPECT_EQ(exits[1].outcome.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(exits[1].outcome.launches, 1u);
  EXPECT_EQ(exits[1].outcome.passes_executed, 3u);
  EXPECT_TRUE(hr::free(h).ok());
}

// A latch kernel over mapped host memory, then work queued behind it on the same stream, then the
// host opens the latch (UnifiedMemoryPerf of the cuda-samples), twice: the application's thread
// comes back from every launch without waiting for the latch, and memory ends as one execution.
TEST_F(Range, LaunchesBehindALatchDoNotWaitForTheHost) {
  float* x = buffer(256, 0.5f);
  auto s = *hr::stream_create();
  run_behind_a_latch(x, s);
  EXPECT_EQ(x[3], expect(0.5f + 0.003f, 4));
  EXPECT_TRUE(hr::stream_destroy(s).ok());
}

// The same with one counted pass (the kreplay command when every counter fits one pass): ranges
// of one pass share a counter session and wait for their launches; while the latch kernel runs,
// the launches behind it open no such range. (UnifiedMemoryPerf under --replay-mode range
// --pmc A --pmc B --pmc C on the H200 stopped after its first latch kernel.)
TEST_F(Range, OnePassLaunchesBehindALatchDoNotWaitForTheHost) {
  const char* names[] = {"launches"};
  ASSERT_EQ(kreplay_create_counter_config({hr::testing::agent_of()}, names, 1, &S().config),
            KREPLAY_STATUS_SUCCESS);
  S().passes = [] { return uint64_t{1}; };
  float* x = buffer(256, 0.5f);
  auto s = *hr::stream_create();
  run_behind_a_latch(x, s);
  // The latch is open: launches are counted again.
  const size_t counted = S().counters.size();
  update(x, 256, s);
  ASSERT_TRUE(hr::stream_synchronize(s).ok());
  EXPECT_GT(S().counters.size(), counted);
  EXPECT_EQ(x[3], expect(0.5f + 0.003f, 5));
  EXPECT_TRUE(hr::stream_destroy(s).ok());
}

TEST_F(Range, LaunchLimitSplitsRanges) {
  auto opt = options_;
  opt.max_launches = 3;
  sdk::Runtime::get().engine().set_range_options(opt);
  float* x = buffer(128, 0.5f);
  for (int i = 0; i < 7; ++i) update(x, 128);
  ASSERT_TRUE(hr::device_synchronize().ok());
  std::vector<uint64_t> sizes;
  for (const auto& e : S().exits()) sizes.push_back(e.outcome.launches);
  EXPECT_EQ(sizes, (std::vector<uint64_t>{3, 3, 1}));
  EXPECT_EQ(S().exits()[0].outcome.close_reason, KREPLAY_RANGE_CLOSE_LAUNCH_LIMIT);
  EXPECT_EQ(x[0], expect(0.5f, 7));
}

TEST_F(Range, ProfilerMarkersDelimitRanges) {
  auto opt = options_;
  opt.marker = replay::RangeOptions::Marker::kCudaProfiler;
  sdk::Runtime::get().engine().set_range_options(opt);
  float* x = buffer(128, 0.5f);
  update(x, 128);  // outside the markers: not in a range
  hr::profiler_start();
  update(x, 128);
  update(x, 128);
  hr::profiler_stop();
  update(x, 128);
  ASSERT_TRUE(hr::device_synchronize().ok());
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].outcome.launches, 2u);
  EXPECT_EQ(exits[0].outcome.close_reason, KREPLAY_RANGE_CLOSE_MARKER);
  EXPECT_EQ(x[0], expect(0.5f, 4));
}

TEST_F(Range, NvtxRangeByName) {
  auto opt = options_;
  opt.marker = replay::RangeOptions::Marker::kNvtx;
  opt.nvtx_name = "step";
  sdk::Runtime::get().engine().set_range_options(opt);
  float* x = buffer(128, 0.5f);
  hr::nvtx_range_push("warmup");
  update(x, 128);
  hr::nvtx_range_pop();
  hr::nvtx_range_push("step");
  update(x, 128);
  update(x, 128);
  update(x, 128);
  hr::nvtx_range_pop();
  ASSERT_TRUE(hr::device_synchronize().ok());
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].outcome.launches, 3u);
  EXPECT_EQ(x[0], expect(0.5f, 4));
}

TEST_F(Range, CountersPerLaunchAndPass) {
  const char* names[] = {"threads_launched", "bytes_written"};
  ASSERT_EQ(kreplay_create_counter_config({hr::testing::agent_of()}, names, 2, &S().config),
            KREPLAY_STATUS_SUCCESS);
  float* x = buffer(1000, 0.5f);
  update(x, 1000);
  update(x, 640);
  ASSERT_TRUE(hr::device_synchronize().ok());
  auto ids = S().exits().at(0).dispatch_ids;
  ASSERT_EQ(ids.size(), 2u);
  std::map<std::tuple<uint64_t, uint64_t, std::string>, double> v;
  for (const auto& c : S().counters) v[{c.dispatch_id, c.pass, c.name}] = c.value;
  EXPECT_EQ(v.size(), 2u * 3 * 2);  // 2 launches x 3 passes x 2 counters
  for (uint64_t p = 0; p < 3; ++p) {
    EXPECT_EQ((v[{ids[0], p, "threads_launched"}]), 16.0 * 64);
    EXPECT_EQ((v[{ids[1], p, "threads_launched"}]), 10.0 * 64);
    EXPECT_EQ((v[{ids[0], p, "bytes_written"}]), 1000.0 * 4 + 4);
    EXPECT_EQ((v[{ids[1], p, "bytes_written"}]), 640.0 * 4 + 4);
  }
}

TEST_F(Range, UnselectedLaunchesRunInEveryPassAndARangeWithoutSelectionIsNotReplayed) {
  float* x = buffer(128, 0.5f);
  float* y = buffer(128, 1.0f);
  S().select = [](const kreplay_kernel_dispatch_info_t& i) {
    return std::string(i.kernel_name).find("accumulate") != std::string::npos;
  };
  update(x, 128);
  ASSERT_TRUE(hr::launch_args(fx().accumulate, {2}, {64}, stream_, y, static_cast<const float*>(x),
                              uint32_t{128})
                  .ok());
  ASSERT_TRUE(hr::device_synchronize().ok());
  update(x, 128);  // alone, unselected
  ASSERT_TRUE(hr::device_synchronize().ok());
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 2u);
  EXPECT_EQ(exits[0].outcome.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(exits[0].outcome.selected_launches, 1u);
  EXPECT_EQ(exits[1].outcome.outcome, KREPLAY_REPLAY_OUTCOME_NOT_REQUESTED);
  EXPECT_EQ(exits[1].outcome.reason, KREPLAY_DECLINE_REASON_NOTHING_SELECTED);
  EXPECT_EQ(exits[1].outcome.passes_executed, 1u);
  EXPECT_EQ(x[0], expect(0.5f, 2));
  EXPECT_EQ(y[0], 1.0f + expect(0.5f, 1));
}

TEST_F(Range, LocalContextControlPerRangePass) {
  S().on_pass_enter = [](const kreplay_callback_tracing_range_replay_data_t& p) {
    if (p.current_pass == 1) {
      EXPECT_EQ(p.replay_stop_context(S().trace_ctx), KREPLAY_STATUS_SUCCESS);
    }
  };
  float* x = buffer(128, 0.5f);
  update(x, 128);
  update(x, 128);
  ASSERT_TRUE(hr::device_synchronize().ok());
  std::set<uint64_t> passes;
  for (const auto& t : S().traces) passes.insert(t.pass);
  EXPECT_EQ(passes, (std::set<uint64_t>{0}));  // stopped at pass 1, sticky for pass 2
  int active = 0;
  kreplay_context_is_active(S().trace_ctx, &active);
  EXPECT_EQ(active, 1);
  S().on_pass_enter = nullptr;
  S().traces.clear();
  update(x, 128);
  ASSERT_TRUE(hr::device_synchronize().ok());
  EXPECT_EQ(S().traces.size(), 3u);  // the next range starts with no overrides
}

TEST_F(Range, DeclinedRangeRunsOnce) {
  hr::testing::fail_next_snapshot();
  float* x = buffer(128, 0.5f);
  update(x, 128);
  ASSERT_TRUE(hr::device_synchronize().ok());
  auto exits = S().exits();
  ASSERT_GE(exits.size(), 1u);
  EXPECT_EQ(exits[0].outcome.outcome, KREPLAY_REPLAY_OUTCOME_DECLINED);
  EXPECT_EQ(exits[0].outcome.reason, KREPLAY_DECLINE_REASON_SNAPSHOT_FAILED);
  EXPECT_EQ(x[0], expect(0.5f, 1));
  EXPECT_EQ(*g_counter, 1u);
}

// A range saves the whole inventory when it opens, and allocations close ranges, so its snapshot
// cannot grow while it is open: the snapshot-size limit is met when the range opens, and a range
// whose entry state is over the limit is declined and runs once.
TEST_F(Range, RangeOverTheSnapshotLimitIsDeclinedAndRunsOnce) {
  auto& engine = sdk::Runtime::get().engine();
  const replay::Options saved = engine.options();
  replay::Options small = saved;
  small.max_snapshot_bytes = 1024;
  engine.set_options(small);
  float* x = buffer(4096, 0.5f);  // 16 KiB: over the limit
  update(x, 4096);
  update(x, 4096);
  ASSERT_TRUE(hr::device_synchronize().ok());
  engine.set_options(saved);
  auto exits = S().exits();
  ASSERT_GE(exits.size(), 1u);
  EXPECT_EQ(exits[0].outcome.outcome, KREPLAY_REPLAY_OUTCOME_DECLINED);
  EXPECT_EQ(exits[0].outcome.reason, KREPLAY_DECLINE_REASON_SNAPSHOT_TOO_LARGE);
  EXPECT_EQ(x[0], expect(0.5f, 2));
  EXPECT_EQ(*g_counter, 2u);
  // Under the limit again, the next range is replayed.
  S().reset();
  update(x, 4096);
  ASSERT_TRUE(hr::device_synchronize().ok());
  exits = S().exits();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].outcome.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(x[0], expect(0.5f, 3));
}

TEST_F(Range, ALaunchFromAToolCallbackRunsOutsideTheRange) {
  float* x = buffer(128, 0.5f);
  float* inner = buffer(128, 0.5f);
  S().on_pass_enter = [&](const kreplay_callback_tracing_range_replay_data_t& p) {
    if (p.current_pass == 2) update(inner, 128);  // the last pass: nothing restores after it
  };
  update(x, 128);
  ASSERT_TRUE(hr::device_synchronize().ok());
  EXPECT_EQ(x[0], expect(0.5f, 1));
  EXPECT_EQ(inner[0], expect(0.5f, 1));
  EXPECT_EQ(S().exits().size(), 1u);
}

// ---- issue 13: ranges across synchronizations and streams ordered by events ----

// A stream, event and device synchronization let the host observe nothing: the range stays open
// across them and closes at the copy that reads the result back, which sees one execution.
TEST_F(Range, ARangeStaysOpenAcrossSynchronizationsUntilACopy) {
  span_syncs(true);
  float* x = buffer(1000, 0.5f);
  auto ev = *hr::event_create();
  update(x, 1000);
  ASSERT_TRUE(hr::stream_synchronize(stream_).ok());
  update(x, 1000);
  ASSERT_TRUE(hr::event_record(ev, stream_).ok());
  ASSERT_TRUE(hr::event_synchronize(ev).ok());
  update(x, 1000);
  ASSERT_TRUE(hr::device_synchronize().ok());
  EXPECT_TRUE(S().exits().empty()) << "a synchronization closed the range";
  EXPECT_EQ(read(x), expect(0.5f + 0.007f, 3));  // the copy closes the range first
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 1u);
  const auto& o = exits[0].outcome;
  EXPECT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(o.close_reason, KREPLAY_RANGE_CLOSE_MEMORY);
  EXPECT_STREQ(exits[0].close_call.c_str(), "hostrt::memcpy");
  EXPECT_EQ(o.launches, 3u);
  EXPECT_EQ(o.passes_executed, 3u);
  EXPECT_EQ(o.synchronizations_spanned, 3u);
  EXPECT_EQ(o.streams, 1u);
  EXPECT_EQ(*g_counter, 3u);
  EXPECT_TRUE(hr::event_destroy(ev).ok());
}

// The host may read managed memory after a synchronization with no call kreplay sees: a range
// whose launch points into it, or any range while the device holds managed memory, closes there.
TEST_F(Range, ManagedMemoryMakesASynchronizationCloseTheRange) {
  span_syncs(true);
  float* x = buffer(256, 0.5f);
  auto* m = static_cast<float*>(*hr::malloc_managed(256 * sizeof(float)));
  for (int i = 0; i < 256; ++i) m[i] = 0.25f;
  update(x, 256);  // not into managed memory, but the device holds some
  ASSERT_TRUE(hr::stream_synchronize(stream_).ok());
  update(m, 256);
  ASSERT_TRUE(hr::stream_synchronize(stream_).ok());
  EXPECT_EQ(m[0], expect(0.25f, 1));  // read by the host with no call: one execution
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 2u);
  for (const auto& e : exits) {
    EXPECT_EQ(e.outcome.close_reason, KREPLAY_RANGE_CLOSE_SYNCHRONIZE);
    EXPECT_EQ(e.outcome.synchronizations_spanned, 0u);
    EXPECT_EQ(e.outcome.passes_executed, 3u);
  }
  EXPECT_TRUE(hr::free(m).ok());
  // Without managed memory on the device, the same synchronization leaves the range open.
  S().reset();
  update(x, 256);
  ASSERT_TRUE(hr::stream_synchronize(stream_).ok());
  EXPECT_TRUE(S().exits().empty());
  EXPECT_EQ(read(x, 3), expect(0.5f + 0.003f, 2));
}

// The range's snapshot holds the device's mapped host memory, which the host may write after a
// synchronization with no call kreplay sees (cuda-samples inlinePTX): while the device has any, a
// synchronization closes the range, so that its restores cannot undo those writes.
TEST_F(Range, MappedHostMemoryMakesASynchronizationCloseTheRange) {
  span_syncs(true);
  float* x = buffer(256, 0.5f);
  auto* h = static_cast<float*>(*hr::malloc_host_mapped(256 * sizeof(float)));
  for (int i = 0; i < 256; ++i) h[i] = 0.0f;
  update(x, 256);  // does not touch h
  ASSERT_TRUE(hr::device_synchronize().ok());
  for (int i = 0; i < 256; ++i) h[i] = 7.0f;  // the host fills its own buffer
  EXPECT_EQ(read(x), expect(0.5f + 0.007f, 1));
  EXPECT_EQ(h[0], 7.0f);
  EXPECT_EQ(h[255], 7.0f);
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].outcome.close_reason, KREPLAY_RANGE_CLOSE_SYNCHRONIZE);
  EXPECT_EQ(exits[0].outcome.synchronizations_spanned, 0u);
  EXPECT_EQ(exits[0].outcome.passes_executed, 3u);
  EXPECT_TRUE(hr::free(h).ok());
}

// The host may also write mapped host memory while a range is open, with no call in between
// (filling the next staging buffer while a kernel runs): the range's restores must not undo it.
TEST_F(Range, HostWritesToMappedMemoryWhileARangeIsOpenAreKept) {
  float* x = buffer(256, 0.5f);
  auto* h = static_cast<float*>(*hr::malloc_host_mapped(4096 * sizeof(float)));
  for (int i = 0; i < 4096; ++i) h[i] = 0.0f;
  update(x, 256);                                 // opens a range; does not touch h
  for (int i = 0; i < 4096; i += 2) h[i] = 7.0f;  // no call: the range stays open
  EXPECT_EQ(read(x), expect(0.5f + 0.007f, 1));   // the copy closes it: 3 passes
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].outcome.close_reason, KREPLAY_RANGE_CLOSE_MEMORY);
  EXPECT_EQ(exits[0].outcome.passes_executed, 3u);
  for (int i = 0; i < 4096; ++i) ASSERT_EQ(h[i], i % 2 ? 0.0f : 7.0f) << i;
  EXPECT_EQ(*g_counter, 1u);
  EXPECT_TRUE(hr::free(h).ok());
}

// RangeOptions::span_syncs off (KREPLAY_RANGE_SYNC=close): every synchronization closes.
TEST_F(Range, WithSpanningOffEverySynchronizationCloses) {
  float* x = buffer(256, 0.5f);
  update(x, 256);
  ASSERT_TRUE(hr::stream_synchronize(stream_).ok());
  update(x, 256);
  ASSERT_TRUE(hr::device_synchronize().ok());
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 2u);
  EXPECT_EQ(exits[1].outcome.close_reason, KREPLAY_RANGE_CLOSE_SYNCHRONIZE);
  EXPECT_EQ(read(x, 3), expect(0.5f + 0.003f, 2));
}

// A launch on another stream joins the range when that stream waited for an event recorded after
// the range's last launch: the launches run one after another, and every later pass resubmits
// them in that order (accumulate reads what update wrote on the other stream).
TEST_F(Range, ALaunchOnAStreamOrderedByAnEventJoinsTheRange) {
  span_syncs(true);
  constexpr uint32_t n = 4096;
  float* x = buffer(n, 0.5f);
  float* y = buffer(n, 1.0f);
  auto b = *hr::stream_create();
  auto to_b = *hr::event_create(), to_a = *hr::event_create();
  update(x, n);
  ASSERT_TRUE(hr::event_record(to_b, stream_).ok());
  ASSERT_TRUE(hr::stream_wait_event(b, to_b).ok());
  ASSERT_TRUE(hr::launch_args(fx().accumulate, {n / 64}, {64}, b, y, x, n).ok());
  ASSERT_TRUE(hr::event_record(to_a, b).ok());
  ASSERT_TRUE(hr::stream_wait_event(stream_, to_a).ok());
  update(x, n);  // back on the first stream, behind accumulate
  EXPECT_EQ(read(y, 5), 1.005f + expect(0.505f, 1));
  EXPECT_EQ(read(x, 5), expect(0.505f, 2));
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].outcome.launches, 3u);
  EXPECT_EQ(exits[0].outcome.streams, 3u);  // a, b, a
  EXPECT_EQ(exits[0].outcome.passes_executed, 3u);
  EXPECT_EQ(exits[0].outcome.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  for (auto e : {to_b, to_a}) EXPECT_TRUE(hr::event_destroy(e).ok());
  EXPECT_TRUE(hr::stream_destroy(b).ok());
}

// Not ordered: no wait, or a wait for an event recorded before the range's last launch. The
// launch on the other stream closes the range (OTHER_STREAM).
TEST_F(Range, ALaunchOnAStreamNotOrderedAfterTheRangeClosesIt) {
  span_syncs(true);
  float* x = buffer(256, 0.5f);
  float* y = buffer(256, 0.5f);
  auto b = *hr::stream_create();
  auto ev = *hr::event_create();
  update(x, 256);
  update(y, 256, b);  // no event at all
  update(x, 256);
  ASSERT_TRUE(hr::event_record(ev, stream_).ok());
  update(x, 256);  // the event now precedes the range's last launch
  ASSERT_TRUE(hr::stream_wait_event(b, ev).ok());
  update(y, 256, b);
  EXPECT_EQ(read(x, 3), expect(0.5f + 0.003f, 3));
  EXPECT_EQ(read(y, 3), expect(0.5f + 0.003f, 2));
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 4u);
  EXPECT_EQ(exits[0].outcome.close_reason, KREPLAY_RANGE_CLOSE_OTHER_STREAM);
  EXPECT_EQ(exits[1].outcome.close_reason, KREPLAY_RANGE_CLOSE_OTHER_STREAM);
  EXPECT_EQ(exits[2].outcome.close_reason, KREPLAY_RANGE_CLOSE_OTHER_STREAM);
  EXPECT_EQ(exits[2].outcome.launches, 2u);
  for (const auto& e : exits) EXPECT_EQ(e.outcome.streams, 1u);
  EXPECT_TRUE(hr::event_destroy(ev).ok());
  EXPECT_TRUE(hr::stream_destroy(b).ok());
}

// A process ending on a signal (the kreplay tool's handler): kreplay_range_replay_close_open
// closes the open range, every pass run, from a thread outside any device call; from inside an
// application device call or a tool callback it refuses and closes nothing.
TEST_F(Range, AnOpenRangeIsClosedOnRequestBeforeTheProcessEnds) {
  span_syncs(true);
  float* x = buffer(1000, 0.5f);
  update(x, 1000);
  update(x, 1000);
  ASSERT_TRUE(hr::device_synchronize().ok());
  EXPECT_TRUE(S().exits().empty());
  uint64_t launches = 99;
  replay::Engine::app_call_enter();  // as the CUDA interception marks a driver call
  EXPECT_EQ(kreplay_range_replay_close_open(50, &launches), KREPLAY_STATUS_ERROR_NOT_AVAILABLE);
  replay::Engine::app_call_exit();
  EXPECT_EQ(launches, 2u);
  EXPECT_TRUE(S().exits().empty()) << "closed from inside a device call";
  EXPECT_EQ(kreplay_range_replay_close_open(50, &launches), KREPLAY_STATUS_SUCCESS);
  EXPECT_EQ(launches, 2u);
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].outcome.close_reason, KREPLAY_RANGE_CLOSE_SIGNAL);
  EXPECT_EQ(exits[0].outcome.launches, 2u);
  EXPECT_EQ(exits[0].outcome.passes_executed, 3u);
  EXPECT_STREQ(kreplay_get_range_close_reason_name(KREPLAY_RANGE_CLOSE_SIGNAL), "signal");
  EXPECT_EQ(read(x), expect(0.5f + 0.007f, 2));  // one execution, as without kreplay
  EXPECT_EQ(kreplay_range_replay_close_open(50, &launches), KREPLAY_STATUS_SUCCESS);
  EXPECT_EQ(launches, 0u) << "no range was open";

  // From a tool callback (inside the range machinery): refused.
  kreplay_status_t inside = KREPLAY_STATUS_SUCCESS;
  S().on_pass_enter = [&](const kreplay_callback_tracing_range_replay_data_t&) {
    if (inside == KREPLAY_STATUS_SUCCESS) inside = kreplay_range_replay_close_open(50, nullptr);
  };
  update(x, 1000);
  EXPECT_EQ(read(x), expect(0.5f + 0.007f, 3));
  S().on_pass_enter = nullptr;
  EXPECT_EQ(inside, KREPLAY_STATUS_ERROR_NOT_AVAILABLE);
}

}  // namespace
}  // namespace kreplay::test
