// GraphTracker: the walk of executable graphs (see graphs.hpp).
#include "backends/cuda/graphs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "backends/cuda/internal_guard.hpp"
#include "common/logging.hpp"

namespace kreplay::cuda {
namespace {

// The graph's nodes in an order their dependencies allow (Kahn's algorithm; ties keep the order
// cuGraphGetNodes gives, which is creation order).
Result<std::vector<CUgraphNode>> ordered_nodes(CUgraph graph) {
  size_t n = 0;
  if (cuGraphGetNodes(graph, nullptr, &n) != CUDA_SUCCESS) {
    return Error(KREPLAY_STATUS_ERROR, "cuGraphGetNodes failed");
  }
  std::vector<CUgraphNode> nodes(n);
  if (n > 0 && cuGraphGetNodes(graph, nodes.data(), &n) != CUDA_SUCCESS) {
    return Error(KREPLAY_STATUS_ERROR, "cuGraphGetNodes failed");
  }
  std::map<CUgraphNode, size_t> index;
  for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i]] = i;
  std::vector<std::vector<size_t>> dependents(n);
  std::vector<size_t> missing(n, 0);
  for (size_t i = 0; i < n; ++i) {
    size_t count = 0;
    if (cuGraphNodeGetDependencies(nodes[i], nullptr, nullptr, &count) != CUDA_SUCCESS) continue;
    std::vector<CUgraphNode> deps(count);
    if (count > 0 &&
        cuGraphNodeGetDependencies(nodes[i], deps.data(), nullptr, &count) != CUDA_SUCCESS) {
      continue;
    }
    for (CUgraphNode d : deps) {
      auto it = index.find(d);
      if (it == index.end()) continue;
      dependents[it->second].push_back(i);
      ++missing[i];
    }
  }
  std::set<size_t> ready;
  for (size_t i = 0; i < n; ++i) {
    if (missing[i] == 0) ready.insert(i);
  }
  std::vector<CUgraphNode> out;
  out.reserve(n);
  while (!ready.empty()) {
    size_t i = *ready.begin();
    ready.erase(ready.begin());
    out.push_back(nodes[i]);
    for (size_t d : dependents[i]) {
      if (--missing[d] == 0) ready.insert(d);
    }
  }
  if (out.size() != n) return Error(KREPLAY_STATUS_ERROR, "the graph's dependencies form a cycle");
  return out;
}

// A kernel node: function, configuration, attributes and a copy of its argument bytes.
Status read_kernel_node(CUgraphNode node, GraphNodeWork& w) {
  CUDA_KERNEL_NODE_PARAMS p{};
  if (cuGraphKernelNodeGetParams(node, &p) != CUDA_SUCCESS) {
    return Error(KREPLAY_STATUS_ERROR, "cuGraphKernelNodeGetParams failed");
  }
  w.kind = GraphNodeWork::Kind::kKernel;
  w.f = p.func;
  if (w.f == nullptr && p.kern != nullptr && cuKernelGetFunction(&w.f, p.kern) != CUDA_SUCCESS) {
    return Error(KREPLAY_STATUS_ERROR, "cuKernelGetFunction failed");
  }
  if (w.f == nullptr) return Error(KREPLAY_STATUS_ERROR, "a kernel node without a function");
  w.grid[0] = p.gridDimX; w.grid[1] = p.gridDimY; w.grid[2] = p.gridDimZ;
  w.block[0] = p.blockDimX; w.block[1] = p.blockDimY; w.block[2] = p.blockDimZ;
  w.shared_bytes = p.sharedMemBytes;
  size_t arg_bytes = 0;
  for (size_t i = 0;; ++i) {
    size_t off = 0, size = 0;
    if (cuFuncGetParamInfo(w.f, i, &off, &size) != CUDA_SUCCESS) break;
    w.layout.emplace_back(off, size);
    arg_bytes = std::max(arg_bytes, off + size);
  }
  w.args.assign(arg_bytes, std::byte{0});
  if (p.kernelParams != nullptr) {
    for (size_t i = 0; i < w.layout.size(); ++i) {
      if (p.kernelParams[i] == nullptr) return Error(KREPLAY_STATUS_ERROR, "a NULL parameter");
      std::memcpy(w.args.data() + w.layout[i].first, p.kernelParams[i], w.layout[i].second);
    }
  } else if (p.extra != nullptr) {
    void* buf = nullptr;
    size_t size = 0;
    for (void** e = p.extra; *e != CU_LAUNCH_PARAM_END; e += 2) {
      if (*e == CU_LAUNCH_PARAM_BUFFER_POINTER) buf = e[1];
      if (*e == CU_LAUNCH_PARAM_BUFFER_SIZE) size = *static_cast<size_t*>(e[1]);
    }
    if (buf == nullptr) return Error(KREPLAY_STATUS_ERROR, "a kernel node with no arguments found");
    w.args.assign(static_cast<const std::byte*>(buf), static_cast<const std::byte*>(buf) + size);
  } else if (!w.layout.empty()) {
    return Error(KREPLAY_STATUS_ERROR, "a kernel node with no arguments found");
  }
  CUkernelNodeAttrValue v{};
  if (cuGraphKernelNodeGetAttribute(node, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v) ==
          CUDA_SUCCESS &&
      v.clusterDim.x > 0) {
    w.cluster[0] = v.clusterDim.x;
    w.cluster[1] = v.clusterDim.y;
    w.cluster[2] = v.clusterDim.z;
  }
  v = {};
  if (cuGraphKernelNodeGetAttribute(node, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &v) == CUDA_SUCCESS) {
    w.cooperative = v.cooperative != 0;
  }
  return Status::Ok();
}

