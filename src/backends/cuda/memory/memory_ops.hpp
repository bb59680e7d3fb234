// Snapshot storage and save/restore on a CUDA GPU: the memory half of device::Device for the
// CUDA backend (DESIGN.md §3). One batched kernel launch per operation, whatever the number of
// regions:
//
//   snapshot      copies every region live -> storage with 16-byte loads and stores and computes
//                 one 64-bit digest per chunk (memory_layout.hpp defines it) in the same pass;
//                 the digests stay on the GPU and are also written into mapped pinned memory,
//                 from which the host copies them to the caller's span while the kernel is still
//                 running (it raises progress flags at 1/2, 3/4, 7/8, 15/16 of its rounds).
//   find_changed  recomputes every chunk's digest over live memory, compares it with the digest
//                 kept on the GPU (no upload when the caller passes the span snapshot filled) and
//                 returns the changed global chunk indices, sorted.
//   restore       copies only the listed chunks storage -> live (the list is uploaded once and
//                 reused while the caller passes the same list, as the engine does pass after
//                 pass).
//
// Every call returns when its work is complete (it synchronizes kreplay's own stream).
//
// Measured on an H200 (bench/cuda/snapshot_bench, 64 KiB chunks): snapshot 0.90-0.93 of
// cuMemcpyDtoD's throughput for 1-16 GiB (its kernel alone 0.93); find_changed reads 4.2 TB/s;
// restoring 256 MiB of changed chunks of a 16 GiB footprint takes 1.15x a 256 MiB cuMemcpyDtoD.
//
// Driver API only, through memdrv (driver.hpp): nothing here initializes the CUDA runtime, so the
// calls are safe inside CUPTI callbacks of any application, cuLaunchKernel's included. Every
// driver call is made under a kreplay::cuda::InternalScope, so kreplay's interceptor ignores it,
// and with the MemoryOps' context current (pushed and popped when the caller's thread has another
// one). The kernels come from a fatbin embedded at build time (sm_90 SASS + compute_90 PTX),
// loaded into the context on first use, and run on a CU_STREAM_NON_BLOCKING stream created then.
//
// Threading: one MemoryOps per CUDA context (per device for the primary context). The engine
// serializes replay windows per device, so snapshot/find_changed/restore are never concurrent for
// one device; each public method also takes an internal mutex, so a stray concurrent call is
// serialized rather than racing. The caller must have drained the device (no application work
// may touch the regions while a call runs). Destroy the MemoryOps before its context.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "backends/cuda/memory/memory_layout.hpp"
#include "common/status.hpp"
#include "device/device.hpp"

namespace kreplay::cuda {

class MemoryOps {
 public:
  /// Knobs for the benchmark's sweeps; the defaults are what kreplay uses.
  struct Tuning {
    uint32_t unroll = 8;  ///< 16-byte vectors in flight per lane: 4 or 8
    /// Resident blocks per SM of the snapshot kernel (0 = its occupancy maximum, 3); the others
    /// always run at their maximum. 2 measured fastest on the H200 (1, 4 and 16 GiB).
    uint32_t blocks_per_sm = 2;
    /// Snapshots of at least this many chunks signal the host (through mapped memory) when
    /// 1/2, 3/4, 7/8, ... (up to 1 - 1/2^split_shift, and never the last round) of their rounds
    /// are done, and the host copies those digests to the caller while the GPU goes on.
    /// 0 = no signals: every digest is copied after the kernel.
    uint64_t split_min_chunks = 2048;
    uint32_t split_shift = 4;
  };

  /// A MemoryOps for @p ctx on @p dev. Resolves the driver (memdrv::init) and reads the device's
  /// attributes and the environment (KREPLAY_DEVICE_HEADROOM, KREPLAY_PINNED_BUDGET); loads
  /// nothing into the context yet. NOT_AVAILABLE when there is no driver or device.
  static Result<std::unique_ptr<MemoryOps>> create(CUcontext ctx, CUdevice dev);

  /// Frees kreplay's buffers, stream and module in the context (errors ignored: at process exit
  /// the context may already be gone). Storage handed out by allocate_storage is the caller's to
  /// free before this.
  ~MemoryOps();
  MemoryOps(const MemoryOps&) = delete;
  MemoryOps& operator=(const MemoryOps&) = delete;

  /// Load the kernels and create the stream now rather than on first use (optional).
  Status init();

  // --- device::Device's storage operations --------------------------------------------------

  /// Bytes of new storage the tier can provide now. kDevice: cuMemGetInfo's free bytes minus the
  /// application's headroom (KREPLAY_DEVICE_HEADROOM bytes, e.g. "2G"; default max(512 MiB, 5%
  /// of the device's memory)). kPinnedHost: KREPLAY_PINNED_BUDGET minus the pinned storage held,
  /// or, when unset, half of MemAvailable in /proc/meminfo. 0 on any error.
  uint64_t storage_available(device::StorageTier tier);

  /// cuMemGetInfo's free bytes (0 on any error).
  uint64_t free_device_bytes();

