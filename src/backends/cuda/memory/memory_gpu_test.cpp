// MemoryOps on a real GPU (ctest label gpu). Pins: snapshot copies every byte and writes the
// reference digest of every chunk; find_changed returns exactly the chunks that were touched
// (first and last bytes, unaligned bytes, spans across chunk borders, swapped words); restore
// brings live memory back bit for bit. For device and pinned-host storage, sizes from 1 byte to
// over 4 GiB, any alignment of live and storage, 10,000 regions, managed and mapped-host live
// memory, every chunk size class. Every test skips when there is no driver or GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/memory/driver.hpp"
#include "backends/cuda/memory/memory_layout.hpp"
#include "backends/cuda/memory/memory_ops.hpp"

namespace kreplay::cuda {
namespace {

namespace drv = memdrv;
using device::CopyRegion;
using device::StorageTier;
using memory_layout::reference_digest;

#define CU_ASSERT(call)                                  \
  do {                                                   \
    ::kreplay::Status kr_s_ = drv::check((call), #call); \
    ASSERT_TRUE(kr_s_.ok()) << kr_s_.message();          \
  } while (0)
#define KR_ASSERT_OK(expr)                                       \
  do {                                                           \
    ::kreplay::Status kr_s_ = (expr);                            \
    ASSERT_TRUE(kr_s_.ok()) << #expr << ": " << kr_s_.message(); \
  } while (0)

constexpr uint64_t kAlign = 256;  // how the engine places regions in storage
uint64_t align_up(uint64_t v) {
  return (v + kAlign - 1) / kAlign * kAlign;
}

std::vector<unsigned char> random_bytes(uint64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<unsigned char> v(n);
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x = rng();
    std::memcpy(v.data() + i, &x, 8);
  }
  for (; i < n; ++i) v[i] = static_cast<unsigned char>(rng());
  return v;
}

class MemoryGpu : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Status s = drv::init();
    if (!s.ok()) {
      skip_ = s.message();
      return;
    }
    int count = 0;
    if (drv::api().cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
      skip_ = "no CUDA device";
      return;
    }
    drv::api().cuDeviceGet(&dev_, 0);
    if (drv::api().cuDevicePrimaryCtxRetain(&ctx_, dev_) != CUDA_SUCCESS) {
      skip_ = "cannot retain the primary context";
      return;
    }
    drv::api().cuCtxSetCurrent(ctx_);
    auto ops = MemoryOps::create(ctx_, dev_);
    if (!ops.ok()) {
      skip_ = ops.status().message();
      return;
    }
    ops_ = std::move(ops).value();
  }

