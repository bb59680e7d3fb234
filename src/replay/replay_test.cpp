// Unit tests of the replay engine's parts: the pass-count table, the memory inventory, snapshot
// placement across storage tiers, and the changed-chunk restore. A FakeDevice keeps "device"
// memory in host RAM and counts the bytes each operation moves.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

#include "replay/inventory.hpp"
#include "replay/plan.hpp"
#include "replay/snapshot.hpp"

namespace kreplay::replay {
namespace {

// ---- plan ----

int g_continue_calls = 0;
uint64_t n_passes(kreplay_kernel_dispatch_info_t, kreplay_user_data_t ud) { return ud.value; }
int always(kreplay_kernel_dispatch_info_t, uint64_t, uint64_t, kreplay_user_data_t) {
  ++g_continue_calls;
  return 1;
}

TEST(Plan, TableRows) {
  kreplay_kernel_dispatch_info_t info{};
  auto ud = [](uint64_t v) { return kreplay_user_data_t{v}; };
  Plan p = make_plan(nullptr, &always, info, ud(5));
  EXPECT_FALSE(p.replay);
  EXPECT_FALSE(p.invalid);
  p = make_plan(&n_passes, &always, info, ud(1));
  EXPECT_FALSE(p.replay);
  p = make_plan(&n_passes, nullptr, info, ud(4));
  EXPECT_TRUE(p.replay);
  EXPECT_FALSE(p.indefinite);
  EXPECT_EQ(p.requested, 4u);
  p = make_plan(&n_passes, &always, info, ud(0));
  EXPECT_TRUE(p.replay);
  EXPECT_TRUE(p.indefinite);
  p = make_plan(&n_passes, nullptr, info, ud(0));
  EXPECT_FALSE(p.replay);
  EXPECT_TRUE(p.invalid);
}

TEST(Plan, ContinueIsNotAskedAfterTheLastFixedPass) {
  kreplay_kernel_dispatch_info_t info{};
  Plan fixed = make_plan(&n_passes, &always, info, kreplay_user_data_t{3});
  g_continue_calls = 0;
  EXPECT_TRUE(should_continue(fixed, 0, &always, info, {}));
  EXPECT_TRUE(should_continue(fixed, 1, &always, info, {}));
  EXPECT_FALSE(should_continue(fixed, 2, &always, info, {}));
  EXPECT_EQ(g_continue_calls, 2);
  EXPECT_TRUE(should_continue(fixed, 0, nullptr, info, {}));
  EXPECT_FALSE(should_continue(fixed, 2, nullptr, info, {}));

  Plan indefinite = make_plan(&n_passes, &always, info, kreplay_user_data_t{0});
  g_continue_calls = 0;
  for (uint64_t p = 0; p < 50; ++p) EXPECT_TRUE(should_continue(indefinite, p, &always, info, {}));
  EXPECT_EQ(g_continue_calls, 50);
}

// ---- inventory ----

TEST(Inventory, AddRemoveAndLookupThroughAliases) {
  MemoryInventory inv;
  uint64_t a = inv.add(1, 0x1000, 0x100, KREPLAY_MEMORY_KIND_DEVICE);
  inv.add(1, 0x3000, 0x100, KREPLAY_MEMORY_KIND_DEVICE);
  inv.add(2, 0x1000, 0x800, KREPLAY_MEMORY_KIND_DEVICE);  // other agent, same address
  inv.add_alias(a, 0x9000, 0x100);
  Region r;
  ASSERT_TRUE(inv.find(1, 0x90ff, &r));
  EXPECT_EQ(r.base, 0x1000u);
  EXPECT_FALSE(inv.find(1, 0x9100, &r));
  EXPECT_FALSE(inv.find(1, 0x2000, &r));
  EXPECT_EQ(inv.total_bytes(1), 0x200u);
  EXPECT_EQ(inv.count(2), 1u);
  // Removing through the alias retires the region and its aliases.
  ASSERT_TRUE(inv.remove(1, 0x9000, &r));
  EXPECT_EQ(r.id, a);
  EXPECT_FALSE(inv.find(1, 0x1000, &r));
  EXPECT_FALSE(inv.find(1, 0x9000, &r));
  EXPECT_EQ(inv.count(1), 1u);
  EXPECT_FALSE(inv.remove(1, 0x1000));
}

TEST(Inventory, ReallocationAtTheSameAddressReplaces) {
  MemoryInventory inv;
  inv.add(1, 0x1000, 0x100, KREPLAY_MEMORY_KIND_DEVICE);
  inv.add(1, 0x1000, 0x400, KREPLAY_MEMORY_KIND_POOL);
  auto regions = inv.regions(1);
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(regions[0].size, 0x400u);
  EXPECT_EQ(regions[0].kind, KREPLAY_MEMORY_KIND_POOL);
}

TEST(Inventory, HoldsAKindWhileARegionOfItLives) {
  MemoryInventory inv;
  EXPECT_FALSE(inv.holds(1, KREPLAY_MEMORY_KIND_MANAGED));
  inv.add(1, 0x1000, 0x100, KREPLAY_MEMORY_KIND_MANAGED);
  inv.add(1, 0x2000, 0x100, KREPLAY_MEMORY_KIND_MANAGED);
  inv.add(2, 0x9000, 0x100, KREPLAY_MEMORY_KIND_DEVICE);
  EXPECT_TRUE(inv.holds(1, KREPLAY_MEMORY_KIND_MANAGED));
  EXPECT_FALSE(inv.holds(2, KREPLAY_MEMORY_KIND_MANAGED));
  EXPECT_TRUE(inv.remove(1, 0x1000));
  EXPECT_TRUE(inv.holds(1, KREPLAY_MEMORY_KIND_MANAGED));
  inv.add(1, 0x2000, 0x100, KREPLAY_MEMORY_KIND_DEVICE);  // re-allocated as device memory
  EXPECT_FALSE(inv.holds(1, KREPLAY_MEMORY_KIND_MANAGED));
  EXPECT_TRUE(inv.holds(1, KREPLAY_MEMORY_KIND_DEVICE));
}

TEST(Inventory, ArgsScopeFindsPointedRegionsAndGlobals) {
  MemoryInventory inv;
  inv.add(1, 0x10000, 0x1000, KREPLAY_MEMORY_KIND_DEVICE);
  inv.add(1, 0x20000, 0x1000, KREPLAY_MEMORY_KIND_DEVICE);
  inv.add(1, 0x30000, 0x1000, KREPLAY_MEMORY_KIND_DEVICE);
  inv.add(1, 0x40000, 0x10, KREPLAY_MEMORY_KIND_MODULE_GLOBAL);
  // Arguments: a pointer into the middle of the second region, an int, and a null pointer.
  uint64_t args[3] = {0x20010, 42, 0};
  auto out = inv.regions_for_args(
      1, std::span<const std::byte>(reinterpret_cast<const std::byte*>(args), sizeof(args)));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].base, 0x20000u);
  EXPECT_EQ(out[1].base, 0x40000u);
}