struct Walk {
  ExecGraph& out;
  std::set<CUdeviceptr> allocated;  // by alloc nodes of this graph
  std::map<CUdeviceptr, size_t> alloc_size;
  std::set<CUdeviceptr> freed;      // by free nodes of this graph

  void whole(const char* why) {
    if (out.whole_only.empty()) out.whole_only = why;
  }

  Status graph(CUgraph g, int depth) {
    if (depth > 16) return Error(KREPLAY_STATUS_ERROR, "child graphs nested too deep");
    ASSIGN_OR_RETURN(std::vector<CUgraphNode> nodes, ordered_nodes(g));
    for (CUgraphNode node : nodes) {
      CUgraphNodeType type{};
      if (cuGraphNodeGetType(node, &type) != CUDA_SUCCESS) {
        return Error(KREPLAY_STATUS_ERROR, "cuGraphNodeGetType failed");
      }
      switch (type) {
        case CU_GRAPH_NODE_TYPE_KERNEL: {
          GraphNodeWork w;
          RETURN_IF_ERROR(read_kernel_node(node, w));
          out.nodes.push_back(std::move(w));
          ++out.kernel_nodes;
          break;
        }
        case CU_GRAPH_NODE_TYPE_MEMCPY: {
          GraphNodeWork w;
          w.kind = GraphNodeWork::Kind::kCopy;
          if (cuGraphMemcpyNodeGetParams(node, &w.copy) != CUDA_SUCCESS) {
            return Error(KREPLAY_STATUS_ERROR, "cuGraphMemcpyNodeGetParams failed");
          }
          out.nodes.push_back(std::move(w));
          break;
        }
        case CU_GRAPH_NODE_TYPE_MEMSET: {
          GraphNodeWork w;
          w.kind = GraphNodeWork::Kind::kMemset;
          if (cuGraphMemsetNodeGetParams(node, &w.memset) != CUDA_SUCCESS) {
            return Error(KREPLAY_STATUS_ERROR, "cuGraphMemsetNodeGetParams failed");
          }
          out.nodes.push_back(std::move(w));
          break;
        }
        case CU_GRAPH_NODE_TYPE_GRAPH: {
          CUgraph child = nullptr;
          if (cuGraphChildGraphNodeGetGraph(node, &child) != CUDA_SUCCESS) {
            return Error(KREPLAY_STATUS_ERROR, "cuGraphChildGraphNodeGetGraph failed");
          }
          RETURN_IF_ERROR(graph(child, depth + 1));
          break;
        }
        case CU_GRAPH_NODE_TYPE_HOST:
          out.host_nodes = true;
          break;
        case CU_GRAPH_NODE_TYPE_MEM_ALLOC: {
          CUDA_MEM_ALLOC_NODE_PARAMS p{};
          if (cuGraphMemAllocNodeGetParams(node, &p) != CUDA_SUCCESS) {
            return Error(KREPLAY_STATUS_ERROR, "cuGraphMemAllocNodeGetParams failed");
          }
          allocated.insert(p.dptr);
          alloc_size[p.dptr] = p.bytesize;
          GraphNodeWork w;
          w.kind = GraphNodeWork::Kind::kAlloc;
          w.mem = p.dptr;
          w.mem_bytes = p.bytesize;
          out.nodes.push_back(std::move(w));
          break;
        }
        case CU_GRAPH_NODE_TYPE_MEM_FREE: {
          CUdeviceptr ptr = 0;
          if (cuGraphMemFreeNodeGetParams(node, &ptr) != CUDA_SUCCESS) {
            return Error(KREPLAY_STATUS_ERROR, "cuGraphMemFreeNodeGetParams failed");
          }
          freed.insert(ptr);
          GraphNodeWork w;
          w.kind = GraphNodeWork::Kind::kFree;
          w.mem = ptr;
          out.nodes.push_back(std::move(w));
          break;
        }
        case CU_GRAPH_NODE_TYPE_CONDITIONAL:
          // The body's kernels are not counted: what runs depends on the data.
          whole("conditional nodes");
          break;
        case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL:
        case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT:
        case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
          whole("semaphore or memory-operation nodes");
          break;
        default:  // empty, event record and wait: the nodes run in order anyway
          break;
      }
    }
    return Status::Ok();
  }

