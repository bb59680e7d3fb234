// The CUPTI callback: every CUDA driver call kreplay cares about, turned into engine and SDK
// events.
//
// Launches (cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel and their per-thread-stream
// variants; runtime launches reach these): ENTER builds a CudaLaunch and calls Engine::enter — which
// may drain, snapshot and fire PASS 0 ENTER — then the application's own call runs as pass 0, and
// EXIT calls Engine::exit, which runs the remaining passes. Graph launches are dispatches too
// (graphs.cpp walks each executable graph when it is instantiated). Allocation, free, array, VMM
// and capture calls go to memory_callbacks.cpp; kernels and modules (ids, parameter layouts,
// module-scope variables) to kernels.cpp. Copies, memsets and frees from other threads wait
// while a window is open (memory guards). kreplay's own calls (InternalScope) are ignored.
#include <cupti.h>
#include <dlfcn.h>
#include <generated_nvtx_meta.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/cuda_counters.hpp"
#include "backends/cuda/graphs.hpp"
#include "backends/cuda/interception.hpp"
#include "backends/cuda/internal_guard.hpp"
#include "backends/cuda/module_symbols.hpp"
#include "backends/cuda/markers.hpp"
#include "backends/cuda/range_calls.hpp"
#include "backends/cuda/range_memory.hpp"
#include "backends/cuda/services/cupti_service.hpp"
#include "backends/cuda/vmm_tracker.hpp"
#include "common/env.hpp"
#include "common/logging.hpp"
#include "common/util.hpp"
#include "sdk/runtime.hpp"

