#include "backends/cuda/memory/memory_ops.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>

#include "backends/cuda/internal_guard.hpp"
#include "backends/cuda/memory/driver.hpp"
#include "backends/cuda/memory/memory_ops_internal.hpp"
#include "common/env.hpp"
#include "common/logging.hpp"
#include "common/util.hpp"

namespace kreplay::cuda {

// The kernels (memory_kernels.cu), embedded by the build (memory_fatbin.cpp, generated).
extern const unsigned char kMemoryFatbin[];
extern const uint64_t kMemoryFatbinSize;

namespace {

using memory_layout::RegionDesc;
namespace drv = memdrv;
using memops::check_chunk_bytes;
using memops::CtxScope;

constexpr uint64_t kMinHeadroom = 512ull << 20;

uint32_t alignment_of(uint64_t address) {
  if (address == 0) return 16;
  return static_cast<uint32_t>(std::min<uint64_t>(16, address & (~address + 1)));
}

// Half of MemAvailable, in bytes; 0 when /proc/meminfo cannot be read.
uint64_t half_mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024 / 2;
  }
  return 0;
}

std::optional<uint64_t> env_bytes(const char* name) {
  auto text = env::get(name);
  if (!text || text->empty()) return std::nullopt;
  uint64_t value = 0;
  if (!env::parse_bytes(*text, &value)) {
    KR_WARN_ONCE(name, "{}='{}' is not a byte size (e.g. 2G, 512M); ignoring it", name, *text);
    return std::nullopt;
  }
  return value;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Construction
// ---------------------------------------------------------------------------------------------

MemoryOps::MemoryOps(CUcontext ctx, CUdevice dev) : ctx_(ctx), dev_(dev) {}

Result<std::unique_ptr<MemoryOps>> MemoryOps::create(CUcontext ctx, CUdevice dev) {
  RETURN_IF_ERROR(drv::init());
  if (ctx == nullptr) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "MemoryOps needs a CUDA context");
  }
  InternalScope internal;
  std::unique_ptr<MemoryOps> ops(new MemoryOps(ctx, dev));
  const auto& cu = drv::api();
  int sms = 0;
  KR_MEM_CU(cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  ops->sm_count_ = static_cast<uint32_t>(std::max(sms, 1));
  int l2 = 0;
  KR_MEM_CU(cu.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev));
  ops->l2_bytes_ = static_cast<uint64_t>(std::max(l2, 0));
  size_t total = 0;
  KR_MEM_CU(cu.cuDeviceTotalMem(&total, dev));
  ops->total_memory_ = total;
  ops->headroom_ = env_bytes("KREPLAY_DEVICE_HEADROOM")
                       .value_or(std::max<uint64_t>(kMinHeadroom, ops->total_memory_ / 20));
  if (auto budget = env_bytes("KREPLAY_PINNED_BUDGET")) {
    ops->pinned_budget_set_ = true;
    ops->pinned_budget_ = *budget;
  }
  return ops;
}

MemoryOps::~MemoryOps() {
  if (!drv::init().ok()) return;
  InternalScope internal;
  std::lock_guard lock(mu_);
  CtxScope scope(ctx_);
  if (!scope.status().ok()) return;  // the context is gone, and everything in it
  const auto& cu = drv::api();
  if (stream_ != nullptr) cu.cuStreamSynchronize(stream_);
  for (DeviceBuffer* b :
       {&d_regions_, &d_digests_, &d_bits_, &d_chunks_, &d_count_, &d_signal_, &d_tiny_}) {
    if (b->ptr != 0) cu.cuMemFree(b->ptr);
  }
  for (HostBuffer* b : {&h_stage_, &h_digests_, &h_bits_, &h_count_, &h_flag_}) {
    if (b->ptr != nullptr) cu.cuMemFreeHost(b->ptr);
  }
  if (kernel_start_ != nullptr) cu.cuEventDestroy(kernel_start_);
  if (kernel_end_ != nullptr) cu.cuEventDestroy(kernel_end_);
  if (stream_ != nullptr) cu.cuStreamDestroy(stream_);
  if (module_ != nullptr) cu.cuModuleUnload(module_);
}

Status MemoryOps::init() {
  InternalScope internal;
  std::lock_guard lock(mu_);
  CtxScope scope(ctx_);
  RETURN_IF_ERROR(scope.status());
  return ensure_loaded_locked();
}

Result<CUstream> MemoryOps::stream() {
  RETURN_IF_ERROR(init());
  return stream_;
}

void MemoryOps::set_tuning(const Tuning& tuning) {
  std::lock_guard lock(mu_);
  tuning_ = tuning;
}

void MemoryOps::set_kernel_timing(bool on) {
  std::lock_guard lock(mu_);
  kernel_timing_ = on;
  timed_ = false;
}