// ---- storage and snapshot ----

class FakeDevice : public device::Device {
 public:
  FakeDevice(uint64_t device_capacity, uint64_t host_capacity)
      : dev_cap_(device_capacity), host_cap_(host_capacity) {}
  const device::AgentDesc& desc() const override { return desc_; }
  Status drain(uint64_t) override { return Status::Ok(); }
  uint64_t storage_available(device::StorageTier t) override {
    return t == device::StorageTier::kDevice ? dev_cap_ - dev_used_ : host_cap_ - host_used_;
  }
  Result<device::Storage> allocate_storage(device::StorageTier t, uint64_t bytes) override {
    if (bytes > storage_available(t)) return Error(KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES, "full");
    (t == device::StorageTier::kDevice ? dev_used_ : host_used_) += bytes;
    blocks_.emplace_back(bytes);
    ++allocations;
    return device::Storage{reinterpret_cast<uint64_t>(blocks_.back().data()), bytes, t, 0};
  }
  void free_storage(const device::Storage& s) override {
    (s.tier == device::StorageTier::kDevice ? dev_used_ : host_used_) -= s.size;
  }
  Status snapshot(std::span<const device::CopyRegion> regions, uint64_t chunk,
                  std::span<uint64_t> digests) override {
    for (const auto& r : regions) {
      std::memcpy(reinterpret_cast<void*>(r.storage), reinterpret_cast<void*>(r.live), r.size);
      for (uint64_t c = 0; c < device::chunk_count(r.size, chunk); ++c)
        digests[r.first_chunk + c] = hash(r.live + c * chunk, std::min(chunk, r.size - c * chunk));
    }
    return Status::Ok();
  }
  Status find_changed(std::span<const device::CopyRegion> regions, uint64_t chunk,
                      std::span<const uint64_t> digests, std::vector<uint64_t>* changed) override {
    ++scans;
    for (const auto& r : regions) {
      for (uint64_t c = 0; c < device::chunk_count(r.size, chunk); ++c) {
        if (hash(r.live + c * chunk, std::min(chunk, r.size - c * chunk)) != digests[r.first_chunk + c])
          changed->push_back(r.first_chunk + c);
      }
    }
    return Status::Ok();
  }
  Status restore(std::span<const device::CopyRegion> regions, uint64_t chunk,
                 std::span<const uint64_t> chunks) override {
    for (uint64_t c : chunks) {
      for (const auto& r : regions) {
        uint64_t n = device::chunk_count(r.size, chunk);
        if (c < r.first_chunk || c >= r.first_chunk + n) continue;
        uint64_t off = (c - r.first_chunk) * chunk;
        uint64_t len = std::min(chunk, r.size - off);
        std::memcpy(reinterpret_cast<void*>(r.live + off), reinterpret_cast<void*>(r.storage + off), len);
        restored_bytes += len;
      }
    }
    return Status::Ok();
  }
  static uint64_t hash(uint64_t p, uint64_t n) {
    uint64_t h = 1469598103934665603ull;
    for (uint64_t i = 0; i < n; ++i) h = (h ^ reinterpret_cast<const uint8_t*>(p)[i]) * 1099511628211ull;
    return h;
  }
  int allocations = 0, scans = 0;
  uint64_t restored_bytes = 0;
  void set_memory_bytes(uint64_t bytes) { desc_.memory_bytes = bytes; }

