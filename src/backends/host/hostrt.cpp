// The host device runtime (see hostrt.hpp): the application-facing half of the host backend.
// Like the CUDA backend, it intercepts every launch and hands it to the SDK's engine:
// enter → submit (pass 0) → exit.
#include "backends/host/hostrt.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "backends/host/host_device.hpp"
#include "common/env.hpp"
#include "common/logging.hpp"
#include "common/util.hpp"
#include "sdk/runtime.hpp"

namespace kreplay::hostrt {
namespace {

struct Allocation {
  size_t size = 0;
  int device = 0;
  bool tracked = true;
};

/// An event: record N marks its stream's point N; waits are for the last point recorded.
struct HostEvent {
  int device = 0;
  std::mutex mu;
  std::condition_variable cv;
  uint64_t recorded = 0;  ///< points recorded so far
  uint64_t reached = 0;   ///< the latest point its stream has run past

  void reach(uint64_t point) {
    {
      std::lock_guard lock(mu);
      reached = std::max(reached, point);
    }
    cv.notify_all();
  }
  void wait_for(uint64_t point) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return reached >= point; });
  }
};

struct KernelRec {
  KernelDesc desc;
  Module module = 0;
  int device = 0;
  uint64_t sdk_kernel_id = 0;
  std::vector<uint32_t> offsets;
  uint32_t arg_bytes = 0;
  const sdk::KernelEntry* entry = nullptr;
};

struct ModuleRec {
  int device = 0;
  uint64_t code_object = 0;
  std::vector<Kernel> kernels;
  std::map<std::string, void*, std::less<>> globals;
  bool loaded = true;
};

class Runtime {
 public:
  static Runtime& get() {
    static Runtime* rt = new Runtime();  // NOLINT: lives for the process, like the SDK
    return *rt;
  }

  Status init(const Config& config) {
    std::lock_guard lock(init_mu_);
    if (initialized_) {
      if (config.device_count != config_.device_count || config.memory_bytes != config_.memory_bytes ||
          config.pinned_bytes != config_.pinned_bytes ||
          config.counters_per_pass != config_.counters_per_pass) {
        return Error(KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED,
                     "the host runtime is already initialized with a different configuration");
      }
      return Status::Ok();
    }
    if (config.device_count < 1 || config.device_count > 16) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "device_count must be 1..16");
    }
    config_ = config;
    auto& sdk = sdk::Runtime::get();
    const int fail_passes = static_cast<int>(env::get_int("KREPLAY_HOST_FAIL_COUNTER_PASSES", 0));
    for (int i = 0; i < config.device_count; ++i) {
      auto dev = std::make_unique<HostDevice>(i, config);
      if (fail_passes > 0) dev->fail_counter_passes(fail_passes);
      dev->agent = sdk.add_device(dev.get());
      auto stream = std::make_shared<HostStream>(i, next_stream_++);
      dev->add_stream(stream);
      {
        std::unique_lock slock(mu_);
        streams_[stream->id()] = stream;
      }
      default_streams_.push_back(stream->id());
      devices_.push_back(std::move(dev));
    }
    initialized_ = true;
    // Tools load after the devices exist, so they can list agents and counters.
    sdk.initialize();
    return Status::Ok();
  }

  Status ensure() {
    if (initialized_.load(std::memory_order_acquire)) return Status::Ok();
    Config c;
    c.device_count = static_cast<int>(env::get_int("KREPLAY_HOST_DEVICES", c.device_count));
    if (auto v = env::get("KREPLAY_HOST_MEMORY")) env::parse_bytes(*v, &c.memory_bytes);
    if (auto v = env::get("KREPLAY_HOST_PINNED")) env::parse_bytes(*v, &c.pinned_bytes);
    c.counters_per_pass = static_cast<uint32_t>(
        env::get_int("KREPLAY_HOST_COUNTERS_PER_PASS", c.counters_per_pass));
    return init(c);
  }

  HostDevice* device(int index) {
    return index >= 0 && static_cast<size_t>(index) < devices_.size() ? devices_[index].get()
                                                                       : nullptr;
  }

  Result<HostDevice*> checked_device(int index) {
    RETURN_IF_ERROR(ensure());
    HostDevice* d = device(index);
    if (d == nullptr) {
      return Error(KREPLAY_STATUS_ERROR_AGENT_NOT_FOUND,
                   fmt::format("no host device {} (there are {})", index, devices_.size()));
    }
    return d;
  }

  std::shared_ptr<HostStream> stream(Stream id) {
    std::shared_lock lock(mu_);
    auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : it->second;
  }

  Config config_;
  std::mutex init_mu_;
  std::atomic<bool> initialized_{false};
  std::vector<std::unique_ptr<HostDevice>> devices_;
  std::vector<Stream> default_streams_;

  std::shared_mutex mu_;  // guards the maps below
  std::unordered_map<Stream, std::shared_ptr<HostStream>> streams_;
  std::unordered_map<Event, std::shared_ptr<HostEvent>> events_;
  Event next_event_ = 1;
  std::map<uintptr_t, Allocation> allocations_;
  std::vector<std::unique_ptr<KernelRec>> kernels_;
  std::vector<std::unique_ptr<ModuleRec>> modules_;
  std::vector<std::vector<HostGraphNode>> graphs_;
  std::map<Graph, uint64_t> graph_kernel_ids_;  // graph -> SDK kernel id of its whole-graph dispatch
  std::vector<std::unique_ptr<std::byte[]>> graph_memory_;  // what memory-allocation nodes own
  Stream next_stream_ = 1;

 private:
  Runtime() = default;
};