double MemoryOps::last_kernel_ms() {
  InternalScope internal;
  std::lock_guard lock(mu_);
  if (!timed_) return 0;
  CtxScope scope(ctx_);
  float ms = 0;
  if (!scope.status().ok() ||
      drv::api().cuEventElapsedTime(&ms, kernel_start_, kernel_end_) != CUDA_SUCCESS) {
    return 0;
  }
  return ms;
}

Status MemoryOps::time_begin_locked() {
  timed_ = false;
  if (!kernel_timing_) return Status::Ok();
  const auto& cu = drv::api();
  if (kernel_start_ == nullptr) KR_MEM_CU(cu.cuEventCreate(&kernel_start_, CU_EVENT_DEFAULT));
  if (kernel_end_ == nullptr) KR_MEM_CU(cu.cuEventCreate(&kernel_end_, CU_EVENT_DEFAULT));
  KR_MEM_CU(cu.cuEventRecord(kernel_start_, stream_));
  return Status::Ok();
}

Status MemoryOps::time_end_locked() {
  if (!kernel_timing_) return Status::Ok();
  KR_MEM_CU(drv::api().cuEventRecord(kernel_end_, stream_));
  timed_ = true;
  return Status::Ok();
}

Status MemoryOps::ensure_loaded_locked() {
  if (loaded_) return Status::Ok();
  const auto& cu = drv::api();
  CUmodule module = nullptr;
  KR_MEM_CU(cu.cuModuleLoadData(&module, kMemoryFatbin));
  auto get = [&](const char* name, Kernel* k) -> Status {
    RETURN_IF_ERROR(drv::check(cu.cuModuleGetFunction(&k->fn, module, name),
                               fmt::format("cuModuleGetFunction({})", name).c_str()));
    int blocks = 0;
    RETURN_IF_ERROR(drv::check(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                                   &blocks, k->fn, memory_layout::kBlockThreads, 0),
                               "cuOccupancyMaxActiveBlocksPerMultiprocessor"));
    k->blocks_per_sm = static_cast<uint32_t>(std::max(blocks, 1));
    return Status::Ok();
  };
  Status s = get("kreplay_mem_snapshot_u4", &snapshot_[0]);
  if (s.ok()) s = get("kreplay_mem_snapshot_u8", &snapshot_[1]);
  if (s.ok()) s = get("kreplay_mem_find_changed_u4", &find_changed_[0]);
  if (s.ok()) s = get("kreplay_mem_find_changed_u8", &find_changed_[1]);
  if (s.ok()) s = get("kreplay_mem_digest_u4", &digest_[0]);
  if (s.ok()) s = get("kreplay_mem_digest_u8", &digest_[1]);
  if (s.ok()) s = get("kreplay_mem_restore_u4", &restore_[0]);
  if (s.ok()) s = get("kreplay_mem_restore_u8", &restore_[1]);
  if (s.ok()) s = get("kreplay_mem_fill_random", &fill_);
  if (s.ok()) s = get("kreplay_mem_count_diff", &diff_);
  if (s.ok()) s = get("kreplay_mem_flush_caches", &flush_);
  CUstream stream = nullptr;
  if (s.ok()) s = drv::check(cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  if (!s.ok()) {
    cu.cuModuleUnload(module);
    return s;
  }
  module_ = module;
  stream_ = stream;
  loaded_ = true;
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Buffers, uploads, launches
// ---------------------------------------------------------------------------------------------

Status MemoryOps::ensure_device(DeviceBuffer* buf, uint64_t bytes) {
  if (buf->bytes >= bytes) return Status::Ok();
  const auto& cu = drv::api();
  uint64_t want = std::max<uint64_t>({bytes, buf->bytes + buf->bytes / 2, 4096});
  if (buf->ptr != 0) {
    RETURN_IF_ERROR(sync_locked());  // queued work may still read the old buffer
    cu.cuMemFree(buf->ptr);
    *buf = {};
  }
  CUdeviceptr p = 0;
  KR_MEM_CU(cu.cuMemAlloc(&p, want));
  *buf = {p, want};
  return Status::Ok();
}

Status MemoryOps::ensure_host(HostBuffer* buf, uint64_t bytes, bool mapped) {
  if (buf->bytes >= bytes) return Status::Ok();
  const auto& cu = drv::api();
  uint64_t want = std::max<uint64_t>({bytes, buf->bytes + buf->bytes / 2, 4096});
  if (buf->ptr != nullptr) {
    RETURN_IF_ERROR(sync_locked());  // queued copies may still use the old buffer
    cu.cuMemFreeHost(buf->ptr);
    *buf = {};
  }
  void* p = nullptr;
  KR_MEM_CU(cu.cuMemHostAlloc(
      &p, want, CU_MEMHOSTALLOC_PORTABLE | (mapped ? CU_MEMHOSTALLOC_DEVICEMAP : 0u)));
  CUdeviceptr dev = 0;
  if (mapped) {
    if (Status s =
            drv::check(cu.cuMemHostGetDevicePointer(&dev, p, 0), "cuMemHostGetDevicePointer");
        !s.ok()) {
      cu.cuMemFreeHost(p);
      return s;
    }
  }
  *buf = {p, want, dev};
  return Status::Ok();
}

// Room for @p bytes in the pinned staging arena. Uploads queued earlier in the same call keep
// their bytes; when the arena must grow, the stream is drained first, so none are lost.
Result<void*> MemoryOps::stage_locked(uint64_t bytes) {
  const uint64_t aligned = (bytes + 255) / 256 * 256;
  if (stage_used_ + aligned > h_stage_.bytes) {
    RETURN_IF_ERROR(sync_locked());
    stage_used_ = 0;
    RETURN_IF_ERROR(ensure_host(&h_stage_, aligned));
  }
  void* p = static_cast<char*>(h_stage_.ptr) + stage_used_;
  stage_used_ += aligned;
  return p;
}

Status MemoryOps::upload_locked(CUdeviceptr dst, const void* src, uint64_t bytes) {
  if (bytes == 0) return Status::Ok();
  ASSIGN_OR_RETURN(void* staged, stage_locked(bytes));
  std::memcpy(staged, src, bytes);
  KR_MEM_CU(drv::api().cuMemcpyHtoDAsync(dst, staged, bytes, stream_));
  return Status::Ok();
}

Status MemoryOps::sync_locked() {
  if (stream_ == nullptr) return Status::Ok();
  KR_MEM_CU(drv::api().cuStreamSynchronize(stream_));
  stage_used_ = 0;
  return Status::Ok();
}

// A persistent grid: enough warps for every SM at the kernel's occupancy, never more warps than
// items, and the items split evenly over the rounds so that the last round is not a short one.
// A persistent grid: enough warps for every SM at the kernel's occupancy, never more warps than
// items, and the items split evenly over the rounds so that the last round is not a short one.
uint64_t MemoryOps::grid_blocks_locked(const Kernel& k, uint64_t warp_items, bool tuned) const {
  if (warp_items == 0) return 0;
  const uint64_t per_sm = tuned && tuning_.blocks_per_sm != 0
                              ? std::min(tuning_.blocks_per_sm, k.blocks_per_sm)
                              : k.blocks_per_sm;
  const uint64_t capacity = uint64_t{sm_count_} * per_sm * memory_layout::kWarpsPerBlock;
  const uint64_t rounds = (warp_items + capacity - 1) / capacity;
  const uint64_t warps = (warp_items + rounds - 1) / rounds;
  return (warps + memory_layout::kWarpsPerBlock - 1) / memory_layout::kWarpsPerBlock;
}

Status MemoryOps::launch_locked(const Kernel& k, uint64_t blocks, void* params) {
  if (blocks == 0) return Status::Ok();
  void* args[] = {params};
  KR_MEM_CU(drv::api().cuLaunchKernel(k.fn, static_cast<unsigned>(blocks), 1, 1,
                                      memory_layout::kBlockThreads, 1, 1, 0, stream_, args,
                                      nullptr));
  return Status::Ok();
}

// Builds the descriptors for @p regions and uploads them, unless the same regions and chunk size
// were uploaded last time.
Status MemoryOps::prepare_regions_locked(std::span<const device::CopyRegion> regions,
                                         uint64_t chunk_bytes) {
  if (regions_valid_ && chunk_bytes == cached_chunk_bytes_ &&
      regions.size() == cached_input_.size() &&
      (regions.empty() ||
       std::memcmp(regions.data(), cached_input_.data(), regions.size_bytes()) == 0)) {
    return Status::Ok();
  }
  regions_valid_ = false;
  ++regions_gen_;
  const uint32_t shift = static_cast<uint32_t>(std::countr_zero(chunk_bytes));
  std::vector<RegionDesc> descs;
  descs.reserve(regions.size());
  for (const auto& r : regions) {
    if (r.size == 0) continue;
    if (r.live == 0 || r.storage == 0) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   fmt::format("region of {} bytes at live {:#x} has a null live or storage "
                               "address",
                               r.size, r.live));
    }
    if (r.live + r.size < r.live || r.storage + r.size < r.storage ||
        r.first_chunk + device::chunk_count(r.size, chunk_bytes) < r.first_chunk) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "region range overflows 64 bits");
    }
    descs.push_back({r.live, r.storage, r.size, r.first_chunk, 0, alignment_of(r.live),
                     alignment_of(r.storage)});
  }
  auto by_chunk = [](const RegionDesc& a, const RegionDesc& b) {
    return a.first_chunk < b.first_chunk;
  };
  if (!std::is_sorted(descs.begin(), descs.end(), by_chunk)) {
    std::stable_sort(descs.begin(), descs.end(), by_chunk);
  }
  std::vector<ChunkRange> ranges;
  uint64_t dense = 0;
  for (auto& d : descs) {
    const uint64_t n = (d.size + chunk_bytes - 1) >> shift;
    if (!ranges.empty() && d.first_chunk < ranges.back().end) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   fmt::format("regions overlap in chunk numbering: chunk {} is claimed twice",
                               d.first_chunk));
    }
    d.dense_first = dense;
    dense += n;
    if (!ranges.empty() && ranges.back().end == d.first_chunk) {
      ranges.back().end += n;
    } else {
      ranges.push_back({d.first_chunk, d.first_chunk + n});
    }
  }
  if (!descs.empty()) {
    RETURN_IF_ERROR(ensure_device(&d_regions_, descs.size() * sizeof(RegionDesc)));
    RETURN_IF_ERROR(upload_locked(d_regions_.ptr, descs.data(), descs.size() * sizeof(RegionDesc)));
  }
  descs_ = std::move(descs);
  chunk_ranges_ = std::move(ranges);
  work_chunks_ = dense;
  chunk_end_ = chunk_ranges_.empty() ? 0 : chunk_ranges_.back().end;
  cached_input_.assign(regions.begin(), regions.end());
  cached_chunk_bytes_ = chunk_bytes;
  regions_valid_ = true;
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Storage
// ---------------------------------------------------------------------------------------------

