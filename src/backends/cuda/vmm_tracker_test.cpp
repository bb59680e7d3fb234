// Pins: each physical VMM view is tracked once, through a writable mapping, with every other
// mapping as an alias; read-only-only views and unmapped holes are not tracked.
#include "backends/cuda/vmm_tracker.hpp"

#include <gtest/gtest.h>

#include <map>

namespace kreplay::cuda {
namespace {

struct Recorder : VmmSink {
  uint64_t next = 1;
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> regions;  // va → (id, size)
  std::map<uint64_t, uint64_t> aliases;                       // va → region id
  uint64_t add_region(uint64_t va, uint64_t size) override {
    regions[va] = {next, size};
    return next++;
  }
  void add_alias(uint64_t region, uint64_t va, uint64_t) override { aliases[va] = region; }
  void remove(uint64_t va) override {
    uint64_t id = regions.at(va).first;
    regions.erase(va);
    std::erase_if(aliases, [id](const auto& kv) { return kv.second == id; });
  }
};

TEST(VmmTracker, AliasedMappingsAreSavedOnceThroughTheWritableView) {
  Recorder r;
  VmmTracker t(r);
  t.on_create(7, 0x200000);
  t.on_map(0x10000000, 0x200000, 0, 7);  // view A
  t.on_map(0x20000000, 0x200000, 0, 7);  // view B of the same memory
  EXPECT_TRUE(r.regions.empty());        // no access yet: not writable anywhere
  t.on_set_access(0x20000000, 0x200000, false);  // B read-only
  EXPECT_TRUE(r.regions.empty());
  t.on_set_access(0x10000000, 0x200000, true);   // A writable
  ASSERT_EQ(r.regions.size(), 1u);
  EXPECT_EQ(r.regions.begin()->first, 0x10000000u);
  ASSERT_EQ(r.aliases.size(), 1u);
  EXPECT_EQ(r.aliases.begin()->first, 0x20000000u);
  // Unmapping the writable view leaves only a read-only one: nothing to track.
  t.on_unmap(0x10000000, 0x200000);
  EXPECT_TRUE(r.regions.empty());
  EXPECT_TRUE(r.aliases.empty());
}

TEST(VmmTracker, TwoWritableViewsPickOneBase) {
  Recorder r;
  VmmTracker t(r);
  t.on_create(1, 0x400000);
  t.on_map(0x30000000, 0x400000, 0, 1);
  t.on_map(0x50000000, 0x400000, 0, 1);
  t.on_set_access(0x30000000, 0x400000, true);
  t.on_set_access(0x50000000, 0x400000, true);
  ASSERT_EQ(r.regions.size(), 1u);
  EXPECT_EQ(r.aliases.size(), 1u);
  t.on_unmap(0x30000000, 0x400000);  // the base goes: the other writable view takes over
  ASSERT_EQ(r.regions.size(), 1u);
  EXPECT_EQ(r.regions.begin()->first, 0x50000000u);
  EXPECT_TRUE(r.aliases.empty());
}

TEST(VmmTracker, ChunksOfOneReservationWithAHole) {
  Recorder r;
  VmmTracker t(r);
  t.on_create(1, 0x200000);
  t.on_create(2, 0x200000);
  // [chunk 1][hole][chunk 2] inside one reservation; one SetAccess over the whole range.
  t.on_map(0x40000000, 0x200000, 0, 1);
  t.on_map(0x40400000, 0x200000, 0, 2);
  t.on_set_access(0x40000000, 0x600000, true);
  ASSERT_EQ(r.regions.size(), 2u);
  EXPECT_EQ(r.regions.count(0x40000000), 1u);
  EXPECT_EQ(r.regions.count(0x40400000), 1u);
  EXPECT_EQ(r.regions.count(0x40200000), 0u);  // the hole
  t.on_release(1);
  t.on_release(2);
  EXPECT_EQ(r.regions.size(), 2u);  // still mapped: still tracked
  t.on_unmap(0x40000000, 0x600000);
  EXPECT_TRUE(r.regions.empty());
}

}  // namespace
}  // namespace kreplay::cuda
