// Write-bounded snapshots (DESIGN.md §3) on the host device, kernel replay: a launch whose device
// holds more memory than a snapshot could copy saves only what it is predicted to write; the
// prediction is learned from earlier launches and proven by digests of all tracked memory; a
// launch whose writes were not known runs once (WRITE_SET_UNKNOWN) and teaches the next.
//
// The host runtime has 64 MiB of device memory: a 40 MiB arena leaves too little for its full
// snapshot on the device tier, and the tests forbid the pinned-host spill (auto_host_bytes 0),
// as a GPU whose memory a framework reserved has no room for a copy of it either.
#include <gtest/gtest.h>

#include "backends/host/host_device.hpp"
#include "harness.hpp"
#include "replay/engine.hpp"
#include "sdk/runtime.hpp"

namespace kreplay::test {
namespace {

constexpr uint64_t kChunk = 64 * 1024;
constexpr uint32_t kArenaFloats = 10u << 20;  // 40 MiB
constexpr uint32_t kFloatsPerChunk = kChunk / sizeof(float);

class WriteSets : public HostDeviceTest {
 protected:
  void SetUp() override {
    HostDeviceTest::SetUp();
    engine().release_storage(hostrt::testing::agent_of());
    engine().forget_write_sets_for_test(hostrt::testing::agent_of());
    set_options([](replay::Options& o) {
      o.auto_host_bytes = 0;
      o.chunk_bytes = kChunk;
    });
    arena_ = buffer(kArenaFloats);  // each element 0.25
    *module().launch_counter = 0;
  }
  void TearDown() override {
    engine().release_storage(hostrt::testing::agent_of());
    HostDeviceTest::TearDown();
  }
  static replay::Engine& engine() { return sdk::Runtime::get().engine(); }
  // touch(x, k): x[k] += 1, one launch; returns its outcome.
  kreplay_replay_outcome_record_t touch(float* x, uint32_t k) {
    EXPECT_TRUE(hostrt::launch_args(module().touch, {1}, {1}, hostrt::default_stream(), x, k).ok());
    EXPECT_TRUE(hostrt::device_synchronize().ok());
    const Event* e = tool().config_exit(tool().last_dispatch_id());
    EXPECT_NE(e, nullptr);
    return e ? e->outcome : kreplay_replay_outcome_record_t{};
  }
  uint64_t baselines_taken() {
    auto* dev = dynamic_cast<hostrt::HostDevice*>(
        engine().slot(hostrt::testing::agent_of())->device);
    return dev ? dev->baseline_digests_taken() : 0;
  }