uint64_t MemoryOps::storage_available(device::StorageTier tier) {
  if (tier == device::StorageTier::kPinnedHost) {
    std::lock_guard lock(mu_);
    if (pinned_budget_set_)
      return pinned_budget_ > pinned_held_ ? pinned_budget_ - pinned_held_ : 0;
    return half_mem_available();
  }
  InternalScope internal;
  std::lock_guard lock(mu_);
  CtxScope scope(ctx_);
  if (!scope.status().ok()) return 0;
  size_t free = 0, total = 0;
  if (drv::api().cuMemGetInfo(&free, &total) != CUDA_SUCCESS) return 0;
  return free > headroom_ ? free - headroom_ : 0;
}

uint64_t MemoryOps::free_device_bytes() {
  InternalScope internal;
  std::lock_guard lock(mu_);
  CtxScope scope(ctx_);
  if (!scope.status().ok()) return 0;
  size_t free = 0, total = 0;
  if (drv::api().cuMemGetInfo(&free, &total) != CUDA_SUCCESS) return 0;
  return free;
}

Result<device::Storage> MemoryOps::allocate_storage(device::StorageTier tier, uint64_t bytes) {
  if (bytes == 0) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "storage of 0 bytes");
  InternalScope internal;
  std::lock_guard lock(mu_);
  CtxScope scope(ctx_);
  RETURN_IF_ERROR(scope.status());
  const auto& cu = drv::api();
  if (tier == device::StorageTier::kDevice) {
    CUdeviceptr p = 0;
    RETURN_IF_ERROR(drv::check(cu.cuMemAlloc(&p, bytes),
                               fmt::format("cuMemAlloc({})", format_bytes(bytes)).c_str()));
    return device::Storage{p, bytes, tier, p};
  }
  if (pinned_budget_set_ && pinned_held_ + bytes > pinned_budget_) {
    return Error(
        KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES,
        fmt::format("{} of pinned storage would exceed KREPLAY_PINNED_BUDGET ({} held of "
                    "{})",
                    format_bytes(bytes), format_bytes(pinned_held_), format_bytes(pinned_budget_)));
  }
  void* host = nullptr;
  RETURN_IF_ERROR(drv::check(
      cu.cuMemHostAlloc(&host, bytes, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
      fmt::format("cuMemHostAlloc({})", format_bytes(bytes)).c_str()));
  CUdeviceptr mapped = 0;
  if (Status s =
          drv::check(cu.cuMemHostGetDevicePointer(&mapped, host, 0), "cuMemHostGetDevicePointer");
      !s.ok()) {
    cu.cuMemFreeHost(host);
    return s;
  }
  pinned_held_ += bytes;
  return device::Storage{mapped, bytes, tier, reinterpret_cast<uint64_t>(host)};
}

