// graph_launch: pins that kernels run by a CUDA graph are replayed (DESIGN §2c): with node
// profiling (the default) each kernel node is a dispatch of its own, run after the graph's own
// launch with its entry state restored; ordinary launches in between are replayed as usual.
//
// Two in-place kernels are stream-captured (global capture mode: kreplay must make no call that
// breaks the capture) into a graph that is launched 4 times, each followed by an ordinary
// in-place launch on the same stream.
#include "common.cuh"

__global__ void g_first(uint32_t* x, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = x[i] * 5u + 1u;
}

__global__ void g_second(uint32_t* x, uint32_t* y, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = (y[i] ^ x[i]) * 3u;
}

__global__ void plain(uint32_t* x, const uint32_t* y, size_t n, uint32_t salt) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] += (y[i] >> 5) + salt;
}

int main() {
  kr::require_gpu();
  constexpr size_t n = 1 << 18;
  constexpr size_t bytes = n * sizeof(uint32_t);
  constexpr unsigned threads = 256;
  const unsigned blocks = kr::blocks_for(n, threads);

  std::vector<uint32_t> x = kr::random_u32(n, 0x6a), y = kr::random_u32(n, 0x6b);
  uint32_t *dx = nullptr, *dy = nullptr;
  KR_CHECK(cudaMalloc(&dx, bytes));
  KR_CHECK(cudaMalloc(&dy, bytes));
  KR_CHECK(cudaMemcpy(dx, x.data(), bytes, cudaMemcpyHostToDevice));
  KR_CHECK(cudaMemcpy(dy, y.data(), bytes, cudaMemcpyHostToDevice));

  cudaStream_t s;
  KR_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t graph;
  KR_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  g_first<<<blocks, threads, 0, s>>>(dx, n);
  KR_CHECK_LAUNCH();
  g_second<<<blocks, threads, 0, s>>>(dx, dy, n);
  KR_CHECK_LAUNCH();
  KR_CHECK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  KR_CHECK(cudaGraphInstantiate(&exec, graph, 0));

  for (uint32_t l = 0; l < 4; ++l) {
    KR_CHECK(cudaGraphLaunch(exec, s));
    plain<<<blocks, threads, 0, s>>>(dx, dy, n, l + 1);
    KR_CHECK_LAUNCH();
    for (size_t i = 0; i < n; ++i) {
      x[i] = x[i] * 5u + 1u;
      y[i] = (y[i] ^ x[i]) * 3u;
      x[i] += (y[i] >> 5) + l + 1;
    }
  }
  KR_CHECK(cudaStreamSynchronize(s));

  std::vector<uint32_t> ox(n), oy(n);
  KR_CHECK(cudaMemcpy(ox.data(), dx, bytes, cudaMemcpyDeviceToHost));
  KR_CHECK(cudaMemcpy(oy.data(), dy, bytes, cudaMemcpyDeviceToHost));
  long long bad = kr::first_mismatch(ox, x);
  KR_EXPECT(bad < 0, "x[%lld] = %u, CPU %u", bad, ox[bad], x[bad]);
  bad = kr::first_mismatch(oy, y);
  KR_EXPECT(bad < 0, "y[%lld] = %u, CPU %u", bad, oy[bad], y[bad]);

  kr::Digest d;
  d.add(ox);
  d.add(oy);
  KR_CHECK(cudaGraphExecDestroy(exec));
  KR_CHECK(cudaGraphDestroy(graph));
  KR_CHECK(cudaStreamDestroy(s));
  KR_CHECK(cudaFree(dx));
  KR_CHECK(cudaFree(dy));
  d.print("graph_launch");
  return 0;
}
