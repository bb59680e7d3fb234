// multi_kernel_chain: pins restore across a chain of different kernels that feed each other (and,
// later, range replay, DESIGN §2b): three kernels, each reading the previous one's output and
// updating its own buffer in place, repeated 8 times on one stream with no host synchronization
// in between. A replay of any link that is not undone corrupts every later link.
#include "common.cuh"

__global__ void link_a(uint32_t* a, const uint32_t* c, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) a[i] = a[i] * 3u + c[i];
}

__global__ void link_b(uint32_t* b, const uint32_t* a, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) b[i] = (b[i] ^ (a[i] >> 3)) + 1u;
}

__global__ void link_c(uint32_t* c, const uint32_t* a, const uint32_t* b, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) c[i] += a[i] * b[i];
}

int main() {
  kr::require_gpu();
  constexpr size_t n = 1 << 18;
  constexpr size_t bytes = n * sizeof(uint32_t);
  constexpr unsigned threads = 256;
  const unsigned blocks = kr::blocks_for(n, threads);

  std::vector<uint32_t> a = kr::random_u32(n, 0xa), b = kr::random_u32(n, 0xb),
                        c = kr::random_u32(n, 0xc);
  uint32_t *da = nullptr, *db = nullptr, *dc = nullptr;
  KR_CHECK(cudaMalloc(&da, bytes));
  KR_CHECK(cudaMalloc(&db, bytes));
  KR_CHECK(cudaMalloc(&dc, bytes));
  KR_CHECK(cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice));
  KR_CHECK(cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice));
  KR_CHECK(cudaMemcpy(dc, c.data(), bytes, cudaMemcpyHostToDevice));

  for (int r = 0; r < 8; ++r) {
    link_a<<<blocks, threads>>>(da, dc, n);
    KR_CHECK_LAUNCH();
    link_b<<<blocks, threads>>>(db, da, n);
    KR_CHECK_LAUNCH();
    link_c<<<blocks, threads>>>(dc, da, db, n);
    KR_CHECK_LAUNCH();
    for (size_t i = 0; i < n; ++i) {
      a[i] = a[i] * 3u + c[i];
      b[i] = (b[i] ^ (a[i] >> 3)) + 1u;
      c[i] += a[i] * b[i];
    }
  }
  KR_CHECK(cudaDeviceSynchronize());

  std::vector<uint32_t> oa(n), ob(n), oc(n);
  KR_CHECK(cudaMemcpy(oa.data(), da, bytes, cudaMemcpyDeviceToHost));
  KR_CHECK(cudaMemcpy(ob.data(), db, bytes, cudaMemcpyDeviceToHost));
  KR_CHECK(cudaMemcpy(oc.data(), dc, bytes, cudaMemcpyDeviceToHost));
  long long bad = kr::first_mismatch(oa, a);
  KR_EXPECT(bad < 0, "a[%lld] = %u, CPU %u", bad, oa[bad], a[bad]);
  bad = kr::first_mismatch(ob, b);
  KR_EXPECT(bad < 0, "b[%lld] = %u, CPU %u", bad, ob[bad], b[bad]);
  bad = kr::first_mismatch(oc, c);
  KR_EXPECT(bad < 0, "c[%lld] = %u, CPU %u", bad, oc[bad], c[bad]);

  kr::Digest d;
  d.add(oa);
  d.add(ob);
  d.add(oc);
  KR_CHECK(cudaFree(da));
  KR_CHECK(cudaFree(db));
  KR_CHECK(cudaFree(dc));
  d.print("multi_kernel_chain");
  return 0;
}
