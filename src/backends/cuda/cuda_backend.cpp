// CudaDevice and CudaLaunch (see cuda_backend.hpp).
#include "backends/cuda/cuda_backend.hpp"

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "backends/cuda/graphs.hpp"
#include "backends/cuda/internal_guard.hpp"
#include "backends/cuda/memory/memory_ops.hpp"
#include "backends/cuda/services/cupti_service.hpp"
#include "common/exit_safe.hpp"
#include "common/logging.hpp"
#include "common/util.hpp"
#include "sdk/runtime.hpp"

namespace kreplay::cuda {

Status cu_error(CUresult r, const char* what) {
  const char* name = nullptr;
  const char* text = nullptr;
  cuGetErrorName(r, &name);
  cuGetErrorString(r, &text);
  // The errors that say the work itself failed on the device; the context is unusable after them.
  const bool fault = r == CUDA_ERROR_ASSERT || r == CUDA_ERROR_ILLEGAL_ADDRESS ||
                     r == CUDA_ERROR_LAUNCH_FAILED || r == CUDA_ERROR_ILLEGAL_INSTRUCTION ||
                     r == CUDA_ERROR_MISALIGNED_ADDRESS || r == CUDA_ERROR_INVALID_ADDRESS_SPACE ||
                     r == CUDA_ERROR_INVALID_PC || r == CUDA_ERROR_HARDWARE_STACK_ERROR;
  return Error(
      fault ? KREPLAY_STATUS_ERROR_DEVICE_FAULT : KREPLAY_STATUS_ERROR,
      fmt::format("{} failed: {} ({})", what, name ? name : "?", text ? text : "no description"));
}

// ---------------------------------------------------------------------------------------------
// CudaDevice
// ---------------------------------------------------------------------------------------------

CudaDevice::CudaDevice(CUdevice dev, int ordinal) : dev_(dev) {
  InternalScope internal;
  char name[256] = {};
  cuDeviceGetName(name, sizeof(name), dev);
  desc_.type = KREPLAY_AGENT_TYPE_CUDA_GPU;
  desc_.device_index = static_cast<uint32_t>(ordinal);
  desc_.name = name;
  size_t total = 0;
  cuDeviceTotalMem(&total, dev);
  desc_.memory_bytes = total;
  int v = 0;
  cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  desc_.multiprocessor_count = static_cast<uint32_t>(v);
  cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  desc_.cc_major = static_cast<uint32_t>(v);
  cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  desc_.cc_minor = static_cast<uint32_t>(v);
  CUuuid uuid{};
  if (cuDeviceGetUuid_v2(&uuid, dev) == CUDA_SUCCESS) {
    const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
    desc_.uuid = fmt::format(
        "GPU-{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}"
        "{:02x}{:02x}",
        b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
        b[14], b[15]);
  }
  // The chip name CUPTI uses ("GH100" for H100 and H200) is filled in by the counter backend.
  desc_.chip = desc_.cc_major == 9 && desc_.cc_minor == 0 ? "GH100" : "";
}

CudaDevice::~CudaDevice() = default;

Result<MemoryOps*> CudaDevice::ops() {
  std::lock_guard lock(ops_mu_);
  if (!ops_) {
    InternalScope internal;
    CUcontext ctx = nullptr;
    KR_CU(cuCtxGetCurrent(&ctx));
    if (ctx == nullptr) {
      return Error(KREPLAY_STATUS_ERROR, "no CUDA context is current on the launching thread");
    }
    auto created = MemoryOps::create(ctx, dev_);
    if (!created.ok()) return created.status();
    ops_ = std::move(created).value();
  }
  return ops_.get();
}

Status CudaDevice::tiny_launch(CUcontext ctx) {
  ASSIGN_OR_RETURN(MemoryOps * o, ops());
  if (o->context() != ctx) {
    return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                 "kreplay's kernels are loaded in another context of the device");
  }
  return o->tiny_launch();
}

bool CudaDevice::own_kernels_in(CUcontext ctx) {
  auto o = ops();
  return ctx != nullptr && o.ok() && (*o)->context() == ctx;
}

void CudaDevice::ready_for_profiling(CUcontext ctx) {
  services::pc_sampling_ready_for_profiling(this, ctx);
}

void CudaDevice::note_stream(CUstream s) {
  {
    std::shared_lock lock(streams_mu_);
    if (streams_.count(s)) return;
  }
  std::unique_lock lock(streams_mu_);
  streams_.insert(s);
}

bool CudaDevice::capture_active() { return any_capture_.load(std::memory_order_acquire); }

