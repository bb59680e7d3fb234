// cub_async: CUB's device-wide algorithms on a non-blocking stream, each with its temporary
// storage from the stream-ordered allocator (cudaMallocAsync / cudaFreeAsync), as a library that
// avoids the device-wide synchronization of cudaMalloc does. Every round, on 3·2^16 pairs:
//   DeviceRadixSort::SortPairs   (keys, vals) through DoubleBuffers, temporaries allocated and
//                                freed on the stream
//   DeviceScan::ExclusiveSum     vals -> scan, 32-bit sums (wrapping), the same
//   remix                        keys = mix32(keys + scan), in place
// The host synchronizes once, at the end. Integer data throughout: checked exactly against a
// host reference and digested over keys, vals and scan.
//   cub_async [rounds=4]     about 9 launches per round (radix sort: histogram, prefix, 4 one-sweep
//                            passes; scan: 2; remix: 1)
#include "real_common.cuh"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <numeric>

__global__ void remix(uint32_t* keys, const uint32_t* scan, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) keys[i] = real::mix32(keys[i] + scan[i]);
}

int main(int argc, char** argv) {
  real::begin("cub_async");
  const int rounds = real::count_arg(argc, argv, 4);
  constexpr size_t n = size_t{3} << 16;
  constexpr size_t bytes = n * sizeof(uint32_t);

  real::Rng rng(0xc0b5);
  std::vector<uint32_t> keys(n), vals(n), scan(n);
  for (size_t i = 0; i < n; ++i) {
    keys[i] = rng.u32() >> 6;  // duplicates on purpose: the sort must be stable
    vals[i] = static_cast<uint32_t>(i) * 2654435761u;
  }

  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  uint32_t *k0 = nullptr, *k1 = nullptr, *v0 = nullptr, *v1 = nullptr, *d_scan = nullptr;
  for (uint32_t** p : {&k0, &k1, &v0, &v1, &d_scan}) CHECK(cudaMallocAsync(p, bytes, s));
  CHECK(cudaMemcpyAsync(k0, keys.data(), bytes, cudaMemcpyHostToDevice, s));
  CHECK(cudaMemcpyAsync(v0, vals.data(), bytes, cudaMemcpyHostToDevice, s));
  cub::DoubleBuffer<uint32_t> d_keys(k0, k1), d_vals(v0, v1);
  for (int r = 0; r < rounds; ++r) {
    void* temp = nullptr;
    size_t temp_bytes = 0;
    CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, d_keys, d_vals, n, 0, 32, s));
    CHECK(cudaMallocAsync(&temp, temp_bytes, s));
    CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, d_keys, d_vals, n, 0, 32, s));
    CHECK(cudaFreeAsync(temp, s));

    temp_bytes = 0;
    CHECK(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, d_vals.Current(), d_scan, n, s));
    CHECK(cudaMallocAsync(&temp, temp_bytes, s));
    CHECK(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, d_vals.Current(), d_scan, n, s));
    CHECK(cudaFreeAsync(temp, s));

    remix<<<real::blocks_for(n, 256), 256, 0, s>>>(d_keys.Current(), d_scan, n);
    CHECK_LAUNCH();
  }
  std::vector<uint32_t> g_keys(n), g_vals(n), g_scan(n);
  CHECK(cudaMemcpyAsync(g_keys.data(), d_keys.Current(), bytes, cudaMemcpyDeviceToHost, s));
  CHECK(cudaMemcpyAsync(g_vals.data(), d_vals.Current(), bytes, cudaMemcpyDeviceToHost, s));
  CHECK(cudaMemcpyAsync(g_scan.data(), d_scan, bytes, cudaMemcpyDeviceToHost, s));
  for (uint32_t* p : {k0, k1, v0, v1, d_scan}) CHECK(cudaFreeAsync(p, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaStreamDestroy(s));

  std::vector<size_t> order(n);
  std::vector<uint32_t> tmp_k(n), tmp_v(n);
  for (int r = 0; r < rounds; ++r) {
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return keys[x] < keys[y]; });
    for (size_t i = 0; i < n; ++i) {
      tmp_k[i] = keys[order[i]];
      tmp_v[i] = vals[order[i]];
    }
    keys.swap(tmp_k);
    vals.swap(tmp_v);
    uint32_t sum = 0;
    for (size_t i = 0; i < n; ++i) {
      scan[i] = sum;
      sum += vals[i];
      keys[i] = real::mix32(keys[i] + scan[i]);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (g_keys[i] != keys[i] || g_vals[i] != vals[i] || g_scan[i] != scan[i]) {
      real::fail("element %zu: (key, val, scan) = (%u, %u, %u), host (%u, %u, %u)", i, g_keys[i],
                 g_vals[i], g_scan[i], keys[i], vals[i], scan[i]);
    }
  }

  real::Digest dig;
  dig.add(g_keys);
  dig.add(g_vals);
  dig.add(g_scan);
  dig.pass();
  return 0;
}