  static void TearDownTestSuite() {
    ops_.reset();
    if (ctx_ != nullptr) drv::api().cuDevicePrimaryCtxRelease(dev_);
    ctx_ = nullptr;
  }

  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << "no GPU: " << skip_;
    drv::api().cuCtxSetCurrent(ctx_);
  }

  void TearDown() override {
    if (!skip_.empty()) return;
    for (CUdeviceptr p : device_allocs_) drv::api().cuMemFree(p);
    for (void* p : host_allocs_) drv::api().cuMemFreeHost(p);
    for (const auto& s : storages_) ops_->free_storage(s);
  }

  CUdeviceptr alloc(uint64_t bytes) {
    CUdeviceptr p = 0;
    EXPECT_EQ(drv::api().cuMemAlloc(&p, bytes), CUDA_SUCCESS);
    device_allocs_.push_back(p);
    return p;
  }

  uint64_t storage(StorageTier tier, uint64_t bytes) {
    auto s = ops_->allocate_storage(tier, bytes);
    EXPECT_TRUE(s.ok()) << s.status().message();
    if (!s.ok()) return 0;
    storages_.push_back(*s);
    return s->address;
  }

  static void put(uint64_t dst, const void* src, uint64_t n) {
    ASSERT_EQ(drv::api().cuMemcpyHtoD(dst, src, n), CUDA_SUCCESS);
  }
  static std::vector<unsigned char> get(uint64_t src, uint64_t n) {
    std::vector<unsigned char> v(n);
    EXPECT_EQ(drv::api().cuMemcpyDtoH(v.data(), src, n), CUDA_SUCCESS);
    return v;
  }

  // Regions for (live, size) pairs, stored from `storage_base` the way the engine places them
  // (256-byte aligned), plus `skew` bytes for every region whose index is 3 mod 4 (unaligned
  // storage). Chunks numbered consecutively.
  static std::vector<CopyRegion> place(const std::vector<std::pair<uint64_t, uint64_t>>& lives,
                                       uint64_t storage_base, uint64_t chunk_bytes,
                                       uint64_t skew = 0, uint64_t* chunks = nullptr,
                                       uint64_t* storage_bytes = nullptr) {
    std::vector<CopyRegion> regions;
    uint64_t off = 0, chunk = 0;
    for (size_t i = 0; i < lives.size(); ++i) {
      const uint64_t s = i % 4 == 3 ? skew : 0;
      regions.push_back({lives[i].first, storage_base + off + s, lives[i].second, chunk});
      off += align_up(lives[i].second + s);
      chunk += device::chunk_count(lives[i].second, chunk_bytes);
    }
    if (chunks) *chunks = chunk;
    if (storage_bytes) *storage_bytes = off;
    return regions;
  }

  static uint64_t storage_bytes_for(const std::vector<std::pair<uint64_t, uint64_t>>& lives,
                                    uint64_t skew) {
    uint64_t chunks = 0, bytes = 0;
    place(lives, kAlign, 256, skew, &chunks, &bytes);
    return bytes;
  }

  struct Touch {
    size_t region;
    uint64_t offset;
    uint64_t bytes;
  };

  // The whole contract on one layout: snapshot (copy + reference digests), touch, find_changed
  // (exactly the touched chunks), restore (bit-identical), find_changed (nothing).
  void round_trip(const std::vector<CopyRegion>& regions, uint64_t chunk_bytes,
                  const std::vector<Touch>& touches, bool check_storage = true) {
    uint64_t total_chunks = 0;
    for (const auto& r : regions) {
      total_chunks =
          std::max(total_chunks, r.first_chunk + device::chunk_count(r.size, chunk_bytes));
    }
    std::vector<std::vector<unsigned char>> original;
    for (const auto& r : regions) original.push_back(get(r.live, r.size));

    std::vector<uint64_t> digests(total_chunks, 0);
    KR_ASSERT_OK(ops_->snapshot(regions, chunk_bytes, digests));
    for (size_t i = 0; i < regions.size(); ++i) {
      const auto& r = regions[i];
      if (check_storage) {
        ASSERT_TRUE(get(r.storage, r.size) == original[i]) << "storage of region " << i;
      }
      for (uint64_t c = 0; c < device::chunk_count(r.size, chunk_bytes); ++c) {
        const uint64_t off = c * chunk_bytes;
        const uint64_t len = std::min(chunk_bytes, r.size - off);
        ASSERT_EQ(digests[r.first_chunk + c], reference_digest(original[i].data() + off, len))
            << "region " << i << " chunk " << c;
      }
    }

    std::set<uint64_t> expected;
    for (const auto& t : touches) {
      const auto& r = regions[t.region];
      ASSERT_LE(t.offset + t.bytes, r.size);
      auto bytes = get(r.live + t.offset, t.bytes);
      for (auto& b : bytes) b = static_cast<unsigned char>(b ^ 0xa5);
      put(r.live + t.offset, bytes.data(), bytes.size());
      for (uint64_t o = t.offset; o < t.offset + t.bytes; ++o)
        expected.insert(r.first_chunk + o / chunk_bytes);
    }

    std::vector<uint64_t> changed;
    KR_ASSERT_OK(ops_->find_changed(regions, chunk_bytes, digests, &changed));
    EXPECT_EQ(changed, std::vector<uint64_t>(expected.begin(), expected.end()));

    KR_ASSERT_OK(ops_->restore(regions, chunk_bytes, changed));
    for (size_t i = 0; i < regions.size(); ++i) {
      ASSERT_TRUE(get(regions[i].live, regions[i].size) == original[i]) << "live region " << i;
    }
    std::vector<uint64_t> after;
    KR_ASSERT_OK(ops_->find_changed(regions, chunk_bytes, digests, &after));
    EXPECT_TRUE(after.empty()) << after.size() << " chunks still differ after restore";
  }

  // Odd sizes at odd live offsets in one allocation, random data.
  std::vector<std::pair<uint64_t, uint64_t>> odd_lives(uint64_t seed) {
    const std::vector<uint64_t> sizes = {
        1,       2,    15,    16,    17,    255,   256,   257,
        4095,    4096, 65535, 65536, 65537, 70000, 12345, (1u << 20) + 13,
        3u << 20};
    const std::vector<uint64_t> skews = {0, 1, 3, 8, 4, 2, 0, 5};
    uint64_t bytes = 0;
    for (size_t i = 0; i < sizes.size(); ++i) bytes += align_up(sizes[i] + skews[i % skews.size()]);
    const CUdeviceptr base = alloc(bytes);
    auto data = random_bytes(bytes, seed);
    put(base, data.data(), bytes);
    std::vector<std::pair<uint64_t, uint64_t>> lives;
    uint64_t off = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      lives.push_back({base + off + skews[i % skews.size()], sizes[i]});
      off += align_up(sizes[i] + skews[i % skews.size()]);
    }
    return lives;
  }

  // Touches for odd_lives(): first byte, last bytes, unaligned middles, a span across a border.
  static std::vector<Touch> odd_touches(const std::vector<std::pair<uint64_t, uint64_t>>& lives,
                                        uint64_t chunk_bytes) {
    const size_t n = lives.size();
    std::vector<Touch> t = {{0, 0, 1},                  // a 1-byte region
                            {2, 14, 1},    {4, 16, 1},  // the byte after the last whole vector
                            {8, 4094, 1},  {12, lives[12].second - 1, 1},  // last byte of 65537
                            {13, 3, 1},    {n - 2, 777777, 1},
                            {n - 1, 0, 1}, {n - 1, lives[n - 1].second - 1, 1}};
    // 16 bytes straddling a chunk border, inside the last (3 MiB) region.
    t.push_back({n - 1, 2 * chunk_bytes - 8, 16});
    return t;
  }

  static inline std::string skip_;
  static inline CUdevice dev_ = 0;
  static inline CUcontext ctx_ = nullptr;
  static inline std::unique_ptr<MemoryOps> ops_;
  std::vector<CUdeviceptr> device_allocs_;
  std::vector<void*> host_allocs_;
  std::vector<device::Storage> storages_;
};