  /// kDevice: cuMemAlloc. kPinnedHost: cuMemHostAlloc(DEVICEMAP | PORTABLE); the address is the
  /// mapped device pointer, so the kernels copy to and from it directly. OUT_OF_RESOURCES when
  /// the memory is not there (or the pinned budget set by KREPLAY_PINNED_BUDGET would be
  /// exceeded).
  Result<device::Storage> allocate_storage(device::StorageTier tier, uint64_t bytes);

  /// Frees storage from allocate_storage (errors are logged, not returned).
  void free_storage(const device::Storage& storage);

  // --- device::Device's snapshot operations (same contracts) ----------------------------------
  // @p chunk_bytes must be a power of two >= 256. Regions may come in any order and have any
  // size (0 bytes: ignored) and alignment; their chunk ranges [first_chunk, first_chunk +
  // chunk_count) must not overlap. INVALID_ARGUMENT otherwise, before any work is queued.

  /// Copy every region live -> storage and write the digest of every chunk into @p digests
  /// (indexed by global chunk; at least as long as the largest chunk index + 1).
  Status snapshot(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                  std::span<uint64_t> digests);

  /// Append to @p changed, in ascending order, every global chunk index whose live bytes no longer
  /// have the digest in @p digests. When @p digests holds what the last snapshot() wrote (the
  /// engine's case), the copy kept on the GPU is used; otherwise the span is uploaded first.
  Status find_changed(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                      std::span<const uint64_t> digests, std::vector<uint64_t>* changed);

  /// Write the digest of every chunk of live memory into @p digests, as snapshot() does but
  /// without copying (device::Device::digest_live: --check-divergence after every pass). Leaves
  /// the snapshot's digests on the GPU untouched (memory_ops_digest.cpp).
  Status digest_live(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                     std::span<uint64_t> digests);

  /// device::Device::digest_baseline: the digest of every chunk of @p regions' live memory into a
  /// baseline kept on the GPU (storage addresses are not read; 0 is accepted). One digest kernel
  /// reads the regions once (memory_ops_digest.cpp).
  Status digest_baseline(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes);
  /// device::Device::changed_since_baseline: one kernel recomputes every chunk's digest, compares
  /// it with the baseline on the GPU and (with @p update) stores the new one where it differs;
  /// the changed chunks come back as a bitmap. ERROR when the regions are not the baseline's.
  Status changed_since_baseline(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                                bool update, std::vector<uint64_t>* changed,
                                std::vector<uint64_t>* was_zero);
  /// device::Device::zero_chunks: cuMemsetD8Async over each run of adjacent listed chunks, on
  /// kreplay's stream; returns once done.
  Status zero_chunks(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                     std::span<const uint64_t> chunks);

  /// Copy the listed chunks (global indices, each inside a region; any order, duplicates allowed)
  /// storage -> live.
  Status restore(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                 std::span<const uint64_t> chunks);

  /// Write back and invalidate the caches (device::Device::flush_caches): one kernel of
  /// kreplay's own reads a zeroed scratch buffer of 2x the L2 size (allocated on first use and
  /// kept) on kreplay's stream; returns once it completed. OUT_OF_RESOURCES when the scratch
  /// cannot be allocated.
  Status flush_caches();
  /// The device's L2 size (CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).
  uint64_t l2_bytes() const { return l2_bytes_; }

  // --- For benchmarks and tests ---------------------------------------------------------------

  CUcontext context() const { return ctx_; }
  CUdevice device() const { return dev_; }
  /// The bytes storage_available(kDevice) leaves to the application.
  uint64_t device_headroom() const { return headroom_; }
  /// kreplay's stream (init() first): record events on it around a call to time its GPU work.
  Result<CUstream> stream();
  void set_tuning(const Tuning& tuning);
  /// When on, every snapshot/find_changed/restore also records CUDA events around its kernel
  /// launches, and last_kernel_ms() returns the GPU time of the last call's kernels alone (the
  /// rest of a call is uploads, the digest copy-out and synchronization). Off by default.
  void set_kernel_timing(bool on);
  /// GPU milliseconds of the last call's kernel(s) with kernel timing on; 0 otherwise.
  double last_kernel_ms();

  /// Fill [dst, dst + bytes) with pseudo-random bytes, a function of @p seed and the offset only.
  Status fill_random(CUdeviceptr dst, uint64_t bytes, uint64_t seed);
  /// One launch of a trivial kernel of kreplay's own in the MemoryOps' context: fill_random over
  /// a 4 KiB scratch buffer (allocated on first use, freed with the MemoryOps, never the
  /// application's memory) on kreplay's stream, one block; returns once it completed. The
  /// counters' warm-up collection (cuda_warm_start.cpp) profiles it.
  Status tiny_launch();
  /// Number of byte positions at which [a, a + bytes) and [b, b + bytes) differ.
  Result<uint64_t> count_differences(CUdeviceptr a, CUdeviceptr b, uint64_t bytes);

