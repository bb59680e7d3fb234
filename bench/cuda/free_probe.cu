// free_probe: the application half (see free_probe_inject.cpp). Allocates and frees through the
// runtime (cudaMalloc/cudaFree, cudaMallocAsync/cudaFreeAsync) and through the driver
// (cuMemAlloc/cuMemFree), and after each free asks the driver whether the block is still
// allocated (cuMemGetAddressRange). Run it plainly and with CUDA_INJECTION64_PATH set to
// libfree_probe_inject.so and the FREE_PROBE_* switches. Prints `free_probe app ...` lines.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>

namespace {

const char* state(CUdeviceptr p) {
  CUdeviceptr base = 0;
  size_t size = 0;
  return cuMemGetAddressRange(&base, &size, p) == CUDA_SUCCESS ? "allocated" : "freed";
}

__global__ void touch(int* p) { p[threadIdx.x] = threadIdx.x; }

}  // namespace

int main() {
  void* a = nullptr;
  if (cudaMalloc(&a, 4 << 20) != cudaSuccess) {
    std::printf("free_probe app no GPU\n");
    return 77;
  }
  touch<<<1, 32>>>(static_cast<int*>(a));
  cudaDeviceSynchronize();
  cudaError_t e = cudaFree(a);
  std::printf("free_probe app cudaFree=%s block_after=%s\n", cudaGetErrorName(e),
              state(reinterpret_cast<CUdeviceptr>(a)));

  cudaStream_t s = nullptr;
  cudaStreamCreate(&s);
  void* b = nullptr;
  cudaMallocAsync(&b, 4 << 20, s);
  touch<<<1, 32, 0, s>>>(static_cast<int*>(b));
  e = cudaFreeAsync(b, s);
  cudaStreamSynchronize(s);
  std::printf("free_probe app cudaFreeAsync=%s\n", cudaGetErrorName(e));

  CUdeviceptr c = 0;
  cuMemAlloc(&c, 4 << 20);
  const CUresult r = cuMemFree(c);
  std::printf("free_probe app cuMemFree=%d block_after=%s\n", static_cast<int>(r), state(c));
  e = cudaGetLastError();
  std::printf("free_probe app last_error=%s\n", cudaGetErrorName(e));
  return 0;
}