class MemoryGpuChunks : public MemoryGpu, public ::testing::WithParamInterface<uint64_t> {};

TEST_P(MemoryGpuChunks, OddSizesAndAlignmentsDeviceStorage) {
  const uint64_t chunk = GetParam();
  auto lives = odd_lives(chunk);
  const uint64_t base = storage(StorageTier::kDevice, storage_bytes_for(lives, 5));
  auto regions = place(lives, base, chunk, 5);
  round_trip(regions, chunk, odd_touches(lives, chunk));
}

TEST_P(MemoryGpuChunks, OddSizesAndAlignmentsPinnedStorage) {
  const uint64_t chunk = GetParam();
  auto lives = odd_lives(chunk + 1);
  const uint64_t base = storage(StorageTier::kPinnedHost, storage_bytes_for(lives, 3));
  auto regions = place(lives, base, chunk, 3);
  round_trip(regions, chunk, odd_touches(lives, chunk));
}

INSTANTIATE_TEST_SUITE_P(ChunkSizes, MemoryGpuChunks,
                         ::testing::Values(256, 512, 4096, 65536, 1u << 20));

TEST_F(MemoryGpu, TenThousandRegions) {
  std::mt19937_64 rng(11);
  std::vector<std::pair<uint64_t, uint64_t>> sizes;
  uint64_t bytes = 0;
  for (int i = 0; i < 10000; ++i) {
    const uint64_t gap = rng() % 32, size = 1 + rng() % 5000;
    sizes.push_back({bytes + gap, size});
    bytes += gap + size;
  }
  const CUdeviceptr base = alloc(bytes);
  auto data = random_bytes(bytes, 12);
  put(base, data.data(), bytes);
  std::vector<std::pair<uint64_t, uint64_t>> lives;
  for (auto [off, size] : sizes) lives.push_back({base + off, size});
  const uint64_t chunk = 1024;
  const uint64_t sbase = storage(StorageTier::kDevice, storage_bytes_for(lives, 1));
  auto regions = place(lives, sbase, chunk, 1);
  std::vector<Touch> touches;
  for (int i = 0; i < 300; ++i) {
    const size_t r = rng() % lives.size();
    const uint64_t len = 1 + rng() % 3;
    if (lives[r].second < len) continue;
    touches.push_back({r, rng() % (lives[r].second - len + 1), len});
  }
  round_trip(regions, chunk, touches);
}

