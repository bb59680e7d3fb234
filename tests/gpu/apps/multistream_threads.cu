// multistream_threads: pins the replay window under concurrency (DESIGN §2.3): 4 host threads,
// each with its own non-blocking stream and buffer, launch 64 in-place updates each at the same
// time. Work of other threads must wait outside a window: if another thread's launch ran between
// a snapshot and its restore, the restore would undo that launch's update. Every launch also bumps
// its thread's slot of a __device__ counter array, which must read 64 per thread at the end.
#include "common.cuh"

#include <thread>

constexpr int kThreads = 4;
constexpr int kLaunches = 64;

__device__ unsigned int g_launches[kThreads];

__global__ void step(uint32_t* x, size_t n, int t, uint32_t launch) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = x[i] * (2u * t + 3u) + launch + 1u;
  if (i == 0) atomicAdd(&g_launches[t], 1u);
}

static void worker(int t, size_t n, std::vector<uint32_t>* result) {
  KR_CHECK(cudaSetDevice(0));
  cudaStream_t s;
  KR_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const std::vector<uint32_t> init = kr::random_u32(n, 0x9000 + t);
  std::vector<uint32_t> ref = init;
  uint32_t* x = nullptr;
  KR_CHECK(cudaMalloc(&x, n * sizeof(uint32_t)));
  KR_CHECK(cudaMemcpyAsync(x, init.data(), n * sizeof(uint32_t), cudaMemcpyHostToDevice, s));
  for (uint32_t l = 0; l < kLaunches; ++l) {
    step<<<kr::blocks_for(n, 256), 256, 0, s>>>(x, n, t, l);
    KR_CHECK_LAUNCH();
    for (auto& v : ref) v = v * (2u * t + 3u) + l + 1u;
  }
  result->resize(n);
  KR_CHECK(cudaMemcpyAsync(result->data(), x, n * sizeof(uint32_t), cudaMemcpyDeviceToHost, s));
  KR_CHECK(cudaStreamSynchronize(s));
  long long bad = kr::first_mismatch(*result, ref);
  KR_EXPECT(bad < 0, "thread %d x[%lld] = %u, CPU %u", t, bad, (*result)[bad], ref[bad]);
  KR_CHECK(cudaFree(x));
  KR_CHECK(cudaStreamDestroy(s));
}

int main() {
  kr::require_gpu();
  const unsigned int zeros[kThreads] = {};
  KR_CHECK(cudaMemcpyToSymbol(g_launches, zeros, sizeof(zeros)));

  std::vector<uint32_t> results[kThreads];
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back(worker, t, static_cast<size_t>(1 << 16) + t * 1024, &results[t]);
  }
  for (auto& th : threads) th.join();

  unsigned int counts[kThreads];
  KR_CHECK(cudaMemcpyFromSymbol(counts, g_launches, sizeof(counts)));
  kr::Digest d;
  for (int t = 0; t < kThreads; ++t) {
    KR_EXPECT(counts[t] == kLaunches, "thread %d: %u launches counted, expected %d", t, counts[t],
              kLaunches);
    d.add(results[t]);
  }
  d.add(counts, sizeof(counts));
  d.print("multistream_threads");
  return 0;
}
