// malloc_async: pins tracking of stream-ordered pool memory (DESIGN §3): allocations from the
// default pool and from an explicit cudaMemPool, in-place updates of both, cudaFreeAsync, and a
// new allocation each round that the pool may place at the address just freed.
//
// acc (explicit pool) lives through all rounds; tmp (default pool) is allocated, filled, updated
// in place, copied out and freed every round, with a size that changes from round to round. The
// inventory must retire a freed block before its address is handed out again.
#include "common.cuh"

__global__ void fill(uint32_t* tmp, size_t n, uint32_t round) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) tmp[i] = static_cast<uint32_t>(i) * 2654435761u + round * 40503u + 1u;
}

__global__ void accumulate(uint32_t* acc, const uint32_t* tmp, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) acc[i] = acc[i] * 3u + tmp[i];
}

__global__ void mix(uint32_t* tmp, const uint32_t* acc, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) tmp[i] = (tmp[i] ^ acc[i]) + 7u;
}

int main() {
  kr::require_gpu();
  constexpr size_t n_acc = 1 << 18;
  constexpr int rounds = 6;
  constexpr unsigned threads = 256;

  cudaStream_t s;
  KR_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool;
  KR_CHECK(cudaMemPoolCreate(&pool, &props));
  cudaMemPool_t default_pool;
  KR_CHECK(cudaDeviceGetDefaultMemPool(&default_pool, 0));
  // Keep freed blocks in the pools, so a new allocation reuses the addresses just freed.
  uint64_t keep = UINT64_MAX;
  KR_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  KR_CHECK(cudaMemPoolSetAttribute(default_pool, cudaMemPoolAttrReleaseThreshold, &keep));

  std::vector<uint32_t> ref_acc = kr::random_u32(n_acc, 0x5eed);
  uint32_t* acc = nullptr;
  KR_CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&acc), n_acc * sizeof(uint32_t), pool, s));
  KR_CHECK(cudaMemcpyAsync(acc, ref_acc.data(), n_acc * sizeof(uint32_t), cudaMemcpyHostToDevice, s));

  kr::Digest d;
  for (int r = 0; r < rounds; ++r) {
    const size_t n = n_acc - static_cast<size_t>(r % 3) * 4096;  // size changes per round
    uint32_t* tmp = nullptr;
    KR_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&tmp), n * sizeof(uint32_t), s));
    fill<<<kr::blocks_for(n, threads), threads, 0, s>>>(tmp, n, r);
    KR_CHECK_LAUNCH();
    accumulate<<<kr::blocks_for(n, threads), threads, 0, s>>>(acc, tmp, n);
    KR_CHECK_LAUNCH();
    mix<<<kr::blocks_for(n, threads), threads, 0, s>>>(tmp, acc, n);
    KR_CHECK_LAUNCH();
    std::vector<uint32_t> out(n);
    KR_CHECK(cudaMemcpyAsync(out.data(), tmp, n * sizeof(uint32_t), cudaMemcpyDeviceToHost, s));
    KR_CHECK(cudaFreeAsync(tmp, s));
    KR_CHECK(cudaStreamSynchronize(s));

    std::vector<uint32_t> ref(n);
    for (size_t i = 0; i < n; ++i) {
      uint32_t t = static_cast<uint32_t>(i) * 2654435761u + static_cast<uint32_t>(r) * 40503u + 1u;
      ref_acc[i] = ref_acc[i] * 3u + t;
      ref[i] = (t ^ ref_acc[i]) + 7u;
    }
    long long bad = kr::first_mismatch(out, ref);
    KR_EXPECT(bad < 0, "round %d tmp[%lld] = %u, CPU %u", r, bad, out[bad], ref[bad]);
    d.add(out);
  }

  std::vector<uint32_t> acc_out(n_acc);
  KR_CHECK(cudaMemcpyAsync(acc_out.data(), acc, n_acc * sizeof(uint32_t), cudaMemcpyDeviceToHost, s));
  KR_CHECK(cudaFreeAsync(acc, s));
  KR_CHECK(cudaStreamSynchronize(s));
  long long bad = kr::first_mismatch(acc_out, ref_acc);
  KR_EXPECT(bad < 0, "acc[%lld] = %u, CPU %u", bad, acc_out[bad], ref_acc[bad]);
  d.add(acc_out);

  KR_CHECK(cudaMemPoolDestroy(pool));
  KR_CHECK(cudaStreamDestroy(s));
  d.print("malloc_async");
  return 0;
}
