// Hooks::warm_start: where the engine calls it in a kernel-replay window. It must come before the
// dispatch's snapshot (and so before its first pass's before_submit), with the device's window
// held, once per window, and not at all for a dispatch that is not replayed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "replay/engine.hpp"
#include "replay/inventory.hpp"
#include "replay/local_context.hpp"

namespace kreplay::replay {
namespace {

std::vector<std::string> g_events;

class Device final : public device::Device {
 public:
  const device::AgentDesc& desc() const override { return desc_; }
  Status drain(uint64_t) override { return Status::Ok(); }
  uint64_t storage_available(device::StorageTier) override { return 1ull << 30; }
  Result<device::Storage> allocate_storage(device::StorageTier t, uint64_t bytes) override {
    blocks_.emplace_back(bytes);
    return device::Storage{reinterpret_cast<uint64_t>(blocks_.back().data()), bytes, t, 0};
  }
  void free_storage(const device::Storage&) override {}
  Status snapshot(std::span<const device::CopyRegion> regions, uint64_t,
                  std::span<uint64_t> digests) override {
    g_events.push_back("snapshot");
    for (const auto& r : regions) {
      std::memcpy(reinterpret_cast<void*>(r.storage), reinterpret_cast<void*>(r.live), r.size);
    }
    for (auto& d : digests) d = 0;
    return Status::Ok();
  }
  Status find_changed(std::span<const device::CopyRegion>, uint64_t, std::span<const uint64_t>,
                      std::vector<uint64_t>*) override {
    return Status::Ok();
  }
  Status restore(std::span<const device::CopyRegion>, uint64_t,
                 std::span<const uint64_t>) override {
    return Status::Ok();
  }

 private:
  device::AgentDesc desc_;
  std::vector<std::vector<uint8_t>> blocks_;
};

class Launch final : public device::Launch {
 public:
  Launch() { info_.agent.handle = 1; }
  const device::LaunchInfo& info() const override { return info_; }
  Status relaunch() override {
    g_events.push_back("launch");
    return Status::Ok();
  }
  Status wait(uint64_t, device::PassTiming* t) override {
    if (t) *t = {1, 2};
    return Status::Ok();
  }
  bool recordable() const override { return true; }
  std::unique_ptr<device::Launch> record() override { return std::make_unique<Launch>(); }

 private:
  device::LaunchInfo info_;
};

uint64_t g_passes = 3;
uint64_t pass_count(kreplay_kernel_dispatch_info_t, kreplay_user_data_t) {
  return g_passes;
}
uint64_t range_pass_count(kreplay_range_info_t, kreplay_user_data_t) {
  return g_passes;
}

class Hooks final : public replay::Hooks {
 public:
  bool any_dispatch_service() override { return true; }
  bool replay_configured() override { return true; }
  void config_enter(DispatchState& st) override {
    st.pass_count = &pass_count;
    st.config_fired = true;
  }
  void config_exit(DispatchState&) override {}
  std::vector<uint64_t> active_contexts() override { return {}; }
  void pass_enter(DispatchState&, LocalContextScope&) override {}
  void pass_exit(DispatchState&) override {}
  bool before_submit(DispatchState& st) override {
    g_events.push_back("before_submit " + std::to_string(st.pass));
    return true;
  }
  void after_complete(DispatchState&) override {}
  void end_dispatch(DispatchState&) override {}
  bool range_configured() override { return range; }
  void range_config_enter(RangeState& r) override {
    r.pass_count = &range_pass_count;
    r.config_fired = true;
  }
  void range_config_exit(RangeState&) override {}
  bool range_launch(RangeState&, DispatchState&) override { return true; }
  void range_pass_enter(RangeState&, LocalContextScope&) override {}
  void range_pass_exit(RangeState&) override {}
  device::CounterSet* armed_set(DispatchState&) override { return nullptr; }
  void warm_start(DispatchState& st, bool range) override {
    g_events.push_back(range ? "warm_start range" : "warm_start");
    window_open = st.window;
    // The device's window is held: another thread cannot take it, even shared.
    std::thread other([&] {
      window_held = !st.slot->window_mu.try_lock_shared();
      if (!window_held) st.slot->window_mu.unlock_shared();
    });
    other.join();
  }
  bool window_held = false;
  bool window_open = true;
  bool range = false;
};

TEST(WarmStart, BeforeTheSnapshotAndTheFirstPassWithTheDeviceHeld) {
  std::vector<uint8_t> memory(4096, 7);
  MemoryInventory inventory;
  inventory.add(1, reinterpret_cast<uint64_t>(memory.data()), memory.size(),
                KREPLAY_MEMORY_KIND_DEVICE);
  Device dev;
  Hooks hooks;
  Engine engine(hooks, inventory);
  engine.add_device(1, &dev);
  Options options = engine.options();
  options.flush_caches = false;
  engine.set_options(options);

  g_events.clear();
  g_passes = 3;
  Launch launch;
  DispatchState* st = engine.enter(launch);
  ASSERT_TRUE(launch.submit().ok());
  engine.exit(st, true);
  // (No chunk changed, so there is nothing to restore between the passes.)
  const std::vector<std::string> want = {"warm_start",      "snapshot",        "before_submit 0",
                                         "launch",          "before_submit 1", "launch",
                                         "before_submit 2", "launch"};
  EXPECT_EQ(g_events, want);
  EXPECT_TRUE(hooks.window_held);
  EXPECT_FALSE(hooks.window_open);

  // Every window asks again (the counter backend keeps its own once-per-context record).
  g_events.clear();
  Launch again;
  st = engine.enter(again);
  ASSERT_TRUE(again.submit().ok());
  engine.exit(st, true);
  ASSERT_FALSE(g_events.empty());
  EXPECT_EQ(g_events.front(), "warm_start");
  EXPECT_EQ(std::count(g_events.begin(), g_events.end(), "warm_start"), 1);

  // A dispatch that is not replayed (one pass) opens no window: no warm start.
  g_events.clear();
  g_passes = 1;
  Launch once;
  st = engine.enter(once);
  ASSERT_TRUE(once.submit().ok());
  engine.exit(st, true);
  EXPECT_EQ(std::count(g_events.begin(), g_events.end(), "warm_start"), 0);
}

TEST(WarmStart, RangeReplayBeforeTheRangesSnapshot) {
  std::vector<uint8_t> memory(4096, 7);
  MemoryInventory inventory;
  inventory.add(1, reinterpret_cast<uint64_t>(memory.data()), memory.size(),
                KREPLAY_MEMORY_KIND_DEVICE);
  Device dev;
  Hooks hooks;
  hooks.range = true;
  Engine engine(hooks, inventory);
  engine.add_device(1, &dev);
  Options options = engine.options();
  options.flush_caches = false;
  engine.set_options(options);

  g_events.clear();
  g_passes = 2;
  Launch first, second;
  for (Launch* l : {&first, &second}) {
    DispatchState* st = engine.enter(*l);
    ASSERT_TRUE(l->submit().ok());
    engine.exit(st, true);
  }
  engine.range_barrier(1, KREPLAY_RANGE_CLOSE_SYNCHRONIZE);
  ASSERT_GE(g_events.size(), 3u);
  EXPECT_EQ(g_events[0], "warm_start range");
  EXPECT_EQ(g_events[1], "snapshot");
  EXPECT_EQ(std::count(g_events.begin(), g_events.end(), "warm_start range"), 1);
  EXPECT_TRUE(hooks.window_held);
}

}  // namespace
}  // namespace kreplay::replay
