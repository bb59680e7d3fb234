// float_reduce: a launch whose passes leave different memory, for --check-divergence
// (scripts/gpu-check.sh section divergence). sum_atomic adds 4M floats of very different
// magnitudes into one float with atomicAdd: the order of the additions, and so the rounding of
// the result, changes from one execution to the next. scale (x = 3x + 1) is deterministic. Each
// is launched 8 times; the program prints its sums (they differ from run to run, so it has no
// digest to compare) and checks only that they are finite and within 2% of the exact sum.
#include <cmath>

#include "common.cuh"

constexpr size_t kN = size_t{1} << 22;
constexpr int kLaunches = 8;

__global__ void sum_atomic(const float* x, size_t n, float* sum) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) atomicAdd(sum, x[i]);
}

__global__ void scale(float* x, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = __fmaf_rn(x[i], 0.5f, 0.25f);
}

int main() {
  kr::require_gpu();
  std::vector<float> host = kr::random_unit(kN, 0xd1ce);
  double exact = 0;
  for (size_t i = 0; i < kN; ++i) {
    host[i] = std::ldexp(host[i], static_cast<int>(i % 23) - 11);  // 2^-11 .. 2^11
    exact += host[i];
  }
  float *x = nullptr, *y = nullptr, *sum = nullptr;
  KR_CHECK(cudaMalloc(&x, kN * sizeof(float)));
  KR_CHECK(cudaMalloc(&y, kN * sizeof(float)));
  KR_CHECK(cudaMalloc(&sum, sizeof(float)));
  KR_CHECK(cudaMemcpy(x, host.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
  KR_CHECK(cudaMemcpy(y, host.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
  for (int l = 0; l < kLaunches; ++l) {
    KR_CHECK(cudaMemset(sum, 0, sizeof(float)));
    sum_atomic<<<kr::blocks_for(kN, 256), 256>>>(x, kN, sum);
    KR_CHECK_LAUNCH();
    scale<<<kr::blocks_for(kN, 256), 256>>>(y, kN);
    KR_CHECK_LAUNCH();
    float got = 0;
    KR_CHECK(cudaMemcpy(&got, sum, sizeof(float), cudaMemcpyDeviceToHost));
    // A float accumulator of 4M terms near 7e8 (ulp 64) drifts by up to ~1% from the exact sum.
    KR_EXPECT(std::isfinite(got) && std::fabs(got - exact) <= 2e-2 * std::fabs(exact),
              "launch %d: sum %.9g, exact %.9g", l, static_cast<double>(got), exact);
    std::printf("float_reduce: launch %d sum %.9g (exact %.9g)\n", l, static_cast<double>(got),
                exact);
  }
  KR_CHECK(cudaFree(x));
  KR_CHECK(cudaFree(y));
  KR_CHECK(cudaFree(sum));
  std::printf("float_reduce: OK\n");
  return 0;
}