 private:
  device::AgentDesc desc_;
  uint64_t dev_cap_, host_cap_, dev_used_ = 0, host_used_ = 0;
  std::vector<std::vector<uint8_t>> blocks_;
};

std::vector<Region> regions_of(std::vector<std::vector<uint8_t>>& mem) {
  std::vector<Region> out;
  uint64_t id = 1;
  for (auto& m : mem) out.push_back({id++, 1, reinterpret_cast<uint64_t>(m.data()), m.size(),
                                     KREPLAY_MEMORY_KIND_DEVICE});
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.base < b.base; });
  return out;
}

TEST(StoragePool, DeviceFirstThenPinnedHostThenDecline) {
  std::vector<std::vector<uint8_t>> mem = {std::vector<uint8_t>(1000, 1),
                                           std::vector<uint8_t>(3000, 2)};
  auto regions = regions_of(mem);
  {
    FakeDevice dev(1 << 20, 1 << 20);
    StoragePool pool;
    auto p = pool.place(dev, regions, 256, 0);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->device_bytes, 4000u);
    EXPECT_EQ(p->host_bytes, 0u);
    EXPECT_EQ(p->total_chunks, 4u + 12u);
    // Storage is kept: a second placement allocates nothing.
    int before = dev.allocations;
    ASSERT_TRUE(pool.place(dev, regions, 256, 0).ok());
    EXPECT_EQ(dev.allocations, before);
    pool.release(dev);
  }
  {
    FakeDevice dev(1100, 1 << 20);  // only the 1000-byte region fits the device tier
    StoragePool pool;
    auto p = pool.place(dev, regions, 256, 0);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->device_bytes + p->host_bytes, 4000u);
    EXPECT_GT(p->host_bytes, 0u);
  }
  {
    FakeDevice dev(100, 100);  // neither tier
    StoragePool pool;
    auto p = pool.place(dev, regions, 256, 0);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES);
    EXPECT_NE(p.status().message().find("pinned host storage"), std::string::npos);
  }
  {
    FakeDevice dev(1 << 20, 1 << 20);
    StoragePool pool;
    auto p = pool.place(dev, regions, 256, 2000);  // user limit
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.status().message().find("exceeds the limit"), std::string::npos);
  }
}

