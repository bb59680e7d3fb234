// graph_conditional: a graph with conditional nodes (IF and WHILE), replayed as a whole: every
// pass must take the branches the restored data selects. Before kreplay profiled graphs, a graph
// launch counted with CUPTI's auto range crashed inside CUPTI (graphConditionalNodes of NVIDIA's
// cuda-samples, under kreplay --metrics).
//
// Graph: set_if (the IF's condition from a flag in device memory) -> IF { bump(x, 3, 1) } ->
// arm (the WHILE's trip count from device memory) -> WHILE { bump(x, 5, 2); countdown } ->
// bump(x, 7, 3). Launched 4 times; between launches the host changes the flag and the trip count
// with copies. Everything is checked against the CPU.
#include "common.cuh"

__global__ void bump(uint32_t* x, size_t n, uint32_t mul, uint32_t add) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = x[i] * mul + add;
}

__global__ void set_if(cudaGraphConditionalHandle h, const uint32_t* flag) {
  cudaGraphSetConditional(h, *flag != 0 ? 1u : 0u);
}

__global__ void arm(cudaGraphConditionalHandle h, const uint32_t* trips, uint32_t* left) {
  *left = *trips;
  cudaGraphSetConditional(h, *trips != 0 ? 1u : 0u);
}

__global__ void countdown(cudaGraphConditionalHandle h, uint32_t* left) {
  uint32_t l = --*left;
  cudaGraphSetConditional(h, l != 0 ? 1u : 0u);
}

namespace {

cudaGraphNode_t add_kernel(cudaGraph_t g, std::vector<cudaGraphNode_t> deps, void* fn, unsigned grid,
                           unsigned block, void** args) {
  cudaKernelNodeParams p{};
  p.func = fn;
  p.gridDim = dim3(grid);
  p.blockDim = dim3(block);
  p.kernelParams = args;
  cudaGraphNode_t node;
  KR_CHECK(cudaGraphAddKernelNode(&node, g, deps.data(), deps.size(), &p));
  return node;
}

cudaGraph_t add_conditional(cudaGraph_t g, cudaGraphNode_t dep, cudaGraphConditionalHandle h,
                            cudaGraphConditionalNodeType type, cudaGraphNode_t* node) {
  cudaGraphNodeParams cp{};
  cp.type = cudaGraphNodeTypeConditional;
  cp.conditional.handle = h;
  cp.conditional.type = type;
  cp.conditional.size = 1;
  KR_CHECK(cudaGraphAddNode(node, g, &dep, nullptr, 1, &cp));
  return cp.conditional.phGraph_out[0];
}

}  // namespace

int main() {
  kr::require_gpu();
  constexpr size_t n = 1 << 16;
  constexpr unsigned threads = 256;
  const unsigned blocks = kr::blocks_for(n, threads);
  std::vector<uint32_t> x = kr::random_u32(n, 0x71);
  uint32_t *dx = nullptr, *dflag = nullptr, *dtrips = nullptr, *dleft = nullptr;
  KR_CHECK(cudaMalloc(&dx, n * sizeof(uint32_t)));
  KR_CHECK(cudaMalloc(&dflag, sizeof(uint32_t)));
  KR_CHECK(cudaMalloc(&dtrips, sizeof(uint32_t)));
  KR_CHECK(cudaMalloc(&dleft, sizeof(uint32_t)));
  KR_CHECK(cudaMemcpy(dx, x.data(), n * sizeof(uint32_t), cudaMemcpyHostToDevice));

  cudaGraph_t g;
  KR_CHECK(cudaGraphCreate(&g, 0));
  cudaGraphConditionalHandle h_if, h_while;
  KR_CHECK(cudaGraphConditionalHandleCreate(&h_if, g, 0, 0));
  KR_CHECK(cudaGraphConditionalHandleCreate(&h_while, g, 0, 0));
  size_t nn = n;
  uint32_t m3 = 3, a1 = 1, m5 = 5, a2 = 2, m7 = 7, a3 = 3;
  void* if_args[] = {&h_if, &dflag};
  auto n_set = add_kernel(g, {}, reinterpret_cast<void*>(set_if), 1, 1, if_args);
  cudaGraphNode_t n_if;
  cudaGraph_t if_body = add_conditional(g, n_set, h_if, cudaGraphCondTypeIf, &n_if);
  void* b1[] = {&dx, &nn, &m3, &a1};
  add_kernel(if_body, {}, reinterpret_cast<void*>(bump), blocks, threads, b1);
  void* arm_args[] = {&h_while, &dtrips, &dleft};
  auto n_arm = add_kernel(g, {n_if}, reinterpret_cast<void*>(arm), 1, 1, arm_args);
  cudaGraphNode_t n_while;
  cudaGraph_t while_body = add_conditional(g, n_arm, h_while, cudaGraphCondTypeWhile, &n_while);
  void* b2[] = {&dx, &nn, &m5, &a2};
  auto n_b2 = add_kernel(while_body, {}, reinterpret_cast<void*>(bump), blocks, threads, b2);
  void* cd_args[] = {&h_while, &dleft};
  add_kernel(while_body, {n_b2}, reinterpret_cast<void*>(countdown), 1, 1, cd_args);
  void* b3[] = {&dx, &nn, &m7, &a3};
  add_kernel(g, {n_while}, reinterpret_cast<void*>(bump), blocks, threads, b3);
  cudaGraphExec_t exec;
  KR_CHECK(cudaGraphInstantiate(&exec, g, 0));

  cudaStream_t s;
  KR_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const uint32_t flags[] = {1, 0, 1, 1};
  const uint32_t trips[] = {3, 2, 0, 1};
  for (int l = 0; l < 4; ++l) {
    KR_CHECK(cudaMemcpy(dflag, &flags[l], sizeof(uint32_t), cudaMemcpyHostToDevice));
    KR_CHECK(cudaMemcpy(dtrips, &trips[l], sizeof(uint32_t), cudaMemcpyHostToDevice));
    KR_CHECK(cudaGraphLaunch(exec, s));
    KR_CHECK(cudaStreamSynchronize(s));
    for (auto& v : x) {
      if (flags[l]) v = v * 3u + 1u;
      for (uint32_t t = 0; t < trips[l]; ++t) v = v * 5u + 2u;
      v = v * 7u + 3u;
    }
  }
  std::vector<uint32_t> out(n);
  uint32_t left = 0;
  KR_CHECK(cudaMemcpy(out.data(), dx, n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  KR_CHECK(cudaMemcpy(&left, dleft, sizeof(uint32_t), cudaMemcpyDeviceToHost));
  long long bad = kr::first_mismatch(out, x);
  KR_EXPECT(bad < 0, "x[%lld] = %u, CPU %u", bad, out[bad], x[bad]);
  KR_EXPECT(left == 0, "the last WHILE left %u", left);
  kr::Digest d;
  d.add(out);
  KR_CHECK(cudaGraphExecDestroy(exec));
  KR_CHECK(cudaGraphDestroy(g));
  KR_CHECK(cudaStreamDestroy(s));
  d.print("graph_conditional");
  return 0;
}