Runtime& rt() { return Runtime::get(); }

constexpr size_t kAlign = 256;

Result<void*> allocate(size_t bytes, int device, bool tracked,
                       kreplay_memory_kind_t kind = KREPLAY_MEMORY_KIND_DEVICE) {
  ASSIGN_OR_RETURN(HostDevice * dev, rt().checked_device(device));
  sdk::Runtime::get().engine().range_barrier(dev->agent, KREPLAY_RANGE_CLOSE_MEMORY,
                                             "hostrt::malloc");
  if (bytes == 0) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "allocation of 0 bytes");
  if (!dev->reserve(bytes)) {
    return Error(KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES,
                 fmt::format("host device {} is out of memory ({} requested)", device,
                             format_bytes(bytes)));
  }
  void* p = std::aligned_alloc(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
  if (p == nullptr) {
    dev->unreserve(bytes);
    return Error(KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES, "host allocation failed");
  }
  {
    std::unique_lock lock(rt().mu_);
    rt().allocations_[reinterpret_cast<uintptr_t>(p)] = {bytes, device, tracked};
  }
  if (tracked) {
    sdk::Runtime::get().on_allocate(dev->agent, reinterpret_cast<uint64_t>(p), bytes, kind);
  } else {
    dev->add_untracked(static_cast<int64_t>(bytes));
  }
  return p;
}

/// The device whose allocation holds @p p, or -1 (host memory).
int owner_of(const void* p) {
  std::shared_lock lock(rt().mu_);
  auto it = rt().allocations_.upper_bound(reinterpret_cast<uintptr_t>(p));
  if (it == rt().allocations_.begin()) return -1;
  --it;
  return reinterpret_cast<uintptr_t>(p) < it->first + it->second.size ? it->second.device : -1;
}

int device_of(const void* p) {
  return std::max(owner_of(p), 0);
}

/// The devices a copy between @p dst and @p src involves: dst's (device 0 for host memory), and
/// src's when it is another device's allocation (a peer copy), in ascending order. A peer copy
/// is ordered after the work of both devices, like cudaMemcpyPeer.
std::vector<HostDevice*> copy_devices(const void* dst, const void* src, int stream_device = -1) {
  std::vector<int> ids{stream_device >= 0 ? stream_device : device_of(dst)};
  for (int d : {owner_of(dst), src != nullptr ? owner_of(src) : -1}) {
    if (d >= 0 && d != ids.front()) ids.push_back(d);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<HostDevice*> devs;
  for (int d : ids) devs.push_back(rt().device(d));
  return devs;
}

/// Guards the memory of every device in @p devs (in their order, so two copies cannot deadlock)
/// and, with @p drain, waits for their work.
Status guard_and_drain(const std::vector<HostDevice*>& devs,
                       std::vector<replay::Engine::MemoryGuard>* guards, bool drain) {
  for (HostDevice* dev : devs)
    guards->push_back(sdk::Runtime::get().engine().guard_memory(dev->agent, "hostrt::memcpy"));
  if (drain) {
    for (HostDevice* dev : devs) RETURN_IF_ERROR(dev->drain(UINT32_MAX));
  }
  return Status::Ok();
}

}  // namespace

Status init(const Config& config) { return rt().init(config); }
Status init() { return rt().ensure(); }
const Config& config() { return rt().config_; }

