// managed: pins replay over managed (unified) memory that the host reads and writes between
// launches (DESIGN §3). One buffer is prefetched to the device, the other starts resident on the
// host, so a snapshot meets both placements; after every launch the host checks the buffers and
// changes one element of each, so pages migrate back and forth between replays.
#include "common.cuh"

__global__ void update(uint32_t* a, uint32_t* b, size_t n, uint32_t salt) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    a[i] = a[i] * 1664525u + 1013904223u + salt;
    b[i] = (b[i] << 1 | b[i] >> 31) ^ a[i];
  }
}

int main() {
  kr::require_gpu();
  constexpr size_t n = 1 << 18;
  constexpr unsigned threads = 256;

  uint32_t* a = nullptr;
  uint32_t* b = nullptr;
  KR_CHECK(cudaMallocManaged(&a, n * sizeof(uint32_t)));
  KR_CHECK(cudaMallocManaged(&b, n * sizeof(uint32_t)));
  std::vector<uint32_t> ref_a = kr::random_u32(n, 0x1111);
  std::vector<uint32_t> ref_b = kr::random_u32(n, 0x2222);
  for (size_t i = 0; i < n; ++i) {  // written by the host in place: pages start on the host
    a[i] = ref_a[i];
    b[i] = ref_b[i];
  }
  int concurrent = 0;
  KR_CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, 0));
  if (concurrent) {
    cudaMemLocation dev = {};
    dev.type = cudaMemLocationTypeDevice;
    dev.id = 0;
    KR_CHECK(cudaMemPrefetchAsync(a, n * sizeof(uint32_t), dev, 0, 0));
  }

  kr::Digest d;
  for (uint32_t l = 0; l < 8; ++l) {
    update<<<kr::blocks_for(n, threads), threads>>>(a, b, n, l);
    KR_CHECK_LAUNCH();
    KR_CHECK(cudaDeviceSynchronize());
    for (size_t i = 0; i < n; ++i) {
      ref_a[i] = ref_a[i] * 1664525u + 1013904223u + l;
      ref_b[i] = (ref_b[i] << 1 | ref_b[i] >> 31) ^ ref_a[i];
    }
    for (size_t i = 0; i < n; ++i) {  // the host reads the managed memory directly
      KR_EXPECT(a[i] == ref_a[i] && b[i] == ref_b[i], "launch %u element %zu: a %u (CPU %u), b %u (CPU %u)",
                l, i, a[i], ref_a[i], b[i], ref_b[i]);
    }
    const size_t k = (l * 7919u) % n;  // and writes one element of each in place
    a[k] += 0x9e3779b9u;
    ref_a[k] += 0x9e3779b9u;
    b[n - 1 - k] ^= 0x85ebca6bu;
    ref_b[n - 1 - k] ^= 0x85ebca6bu;
    d.add_value(a[k]);
    d.add_value(b[n - 1 - k]);
  }
  d.add(a, n * sizeof(uint32_t));
  d.add(b, n * sizeof(uint32_t));
  KR_CHECK(cudaFree(a));
  KR_CHECK(cudaFree(b));
  d.print("managed");
  return 0;
}
