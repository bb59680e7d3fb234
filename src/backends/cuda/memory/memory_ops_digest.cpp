// MemoryOps::digest_live: the snapshot's per-chunk digest of live memory, without the copy
// (device::Device::digest_live; the engine calls it after every pass under --check-divergence).
// The digests go to buffers of their own: the snapshot's, on the GPU and in the pinned shadow,
// stay as snapshot() left them for find_changed.
#include <algorithm>
#include <cstring>

#include "backends/cuda/internal_guard.hpp"
#include "backends/cuda/memory/memory_ops.hpp"
#include "backends/cuda/memory/memory_ops_internal.hpp"

namespace kreplay::cuda {

Status MemoryOps::digest_live(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                              std::span<uint64_t> digests) {
  RETURN_IF_ERROR(memops::check_chunk_bytes(chunk_bytes));
  InternalScope internal;
  std::lock_guard lock(mu_);
  memops::CtxScope scope(ctx_);
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
    const uint64_t bytes = chunk_end_ * sizeof(uint64_t);
    RETURN_IF_ERROR(ensure_device(&d_live_digests_, bytes));
    RETURN_IF_ERROR(ensure_host(&h_live_digests_, bytes, /*mapped=*/false));
    memory_layout::ChunkParams p{};
    p.regions = reinterpret_cast<const memory_layout::RegionDesc*>(d_regions_.ptr);
    p.region_count = descs_.size();
    p.work_begin = 0;
    p.work_end = work_chunks_;
    p.digests = reinterpret_cast<uint64_t*>(d_live_digests_.ptr);
    p.chunk_shift = static_cast<uint32_t>(std::countr_zero(chunk_bytes));
    p.group_shift = chunk_bytes == 256 ? 4 : 5;
    const uint64_t per_warp = 32u >> p.group_shift;
    const auto& k = digest_[unroll_index()];
    RETURN_IF_ERROR(
        launch_locked(k, grid_blocks_locked(k, (work_chunks_ + per_warp - 1) / per_warp), &p));
    KR_MEM_CU(
        memdrv::api().cuMemcpyDtoHAsync(h_live_digests_.ptr, d_live_digests_.ptr, bytes, stream_));
    RETURN_IF_ERROR(sync_locked());
    const auto* got = static_cast<const uint64_t*>(h_live_digests_.ptr);
    for (const auto& r : chunk_ranges_) {
      std::memcpy(digests.data() + r.begin, got + r.begin, (r.end - r.begin) * sizeof(uint64_t));
    }
    return Status::Ok();
  }();
  if (!s.ok()) {
    sync_locked().ok();
    regions_valid_ = false;
  }
  return s;
}

}  // namespace kreplay::cuda

