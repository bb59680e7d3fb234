// thrust_sort_scan: Thrust's sort and scan as an application calls them, on device_vectors with
// Thrust's own temporary allocations. Every round, on 2^18 (key, value) pairs:
//   sort_by_key(keys, vals)           radix sort of 32-bit keys (stable)
//   inclusive_scan(vals -> acc)       32-bit sums, wrapping
//   keys = mix32(keys ^ acc)          transform, so the next round sorts new keys
// Integer data throughout: the result is exact, checked against a host reference (std::stable_sort,
// a serial scan) and digested over keys, vals and acc.
//   thrust_sort_scan [rounds=4]     about 9 launches per round (radix sort: histogram, prefix,
//                                   4 one-sweep passes; scan: 2; transform: 1) and one fill
#include "real_common.cuh"

#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/functional.h>
#include <thrust/host_vector.h>
#include <thrust/scan.h>
#include <thrust/sort.h>
#include <thrust/transform.h>

#include <algorithm>
#include <numeric>

struct Remix {
  __host__ __device__ uint32_t operator()(uint32_t key, uint32_t acc) const {
    return real::mix32(key ^ acc);
  }
};

int main(int argc, char** argv) {
  real::begin("thrust_sort_scan");
  const int rounds = real::count_arg(argc, argv, 4);
  constexpr size_t n = size_t{1} << 18;

  real::Rng rng(0x7a3b);
  std::vector<uint32_t> keys(n), vals(n), acc(n);
  for (size_t i = 0; i < n; ++i) {
    keys[i] = rng.u32() >> 4;  // duplicates on purpose: the sort must be stable
    vals[i] = static_cast<uint32_t>(i);
  }

  thrust::device_vector<uint32_t> d_keys(keys.begin(), keys.end());
  thrust::device_vector<uint32_t> d_vals(vals.begin(), vals.end());
  thrust::device_vector<uint32_t> d_acc(n);
  for (int r = 0; r < rounds; ++r) {
    thrust::sort_by_key(thrust::device, d_keys.begin(), d_keys.end(), d_vals.begin());
    thrust::inclusive_scan(thrust::device, d_vals.begin(), d_vals.end(), d_acc.begin());
    thrust::transform(thrust::device, d_keys.begin(), d_keys.end(), d_acc.begin(), d_keys.begin(),
                      Remix{});
  }
  CHECK(cudaDeviceSynchronize());
  std::vector<uint32_t> g_keys(n), g_vals(n), g_acc(n);
  thrust::copy(d_keys.begin(), d_keys.end(), g_keys.begin());
  thrust::copy(d_vals.begin(), d_vals.end(), g_vals.begin());
  thrust::copy(d_acc.begin(), d_acc.end(), g_acc.begin());
  CHECK(cudaGetLastError());

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
      sum += vals[i];
      acc[i] = sum;
      keys[i] = real::mix32(keys[i] ^ acc[i]);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (g_keys[i] != keys[i] || g_vals[i] != vals[i] || g_acc[i] != acc[i]) {
      real::fail("element %zu: (key, val, acc) = (%u, %u, %u), host (%u, %u, %u)", i, g_keys[i],
                 g_vals[i], g_acc[i], keys[i], vals[i], acc[i]);
    }
  }

  real::Digest dig;
  dig.add(g_keys);
  dig.add(g_vals);
  dig.add(g_acc);
  dig.pass();
  return 0;
}
