// atomic_histogram: pins restore of memory that kernels change only through atomics.
//
// Several launches add into one 256-bin histogram and one 64-bit running sum with global atomics
// (through a shared-memory histogram per block), each launch binning a different byte of the same
// data. Integer atomics give the same result in any order, so the result is exact; a pass that is
// not undone adds its counts twice.
#include "common.cuh"

constexpr int kBins = 256;

__global__ void histogram(const uint32_t* data, size_t n, int shift, unsigned int* hist,
                          unsigned long long* sum) {
  __shared__ unsigned int local[kBins];
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  unsigned long long part = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint32_t v = data[i] >> shift;
    atomicAdd(&local[v & (kBins - 1)], 1u);
    part += v & 0xffffu;
  }
  atomicAdd(sum, part);
  __syncthreads();
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) {
    if (local[b]) atomicAdd(&hist[b], local[b]);
  }
}

int main() {
  kr::require_gpu();
  constexpr size_t n = 1 << 20;
  const int shifts[] = {0, 8, 16, 24, 3, 11, 0, 21};

  std::vector<uint32_t> data = kr::random_u32(n, 0xabcdef);
  std::vector<unsigned int> ref_hist(kBins, 0);
  unsigned long long ref_sum = 0;

  uint32_t* d_data = nullptr;
  unsigned int* d_hist = nullptr;
  unsigned long long* d_sum = nullptr;
  KR_CHECK(cudaMalloc(&d_data, n * sizeof(uint32_t)));
  KR_CHECK(cudaMalloc(&d_hist, kBins * sizeof(unsigned int)));
  KR_CHECK(cudaMalloc(&d_sum, sizeof(unsigned long long)));
  KR_CHECK(cudaMemcpy(d_data, data.data(), n * sizeof(uint32_t), cudaMemcpyHostToDevice));
  // Start from non-zero counts, so that a restore to zeros is wrong too.
  std::vector<unsigned int> start = kr::random_u32(kBins, 0x77);
  for (auto& s : start) s &= 0xffff;
  ref_hist = start;
  ref_sum = 0x123456789ull;
  KR_CHECK(cudaMemcpy(d_hist, start.data(), kBins * sizeof(unsigned int), cudaMemcpyHostToDevice));
  KR_CHECK(cudaMemcpy(d_sum, &ref_sum, sizeof(ref_sum), cudaMemcpyHostToDevice));

  for (int shift : shifts) {
    histogram<<<132, 256>>>(d_data, n, shift, d_hist, d_sum);
    KR_CHECK_LAUNCH();
    for (uint32_t v : data) {
      ref_hist[(v >> shift) & (kBins - 1)] += 1;
      ref_sum += (v >> shift) & 0xffffu;
    }
  }
  KR_CHECK(cudaDeviceSynchronize());

  std::vector<unsigned int> hist(kBins);
  unsigned long long sum = 0;
  KR_CHECK(cudaMemcpy(hist.data(), d_hist, kBins * sizeof(unsigned int), cudaMemcpyDeviceToHost));
  KR_CHECK(cudaMemcpy(&sum, d_sum, sizeof(sum), cudaMemcpyDeviceToHost));
  long long bad = kr::first_mismatch(hist, ref_hist);
  KR_EXPECT(bad < 0, "hist[%lld] = %u, CPU %u", bad, hist[bad], ref_hist[bad]);
  KR_EXPECT(sum == ref_sum, "sum %llu, CPU %llu", sum, ref_sum);

  kr::Digest d;
  d.add(hist);
  d.add_value(sum);
  KR_CHECK(cudaFree(d_data));
  KR_CHECK(cudaFree(d_hist));
  KR_CHECK(cudaFree(d_sum));
  d.print("atomic_histogram");
  return 0;
}
