// graph_probe: what CUPTI's range profiler (user replay) reports for a CUDA graph launch, per kind
// of graph. It answers the questions kreplay's graph replay is built on:
//   - auto range: does a graph launch give one range per kernel node, and in which order (each
//     kernel node has its own grid size, so sm__ctas_launched.sum names the node of a range)?
//   - user range: is a graph launch inside one push/pop one range with the sum of its nodes?
//   - a multi-pass set over repeated launches of the same executable graph: complete, no NaN?
//   - graphs with memset/memcpy nodes, child graphs, memory alloc/free nodes, conditional IF and
//     WHILE nodes: does profiling them work at all?
//   - no graph (`streamops`): kernels with a cudaMemsetAsync and a device-to-device
//     cudaMemcpyAsync between them on one stream: does auto range make a range of the memset and
//     the copy, or only of the kernels (what recording memsets and copies into a range replay
//     would rely on)?
//
//   graph_probe <graph> <mode>
//     graph: chain fork mixed child memnodes cond_if cond_while streamops
//     mode:  auto user auto10 none   (none: launch without the profiler, prints the result only)
// Prints `graph_probe graph=G mode=M ranges=N values=[...] result=... status=...` lines; a probe,
// not a test: it asserts nothing, it reports what CUPTI did.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/cuda/cupti/metric_sets.hpp"
#include "backends/cuda/cupti/range_profiler.hpp"

namespace {

#define CK(call)                                                                       \
  do {                                                                                 \
    cudaError_t e_ = (call);                                                           \
    if (e_ != cudaSuccess) {                                                           \
      std::printf("graph_probe error %s: %s\n", #call, cudaGetErrorString(e_));        \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

// Every block adds its grid size into out[slot]: the result shows which nodes ran and how often.
__global__ void mark(unsigned* out, int slot) {
  if (threadIdx.x == 0) atomicAdd(&out[slot], 1u);
}

__global__ void write_buf(unsigned* buf, unsigned v) {
  if (threadIdx.x == 0) buf[blockIdx.x] = v + blockIdx.x;
}

__global__ void sum_buf(const unsigned* buf, int n, unsigned* out, int slot) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    unsigned s = 0;
    for (int i = 0; i < n; ++i) s += buf[i];
    atomicAdd(&out[slot], s);
  }
}

__global__ void set_if(cudaGraphConditionalHandle h, const unsigned* flag) {
  cudaGraphSetConditional(h, *flag != 0 ? 1u : 0u);
}

// WHILE body: counts down out[7]; the loop runs while it is non-zero.
__global__ void countdown(cudaGraphConditionalHandle h, unsigned* out) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    unsigned left = --out[7];
    cudaGraphSetConditional(h, left != 0 ? 1u : 0u);
  }
}

cudaGraphNode_t add_mark(cudaGraph_t g, const std::vector<cudaGraphNode_t>& deps, unsigned* out,
                         int slot, unsigned grid) {
  cudaKernelNodeParams p{};
  void* args[] = {&out, &slot};
  p.func = reinterpret_cast<void*>(mark);
  p.gridDim = dim3(grid);
  p.blockDim = dim3(32);
  p.kernelParams = args;
  cudaGraphNode_t n;
  CK(cudaGraphAddKernelNode(&n, g, deps.data(), deps.size(), &p));
  return n;
}

struct Built {
  cudaGraphExec_t exec = nullptr;
  std::string expect;  // what out[] should hold after one launch
};

// streamops: mark(7 blocks), memset, mark(11), D2D copy, mark(13) on @p s.
void stream_ops(unsigned* out, unsigned* buf, cudaStream_t s) {
  mark<<<7, 32, 0, s>>>(out, 0);
  CK(cudaMemsetAsync(buf, 0, 256 * sizeof(unsigned), s));
  mark<<<11, 32, 0, s>>>(out, 1);
  CK(cudaMemcpyAsync(buf + 128, buf, 128 * sizeof(unsigned), cudaMemcpyDeviceToDevice, s));
  mark<<<13, 32, 0, s>>>(out, 2);
}