 private:
  struct DeviceBuffer {
    CUdeviceptr ptr = 0;
    uint64_t bytes = 0;
  };
  struct HostBuffer {
    void* ptr = nullptr;
    uint64_t bytes = 0;
    CUdeviceptr mapped = 0;  ///< device address when allocated with DEVICEMAP
  };
  struct Kernel {
    CUfunction fn = nullptr;
    uint32_t blocks_per_sm = 1;
  };
  struct ChunkRange {
    uint64_t begin = 0;
    uint64_t end = 0;
  };

  MemoryOps(CUcontext ctx, CUdevice dev);

  // The *_locked helpers expect mu_ held, an InternalScope and the context current.
  Status ensure_loaded_locked();
  Status ensure_device(DeviceBuffer* buf, uint64_t bytes);
  Status ensure_host(HostBuffer* buf, uint64_t bytes, bool mapped = false);
  Result<void*> stage_locked(uint64_t bytes);
  Status upload_locked(CUdeviceptr dst, const void* src, uint64_t bytes);
  Status prepare_regions_locked(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes);
  uint64_t grid_blocks_locked(const Kernel& k, uint64_t warp_items, bool tuned = false) const;
  Status launch_locked(const Kernel& k, uint64_t blocks, void* params);
  Status time_begin_locked();
  Status time_end_locked();
  Status sync_locked();
  uint32_t unroll_index() const { return tuning_.unroll == 4 ? 0 : 1; }
  uint32_t unroll() const { return tuning_.unroll == 4 ? 4 : 8; }

  const CUcontext ctx_;
  const CUdevice dev_;
  uint32_t sm_count_ = 1;
  uint64_t l2_bytes_ = 0;
  uint64_t total_memory_ = 0;
  uint64_t headroom_ = 0;
  bool pinned_budget_set_ = false;
  uint64_t pinned_budget_ = 0;

  std::mutex mu_;
  Tuning tuning_;
  uint64_t pinned_held_ = 0;

  // Loaded on first use.
  bool loaded_ = false;
  CUmodule module_ = nullptr;
  CUstream stream_ = nullptr;
  bool kernel_timing_ = false;
  bool timed_ = false;  // the last call recorded kernel_start_/kernel_end_
  CUevent kernel_start_ = nullptr, kernel_end_ = nullptr;
  Kernel snapshot_[2], find_changed_[2], digest_[2], restore_[2], fill_, diff_, flush_;  // [0]: u4
  DeviceBuffer d_flush_;  // the flush's scratch (zeroed; read only)
  DeviceBuffer d_tiny_;   // tiny_launch's scratch (4 KiB)
  uint64_t tiny_launches_ = 0;

  // Device buffers, grown on demand and kept.
  DeviceBuffer d_regions_, d_digests_, d_bits_, d_chunks_, d_count_, d_signal_;
  // Pinned host buffers: upload staging (an arena reset per call), the digest shadow (mapped: the
  // snapshot kernel writes it beside d_digests_; equal to d_digests_ over digest_ranges_),
  // the changed-chunk bitmap, the count.
  HostBuffer h_stage_, h_digests_, h_bits_, h_count_, h_flag_;  // h_flag_: mapped, early signal
  // digest_live's own digests (the snapshot's stay in d_digests_ / h_digests_).
  DeviceBuffer d_live_digests_;
  HostBuffer h_live_digests_;
  // digest_baseline's digests, and the layout (storage set to live) they cover.
  DeviceBuffer d_base_digests_;
  DeviceBuffer d_zero_bits_;
  HostBuffer h_zero_bits_;
  std::vector<device::CopyRegion> base_layout_;
  uint64_t base_chunk_bytes_ = 0;
  bool base_valid_ = false;
  /// The regions with storage = live (the baseline reads live memory only; a non-null storage
  /// passes prepare_regions_locked's check).
  static std::vector<device::CopyRegion> live_only(std::span<const device::CopyRegion> regions);
  uint32_t signal_epoch_ = 0;
  uint64_t stage_used_ = 0;

  // Descriptors on the GPU: valid for cached_input_ and cached_chunk_bytes_.
  bool regions_valid_ = false;
  uint64_t regions_gen_ = 0;
  std::vector<device::CopyRegion> cached_input_;
  uint64_t cached_chunk_bytes_ = 0;
  std::vector<memory_layout::RegionDesc> descs_;  // as uploaded (sorted by first_chunk)
  std::vector<ChunkRange> chunk_ranges_;          // the regions' chunk ranges, merged
  uint64_t work_chunks_ = 0;
  uint64_t chunk_end_ = 0;  // largest chunk index + 1

  // Chunk ranges where d_digests_ and the shadow h_digests_ hold the same digests (sorted).
  std::vector<ChunkRange> digest_ranges_;

  // Restore list on the GPU: valid for cached_chunks_ under regions_gen_ == chunks_gen_.
  bool chunks_valid_ = false;
  uint64_t chunks_gen_ = 0;
  std::vector<uint64_t> cached_chunks_;
};

}  // namespace kreplay::cuda
