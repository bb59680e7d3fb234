// The kernel of pc_sampling_probe.cpp (nvcc's front end fails on that file's host code).
#include <cuda_runtime.h>

namespace {

__global__ void hot_ffma(float* out, int iters) {
  float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 0.999f;
  for (int i = 0; i < iters; ++i) {
    a = fmaf(a, b, c);
    c = fmaf(c, b, a);
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a + c;
}

// Something else on the device between a collection and the PC-sampled launch (kreplay restores
// memory and flushes the caches there).
__global__ void scale(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] *= 0.5f;
}

}  // namespace

void pc_sampling_probe_other(float* out) {
  scale<<<264, 256>>>(out, 264 * 256);
}

void pc_sampling_probe_launch(float* out) {
  hot_ffma<<<264, 256>>>(out, 200000);
}