Result<void*> malloc(size_t bytes, int device) { return allocate(bytes, device, true); }
Result<void*> malloc_untracked(size_t bytes, int device) { return allocate(bytes, device, false); }
Result<void*> malloc_host_mapped(size_t bytes, int device) {
  return allocate(bytes, device, true, KREPLAY_MEMORY_KIND_HOST_MAPPED);
}

Result<void*> malloc_managed(size_t bytes, int device) {
  return allocate(bytes, device, true, KREPLAY_MEMORY_KIND_MANAGED);
}

Status free(void* ptr) {
  RETURN_IF_ERROR(rt().ensure());
  if (ptr == nullptr) return Status::Ok();
  Allocation a;
  {
    std::shared_lock lock(rt().mu_);
    auto it = rt().allocations_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == rt().allocations_.end())
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "free of a pointer hostrt did not allocate");
    a = it->second;
  }
  HostDevice* dev = rt().device(a.device);
  auto guard = sdk::Runtime::get().engine().guard_memory(dev->agent);
  RETURN_IF_ERROR(dev->drain(UINT32_MAX));  // like cudaFree: work using it completes first
  if (a.tracked) {
    sdk::Runtime::get().on_free(dev->agent, reinterpret_cast<uint64_t>(ptr));
  } else {
    dev->add_untracked(-static_cast<int64_t>(a.size));
  }
  {
    std::unique_lock lock(rt().mu_);
    rt().allocations_.erase(reinterpret_cast<uintptr_t>(ptr));
  }
  std::free(ptr);
  dev->unreserve(a.size);
  return Status::Ok();
}

Status memcpy(void* dst, const void* src, size_t bytes) {
  RETURN_IF_ERROR(rt().ensure());
  std::vector<replay::Engine::MemoryGuard> guards;
  RETURN_IF_ERROR(guard_and_drain(copy_devices(dst, src), &guards, true));
  std::memcpy(dst, src, bytes);
  return Status::Ok();
}

Status memset(void* dst, int value, size_t bytes) {
  RETURN_IF_ERROR(rt().ensure());
  HostDevice* dev = rt().device(device_of(dst));
  auto guard = sdk::Runtime::get().engine().guard_memory(dev->agent);
  RETURN_IF_ERROR(dev->drain(UINT32_MAX));
  std::memset(dst, value, bytes);
  return Status::Ok();
}

Status memcpy_async(void* dst, const void* src, size_t bytes, Stream stream) {
  RETURN_IF_ERROR(rt().ensure());
  auto s = rt().stream(stream);
  if (!s) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown stream");
  std::vector<replay::Engine::MemoryGuard> guards;
  const auto devs = copy_devices(dst, src, s->device());
  RETURN_IF_ERROR(guard_and_drain(devs, &guards, devs.size() > 1));
  s->enqueue([dst, src, bytes] { std::memcpy(dst, src, bytes); });
  // A peer copy runs on this stream's worker but reads or writes another device's memory, whose
  // windows do not drain this stream: it completes before the guards are let go.
  if (devs.size() > 1) s->wait_idle(UINT32_MAX);
  return Status::Ok();
}

Stream default_stream(int device) {
  if (!rt().ensure().ok() || device < 0 ||
      static_cast<size_t>(device) >= rt().default_streams_.size())
    return 0;
  return rt().default_streams_[device];
}

Result<Stream> stream_create(int device) {
  ASSIGN_OR_RETURN(HostDevice * dev, rt().checked_device(device));
  std::shared_ptr<HostStream> s;
  {
    std::unique_lock lock(rt().mu_);
    s = std::make_shared<HostStream>(device, rt().next_stream_++);
    rt().streams_[s->id()] = s;
  }
  dev->add_stream(s);
  return s->id();
}

Status stream_destroy(Stream stream) {
  auto s = rt().stream(stream);
  if (!s) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown stream");
  s->wait_idle(UINT32_MAX);
  rt().device(s->device())->remove_stream(stream);
  std::unique_lock lock(rt().mu_);
  rt().streams_.erase(stream);
  return Status::Ok();
}

Status stream_synchronize(Stream stream) {
  auto s = rt().stream(stream);
  if (!s) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown stream");
  sdk::Runtime::get().engine().range_sync(rt().device(s->device())->agent,
                                          "hostrt::stream_synchronize");
  s->wait_idle(UINT32_MAX);
  return Status::Ok();
}

Status device_synchronize(int device) {
  ASSIGN_OR_RETURN(HostDevice * dev, rt().checked_device(device));
  sdk::Runtime::get().engine().range_sync(dev->agent, "hostrt::device_synchronize");
  return dev->drain(UINT32_MAX);
}