void MemoryOps::free_storage(const device::Storage& storage) {
  if (storage.size == 0 && storage.address == 0) return;
  InternalScope internal;
  std::lock_guard lock(mu_);
  CtxScope scope(ctx_);
  if (!scope.status().ok()) {
    KR_WARN("cannot free snapshot storage: {}", scope.status().message());
    return;
  }
  const auto& cu = drv::api();
  // The descriptors on the GPU may name the freed storage; never reuse them.
  regions_valid_ = false;
  Status s;
  if (storage.tier == device::StorageTier::kDevice) {
    s = drv::check(cu.cuMemFree(storage.handle != 0 ? storage.handle : storage.address),
                   "cuMemFree");
  } else {
    s = drv::check(cu.cuMemFreeHost(reinterpret_cast<void*>(storage.handle)), "cuMemFreeHost");
    pinned_held_ -= std::min(pinned_held_, storage.size);
  }
  if (!s.ok()) KR_WARN("freeing snapshot storage: {}", s.message());
}

// ---------------------------------------------------------------------------------------------
// snapshot / find_changed / restore
// ---------------------------------------------------------------------------------------------

Status MemoryOps::snapshot(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                           std::span<uint64_t> digests) {
  RETURN_IF_ERROR(check_chunk_bytes(chunk_bytes));
  InternalScope internal;
  std::lock_guard lock(mu_);
  CtxScope scope(ctx_);
  RETURN_IF_ERROR(scope.status());
  RETURN_IF_ERROR(ensure_loaded_locked());
  digest_ranges_.clear();  // d_digests_ is about to change
  Status s = [&]() -> Status {
    RETURN_IF_ERROR(prepare_regions_locked(regions, chunk_bytes));
    if (work_chunks_ == 0) return Status::Ok();
    if (digests.size() < chunk_end_) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   fmt::format("digest array holds {} entries; the regions need {}", digests.size(),
                               chunk_end_));
    }
    RETURN_IF_ERROR(ensure_device(&d_digests_, chunk_end_ * sizeof(uint64_t)));
    RETURN_IF_ERROR(ensure_host(&h_digests_, chunk_end_ * sizeof(uint64_t), /*mapped=*/true));
    memory_layout::ChunkParams p{};
    p.regions = reinterpret_cast<const RegionDesc*>(d_regions_.ptr);
    p.region_count = descs_.size();
    p.digests = reinterpret_cast<uint64_t*>(d_digests_.ptr);
    p.host_digests = reinterpret_cast<uint64_t*>(h_digests_.mapped);
    p.changed_bits = nullptr;
    p.chunk_shift = static_cast<uint32_t>(std::countr_zero(chunk_bytes));
    p.group_shift = chunk_bytes == 256 ? 4 : 5;
    const uint64_t per_warp = 32u >> p.group_shift;
    // The kernel writes every digest into the mapped shadow as it goes; what is left is copying
    // them into the caller's span. For a large snapshot the kernel signals when all but its last
    // rounds are done, and the host copies those digests while the GPU finishes.
    const auto& k = snapshot_[unroll_index()];
    const uint64_t items = (work_chunks_ + per_warp - 1) / per_warp;
    const uint64_t blocks = grid_blocks_locked(k, items, /*tuned=*/true);
    const uint64_t warps = blocks * memory_layout::kWarpsPerBlock;
    const uint64_t rounds = (items + warps - 1) / warps;
    p.work_begin = 0;
    p.work_end = work_chunks_;
    // Progress points, in rounds: R/2, 3R/4, 7R/8, ... never within the last round.
    std::vector<uint64_t> points;  // global chunk below which digests are done at each point
    if (tuning_.split_min_chunks != 0 && work_chunks_ >= tuning_.split_min_chunks && rounds > 1) {
      for (uint32_t k = 1; k <= tuning_.split_shift && points.size() < memory_layout::kMaxSignals;
           ++k) {
        const uint64_t at = rounds - std::max<uint64_t>(1, rounds >> k);
        if (p.signal_points > 0 && at * warps <= p.signal_items[p.signal_points - 1]) continue;
        p.signal_items[p.signal_points++] = at * warps;
        const uint64_t dense = std::min(work_chunks_, at * warps * per_warp);
        auto it =
            std::upper_bound(descs_.begin(), descs_.end(), dense,
                             [](uint64_t v, const RegionDesc& d) { return v < d.dense_first; });
        const RegionDesc& d = *(it - 1);
        points.push_back(d.first_chunk + (dense - d.dense_first));
      }
      const uint64_t words = memory_layout::kMaxSignals * sizeof(uint32_t);
      RETURN_IF_ERROR(ensure_device(&d_signal_, words));
      RETURN_IF_ERROR(ensure_host(&h_flag_, words, /*mapped=*/true));
      KR_MEM_CU(drv::api().cuMemsetD32Async(d_signal_.ptr, 0, memory_layout::kMaxSignals, stream_));
      if (++signal_epoch_ == 0) signal_epoch_ = 1;
      p.signal_warps = static_cast<uint32_t>(warps);
      p.signal_value = signal_epoch_;
      p.signal_count = reinterpret_cast<uint32_t*>(d_signal_.ptr);
      p.host_flag = reinterpret_cast<uint32_t*>(h_flag_.mapped);
    }
    RETURN_IF_ERROR(time_begin_locked());
    RETURN_IF_ERROR(launch_locked(k, blocks, &p));
    RETURN_IF_ERROR(time_end_locked());
    const auto* shadow = static_cast<const uint64_t*>(h_digests_.ptr);
    auto copy_out = [&](uint64_t lo, uint64_t hi) {
      for (const auto& r : chunk_ranges_) {
        const uint64_t b = std::max(r.begin, lo), e = std::min(r.end, hi);
        if (b < e) std::memcpy(digests.data() + b, shadow + b, (e - b) * sizeof(uint64_t));
      }
    };
    uint64_t copied = 0;
    // Copy each point's digests as its flag comes up. A kernel that ends (or fails) without
    // raising a flag is caught by polling the stream now and then.
    auto* flags = static_cast<uint32_t*>(h_flag_.ptr);
    for (size_t i = 0; i < points.size(); ++i) {
      std::atomic_ref<uint32_t> flag(flags[i]);
      bool ended = false;
      for (uint32_t spins = 1; flag.load(std::memory_order_acquire) != signal_epoch_; ++spins) {
        if (spins % 256 == 0) {
          const CUresult q = drv::api().cuStreamQuery(stream_);
          if (q == CUDA_SUCCESS) {
            ended = true;
            break;
          }
          if (q != CUDA_ERROR_NOT_READY) return drv::check(q, "cuStreamQuery");
        }
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      }
      if (ended && flag.load(std::memory_order_acquire) != signal_epoch_) break;
      copy_out(copied, points[i]);
      copied = points[i];
    }
    RETURN_IF_ERROR(sync_locked());
    copy_out(copied, chunk_end_);
    digest_ranges_ = chunk_ranges_;
    return Status::Ok();
  }();
  if (!s.ok()) {
    sync_locked().ok();  // leave nothing queued that reads the arena
    regions_valid_ = false;
  }
  return s;
}

