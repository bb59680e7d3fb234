// cufft_plan: a cuFFT plan executed in place, with an in-place scaling kernel between the forward
// and the inverse transform, three rounds. cuFFT launches its own kernels from its own modules
// (loaded lazily at the first execution); under kreplay --metrics, convolutionFFT2D of NVIDIA's
// cuda-samples crashed inside such a relaunch. The result must be bit-identical to a plain run
// (cuFFT is deterministic for one plan) and within float tolerance of the input scaled.
#include <cufft.h>

#include <cmath>

#include "common.cuh"

__global__ void scale(cufftComplex* z, size_t n, float f) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    z[i].x *= f;
    z[i].y *= f;
  }
}

int main() {
  kr::require_gpu();
  constexpr int nx = 256, ny = 512;
  constexpr size_t n = static_cast<size_t>(nx) * ny;
  std::vector<float> re = kr::random_unit(n, 0x91), im = kr::random_unit(n, 0x92);
  std::vector<cufftComplex> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = {re[i], im[i]};
  cufftComplex* d = nullptr;
  KR_CHECK(cudaMalloc(&d, n * sizeof(cufftComplex)));
  KR_CHECK(cudaMemcpy(d, h.data(), n * sizeof(cufftComplex), cudaMemcpyHostToDevice));
  cufftHandle plan;
  KR_CHECK_STATUS(cufftPlan2d(&plan, nx, ny, CUFFT_C2C));
  const float f = 1.0f / static_cast<float>(n);
  constexpr unsigned threads = 256;
  for (int r = 0; r < 3; ++r) {
    KR_CHECK_STATUS(cufftExecC2C(plan, d, d, CUFFT_FORWARD));
    scale<<<kr::blocks_for(n, threads), threads>>>(d, n, f * 2.0f);
    KR_CHECK_LAUNCH();
    KR_CHECK_STATUS(cufftExecC2C(plan, d, d, CUFFT_INVERSE));
  }
  KR_CHECK(cudaDeviceSynchronize());
  std::vector<cufftComplex> out(n);
  KR_CHECK(cudaMemcpy(out.data(), d, n * sizeof(cufftComplex), cudaMemcpyDeviceToHost));
  // Three rounds of forward, x 2/n, inverse: the input times 8.
  double err = 0, ref = 0;
  for (size_t i = 0; i < n; ++i) {
    err += std::pow(out[i].x - 8.0 * h[i].x, 2) + std::pow(out[i].y - 8.0 * h[i].y, 2);
    ref += std::pow(8.0 * h[i].x, 2) + std::pow(8.0 * h[i].y, 2);
  }
  KR_EXPECT(std::sqrt(err / ref) < 1e-5, "relative error %g", std::sqrt(err / ref));
  kr::Digest dig;
  dig.add(out.data(), out.size() * sizeof(cufftComplex));
  KR_CHECK_STATUS(cufftDestroy(plan));
  KR_CHECK(cudaFree(d));
  dig.print("cufft_plan");
  return 0;
}
