// graph_memnodes: graphs with memory nodes. Before kreplay profiled graphs, graphMemoryNodes of
// NVIDIA's cuda-samples crashed under kreplay --metrics right after a graph launch that followed
// launches into a capturing stream.
//
//  1. Stream capture (global mode) of cudaMallocAsync, three kernels using the temporary (one
//     updates it in place), and cudaFreeAsync: a graph whose allocation lives and dies inside each
//     launch. Node by node (the default), the allocation is tracked between its alloc and free
//     nodes, so the in-place kernel node is restored between its passes; as a whole
//     (--graph-profiling graph) the graph is declined GRAPH_MEMORY and runs once.
//  2. A graph that allocates and does not free (the allocation outlives the launch) and another
//     that frees it. The first is replayed node by node (declined as a whole: it cannot be
//     launched twice in a row); the second frees memory it did not allocate and is declined
//     GRAPH_MEMORY in both modes. The allocation is tracked while it lives, so a plain kernel that
//     updates it in place between the two graphs is replayed correctly.
// Each step alternates with plain in-place launches; everything is checked against the CPU.
#include "common.cuh"

__global__ void fill(uint32_t* t, const uint32_t* x, size_t n, uint32_t salt) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) t[i] = x[i] * 3u + salt;
}

__global__ void combine(uint32_t* x, const uint32_t* t, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = (x[i] ^ t[i]) + 7u;
}

__global__ void plain(uint32_t* x, size_t n, uint32_t salt) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = x[i] * 5u + salt;
}

int main() {
  kr::require_gpu();
  constexpr size_t n = 1 << 16;
  constexpr size_t bytes = n * sizeof(uint32_t);
  constexpr unsigned threads = 256;
  const unsigned blocks = kr::blocks_for(n, threads);
  std::vector<uint32_t> x = kr::random_u32(n, 0x81);
  uint32_t* dx = nullptr;
  KR_CHECK(cudaMalloc(&dx, bytes));
  KR_CHECK(cudaMemcpy(dx, x.data(), bytes, cudaMemcpyHostToDevice));
  cudaStream_t s;
  KR_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  // 1. Captured allocation, used and freed inside the graph.
  cudaGraph_t g1;
  KR_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  uint32_t* tmp = nullptr;
  KR_CHECK(cudaMallocAsync(&tmp, bytes, s));
  fill<<<blocks, threads, 0, s>>>(tmp, dx, n, 11u);
  KR_CHECK_LAUNCH();
  plain<<<blocks, threads, 0, s>>>(tmp, n, 3u);  // in place on the graph's allocation
  KR_CHECK_LAUNCH();
  combine<<<blocks, threads, 0, s>>>(dx, tmp, n);
  KR_CHECK_LAUNCH();
  KR_CHECK(cudaFreeAsync(tmp, s));
  KR_CHECK(cudaStreamEndCapture(s, &g1));
  cudaGraphExec_t e1;
  KR_CHECK(cudaGraphInstantiate(&e1, g1, 0));
  for (uint32_t l = 0; l < 3; ++l) {
    KR_CHECK(cudaGraphLaunch(e1, s));
    plain<<<blocks, threads, 0, s>>>(dx, n, l + 1);
    KR_CHECK_LAUNCH();
    for (auto& v : x) {
      uint32_t t = (v * 3u + 11u) * 5u + 3u;
      v = (v ^ t) + 7u;
      v = v * 5u + l + 1;
    }
  }
  KR_CHECK(cudaStreamSynchronize(s));

  // 2. An allocation that outlives its graph's launch, freed by a second graph.
  cudaGraph_t ga, gf;
  KR_CHECK(cudaGraphCreate(&ga, 0));
  cudaMemAllocNodeParams ap{};
  ap.poolProps.allocType = cudaMemAllocationTypePinned;
  ap.poolProps.location.type = cudaMemLocationTypeDevice;
  ap.poolProps.location.id = 0;
  ap.bytesize = bytes;
  cudaGraphNode_t an;
  KR_CHECK(cudaGraphAddMemAllocNode(&an, ga, nullptr, 0, &ap));
  auto* buf = static_cast<uint32_t*>(ap.dptr);
  size_t nn = n;
  uint32_t salt = 5;
  void* fargs[] = {&buf, &dx, &nn, &salt};
  cudaKernelNodeParams kp{};
  kp.func = reinterpret_cast<void*>(fill);
  kp.gridDim = dim3(blocks);
  kp.blockDim = dim3(threads);
  kp.kernelParams = fargs;
  cudaGraphNode_t fn;
  KR_CHECK(cudaGraphAddKernelNode(&fn, ga, &an, 1, &kp));
  KR_CHECK(cudaGraphCreate(&gf, 0));
  void* cargs[] = {&dx, &buf, &nn};
  kp.func = reinterpret_cast<void*>(combine);
  kp.kernelParams = cargs;
  cudaGraphNode_t cn;
  KR_CHECK(cudaGraphAddKernelNode(&cn, gf, nullptr, 0, &kp));
  cudaGraphNode_t frn;
  KR_CHECK(cudaGraphAddMemFreeNode(&frn, gf, &cn, 1, buf));
  cudaGraphExec_t ea, ef;
  KR_CHECK(cudaGraphInstantiate(&ea, ga, 0));
  KR_CHECK(cudaGraphInstantiate(&ef, gf, 0));
  for (uint32_t l = 0; l < 2; ++l) {
    KR_CHECK(cudaGraphLaunch(ea, s));
    plain<<<blocks, threads, 0, s>>>(buf, n, 9u + l);  // in place on the graph's allocation
    KR_CHECK_LAUNCH();
    KR_CHECK(cudaGraphLaunch(ef, s));
    KR_CHECK(cudaStreamSynchronize(s));
    for (auto& v : x) {
      uint32_t t = v * 3u + 5u;
      t = t * 5u + 9u + l;
      v = (v ^ t) + 7u;
    }
  }

  std::vector<uint32_t> out(n);
  KR_CHECK(cudaMemcpy(out.data(), dx, bytes, cudaMemcpyDeviceToHost));
  long long bad = kr::first_mismatch(out, x);
  KR_EXPECT(bad < 0, "x[%lld] = %u, CPU %u", bad, out[bad], x[bad]);
  kr::Digest d;
  d.add(out);
  KR_CHECK(cudaGraphExecDestroy(e1));
  KR_CHECK(cudaGraphExecDestroy(ea));
  KR_CHECK(cudaGraphExecDestroy(ef));
  KR_CHECK(cudaStreamDestroy(s));
  d.print("graph_memnodes");
  return 0;
}