Status MemoryOps::find_changed(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                               std::span<const uint64_t> digests, std::vector<uint64_t>* changed) {
  RETURN_IF_ERROR(check_chunk_bytes(chunk_bytes));
  if (changed == nullptr) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "find_changed needs an output vector");
  }
  InternalScope internal;
  std::lock_guard lock(mu_);
  CtxScope scope(ctx_);
  RETURN_IF_ERROR(scope.status());
  RETURN_IF_ERROR(ensure_loaded_locked());
  Status s = [&]() -> Status {
    RETURN_IF_ERROR(prepare_regions_locked(regions, chunk_bytes));
    if (work_chunks_ == 0) return Status::Ok();
    if (digests.size() < chunk_end_) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   fmt::format("digest array holds {} entries; the regions need {}", digests.size(),
                               chunk_end_));
    }
    // The digests on the GPU serve when every chunk range lies where they mirror the shadow and
    // the caller's digests equal the shadow there (the engine passes what snapshot() wrote).
    auto* shadow = static_cast<uint64_t*>(h_digests_.ptr);
    bool on_device = true;
    size_t v = 0;
    for (size_t i = 0; on_device && i < chunk_ranges_.size(); ++i) {
      const auto& r = chunk_ranges_[i];
      while (v < digest_ranges_.size() && digest_ranges_[v].end <= r.begin) ++v;
      on_device = v < digest_ranges_.size() && digest_ranges_[v].begin <= r.begin &&
                  r.end <= digest_ranges_[v].end &&
                  std::memcmp(digests.data() + r.begin, shadow + r.begin,
                              (r.end - r.begin) * sizeof(uint64_t)) == 0;
    }
    if (!on_device) {
      // Upload straight from the (pinned) shadow, which then mirrors the GPU copy again.
      digest_ranges_.clear();
      RETURN_IF_ERROR(ensure_device(&d_digests_, chunk_end_ * sizeof(uint64_t)));
      RETURN_IF_ERROR(ensure_host(&h_digests_, chunk_end_ * sizeof(uint64_t), /*mapped=*/true));
      shadow = static_cast<uint64_t*>(h_digests_.ptr);
      std::memcpy(shadow, digests.data(), chunk_end_ * sizeof(uint64_t));
      KR_MEM_CU(drv::api().cuMemcpyHtoDAsync(d_digests_.ptr, shadow, chunk_end_ * sizeof(uint64_t),
                                             stream_));
      digest_ranges_ = {ChunkRange{0, chunk_end_}};
    }
    const uint64_t words = (chunk_end_ + 31) / 32;
    RETURN_IF_ERROR(ensure_device(&d_bits_, words * sizeof(uint32_t)));
    RETURN_IF_ERROR(ensure_host(&h_bits_, words * sizeof(uint32_t)));
    KR_MEM_CU(drv::api().cuMemsetD32Async(d_bits_.ptr, 0, words, stream_));
    memory_layout::ChunkParams p{};
    p.regions = reinterpret_cast<const RegionDesc*>(d_regions_.ptr);
    p.region_count = descs_.size();
    p.work_begin = 0;
    p.work_end = work_chunks_;
    p.digests = reinterpret_cast<uint64_t*>(d_digests_.ptr);
    p.host_digests = nullptr;
    p.changed_bits = reinterpret_cast<uint32_t*>(d_bits_.ptr);
    p.chunk_shift = static_cast<uint32_t>(std::countr_zero(chunk_bytes));
    p.group_shift = chunk_bytes == 256 ? 4 : 5;
    const uint64_t per_warp = 32u >> p.group_shift;
    RETURN_IF_ERROR(time_begin_locked());
    const auto& k = find_changed_[unroll_index()];
    RETURN_IF_ERROR(
        launch_locked(k, grid_blocks_locked(k, (work_chunks_ + per_warp - 1) / per_warp), &p));
    RETURN_IF_ERROR(time_end_locked());
    KR_MEM_CU(
        drv::api().cuMemcpyDtoHAsync(h_bits_.ptr, d_bits_.ptr, words * sizeof(uint32_t), stream_));
    RETURN_IF_ERROR(sync_locked());
    const auto* bits = static_cast<const uint32_t*>(h_bits_.ptr);
    for (uint64_t w = 0; w < words; ++w) {
      for (uint32_t x = bits[w]; x != 0; x &= x - 1) {
        changed->push_back(w * 32 + static_cast<uint64_t>(std::countr_zero(x)));
      }
    }
    return Status::Ok();
  }();
  if (!s.ok()) {
    sync_locked().ok();
    regions_valid_ = false;
  }
  return s;
}