void CudaDevice::capture_begun(CUstream s) {
  std::lock_guard lock(captures_mu_);
  capturing_.insert(s);
  any_capture_.store(true, std::memory_order_release);
}

void CudaDevice::capture_ended(CUstream s) {
  std::lock_guard lock(captures_mu_);
  capturing_.erase(s);
  any_capture_.store(!capturing_.empty(), std::memory_order_release);
}

void CudaDevice::forget_stream(CUstream s) {
  std::unique_lock lock(streams_mu_);
  streams_.erase(s);
}

Status CudaDevice::drain(uint64_t timeout_ms) {
  InternalScope internal;
  std::vector<CUstream> streams;
  {
    std::shared_lock lock(streams_mu_);
    streams.assign(streams_.begin(), streams_.end());
  }
  // Poll every stream that carried work, so a stream that never finishes (a kernel waiting for
  // the host or for another process) times out instead of hanging the application. A stream
  // under capture is not asked: that would invalidate the capture.
  if (capture_active()) {
    return Error(KREPLAY_STATUS_ERROR, "a stream of the device is being captured into a graph");
  }
  const uint64_t deadline = now_ns() + timeout_ms * 1000000ull;
  unsigned spins = 0;
  while (true) {
    bool busy = false;
    for (CUstream s : streams) {
      CUresult r = cuStreamQuery(s);
      if (r == CUDA_ERROR_NOT_READY) {
        busy = true;
        break;
      }
    }
    if (!busy) break;
    if (now_ns() > deadline) {
      return Error(KREPLAY_STATUS_ERROR,
                   fmt::format("work on the device did not finish within {} ms", timeout_ms));
    }
    if (++spins > 64) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  KR_CU(cuCtxSynchronize());
  return Status::Ok();
}

device::PassService* CudaDevice::service(int kind) {
  if (kind <= KREPLAY_PASS_SERVICE_NONE || kind >= KREPLAY_PASS_SERVICE_LAST) return nullptr;
  std::lock_guard lock(services_mu_);
  auto& svc = services_[static_cast<size_t>(kind)];
  if (!svc) {
    switch (kind) {
      case KREPLAY_PASS_SERVICE_PC_SAMPLING:
        svc = services::make_pc_sampling(this);
        break;
      case KREPLAY_PASS_SERVICE_SASS_METRICS:
        svc = services::make_sass_metrics(this);
        break;
      case KREPLAY_PASS_SERVICE_PM_SAMPLING:
        svc = services::make_pm_sampling(this);
        break;
      default:
        break;
    }
  }
  return svc.get();
}

Status CudaDevice::flush_caches() {
  // On kreplay's own stream, synchronized before returning: the device is drained in a replay
  // window (in a range, the launch before has completed), so the pass or the range's launch that
  // follows starts after the flush completed. Inside a range's counter session the flush is a
  // CUPTI range of its own, which CudaCounterBackend::range_flush leaves out.
  ASSIGN_OR_RETURN(MemoryOps * o, ops());
  return o->flush_caches();
}

uint64_t CudaDevice::free_device_bytes() {
  auto o = ops();
  return o.ok() ? (*o)->free_device_bytes() : 0;
}

uint64_t CudaDevice::storage_available(device::StorageTier tier) {
  auto o = ops();
  return o.ok() ? (*o)->storage_available(tier) : 0;
}

Result<device::Storage> CudaDevice::allocate_storage(device::StorageTier tier, uint64_t bytes) {
  ASSIGN_OR_RETURN(MemoryOps * o, ops());
  return o->allocate_storage(tier, bytes);
}

namespace {

/// A context pushed onto the calling thread's stack, popped when the guard goes.
struct PushedContext {
  ~PushedContext() {
    InternalScope internal;
    CUcontext popped = nullptr;
    cuCtxPopCurrent(&popped);
  }
};

}  // namespace

std::shared_ptr<void> CudaDevice::bind_launch_context(device::Launch& launch) {
  auto* l = dynamic_cast<CudaLaunch*>(&launch);
  if (l == nullptr || l->ctx == nullptr) return nullptr;
  InternalScope internal;
  CUcontext current = nullptr;
  if (cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == l->ctx) return nullptr;
  if (CUresult r = cuCtxPushCurrent(l->ctx); r != CUDA_SUCCESS) {
    KR_WARN("the context of {} could not be made current to replay it (CUresult {})",
            l->info().kernel_name, static_cast<int>(r));
    return nullptr;
  }
  return std::make_shared<PushedContext>();
}

void CudaDevice::free_storage(const device::Storage& storage) {
  auto o = ops();
  if (o.ok()) (*o)->free_storage(storage);
}

Status CudaDevice::snapshot(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                            std::span<uint64_t> digests) {
  ASSIGN_OR_RETURN(MemoryOps * o, ops());
  return o->snapshot(regions, chunk_bytes, digests);
}

Status CudaDevice::find_changed(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                                std::span<const uint64_t> digests, std::vector<uint64_t>* changed) {
  ASSIGN_OR_RETURN(MemoryOps * o, ops());
  return o->find_changed(regions, chunk_bytes, digests, changed);
}

Status CudaDevice::digest_live(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                               std::span<uint64_t> digests) {
  ASSIGN_OR_RETURN(MemoryOps * o, ops());
  return o->digest_live(regions, chunk_bytes, digests);
}

Status CudaDevice::digest_baseline(std::span<const device::CopyRegion> regions,
                                   uint64_t chunk_bytes) {
  ASSIGN_OR_RETURN(MemoryOps * o, ops());
  return o->digest_baseline(regions, chunk_bytes);
}

Status CudaDevice::changed_since_baseline(std::span<const device::CopyRegion> regions,
                                          uint64_t chunk_bytes, bool update,
                                          std::vector<uint64_t>* changed,
                                          std::vector<uint64_t>* was_zero) {
  ASSIGN_OR_RETURN(MemoryOps * o, ops());
  return o->changed_since_baseline(regions, chunk_bytes, update, changed, was_zero);
}

Status CudaDevice::zero_chunks(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                               std::span<const uint64_t> chunks) {
  ASSIGN_OR_RETURN(MemoryOps * o, ops());
  return o->zero_chunks(regions, chunk_bytes, chunks);
}

Status CudaDevice::restore(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                           std::span<const uint64_t> chunks) {
  ASSIGN_OR_RETURN(MemoryOps * o, ops());
  return o->restore(regions, chunk_bytes, chunks);
}

// ---------------------------------------------------------------------------------------------
// CudaLaunch
// ---------------------------------------------------------------------------------------------
namespace {

// Events are reused per thread: launches begin and end on one thread. A range closed by an exit
// handler gives its launches' events back after the main thread's thread_locals are gone.
struct EventPool {
  std::vector<CUevent> events;
};
std::vector<CUevent>& event_pool() { return exit_safe_thread_local<EventPool>().events; }

CUevent take_event() {
  auto& pool = event_pool();
  if (!pool.empty()) {
    CUevent e = pool.back();
    pool.pop_back();
    return e;
  }
  CUevent e = nullptr;
  if (cuEventCreate(&e, CU_EVENT_DEFAULT) != CUDA_SUCCESS) return nullptr;
  return e;
}

void give_event(CUevent e) {
  if (e != nullptr) event_pool().push_back(e);
}

}  // namespace

CudaLaunch::~CudaLaunch() {
  give_event(start_);
  give_event(end_);
}

void CudaLaunch::record_start() {
  if (capturing) return;
  InternalScope internal;
  if (start_ == nullptr) start_ = take_event();
  if (end_ == nullptr) end_ = take_event();
  timed_ = start_ != nullptr && end_ != nullptr && cuEventRecord(start_, stream) == CUDA_SUCCESS;
}

void CudaLaunch::record_end() {
  if (capturing || !timed_) return;
  InternalScope internal;
  timed_ = cuEventRecord(end_, stream) == CUDA_SUCCESS;
}

bool CudaLaunch::recordable() const {
  if (capturing) return false;
  return api == LaunchApi::kGraph || args_complete;
}

void CudaLaunch::own_arguments() {
  info_.arg_bytes = std::span<const std::byte>(args.data(), args.size());
  if (args_buffer) {
    own_args_size_ = args.size();
    own_extra_ = {CU_LAUNCH_PARAM_BUFFER_POINTER, args.data(), CU_LAUNCH_PARAM_BUFFER_SIZE,
                  &own_args_size_, CU_LAUNCH_PARAM_END};
    extra = own_extra_.data();
    params = nullptr;
  } else {
    own_params_.clear();
    for (const auto& [off, size] : param_layout) own_params_.push_back(args.data() + off);
    params = own_params_.empty() ? nullptr : own_params_.data();
    extra = nullptr;
  }
}

void CudaLaunch::set_launch_attributes(const unsigned cluster[3], bool cooperative) {
  own_attrs_.clear();
  if (cluster[0] > 0) {
    CUlaunchAttribute a{};
    a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    a.value.clusterDim.x = cluster[0];
    a.value.clusterDim.y = cluster[1];
    a.value.clusterDim.z = cluster[2];
    own_attrs_.push_back(a);
    info_.cluster = {cluster[0], cluster[1], cluster[2]};
  }
  if (cooperative) {
    CUlaunchAttribute a{};
    a.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    a.value.cooperative = 1;
    own_attrs_.push_back(a);
    info_.flags |= KREPLAY_DISPATCH_FLAG_COOPERATIVE;
  }
  own_config_ = {};
  own_config_.gridDimX = grid[0];
  own_config_.gridDimY = grid[1];
  own_config_.gridDimZ = grid[2];
  own_config_.blockDimX = block[0];
  own_config_.blockDimY = block[1];
  own_config_.blockDimZ = block[2];
  own_config_.sharedMemBytes = shared_bytes;
  own_config_.hStream = stream;
  own_config_.attrs = own_attrs_.empty() ? nullptr : own_attrs_.data();
  own_config_.numAttrs = static_cast<unsigned>(own_attrs_.size());
  config = &own_config_;
  api = LaunchApi::kKernelEx;
}

Result<std::vector<device::GraphStep>> CudaLaunch::decompose() {
  if (api != LaunchApi::kGraph || exec_graph == nullptr || !graph_info.whole_only.empty()) {
    return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                 graph_info.whole_only.empty() ? "the graph's nodes are not known"
                                               : "the graph has " + graph_info.whole_only);
  }
  std::vector<device::GraphStep> steps;
  uint64_t index = 0;
  for (const GraphNodeWork& n : exec_graph->nodes) {
    device::GraphStep step;
    switch (n.kind) {
      case GraphNodeWork::Kind::kKernel: {
        auto k = std::make_unique<CudaLaunch>();
        k->device = device;
        k->api = LaunchApi::kKernel;
        k->f = n.f;
        std::copy(std::begin(n.grid), std::end(n.grid), k->grid);
        std::copy(std::begin(n.block), std::end(n.block), k->block);
        k->shared_bytes = n.shared_bytes;
        k->stream = stream;
        k->args = n.args;
        k->param_layout = n.layout;
        k->args_buffer = n.layout.empty() && !n.args.empty();
        k->args_complete = true;
        k->own_arguments();
        describe_kernel_launch(*k);
        if (n.cluster[0] > 0 || n.cooperative) k->set_launch_attributes(n.cluster, n.cooperative);
        auto& li = k->info_;
        li.agent = info_.agent;
        li.stream = info_.stream;
        li.grid = {n.grid[0], n.grid[1], n.grid[2]};
        li.block = {n.block[0], n.block[1], n.block[2]};
        li.dynamic_shared_bytes = n.shared_bytes;
        li.flags |= KREPLAY_DISPATCH_FLAG_GRAPH;
        li.graph_id = graph_info.graph_id;
        li.graph_node = index;
        step.kernel = std::move(k);
        break;
      }
      case GraphNodeWork::Kind::kCopy:
        step.other = [s = stream, p = n.copy]() -> Status {
          InternalScope internal;
          KR_CU(cuMemcpy3DAsync(&p, s));
          return Status::Ok();
        };
        break;
      case GraphNodeWork::Kind::kMemset:
        step.other = [s = stream, m = n.memset]() -> Status {
          InternalScope internal;
          switch (m.elementSize) {
            case 1:
              KR_CU(cuMemsetD2D8Async(m.dst, m.pitch, static_cast<unsigned char>(m.value), m.width,
                                      m.height, s));
              break;
            case 2:
              KR_CU(cuMemsetD2D16Async(m.dst, m.pitch, static_cast<unsigned short>(m.value),
                                       m.width, m.height, s));
              break;
            default:
              KR_CU(cuMemsetD2D32Async(m.dst, m.pitch, m.value, m.width, m.height, s));
              break;
          }
          return Status::Ok();
        };
        break;
      case GraphNodeWork::Kind::kAlloc:
      case GraphNodeWork::Kind::kFree:
        // An allocation that outlives the launch was tracked at the launch and stays tracked.
        if (!n.mem_inside) {
          ++index;
          continue;
        }
        if (n.kind == GraphNodeWork::Kind::kAlloc) {
          step.other = [agent = device->agent, p = n.mem, bytes = n.mem_bytes]() -> Status {
            sdk::Runtime::get().on_allocate(agent, p, bytes, KREPLAY_MEMORY_KIND_POOL);
            return Status::Ok();
          };
        } else {
          step.other = [agent = device->agent, p = n.mem]() -> Status {
            auto guard = sdk::Runtime::get().engine().guard_memory(agent);
            sdk::Runtime::get().on_free(agent, p);
            return Status::Ok();
          };
        }
        break;
    }
    steps.push_back(std::move(step));
    ++index;
  }
  return steps;
}

