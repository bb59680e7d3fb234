// The snapshot kernels, built into a fatbin (sm_90 SASS + compute_90 PTX) that memory_ops.cpp
// embeds and loads with cuModuleLoadData. Entry points are extern "C" so the host finds them by
// name; their only parameter is one of the structs of memory_layout.hpp, passed by value.
//
// Every kernel is a persistent grid of warps: warp w of W takes work items w, w + W, ... A work
// item is one chunk (snapshot, find_changed: the chunk's digest needs all of its bytes) or one
// tile of a chunk (restore). Regions whose live and storage addresses are both 16-byte aligned
// (every cuMemAlloc, VMM and pool allocation) take the 16-byte vector path; others take a path
// with the widest loads their alignment allows. The bytes after the last whole 16-byte vector of
// a region are handled by one lane.
#include <stdint.h>

#include "backends/cuda/memory/memory_layout.hpp"

using namespace kreplay::cuda::memory_layout;

namespace {

__device__ __forceinline__ uint64_t min_u64(uint64_t a, uint64_t b) {
  return a < b ? a : b;
}

// Plain (weak, write-back) 16- and 8-byte global stores. The compiler emits generic ST for
// stores through these computed pointers, and __stwb gives STG.STRONG.SM; this gives STG.E.128.
__device__ __forceinline__ void st_global(ulonglong2* p, ulonglong2 v) {
  asm volatile("st.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(v.x), "l"(v.y));
}
__device__ __forceinline__ void st_global(unsigned long long* p, unsigned long long v) {
  asm volatile("st.global.u64 [%0], %1;" ::"l"(p), "l"(v));
}

// --- Loads and stores of 16 bytes at any alignment (al: 1, 2, 4, 8 or 16) ----------------------

__device__ __forceinline__ ulonglong2 load16(const unsigned char* p, uint32_t al) {
  ulonglong2 r;
  if (al >= 16) return __ldg(reinterpret_cast<const ulonglong2*>(p));
  if (al == 8) {
    const auto* q = reinterpret_cast<const unsigned long long*>(p);
    r.x = __ldg(q);
    r.y = __ldg(q + 1);
  } else if (al == 4) {
    const auto* q = reinterpret_cast<const unsigned int*>(p);
    r.x = uint64_t{q[0]} | uint64_t{q[1]} << 32;
    r.y = uint64_t{q[2]} | uint64_t{q[3]} << 32;
  } else if (al == 2) {
    const auto* q = reinterpret_cast<const unsigned short*>(p);
    r.x = uint64_t{q[0]} | uint64_t{q[1]} << 16 | uint64_t{q[2]} << 32 | uint64_t{q[3]} << 48;
    r.y = uint64_t{q[4]} | uint64_t{q[5]} << 16 | uint64_t{q[6]} << 32 | uint64_t{q[7]} << 48;
  } else {
    r.x = 0;
    r.y = 0;
#pragma unroll
    for (int b = 0; b < 8; ++b) {
      r.x |= uint64_t{p[b]} << (8 * b);
      r.y |= uint64_t{p[8 + b]} << (8 * b);
    }
  }
  return r;
}

__device__ __forceinline__ void store16(unsigned char* p, ulonglong2 v, uint32_t al) {
  if (al >= 16) {
    st_global(reinterpret_cast<ulonglong2*>(p), v);
  } else if (al == 8) {
    auto* q = reinterpret_cast<unsigned long long*>(p);
    st_global(q, v.x);
    st_global(q + 1, v.y);
  } else if (al == 4) {
    auto* q = reinterpret_cast<unsigned int*>(p);
    q[0] = static_cast<unsigned int>(v.x);
    q[1] = static_cast<unsigned int>(v.x >> 32);
    q[2] = static_cast<unsigned int>(v.y);
    q[3] = static_cast<unsigned int>(v.y >> 32);
  } else if (al == 2) {
    auto* q = reinterpret_cast<unsigned short*>(p);
#pragma unroll
    for (int h = 0; h < 4; ++h) {
      q[h] = static_cast<unsigned short>(v.x >> (16 * h));
      q[4 + h] = static_cast<unsigned short>(v.y >> (16 * h));
    }
  } else {
#pragma unroll
    for (int b = 0; b < 8; ++b) {
      p[b] = static_cast<unsigned char>(v.x >> (8 * b));
      p[8 + b] = static_cast<unsigned char>(v.y >> (8 * b));
    }
  }
}

// --- Region lookup ----------------------------------------------------------------------------

__device__ __forceinline__ uint64_t region_chunks(uint64_t size, uint32_t chunk_shift) {
  return (size + (1ull << chunk_shift) - 1) >> chunk_shift;
}

// The region holding dense work chunk w. `hint` is a region at or before it (work items only grow
// along a warp's walk), so the common case costs one or two cached loads.
__device__ __forceinline__ uint64_t region_of_dense(const RegionDesc* regions, uint64_t n,
                                                    uint64_t w, uint64_t hint) {
  if (hint + 1 >= n || regions[hint + 1].dense_first > w) return hint;
  uint64_t lo = hint + 1, hi = n;  // answer in [lo, hi): last index with dense_first <= w
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (regions[mid].dense_first <= w)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

// The region holding global chunk c (checked on the host to lie inside one).
__device__ __forceinline__ uint64_t region_of_chunk(const RegionDesc* regions, uint64_t n,
                                                    uint64_t c, uint64_t hint,
                                                    uint32_t chunk_shift) {
  const RegionDesc& h = regions[hint];
  if (c >= h.first_chunk && c < h.first_chunk + region_chunks(h.size, chunk_shift)) return hint;
  uint64_t lo = 0, hi = n;
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (regions[mid].first_chunk <= c)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

// --- snapshot / find_changed ------------------------------------------------------------------

// Sum of the digest terms of the words this lane covers in one chunk of `len` bytes, copying
// them to dst when kCopy. Lanes g_lane of G take vectors g_lane, g_lane + G, ... G is a constant
// so that the U addresses of a step are immediate offsets from one base register.
template <bool kCopy, int U, uint32_t G>
__device__ __forceinline__ uint64_t chunk_terms(const unsigned char* __restrict__ src,
                                                unsigned char* __restrict__ dst, uint64_t len,
                                                uint32_t g_lane, uint32_t src_al, uint32_t dst_al) {
  uint64_t sum = 0;
  const uint64_t nvec = len >> 4;
  uint64_t v = g_lane;
  if (src_al >= 16 && (!kCopy || dst_al >= 16)) {
    const auto* s = reinterpret_cast<const ulonglong2*>(src);
    auto* d = reinterpret_cast<ulonglong2*>(dst);
    // U vectors in flight per lane before the first is used.
    for (; v + (U - 1) * G < nvec; v += U * G) {
      ulonglong2 x[U];
#pragma unroll
      for (int u = 0; u < U; ++u) x[u] = __ldg(s + v + u * G);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        if constexpr (kCopy) st_global(d + v + u * G, x[u]);
        const uint64_t wi = 2 * (v + u * G);
        sum += word_term(x[u].x, wi) + word_term(x[u].y, wi + 1);
      }
    }
    for (; v < nvec; v += G) {
      const ulonglong2 x = __ldg(s + v);
      if constexpr (kCopy) st_global(d + v, x);
      sum += word_term(x.x, 2 * v) + word_term(x.y, 2 * v + 1);
    }
  } else {
    for (; v < nvec; v += G) {
      const ulonglong2 x = load16(src + 16 * v, src_al);
      if constexpr (kCopy) store16(dst + 16 * v, x, dst_al);
      sum += word_term(x.x, 2 * v) + word_term(x.y, 2 * v + 1);
    }
  }
  const uint32_t tail = static_cast<uint32_t>(len & 15);
  if (tail != 0 && g_lane == 0) {
    const unsigned char* s = src + (nvec << 4);
    unsigned char* d = dst + (nvec << 4);
    uint64_t w0 = 0, w1 = 0;
    for (uint32_t b = 0; b < tail; ++b) {
      const unsigned char c = s[b];
      if constexpr (kCopy) d[b] = c;
      if (b < 8)
        w0 |= uint64_t{c} << (8 * b);
      else
        w1 |= uint64_t{c} << (8 * (b - 8));
    }
    sum += word_term(w0, 2 * nvec);
    if (tail > 8) sum += word_term(w1, 2 * nvec + 1);
  }
  return sum;
}

// See ChunkParams::signal_items. Every lane fences its own digest stores (system scope, as the host
// reads them), the warp synchronizes, and lane 0 counts the warp in; the last warp raises the
// flag after a fence of its own.
__device__ __forceinline__ void signal_point(const ChunkParams& p, uint32_t point, uint32_t lane) {
  __threadfence_system();
  __syncwarp();
  if (lane == 0 && atomicAdd(p.signal_count + point, 1u) + 1 == p.signal_warps) {
    __threadfence_system();
    *reinterpret_cast<volatile uint32_t*>(p.host_flag + point) = p.signal_value;
  }
}

// signal_items[i] without indexing the parameter array at run time (that would copy it to local
// memory).
__device__ __forceinline__ uint64_t signal_threshold(const ChunkParams& p, uint32_t i) {
  return i == 0   ? p.signal_items[0]
         : i == 1 ? p.signal_items[1]
         : i == 2 ? p.signal_items[2]
                  : p.signal_items[3];
}

// kCopy: snapshot (copy and write digests); kDigestOnly: write digests without copying
// (digest_live, --check-divergence); neither: find_changed (compare with digests).
template <bool kCopy, int U, bool kDigestOnly = false>
__device__ __forceinline__ void chunk_kernel(const ChunkParams& p) {
  const uint32_t lane = threadIdx.x & 31;
  const uint32_t G = 1u << p.group_shift;  // lanes per chunk: 16 or 32
  const uint32_t g_lane = lane & (G - 1);
  const uint32_t per_warp = 32u >> p.group_shift;
  const uint32_t g_index = lane >> p.group_shift;
  const uint64_t warp = (uint64_t{blockIdx.x} * blockDim.x + threadIdx.x) >> 5;
  const uint64_t nwarps = (uint64_t{gridDim.x} * blockDim.x) >> 5;
  const uint64_t chunk_bytes = 1ull << p.chunk_shift;
  uint64_t r = 0;
  // Warp-uniform: the next progress signal this warp owes, and its item threshold.
  uint32_t next_signal = 0;
  uint64_t threshold = kCopy && p.signal_points != 0 ? p.signal_items[0] : ~0ull;
  for (uint64_t item = warp; p.work_begin + item * per_warp < p.work_end; item += nwarps) {
    while (kCopy && item >= threshold) {
      signal_point(p, next_signal, lane);
      ++next_signal;
      threshold = next_signal < p.signal_points ? signal_threshold(p, next_signal) : ~0ull;
    }
    const uint64_t w = p.work_begin + item * per_warp + g_index;
    const bool active = w < p.work_end;
    uint64_t sum = 0, len = 0, chunk = 0;
    if (active) {
      r = region_of_dense(p.regions, p.region_count, w, r);
      const RegionDesc rd = p.regions[r];
      const uint64_t local = w - rd.dense_first;
      const uint64_t off = local << p.chunk_shift;
      len = min_u64(chunk_bytes, rd.size - off);
      chunk = rd.first_chunk + local;
      const auto* src = reinterpret_cast<const unsigned char*>(rd.live + off);
      auto* dst = reinterpret_cast<unsigned char*>(rd.storage + off);
      // 256-byte chunks: 16 vectors, one per lane of a half warp. Larger: the whole warp.
      sum = G == 32
                ? chunk_terms<kCopy, U, 32>(src, dst, len, g_lane, rd.live_align, rd.storage_align)
                : chunk_terms<kCopy, 1, 16>(src, dst, len, g_lane, rd.live_align, rd.storage_align);
    }
    // Order-free sum over the chunk's lanes (all 32 lanes take part in every shuffle).
    for (uint32_t o = G >> 1; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (active && g_lane == 0) {
      const uint64_t digest = finish_digest(sum, len);
      if constexpr (kCopy) {
        p.digests[chunk] = digest;
        if (p.host_digests != nullptr) p.host_digests[chunk] = digest;
      } else if constexpr (kDigestOnly) {
        p.digests[chunk] = digest;
      } else if (digest != p.digests[chunk]) {
        atomicOr(p.changed_bits + (chunk >> 5), 1u << (chunk & 31));
        if (p.zero_bits != nullptr) {
          const uint64_t zero = len == chunk_bytes ? p.zero_digest_full : zero_digest(len);
          if (p.digests[chunk] == zero) atomicOr(p.zero_bits + (chunk >> 5), 1u << (chunk & 31));
        }
        if (p.update_digests) p.digests[chunk] = digest;
      }
    }
  }
  if constexpr (kCopy) {
    for (; next_signal < p.signal_points; ++next_signal) signal_point(p, next_signal, lane);
  }
}

// --- restore ----------------------------------------------------------------------------------

template <int U>
__device__ __forceinline__ void copy_tile(const unsigned char* __restrict__ src,
                                          unsigned char* __restrict__ dst, uint64_t len,
                                          uint32_t lane, uint32_t src_al, uint32_t dst_al) {
  const uint64_t nvec = len >> 4;
  if (src_al >= 16 && dst_al >= 16) {
    const auto* s = reinterpret_cast<const ulonglong2*>(src);
    auto* d = reinterpret_cast<ulonglong2*>(dst);
    uint64_t v = lane;
    for (; v + 32 * (U - 1) < nvec; v += 32 * U) {  // whole steps (every full tile)
      ulonglong2 x[U];
#pragma unroll
      for (int u = 0; u < U; ++u) x[u] = __ldg(s + v + 32 * u);
#pragma unroll
      for (int u = 0; u < U; ++u) st_global(d + v + 32 * u, x[u]);
    }
    for (; v < nvec; v += 32) st_global(d + v, __ldg(s + v));
  } else {
    for (uint64_t v = lane; v < nvec; v += 32) {
      store16(dst + 16 * v, load16(src + 16 * v, src_al), dst_al);
    }
  }
  const uint32_t tail = static_cast<uint32_t>(len & 15);
  if (tail != 0 && lane == 0) {
    for (uint32_t b = 0; b < tail; ++b) dst[(nvec << 4) + b] = src[(nvec << 4) + b];
  }
}

template <int U>
__device__ __forceinline__ void restore_kernel(const RestoreParams& p) {
  const uint32_t lane = threadIdx.x & 31;
  const uint64_t warp = (uint64_t{blockIdx.x} * blockDim.x + threadIdx.x) >> 5;
  const uint64_t nwarps = (uint64_t{gridDim.x} * blockDim.x) >> 5;
  const uint32_t tiles_shift = p.chunk_shift - p.tile_shift;
  const uint64_t tile_mask = (1ull << tiles_shift) - 1;
  const uint64_t items = p.chunk_count << tiles_shift;
  const uint64_t tile_bytes = 1ull << p.tile_shift;
  uint64_t r = 0;
  for (uint64_t item = warp; item < items; item += nwarps) {
    const uint64_t chunk = p.chunks[item >> tiles_shift];
    r = region_of_chunk(p.regions, p.region_count, chunk, r, p.chunk_shift);
    const RegionDesc rd = p.regions[r];
    const uint64_t off =
        ((chunk - rd.first_chunk) << p.chunk_shift) + ((item & tile_mask) << p.tile_shift);
    if (off >= rd.size) continue;  // a tile past the end of a region's last (partial) chunk
    copy_tile<U>(reinterpret_cast<const unsigned char*>(rd.storage + off),
                 reinterpret_cast<unsigned char*>(rd.live + off),
                 min_u64(tile_bytes, rd.size - off), lane, rd.storage_align, rd.live_align);
  }
}

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

// --- Entry points ------------------------------------------------------------------------------
// __launch_bounds__(256, 4): at most 64 registers, 4 blocks (32 warps) per SM. The snapshot
// kernels get 3 blocks and up to 85 registers: with 64, ptxas keeps only 5 of the 8 loads of a
// step in flight (it needs registers for the digest arithmetic of the vectors already loaded).

#define KR_MEM_BOUNDS __global__ void __launch_bounds__(kBlockThreads, 4)
#define KR_MEM_BOUNDS_3 __global__ void __launch_bounds__(kBlockThreads, 3)

extern "C" KR_MEM_BOUNDS_3 kreplay_mem_snapshot_u8(ChunkParams p) {
  chunk_kernel<true, 8>(p);
}
extern "C" KR_MEM_BOUNDS kreplay_mem_snapshot_u4(ChunkParams p) {
  chunk_kernel<true, 4>(p);
}
extern "C" KR_MEM_BOUNDS kreplay_mem_find_changed_u8(ChunkParams p) {
  chunk_kernel<false, 8>(p);
}
extern "C" KR_MEM_BOUNDS kreplay_mem_find_changed_u4(ChunkParams p) {
  chunk_kernel<false, 4>(p);
}
extern "C" KR_MEM_BOUNDS kreplay_mem_digest_u8(ChunkParams p) {
  chunk_kernel<false, 8, true>(p);
}
extern "C" KR_MEM_BOUNDS kreplay_mem_digest_u4(ChunkParams p) {
  chunk_kernel<false, 4, true>(p);
}
extern "C" KR_MEM_BOUNDS kreplay_mem_restore_u8(RestoreParams p) {
  restore_kernel<8>(p);
}
extern "C" KR_MEM_BOUNDS kreplay_mem_restore_u4(RestoreParams p) {
  restore_kernel<4>(p);
}

// Cache flush: read a scratch buffer of at least 2x the L2 size with caching loads (L1 and L2),
// so every line the caches held is evicted (dirty ones written back) and replaced by clean lines
// of the scratch. Reads only: it leaves no dirty line behind for the next pass to write back.
extern "C" KR_MEM_BOUNDS kreplay_mem_flush_caches(FlushParams p) {
  const uint64_t tid = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const uint64_t stride = uint64_t{gridDim.x} * blockDim.x;
  const auto* v = reinterpret_cast<const ulonglong2*>(p.src);
  const uint64_t nvec = p.bytes >> 4;
  unsigned long long acc = 0;
  for (uint64_t i = tid; i < nvec; i += stride) {
    const ulonglong2 x = __ldca(v + i);
    acc ^= x.x ^ x.y;
  }
  if (acc == p.never) *p.sink = acc;
}

// Test and benchmark support: pseudo-random bytes (a function of seed and byte offset only).
extern "C" KR_MEM_BOUNDS kreplay_mem_fill_random(FillParams p) {
  const uint64_t tid = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const uint64_t stride = uint64_t{gridDim.x} * blockDim.x;
  auto* dst = reinterpret_cast<unsigned char*>(p.dst);
  if ((p.dst & 7) == 0) {
    auto* words = reinterpret_cast<uint64_t*>(dst);
    const uint64_t nwords = p.bytes >> 3;
    for (uint64_t i = tid; i < nwords; i += stride)
      words[i] = splitmix64(p.seed ^ (i * 0x2545f4914f6cdd1dull));
    for (uint64_t b = (nwords << 3) + tid; b < p.bytes; b += stride) {
      dst[b] = static_cast<unsigned char>(splitmix64(p.seed ^ ((b >> 3) * 0x2545f4914f6cdd1dull)) >>
                                          (8 * (b & 7)));
    }
  } else {
    for (uint64_t b = tid; b < p.bytes; b += stride) {
      dst[b] = static_cast<unsigned char>(splitmix64(p.seed ^ ((b >> 3) * 0x2545f4914f6cdd1dull)) >>
                                          (8 * (b & 7)));
    }
  }
}

// Test and benchmark support: number of byte positions where a and b differ.
extern "C" KR_MEM_BOUNDS kreplay_mem_count_diff(DiffParams p) {
  const uint64_t tid = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const uint64_t stride = uint64_t{gridDim.x} * blockDim.x;
  const auto* a = reinterpret_cast<const unsigned char*>(p.a);
  const auto* b = reinterpret_cast<const unsigned char*>(p.b);
  unsigned long long count = 0;
  uint64_t start = 0;
  if (((p.a | p.b) & 15) == 0) {
    const auto* va = reinterpret_cast<const ulonglong2*>(a);
    const auto* vb = reinterpret_cast<const ulonglong2*>(b);
    const uint64_t nvec = p.bytes >> 4;
    for (uint64_t i = tid; i < nvec; i += stride) {
      const ulonglong2 x = __ldcs(va + i), y = __ldcs(vb + i);
      const uint64_t d[2] = {x.x ^ y.x, x.y ^ y.y};
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        for (int byte = 0; byte < 8; ++byte) count += ((d[k] >> (8 * byte)) & 0xff) != 0;
      }
    }
    start = nvec << 4;
  }
  for (uint64_t i = start + tid; i < p.bytes; i += stride) count += a[i] != b[i];
  for (int o = 16; o > 0; o >>= 1) count += __shfl_xor_sync(0xffffffffu, count, o);
  if ((threadIdx.x & 31) == 0 && count != 0) atomicAdd(p.count, count);
}
