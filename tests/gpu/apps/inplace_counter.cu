// inplace_counter: pins that every replay pass but the last is undone, for plain device memory,
// a module-scope __device__ variable and a __managed__ variable.
//
// Each launch updates x in place (x = fma(x, 1.0001, 1)), bumps a __device__ launch counter and a
// __managed__ one, and stamps the counter value it saw into stamps[launch]. Without kreplay the
// counter reads 0, 1, 2, ... at the launches; a replay that does not restore x, the counter or
// the managed variable between passes leaves x, stamps or the counts different from the CPU
// reference and from the baseline digest.
#include "common.cuh"

#include <cmath>

__device__ unsigned long long g_launches;
__managed__ unsigned long long m_launches;

__global__ void step(float* x, size_t n, unsigned long long* stamps, int launch) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = __fmaf_rn(x[i], 1.0001f, 1.0f);
  if (i == 0) {
    stamps[launch] = atomicAdd(&g_launches, 1ull);
    m_launches += 1;
  }
}

int main() {
  kr::require_gpu();
  constexpr size_t n = 1 << 20;
  constexpr int launches = 12;
  constexpr unsigned threads = 256;

  std::vector<float> host = kr::random_unit(n, 0x1234);
  std::vector<float> ref = host;

  float* x = nullptr;
  unsigned long long* stamps = nullptr;
  KR_CHECK(cudaMalloc(&x, n * sizeof(float)));
  KR_CHECK(cudaMalloc(&stamps, launches * sizeof(unsigned long long)));
  KR_CHECK(cudaMemcpy(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  KR_CHECK(cudaMemset(stamps, 0xff, launches * sizeof(unsigned long long)));
  const unsigned long long zero = 0;
  KR_CHECK(cudaMemcpyToSymbol(g_launches, &zero, sizeof(zero)));
  m_launches = 0;  // host write: no kernel is running yet

  for (int l = 0; l < launches; ++l) {
    step<<<kr::blocks_for(n, threads), threads>>>(x, n, stamps, l);
    KR_CHECK_LAUNCH();
    for (auto& v : ref) v = std::fmaf(v, 1.0001f, 1.0f);
  }
  KR_CHECK(cudaDeviceSynchronize());

  std::vector<float> out(n);
  std::vector<unsigned long long> st(launches);
  unsigned long long dev_count = 0;
  KR_CHECK(cudaMemcpy(out.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost));
  KR_CHECK(cudaMemcpy(st.data(), stamps, st.size() * sizeof(st[0]), cudaMemcpyDeviceToHost));
  KR_CHECK(cudaMemcpyFromSymbol(&dev_count, g_launches, sizeof(dev_count)));
  const unsigned long long managed_count = m_launches;

  KR_EXPECT(dev_count == launches, "__device__ counter %llu, expected %d", dev_count, launches);
  KR_EXPECT(managed_count == launches, "__managed__ counter %llu, expected %d", managed_count,
            launches);
  for (int l = 0; l < launches; ++l) {
    KR_EXPECT(st[l] == static_cast<unsigned long long>(l), "launch %d saw counter %llu", l, st[l]);
  }
  long long bad = kr::first_mismatch(out, ref);
  KR_EXPECT(bad < 0, "x[%lld] = %a, CPU %a", bad, out[bad], ref[bad]);

  kr::Digest d;
  d.add(out);
  d.add(st);
  d.add_value(dev_count);
  d.add_value(managed_count);
  KR_CHECK(cudaFree(x));
  KR_CHECK(cudaFree(stamps));
  d.print("inplace_counter");
  return 0;
}