Built build(const std::string& kind, unsigned* out, unsigned* buf, unsigned* flag) {
  if (kind == "streamops") return Built{nullptr, "7 11 13"};
  cudaGraph_t g;
  CK(cudaGraphCreate(&g, 0));
  std::string expect;
  if (kind == "chain") {
    auto a = add_mark(g, {}, out, 0, 7);
    auto b = add_mark(g, {a}, out, 1, 11);
    add_mark(g, {b}, out, 2, 13);
    expect = "7 11 13";
  } else if (kind == "fork") {
    auto a = add_mark(g, {}, out, 0, 5);
    auto b = add_mark(g, {a}, out, 1, 9);
    auto c = add_mark(g, {a}, out, 2, 17);
    add_mark(g, {b, c}, out, 3, 3);
    expect = "5 9 17 3";
  } else if (kind == "mixed") {
    cudaMemsetParams ms{};
    ms.dst = buf;
    ms.value = 0;
    ms.elementSize = 4;
    ms.width = 64;
    ms.height = 1;
    cudaGraphNode_t m;
    CK(cudaGraphAddMemsetNode(&m, g, nullptr, 0, &ms));
    cudaKernelNodeParams p{};
    unsigned v = 100;
    void* wargs[] = {&buf, &v};
    p.func = reinterpret_cast<void*>(write_buf);
    p.gridDim = dim3(7);
    p.blockDim = dim3(32);
    p.kernelParams = wargs;
    cudaGraphNode_t w;
    CK(cudaGraphAddKernelNode(&w, g, &m, 1, &p));
    cudaGraphNode_t c;
    CK(cudaGraphAddMemcpyNode1D(&c, g, &w, 1, buf + 64, buf, 7 * sizeof(unsigned),
                                cudaMemcpyDeviceToDevice));
    int n = 7, slot = 4;
    unsigned* src = buf + 64;
    void* sargs[] = {&src, &n, &out, &slot};
    p.func = reinterpret_cast<void*>(sum_buf);
    p.gridDim = dim3(11);
    p.kernelParams = sargs;
    cudaGraphNode_t s;
    CK(cudaGraphAddKernelNode(&s, g, &c, 1, &p));
    expect = "out[4]=721";
  } else if (kind == "child") {
    cudaGraph_t child;
    CK(cudaGraphCreate(&child, 0));
    auto x = add_mark(child, {}, out, 1, 11);
    add_mark(child, {x}, out, 2, 13);
    auto a = add_mark(g, {}, out, 0, 7);
    cudaGraphNode_t cn;
    CK(cudaGraphAddChildGraphNode(&cn, g, &a, 1, child));
    add_mark(g, {cn}, out, 3, 3);
    expect = "7 11 13 3";
  } else if (kind == "memnodes") {
    cudaMemAllocNodeParams ap{};
    ap.poolProps.allocType = cudaMemAllocationTypePinned;
    ap.poolProps.location.type = cudaMemLocationTypeDevice;
    ap.poolProps.location.id = 0;
    ap.bytesize = 1 << 20;
    cudaGraphNode_t an;
    CK(cudaGraphAddMemAllocNode(&an, g, nullptr, 0, &ap));
    unsigned* mem = static_cast<unsigned*>(ap.dptr);
    cudaKernelNodeParams p{};
    unsigned v = 1;
    void* wargs[] = {&mem, &v};
    p.func = reinterpret_cast<void*>(write_buf);
    p.gridDim = dim3(7);
    p.blockDim = dim3(32);
    p.kernelParams = wargs;
    cudaGraphNode_t w;
    CK(cudaGraphAddKernelNode(&w, g, &an, 1, &p));
    int n = 7, slot = 4;
    void* sargs[] = {&mem, &n, &out, &slot};
    p.func = reinterpret_cast<void*>(sum_buf);
    p.gridDim = dim3(11);
    p.kernelParams = sargs;
    cudaGraphNode_t s;
    CK(cudaGraphAddKernelNode(&s, g, &w, 1, &p));
    cudaGraphNode_t f;
    CK(cudaGraphAddMemFreeNode(&f, g, &s, 1, mem));
    expect = "out[4]=28";
  } else if (kind == "cond_if" || kind == "cond_while") {
    const bool loop = kind == "cond_while";
    cudaGraphConditionalHandle h;
    CK(cudaGraphConditionalHandleCreate(&h, g, loop ? 1u : 0u, cudaGraphCondAssignDefault));
    cudaKernelNodeParams p{};
    cudaGraphNode_t pre;
    void* iargs[] = {&h, &flag};
    if (!loop) {
      p.func = reinterpret_cast<void*>(set_if);
      p.gridDim = dim3(1);
      p.blockDim = dim3(1);
      p.kernelParams = iargs;
      CK(cudaGraphAddKernelNode(&pre, g, nullptr, 0, &p));
    } else {
      pre = add_mark(g, {}, out, 0, 1);
    }
    cudaGraphNodeParams cp{};
    cp.type = cudaGraphNodeTypeConditional;
    cp.conditional.handle = h;
    cp.conditional.type = loop ? cudaGraphCondTypeWhile : cudaGraphCondTypeIf;
    cp.conditional.size = 1;
    cudaGraphNode_t cn;
    CK(cudaGraphAddNode(&cn, g, &pre, nullptr, 1, &cp));
    cudaGraph_t body = cp.conditional.phGraph_out[0];
    if (!loop) {
      add_mark(body, {}, out, 1, 19);
    } else {
      auto m = add_mark(body, {}, out, 1, 19);
      cudaKernelNodeParams q{};
      void* cargs[] = {&h, &out};
      q.func = reinterpret_cast<void*>(countdown);
      q.gridDim = dim3(1);
      q.blockDim = dim3(1);
      q.kernelParams = cargs;
      cudaGraphNode_t cd;
      CK(cudaGraphAddKernelNode(&cd, body, &m, 1, &q));
    }
    add_mark(g, {cn}, out, 3, 3);
    expect = loop ? "out[1]=57 (3 iterations of 19)" : "out[1]=19 (flag set)";
  } else {
    std::printf("graph_probe unknown graph '%s'\n", kind.c_str());
    std::exit(2);
  }
  Built b;
  CK(cudaGraphInstantiate(&b.exec, g, 0));
  b.expect = expect;
  return b;
}

