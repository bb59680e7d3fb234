// The device-side heap (device malloc/free, new/delete) on the host device, kernel replay: a
// launch of a module that uses the heap is replayed with the heap, its allocator's state
// included, put back before every later pass, so each pass allocates and frees exactly what the
// application's own run did and the program ends as one execution leaves it. A device that
// cannot save its heap declines such launches DEVICE_HEAP.
#include <gtest/gtest.h>

#include <span>
#include <vector>

#include "backends/host/device_heap.hpp"
#include "backends/host/host_device.hpp"
#include "harness.hpp"
#include "replay/engine.hpp"
#include "sdk/runtime.hpp"

namespace kreplay::test {
namespace {

// heap_make(table, n): table[i] = new float(i + 0.5).
void k_heap_make(hostrt::ThreadContext& ctx) {
  auto** table = ctx.arg<float**>(0);
  const auto n = ctx.arg<uint32_t>(1);
  const uint64_t i = ctx.global_thread_id();
  if (i >= n) return;
  auto* p = static_cast<float*>(ctx.heap_malloc(sizeof(float)));
  if (p == nullptr) return ctx.trap();
  ctx.store(p, static_cast<float>(i) + 0.5f);
  ctx.store(&table[i], p);
}

// heap_renew(table, out, n): out[i] = 2 out[i] + *table[i]; delete table[i];
// table[i] = new float(out[i]). A pass that finds the heap as an earlier pass left it reads
// another object (the allocator hands the freed block out again) or frees one twice.
void k_heap_renew(hostrt::ThreadContext& ctx) {
  auto** table = ctx.arg<float**>(0);
  auto* out = ctx.arg<float*>(1);
  const auto n = ctx.arg<uint32_t>(2);
  const uint64_t i = ctx.global_thread_id();
  if (i >= n) return;
  float* p = ctx.load(&table[i]);
  const float o = 2.0f * ctx.load(&out[i]) + ctx.load(p);
  ctx.store(&out[i], o);
  ctx.heap_free(p);
  auto* q = static_cast<float*>(ctx.heap_malloc(sizeof(float)));
  if (q == nullptr) return ctx.trap();
  ctx.store(q, o);
  ctx.store(&table[i], q);
}

// heap_read(table, res, n): res[i] = *table[i].
void k_heap_read(hostrt::ThreadContext& ctx) {
  auto** table = ctx.arg<float**>(0);
  auto* res = ctx.arg<float*>(1);
  const auto n = ctx.arg<uint32_t>(2);
  const uint64_t i = ctx.global_thread_id();
  if (i >= n) return;
  ctx.store(&res[i], ctx.load(ctx.load(&table[i])));
}

struct HeapKernels {
  hostrt::Kernel make = 0, renew = 0, read = 0;
};

const HeapKernels& kernels() {
  static const HeapKernels k = [] {
    hostrt::ModuleDesc d;
    d.name = "heap_objects";
    d.kernels = {{"_Z9heap_makePPfj", k_heap_make, {8, 4}},
                 {"_Z10heap_renewPPfS_j", k_heap_renew, {8, 8, 4}},
                 {"_Z9heap_readPPfS_j", k_heap_read, {8, 8, 4}}};
    d.uses_device_heap = true;
    auto mod = hostrt::load_module(d);
    EXPECT_TRUE(mod.ok());
    HeapKernels r;
    r.make = *hostrt::get_kernel(*mod, "_Z9heap_makePPfj");
    r.renew = *hostrt::get_kernel(*mod, "_Z10heap_renewPPfS_j");
    r.read = *hostrt::get_kernel(*mod, "_Z9heap_readPPfS_j");
    return r;
  }();
  return k;
}

constexpr uint32_t kN = 96;
constexpr int kRenewals = 3;

class DeviceHeap : public HostDeviceTest {
 protected:
  void SetUp() override {
    HostDeviceTest::SetUp();
    kernels();
    hostrt::testing::set_heap_restorable(true);
    hostrt::testing::skip_heap_restore(false);
    hostrt::testing::set_heap_set_up(false);  // a new context's heap: the first launch sets it up
  }
  void TearDown() override {
    hostrt::testing::set_heap_restorable(true);
    hostrt::testing::skip_heap_restore(false);
    HostDeviceTest::TearDown();
  }

