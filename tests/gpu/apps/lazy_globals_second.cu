// lazy_globals' second module: a __device__ counter and the kernel that bumps it, in a translation
// unit of their own, so that CUDA registers them as a module of their own and, with lazy loading,
// loads it at this kernel's first launch -- which lazy_globals makes while kreplay's range of its
// first module's launches is open. The module's variable then comes to exist inside that range.
#include "common.cuh"

__device__ unsigned int g_second_count = 0;

__global__ void bump_second(unsigned int* stamp) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *stamp = atomicAdd(&g_second_count, 1u);
}

void launch_bump_second(unsigned int* stamp) {
  bump_second<<<1, 32>>>(stamp);
  KR_CHECK_LAUNCH();
}

unsigned int read_second_count() {
  unsigned int count = 0;
  KR_CHECK(cudaMemcpyFromSymbol(&count, g_second_count, sizeof(count)));
  return count;
}
