// services_kernels: kernels for the per-pass services' GPU checks (tests/gpu/services_check.py,
// issue 11 item 7). Built with -lineinfo so the sass table can name source lines.
//   hot_ffma      one hot loop of dependent FFMAs on registers: nearly every PC sample falls in
//                 the loop, whose instructions all sit on one source line (printed as HOT_LINE);
//   phases        a compute phase (FFMAs, no memory traffic) and then a streaming phase (reads a
//                 1 GiB buffer 4 times) with every block resident at once, so the GPU as a whole
//                 goes from DRAM-idle to DRAM-bound: PM samples of DRAM throughput low then high;
//   stream_copy   a plain memory-bound kernel (reads and writes 256 MiB).
// Each is launched twice. Deterministic; the digest covers every output. Exit 77 without a GPU.
#include "common.cuh"

__global__ void hot_ffma(float* out, int iters) {
  float a = 1.0f + 1e-7f * static_cast<float>(threadIdx.x), b = 0.999f, c = 1e-3f, d = 0.5f;
  // The hot loop: keep it on one line (HOT_LINE below is this line's number).
  for (int i = 0; i < iters; ++i) { a = fmaf(a, b, c); d = fmaf(d, b, a); c = fmaf(c, b, d); b = fmaf(b, 1.0f, -1e-9f); }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a + b + c + d;
}
constexpr int kHotLine = __LINE__ - 3;

__global__ void phases(const float4* in, size_t n4, int compute_iters, int read_rounds, float* out) {
  float a = 1.0f + 1e-7f * static_cast<float>(threadIdx.x), b = 0.999f;
  for (int i = 0; i < compute_iters; ++i) { a = fmaf(a, b, 1e-3f); b = fmaf(b, 1.0f, -1e-9f); }
  float s = 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (int r = 0; r < read_rounds; ++r) {
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4; i += stride) {
      float4 v = in[i];
      s += v.x + v.y + v.z + v.w;
    }
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a + b + s;
}

__global__ void stream_copy(const float4* in, float4* out, size_t n4) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float4 v = in[i];
    out[i] = make_float4(v.x * 2.f, v.y * 2.f, v.z * 2.f, v.w * 2.f);
  }
}

int main() {
  kr::require_gpu();
  std::printf("HOT_LINE %d\n", kHotLine);
  int sms = 0;
  KR_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int threads = 256;
  const int blocks = sms * 2;  // every block resident at once (2 x 256 threads per SM)
  const size_t n_out = static_cast<size_t>(blocks) * threads;
  const size_t big4 = (size_t{1} << 30) / sizeof(float4);
  const size_t copy4 = (size_t{256} << 20) / sizeof(float4);
  float* out = nullptr;
  float4 *big = nullptr, *copy_out = nullptr;
  KR_CHECK(cudaMalloc(&out, n_out * sizeof(float)));
  KR_CHECK(cudaMalloc(&big, big4 * sizeof(float4)));
  KR_CHECK(cudaMalloc(&copy_out, copy4 * sizeof(float4)));
  KR_CHECK(cudaMemset(big, 0, big4 * sizeof(float4)));  // zeros: sums stay exact
  kr::Digest dg;
  std::vector<float> host(n_out);
  for (int rep = 0; rep < 2; ++rep) {
    hot_ffma<<<blocks, threads>>>(out, 1 << 16);
    KR_CHECK_LAUNCH();
    KR_CHECK(cudaMemcpy(host.data(), out, n_out * sizeof(float), cudaMemcpyDeviceToHost));
    dg.add(host);
    // ~2-3 ms of FFMAs, then 4 GiB read (~1.5 ms at H200 bandwidth).
    phases<<<blocks, threads>>>(big, big4, 1 << 17, 4, out);
    KR_CHECK_LAUNCH();
    KR_CHECK(cudaMemcpy(host.data(), out, n_out * sizeof(float), cudaMemcpyDeviceToHost));
    dg.add(host);
    stream_copy<<<blocks * 4, threads>>>(big, copy_out, copy4);
    KR_CHECK_LAUNCH();
    KR_CHECK(cudaDeviceSynchronize());
  }
  std::vector<float4> tail(1024);
  KR_CHECK(cudaMemcpy(tail.data(), copy_out + copy4 - tail.size(), tail.size() * sizeof(float4),
                      cudaMemcpyDeviceToHost));
  dg.add(tail);
  KR_CHECK(cudaFree(out));
  KR_CHECK(cudaFree(big));
  KR_CHECK(cudaFree(copy_out));
  dg.print("services_kernels");
  return 0;
}