  // make, kRenewals renewals, read; each launch's outcome kept. The objects stay allocated (each
  // test counts the heap's live allocations before and after).
  struct Run {
    std::vector<float> out, res;
    std::vector<kreplay_replay_outcome_record_t> outcomes;
    bool failed = false;
  };
  Run run() {
    Run r;
    auto** table = reinterpret_cast<float**>(buffer(kN * 2));  // kN pointers
    float* out = buffer(kN);
    float* res = buffer(kN);
    auto s = hostrt::default_stream();
    auto step = [&](hostrt::Kernel k, auto... args) {
      EXPECT_TRUE(hostrt::launch_args(k, {(kN + 31) / 32}, {32}, s, args...).ok());
      r.failed = r.failed || !hostrt::device_synchronize().ok();
      if (const Event* e = tool().config_exit(tool().last_dispatch_id())) {
        r.outcomes.push_back(e->outcome);
      }
    };
    step(kernels().make, table, kN);
    for (int k = 0; k < kRenewals; ++k) step(kernels().renew, table, out, kN);
    step(kernels().read, table, res, kN);
    r.out.assign(out, out + kN);
    r.res.assign(res, res + kN);
    return r;
  }
  // What one execution of run() leaves: out and res (equal) per element.
  static std::vector<float> expected() {
    std::vector<float> e(kN);
    for (uint32_t i = 0; i < kN; ++i) {
      float heap = static_cast<float>(i) + 0.5f, out = 0.25f;
      for (int k = 0; k < kRenewals; ++k) heap = out = 2.0f * out + heap;
      e[i] = out;
    }
    return e;
  }
};

TEST_F(DeviceHeap, LaunchesThatAllocateAndFreeAreReplayedWithTheHeapPutBack) {
  const size_t live_before = hostrt::testing::heap_live_allocations();
  Run r = run();
  ASSERT_FALSE(r.failed);
  ASSERT_EQ(r.outcomes.size(), 2u + kRenewals);
  // The first heap launch sets the heap up (CUDA: a context's heap exists from its first launch
  // that uses it, so a checkpoint saved before that launch cannot hold it): it runs once.
  EXPECT_EQ(r.outcomes[0].outcome, KREPLAY_REPLAY_OUTCOME_DECLINED);
  EXPECT_EQ(r.outcomes[0].reason, KREPLAY_DECLINE_REASON_DEVICE_HEAP);
  EXPECT_EQ(r.outcomes[0].passes_executed, 1u);
  for (const auto& o : std::span(r.outcomes).subspan(1)) {
    EXPECT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED)
        << kreplay_get_decline_reason_name(o.reason);
    EXPECT_EQ(o.passes_executed, 3u);
    // The heap's bytes are part of what the window saved and put back.
    EXPECT_GE(o.bytes_snapshotted, hostrt::DeviceHeap::kBlockBytes);
    EXPECT_GT(o.bytes_restored, 0u);
    EXPECT_EQ(o.snapshot_mode, KREPLAY_SNAPSHOT_MODE_FULL);
  }
  EXPECT_EQ(r.out, expected());
  EXPECT_EQ(r.res, expected());
  // As one execution: one object per element, however many passes each launch ran.
  EXPECT_EQ(hostrt::testing::heap_live_allocations(), live_before + kN);
}

// Once a launch set the heap up, the first launch of the next run is replayed too.
TEST_F(DeviceHeap, AfterTheHeapIsSetUpEveryHeapLaunchIsReplayed) {
  Run first = run();
  ASSERT_FALSE(first.failed);
  Run r = run();
  ASSERT_FALSE(r.failed);
  ASSERT_EQ(r.outcomes.size(), 2u + kRenewals);
  for (const auto& o : r.outcomes) EXPECT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(r.out, expected());
  EXPECT_EQ(r.res, expected());
}

// The check that the restore matters: with the heap's bytes not put back (the window's snapshot
// still restores the table and out), each pass allocates again and the later passes read objects
// an earlier pass wrote, so the program does not end as one execution would.
TEST_F(DeviceHeap, WithoutPuttingTheHeapBackTheReplayWouldBeWrong) {
  hostrt::testing::skip_heap_restore(true);
  const size_t live_before = hostrt::testing::heap_live_allocations();
  Run r = run();
  const bool as_one_execution = !r.failed && r.out == expected() && r.res == expected() &&
                                hostrt::testing::heap_live_allocations() == live_before + kN;
  EXPECT_FALSE(as_one_execution);
}

// A device that cannot save its heap declines its launches with their own reason; they run once
// and the program still ends as one execution leaves it.
TEST_F(DeviceHeap, ADeviceThatCannotSaveItsHeapDeclinesDeviceHeap) {
  hostrt::testing::set_heap_restorable(false);
  const size_t live_before = hostrt::testing::heap_live_allocations();
  Run r = run();
  ASSERT_FALSE(r.failed);
  ASSERT_EQ(r.outcomes.size(), 2u + kRenewals);
  for (const auto& o : r.outcomes) {
    EXPECT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_DECLINED);
    EXPECT_EQ(o.reason, KREPLAY_DECLINE_REASON_DEVICE_HEAP);
  }
  EXPECT_EQ(r.out, expected());
  EXPECT_EQ(r.res, expected());
  EXPECT_EQ(hostrt::testing::heap_live_allocations(), live_before + kN);
}

}  // namespace
}  // namespace kreplay::test
