// replay_app: the application the kreplay-vs-ncu benchmark profiles. It holds a large footprint
// (default 8 GiB), and runs K kernels, each writing its own 256 MiB slice in place, N launches in
// all, synchronizing after every S launches so a launch's profiling time is visible in the loop.
//   replay_app [footprint_gib=8] [kernels=3] [launches=6] [write_mib=256] [sync_every=1]
// sync_every=1 synchronizes after each launch; sync_every=0 runs the launches back to back and
// synchronizes once at the end; sync_every=S synchronizes after every S launches (windows of S
// launches: the shape range replay batches, one range per window).
// Besides the whole loop's per-launch time it prints steady_per_launch_ms: the loop minus its
// first window, per launch, which leaves out what a profiler does once per process at its first
// launch (with one window it equals per_launch_ms).
// Prints wall-clock (CLOCK_REALTIME) stamps: START_NS (main entered), FIRST_LAUNCH_NS (just
// before the first launch, after allocation and initialisation), END_NS (loop done), and the
// loop time per launch.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "bench_common.cuh"

template <int K>
__global__ void update(float* x, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = x[i] * (1.0f + 0.001f * K) + static_cast<float>(K);
}

int main(int argc, char** argv) {
  long long start = realtime_ns();
  size_t gib = argc > 1 ? std::atoll(argv[1]) : 8;
  int kernels = argc > 2 ? std::atoi(argv[2]) : 3;
  int launches = argc > 3 ? std::atoi(argv[3]) : 6;
  size_t write_mib = argc > 4 ? std::atoll(argv[4]) : 256;
  int sync_every = argc > 5 ? std::atoi(argv[5]) : 1;
  if (sync_every <= 0 || sync_every > launches) sync_every = launches;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return 77;
  float* base = nullptr;
  const size_t bytes = gib << 30;
  CHECK(cudaMalloc(&base, bytes));
  CHECK(cudaMemset(base, 0, bytes));
  const size_t n = (write_mib << 20) / sizeof(float);
  CHECK(cudaDeviceSynchronize());
  long long first = realtime_ns();
  auto t0 = std::chrono::steady_clock::now();
  auto t_first_window = t0;
  for (int l = 0; l < launches; ++l) {
    int k = l % kernels;
    float* x = base + static_cast<size_t>(k) * n;
    unsigned blocks = static_cast<unsigned>((n + 255) / 256);
    if (k == 0) update<0><<<blocks, 256>>>(x, n);
    else if (k == 1) update<1><<<blocks, 256>>>(x, n);
    else update<2><<<blocks, 256>>>(x, n);
    CHECK(cudaGetLastError());
    if ((l + 1) % sync_every == 0 || l + 1 == launches) {
      CHECK(cudaDeviceSynchronize());
      if (l + 1 == sync_every) t_first_window = std::chrono::steady_clock::now();
    }
  }
  CHECK(cudaDeviceSynchronize());
  auto t1 = std::chrono::steady_clock::now();
  long long end = realtime_ns();
  double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  const int steady_launches = launches - sync_every;
  const double steady_ms =
      steady_launches > 0
          ? std::chrono::duration<double, std::milli>(t1 - t_first_window).count() / steady_launches
          : ms / launches;
  std::printf(
      "replay_app START_NS=%lld FIRST_LAUNCH_NS=%lld END_NS=%lld loop_ms=%.3f per_launch_ms=%.3f "
      "steady_per_launch_ms=%.3f launches=%d sync_every=%d\n",
      start, first, end, ms, ms / launches, steady_ms, launches, sync_every);
  return 0;
}