namespace {
std::shared_ptr<HostEvent> find_event(Event event) {
  std::shared_lock lock(rt().mu_);
  auto it = rt().events_.find(event);
  return it == rt().events_.end() ? nullptr : it->second;
}
}  // namespace

Result<Event> event_create(int device) {
  ASSIGN_OR_RETURN(HostDevice * dev, rt().checked_device(device));
  (void)dev;
  auto e = std::make_shared<HostEvent>();
  e->device = device;
  std::unique_lock lock(rt().mu_);
  Event id = rt().next_event_++;
  rt().events_[id] = std::move(e);
  return id;
}

Status event_destroy(Event event) {
  std::unique_lock lock(rt().mu_);
  if (rt().events_.erase(event) == 0)
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown event");
  return Status::Ok();
}

Status event_record(Event event, Stream stream) {
  auto e = find_event(event);
  auto s = rt().stream(stream);
  if (!e || !s) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown event or stream");
  if (s->capturing)
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "events are not recorded into captures");
  sdk::Runtime::get().engine().range_event_record(rt().device(s->device())->agent, stream, event);
  uint64_t point = 0;
  {
    std::lock_guard lock(e->mu);
    point = ++e->recorded;
  }
  s->enqueue([e, point] { e->reach(point); });
  return Status::Ok();
}

Status stream_wait_event(Stream stream, Event event) {
  auto e = find_event(event);
  auto s = rt().stream(stream);
  if (!e || !s) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown event or stream");
  sdk::Runtime::get().engine().range_stream_wait(rt().device(s->device())->agent, stream, event);
  uint64_t point = 0;
  {
    std::lock_guard lock(e->mu);
    point = e->recorded;
  }
  if (point > 0) s->enqueue([e, point] { e->wait_for(point); });
  return Status::Ok();
}

Status event_synchronize(Event event) {
  auto e = find_event(event);
  if (!e) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown event");
  sdk::Runtime::get().engine().range_sync(rt().device(e->device)->agent);
  uint64_t point = 0;
  {
    std::lock_guard lock(e->mu);
    point = e->recorded;
  }
  e->wait_for(point);
  return Status::Ok();
}

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

Result<Module> load_module(const ModuleDesc& desc, int device) {
  ASSIGN_OR_RETURN(HostDevice * dev, rt().checked_device(device));
  sdk::Runtime::get().engine().range_barrier(dev->agent, KREPLAY_RANGE_CLOSE_MODULE);
  auto& sdk = sdk::Runtime::get();
  auto mod = std::make_unique<ModuleRec>();
  mod->device = device;
  mod->code_object = sdk.register_code_object(dev->agent, desc.name);
  for (const auto& g : desc.globals) {
    if (g.size == 0) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "global of size 0");
    if (!dev->reserve(g.size)) return Error(KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES, "out of memory");
    void* p = std::aligned_alloc(kAlign, (g.size + kAlign - 1) / kAlign * kAlign);
    std::memset(p, 0, g.size);
    if (!g.init.empty()) std::memcpy(p, g.init.data(), std::min(g.size, g.init.size()));
    mod->globals[g.name] = p;
    sdk.on_allocate(dev->agent, reinterpret_cast<uint64_t>(p), g.size,
                    KREPLAY_MEMORY_KIND_MODULE_GLOBAL);
  }
  std::unique_lock lock(rt().mu_);
  Module handle = rt().modules_.size() + 1;
  for (const auto& k : desc.kernels) {
    if (k.fn == nullptr || k.mangled_name.empty())
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "kernel without a name or function");
    auto rec = std::make_unique<KernelRec>();
    rec->desc = k;
    rec->module = handle;
    rec->device = device;
    for (uint32_t size : k.param_sizes) {
      uint32_t align = std::min<uint32_t>(size, 8);
      rec->arg_bytes = (rec->arg_bytes + align - 1) / align * align;
      rec->offsets.push_back(rec->arg_bytes);
      rec->arg_bytes += size;
    }
    rec->sdk_kernel_id =
        sdk.register_kernel(dev->agent, mod->code_object, k.mangled_name,
                            desc.uses_device_heap ? KREPLAY_DISPATCH_FLAG_DEVICE_HEAP : 0u);
    rec->entry = sdk.kernel(rec->sdk_kernel_id);
    rt().kernels_.push_back(std::move(rec));
    mod->kernels.push_back(rt().kernels_.size());
  }
  rt().modules_.push_back(std::move(mod));
  return handle;
}

