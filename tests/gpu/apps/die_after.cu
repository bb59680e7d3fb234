// die_after HOW K: K in-place updates of a buffer with a cudaDeviceSynchronize after each (the
// host observes no memory, so under range replay they form one range that stays open), then the
// process dies by HOW: "term" (raise(SIGTERM)), "segv" (a real invalid write), "abort". Run
// under kreplay by tests/gpu/crash_check.py: the open range must be closed, every pass run, before
// the outputs are written.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common.cuh"

__global__ void update(uint32_t* x, size_t n, uint32_t k) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = x[i] * 3u + k;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: die_after term|segv|abort K\n");
    return 2;
  }
  kr::require_gpu();
  const char* how = argv[1];
  const int k = std::atoi(argv[2]);
  constexpr size_t n = 1 << 20;
  constexpr unsigned threads = 256;
  uint32_t* dx = nullptr;
  KR_CHECK(cudaMalloc(&dx, n * sizeof(uint32_t)));
  KR_CHECK(cudaMemset(dx, 0, n * sizeof(uint32_t)));
  for (int i = 0; i < k; ++i) {
    update<<<kr::blocks_for(n, threads), threads>>>(dx, n, static_cast<uint32_t>(i + 1));
    KR_CHECK_LAUNCH();
    KR_CHECK(cudaDeviceSynchronize());
  }
  std::printf("die_after: %d launches done, dying by %s\n", k, how);
  std::fflush(stdout);
  if (std::strcmp(how, "segv") == 0) {
    volatile uintptr_t address = 16;  // not a constant the compiler can see through
    *reinterpret_cast<volatile int*>(address) = 1;
  } else if (std::strcmp(how, "abort") == 0) {
    std::abort();
  } else {
    std::raise(SIGTERM);
  }
  return 0;
}
