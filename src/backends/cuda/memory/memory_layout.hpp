// What the host side (memory_ops.cpp) and the kernels (memory_kernels.cu) share: the descriptor
// and parameter layouts, and the chunk digest, which is defined here once for both (the host copy
// is the reference the tests check the kernels against).
//
// Plain C++ (no CUDA types), so it compiles in nvcc's device pass and in GCC's host pass alike.
#pragma once

#include <stdint.h>

#if defined(__CUDACC__)
#define KR_MEM_HD __host__ __device__ __forceinline__
#else
#define KR_MEM_HD inline
#endif

namespace kreplay::cuda::memory_layout {

/// One region as the kernels see it. Uploaded sorted by first_chunk, zero-size regions dropped.
struct RegionDesc {
  uint64_t live;           ///< device address of the live memory
  uint64_t storage;        ///< device address of the snapshot copy (may be host-mapped)
  uint64_t size;           ///< bytes (> 0)
  uint64_t first_chunk;    ///< global index of the region's first chunk (digest/bitmap index)
  uint64_t dense_first;    ///< index of the region's first chunk in the dense work numbering
  uint32_t live_align;     ///< largest power of two (<= 16) that divides live
  uint32_t storage_align;  ///< largest power of two (<= 16) that divides storage
};
static_assert(sizeof(RegionDesc) == 48, "RegionDesc layout is shared with the kernels");

/// Launch geometry every kernel assumes: blocks of kBlockThreads, kUnroll 16-byte vectors in
/// flight per lane. A warp copies kTileBytes per step in restore.
constexpr uint32_t kBlockThreads = 256;
constexpr uint32_t kWarpsPerBlock = kBlockThreads / 32;
constexpr uint32_t kMaxSignals = 4;

/// snapshot (copy live -> storage and write digests) and find_changed (recompute, compare, set
/// bits) walk every chunk of every region.
struct ChunkParams {
  const RegionDesc* regions;
  uint64_t region_count;
  uint64_t work_begin;     ///< first dense chunk of this launch
  uint64_t work_end;       ///< one past the last (the dense numbering counts every region's chunks)
  uint64_t* digests;       ///< by global chunk index; written (snapshot) or read (find_changed)
  uint64_t* host_digests;  ///< snapshot: also written here (mapped pinned host memory); may be null
  uint32_t* changed_bits;  ///< find_changed: one bit per global chunk index, zeroed before
  uint32_t update_digests; ///< find_changed: also store the live digest where it differs
  uint32_t* zero_bits;     ///< find_changed (may be null): a bit per changed chunk whose old
                           ///< digest was that of all-zero bytes, zeroed before
  uint64_t zero_digest_full;  ///< zero_digest(1 << chunk_shift), precomputed
  uint32_t chunk_shift;    ///< log2(chunk_bytes), >= 8
  uint32_t group_shift;    ///< log2(lanes per chunk): 4 for 256-byte chunks, else 5
  // Progress signals (snapshot): for each point i < signal_points, once every warp has finished
  // its work items below signal_items[i] (warp items, not chunks) and fenced its digest writes,
  // the last one to get there stores signal_value into host_flag[i] (mapped host memory), so the
  // host can copy those digests out while the rest runs.
  uint64_t signal_items[kMaxSignals];  ///< ascending, each >= the number of launched warps
  uint32_t signal_points;              ///< 0 = no signals
  uint32_t signal_warps;               ///< launched warps (every one takes part in every point)
  uint32_t signal_value;               ///< changes from call to call (flags are not reset)
  uint32_t* signal_count;              ///< [kMaxSignals] device counters, zeroed before
  uint32_t* host_flag;                 ///< [kMaxSignals] mapped host memory
};

/// restore: copy the listed chunks storage -> live, in tiles.
struct RestoreParams {
  const RegionDesc* regions;
  uint64_t region_count;
  const uint64_t* chunks;  ///< global chunk indices, each inside a region (checked on the host)
  uint64_t chunk_count;
  uint32_t chunk_shift;  ///< log2(chunk_bytes)
  uint32_t tile_shift;   ///< log2(bytes one warp copies per step), <= chunk_shift
};

/// The cache flush (--cache-control all): every thread reads its share of a scratch buffer of
/// at least twice the L2 size; `sink` is written only if the XOR of what was read equals `never`,
/// which the zeroed scratch cannot give, so the loads stay and nothing is ever written.
struct FlushParams {
  uint64_t src;
  uint64_t bytes;  ///< a multiple of 16
  unsigned long long* sink;
  unsigned long long never;
};

/// Test and benchmark support.
struct FillParams {
  uint64_t dst;
  uint64_t bytes;
  uint64_t seed;
};
struct DiffParams {
  uint64_t a;
  uint64_t b;
  uint64_t bytes;
  unsigned long long* count;  ///< bytes that differ, accumulated
};

// ---------------------------------------------------------------------------------------------
// The chunk digest.
//
// A chunk of n bytes is read as little-endian 64-bit words w_0, w_1, ... (the last one padded
// with zero bytes). Each word is mixed with its index by a bijection,
//     t_i = fmix64(w_i ^ (i + 1) * golden),
// the terms are summed mod 2^64, and the sum is finalized with the length:
//     digest = fmix64(sum ^ fmix64(n + c)).
// Because w -> t_i is a bijection for every i, changing any single word (any number of bytes in
// one word) always changes the sum; changes in several words, swapped words included, cancel
// only by a 2^-64 coincidence of the murmur3 finalizer. The sum is associative and
// commutative, so any split of a chunk among threads, warps or launches gives the same digest.
// ---------------------------------------------------------------------------------------------

KR_MEM_HD uint64_t fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return k;
}

KR_MEM_HD uint64_t word_term(uint64_t word, uint64_t index) {
  return fmix64(word ^ ((index + 1) * 0x9e3779b97f4a7c15ull));
}

KR_MEM_HD uint64_t finish_digest(uint64_t sum, uint64_t nbytes) {
  return fmix64(sum ^ fmix64(nbytes + 0x632be59bd9b4e019ull));
}

/// The digest of @p nbytes zero bytes (computed, not read: no memory needed).
KR_MEM_HD uint64_t zero_digest(uint64_t nbytes) {
  uint64_t sum = 0;
  for (uint64_t i = 0; i * 8 < nbytes; ++i) sum += word_term(0, i);
  return finish_digest(sum, nbytes);
}

/// Reference digest of one chunk on the host (what the kernels compute).
inline uint64_t reference_digest(const void* data, uint64_t nbytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t sum = 0;
  for (uint64_t i = 0; i * 8 < nbytes; ++i) {
    uint64_t w = 0;
    for (uint64_t b = 0; b < 8 && i * 8 + b < nbytes; ++b) w |= uint64_t{p[i * 8 + b]} << (8 * b);
    sum += word_term(w, i);
  }
  return finish_digest(sum, nbytes);
}

}  // namespace kreplay::cuda::memory_layout