// A snapshot that does not fit says, on one line, how much it needs, its largest allocation and
// what each tier has free; one allocation with a quarter of the device or more is named as a
// framework's pool (the JAX/TensorFlow settings are named when their libraries are loaded, which
// no unit test can arrange).
TEST(StoragePool, SnapshotTooLargeMessageNamesTheAllocation) {
  std::vector<std::vector<uint8_t>> mem = {std::vector<uint8_t>(1000, 1),
                                           std::vector<uint8_t>(3000, 2)};
  auto regions = regions_of(mem);
  FakeDevice small(100, 200);
  std::string m = snapshot_too_large_message(small, regions, "tier full");
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_NE(m.find("needs 3.9 KiB (2 allocations"), std::string::npos) << m;
  EXPECT_NE(m.find("the largest, at 0x"), std::string::npos) << m;
  EXPECT_NE(m.find("is 2.9 KiB"), std::string::npos) << m;
  EXPECT_NE(m.find("100 B of device memory and 200 B of pinned host memory are free"),
            std::string::npos) << m;
  EXPECT_NE(m.find("(tier full)"), std::string::npos) << m;
  EXPECT_EQ(m.find("framework"), std::string::npos) << m;  // the device size is unknown (0)
  small.set_memory_bytes(8000);  // the 3000-byte allocation holds 38% of this device
  m = snapshot_too_large_message(small, regions, "tier full");
  EXPECT_NE(m.find("one allocation holds 38% of the device, as a framework's memory pool would"),
            std::string::npos) << m;
}

TEST(Snapshot, RestoresOnlyChangedChunksAndLearnsThem) {
  std::vector<std::vector<uint8_t>> mem = {std::vector<uint8_t>(4096, 7),
                                           std::vector<uint8_t>(1000, 9)};
  auto regions = regions_of(mem);
  FakeDevice dev(1 << 20, 1 << 20);
  StoragePool pool;
  auto p = pool.place(dev, regions, 256, 0);
  ASSERT_TRUE(p.ok());
  Snapshot snap;
  ASSERT_TRUE(snap.take(dev, std::move(p).value(), 256).ok());
  auto original = mem;

  // "Pass 0" writes bytes in two chunks of the first region and the tail of the second.
  mem[0][10] = 0;
  mem[0][300] = 0;
  mem[1][999] = 0;
  auto bytes = snap.restore(dev, false);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, 256u + 256u + (1000u - 3 * 256u));
  EXPECT_EQ(mem, original);
  EXPECT_EQ(dev.scans, 1);

  // Later passes restore the learned set without scanning again.
  mem[0][10] = 0;
  mem[0][300] = 0;
  mem[1][999] = 0;
  bytes = snap.restore(dev, false);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(mem, original);
  EXPECT_EQ(dev.scans, 1);

  // With verify, a chunk outside the learned set is found and restored too.
  mem[0][4000] = 0;
  bytes = snap.restore(dev, true);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(mem, original);
  EXPECT_EQ(dev.scans, 2);
}

TEST(Snapshot, UnchangedMemoryRestoresNothing) {
  std::vector<std::vector<uint8_t>> mem = {std::vector<uint8_t>(5000, 3)};
  auto regions = regions_of(mem);
  FakeDevice dev(1 << 20, 1 << 20);
  StoragePool pool;
  Snapshot snap;
  ASSERT_TRUE(snap.take(dev, *pool.place(dev, regions, 1024, 0), 1024).ok());
  auto bytes = snap.restore(dev, false);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, 0u);
  EXPECT_EQ(dev.restored_bytes, 0u);
}

}  // namespace
}  // namespace kreplay::replay
