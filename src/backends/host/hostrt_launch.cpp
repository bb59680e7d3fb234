// Launches on the host device: kernels launched one by one (hostrt::launch), stream capture and
// explicit graphs (graph_create, graph_add_*, graph_launch). Each launch goes through the SDK's
// engine as the CUDA backend's do: enter → submit (pass 0) → exit.
#include <cstring>

#include "backends/host/hostrt_internal.hpp"

namespace kreplay::hostrt {
using detail::KernelRec;
using detail::rt;

Status stream_begin_capture(Stream stream) {
  auto s = rt().stream(stream);
  if (!s) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown stream");
  sdk::Runtime::get().engine().range_barrier(rt().device(s->device())->agent,
                                             KREPLAY_RANGE_CLOSE_GRAPH);
  std::unique_lock lock(rt().mu_);
  if (s->capturing) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "stream already capturing");
  rt().graphs_.emplace_back();
  s->capturing = true;
  s->capture_graph = rt().graphs_.size();
  return Status::Ok();
}

Result<Graph> stream_end_capture(Stream stream) {
  auto s = rt().stream(stream);
  if (!s) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown stream");
  std::unique_lock lock(rt().mu_);
  if (!s->capturing) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "stream is not capturing");
  s->capturing = false;
  Graph g = s->capture_graph;
  s->capture_graph = 0;
  return g;
}

namespace {

HostGraphNode kernel_node(const KernelRec& rec, Dim3 grid, Dim3 block,
                          std::vector<std::byte> args) {
  HostGraphNode n;
  n.kind = HostGraphNode::Kind::kKernel;
  n.fn = rec.desc.fn;
  n.grid = grid;
  n.block = block;
  n.args = std::move(args);
  n.offsets = rec.offsets;
  n.kernel_id = rec.sdk_kernel_id;
  n.kernel_name = rec.entry->demangled.c_str();
  n.mangled_name = rec.entry->mangled.c_str();
  n.dispatch_flags = rec.entry->dispatch_flags;
  return n;
}

Status launch_impl(Kernel kernel, Dim3 grid, Dim3 block, Stream stream, const std::byte* packed,
                   void* const* params, uint32_t flags) {
  RETURN_IF_ERROR(rt().ensure());
  KernelRec* rec = nullptr;
  detail::ModuleRec* module = nullptr;
  {
    std::shared_lock lock(rt().mu_);
    if (kernel == 0 || kernel > rt().kernels_.size())
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown kernel");
    rec = rt().kernels_[kernel - 1].get();
    module = rt().modules_[rec->module - 1].get();
  }
  auto s = rt().stream(stream);
  if (!s) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown stream");
  RETURN_IF_ERROR(detail::materialize(*module));  // a lazy module loads at its first launch
  if (s->device() != rec->device)
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 "stream and kernel are on different devices");
  HostDevice* dev = rt().device(rec->device);

  HostLaunch launch;
  launch.device = dev;
  launch.fn = rec->desc.fn;
  launch.grid = grid;
  launch.block = block;
  launch.stream = s;
  launch.offsets = rec->offsets;
  launch.args.resize(rec->arg_bytes);
  if (packed != nullptr) {
    std::memcpy(launch.args.data(), packed, rec->arg_bytes);
  } else {
    for (size_t i = 0; i < rec->offsets.size(); ++i) {
      if (params == nullptr || params[i] == nullptr)
        return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, fmt::format("parameter {} is NULL", i));
      std::memcpy(launch.args.data() + rec->offsets[i], params[i], rec->desc.param_sizes[i]);
    }
  }
  {
    // A launch into a capturing stream is recorded into the graph, not executed: it is not a
    // dispatch (the graph's launches are).
    std::unique_lock lock(rt().mu_);
    if (s->capturing) {
      rt().graphs_[s->capture_graph - 1].push_back(kernel_node(*rec, grid, block, launch.args));
      return Status::Ok();
    }
  }
  auto& li = launch.info_;
  li.agent.handle = dev->agent;
  li.stream.handle = stream;
  li.kernel_id = rec->sdk_kernel_id;
  li.kernel_name = rec->entry->demangled.c_str();
  li.mangled_name = rec->entry->mangled.c_str();
  li.grid = {grid.x, grid.y, grid.z};
  li.block = {block.x, block.y, block.z};
  li.flags = flags | rec->entry->dispatch_flags;
  li.arg_bytes = std::span<const std::byte>(launch.args.data(), launch.args.size());

  auto& engine = sdk::Runtime::get().engine();
  replay::DispatchState* st = engine.enter(launch);
  Status submitted = launch.submit();
  engine.exit(st, submitted.ok());
  return submitted;
}

Result<KernelRec*> kernel_rec(Kernel kernel) {
  std::shared_lock lock(rt().mu_);
  if (kernel == 0 || kernel > rt().kernels_.size())
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown kernel");
  return rt().kernels_[kernel - 1].get();
}

Result<std::vector<HostGraphNode>*> graph_nodes(Graph graph) {
  if (graph == 0 || graph > rt().graphs_.size())
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown graph");
  return &rt().graphs_[graph - 1];
}

}  // namespace

Status launch(Kernel kernel, Dim3 grid, Dim3 block, Stream stream, void* const* params) {
  return launch_impl(kernel, grid, block, stream, nullptr, params, 0);
}

Result<Graph> graph_create() {
  RETURN_IF_ERROR(rt().ensure());
  std::unique_lock lock(rt().mu_);
  rt().graphs_.emplace_back();
  return rt().graphs_.size();
}

