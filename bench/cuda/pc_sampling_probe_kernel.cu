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

// A memory-bound kernel: reads and writes n4 float4s (kreplay's relaunches of services_kernels'
// memory-reading kernels got no PC sample, its register-only hot loop did).
__global__ void stream_copy(const float4* in, float4* out, size_t n4) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float4 v = in[i];
    out[i] = make_float4(v.x * 2.f, v.y * 2.f, v.z * 2.f, v.w * 2.f);
  }
}

}  // namespace

void pc_sampling_probe_stream(const void* in, void* out, size_t n4) {
  stream_copy<<<1056, 256>>>(static_cast<const float4*>(in), static_cast<float4*>(out), n4);
}

void pc_sampling_probe_other_on(float* out, cudaStream_t stream) {
  scale<<<264, 256, 0, stream>>>(out, 264 * 256);
}

void pc_sampling_probe_other(float* out) {
  scale<<<264, 256>>>(out, 264 * 256);
}

void pc_sampling_probe_launch(float* out) {
  hot_ffma<<<264, 256>>>(out, 200000);
}