// Over 32768 chunks (the snapshot then runs as two launches and copies digests out in between),
// regions handed over in shuffled order, gaps in the chunk numbering.
TEST_F(MemoryGpu, ManyChunksShuffledRegionsAndNumberingGaps) {
  std::mt19937_64 rng(13);
  const uint64_t chunk = 256;
  std::vector<std::pair<uint64_t, uint64_t>> sizes;
  uint64_t bytes = 0;
  for (int i = 0; i < 3000; ++i) {
    const uint64_t gap = rng() % 16, size = 1 + rng() % 8000;
    sizes.push_back({bytes + gap, size});
    bytes += gap + size;
  }
  const CUdeviceptr base = alloc(bytes);
  auto data = random_bytes(bytes, 14);
  put(base, data.data(), bytes);
  uint64_t storage_bytes = 0;
  for (auto [off, size] : sizes) storage_bytes += align_up(size);
  const uint64_t sbase = storage(StorageTier::kDevice, storage_bytes);
  std::vector<CopyRegion> regions;
  uint64_t soff = 0, next_chunk = 0;
  for (auto [off, size] : sizes) {
    next_chunk += rng() % 4;  // unused chunk numbers between regions
    regions.push_back({base + off, sbase + soff, size, next_chunk});
    soff += align_up(size);
    next_chunk += device::chunk_count(size, chunk);
  }
  ASSERT_GT(next_chunk, 40000u);
  std::shuffle(regions.begin(), regions.end(), rng);
  std::vector<Touch> touches;
  for (int i = 0; i < 200; ++i) {
    const size_t r = rng() % regions.size();
    touches.push_back({r, rng() % regions[r].size, 1});
  }
  touches.push_back({0, regions[0].size - 1, 1});
  round_trip(regions, chunk, touches);
}

