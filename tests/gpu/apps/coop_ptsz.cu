// coop_ptsz: pins replay of cooperative launches and of launches on the per-thread default stream.
//
// Built with --default-stream per-thread, so <<<>>> and cudaLaunchCooperativeKernel reach the
// driver's _ptsz entry points. A cooperative kernel does an in-place update, a grid-wide sync, and
// a second in-place step that reads a neighbour's first-step value (so a pass that starts from
// unrestored memory gives a different result); an ordinary kernel bumps a counter.
#include "common.cuh"

#include <cooperative_groups.h>

namespace cg = cooperative_groups;

__device__ unsigned g_runs;

__global__ void coop_step(float* x, float* y, size_t n) {
  cg::grid_group grid = cg::this_grid();
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t j = i; j < n; j += stride) x[j] = __fmaf_rn(x[j], 1.5f, 0.25f);
  grid.sync();
  for (size_t j = i; j < n; j += stride) y[j] = y[j] * 0.5f + x[(j + 1) % n];
}

__global__ void bump(unsigned* c) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    c[0] += 1;
    atomicAdd(&g_runs, 1u);
  }
}

int main() {
  kr::require_gpu();
  int coop = 0;
  KR_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, 0));
  KR_EXPECT(coop == 1, "device cannot launch cooperative kernels");
  constexpr size_t n = 1 << 18;
  constexpr int rounds = 6;
  std::vector<float> hx = kr::random_unit(n, 0x5151), hy = kr::random_unit(n, 0x7272);
  std::vector<float> rx = hx, ry = hy;
  float *x = nullptr, *y = nullptr;
  unsigned* c = nullptr;
  KR_CHECK(cudaMalloc(&x, n * sizeof(float)));
  KR_CHECK(cudaMalloc(&y, n * sizeof(float)));
  KR_CHECK(cudaMalloc(&c, sizeof(unsigned)));
  KR_CHECK(cudaMemcpy(x, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  KR_CHECK(cudaMemcpy(y, hy.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  KR_CHECK(cudaMemset(c, 0, sizeof(unsigned)));
  int per_sm = 0, sms = 0;
  KR_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, coop_step, 256, 0));
  KR_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  dim3 grid(static_cast<unsigned>(per_sm * sms)), block(256);
  for (int r = 0; r < rounds; ++r) {
    size_t nn = n;
    void* args[] = {&x, &y, &nn};
    KR_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(coop_step), grid, block, args, 0,
                                         cudaStreamPerThread));
    bump<<<1, 32>>>(c);  // the per-thread default stream (built with --default-stream per-thread)
    KR_CHECK_LAUNCH();
    for (auto& v : rx) v = std::fmaf(v, 1.5f, 0.25f);
    for (size_t j = 0; j < n; ++j) ry[j] = ry[j] * 0.5f + rx[(j + 1) % n];
  }
  KR_CHECK(cudaStreamSynchronize(cudaStreamPerThread));
  std::vector<float> ox(n), oy(n);
  unsigned oc = 0, runs = 0;
  KR_CHECK(cudaMemcpy(ox.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost));
  KR_CHECK(cudaMemcpy(oy.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
  KR_CHECK(cudaMemcpy(&oc, c, sizeof(unsigned), cudaMemcpyDeviceToHost));
  KR_CHECK(cudaMemcpyFromSymbol(&runs, g_runs, sizeof(runs)));
  KR_EXPECT(oc == rounds && runs == rounds, "counter %u, runs %u, expected %d", oc, runs, rounds);
  KR_EXPECT(ox == rx, "x differs from the CPU reference");
  size_t bad = 0;
  for (size_t j = 0; j < n; ++j) bad += std::fabs(oy[j] - ry[j]) > 1e-5f * (1.0f + std::fabs(ry[j]));
  KR_EXPECT(bad == 0, "%zu elements of y differ from the CPU reference", bad);
  kr::Digest d;
  d.add(ox.data(), n * sizeof(float));
  d.add(oy.data(), n * sizeof(float));
  d.add(&oc, sizeof(oc));
  d.print("coop_ptsz");
  return 0;
}
