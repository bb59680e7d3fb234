// CUDA graphs as kreplay replays them (DESIGN.md §2c).
//
// When an executable graph is instantiated (CUPTI's GRAPHEXEC_CREATED), the graph it was made from
// is walked once: its nodes in an order the dependencies allow, child graphs flattened, each
// kernel node with its function, configuration and a copy of its argument bytes, each copy and
// memset node with its parameters. The walk also says whether the graph can be run again at all
// (no host-function node, not made for device launches, no memory nodes), whether its nodes can
// be run again one at a time (not made for device launches, no free of memory it did not
// allocate), and whether they can be run one at a time at all (no conditional, semaphore or
// memory-operation nodes, not updated since instantiation). A graph launch (cuGraphLaunch) then
// becomes a CudaLaunch whose graph() and decompose() the engine uses.
//
// Threading: the tracker is called from CUPTI callbacks on any application thread; it locks.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "device/device.hpp"

namespace kreplay::cuda {

/// One node of an executable graph that does work, as kreplay can run it on its own.
struct GraphNodeWork {
  enum class Kind { kKernel, kCopy, kMemset, kAlloc, kFree } kind = Kind::kKernel;
  // kKernel
  CUfunction f = nullptr;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  unsigned shared_bytes = 0;
  std::vector<std::byte> args;                       ///< packed argument bytes
  std::vector<std::pair<size_t, size_t>> layout;     ///< (offset, size) per parameter
  unsigned cluster[3] = {0, 0, 0};                   ///< cluster dimensions (0: none)
  bool cooperative = false;
  // kCopy / kMemset
  CUDA_MEMCPY3D copy{};
  CUDA_MEMSET_NODE_PARAMS memset{};
  // kAlloc / kFree: the allocation, and whether the graph both allocates and frees it (it lives
  // only inside a launch); an allocation that outlives the launch is tracked at the launch.
  CUdeviceptr mem = 0;
  size_t mem_bytes = 0;
  bool mem_inside = false;
};

/// What the walk of an executable graph found.
struct ExecGraph {
  uint64_t id = 0;                      ///< kreplay's id of the executable graph (1, 2, ...)
  std::vector<GraphNodeWork> nodes;     ///< in an order the dependencies allow
  uint64_t kernel_nodes = 0;
  kreplay_decline_reason_t unreplayable = KREPLAY_DECLINE_REASON_NONE;        ///< as a whole
  kreplay_decline_reason_t nodes_unreplayable = KREPLAY_DECLINE_REASON_NONE;  ///< node by node
  bool host_nodes = false;              ///< host-function nodes (left out when run node by node)
  std::string whole_only;               ///< why the nodes cannot run one at a time ("" = they can)
  /// Memory nodes whose effect outlives a launch: allocations not freed in the graph, and frees
  /// of memory the graph did not allocate (the inventory learns of them at the launch).
  std::vector<std::pair<CUdeviceptr, size_t>> allocates;
  std::vector<CUdeviceptr> frees;
};

class GraphTracker {
 public:
  /// An executable graph was made from @p graph (CUPTI GRAPHEXEC_CREATED). Walks @p graph.
  void on_exec_created(CUgraphExec exec, CUgraph graph);
  void on_exec_destroyed(CUgraphExec exec);
  /// A node's parameters changed, or the graph was updated, after instantiation: its nodes are
  /// no longer known, so its launches are profiled as a whole.
  void on_exec_modified(CUgraphExec exec, const char* what);
  /// The walk of @p exec; for a graph instantiated before kreplay started, a description with an
  /// id whose nodes are not known (it is profiled as a whole).
  std::shared_ptr<const ExecGraph> find(CUgraphExec exec);

 private:
  mutable std::mutex mu_;
  std::map<CUgraphExec, std::shared_ptr<ExecGraph>> execs_;
  uint64_t next_id_ = 1;
};

GraphTracker& graph_tracker();

}  // namespace kreplay::cuda