  void finish() {
    for (CUdeviceptr p : allocated) {
      if (!freed.count(p)) out.allocates.emplace_back(p, alloc_size[p]);
    }
    for (CUdeviceptr p : freed) {
      if (!allocated.count(p)) out.frees.push_back(p);
    }
    for (GraphNodeWork& w : out.nodes) {
      if (w.kind == GraphNodeWork::Kind::kAlloc || w.kind == GraphNodeWork::Kind::kFree) {
        w.mem_inside = allocated.count(w.mem) != 0 && freed.count(w.mem) != 0;
      }
    }
    // As a whole, a graph with memory nodes is not launched again: a second launch would fail
    // while an allocation of the first lives, or free memory twice, and on the H200 some whose
    // nodes allocate and free inside them (graphMemoryNodes of NVIDIA's cuda-samples) failed to
    // launch a second time with CUDA_ERROR_INVALID_VALUE. Node by node its allocations are
    // tracked while they live -- unless it frees memory it did not allocate: that memory may be
    // gone once the application's launch freed it, so the entry state cannot be restored.
    if (!allocated.empty() || !freed.empty()) out.unreplayable = KREPLAY_DECLINE_REASON_GRAPH_MEMORY;
    if (!out.frees.empty()) out.nodes_unreplayable = KREPLAY_DECLINE_REASON_GRAPH_MEMORY;
  }
};

}  // namespace

GraphTracker& graph_tracker() {
  static GraphTracker* t = new GraphTracker();  // NOLINT: lives for the process
  return *t;
}

void GraphTracker::on_exec_created(CUgraphExec exec, CUgraph graph) {
  if (exec == nullptr) return;
  auto g = std::make_shared<ExecGraph>();
  {
    std::lock_guard lock(mu_);
    g->id = next_id_++;
  }
  InternalScope internal;
  Walk walk{*g, {}, {}, {}};
  if (graph == nullptr) {
    g->whole_only = "its nodes are not known";
  } else if (Status s = walk.graph(graph, 0); !s.ok()) {
    KR_DEBUG("graph {}: {}", g->id, s.message());
    g->nodes.clear();
    g->whole_only = "its nodes could not be read";
  }
  walk.finish();
  cuuint64_t flags = 0;
  if (cuGraphExecGetFlags(exec, &flags) == CUDA_SUCCESS &&
      (flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) != 0) {
    g->unreplayable = g->nodes_unreplayable = KREPLAY_DECLINE_REASON_GRAPH_DEVICE_LAUNCH;
  }
  std::lock_guard lock(mu_);
  execs_[exec] = std::move(g);
}

void GraphTracker::on_exec_destroyed(CUgraphExec exec) {
  std::lock_guard lock(mu_);
  execs_.erase(exec);
}

void GraphTracker::on_exec_modified(CUgraphExec exec, const char* what) {
  std::lock_guard lock(mu_);
  auto it = execs_.find(exec);
  if (it == execs_.end() || !it->second->whole_only.empty()) return;
  // Copy on write: a launch in flight keeps the description it started with.
  auto g = std::make_shared<ExecGraph>(*it->second);
  g->whole_only = what;
  g->nodes.clear();
  it->second = std::move(g);
}

std::shared_ptr<const ExecGraph> GraphTracker::find(CUgraphExec exec) {
  std::lock_guard lock(mu_);
  auto& g = execs_[exec];
  if (g == nullptr) {
    g = std::make_shared<ExecGraph>();
    g->id = next_id_++;
    g->whole_only = "its nodes are not known";
  }
  return g;
}

}  // namespace kreplay::cuda
