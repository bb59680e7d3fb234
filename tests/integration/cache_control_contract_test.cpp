// Cache control (issue 12, item 1) pinned on the host device, which counts the flushes the engine
// asks for (hostrt::testing::cache_flushes): with --cache-control all every counted pass is
// preceded by exactly one Device::flush_caches, made after the restore and before PASS ENTER (so
// before the pass's services start), and none is made while a pass runs; with none, no flush.
#include <gtest/gtest.h>

#include <vector>

#include "backends/host/hostrt.hpp"
#include "harness.hpp"
#include "replay/engine.hpp"
#include "sdk/runtime.hpp"

namespace kreplay::test {
namespace {

class CacheControl : public HostDeviceTest {
 protected:
  void SetUp() override {
    HostDeviceTest::SetUp();
    // What the device had flushed when each PASS ENTER and PASS EXIT was delivered.
    tool().scenario.on_pass_enter = [this](const auto&) {
      at_enter_.push_back(hostrt::testing::cache_flushes().total);
    };
    tool().scenario.on_pass_exit = [this](const auto&) {
      at_exit_.push_back(hostrt::testing::cache_flushes().total);
    };
  }
  void set_flush(bool on) {
    set_options([on](replay::Options& o) { o.flush_caches = on; });
  }
  // The flushes counted before each of the last @p n kernel submissions.
  static std::vector<uint64_t> last_submissions(const hostrt::testing::CacheFlushes& f, size_t n) {
    if (f.before_submission.size() < n) return f.before_submission;
    return {f.before_submission.end() - static_cast<std::ptrdiff_t>(n), f.before_submission.end()};
  }
  std::vector<uint64_t> at_enter_, at_exit_;
};

TEST_F(CacheControl, AllFlushesOnceBeforeEveryCountedPassAndNeverInsideOne) {
  set_flush(true);
  const auto before = hostrt::testing::cache_flushes();
  const uint64_t engine_before = sdk::Runtime::get().engine().stats().cache_flushes.load();
  float* x = buffer(256);
  ASSERT_TRUE(launch_update(x, 256).ok());
  ASSERT_TRUE(hostrt::device_synchronize().ok());
  const auto after = hostrt::testing::cache_flushes();
  const auto& o = tool().config_exit(tool().last_dispatch_id())->outcome;
  ASSERT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  ASSERT_EQ(o.passes_executed, 3u);
  // One flush per pass, pass 0 (the application's own submission) included.
  EXPECT_EQ(after.total - before.total, 3u);
  EXPECT_EQ(sdk::Runtime::get().engine().stats().cache_flushes.load() - engine_before, 3u);
  // Each of the three submissions started right after exactly one flush...
  EXPECT_EQ(last_submissions(after, 3), (std::vector<uint64_t>{1, 1, 1}));
  // ...which was made before PASS ENTER (before the pass's services), none while it ran.
  ASSERT_EQ(at_enter_.size(), 3u);
  ASSERT_EQ(at_exit_.size(), 3u);
  for (size_t p = 0; p < 3; ++p) {
    EXPECT_EQ(at_enter_[p], before.total + p + 1) << "pass " << p;
    EXPECT_EQ(at_exit_[p], at_enter_[p]) << "pass " << p;
  }
  EXPECT_EQ(after.inside_pass, before.inside_pass);
  EXPECT_EQ(x[0], updated(0.25f, 1));  // still exactly one execution's memory
}

TEST_F(CacheControl, NoneNeverFlushes) {
  set_flush(false);
  const auto before = hostrt::testing::cache_flushes();
  float* x = buffer(256);
  ASSERT_TRUE(launch_update(x, 256).ok());
  ASSERT_TRUE(hostrt::device_synchronize().ok());
  const auto after = hostrt::testing::cache_flushes();
  EXPECT_EQ(tool().config_exit(tool().last_dispatch_id())->outcome.passes_executed, 3u);
  EXPECT_EQ(after.total, before.total);
  EXPECT_EQ(last_submissions(after, 3), (std::vector<uint64_t>{0, 0, 0}));
  EXPECT_EQ(at_enter_.size(), 3u);
  EXPECT_EQ(x[0], updated(0.25f, 1));
}

TEST_F(CacheControl, ALaunchThatIsNotReplayedIsNotFlushed) {
  set_flush(true);
  tool().scenario.pass_count = nullptr;  // runs once, no window
  const auto before = hostrt::testing::cache_flushes();
  float* x = buffer(64);
  ASSERT_TRUE(launch_update(x, 64).ok());
  ASSERT_TRUE(hostrt::device_synchronize().ok());
  EXPECT_EQ(hostrt::testing::cache_flushes().total, before.total);
}

TEST_F(CacheControl, AHostMemoryLaunchIsFlushedBeforeEachPassNotBeforeItsProbe) {
  set_flush(true);
  auto* x = static_cast<float*>(*hostrt::malloc_host_mapped(64 * sizeof(float)));
  for (int i = 0; i < 64; ++i) x[i] = 0.25f;
  const auto before = hostrt::testing::cache_flushes();
  ASSERT_TRUE(launch_update(x, 64).ok());
  ASSERT_TRUE(hostrt::device_synchronize().ok());
  const auto after = hostrt::testing::cache_flushes();
  EXPECT_EQ(tool().config_exit(tool().last_dispatch_id())->outcome.passes_executed, 3u);
  EXPECT_EQ(after.total - before.total, 3u);
  // The probe (the application's own submission) and then three counted passes.
  EXPECT_EQ(last_submissions(after, 4), (std::vector<uint64_t>{0, 1, 1, 1}));
  EXPECT_EQ(after.inside_pass, before.inside_pass);
  EXPECT_EQ(x[0], updated(0.25f, 1));
}

}  // namespace
}  // namespace kreplay::test