TEST_F(MemoryGpu, ManagedAndMappedHostLiveMemory) {
  const auto& cu = drv::api();
  CUdeviceptr managed = 0;
  const uint64_t managed_bytes = (4u << 20) + 3;
  CU_ASSERT(cu.cuMemAllocManaged(&managed, managed_bytes, CU_MEM_ATTACH_GLOBAL));
  device_allocs_.push_back(managed);
  void* host = nullptr;
  const uint64_t host_bytes = (1u << 20) + 5;
  CU_ASSERT(
      cu.cuMemHostAlloc(&host, host_bytes, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
  host_allocs_.push_back(host);
  CUdeviceptr mapped = 0;
  CU_ASSERT(cu.cuMemHostGetDevicePointer(&mapped, host, 0));
  const CUdeviceptr plain = alloc(100000);
  auto a = random_bytes(managed_bytes, 21), b = random_bytes(host_bytes, 22),
       c = random_bytes(100000, 23);
  put(managed, a.data(), a.size());
  put(mapped, b.data(), b.size());
  put(plain, c.data(), c.size());
  std::vector<std::pair<uint64_t, uint64_t>> lives = {
      {managed, managed_bytes}, {mapped + 1, host_bytes - 1}, {plain, 100000}};
  const uint64_t chunk = 65536;
  const uint64_t sbase = storage(StorageTier::kDevice, storage_bytes_for(lives, 0));
  auto regions = place(lives, sbase, chunk);
  round_trip(
      regions, chunk,
      {{0, 0, 1}, {0, managed_bytes - 1, 1}, {1, 70000, 3}, {1, host_bytes - 2, 1}, {2, 99999, 1}});
}

TEST_F(MemoryGpu, EverySingleByteChangeIsFound) {
  const uint64_t chunk = 65536, size = 4 * chunk + 100;
  const CUdeviceptr live = alloc(size);
  auto data = random_bytes(size, 31);
  put(live, data.data(), size);
  const uint64_t sbase = storage(StorageTier::kDevice, size);
  std::vector<CopyRegion> regions = {{live, sbase, size, 0}};
  std::vector<uint64_t> digests(5);
  KR_ASSERT_OK(ops_->snapshot(regions, chunk, digests));
  std::mt19937_64 rng(32);
  std::vector<uint64_t> positions = {0,   1,   7,     8,     15,         16,      17,
                                     511, 512, 65535, 65536, size - 100, size - 1};
  for (int i = 0; i < 40; ++i) positions.push_back(rng() % size);
  for (uint64_t pos : positions) {
    for (unsigned char flip : {0x01, 0x80}) {
      unsigned char byte = static_cast<unsigned char>(data[pos] ^ flip);
      put(live + pos, &byte, 1);
      std::vector<uint64_t> changed;
      KR_ASSERT_OK(ops_->find_changed(regions, chunk, digests, &changed));
      ASSERT_EQ(changed, std::vector<uint64_t>{pos / chunk}) << "byte " << pos;
      KR_ASSERT_OK(ops_->restore(regions, chunk, changed));
      ASSERT_EQ(get(live + pos, 1)[0], data[pos]);
    }
  }
  // Two 8-byte words of one chunk swapped (different values): found.
  auto swapped = data;
  std::swap_ranges(swapped.begin() + 64, swapped.begin() + 72, swapped.begin() + 4096);
  put(live, swapped.data(), 8192);
  std::vector<uint64_t> changed;
  KR_ASSERT_OK(ops_->find_changed(regions, chunk, digests, &changed));
  EXPECT_EQ(changed, std::vector<uint64_t>{0});
  KR_ASSERT_OK(ops_->restore(regions, chunk, changed));
  EXPECT_TRUE(get(live, size) == data);
}

// digest_live (--check-divergence) gives the snapshot's digests of unchanged memory, differs
// exactly at a changed chunk, and leaves the snapshot's digests on the GPU as they were: a
// find_changed after it still finds only that chunk.
TEST_F(MemoryGpu, DigestLiveMatchesTheSnapshotAndLeavesItsDigests) {
  const uint64_t chunk = 4096, size = 9 * chunk + 77;
  const CUdeviceptr live = alloc(size);
  auto data = random_bytes(size, 51);
  put(live, data.data(), size);
  std::vector<CopyRegion> regions = {{live, storage(StorageTier::kDevice, size), size, 3}};
  std::vector<uint64_t> snap(13), now(13);
  KR_ASSERT_OK(ops_->snapshot(regions, chunk, snap));
  KR_ASSERT_OK(ops_->digest_live(regions, chunk, now));
  for (uint64_t c = 3; c < 13; ++c) EXPECT_EQ(now[c], snap[c]) << "chunk " << c;
  unsigned char x = static_cast<unsigned char>(data[5 * chunk + 9] ^ 0x10);
  put(live + 5 * chunk + 9, &x, 1);
  KR_ASSERT_OK(ops_->digest_live(regions, chunk, now));
  for (uint64_t c = 3; c < 13; ++c) {
    if (c == 3 + 5) {
      EXPECT_NE(now[c], snap[c]);
    } else {
      EXPECT_EQ(now[c], snap[c]) << "chunk " << c;
    }
  }
  std::vector<uint64_t> changed;
  KR_ASSERT_OK(ops_->find_changed(regions, chunk, snap, &changed));
  EXPECT_EQ(changed, std::vector<uint64_t>{3 + 5});
  KR_ASSERT_OK(ops_->restore(regions, chunk, changed));
  EXPECT_TRUE(get(live, size) == data);
}

// Write-bounded snapshots: the baseline covers a large region (storage 0: never read), a partial
// snapshot of a few chunks of it runs between, and changed_since_baseline finds exactly the chunks
// written since; with update the baseline follows, so asking again finds nothing; a layout other
// than the baseline's is refused.
TEST_F(MemoryGpu, BaselineFindsWhatChangedAroundAPartialSnapshot) {
  const uint64_t chunk = 64 * 1024, size = 300 * chunk + 123;
  const CUdeviceptr live = alloc(size);
  auto data = random_bytes(size, 77);
  put(live, data.data(), size);
  const CUdeviceptr other = alloc(5000);
  const std::vector<unsigned char> zeros(5000, 0);
  put(other, zeros.data(), zeros.size());  // zeros: put back without a copy
  std::vector<CopyRegion> layout = {{other, 0, 5000, 0}, {live, 0, size, 1}};
  KR_ASSERT_OK(ops_->digest_baseline(layout, chunk));
  // A snapshot of chunks 10..11 of `live` (another layout) in between.
  std::vector<CopyRegion> part = {
      {live + 10 * chunk, storage(StorageTier::kDevice, 2 * chunk), 2 * chunk, 0}};
  std::vector<uint64_t> part_digests(2);
  KR_ASSERT_OK(ops_->snapshot(part, chunk, part_digests));
  // Writes: chunk 10 (saved), chunk 250, the last (partial) chunk, and the other region.
  unsigned char x = 0x5a;
  put(live + 10 * chunk + 1, &x, 1);
  put(live + 250 * chunk + 65535, &x, 1);
  put(live + size - 1, &x, 1);
  put(other + 4999, &x, 1);
  std::vector<uint64_t> changed, was_zero;
  KR_ASSERT_OK(ops_->changed_since_baseline(layout, chunk, /*update=*/true, &changed, &was_zero));
  const uint64_t last = 1 + (size - 1) / chunk;
  EXPECT_EQ(changed, (std::vector<uint64_t>{0, 1 + 10, 1 + 250, last}));
  EXPECT_EQ(was_zero, std::vector<uint64_t>{0});  // only `other` held zeros (a partial chunk)
  KR_ASSERT_OK(ops_->zero_chunks(layout, chunk, was_zero));
  EXPECT_EQ(get(other + 4999, 1)[0], 0);
  changed.clear();
  KR_ASSERT_OK(ops_->changed_since_baseline(layout, chunk, /*update=*/true, &changed, nullptr));
  EXPECT_EQ(changed, std::vector<uint64_t>{0});  // the zeros differ from the updated baseline
  changed.clear();
  KR_ASSERT_OK(ops_->changed_since_baseline(layout, chunk, /*update=*/true, &changed, nullptr));
  EXPECT_TRUE(changed.empty());  // the baseline followed
  // Without update the baseline stays: the same change is found twice.
  put(live + 7, &x, 1);
  for (int i = 0; i < 2; ++i) {
    changed.clear();
    KR_ASSERT_OK(ops_->changed_since_baseline(layout, chunk, /*update=*/false, &changed, nullptr));
    EXPECT_EQ(changed, std::vector<uint64_t>{1});
  }
  // The partial snapshot still restores its chunk 10 from its own digests.
  changed.clear();
  KR_ASSERT_OK(ops_->find_changed(part, chunk, part_digests, &changed));
  EXPECT_EQ(changed, std::vector<uint64_t>{0});
  KR_ASSERT_OK(ops_->restore(part, chunk, changed));
  EXPECT_EQ(get(live + 10 * chunk + 1, 1)[0], data[10 * chunk + 1]);
  // Another layout than the baseline's is refused.
  std::vector<CopyRegion> shifted = {{live, 0, size, 0}};
  changed.clear();
  EXPECT_FALSE(ops_->changed_since_baseline(shifted, chunk, true, &changed, nullptr).ok());
}

TEST_F(MemoryGpu, DigestsFromAnotherSnapshotAreUploaded) {
  const uint64_t chunk = 4096;
  const CUdeviceptr a = alloc(50000), b = alloc(30000);
  auto da = random_bytes(50000, 41), db = random_bytes(30000, 42);
  put(a, da.data(), da.size());
  put(b, db.data(), db.size());
  std::vector<CopyRegion> ra = {{a, storage(StorageTier::kDevice, 50000), 50000, 0}};
  std::vector<CopyRegion> rb = {{b, storage(StorageTier::kDevice, 30000), 30000, 0}};
  std::vector<uint64_t> dga(13), dgb(8);
  KR_ASSERT_OK(ops_->snapshot(ra, chunk, dga));
  KR_ASSERT_OK(ops_->snapshot(rb, chunk, dgb));  // the GPU now holds b's digests
  unsigned char x = static_cast<unsigned char>(da[20000] ^ 0xff);
  put(a + 20000, &x, 1);
  std::vector<uint64_t> changed;
  KR_ASSERT_OK(ops_->find_changed(ra, chunk, dga, &changed));
  EXPECT_EQ(changed, std::vector<uint64_t>{20000 / chunk});
  KR_ASSERT_OK(ops_->restore(ra, chunk, changed));
  EXPECT_TRUE(get(a, da.size()) == da);
  // And b's digests, now replaced on the GPU, still work from the caller's span.
  changed.clear();
  KR_ASSERT_OK(ops_->find_changed(rb, chunk, dgb, &changed));
  EXPECT_TRUE(changed.empty());
}

TEST_F(MemoryGpu, RestoreListsChangeBetweenCalls) {
  const uint64_t chunk = 4096, size = 40 * chunk + 9;
  const CUdeviceptr live = alloc(size);
  auto data = random_bytes(size, 51);
  put(live, data.data(), size);
  std::vector<CopyRegion> regions = {{live, storage(StorageTier::kDevice, size), size, 0}};
  std::vector<uint64_t> digests(41);
  KR_ASSERT_OK(ops_->snapshot(regions, chunk, digests));
  for (const std::vector<uint64_t>& list :
       {std::vector<uint64_t>{3, 4, 40}, std::vector<uint64_t>{40, 0, 7, 7},
        std::vector<uint64_t>{3, 4, 40}}) {
    auto junk = random_bytes(size, 52 + list.size());
    put(live, junk.data(), size);
    KR_ASSERT_OK(ops_->restore(regions, chunk, list));
    auto now = get(live, size);
    for (uint64_t c = 0; c < 41; ++c) {
      const bool listed = std::find(list.begin(), list.end(), c) != list.end();
      const uint64_t len = std::min(chunk, size - c * chunk);
      const bool same = std::memcmp(now.data() + c * chunk, data.data() + c * chunk, len) == 0;
      EXPECT_EQ(same, listed) << "chunk " << c;
    }
  }
}

TEST_F(MemoryGpu, WorksWhenAnotherContextIsCurrent) {
  const uint64_t chunk = 4096, size = 10000;
  const CUdeviceptr live = alloc(size);
  auto data = random_bytes(size, 61);
  put(live, data.data(), size);
  std::vector<CopyRegion> regions = {{live, storage(StorageTier::kDevice, size), size, 0}};
  std::vector<uint64_t> digests(3);
  CU_ASSERT(drv::api().cuCtxSetCurrent(nullptr));
  Status s = ops_->snapshot(regions, chunk, digests);
  CUcontext current = reinterpret_cast<CUcontext>(1);
  drv::api().cuCtxGetCurrent(&current);
  drv::api().cuCtxSetCurrent(ctx_);
  KR_ASSERT_OK(s);
  EXPECT_EQ(current, nullptr) << "the caller's (empty) current context was not restored";
  EXPECT_TRUE(get(regions[0].storage, size) == data);
}

TEST_F(MemoryGpu, RejectsBadArguments) {
  const CUdeviceptr live = alloc(10000);
  const uint64_t sbase = storage(StorageTier::kDevice, 10000);
  std::vector<CopyRegion> regions = {{live, sbase, 10000, 0}};
  std::vector<uint64_t> digests(3);
  EXPECT_EQ(ops_->snapshot(regions, 1000, digests).code(), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ops_->snapshot(regions, 128, digests).code(), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  std::vector<uint64_t> short_digests(2);
  EXPECT_EQ(ops_->snapshot(regions, 4096, short_digests).code(),
            KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  KR_ASSERT_OK(ops_->snapshot(regions, 4096, digests));
  std::vector<uint64_t> outside = {3};
  EXPECT_EQ(ops_->restore(regions, 4096, outside).code(), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  std::vector<CopyRegion> overlapping = {{live, sbase, 5000, 0},
                                         {live + 5000, sbase + 5120, 5000, 1}};
  EXPECT_EQ(ops_->snapshot(overlapping, 4096, digests).code(),
            KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  // Still usable afterwards.
  std::vector<uint64_t> changed;
  KR_ASSERT_OK(ops_->find_changed(regions, 4096, digests, &changed));
  EXPECT_TRUE(changed.empty());
}

TEST_F(MemoryGpu, StorageTiersAndBudgets) {
  size_t free = 0, total = 0;
  CU_ASSERT(drv::api().cuMemGetInfo(&free, &total));
  const uint64_t avail = ops_->storage_available(StorageTier::kDevice);
  EXPECT_GT(avail, 0u);
  EXPECT_LE(avail + ops_->device_headroom(), free);
  EXPECT_EQ(ops_->device_headroom(), std::max<uint64_t>(512ull << 20, total / 20));
  EXPECT_GT(ops_->storage_available(StorageTier::kPinnedHost), 0u);

  setenv("KREPLAY_PINNED_BUDGET", "3M", 1);
  setenv("KREPLAY_DEVICE_HEADROOM", "3G", 1);
  auto budgeted = MemoryOps::create(ctx_, dev_);
  unsetenv("KREPLAY_PINNED_BUDGET");
  unsetenv("KREPLAY_DEVICE_HEADROOM");
  ASSERT_TRUE(budgeted.ok());
  auto& ops = **budgeted;
  EXPECT_EQ(ops.device_headroom(), 3ull << 30);
  EXPECT_EQ(ops.storage_available(StorageTier::kPinnedHost), 3u << 20);
  auto two = ops.allocate_storage(StorageTier::kPinnedHost, 2u << 20);
  ASSERT_TRUE(two.ok()) << two.status().message();
  EXPECT_EQ(ops.storage_available(StorageTier::kPinnedHost), 1u << 20);
  auto more = ops.allocate_storage(StorageTier::kPinnedHost, 2u << 20);
  EXPECT_EQ(more.status().code(), KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES);
  ops.free_storage(*two);
  EXPECT_EQ(ops.storage_available(StorageTier::kPinnedHost), 3u << 20);
  auto huge = ops.allocate_storage(StorageTier::kDevice, uint64_t{1} << 50);
  EXPECT_EQ(huge.status().code(), KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES);
}

TEST_F(MemoryGpu, RegionLargerThanFourGiB) {
  const uint64_t size = (9ull << 29) + 37;  // 4.5 GiB + 37 bytes
  const uint64_t chunk = 65536;
  if (ops_->storage_available(StorageTier::kDevice) < 2 * size + (1ull << 30)) {
    GTEST_SKIP() << "needs 10 GiB of free device memory";
  }
  const CUdeviceptr live = alloc(size);
  const uint64_t sbase = storage(StorageTier::kDevice, size);
  KR_ASSERT_OK(ops_->fill_random(live, size, 71));
  std::vector<CopyRegion> regions = {{live, sbase, size, 0}};
  const uint64_t chunks = device::chunk_count(size, chunk);
  std::vector<uint64_t> digests(chunks);
  KR_ASSERT_OK(ops_->snapshot(regions, chunk, digests));
  auto diff = ops_->count_differences(live, sbase, size);
  ASSERT_TRUE(diff.ok());
  EXPECT_EQ(*diff, 0u);
  // The digest of a chunk past 4 GiB and of the last (37-byte) chunk match the reference.
  for (uint64_t c : {uint64_t{(4ull << 30) / chunk + 3}, chunks - 1}) {
    const uint64_t len = std::min(chunk, size - c * chunk);
    auto bytes = get(live + c * chunk, len);
    EXPECT_EQ(digests[c], reference_digest(bytes.data(), len)) << "chunk " << c;
  }
  const std::vector<uint64_t> offsets = {0, (4ull << 30) + 1, (4ull << 30) + chunk * 3 + 9,
                                         size - 1};
  for (uint64_t off : offsets) {
    unsigned char b = get(live + off, 1)[0];
    b = static_cast<unsigned char>(b ^ 0x3c);
    put(live + off, &b, 1);
  }
  std::vector<uint64_t> changed;
  KR_ASSERT_OK(ops_->find_changed(regions, chunk, digests, &changed));
  std::vector<uint64_t> expected;
  for (uint64_t off : offsets) expected.push_back(off / chunk);
  EXPECT_EQ(changed, expected);
  KR_ASSERT_OK(ops_->restore(regions, chunk, changed));
  diff = ops_->count_differences(live, sbase, size);
  ASSERT_TRUE(diff.ok());
  EXPECT_EQ(*diff, 0u);
}

TEST_F(MemoryGpu, TestHelpersWork) {
  const CUdeviceptr a = alloc(1000003), b = alloc(1000003);
  KR_ASSERT_OK(ops_->fill_random(a, 1000003, 5));
  KR_ASSERT_OK(ops_->fill_random(b, 1000003, 5));
  auto x = get(a, 1000003);
  EXPECT_GT(std::count(x.begin(), x.end(), 0), 0);
  EXPECT_LT(std::count(x.begin(), x.end(), 0), 1000003 / 128);  // random, not zeros
  auto same = ops_->count_differences(a, b, 1000003);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(*same, 0u);
  unsigned char z[3] = {static_cast<unsigned char>(x[5] ^ 1), static_cast<unsigned char>(x[6] ^ 1),
                        0};
  put(b + 5, z, 2);
  put(b + 1000002, &z[2], 1);
  auto three = ops_->count_differences(a, b, 1000003);
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(*three, x[1000002] == 0 ? 2u : 3u);
}

}  // namespace
}  // namespace kreplay::cuda
