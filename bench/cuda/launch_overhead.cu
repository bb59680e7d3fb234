// Overhead of kreplay on launches no tool replays: N launches of a tiny kernel, timed around the
// launch loop (host wall clock, synchronized at the end). Run it once plainly and once under
// kreplay with a tool that replays nothing; the difference per launch is kreplay's cost.
//   launch_overhead [launches=10000]
// Prints: launch_overhead launches=N loop_ms=... us_per_launch=... ok=1
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

__global__ void bump(unsigned* x) { atomicAdd(&x[threadIdx.x], 1u); }

#define CHECK(call)                                                                    \
  do {                                                                                 \
    cudaError_t e = (call);                                                            \
    if (e != cudaSuccess) {                                                            \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e));          \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 10000;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return 77;
  unsigned* x = nullptr;
  CHECK(cudaMalloc(&x, 32 * sizeof(unsigned)));
  CHECK(cudaMemset(x, 0, 32 * sizeof(unsigned)));
  for (int i = 0; i < 100; ++i) bump<<<1, 32>>>(x);
  CHECK(cudaDeviceSynchronize());
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) bump<<<1, 32>>>(x);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  auto t1 = std::chrono::steady_clock::now();
  unsigned host[32];
  CHECK(cudaMemcpy(host, x, sizeof(host), cudaMemcpyDeviceToHost));
  double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  bool ok = host[0] == static_cast<unsigned>(n + 100) && host[31] == static_cast<unsigned>(n + 100);
  std::printf("launch_overhead launches=%d loop_ms=%.3f us_per_launch=%.3f ok=%d\n", n, ms,
              ms * 1000.0 / n, ok ? 1 : 0);
  return ok ? 0 : 1;
}