Status MemoryOps::restore(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                          std::span<const uint64_t> chunks) {
  RETURN_IF_ERROR(check_chunk_bytes(chunk_bytes));
  if (chunks.empty()) return Status::Ok();
  InternalScope internal;
  std::lock_guard lock(mu_);
  CtxScope scope(ctx_);
  RETURN_IF_ERROR(scope.status());
  RETURN_IF_ERROR(ensure_loaded_locked());
  Status s = [&]() -> Status {
    RETURN_IF_ERROR(prepare_regions_locked(regions, chunk_bytes));
    const uint32_t shift = static_cast<uint32_t>(std::countr_zero(chunk_bytes));
    if (!(chunks_valid_ && chunks_gen_ == regions_gen_ && chunks.size() == cached_chunks_.size() &&
          std::memcmp(chunks.data(), cached_chunks_.data(), chunks.size_bytes()) == 0)) {
      chunks_valid_ = false;
      // Every chunk must lie inside a region: a linear merge when sorted, else a search each.
      auto inside = [&](const RegionDesc& d, uint64_t c) {
        return c >= d.first_chunk && c < d.first_chunk + ((d.size + chunk_bytes - 1) >> shift);
      };
      auto bad = [&](uint64_t c) {
        return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                     fmt::format("chunk {} to restore lies in no region", c));
      };
      if (std::is_sorted(chunks.begin(), chunks.end())) {
        size_t r = 0;
        for (uint64_t c : chunks) {
          while (r < descs_.size() && !inside(descs_[r], c) && descs_[r].first_chunk <= c) ++r;
          if (r == descs_.size() || !inside(descs_[r], c)) return bad(c);
        }
      } else {
        for (uint64_t c : chunks) {
          auto it =
              std::upper_bound(descs_.begin(), descs_.end(), c,
                               [](uint64_t v, const RegionDesc& d) { return v < d.first_chunk; });
          if (it == descs_.begin() || !inside(*(it - 1), c)) return bad(c);
        }
      }
      RETURN_IF_ERROR(ensure_device(&d_chunks_, chunks.size_bytes()));
      RETURN_IF_ERROR(upload_locked(d_chunks_.ptr, chunks.data(), chunks.size_bytes()));
      cached_chunks_.assign(chunks.begin(), chunks.end());
      chunks_gen_ = regions_gen_;
      chunks_valid_ = true;
    }
    memory_layout::RestoreParams p{};
    p.regions = reinterpret_cast<const RegionDesc*>(d_regions_.ptr);
    p.region_count = descs_.size();
    p.chunks = reinterpret_cast<const uint64_t*>(d_chunks_.ptr);
    p.chunk_count = chunks.size();
    p.chunk_shift = shift;
    // One warp step moves 32 lanes x unroll x 16 bytes.
    const uint32_t step_shift = static_cast<uint32_t>(std::countr_zero(512u * unroll()));
    p.tile_shift = std::min(shift, step_shift);
    RETURN_IF_ERROR(time_begin_locked());
    const auto& k = restore_[unroll_index()];
    RETURN_IF_ERROR(launch_locked(
        k, grid_blocks_locked(k, uint64_t{chunks.size()} << (shift - p.tile_shift)), &p));
    RETURN_IF_ERROR(time_end_locked());
    return sync_locked();
  }();
  if (!s.ok()) {
    sync_locked().ok();
    regions_valid_ = false;
    chunks_valid_ = false;
  }
  return s;
}