namespace kreplay::cuda {
namespace interception {

State& state() {
  static State* s = new State();  // NOLINT: lives for the process
  return *s;
}

CudaDevice* device_of_ordinal(CUdevice dev) {
  for (auto& d : state().devices) {
    if (d->cu_device() == dev) return d.get();
  }
  return nullptr;
}

CudaDevice* device_of_context(CUcontext ctx) {
  if (ctx == nullptr) {
    InternalScope internal;
    cuCtxGetCurrent(&ctx);
    if (ctx == nullptr) return nullptr;
  }
  {
    std::shared_lock lock(state().mu);
    auto it = state().contexts.find(ctx);
    if (it != state().contexts.end()) return it->second;
  }
  CUdevice dev = 0;
  {
    InternalScope internal;
    if (cuCtxGetDevice_v2(&dev, ctx) != CUDA_SUCCESS) return nullptr;
  }
  CudaDevice* d = device_of_ordinal(dev);
  std::unique_lock lock(state().mu);
  state().contexts[ctx] = d;
  return d;
}

// Calls that change an executable graph: cuGraphExec*SetParams*, cuGraphExecUpdate*,
// cuGraphNodeSetEnabled (each takes the CUgraphExec as its first parameter).
bool is_graph_exec_change(const char* name) {
  if (name == nullptr) return false;
  std::string_view n(name);
  if (n.rfind("cuGraphNodeSetEnabled", 0) == 0) return true;
  return n.rfind("cuGraphExec", 0) == 0 &&
         (n.find("SetParams") != std::string_view::npos || n.find("Update") != std::string_view::npos ||
          n.find("SetEvent") != std::string_view::npos);
}

bool capture_status(CUstream stream) {
  InternalScope internal;
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  if (cuStreamIsCapturing(stream, &st) != CUDA_SUCCESS) return false;
  return st != CU_STREAM_CAPTURE_STATUS_NONE;
}

}  // namespace interception

namespace {

using namespace interception;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// ---- devices and contexts ---------------------------------------------------------------------

void init_devices() {
  std::call_once(state().devices_once, [] {
    InternalScope internal;
    auto t0 = std::chrono::steady_clock::now();
    int count = 0;
    if (cuDeviceGetCount(&count) != CUDA_SUCCESS) count = 0;
    for (int i = 0; i < count; ++i) {
      CUdevice dev = 0;
      if (cuDeviceGet(&dev, i) != CUDA_SUCCESS) continue;
      auto d = std::make_unique<CudaDevice>(dev, i);
      // The CUPTI chip name is resolved by the counter backend when counters are first used:
      // asking CUPTI now would load its profiler libraries (~100 ms) into every application.
      state().counter_backends.push_back(
          std::make_unique<CudaCounterBackend>(dev, i, d->desc().chip));
      d->set_counters(state().counter_backends.back().get());
      state().counter_backends.back()->set_device(d.get());  // its warm start's tiny kernel
      d->agent = sdk::Runtime::get().add_device(d.get());
      state().devices.push_back(std::move(d));
    }
    // Tools load once the devices are known, so they can list agents and counters.
    sdk::Runtime::get().initialize();
    markers::enable(state().subscriber);  // --nvtx-include, --profile-from-start (markers.hpp)
    if (sdk::Runtime::get().registry().range_context() != nullptr) {
      // Range replay must see every driver call (any of them may close a range) and markers.
      cuptiEnableDomain(1, state().subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
      for (CUpti_CallbackId id : {CUPTI_CBID_NVTX_nvtxRangePushA, CUPTI_CBID_NVTX_nvtxRangePushEx,
                                  CUPTI_CBID_NVTX_nvtxRangePop}) {
        cuptiEnableCallback(1, state().subscriber, CUPTI_CB_DOMAIN_NVTX, id);
      }
      size_t max = sdk::Runtime::get().engine().range_options().max_launches;
      for (auto& b : state().counter_backends) b->set_max_range_launches(max);
    }
    state().devices_ms = ms_since(t0);
  });
}

// ---- launches ---------------------------------------------------------------------------------

// A range still open when the process exits must close while CUDA and CUPTI still work. The
// SDK's exit handler (Runtime::finalize) is registered when the tool starts, before cudart and
// CUPTI set up what their own exit handlers and static destructors tear down, so it runs after
// them (exit runs handlers in reverse order): on an H100, LargeKernelParameter and batchCUBLAS
// exited with a range held open by a deferred free, and closing it there corrupted the heap. This
// handler is registered at the first launch that joins a range, after that set-up, so it closes
// the range before the teardown. (Runtime::finalize's close remains for what opens later.)
void close_ranges_at_exit() {
  sdk::Runtime::get().engine().range_barrier(0, KREPLAY_RANGE_CLOSE_EXIT);
}

void close_ranges_before_teardown() {
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(&close_ranges_at_exit); });
}

void pack_args(CudaLaunch& l, const FuncInfo& fi) {
  if (l.extra != nullptr) {
    // CU_LAUNCH_PARAM_BUFFER_POINTER form: the packed buffer is given directly.
    void* buf = nullptr;
    size_t size = 0;
    for (void** e = l.extra; *e != CU_LAUNCH_PARAM_END; e += 2) {
      if (*e == CU_LAUNCH_PARAM_BUFFER_POINTER) buf = e[1];
      if (*e == CU_LAUNCH_PARAM_BUFFER_SIZE) size = *static_cast<size_t*>(e[1]);
    }
    if (buf != nullptr && size > 0) {
      l.args.resize(size);
      std::memcpy(l.args.data(), buf, size);
      l.args_buffer = true;
      l.args_complete = true;
    }
  } else if (l.params != nullptr && fi.params_known) {
    l.args.assign(fi.arg_bytes, std::byte{0});
    bool complete = true;
    for (size_t i = 0; i < fi.params.size(); ++i) {
      if (l.params[i] == nullptr) {
        complete = false;
        continue;
      }
      std::memcpy(l.args.data() + fi.params[i].first, l.params[i], fi.params[i].second);
    }
    l.param_layout = fi.params;
    l.args_complete = complete;
  }
  if (l.extra == nullptr && fi.params_known && fi.params.empty()) l.args_complete = true;
  l.info_.arg_bytes = std::span<const std::byte>(l.args.data(), l.args.size());
}

bool dispatch_services_wanted() {
  auto& reg = sdk::Runtime::get().registry();
  return reg.any_dispatch_level_active() || reg.replay_context() != nullptr;
}

// The fields cuLaunchKernel and cuLaunchCooperativeKernel share (their CUPTI parameter structs
// differ only in what follows).
template <typename Params>
void take_launch_params(CudaLaunch& l, const Params& p) {
  l.f = p.f;
  l.grid[0] = p.gridDimX; l.grid[1] = p.gridDimY; l.grid[2] = p.gridDimZ;
  l.block[0] = p.blockDimX; l.block[1] = p.blockDimY; l.block[2] = p.blockDimZ;
  l.shared_bytes = p.sharedMemBytes;
  l.stream = p.hStream;
  l.params = p.kernelParams;
}

// The launch's kernel as the engine names it.
void fill_kernel_info(CudaLaunch& l, const FuncInfo& fi) {
  auto& li = l.info_;
  li.kernel_id = fi.kernel_id;
  li.kernel_name = fi.entry->demangled.c_str();
  li.mangled_name = fi.entry->mangled.c_str();
  li.flags |= fi.entry->dispatch_flags;
  li.registers = fi.registers;
  li.static_shared_bytes = fi.static_shared;
}

// A graph launch: what the walk of its executable graph found, and a kernel name per graph
// ("cuda graph 3", with the reason when its nodes cannot be profiled one by one).
void describe_graph_launch(CudaLaunch& l) {
  auto g = graph_tracker().find(l.graph_exec);
  l.exec_graph = g;
  l.graph_info.graph_id = g->id;
  l.graph_info.kernel_nodes = g->kernel_nodes;
  l.graph_info.unreplayable = g->unreplayable;
  l.graph_info.nodes_unreplayable = g->nodes_unreplayable;
  l.graph_info.host_nodes = g->host_nodes;
  l.graph_info.whole_only = g->whole_only;
  std::string name = fmt::format("cuda graph {}", g->id);
  if (!g->whole_only.empty()) name += fmt::format(" (profiled as a whole: {})", g->whole_only);
  auto& li = l.info_;
  li.kernel_id = kernel_id_for(l.device->agent, name);
  const auto* e = sdk::Runtime::get().kernel(li.kernel_id);
  li.kernel_name = e->demangled.c_str();
  li.mangled_name = e->mangled.c_str();
  li.flags |= KREPLAY_DISPATCH_FLAG_GRAPH | KREPLAY_DISPATCH_FLAG_GRAPH_WHOLE;
  li.graph_id = g->id;
}

void launch_enter(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  if (!dispatch_services_wanted()) return;
  CudaDevice* dev = device_of_context(cb->context);
  if (dev == nullptr) return;
  auto launch = std::make_unique<CudaLaunch>();
  CudaLaunch& l = *launch;
  l.device = dev;
  l.ctx = cb->context;
  bool ptsz = false;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
      ptsz = true;
      [[fallthrough]];
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel: {
      auto* p = static_cast<const cuLaunchKernel_params*>(cb->functionParams);
      l.api = LaunchApi::kKernel;
      take_launch_params(l, *p);
      l.extra = p->extra;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      ptsz = true;
      [[fallthrough]];
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel: {
      auto* p = static_cast<const cuLaunchCooperativeKernel_params*>(cb->functionParams);
      l.api = LaunchApi::kCooperative;
      take_launch_params(l, *p);
      l.info_.flags |= KREPLAY_DISPATCH_FLAG_COOPERATIVE;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
      ptsz = true;
      [[fallthrough]];
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx: {
      auto* p = static_cast<const cuLaunchKernelEx_params*>(cb->functionParams);
      l.api = LaunchApi::kKernelEx;
      l.f = p->f;
      l.config = p->config;
      l.params = p->kernelParams;
      l.extra = p->extra;
      const CUlaunchConfig& c = *p->config;
      l.grid[0] = c.gridDimX; l.grid[1] = c.gridDimY; l.grid[2] = c.gridDimZ;
      l.block[0] = c.blockDimX; l.block[1] = c.blockDimY; l.block[2] = c.blockDimZ;
      l.shared_bytes = c.sharedMemBytes;
      l.stream = c.hStream;
      for (unsigned i = 0; i < c.numAttrs; ++i) {
        const auto& a = c.attrs[i];
        if (a.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
          l.info_.cluster = {a.value.clusterDim.x, a.value.clusterDim.y, a.value.clusterDim.z};
        } else if (a.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && a.value.cooperative) {
          l.info_.flags |= KREPLAY_DISPATCH_FLAG_COOPERATIVE;
        }
      }
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
      ptsz = true;
      [[fallthrough]];
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch: {
      auto* p = static_cast<const cuGraphLaunch_params*>(cb->functionParams);
      l.api = LaunchApi::kGraph;
      l.graph_exec = p->hGraph;
      l.stream = p->hStream;
      break;
    }
    default:
      return;
  }
  // A per-thread-stream call with the default stream means this thread's default stream.
  l.stream = interception::stream_of(l.stream, ptsz);
  // A launch into a stream under capture executes nothing: it becomes a node of the graph being
  // captured, and the graph's launches are what kreplay sees.
  if (capture_status(l.stream)) return;

  auto& li = l.info_;
  li.agent.handle = dev->agent;
  li.stream.handle = reinterpret_cast<uint64_t>(l.stream);
  li.grid = {l.grid[0], l.grid[1], l.grid[2]};
  li.block = {l.block[0], l.block[1], l.block[2]};
  li.dynamic_shared_bytes = l.shared_bytes;
  if (l.api == LaunchApi::kGraph) {
    describe_graph_launch(l);
  } else {
    FuncInfo* fi = func_info(dev, l.f, cb->symbolName);
    fill_kernel_info(l, *fi);
    pack_args(l, *fi);
  }
  dev->note_stream(l.stream);

  auto* inflight = new InFlight();  // NOLINT: owned through correlationData until EXIT
  inflight->device = dev;
  // A graph whose free nodes free memory it did not allocate: that memory goes with the launch.
  // (The guard is held only for the inventory update: the engine takes the window next.)
  if (l.exec_graph && !l.exec_graph->frees.empty()) {
    auto guard = sdk::Runtime::get().engine().guard_memory(dev->agent);
    for (CUdeviceptr p : l.exec_graph->frees) sdk::Runtime::get().on_free(dev->agent, p);
  }
  inflight->launch = std::move(launch);
  inflight->st = sdk::Runtime::get().engine().enter(l);
  if (inflight->st->in_range) close_ranges_before_teardown();
  // Events time the submission when something waits for it: a replay window, a service, or a
  // range (whose passes are waited for when it closes).
  if (inflight->st->window || inflight->st->wait_needed || inflight->st->in_range) l.record_start();
  *cb->correlationData = reinterpret_cast<uint64_t>(inflight);
}

void launch_exit(const CUpti_CallbackData* cb) {
  auto* inflight = reinterpret_cast<InFlight*>(*cb->correlationData);
  if (inflight == nullptr) return;
  *cb->correlationData = 0;
  std::unique_ptr<InFlight> owner(inflight);
  bool ok = *static_cast<CUresult*>(cb->functionReturnValue) == CUDA_SUCCESS;
  if (ok && (inflight->st->window || inflight->st->wait_needed || inflight->st->in_range))
    inflight->launch->record_end();
  // A graph's allocations that outlive its launch are memory like any other from now on: from
  // before its nodes run again one at a time (the engine's exit), so that they are saved and
  // restored for its kernel nodes.
  const auto& g = inflight->launch->exec_graph;
  if (ok && g) {
    for (const auto& [p, size] : g->allocates) {
      sdk::Runtime::get().on_allocate(inflight->device->agent, p, size, KREPLAY_MEMORY_KIND_POOL);
    }
  }
  sdk::Runtime::get().engine().exit(inflight->st, ok);
}

bool is_launch(CUpti_CallbackId cbid) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
      return true;
    default:
      return false;
  }
}

// Copies and memsets: every driver entry point whose name starts with cuMemcpy or cuMemset.
bool is_copy_or_set(const char* name) {
  return name != nullptr && (std::strncmp(name, "cuMemcpy", 8) == 0 || std::strncmp(name, "cuMemset", 8) == 0);
}

// Marks the application's driver call for replay::Engine::close_open_ranges: entered at the ENTER
// callback once its handling is done, left at the EXIT callback before its handling starts (so
// kreplay's own work in both callbacks is outside the mark, as it runs on the thread anyway).
struct AppCallMark {
  explicit AppCallMark(CUpti_ApiCallbackSite site) : enter(site == CUPTI_API_ENTER) {
    if (!enter) replay::Engine::app_call_exit();
  }
  ~AppCallMark() {
    if (enter) replay::Engine::app_call_enter();
  }
  AppCallMark(const AppCallMark&) = delete;
  AppCallMark& operator=(const AppCallMark&) = delete;
  bool enter;
};

void CUPTIAPI callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (in_internal_call()) {
    // kreplay's own calls are not intercepted -- except the module events they raise: with lazy
    // loading, kreplay's first query of an application kernel (its parameter layout) is what
    // loads the kernel's module, and that module's variables must still be registered.
    const bool module_event = domain == CUPTI_CB_DOMAIN_RESOURCE &&
                              (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED ||
                               cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING);
    if (!module_event) return;
  }
  try {
    if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
      const auto* r = static_cast<const CUpti_ResourceData*>(data);
      switch (cbid) {
        case CUPTI_CBID_RESOURCE_CU_INIT_FINISHED:
          init_devices();
          break;
        case CUPTI_CBID_RESOURCE_CONTEXT_CREATED:
          init_devices();
          services::pc_sampling_context_created(device_of_context(r->context), r->context);
          break;
        case CUPTI_CBID_RESOURCE_MODULE_LOADED: {
          init_devices();
          auto t0 = std::chrono::steady_clock::now();
          on_module_loaded(r->context, static_cast<const CUpti_ModuleResourceData*>(r->resourceDescriptor));
          services::pc_sampling_module_loaded(device_of_context(r->context), r->context);
          state().modules_ms += ms_since(t0);  // callbacks of one process run one at a time here
          ++state().modules_loaded;
          break;
        }
        case CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING:
          on_module_unloading(static_cast<const CUpti_ModuleResourceData*>(r->resourceDescriptor));
          break;
        case CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED: {
          const auto* g = static_cast<const CUpti_GraphData*>(r->resourceDescriptor);
          if (g) graph_tracker().on_exec_created(g->graphExec, g->graph);
          break;
        }
        case CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING: {
          const auto* g = static_cast<const CUpti_GraphData*>(r->resourceDescriptor);
          if (g) graph_tracker().on_exec_destroyed(g->graphExec);
          break;
        }
        case CUPTI_CBID_RESOURCE_GRAPH_NODE_SET_PARAMS: {
          const auto* g = static_cast<const CUpti_GraphData*>(r->resourceDescriptor);
          if (g && g->graphExec) graph_tracker().on_exec_modified(g->graphExec, "changed after instantiation");
          break;
        }
        case CUPTI_CBID_RESOURCE_STREAM_DESTROY_STARTING: {
          CudaDevice* dev = device_of_context(r->context);
          if (dev) dev->forget_stream(r->resourceHandle.stream);
          break;
        }
        default:
          break;
      }
      return;
    }
    if (domain == CUPTI_CB_DOMAIN_NVTX) {
      range_calls::nvtx_callback(cbid, static_cast<const CUpti_NvtxData*>(data));
      markers::nvtx_callback(cbid, static_cast<const CUpti_NvtxData*>(data));
      return;
    }
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
    const auto* cb = static_cast<const CUpti_CallbackData*>(data);
    // The application is inside a driver call from ENTER to EXIT (range mode sees every call):
    // a signal handler that interrupted it must not make driver calls (close_open_ranges).
    AppCallMark mark(cb->callbackSite);
    init_devices();
    if (cb->callbackSite == CUPTI_API_ENTER && markers::enabled()) markers::driver_call_enter(cbid);
    if (cb->callbackSite == CUPTI_API_ENTER && !is_launch(cbid) && range_calls::range_mode()) {
      CudaDevice* dev = device_of_context(cb->context);
      range_calls::driver_call_enter(cbid, cb, dev ? dev->agent : 0);
    }
    if (is_launch(cbid)) {
      if (cb->callbackSite == CUPTI_API_ENTER) {
        *cb->correlationData = 0;
        launch_enter(cbid, cb);
      } else {
        launch_exit(cb);
      }
      return;
    }
    if (is_copy_or_set(cb->functionName)) {
      if (cb->callbackSite == CUPTI_API_ENTER) {
        *cb->correlationData = 0;
        // Inside an open range a memset or a copy into device memory may join it.
        if (!range_memory::call_enter(cbid, cb)) guard_enter(cb);
      } else {
        release_enter_state(cb);
      }
      return;
    }
    if (cb->callbackSite == CUPTI_API_ENTER) *cb->correlationData = 0;
    memory_callback(cbid, cb);
  } catch (const std::exception& e) {
    KR_ERROR("internal error in the CUDA callback: {}", e.what());
  } catch (...) {
    KR_ERROR("internal error in the CUDA callback");
  }
}

}  // namespace