std::string result_of(unsigned* out) {
  unsigned h[8];
  CK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
  std::string s;
  for (unsigned v : h) s += std::to_string(v) + " ";
  return s;
}

void reset(unsigned* out, unsigned* flag) {
  CK(cudaMemset(out, 0, 8 * sizeof(unsigned)));
  unsigned init[8] = {0, 0, 0, 0, 0, 0, 0, 3};
  CK(cudaMemcpy(out, init, sizeof init, cudaMemcpyHostToDevice));
  unsigned one = 1;
  CK(cudaMemcpy(flag, &one, sizeof one, cudaMemcpyHostToDevice));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::printf("usage: graph_probe <chain|fork|mixed|child|memnodes|cond_if|cond_while|"
                "streamops> <auto|user|auto10|none>\n");
    return 2;
  }
  const std::string kind = argv[1], mode = argv[2];
  CK(cudaSetDevice(0));
  CK(cudaFree(nullptr));
  unsigned *out, *buf, *flag;
  CK(cudaMalloc(&out, 8 * sizeof(unsigned)));
  CK(cudaMalloc(&buf, 256 * sizeof(unsigned)));
  CK(cudaMalloc(&flag, sizeof(unsigned)));
  reset(out, flag);
  Built b = build(kind, out, buf, flag);
  cudaStream_t s;
  CK(cudaStreamCreate(&s));

  auto launch = [&] {
    if (b.exec != nullptr) {
      CK(cudaGraphLaunch(b.exec, s));
    } else {
      stream_ops(out, buf, s);
    }
  };
  if (mode == "none") {
    launch();
    CK(cudaStreamSynchronize(s));
    std::printf("graph_probe graph=%s mode=none result=[%s] expect=%s\n", kind.c_str(),
                result_of(out).c_str(), b.expect.c_str());
    return 0;
  }
  CUcontext ctx;
  cuCtxGetCurrent(&ctx);
  auto rp = kreplay::cupti::RangeProfiler::create(ctx);
  if (!rp.ok()) {
    std::printf("graph_probe graph=%s mode=%s status=create-failed %s\n", kind.c_str(), mode.c_str(),
                rp.status().message().c_str());
    return 1;
  }
  std::vector<std::string> metrics = {"sm__ctas_launched.sum"};
  if (mode == "auto10") {
    metrics.assign(kreplay::cupti::kTenPassMetrics.begin(), kreplay::cupti::kTenPassMetrics.end());
    metrics.push_back("sm__ctas_launched.sum");
  }
  const auto range_mode =
      mode == "user" ? kreplay::cupti::RangeMode::kUser : kreplay::cupti::RangeMode::kAuto;
  auto report = [&](const char* what, const kreplay::Status& st) {
    std::printf("graph_probe graph=%s mode=%s status=%s-failed %s\n", kind.c_str(), mode.c_str(),
                what, st.message().c_str());
    std::exit(1);
  };
  if (auto st = (*rp)->configure(metrics, range_mode, 32); !st.ok()) report("configure", st);
  if (auto st = (*rp)->begin(); !st.ok()) report("begin", st);
  size_t passes = 0;
  bool done = false;
  while (!done && passes < 40) {
    if (passes > 0) reset(out, flag);  // every pass starts from the same state
    if (auto st = (*rp)->start(); !st.ok()) report("start", st);
    if (range_mode == kreplay::cupti::RangeMode::kUser) {
      if (auto st = (*rp)->push_range("graph"); !st.ok()) report("push", st);
    }
    launch();
    CK(cudaStreamSynchronize(s));
    if (range_mode == kreplay::cupti::RangeMode::kUser) {
      if (auto st = (*rp)->pop_range(); !st.ok()) report("pop", st);
    }
    auto pr = (*rp)->stop();
    if (!pr.ok()) report("stop", pr.status());
    ++passes;
    done = pr->all_passes_submitted;
  }
  std::string result = result_of(out);
  auto dropped = (*rp)->decode();
  if (!dropped.ok()) report("decode", dropped.status());
  auto values = (*rp)->values();
  if (!values.ok()) report("values", values.status());
  std::string text;
  size_t nan = 0;
  for (const auto& r : *values) {
    text += r.name + ":";
    for (size_t i = 0; i < r.values.size(); ++i) {
      if (std::isnan(r.values[i])) ++nan;
    }
    text += std::to_string(static_cast<long long>(r.values.back())) + " ";  // ctas launched
  }
  std::printf("graph_probe graph=%s mode=%s passes=%zu ranges=%zu dropped=%zu nan=%zu "
              "ctas=[%s] result=[%s] expect=%s status=ok\n",
              kind.c_str(), mode.c_str(), passes, values->size(), *dropped, nan, text.c_str(),
              result.c_str(), b.expect.c_str());
  return 0;
}