namespace kreplay::cuda {

std::vector<device::CopyRegion> MemoryOps::live_only(std::span<const device::CopyRegion> regions) {
  std::vector<device::CopyRegion> out(regions.begin(), regions.end());
  for (auto& r : out) r.storage = r.live;
  return out;
}

Status MemoryOps::digest_baseline(std::span<const device::CopyRegion> regions,
                                  uint64_t chunk_bytes) {
  RETURN_IF_ERROR(memops::check_chunk_bytes(chunk_bytes));
  InternalScope internal;
  std::lock_guard lock(mu_);
  memops::CtxScope scope(ctx_);
  RETURN_IF_ERROR(scope.status());
  RETURN_IF_ERROR(ensure_loaded_locked());
  base_valid_ = false;
  const std::vector<device::CopyRegion> layout = live_only(regions);
  Status s = [&]() -> Status {
    RETURN_IF_ERROR(prepare_regions_locked(layout, chunk_bytes));
    if (work_chunks_ != 0) {
      RETURN_IF_ERROR(ensure_device(&d_base_digests_, chunk_end_ * sizeof(uint64_t)));
      memory_layout::ChunkParams p{};
      p.regions = reinterpret_cast<const memory_layout::RegionDesc*>(d_regions_.ptr);
      p.region_count = descs_.size();
      p.work_begin = 0;
      p.work_end = work_chunks_;
      p.digests = reinterpret_cast<uint64_t*>(d_base_digests_.ptr);
      p.chunk_shift = static_cast<uint32_t>(std::countr_zero(chunk_bytes));
      p.group_shift = chunk_bytes == 256 ? 4 : 5;
      const uint64_t per_warp = 32u >> p.group_shift;
      const auto& k = digest_[unroll_index()];
      RETURN_IF_ERROR(time_begin_locked());
      RETURN_IF_ERROR(
          launch_locked(k, grid_blocks_locked(k, (work_chunks_ + per_warp - 1) / per_warp), &p));
      RETURN_IF_ERROR(time_end_locked());
      RETURN_IF_ERROR(sync_locked());
    }
    base_layout_ = layout;
    base_chunk_bytes_ = chunk_bytes;
    base_valid_ = true;
    return Status::Ok();
  }();
  if (!s.ok()) {
    sync_locked().ok();
    regions_valid_ = false;
  }
  return s;
}

Status MemoryOps::changed_since_baseline(std::span<const device::CopyRegion> regions,
                                         uint64_t chunk_bytes, bool update,
                                         std::vector<uint64_t>* changed,
                                         std::vector<uint64_t>* was_zero) {
  RETURN_IF_ERROR(memops::check_chunk_bytes(chunk_bytes));
  if (changed == nullptr) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 "changed_since_baseline needs an output vector");
  }
  InternalScope internal;
  std::lock_guard lock(mu_);
  const std::vector<device::CopyRegion> layout = live_only(regions);
  if (!base_valid_ || chunk_bytes != base_chunk_bytes_ || layout.size() != base_layout_.size() ||
      (!layout.empty() &&
       std::memcmp(layout.data(), base_layout_.data(), layout.size() * sizeof(layout[0])) != 0)) {
    return Error(KREPLAY_STATUS_ERROR, "no digest baseline of this memory layout is kept");
  }
  memops::CtxScope scope(ctx_);
  RETURN_IF_ERROR(scope.status());
  RETURN_IF_ERROR(ensure_loaded_locked());
  Status s = [&]() -> Status {
    RETURN_IF_ERROR(prepare_regions_locked(layout, chunk_bytes));
    if (work_chunks_ == 0) return Status::Ok();
    const uint64_t words = (chunk_end_ + 31) / 32;
    RETURN_IF_ERROR(ensure_device(&d_bits_, words * sizeof(uint32_t)));
    RETURN_IF_ERROR(ensure_host(&h_bits_, words * sizeof(uint32_t)));
    KR_MEM_CU(memdrv::api().cuMemsetD32Async(d_bits_.ptr, 0, words, stream_));
    if (was_zero != nullptr) {
      RETURN_IF_ERROR(ensure_device(&d_zero_bits_, words * sizeof(uint32_t)));
      RETURN_IF_ERROR(ensure_host(&h_zero_bits_, words * sizeof(uint32_t)));
      KR_MEM_CU(memdrv::api().cuMemsetD32Async(d_zero_bits_.ptr, 0, words, stream_));
    }
    memory_layout::ChunkParams p{};
    p.regions = reinterpret_cast<const memory_layout::RegionDesc*>(d_regions_.ptr);
    p.region_count = descs_.size();
    p.work_begin = 0;
    p.work_end = work_chunks_;
    p.digests = reinterpret_cast<uint64_t*>(d_base_digests_.ptr);
    p.changed_bits = reinterpret_cast<uint32_t*>(d_bits_.ptr);
    p.update_digests = update ? 1u : 0u;
    p.zero_bits = was_zero != nullptr ? reinterpret_cast<uint32_t*>(d_zero_bits_.ptr) : nullptr;
    p.zero_digest_full = memory_layout::zero_digest(chunk_bytes);
    p.chunk_shift = static_cast<uint32_t>(std::countr_zero(chunk_bytes));
    p.group_shift = chunk_bytes == 256 ? 4 : 5;
    const uint64_t per_warp = 32u >> p.group_shift;
    const auto& k = find_changed_[unroll_index()];
    RETURN_IF_ERROR(time_begin_locked());
    RETURN_IF_ERROR(
        launch_locked(k, grid_blocks_locked(k, (work_chunks_ + per_warp - 1) / per_warp), &p));
    RETURN_IF_ERROR(time_end_locked());
    KR_MEM_CU(memdrv::api().cuMemcpyDtoHAsync(h_bits_.ptr, d_bits_.ptr, words * sizeof(uint32_t),
                                              stream_));
    if (was_zero != nullptr) {
      KR_MEM_CU(memdrv::api().cuMemcpyDtoHAsync(h_zero_bits_.ptr, d_zero_bits_.ptr,
                                                words * sizeof(uint32_t), stream_));
    }
    RETURN_IF_ERROR(sync_locked());
    const auto* bits = static_cast<const uint32_t*>(h_bits_.ptr);
    const auto* zbits = static_cast<const uint32_t*>(h_zero_bits_.ptr);
    for (uint64_t w = 0; w < words; ++w) {
      for (uint32_t x = bits[w]; x != 0; x &= x - 1)
        changed->push_back(w * 32 + static_cast<uint64_t>(std::countr_zero(x)));
      if (was_zero == nullptr) continue;
      for (uint32_t x = zbits[w]; x != 0; x &= x - 1)
        was_zero->push_back(w * 32 + static_cast<uint64_t>(std::countr_zero(x)));
    }
    return Status::Ok();
  }();
  if (!s.ok()) {
    sync_locked().ok();
    regions_valid_ = false;
    base_valid_ = false;
  }
  return s;
}

}  // namespace kreplay::cuda

