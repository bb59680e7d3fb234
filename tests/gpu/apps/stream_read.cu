// stream_read: three kernels with known work, for counter checks (counters_check.py):
//   read_sum   reads 256 MiB once (16-byte loads) and writes one value per block;
//   scale      reads and writes 64 MiB in place (x = 3x + 1);
//   fma_loop   64 FFMAs per thread on registers, one store per thread;
// and before each read_sum, flush_l2 overwrites 192 MiB so read_sum's input comes from DRAM.
// Each is launched twice. Deterministic; the digest covers every output.
#include "common.cuh"

__global__ void read_sum(const float4* in, size_t n4, float* out) {
  float s = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float4 v = in[i];
    s += v.x + v.y + v.z + v.w;
  }
  __shared__ float part[256];
  part[threadIdx.x] = s;
  __syncthreads();
  for (unsigned k = blockDim.x / 2; k > 0; k /= 2) {
    if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}

// Writes a buffer larger than the L2 (60 MB on H200), so the next read comes from DRAM.
__global__ void flush_l2(float4* scratch, size_t n4) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    scratch[i] = make_float4(0.f, 0.f, 0.f, 0.f);
}

__global__ void scale(float* x, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = __fmaf_rn(x[i], 3.0f, 1.0f);
}

__global__ void fma_loop(float* out, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  float a = 1.0f + 1e-7f * static_cast<float>(i & 1023), b = 0.5f;
#pragma unroll
  for (int k = 0; k < 64; ++k) b = __fmaf_rn(a, b, 0.25f);
  if (i < n) out[i] = b;
}

int main() {
  kr::require_gpu();
  const size_t read_bytes = size_t(256) << 20, n4 = read_bytes / 16;
  const size_t n_scale = size_t(16) << 20, n_fma = size_t(1) << 22;
  std::vector<float> h = kr::random_unit(read_bytes / 4, 7);
  float *in = nullptr, *sums = nullptr, *x = nullptr, *o = nullptr, *scratch = nullptr;
  const size_t scratch_bytes = size_t(192) << 20;
  const unsigned blocks = 1056;
  KR_CHECK(cudaMalloc(&in, read_bytes));
  KR_CHECK(cudaMalloc(&sums, blocks * sizeof(float)));
  KR_CHECK(cudaMalloc(&x, n_scale * sizeof(float)));
  KR_CHECK(cudaMalloc(&o, n_fma * sizeof(float)));
  KR_CHECK(cudaMalloc(&scratch, scratch_bytes));
  KR_CHECK(cudaMemcpy(in, h.data(), read_bytes, cudaMemcpyHostToDevice));
  KR_CHECK(cudaMemcpy(x, h.data(), n_scale * sizeof(float), cudaMemcpyHostToDevice));
  for (int r = 0; r < 2; ++r) {
    flush_l2<<<blocks, 256>>>(reinterpret_cast<float4*>(scratch), scratch_bytes / 16);
    KR_CHECK_LAUNCH();
    read_sum<<<blocks, 256>>>(reinterpret_cast<const float4*>(in), n4, sums);
    KR_CHECK_LAUNCH();
    scale<<<(n_scale + 255) / 256, 256>>>(x, n_scale);
    KR_CHECK_LAUNCH();
    fma_loop<<<(n_fma + 255) / 256, 256>>>(o, n_fma);
    KR_CHECK_LAUNCH();
  }
  KR_CHECK(cudaDeviceSynchronize());
  std::vector<float> s(blocks), xs(n_scale), os(n_fma);
  KR_CHECK(cudaMemcpy(s.data(), sums, blocks * sizeof(float), cudaMemcpyDeviceToHost));
  KR_CHECK(cudaMemcpy(xs.data(), x, n_scale * sizeof(float), cudaMemcpyDeviceToHost));
  KR_CHECK(cudaMemcpy(os.data(), o, n_fma * sizeof(float), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < 1000; ++i) {
    float v = std::fmaf(std::fmaf(h[i], 3.0f, 1.0f), 3.0f, 1.0f);
    KR_EXPECT(xs[i] == v, "scale result differs at %zu", i);
  }
  kr::Digest d;
  d.add(s);
  d.add(xs);
  d.add(os);
  d.print("stream_read");
  return 0;
}