Status CudaLaunch::wait_stream(uint64_t timeout_ms) {
  InternalScope internal;
  const uint64_t deadline = now_ns() + timeout_ms * 1000000ull;
  while (true) {
    CUresult r = cuStreamQuery(stream);
    if (r == CUDA_SUCCESS) return Status::Ok();
    if (r != CUDA_ERROR_NOT_READY) return cu_error(r, "cuStreamQuery");
    if (now_ns() > deadline) {
      return Error(KREPLAY_STATUS_ERROR,
                   fmt::format("the stream did not finish within {} ms", timeout_ms));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

std::unique_ptr<device::Launch> CudaLaunch::record() {
  if (!recordable()) return nullptr;
  auto c = std::make_unique<CudaLaunch>();
  c->info_ = info_;
  c->api = api;
  c->f = f;
  std::copy(std::begin(grid), std::end(grid), c->grid);
  std::copy(std::begin(block), std::end(block), c->block);
  c->shared_bytes = shared_bytes;
  c->stream = stream;
  c->device = device;
  c->ctx = ctx;
  c->args = args;
  c->args_complete = true;
  c->args_buffer = args_buffer;
  c->param_layout = param_layout;
  c->graph_exec = graph_exec;
  c->exec_graph = exec_graph;
  c->graph_info = graph_info;
  // Parameters point into the copy's own bytes.
  c->own_arguments();
  if (api == LaunchApi::kKernelEx && config != nullptr) {
    c->own_config_ = *config;
    c->own_attrs_.assign(config->attrs, config->attrs + config->numAttrs);
    c->own_config_.attrs = c->own_attrs_.empty() ? nullptr : c->own_attrs_.data();
    c->config = &c->own_config_;
  }
  // The submission just made is waited for through the copy.
  c->start_ = start_;
  c->end_ = end_;
  c->timed_ = timed_;
  start_ = end_ = nullptr;
  timed_ = false;
  return c;
}

Status CudaLaunch::relaunch() {
  InternalScope internal;
  record_start();
  CUresult r = CUDA_SUCCESS;
  switch (api) {
    case LaunchApi::kKernel:
      r = cuLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes,
                         stream, params, extra);
      break;
    case LaunchApi::kCooperative:
      r = cuLaunchCooperativeKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                    shared_bytes, stream, params);
      break;
    case LaunchApi::kKernelEx: {
      // The application's config with its stream resolved the same way (per-thread streams).
      CUlaunchConfig c = *config;
      c.hStream = stream;
      r = cuLaunchKernelEx(&c, f, params, extra);
      break;
    }
    case LaunchApi::kGraph:
      r = cuGraphLaunch(graph_exec, stream);
      break;
  }
  if (r != CUDA_SUCCESS) return cu_error(r, "relaunch");
  record_end();
  return Status::Ok();
}

Status CudaLaunch::wait(uint64_t timeout_ms, device::PassTiming* timing) {
  if (capturing || !timed_) {
    // Nothing executes for a captured launch; without events, fall back to the stream.
    if (!capturing) {
      InternalScope internal;
      KR_CU(cuStreamSynchronize(stream));
    }
    if (timing) timing->start_ns = timing->end_ns = now_ns();
    return Status::Ok();
  }
  InternalScope internal;
  const uint64_t deadline = now_ns() + timeout_ms * 1000000ull;
  unsigned spins = 0;
  while (true) {
    CUresult r = cuEventQuery(end_);
    if (r == CUDA_SUCCESS) break;
    if (r != CUDA_ERROR_NOT_READY) return cu_error(r, "cuEventQuery");
    if (now_ns() > deadline) {
      return Error(KREPLAY_STATUS_ERROR,
                   fmt::format("the launch did not complete within {} ms", timeout_ms));
    }
    if (++spins > 256) std::this_thread::sleep_for(std::chrono::microseconds(10));
  }
  uint64_t end = now_ns();
  float ms = 0;
  if (timing) {
    if (cuEventElapsedTime(&ms, start_, end_) != CUDA_SUCCESS) ms = 0;
    uint64_t dur = static_cast<uint64_t>(static_cast<double>(ms) * 1e6);
    timing->end_ns = end;
    timing->start_ns = end > dur ? end - dur : end;
    if (timing->end_ns == timing->start_ns) ++timing->end_ns;
  }
  return Status::Ok();
}

}  // namespace kreplay::cuda