Status graph_add_kernel(Graph graph, Kernel kernel, Dim3 grid, Dim3 block, void* const* params) {
  ASSIGN_OR_RETURN(KernelRec * rec, kernel_rec(kernel));
  std::vector<std::byte> args(rec->arg_bytes);
  for (size_t i = 0; i < rec->offsets.size(); ++i) {
    if (params == nullptr || params[i] == nullptr)
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, fmt::format("parameter {} is NULL", i));
    std::memcpy(args.data() + rec->offsets[i], params[i], rec->desc.param_sizes[i]);
  }
  std::unique_lock lock(rt().mu_);
  ASSIGN_OR_RETURN(auto* nodes, graph_nodes(graph));
  nodes->push_back(kernel_node(*rec, grid, block, std::move(args)));
  return Status::Ok();
}

Status graph_add_memcpy(Graph graph, void* dst, const void* src, size_t bytes) {
  std::unique_lock lock(rt().mu_);
  ASSIGN_OR_RETURN(auto* nodes, graph_nodes(graph));
  HostGraphNode n;
  n.kind = HostGraphNode::Kind::kCopy;
  n.dst = dst;
  n.src = src;
  n.bytes = bytes;
  nodes->push_back(std::move(n));
  return Status::Ok();
}

Status graph_add_host(Graph graph, void (*fn)(void*), void* data) {
  if (fn == nullptr)
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "host node without a function");
  std::unique_lock lock(rt().mu_);
  ASSIGN_OR_RETURN(auto* nodes, graph_nodes(graph));
  HostGraphNode n;
  n.kind = HostGraphNode::Kind::kHost;
  n.host_fn = fn;
  n.host_data = data;
  nodes->push_back(std::move(n));
  return Status::Ok();
}

Status graph_add_conditional(Graph graph, Graph body, const uint32_t* flag) {
  if (flag == nullptr)
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "conditional node without a flag");
  std::unique_lock lock(rt().mu_);
  ASSIGN_OR_RETURN(auto* body_nodes, graph_nodes(body));
  HostGraphNode n;
  n.kind = HostGraphNode::Kind::kConditional;
  n.flag = flag;
  n.body = *body_nodes;
  ASSIGN_OR_RETURN(auto* nodes, graph_nodes(graph));
  nodes->push_back(std::move(n));
  return Status::Ok();
}

Result<void*> graph_add_mem_alloc(Graph graph, size_t bytes) {
  if (bytes == 0) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "allocation node of 0 bytes");
  std::unique_lock lock(rt().mu_);
  ASSIGN_OR_RETURN(auto* nodes, graph_nodes(graph));
  auto& mem = rt().graph_memory_.emplace_back(new std::byte[bytes]);
  HostGraphNode n;
  n.kind = HostGraphNode::Kind::kAlloc;
  n.dst = mem.get();
  n.bytes = bytes;
  nodes->push_back(n);
  return n.dst;
}

Status graph_add_mem_free(Graph graph, void* ptr) {
  std::unique_lock lock(rt().mu_);
  const bool known = std::any_of(rt().graph_memory_.begin(), rt().graph_memory_.end(),
                                 [ptr](const auto& m) { return m.get() == ptr; });
  if (!known) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 "free node of memory no allocation node made");
  }
  ASSIGN_OR_RETURN(auto* nodes, graph_nodes(graph));
  HostGraphNode n;
  n.kind = HostGraphNode::Kind::kFree;
  n.dst = ptr;
  nodes->push_back(n);
  return Status::Ok();
}

Status graph_launch(Graph graph, Stream stream) {
  RETURN_IF_ERROR(rt().ensure());
  auto s = rt().stream(stream);
  if (!s) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown stream");
  HostDevice* dev = rt().device(s->device());
  HostGraphLaunch launch;
  {
    std::unique_lock lock(rt().mu_);
    ASSIGN_OR_RETURN(auto* nodes, graph_nodes(graph));
    if (s->capturing) {
      return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                   "the host device cannot capture a graph launch into another graph");
    }
    launch.nodes = *nodes;
    auto [it, fresh] = rt().graph_kernel_ids_.try_emplace(graph, 0);
    if (fresh) {
      it->second =
          sdk::Runtime::get().register_kernel(dev->agent, 0, fmt::format("host graph {}", graph));
    }
    launch.info_.kernel_id = it->second;
  }
  const auto* entry = sdk::Runtime::get().kernel(launch.info_.kernel_id);
  launch.device = dev;
  launch.stream = s;
  auto& li = launch.info_;
  li.agent.handle = dev->agent;
  li.stream.handle = stream;
  li.kernel_name = entry->demangled.c_str();
  li.mangled_name = entry->mangled.c_str();
  li.flags = KREPLAY_DISPATCH_FLAG_GRAPH | KREPLAY_DISPATCH_FLAG_GRAPH_WHOLE;
  launch.describe(graph);
  auto& sdk = sdk::Runtime::get();
  auto& engine = sdk.engine();
  // Memory nodes whose effect outlives the launch (as the CUDA backend's interceptor does): memory
  // the graph frees goes with the launch; its allocations are tracked from the launch on, before
  // its nodes run again one at a time (exit), so that its kernel nodes save and restore them.
  if (!launch.frees.empty()) {
    auto guard = engine.guard_memory(dev->agent);
    for (void* p : launch.frees) sdk.on_free(dev->agent, reinterpret_cast<uint64_t>(p));
  }
  replay::DispatchState* st = engine.enter(launch);
  Status submitted = launch.submit();
  if (submitted.ok()) {
    for (const auto& [p, bytes] : launch.allocates) {
      sdk.on_allocate(dev->agent, reinterpret_cast<uint64_t>(p), bytes, KREPLAY_MEMORY_KIND_POOL);
    }
  }
  engine.exit(st, submitted.ok());
  return submitted;
}

}  // namespace kreplay::hostrt