Status unload_module(Module module) {
  ModuleRec* m = nullptr;
  {
    std::shared_lock lock(rt().mu_);
    if (module == 0 || module > rt().modules_.size() || !rt().modules_[module - 1]->loaded)
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown module");
    m = rt().modules_[module - 1].get();
  }
  HostDevice* dev = rt().device(m->device);
  sdk::Runtime::get().engine().range_barrier(dev->agent, KREPLAY_RANGE_CLOSE_MODULE);
  auto guard = sdk::Runtime::get().engine().guard_memory(dev->agent);
  RETURN_IF_ERROR(dev->drain(UINT32_MAX));
  for (auto& [name, p] : m->globals) {
    sdk::Runtime::get().on_free(dev->agent, reinterpret_cast<uint64_t>(p));
  }
  sdk::Runtime::get().unregister_code_object(dev->agent, m->code_object);
  m->loaded = false;
  return Status::Ok();
}

Result<Kernel> get_kernel(Module module, std::string_view name) {
  std::shared_lock lock(rt().mu_);
  if (module == 0 || module > rt().modules_.size())
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown module");
  for (Kernel k : rt().modules_[module - 1]->kernels) {
    const auto& rec = *rt().kernels_[k - 1];
    if (rec.desc.mangled_name == name || rec.entry->demangled == name) return k;
  }
  return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, fmt::format("no kernel '{}' in module", name));
}

Result<void*> get_global(Module module, std::string_view name) {
  std::shared_lock lock(rt().mu_);
  if (module == 0 || module > rt().modules_.size())
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown module");
  const auto& globals = rt().modules_[module - 1]->globals;
  auto it = globals.find(name);
  if (it == globals.end())
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, fmt::format("no global '{}'", name));
  return it->second;
}

namespace {

HostGraphNode kernel_node(const KernelRec& rec, Dim3 grid, Dim3 block, std::vector<std::byte> args) {
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
  {
    std::shared_lock lock(rt().mu_);
    if (kernel == 0 || kernel > rt().kernels_.size())
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown kernel");
    rec = rt().kernels_[kernel - 1].get();
  }
  auto s = rt().stream(stream);
  if (!s) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown stream");
  if (s->device() != rec->device)
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "stream and kernel are on different devices");
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
  if (fn == nullptr) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "host node without a function");
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
  if (flag == nullptr) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "conditional node without a flag");
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
      it->second = sdk::Runtime::get().register_kernel(dev->agent, 0,
                                                       fmt::format("host graph {}", graph));
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

void profiler_start() {
  if (rt().ensure().ok())
    sdk::Runtime::get().engine().range_marker(replay::Engine::MarkerEvent::kProfilerStart, "");
}

void profiler_stop() {
  if (rt().ensure().ok())
    sdk::Runtime::get().engine().range_marker(replay::Engine::MarkerEvent::kProfilerStop, "");
}

namespace {
std::vector<std::string>& nvtx_stack() {
  thread_local std::vector<std::string> stack;
  return stack;
}
}  // namespace

void nvtx_range_push(const char* name) {
  if (!rt().ensure().ok()) return;
  nvtx_stack().emplace_back(name ? name : "");
  sdk::Runtime::get().engine().range_marker(replay::Engine::MarkerEvent::kNvtxPush,
                                            nvtx_stack().back());
}

void nvtx_range_pop() {
  if (!rt().ensure().ok() || nvtx_stack().empty()) return;
  std::string name = std::move(nvtx_stack().back());
  nvtx_stack().pop_back();
  sdk::Runtime::get().engine().range_marker(replay::Engine::MarkerEvent::kNvtxPop, name);
}

namespace testing {
void fail_next_snapshot(int device) {
  if (rt().ensure().ok() && rt().device(device)) rt().device(device)->fail_next_snapshot();
}
void fail_counter_passes(int n, int device) {
  if (rt().ensure().ok() && rt().device(device)) rt().device(device)->fail_counter_passes(n);
}
uint64_t agent_of(int device) {
  if (!rt().ensure().ok() || rt().device(device) == nullptr) return 0;
  return rt().device(device)->agent;
}
CacheFlushes cache_flushes(int device) {
  if (!rt().ensure().ok() || rt().device(device) == nullptr) return {};
  auto log = rt().device(device)->flush_log();
  return {log.total, log.inside_pass, std::move(log.before_submission)};
}
void on_cache_flush(std::function<void()> hook, int device) {
  if (rt().ensure().ok() && rt().device(device))
    rt().device(device)->set_flush_hook(std::move(hook));
}
}  // namespace testing

}  // namespace kreplay::hostrt