namespace kreplay::cuda {

Status MemoryOps::zero_chunks(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                              std::span<const uint64_t> chunks) {
  RETURN_IF_ERROR(memops::check_chunk_bytes(chunk_bytes));
  if (chunks.empty()) return Status::Ok();
  InternalScope internal;
  std::lock_guard lock(mu_);
  memops::CtxScope scope(ctx_);
  RETURN_IF_ERROR(scope.status());
  RETURN_IF_ERROR(ensure_loaded_locked());
  // Runs of adjacent chunks of one region, each one memset.
  std::vector<device::CopyRegion> sorted(regions.begin(), regions.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.first_chunk < b.first_chunk; });
  std::vector<uint64_t> list(chunks.begin(), chunks.end());
  std::sort(list.begin(), list.end());
  Status s = [&]() -> Status {
    size_t ri = 0;
    for (size_t i = 0; i < list.size();) {
      while (ri + 1 < sorted.size() && sorted[ri + 1].first_chunk <= list[i]) ++ri;
      const auto& r = sorted[ri];
      const uint64_t n = device::chunk_count(r.size, chunk_bytes);
      if (list[i] < r.first_chunk || list[i] >= r.first_chunk + n) {
        return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                     fmt::format("chunk {} lies in no region", list[i]));
      }
      size_t j = i + 1;
      while (j < list.size() && list[j] == list[j - 1] + 1 && list[j] < r.first_chunk + n) ++j;
      const uint64_t off = (list[i] - r.first_chunk) * chunk_bytes;
      const uint64_t end = std::min(r.size, (list[j - 1] - r.first_chunk + 1) * chunk_bytes);
      KR_MEM_CU(memdrv::api().cuMemsetD8Async(r.live + off, 0, end - off, stream_));
      i = j;
    }
    return sync_locked();
  }();
  if (!s.ok()) sync_locked().ok();
  return s;
}

}  // namespace kreplay::cuda
