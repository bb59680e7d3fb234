// Divergence detection (issue 12, item 4) pinned on the host device: with check_divergence on,
// a launch whose passes leave different memory (here a kernel that stamps a host-side counter,
// as one reading a clock would) is flagged in its outcome record; a deterministic kernel never
// is, and with the check off nothing is flagged or marked checked.
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "backends/host/hostrt.hpp"
#include "harness.hpp"
#include "replay/engine.hpp"
#include "sdk/runtime.hpp"

namespace kreplay::test {
namespace {

// Host memory: restores do not rewind it, so every execution writes a new value.
std::atomic<uint32_t> g_stamps{0};

void k_stamp(hostrt::ThreadContext& t) {
  auto* x = t.arg<float*>(0);
  if (t.global_thread_id() == 0) t.store(&x[0], static_cast<float>(g_stamps.fetch_add(1) + 1));
}

hostrt::Kernel stamp_kernel() {
  static hostrt::Kernel k = [] {
    hostrt::ModuleDesc d;
    d.name = "divergence_module";
    d.kernels = {{"_Z5stampPf", k_stamp, {8}}};
    auto mod = hostrt::load_module(d);
    EXPECT_TRUE(mod.ok());
    return *hostrt::get_kernel(*mod, "_Z5stampPf");
  }();
  return k;
}

class Divergence : public HostDeviceTest {
 protected:
  void set_check(bool on) {
    set_options([on](replay::Options& o) { o.check_divergence = on; });
  }
  kreplay_replay_outcome_record_t last_outcome() {
    const auto* e = tool().config_exit(tool().last_dispatch_id());
    EXPECT_NE(e, nullptr);
    return e ? e->outcome : kreplay_replay_outcome_record_t{};
  }
};

TEST_F(Divergence, ADeterministicKernelIsNeverFlagged) {
  set_check(true);
  float* x = buffer(4096);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(launch_update(x, 4096).ok());
    ASSERT_TRUE(hostrt::device_synchronize().ok());
    const auto o = last_outcome();
    EXPECT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
    EXPECT_EQ(o.passes_executed, 3u);
    EXPECT_NE(o.divergence_checked, 0);
    EXPECT_EQ(o.diverged_passes, 0u);
  }
  EXPECT_EQ(x[0], updated(0.25f, 3));
}

TEST_F(Divergence, PassesThatLeaveDifferentMemoryAreFlagged) {
  set_check(true);
  float* x = buffer(64);
  ASSERT_TRUE(hostrt::launch_args(stamp_kernel(), {1}, {1}, hostrt::default_stream(), x).ok());
  ASSERT_TRUE(hostrt::device_synchronize().ok());
  const auto o = last_outcome();
  EXPECT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
  EXPECT_EQ(o.passes_executed, 3u);
  EXPECT_NE(o.divergence_checked, 0);
  EXPECT_EQ(o.diverged_passes, 2u);  // passes 1 and 2 each differ from pass 0
}

TEST_F(Divergence, OffByDefaultNothingIsChecked) {
  set_check(false);
  float* x = buffer(64);
  ASSERT_TRUE(hostrt::launch_args(stamp_kernel(), {1}, {1}, hostrt::default_stream(), x).ok());
  ASSERT_TRUE(hostrt::device_synchronize().ok());
  const auto o = last_outcome();
  EXPECT_EQ(o.passes_executed, 3u);
  EXPECT_EQ(o.divergence_checked, 0);
  EXPECT_EQ(o.diverged_passes, 0u);
}

}  // namespace
}  // namespace kreplay::test
