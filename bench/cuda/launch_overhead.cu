// Overhead of kreplay on launches no tool replays: N launches of a tiny kernel, timed around the
// launch loop (host wall clock, synchronized at the end). Run it once plainly and once under
// kreplay with a tool that replays nothing; the difference per launch is kreplay's cost.
//   launch_overhead [launches=10000] [kernel_us=0]
// kernel_us=0: a tiny kernel, so the loop is launch-bound (the worst case for a per-launch cost);
// kernel_us=U: each kernel runs about U microseconds, so the GPU, not the host, sets the pace.
// Prints: launch_overhead launches=N ... ok=1 MAIN_NS=... LOOP_NS=... END_NS=...
// (CLOCK_REALTIME at main's entry, before the timed loop (after CUDA's start-up, the allocation
// and 100 warm-up launches) and just before main returns, so that a
// caller who notes the time it started the process can split the process wall time into before
// main (loading, injection), main, and after main (exit handlers)).
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "bench_common.cuh"

// Each launch adds 1 to 32 counters; with spin_ns > 0 the block also waits that long on the GPU's
// global timer first, so the application is GPU-bound instead of launch-bound.
__global__ void bump(unsigned* x, unsigned long long spin_ns) {
  if (spin_ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < spin_ns);
  }
  atomicAdd(&x[threadIdx.x], 1u);
}


int main(int argc, char** argv) {
  long long main_ns = realtime_ns();
  int n = argc > 1 ? std::atoi(argv[1]) : 10000;
  unsigned long long spin_ns = argc > 2 ? std::strtoull(argv[2], nullptr, 10) * 1000ull : 0;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return 77;
  unsigned* x = nullptr;
  CHECK(cudaMalloc(&x, 32 * sizeof(unsigned)));
  CHECK(cudaMemset(x, 0, 32 * sizeof(unsigned)));
  for (int i = 0; i < 100; ++i) bump<<<1, 32>>>(x, spin_ns);
  CHECK(cudaDeviceSynchronize());
  long long loop_ns = realtime_ns();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) bump<<<1, 32>>>(x, spin_ns);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  auto t1 = std::chrono::steady_clock::now();
  unsigned host[32];
  CHECK(cudaMemcpy(host, x, sizeof(host), cudaMemcpyDeviceToHost));
  double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  bool ok = host[0] == static_cast<unsigned>(n + 100) && host[31] == static_cast<unsigned>(n + 100);
  std::printf("launch_overhead launches=%d kernel_us=%llu loop_ms=%.3f us_per_launch=%.3f ok=%d MAIN_NS=%lld LOOP_NS=%lld END_NS=%lld\n",
              n, spin_ns / 1000ull, ms, ms * 1000.0 / n, ok ? 1 : 0, main_ns, loop_ns, realtime_ns());
  return ok ? 0 : 1;
}
