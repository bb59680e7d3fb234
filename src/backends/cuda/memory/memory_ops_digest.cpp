// MemoryOps::digest_live: the snapshot's per-chunk digest of live memory, without the copy
// (device::Device::digest_live; the engine calls it after every pass under --check-divergence).
// The digests go to buffers of their own: the snapshot's, on the GPU and in the pinned shadow,
// stay as snapshot() left them for find_changed.
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