Status MemoryOps::flush_caches() {
  InternalScope internal;
  std::lock_guard lock(mu_);
  CtxScope scope(ctx_);
  RETURN_IF_ERROR(scope.status());
  RETURN_IF_ERROR(ensure_loaded_locked());
  // 2x L2 (at least 1 MiB, should the attribute be 0), in 16-byte vectors.
  const uint64_t bytes = (std::max<uint64_t>(2 * l2_bytes_, uint64_t{1} << 20) + 15) & ~15ull;
  if (d_flush_.bytes < bytes) {
    RETURN_IF_ERROR(ensure_device(&d_flush_, bytes));
    KR_MEM_CU(drv::api().cuMemsetD8Async(d_flush_.ptr, 0, d_flush_.bytes, stream_));
  }
  memory_layout::FlushParams p{d_flush_.ptr, bytes,
                               reinterpret_cast<unsigned long long*>(d_flush_.ptr), ~0ull};
  RETURN_IF_ERROR(launch_locked(flush_, grid_blocks_locked(flush_, (bytes + 4095) / 4096), &p));
  // Complete before the pass's services start: the flush is never inside the counted region.
  return sync_locked();
}

// ---------------------------------------------------------------------------------------------
// Test and benchmark support
// ---------------------------------------------------------------------------------------------

