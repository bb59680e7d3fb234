// cupti_held: another CUPTI client holds the process's one subscription before CUDA starts, the
// way ncu, nsys or compute-sanitizer would. kreplay, injected afterwards, must say so in one line
// and let the application run normally. (Not part of the replay variants: run_gpu_suite.sh does
// not list it; scripts/gpu-check.sh runs it.)
#include <cupti.h>

#include "common.cuh"

static void CUPTIAPI on_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

__global__ void twice(float* x, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = 2.0f * x[i] + 1.0f;
}

int main() {
  CUpti_SubscriberHandle sub;
  if (cuptiSubscribe(&sub, on_callback, nullptr) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "cupti_held: could not subscribe first\n");
    return 1;
  }
  kr::require_gpu();
  constexpr size_t n = 1 << 16;
  std::vector<float> h = kr::random_unit(n, 99), ref = h;
  float* x = nullptr;
  KR_CHECK(cudaMalloc(&x, n * sizeof(float)));
  KR_CHECK(cudaMemcpy(x, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  for (int r = 0; r < 4; ++r) {
    twice<<<(n + 255) / 256, 256>>>(x, n);
    KR_CHECK_LAUNCH();
    for (auto& v : ref) v = 2.0f * v + 1.0f;
  }
  KR_CHECK(cudaMemcpy(h.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost));
  KR_EXPECT(h == ref, "result differs");
  kr::Digest d;
  d.add(h);
  d.print("cupti_held");
  cuptiUnsubscribe(sub);
  return 0;
}
