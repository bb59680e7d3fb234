// The host device's graph launches (HostGraphLaunch): a graph's nodes run in order (kernels
// through the Executor, copies, host functions, conditional bodies), its description for the SDK,
// and its decomposition into steps for graph replay node by node.
#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "backends/host/executor.hpp"
#include "backends/host/host_device.hpp"
#include "common/util.hpp"
#include "sdk/runtime.hpp"

namespace kreplay::hostrt {
namespace {

// Every node of a graph in order, accumulating the kernels' counts into @p total.
void run_nodes(const std::vector<HostGraphNode>& nodes, ExecRecord& total, Probe* probe) {
  for (const auto& n : nodes) {
    switch (n.kind) {
      case HostGraphNode::Kind::kKernel: {
        ExecRecord one;
        ThreadContext ctx;
        ctx.grid_dim = n.grid;
        ctx.block_dim = n.block;
        Executor::run(n.fn, ctx, n.args.data(), n.offsets.data(), one, probe);
        total.threads += one.threads;
        total.blocks += one.blocks;
        total.bytes_read += one.bytes_read;
        total.bytes_written += one.bytes_written;
        total.ops += one.ops;
        total.trapped = total.trapped || one.trapped;
        break;
      }
      case HostGraphNode::Kind::kCopy:
        std::memcpy(n.dst, n.src, n.bytes);
        break;
      case HostGraphNode::Kind::kHost:
        n.host_fn(n.host_data);
        break;
      case HostGraphNode::Kind::kConditional:
        if (*n.flag != 0) run_nodes(n.body, total, probe);
        break;
      case HostGraphNode::Kind::kAlloc:  // the graph's memory stays mapped, as on CUDA
      case HostGraphNode::Kind::kFree:
        break;
    }
  }
}

void add_words(std::vector<std::byte>& words, const void* data, size_t bytes) {
  const auto* p = static_cast<const std::byte*>(data);
  words.insert(words.end(), p, p + bytes);
  words.resize((words.size() + 7) / 8 * 8);
}

void count_nodes(const std::vector<HostGraphNode>& nodes, device::GraphInfo& g) {
  for (const auto& n : nodes) {
    if (n.kind == HostGraphNode::Kind::kKernel) {
      ++g.kernel_nodes;
      add_words(g.node_words, n.args.data(), n.args.size());
    }
    if (n.kind == HostGraphNode::Kind::kCopy) {
      add_words(g.node_words, &n.dst, sizeof(n.dst));
      add_words(g.node_words, &n.src, sizeof(n.src));
    }
    if (n.kind == HostGraphNode::Kind::kHost) g.host_nodes = true;
    if (n.kind == HostGraphNode::Kind::kConditional) {
      g.whole_only = "conditional nodes";
      count_nodes(n.body, g);
    }
  }
}

}  // namespace

void HostGraphLaunch::describe(uint64_t graph_id) {
  graph_ = {};
  graph_.graph_id = graph_id;
  count_nodes(nodes, graph_);
  info_.graph_id = graph_id;
  // Memory nodes, as the CUDA backend judges them (graphs.cpp): never launched again as a whole;
  // node by node unless the graph frees memory it did not allocate.
  std::set<void*> allocated, freed;
  allocates.clear();
  frees.clear();
  for (const auto& n : nodes) {
    if (n.kind == HostGraphNode::Kind::kAlloc) allocated.insert(n.dst);
    if (n.kind == HostGraphNode::Kind::kFree) freed.insert(n.dst);
  }
  for (auto& n : nodes) {
    if (n.kind != HostGraphNode::Kind::kAlloc && n.kind != HostGraphNode::Kind::kFree) continue;
    n.mem_inside = allocated.count(n.dst) != 0 && freed.count(n.dst) != 0;
    if (n.kind == HostGraphNode::Kind::kAlloc && !n.mem_inside)
      allocates.emplace_back(n.dst, n.bytes);
    if (n.kind == HostGraphNode::Kind::kFree && !n.mem_inside) frees.push_back(n.dst);
  }
  if (!allocated.empty() || !freed.empty()) {
    graph_.unreplayable = KREPLAY_DECLINE_REASON_GRAPH_MEMORY;
  }
  if (!frees.empty()) graph_.nodes_unreplayable = KREPLAY_DECLINE_REASON_GRAPH_MEMORY;
}

std::unique_ptr<device::Launch> HostGraphLaunch::record() {
  auto copy = std::make_unique<HostGraphLaunch>(*this);
  copy->probe_next.reset();
  copy->probe_armed = nullptr;
  return copy;
}

Status HostGraphLaunch::submit() {
  enqueue_execution([nodes = nodes](ExecRecord& rec) { run_nodes(nodes, rec, rec.probe.get()); });
  return Status::Ok();
}

Result<std::vector<device::GraphStep>> HostGraphLaunch::decompose() {
  if (!graph_.whole_only.empty()) {
    return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                 fmt::format("the graph has {}", graph_.whole_only));
  }
  std::vector<device::GraphStep> steps;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const HostGraphNode& n = nodes[i];
    device::GraphStep step;
    if (n.kind == HostGraphNode::Kind::kKernel) {
      auto k = std::make_unique<HostLaunch>();
      k->fn = n.fn;
      k->grid = n.grid;
      k->block = n.block;
      k->args = n.args;
      k->offsets = n.offsets;
      k->stream = stream;
      k->device = device;
      auto& li = k->info_;
      li.agent = info_.agent;
      li.stream = info_.stream;
      li.kernel_id = n.kernel_id;
      li.kernel_name = n.kernel_name;
      li.mangled_name = n.mangled_name;
      li.grid = {n.grid.x, n.grid.y, n.grid.z};
      li.block = {n.block.x, n.block.y, n.block.z};
      li.flags = n.dispatch_flags | KREPLAY_DISPATCH_FLAG_GRAPH;
      li.arg_bytes = std::span<const std::byte>(k->args.data(), k->args.size());
      li.graph_id = graph_.graph_id;
      li.graph_node = i;
      step.kernel = std::move(k);
    } else if (n.kind == HostGraphNode::Kind::kCopy) {
      step.other = [s = stream, dst = n.dst, src = n.src, bytes = n.bytes] {
        s->enqueue([dst, src, bytes] { std::memcpy(dst, src, bytes); });
        return Status::Ok();
      };
    } else if (n.kind == HostGraphNode::Kind::kAlloc || n.kind == HostGraphNode::Kind::kFree) {
      // An allocation the graph both makes and frees is tracked between its two nodes; one that
      // outlives the launch was tracked at the launch (graph_launch) and stays tracked.
      if (!n.mem_inside) continue;
      const uint64_t agent = info_.agent.handle;
      if (n.kind == HostGraphNode::Kind::kAlloc) {
        step.other = [agent, p = n.dst, bytes = n.bytes] {
          sdk::Runtime::get().on_allocate(agent, reinterpret_cast<uint64_t>(p), bytes,
                                          KREPLAY_MEMORY_KIND_POOL);
          return Status::Ok();
        };
      } else {
        step.other = [agent, p = n.dst] {
          auto guard = sdk::Runtime::get().engine().guard_memory(agent);
          sdk::Runtime::get().on_free(agent, reinterpret_cast<uint64_t>(p));
          return Status::Ok();
        };
      }
    } else {
      continue;  // a host node: it ran once, in the application's own launch
    }
    steps.push_back(std::move(step));
  }
  return steps;
}

}  // namespace kreplay::hostrt
