// Cache control in range replay (issue 12, item 2) pinned on the host device: with
// --cache-control all every launch of every pass of a replayed range starts right after a flush
// of the device's caches, made once the launch before it completed (so no flush while a launch
// runs, and every launch starts cold: hostrt::testing::cache_flushes().dirty_at_start), as in
// kernel replay; per-launch counter values still belong to their launches although each flush
// made inside a counter session takes a range of its own there (as CUDA's flush kernel does in
// CUPTI's auto range). With none, nothing is flushed.
#include <initializer_list>
#include <string>
#include <vector>

#include "range_harness.hpp"

namespace kreplay::test {
namespace {

class RangeCache : public Range {
 protected:
  void SetUp() override {
    Range::SetUp();
    saved_engine_ = sdk::Runtime::get().engine().options();
  }
  void TearDown() override {
    Range::TearDown();
    sdk::Runtime::get().engine().set_options(saved_engine_);
  }
  void set_flush(bool on) {
    replay::Options o = sdk::Runtime::get().engine().options();
    o.flush_caches = on;
    sdk::Runtime::get().engine().set_options(o);
  }
  // The last @p n entries of @p v.
  static std::vector<uint64_t> last(const std::vector<uint64_t>& v, size_t n) {
    EXPECT_GE(v.size(), n);
    if (v.size() < n) return v;
    return {v.end() - static_cast<std::ptrdiff_t>(n), v.end()};
  }
  // Counter values by (dispatch id, pass, name).
  static std::map<std::tuple<uint64_t, uint64_t, std::string>, double> values() {
    std::map<std::tuple<uint64_t, uint64_t, std::string>, double> v;
    for (const auto& c : S().counters) v[{c.dispatch_id, c.pass, c.name}] = c.value;
    return v;
  }
  void count(std::initializer_list<const char*> names) {
    std::vector<const char*> n(names);
    ASSERT_EQ(
        kreplay_create_counter_config({hr::testing::agent_of()}, n.data(), n.size(), &S().config),
        KREPLAY_STATUS_SUCCESS);
  }
  replay::Options saved_engine_;
};

TEST_F(RangeCache, AllFlushesBeforeEveryLaunchOfEveryPass) {
  set_flush(true);
  std::vector<uint64_t> at_enter;
  S().on_pass_enter = [&](const auto&) { at_enter.push_back(hr::testing::cache_flushes().total); };
  const auto before = hr::testing::cache_flushes();
  float* x = buffer(1000, 0.5f);
  for (int i = 0; i < 5; ++i) update(x, 1000);
  ASSERT_TRUE(hr::stream_synchronize(stream_).ok());  // closes the range
  const auto after = hr::testing::cache_flushes();
  ASSERT_EQ(S().exits().size(), 1u);
  EXPECT_EQ(S().exits()[0].outcome.launches, 5u);
  EXPECT_EQ(S().exits()[0].outcome.passes_executed, 3u);
  // One flush per launch and pass, each just before the launch's submission: every pass's first
  // after PASS ENTER and the pass's counter session began (a session's start dirties memory of
  // its own, on the host device as on CUDA), the others between the launches.
  EXPECT_EQ(after.total - before.total, 15u);
  EXPECT_EQ(at_enter, (std::vector<uint64_t>{before.total, before.total + 5, before.total + 10}));
  ASSERT_EQ(after.before_submission.size() - before.before_submission.size(), 15u);
  EXPECT_EQ(last(after.before_submission, 15), std::vector<uint64_t>(15, 1));
  // Each made once the launch before it had completed, so each launch started cold.
  EXPECT_EQ(after.inside_pass, before.inside_pass);
  ASSERT_EQ(after.dirty_at_start.size() - before.dirty_at_start.size(), 15u);
  EXPECT_EQ(last(after.dirty_at_start, 15), std::vector<uint64_t>(15, 0));
  EXPECT_EQ(x[7], expect(0.5f + 0.007f, 5));  // still exactly one execution's memory
  EXPECT_EQ(*g_counter, 5u);
}

TEST_F(RangeCache, NoneNeverFlushesARange) {
  set_flush(false);
  const auto before = hr::testing::cache_flushes();
  float* x = buffer(1000, 0.5f);
  for (int i = 0; i < 5; ++i) update(x, 1000);
  ASSERT_TRUE(hr::stream_synchronize(stream_).ok());
  const auto after = hr::testing::cache_flushes();
  ASSERT_EQ(S().exits().size(), 1u);
  EXPECT_EQ(S().exits()[0].outcome.passes_executed, 3u);
  EXPECT_EQ(after.total, before.total);
  EXPECT_EQ(last(after.before_submission, 15), std::vector<uint64_t>(15, 0));
  // Every launch but the very first starts with what the launches before it wrote (each update
  // writes 1000 floats and the counter).
  const auto dirty = last(after.dirty_at_start, 15);
  for (size_t i = 1; i < dirty.size(); ++i) EXPECT_GE(dirty[i], 4004u) << "launch " << i;
  EXPECT_EQ(x[7], expect(0.5f + 0.007f, 5));
}

// Pass 0 is the application's own, asynchronous submissions: the flush before a launch waits
// until the launch before it finished (here a latch kernel the test opens later), never flushing
// while it runs.
TEST_F(RangeCache, TheFlushBeforeALaunchWaitsForTheLaunchBefore) {
  set_flush(true);
  static uint32_t latch = 0;  // plain host memory: not tracked, so not restored by the passes
  std::atomic_ref<uint32_t>(latch).store(0);
  float* x = buffer(256, 0.5f);
  const auto before = hr::testing::cache_flushes();
  ASSERT_TRUE(hr::launch_args(fx().spin, {1}, {1}, stream_, &latch).ok());
  std::thread opener([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::atomic_ref<uint32_t>(latch).store(1);
  });
  update(x, 256);  // its flush waits for the latch kernel
  opener.join();
  ASSERT_TRUE(hr::stream_synchronize(stream_).ok());
  const auto after = hr::testing::cache_flushes();
  ASSERT_EQ(S().exits().size(), 1u);
  EXPECT_EQ(S().exits()[0].outcome.launches, 2u);
  EXPECT_EQ(S().exits()[0].outcome.passes_executed, 3u);
  EXPECT_EQ(after.total - before.total, 6u);
  EXPECT_EQ(after.inside_pass, before.inside_pass);
  EXPECT_EQ(last(after.before_submission, 6), std::vector<uint64_t>(6, 1));
  EXPECT_EQ(x[3], expect(0.5f + 0.003f, 1));
}

// The flushes made between the launches are inside the pass's counter session, where each is a
// range of its own (on the host device as on CUDA): the values of every launch and pass are still
// that launch's, with cache control on or off.
TEST_F(RangeCache, CountersPerLaunchLandOnTheirLaunches) {
  for (bool flush : {true, false}) {
    SCOPED_TRACE(flush ? "cache control all" : "cache control none");
    set_flush(flush);
    S().reset();
    count({"threads_launched", "bytes_written"});
    float* x = buffer(1000, 0.5f);
    const uint32_t sizes[] = {1000, 640, 320, 64};
    const auto before = hr::testing::cache_flushes();
    for (uint32_t n : sizes) update(x, n);
    ASSERT_TRUE(hr::device_synchronize().ok());
    const auto after = hr::testing::cache_flushes();
    ASSERT_EQ(S().exits().size(), 1u);
    // With cache control every launch of every pass starts cold, the first of each pass too:
    // its flush follows the start of the pass's counter session, which dirties memory.
    ASSERT_EQ(after.dirty_at_start.size() - before.dirty_at_start.size(), 12u);
    if (flush) {
      EXPECT_EQ(last(after.dirty_at_start, 12), std::vector<uint64_t>(12, 0));
    }
    auto ids = S().exits()[0].dispatch_ids;
    ASSERT_EQ(ids.size(), 4u);
    auto v = values();
    EXPECT_EQ(v.size(), 4u * 3 * 2);  // 4 launches x 3 passes x 2 counters
    for (uint64_t p = 0; p < 3; ++p) {
      for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ((v[{ids[i], p, "threads_launched"}]), ((sizes[i] + 63) / 64) * 64.0)
            << "pass " << p << " launch " << i;
        EXPECT_EQ((v[{ids[i], p, "bytes_written"}]), sizes[i] * 4.0 + 4)
            << "pass " << p << " launch " << i;
      }
    }
  }
}

// A range whose first launch is not counted: on pass 0 the counter session begins at the second
// launch, before the flush of that launch, so the flushes before the second and the third launch
// are inside it; on later passes the session holds every launch and every flush.
TEST_F(RangeCache, CountersLandOnTheirLaunchesWhenTheSessionStartsLate) {
  set_flush(true);
  count({"threads_launched"});
  S().count_if = [](const kreplay_kernel_dispatch_info_t& i) {
    return std::string(i.kernel_name).find("accumulate") != std::string::npos;
  };
  float* x = buffer(1024, 0.5f);
  float* y = buffer(1024, 1.0f);
  const auto before = hr::testing::cache_flushes();
  update(x, 1024);
  for (uint32_t blocks : {8u, 2u}) {
    ASSERT_TRUE(hr::launch_args(fx().accumulate, {blocks}, {64}, stream_, y,
                                static_cast<const float*>(x), uint32_t{1024})
                    .ok());
  }
  ASSERT_TRUE(hr::device_synchronize().ok());
  const auto after = hr::testing::cache_flushes();
  ASSERT_EQ(S().exits().size(), 1u);
  EXPECT_EQ(after.total - before.total, 9u);
  EXPECT_EQ(last(after.dirty_at_start, 9), std::vector<uint64_t>(9, 0));
  auto ids = S().exits()[0].dispatch_ids;
  ASSERT_EQ(ids.size(), 3u);
  auto v = values();
  for (uint64_t p = 0; p < 3; ++p) {
    EXPECT_EQ((v[{ids[1], p, "threads_launched"}]), 8.0 * 64) << "pass " << p;
    EXPECT_EQ((v[{ids[2], p, "threads_launched"}]), 2.0 * 64) << "pass " << p;
  }
  EXPECT_EQ(v.count({ids[0], 0, "threads_launched"}), 0u);  // not counted
}

// Launches on two streams ordered by events: pass 0 waits for the launch on the other stream
// before the flush, later passes likewise; each launch still starts cold.
TEST_F(RangeCache, LaunchesOnStreamsOrderedByEventsAreFlushedAfterTheLaunchBefore) {
  set_flush(true);
  span_syncs(true);
  constexpr uint32_t n = 4096;
  float* x = buffer(n, 0.5f);
  float* y = buffer(n, 1.0f);
  auto b = *hr::stream_create();
  auto to_b = *hr::event_create(), to_a = *hr::event_create();
  const auto before = hr::testing::cache_flushes();
  update(x, n);
  ASSERT_TRUE(hr::event_record(to_b, stream_).ok());
  ASSERT_TRUE(hr::stream_wait_event(b, to_b).ok());
  ASSERT_TRUE(hr::launch_args(fx().accumulate, {n / 64}, {64}, b, y, x, n).ok());
  ASSERT_TRUE(hr::event_record(to_a, b).ok());
  ASSERT_TRUE(hr::stream_wait_event(stream_, to_a).ok());
  update(x, n);
  EXPECT_EQ(read(y, 5), 1.005f + expect(0.505f, 1));  // closes the range
  EXPECT_EQ(read(x, 5), expect(0.505f, 2));
  const auto after = hr::testing::cache_flushes();
  ASSERT_EQ(S().exits().size(), 1u);
  EXPECT_EQ(S().exits()[0].outcome.launches, 3u);
  EXPECT_EQ(S().exits()[0].outcome.passes_executed, 3u);
  EXPECT_EQ(after.total - before.total, 9u);
  EXPECT_EQ(after.inside_pass, before.inside_pass);
  EXPECT_EQ(last(after.before_submission, 9), std::vector<uint64_t>(9, 1));
  EXPECT_EQ(last(after.dirty_at_start, 9), std::vector<uint64_t>(9, 0));
  for (auto e : {to_b, to_a}) EXPECT_TRUE(hr::event_destroy(e).ok());
  EXPECT_TRUE(hr::stream_destroy(b).ok());
}

// A range of one pass is not replayed: like a launch that runs once in kernel replay, it is not
// cache-controlled launch by launch (its one flush, when it opens, is as before).
TEST_F(RangeCache, ARangeOfOnePassIsFlushedOnlyWhenItOpens) {
  set_flush(true);
  S().passes = [] { return uint64_t{1}; };
  const auto before = hr::testing::cache_flushes();
  float* x = buffer(256, 0.5f);
  for (int i = 0; i < 3; ++i) update(x, 256);
  ASSERT_TRUE(hr::device_synchronize().ok());
  const auto after = hr::testing::cache_flushes();
  ASSERT_EQ(S().exits().size(), 1u);
  EXPECT_EQ(S().exits()[0].outcome.passes_executed, 1u);
  EXPECT_EQ(after.total - before.total, 1u);
  EXPECT_EQ(last(after.before_submission, 3), (std::vector<uint64_t>{1, 0, 0}));
}

}  // namespace
}  // namespace kreplay::test
