// mapped_host: pins replay over pinned host memory mapped into the device (DESIGN §3), both kinds:
// cudaHostAlloc(cudaHostAllocMapped) and malloc'd memory made mapped by cudaHostRegister. Kernels
// update both in place through their device pointers; the host reads them between launches. The
// bytes live in host RAM, so a snapshot of device memory alone would miss them.
#include "common.cuh"

__global__ void update(uint32_t* p, uint32_t* r, size_t n, uint32_t salt) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    p[i] = p[i] * 7u + 3u + salt;
    r[i] += p[i] ^ (r[i] >> 3);
  }
}

int main() {
  kr::require_gpu();
  constexpr size_t n = 1 << 16;
  constexpr size_t bytes = n * sizeof(uint32_t);
  constexpr unsigned threads = 256;

  uint32_t* p = nullptr;  // cudaHostAlloc, mapped
  KR_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocMapped));
  void* raw = nullptr;  // plain host memory, registered and mapped
  KR_EXPECT(posix_memalign(&raw, 4096, bytes) == 0, "posix_memalign failed");
  uint32_t* r = static_cast<uint32_t*>(raw);
  std::vector<uint32_t> ref_p = kr::random_u32(n, 0x3333);
  std::vector<uint32_t> ref_r = kr::random_u32(n, 0x4444);
  std::memcpy(p, ref_p.data(), bytes);
  std::memcpy(r, ref_r.data(), bytes);
  KR_CHECK(cudaHostRegister(r, bytes, cudaHostRegisterMapped));

  uint32_t* dp = nullptr;
  uint32_t* dr = nullptr;
  KR_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dp), p, 0));
  KR_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dr), r, 0));

  kr::Digest d;
  for (uint32_t l = 0; l < 8; ++l) {
    update<<<kr::blocks_for(n, threads), threads>>>(dp, dr, n, l);
    KR_CHECK_LAUNCH();
    KR_CHECK(cudaDeviceSynchronize());
    for (size_t i = 0; i < n; ++i) {
      ref_p[i] = ref_p[i] * 7u + 3u + l;
      ref_r[i] += ref_p[i] ^ (ref_r[i] >> 3);
    }
    long long bad = kr::first_mismatch(std::vector<uint32_t>(p, p + n), ref_p);
    KR_EXPECT(bad < 0, "launch %u p[%lld] = %u, CPU %u", l, bad, p[bad], ref_p[bad]);
    bad = kr::first_mismatch(std::vector<uint32_t>(r, r + n), ref_r);
    KR_EXPECT(bad < 0, "launch %u r[%lld] = %u, CPU %u", l, bad, r[bad], ref_r[bad]);
    d.add_value(p[l]);
  }
  d.add(p, bytes);
  d.add(r, bytes);
  KR_CHECK(cudaHostUnregister(r));
  std::free(raw);
  KR_CHECK(cudaFreeHost(p));
  d.print("mapped_host");
  return 0;
}
