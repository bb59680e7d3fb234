// memory_traffic: kernels whose DRAM traffic users profile, for the agreement of kreplay's
// dram__bytes_read/write.sum with ncu --cache-control all (traffic_check.py, gpu-check.sh
// section traffic). Each is launched twice, in this order:
//   stream_read   reads 256 MiB (x), one store per block         read ~256 MiB, write ~0
//   stream_write  writes 256 MiB (y)                             read ~0, write ~256 MiB
//   inplace       x = 0.5x + 0.25 over 256 MiB                   read ~256 MiB, write ~256 MiB
//   scatter       out[perm[i]] += v[i], 16M random indices        data-dependent
//   cublas sgemm  C = A B + C, 4096^3 (beta = 1: C read and written)
//   l2_resident   reads a 16 MiB buffer 8 times (fits in the L2)  read ~16 MiB from a cold start
// Deterministic; the digest covers every output.
#include <cublas_v2.h>

#include "common.cuh"

constexpr size_t kBig = size_t{64} << 20;      // floats: 256 MiB
constexpr size_t kScatter = size_t{16} << 20;  // 16M elements
constexpr size_t kSmall = size_t{4} << 20;     // floats: 16 MiB
constexpr int kGemm = 4096;

__global__ void stream_read(const float4* in, size_t n4, float* out) {
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

__global__ void stream_write(float4* out, size_t n4, float v) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    out[i] = make_float4(v, v, v, v);
}

__global__ void inplace(float4* x, size_t n4) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float4 v = x[i];
    x[i] = make_float4(__fmaf_rn(v.x, 0.5f, 0.25f), __fmaf_rn(v.y, 0.5f, 0.25f),
                       __fmaf_rn(v.z, 0.5f, 0.25f), __fmaf_rn(v.w, 0.5f, 0.25f));
  }
}

// Each index appears once (a permutation): no two threads add to one element, so the result
// does not depend on the order.
__global__ void scatter(const uint32_t* perm, const float* v, size_t n, float* out) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[perm[i]] += v[i];
}

__global__ void l2_resident(const float4* in, size_t n4, int rounds, float* out) {
  float s = 0;
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4;
         i += static_cast<size_t>(gridDim.x) * blockDim.x) {
      float4 v = in[i];
      s += v.x + v.y + v.z + v.w;
    }
  }
  if (s == 12345.678f) out[0] = s;  // keeps the loads; never true for these inputs
  if (threadIdx.x == 0) out[1 + blockIdx.x] = s;
}

int main() {
  kr::require_gpu();
  const unsigned grid = 132 * 8, block = 256;
  float *x, *y, *sums, *v, *out, *a, *b, *c, *small;
  uint32_t* perm;
  KR_CHECK(cudaMalloc(&x, kBig * sizeof(float)));
  KR_CHECK(cudaMalloc(&y, kBig * sizeof(float)));
  KR_CHECK(cudaMalloc(&sums, (grid + 1) * sizeof(float)));
  KR_CHECK(cudaMalloc(&v, kScatter * sizeof(float)));
  KR_CHECK(cudaMalloc(&out, kScatter * sizeof(float)));
  KR_CHECK(cudaMalloc(&perm, kScatter * sizeof(uint32_t)));
  KR_CHECK(cudaMalloc(&a, size_t{kGemm} * kGemm * sizeof(float)));
  KR_CHECK(cudaMalloc(&b, size_t{kGemm} * kGemm * sizeof(float)));
  KR_CHECK(cudaMalloc(&c, size_t{kGemm} * kGemm * sizeof(float)));
  KR_CHECK(cudaMalloc(&small, kSmall * sizeof(float)));
  {
    auto hx = kr::random_unit(kBig, 1);
    KR_CHECK(cudaMemcpy(x, hx.data(), kBig * sizeof(float), cudaMemcpyHostToDevice));
    auto hv = kr::random_unit(kScatter, 2);
    KR_CHECK(cudaMemcpy(v, hv.data(), kScatter * sizeof(float), cudaMemcpyHostToDevice));
    KR_CHECK(cudaMemcpy(out, hv.data(), kScatter * sizeof(float), cudaMemcpyHostToDevice));
    std::vector<uint32_t> hp(kScatter);
    for (size_t i = 0; i < kScatter; ++i) hp[i] = static_cast<uint32_t>(i);
    kr::Rng r(3);
    for (size_t i = kScatter - 1; i > 0; --i) std::swap(hp[i], hp[r.u32() % (i + 1)]);
    KR_CHECK(cudaMemcpy(perm, hp.data(), kScatter * sizeof(uint32_t), cudaMemcpyHostToDevice));
    const size_t g = size_t{kGemm} * kGemm;
    auto ha = kr::random_unit(g, 4), hb = kr::random_unit(g, 5), hc = kr::random_unit(g, 6);
    KR_CHECK(cudaMemcpy(a, ha.data(), g * sizeof(float), cudaMemcpyHostToDevice));
    KR_CHECK(cudaMemcpy(b, hb.data(), g * sizeof(float), cudaMemcpyHostToDevice));
    KR_CHECK(cudaMemcpy(c, hc.data(), g * sizeof(float), cudaMemcpyHostToDevice));
    auto hs = kr::random_unit(kSmall, 7);
    KR_CHECK(cudaMemcpy(small, hs.data(), kSmall * sizeof(float), cudaMemcpyHostToDevice));
  }
  cublasHandle_t h;
  KR_CHECK_STATUS(cublasCreate(&h));
  const float one = 1.0f;
  for (int round = 0; round < 2; ++round) {
    stream_read<<<grid, block>>>(reinterpret_cast<const float4*>(x), kBig / 4, sums);
    KR_CHECK_LAUNCH();
    stream_write<<<grid, block>>>(reinterpret_cast<float4*>(y), kBig / 4, 1.5f + round);
    KR_CHECK_LAUNCH();
    inplace<<<grid, block>>>(reinterpret_cast<float4*>(x), kBig / 4);
    KR_CHECK_LAUNCH();
    scatter<<<kr::blocks_for(kScatter, block), block>>>(perm, v, kScatter, out);
    KR_CHECK_LAUNCH();
    KR_CHECK_STATUS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, kGemm, kGemm, kGemm, &one, a, kGemm,
                                b, kGemm, &one, c, kGemm));
    l2_resident<<<grid, block>>>(reinterpret_cast<const float4*>(small), kSmall / 4, 8, sums);
    KR_CHECK_LAUNCH();
  }
  KR_CHECK(cudaDeviceSynchronize());
  kr::Digest d;
  auto add = [&](const float* p, size_t n) {
    std::vector<float> host(n);
    KR_CHECK(cudaMemcpy(host.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost));
    d.add(host);
  };
  add(x, kBig);
  add(y, kBig);
  add(sums, grid + 1);
  add(out, kScatter);
  add(c, size_t{kGemm} * kGemm);
  KR_CHECK_STATUS(cublasDestroy(h));
  d.print("memory_traffic");
  return 0;
}