Status MemoryOps::fill_random(CUdeviceptr dst, uint64_t bytes, uint64_t seed) {
  if (bytes == 0) return Status::Ok();
  InternalScope internal;
  std::lock_guard lock(mu_);
  CtxScope scope(ctx_);
  RETURN_IF_ERROR(scope.status());
  RETURN_IF_ERROR(ensure_loaded_locked());
  memory_layout::FillParams p{dst, bytes, seed};
  RETURN_IF_ERROR(launch_locked(fill_, grid_blocks_locked(fill_, (bytes + 4095) / 4096), &p));
  return sync_locked();
}

Status MemoryOps::tiny_launch() {
  InternalScope internal;
  std::lock_guard lock(mu_);
  CtxScope scope(ctx_);
  RETURN_IF_ERROR(scope.status());
  RETURN_IF_ERROR(ensure_loaded_locked());
  RETURN_IF_ERROR(ensure_device(&d_tiny_, 4096));
  memory_layout::FillParams p{d_tiny_.ptr, 4096, ++tiny_launches_};
  RETURN_IF_ERROR(launch_locked(fill_, 1, &p));
  return sync_locked();
}

Result<uint64_t> MemoryOps::count_differences(CUdeviceptr a, CUdeviceptr b, uint64_t bytes) {
  if (bytes == 0) return uint64_t{0};
  InternalScope internal;
  std::lock_guard lock(mu_);
  CtxScope scope(ctx_);
  RETURN_IF_ERROR(scope.status());
  RETURN_IF_ERROR(ensure_loaded_locked());
  RETURN_IF_ERROR(ensure_device(&d_count_, sizeof(uint64_t)));
  RETURN_IF_ERROR(ensure_host(&h_count_, sizeof(uint64_t)));
  KR_MEM_CU(drv::api().cuMemsetD8Async(d_count_.ptr, 0, sizeof(uint64_t), stream_));
  memory_layout::DiffParams p{a, b, bytes, reinterpret_cast<unsigned long long*>(d_count_.ptr)};
  RETURN_IF_ERROR(launch_locked(diff_, grid_blocks_locked(diff_, (bytes + 4095) / 4096), &p));
  KR_MEM_CU(drv::api().cuMemcpyDtoHAsync(h_count_.ptr, d_count_.ptr, sizeof(uint64_t), stream_));
  RETURN_IF_ERROR(sync_locked());
  uint64_t count = 0;
  std::memcpy(&count, h_count_.ptr, sizeof(count));
  return count;
}

}  // namespace kreplay::cuda