  float* arena_ = nullptr;
};

TEST_F(WriteSets, AFirstLaunchRunsOnceAndTeachesTheNextWhichSavesOnlyWhatItWrites) {
  const uint32_t k = 5 * kFloatsPerChunk + 7;
  auto first = touch(arena_, k);
  EXPECT_EQ(first.outcome, KREPLAY_REPLAY_OUTCOME_DECLINED);
  EXPECT_EQ(first.reason, KREPLAY_DECLINE_REASON_WRITE_SET_UNKNOWN);
  EXPECT_STREQ(kreplay_get_decline_reason_name(first.reason), "write_set_unknown");
  EXPECT_EQ(first.passes_executed, 1u);
  EXPECT_EQ(arena_[k], 1.25f);  // ran once

  auto second = touch(arena_, k);
  EXPECT_EQ(second.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(second.passes_executed, 3u);
  EXPECT_EQ(second.snapshot_mode, KREPLAY_SNAPSHOT_MODE_WRITE_SET);
  // What it wrote (one chunk) and the chunk after it: not the 40 MiB arena.
  EXPECT_EQ(second.bytes_snapshotted, 2 * kChunk);
  EXPECT_EQ(second.bytes_changed, kChunk);
  EXPECT_EQ(second.bytes_restored, 2 * kChunk);  // the changed chunk, before passes 1 and 2
  EXPECT_EQ(arena_[k], 2.25f);                   // the application saw one more execution
  EXPECT_EQ(arena_[k + 1], 0.25f);
}

TEST_F(WriteSets, AWriteOutsideThePredictionIsCaughtDeclinedAndLearned) {
  const uint32_t k = 3 * kFloatsPerChunk;
  touch(arena_, k);  // learns chunk 3
  ASSERT_EQ(touch(arena_, k).outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  // Another element, far away: predicted from the kernel's latest launch (chunk 3 and 4), wrong.
  const uint32_t far = 400 * kFloatsPerChunk + 1;
  auto miss = touch(arena_, far);
  EXPECT_EQ(miss.outcome, KREPLAY_REPLAY_OUTCOME_DECLINED);
  EXPECT_EQ(miss.reason, KREPLAY_DECLINE_REASON_WRITE_SET_UNKNOWN);
  EXPECT_EQ(miss.passes_executed, 1u);
  EXPECT_EQ(miss.bytes_changed, kChunk);
  EXPECT_EQ(arena_[far], 1.25f);  // its own run only: never a second increment
  // The same launch again is predicted from what it wrote and replayed.
  auto again = touch(arena_, far);
  EXPECT_EQ(again.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(arena_[far], 2.25f);
  EXPECT_EQ(arena_[k], 2.25f);
}

// Without the digests after the application's pass the same miss is a wrong result: the passes
// after the first increment an element nothing saved, and the application sees three executions.
TEST_F(WriteSets, WithoutTheCheckAMissedPredictionWouldCorruptTheResult) {
  const uint32_t k = 3 * kFloatsPerChunk;
  touch(arena_, k);
  touch(arena_, k);
  const uint32_t far = 400 * kFloatsPerChunk + 1;
  set_options([](replay::Options& o) { o.check_write_sets = false; });
  auto trusted = touch(arena_, far);
  EXPECT_EQ(trusted.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(arena_[far], 3.25f);  // wrong: three executions
  set_options([](replay::Options& o) { o.check_write_sets = true; });
  const uint32_t farther = 500 * kFloatsPerChunk + 1;
  auto checked = touch(arena_, farther);
  EXPECT_EQ(checked.reason, KREPLAY_DECLINE_REASON_WRITE_SET_UNKNOWN);
  EXPECT_EQ(arena_[farther], 1.25f);  // right: one
}

// A launch with nothing learned saves the chunk each pointer argument points into and the one
// after it: an output passed by pointer starts there, so a first launch that writes there is
// replayed (its element incremented once), and one that writes farther runs once.
TEST_F(WriteSets, AFirstLaunchWritingAtItsPointerIsReplayedFromThePointerGuess) {
  float* x = arena_ + 9 * kFloatsPerChunk;
  auto first = touch(x, kFloatsPerChunk + 3);  // the chunk after the pointer's
  EXPECT_EQ(first.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(first.passes_executed, 3u);
  EXPECT_EQ(first.snapshot_mode, KREPLAY_SNAPSHOT_MODE_WRITE_SET);
  EXPECT_EQ(first.bytes_snapshotted, 2 * kChunk);
  EXPECT_EQ(first.bytes_changed, kChunk);
  EXPECT_EQ(x[kFloatsPerChunk + 3], 1.25f);
  engine().forget_write_sets_for_test(hostrt::testing::agent_of());
  auto far = touch(x, 2 * kFloatsPerChunk);  // two chunks on: outside the guess
  EXPECT_EQ(far.reason, KREPLAY_DECLINE_REASON_WRITE_SET_UNKNOWN);
  EXPECT_EQ(x[2 * kFloatsPerChunk], 1.25f);
}

TEST_F(WriteSets, ALaunchWithOtherBuffersIsPredictedThroughItsPointers) {
  // update(x, n) writes x[0..n) and the module's launch counter. Learned on one part of the
  // arena, it is predicted for another part from its pointer argument.
  const uint32_t n = 3 * kFloatsPerChunk;
  ASSERT_TRUE(launch_update(arena_, n).ok());
  ASSERT_TRUE(hostrt::device_synchronize().ok());
  EXPECT_EQ(tool().config_exit(tool().last_dispatch_id())->outcome.reason,
            KREPLAY_DECLINE_REASON_WRITE_SET_UNKNOWN);
  float* other = arena_ + 100 * kFloatsPerChunk;
  ASSERT_TRUE(launch_update(other, n).ok());
  ASSERT_TRUE(hostrt::device_synchronize().ok());
  const auto o = tool().config_exit(tool().last_dispatch_id())->outcome;
  EXPECT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(o.snapshot_mode, KREPLAY_SNAPSHOT_MODE_WRITE_SET);
  EXPECT_EQ(other[0], updated(0.25f, 1));
  EXPECT_EQ(other[n - 1], updated(0.25f, 1));
  EXPECT_EQ(arena_[0], updated(0.25f, 1));
  EXPECT_EQ(*module().launch_counter, 2u);  // a module global: saved absolutely, restored
}

TEST_F(WriteSets, ConsecutiveWindowsReuseTheDigestBaselineUntilMemoryChanges) {
  const uint32_t k = 9 * kFloatsPerChunk;
  touch(arena_, k);
  touch(arena_, k);
  const uint64_t before = baselines_taken();
  touch(arena_, k);
  touch(arena_, k);
  EXPECT_EQ(baselines_taken(), before);  // nothing changed memory between the windows
  // A copy by the application: the next window digests memory again.
  float one = 1.0f;
  ASSERT_TRUE(hostrt::memcpy(arena_ + 77 * kFloatsPerChunk, &one, sizeof(one)).ok());
  EXPECT_EQ(touch(arena_, k).outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(baselines_taken(), before + 1);
  EXPECT_EQ(arena_[k], 5.25f);
  EXPECT_EQ(arena_[77 * kFloatsPerChunk], 1.0f);
}

TEST_F(WriteSets, FullModeSavesEverythingSpillingToHostMemoryOrDeclines) {
  set_options([](replay::Options& o) { o.snapshot_mode = KREPLAY_SNAPSHOT_MODE_FULL; });
  const uint32_t k = kFloatsPerChunk;
  auto o = touch(arena_, k);
  EXPECT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(o.snapshot_mode, KREPLAY_SNAPSHOT_MODE_FULL);
  EXPECT_GE(o.bytes_snapshotted, 40u << 20);
  EXPECT_GT(o.host_storage_bytes, 0u);  // what the device tier could not hold
  EXPECT_EQ(o.bytes_changed, kChunk);
  // Where even that does not fit it declines, as before: it never learns instead.
  set_options([](replay::Options& opt) { opt.max_snapshot_bytes = 1u << 20; });
  o = touch(arena_, k);
  EXPECT_EQ(o.reason, KREPLAY_DECLINE_REASON_SNAPSHOT_TOO_LARGE);
  o = touch(arena_, k);
  EXPECT_EQ(o.reason, KREPLAY_DECLINE_REASON_SNAPSHOT_TOO_LARGE);
  EXPECT_EQ(arena_[k], 3.25f);
}

TEST_F(WriteSets, ASmallFootprintTakesTheFullSnapshotAndStillMeasuresWhatChanged) {
  // Free the arena: what is left fits the device tier, and auto saves all of it.
  ASSERT_TRUE(hostrt::free(arena_).ok());
  buffers_.erase(std::find(buffers_.begin(), buffers_.end(), arena_));
  float* x = buffer(4 * kFloatsPerChunk);
  auto o = touch(x, kFloatsPerChunk + 3);
  EXPECT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(o.snapshot_mode, KREPLAY_SNAPSHOT_MODE_FULL);
  EXPECT_GE(o.bytes_snapshotted, 4 * kChunk);
  EXPECT_EQ(o.bytes_changed, kChunk);
  EXPECT_EQ(x[kFloatsPerChunk + 3], 1.25f);
  // write-set mode on the same program: learned from the full window, saved as a write set.
  set_options([](replay::Options& opt) { opt.snapshot_mode = KREPLAY_SNAPSHOT_MODE_WRITE_SET; });
  o = touch(x, kFloatsPerChunk + 3);
  EXPECT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(o.snapshot_mode, KREPLAY_SNAPSHOT_MODE_WRITE_SET);
  EXPECT_EQ(o.bytes_snapshotted, 2 * kChunk);
  EXPECT_EQ(x[kFloatsPerChunk + 3], 2.25f);
}

TEST_F(WriteSets, StorageIsReportedAndGivenBackWhenTheApplicationNeedsTheMemory) {
  // A full snapshot of 20 MiB on the device tier, then an allocation that fits only without it.
  ASSERT_TRUE(hostrt::free(arena_).ok());
  buffers_.erase(std::find(buffers_.begin(), buffers_.end(), arena_));
  float* x = buffer(5u << 20);  // 20 MiB
  EXPECT_EQ(touch(x, 1).snapshot_mode, KREPLAY_SNAPSHOT_MODE_FULL);
  kreplay_replay_storage_t st{};
  st.size = sizeof(st);
  ASSERT_EQ(kreplay_query_replay_storage({hostrt::testing::agent_of()}, &st), KREPLAY_STATUS_SUCCESS);
  EXPECT_GE(st.device_bytes, 20u << 20);
  EXPECT_GE(st.device_bytes_peak, st.device_bytes);
  const uint64_t releases = st.releases;
  // 64 MiB device: 20 MiB buffer + >= 20 MiB storage; 30 MiB more fits only once kreplay let go.
  auto big = hostrt::malloc(30u << 20);
  ASSERT_TRUE(big.ok()) << big.status().message();
  ASSERT_EQ(kreplay_query_replay_storage({hostrt::testing::agent_of()}, &st), KREPLAY_STATUS_SUCCESS);
  EXPECT_EQ(st.device_bytes, 0u);
  EXPECT_EQ(st.releases, releases + 1);
  EXPECT_TRUE(hostrt::free(*big).ok());
  kreplay_replay_storage_t small{};
  small.size = 8;
  EXPECT_EQ(kreplay_query_replay_storage({hostrt::testing::agent_of()}, &small),
            KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace kreplay::test

namespace kreplay::test {
namespace {

// A graph launch profiled node by node: the graph's entry state is saved as a write set too
// (learned from its first launch, which runs once), and each node's window as well.
TEST_F(WriteSets, AGraphAndItsNodesLearnThenReplayWithWriteSets) {
  auto g = hostrt::graph_create();
  ASSERT_TRUE(g.ok());
  float* x = arena_ + 20 * kFloatsPerChunk;
  uint32_t n = 3 * kFloatsPerChunk;  // past the two chunks a pointer guesses (pointer_chunks)
  void* params[] = {&x, &n};
  ASSERT_TRUE(hostrt::graph_add_kernel(*g, module().update, {n / 64}, {64}, params).ok());
  std::vector<kreplay_replay_outcome_record_t> outcomes;
  for (int launch = 1; launch <= 3; ++launch) {
    ASSERT_TRUE(hostrt::graph_launch(*g, hostrt::default_stream()).ok());
    ASSERT_TRUE(hostrt::device_synchronize().ok());
    outcomes.push_back(tool().config_exit(tool().last_dispatch_id())->outcome);
    EXPECT_EQ(x[0], updated(0.25f, launch)) << "launch " << launch;
    EXPECT_EQ(x[n - 1], updated(0.25f, launch)) << "launch " << launch;
    EXPECT_EQ(*module().launch_counter, static_cast<uint32_t>(launch)) << "launch " << launch;
  }
  // 1: the graph runs once (its write set learned); 2: its entry is saved as a write set and its
  // node, new to kreplay, runs once; 3: the node is replayed too.
  EXPECT_EQ(outcomes[0].reason, KREPLAY_DECLINE_REASON_WRITE_SET_UNKNOWN);
  EXPECT_EQ(outcomes[0].passes_requested, 3u);  // the tool was asked, as for any dispatch
  EXPECT_EQ(outcomes[1].reason, KREPLAY_DECLINE_REASON_WRITE_SET_UNKNOWN);
  EXPECT_EQ(outcomes[2].outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(outcomes[2].snapshot_mode, KREPLAY_SNAPSHOT_MODE_WRITE_SET);
  EXPECT_EQ(*module().launch_counter, 3u);
}

}  // namespace
}  // namespace kreplay::test

namespace kreplay::test {
namespace {

// Memory that held zeros before a launch (a fresh allocation, the untouched part of a pool) needs
// no copy: a first launch that writes only there (beyond what its pointer guesses) is replayed
// with nothing of it saved, its chunks zeroed again between passes.
TEST_F(WriteSets, AFirstLaunchIntoZeroedMemoryIsReplayedWithoutSavingIt) {
  float* fresh = arena_ + 600 * kFloatsPerChunk;
  ASSERT_TRUE(hostrt::memset(fresh, 0, 5 * kChunk).ok());
  auto o = touch(fresh, 2 * kFloatsPerChunk + 5);
  EXPECT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(o.passes_executed, 3u);
  EXPECT_EQ(o.snapshot_mode, KREPLAY_SNAPSHOT_MODE_WRITE_SET);
  EXPECT_EQ(o.bytes_snapshotted, 2 * kChunk);  // the pointer's guess only, not the written chunk
  EXPECT_EQ(o.bytes_changed, kChunk);
  EXPECT_EQ(o.bytes_restored, 2 * kChunk);  // zeroed before passes 1 and 2
  EXPECT_EQ(fresh[2 * kFloatsPerChunk + 5], 1.0f);
  EXPECT_EQ(fresh[2 * kFloatsPerChunk + 6], 0.0f);
  // The next launch there finds a non-zero chunk: predicted and saved now.
  o = touch(fresh, 2 * kFloatsPerChunk + 5);
  EXPECT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(o.bytes_snapshotted, 2 * kChunk);
  EXPECT_EQ(fresh[2 * kFloatsPerChunk + 5], 2.0f);
  // A launch of the same kernel into the next zeroed chunk: predicted (the chunk after the one
  // it wrote), saved and replayed.
  o = touch(fresh, 3 * kFloatsPerChunk);
  EXPECT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(fresh[3 * kFloatsPerChunk], 1.0f);
}

}  // namespace
}  // namespace kreplay::test
