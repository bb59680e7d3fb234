// cluster_launch: pins replay of a thread-block-cluster launch made through the DRIVER's
// cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = (2,1,1) (the kernel has no
// __cluster_dims__, so the cluster exists only in the launch attributes, which a pass must
// re-issue). Each block reads its partner block's shared memory (distributed shared memory,
// cluster.map_shared_rank) and updates global memory in place. sm_90 only.
#include "common.cuh"

#include <cooperative_groups.h>
#include <cuda.h>
#include <cudaTypedefs.h>

namespace cg = cooperative_groups;

constexpr unsigned kBlock = 256;

__global__ void cluster_step(uint32_t* x, uint32_t salt) {
  __shared__ uint32_t s[kBlock];
  cg::cluster_group cluster = cg::this_cluster();
  const size_t i = blockIdx.x * static_cast<size_t>(kBlock) + threadIdx.x;
  const uint32_t mine = x[i];
  s[threadIdx.x] = mine;
  cluster.sync();  // both blocks' shared memory is filled
  const uint32_t* peer = cluster.map_shared_rank(s, static_cast<int>(cluster.block_rank() ^ 1u));
  const uint32_t theirs = peer[kBlock - 1 - threadIdx.x];
  cluster.sync();  // the partner has read our shared memory before either block exits
  x[i] = mine * 2654435761u + theirs + salt;
}

int main() {
  kr::require_gpu();
  int major = 0;
  KR_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  KR_EXPECT(major >= 9, "thread block clusters need sm_90 or newer (device is sm_%d)", major * 10);
  auto launchKernelEx = kr::driver_fn<PFN_cuLaunchKernelEx_v11060>("cuLaunchKernelEx");

  constexpr unsigned blocks = 264;  // a multiple of the cluster size
  constexpr size_t n = static_cast<size_t>(blocks) * kBlock;
  std::vector<uint32_t> ref = kr::random_u32(n, 0xc1c1);
  uint32_t* x = nullptr;
  KR_CHECK(cudaMalloc(&x, n * sizeof(uint32_t)));
  KR_CHECK(cudaMemcpy(x, ref.data(), n * sizeof(uint32_t), cudaMemcpyHostToDevice));

  cudaFunction_t fn;
  KR_CHECK(cudaGetFuncBySymbol(&fn, reinterpret_cast<const void*>(cluster_step)));
  CUlaunchAttribute attr = {};
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = 2;
  attr.value.clusterDim.y = 1;
  attr.value.clusterDim.z = 1;
  CUlaunchConfig cfg = {};
  cfg.gridDimX = blocks;
  cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = kBlock;
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.sharedMemBytes = 0;
  cfg.hStream = nullptr;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;

  for (uint32_t l = 0; l < 6; ++l) {
    uint32_t salt = 0x101u * (l + 1);
    void* args[] = {&x, &salt};
    KR_CHECK_STATUS(launchKernelEx(&cfg, reinterpret_cast<CUfunction>(fn), args, nullptr));
    KR_CHECK_LAUNCH();
    std::vector<uint32_t> prev = ref;
    for (size_t i = 0; i < n; ++i) {
      const size_t b = i / kBlock, t = i % kBlock;
      ref[i] = prev[i] * 2654435761u + prev[(b ^ 1) * kBlock + (kBlock - 1 - t)] + salt;
    }
  }
  std::vector<uint32_t> out(n);
  KR_CHECK(cudaMemcpy(out.data(), x, n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  long long bad = kr::first_mismatch(out, ref);
  KR_EXPECT(bad < 0, "x[%lld] = %u, CPU %u", bad, out[bad], ref[bad]);

  kr::Digest d;
  d.add(out);
  KR_CHECK(cudaFree(x));
  d.print("cluster_launch");
  return 0;
}
