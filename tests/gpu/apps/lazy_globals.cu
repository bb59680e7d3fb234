// lazy_globals: pins that module-scope variables are restored when their module is loaded lazily
// by the application's first launch (and, with a second module first launched while a range of
// the first one's launches is open, that the load closes the range before its variable exists) (CUDA_MODULE_LOADING=LAZY, CUDA 13's default), i.e. when
// nothing else -- no cudaMemcpyToSymbol, no cudaGetSymbolAddress -- touches the module first.
// kreplay's own queries of the kernel (its parameter layout) are what load the module then; the
// module's load event still has to register its variables.
//
// The variables are statically initialised on the device and first touched by the kernel: a
// __device__ launch counter stamped into a per-launch array (must read 0, 1, 2, ...) and a
// __device__ array of per-slot sums. A replay that does not restore them leaves the counter at a
// multiple of the launch count and the sums too large.
#include "common.cuh"

#include <cmath>

// The second module (lazy_globals_second.cu): launched once, between this module's launches.
void launch_bump_second(unsigned int* stamp);
unsigned int read_second_count();

__device__ unsigned int g_count = 0;
__device__ float g_sums[64] = {};

__global__ void bump(float* x, size_t n, unsigned int* stamps, int launch) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    x[i] = __fmaf_rn(x[i], 0.999f, 0.5f);
    if (i < 64) g_sums[i] += 1.0f + static_cast<float>(launch);
  }
  if (i == 0) stamps[launch] = atomicAdd(&g_count, 1u);
}

int main() {
  kr::require_gpu();
  constexpr size_t n = 1 << 18;
  constexpr int launches = 10;
  constexpr unsigned threads = 256;

  std::vector<float> host = kr::random_unit(n, 0x5151);
  std::vector<float> ref = host;
  float* x = nullptr;
  unsigned int* stamps = nullptr;
  KR_CHECK(cudaMalloc(&x, n * sizeof(float)));
  KR_CHECK(cudaMalloc(&stamps, launches * sizeof(unsigned int)));
  KR_CHECK(cudaMemcpy(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  KR_CHECK(cudaMemset(stamps, 0xff, launches * sizeof(unsigned int)));

  unsigned int* second_stamp = nullptr;
  KR_CHECK(cudaMalloc(&second_stamp, sizeof(unsigned int)));
  KR_CHECK(cudaMemset(second_stamp, 0xff, sizeof(unsigned int)));
  for (int l = 0; l < launches; ++l) {
    bump<<<kr::blocks_for(n, threads), threads>>>(x, n, stamps, l);
    KR_CHECK_LAUNCH();
    for (auto& v : ref) v = std::fmaf(v, 0.999f, 0.5f);
    // The second module's first launch, with launches of this one before and after it on the
    // stream: under range replay a range of them is open as it loads.
    if (l == launches / 2) launch_bump_second(second_stamp);
  }
  KR_CHECK(cudaDeviceSynchronize());

  std::vector<float> out(n);
  std::vector<unsigned int> st(launches);
  unsigned int count = 0;
  std::vector<float> sums(64);
  KR_CHECK(cudaMemcpy(out.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost));
  KR_CHECK(cudaMemcpy(st.data(), stamps, st.size() * sizeof(st[0]), cudaMemcpyDeviceToHost));
  KR_CHECK(cudaMemcpyFromSymbol(&count, g_count, sizeof(count)));
  KR_CHECK(cudaMemcpyFromSymbol(sums.data(), g_sums, sums.size() * sizeof(float)));

  KR_EXPECT(count == launches, "__device__ counter %u, expected %d", count, launches);
  unsigned int second_stamp_host = 0;
  KR_CHECK(cudaMemcpy(&second_stamp_host, second_stamp, sizeof(second_stamp_host),
                      cudaMemcpyDeviceToHost));
  const unsigned int second_count = read_second_count();
  KR_EXPECT(second_count == 1 && second_stamp_host == 0,
            "the second module's __device__ counter %u (stamp %u), expected 1 (0)", second_count,
            second_stamp_host);
  for (int l = 0; l < launches; ++l) {
    KR_EXPECT(st[l] == static_cast<unsigned int>(l), "launch %d saw counter %u", l, st[l]);
  }
  const float expected_sum = launches * (launches + 1) / 2.0f;  // 1 + 2 + ... + launches
  for (size_t s = 0; s < sums.size(); ++s) {
    KR_EXPECT(sums[s] == expected_sum, "g_sums[%zu] = %g, expected %g", s, sums[s], expected_sum);
  }
  long long bad = kr::first_mismatch(out, ref);
  KR_EXPECT(bad < 0, "x[%lld] = %a, CPU %a", bad, out[bad], ref[bad]);

  kr::Digest d;
  d.add(out);
  d.add(st);
  d.add(sums);
  d.add_value(count);
  d.add_value(second_count);
  KR_CHECK(cudaFree(second_stamp));
  KR_CHECK(cudaFree(x));
  KR_CHECK(cudaFree(stamps));
  d.print("lazy_globals");
  return 0;
}