void describe_kernel_launch(CudaLaunch& l) {
  FuncInfo* fi = func_info(l.device, l.f, nullptr);
  fill_kernel_info(l, *fi);
}

bool start_interception() {
  static std::once_flag once;
  static bool started = false;
  std::call_once(once, [] {
    // Tools that do not link libkreplay resolve the C API from the already-loaded SDK.
    dlopen("libkreplay.so.0.1", RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
    auto t0 = std::chrono::steady_clock::now();
    CUptiResult r = cuptiSubscribe(&state().subscriber, &callback, nullptr);
    state().subscribe_ms = ms_since(t0);
    t0 = std::chrono::steady_clock::now();
    if (r != CUPTI_SUCCESS) {
      const char* text = nullptr;
      cuptiGetResultString(r, &text);
      if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        KR_ERROR("CUPTI is already in use by another tool (ncu, nsys, compute-sanitizer or a "
                 "CUPTI-based profiler); kreplay is off for this run and the application runs "
                 "unprofiled");
      } else {
        KR_ERROR("cannot subscribe to CUPTI ({}); kreplay is off for this run", text ? text : "?");
      }
      return;
    }
    auto enable = [](CUpti_CallbackDomain d, CUpti_CallbackId id) {
      cuptiEnableCallback(1, state().subscriber, d, id);
    };
    for (CUpti_CallbackId id :
         {CUPTI_CBID_RESOURCE_CU_INIT_FINISHED, CUPTI_CBID_RESOURCE_CONTEXT_CREATED,
          CUPTI_CBID_RESOURCE_MODULE_LOADED, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING,
          CUPTI_CBID_RESOURCE_STREAM_DESTROY_STARTING, CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED,
          CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING, CUPTI_CBID_RESOURCE_GRAPH_NODE_SET_PARAMS}) {
      enable(CUPTI_CB_DOMAIN_RESOURCE, id);
    }
    for (CUpti_CallbackId id : {
             CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
             CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
             CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
             CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
             CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
             CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
             CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
             CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
             CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
             CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
             CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc, CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc_v2,
             CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2, CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2,
             CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
             CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz, CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost,
             CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister, CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
             CUPTI_DRIVER_TRACE_CBID_cuMemRelease, CUPTI_DRIVER_TRACE_CBID_cuMemMap,
             CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, CUPTI_DRIVER_TRACE_CBID_cuMemSetAccess,
             CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2, CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayCreate,
             CUPTI_DRIVER_TRACE_CBID_cuArrayDestroy, CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayDestroy,
             CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture, CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz,
             CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2,
             CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz,
             CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph,
             CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz,
             CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture, CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz}) {
      enable(CUPTI_CB_DOMAIN_DRIVER_API, id);
    }
    // Copies and memsets: every cbid whose API name starts with cuMemcpy or cuMemset; and every
    // call that changes an executable graph.
    for (CUpti_CallbackId id = 1; id < CUPTI_DRIVER_TRACE_CBID_SIZE; ++id) {
      const char* name = nullptr;
      if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, id, &name) == CUPTI_SUCCESS &&
          (is_copy_or_set(name) || is_graph_exec_change(name))) {
        enable(CUPTI_CB_DOMAIN_DRIVER_API, id);
      }
    }
    started = true;
    state().callbacks_ms = ms_since(t0);
    if (env::get_bool("KREPLAY_PRINT_COSTS", false)) std::atexit(&interception::print_costs);
    KR_DEBUG("CUDA interception started");
  });
  return started;
}

}  // namespace kreplay::cuda
