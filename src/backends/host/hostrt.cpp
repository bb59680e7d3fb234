// The host device runtime (see hostrt.hpp): the application-facing half of the host backend —
// memory, streams, events, modules and markers here; launches, stream capture and graphs in
// hostrt_launch.cpp; the state both share in hostrt_internal.hpp.
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

#include "backends/host/device_heap.hpp"
#include "backends/host/hostrt_internal.hpp"
#include "common/logging.hpp"
#include "common/util.hpp"

namespace kreplay::hostrt {
using detail::Allocation;
using detail::HostEvent;
using detail::KernelRec;
using detail::ModuleRec;
using detail::rt;

namespace {

constexpr size_t kAlign = 256;  // module globals (allocations: hostrt_memory.cpp)

}  // namespace

Status init(const Config& config) {
  return rt().init(config);
}
Status init() {
  return rt().ensure();
}
const Config& config() {
  return rt().config_;
}

// Memory (allocations, frees, copies, memsets): hostrt_memory.cpp.

Stream default_stream(int device) {
  if (!rt().ensure().ok() || device < 0 ||
      static_cast<size_t>(device) >= rt().default_streams_.size())
    return 0;
  return rt().default_streams_[device];
}

Stream detail::Runtime::thread_stream() {
  thread_local Stream own = 0;
  if (own == 0) {
    if (auto s = stream_create(0); s.ok()) own = *s;
  }
  return own;
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
    if (desc.lazy) {
      mod->pending_globals.emplace_back(p, g.size);
    } else {
      sdk.on_allocate(dev->agent, reinterpret_cast<uint64_t>(p), g.size,
                      KREPLAY_MEMORY_KIND_MODULE_GLOBAL);
    }
  }
  mod->materialized = !desc.lazy;
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

namespace detail {

Status materialize(ModuleRec& m) {
  if (m.materialized.load(std::memory_order_acquire)) return Status::Ok();  // every launch asks
  std::lock_guard lock(m.load_mu);
  if (m.materialized.load(std::memory_order_relaxed)) return Status::Ok();
  HostDevice* dev = rt().device(m.device);
  // The module's variables come to exist: the open range closes first, since its snapshot does
  // not hold them and a later pass would add to what an earlier one wrote there (CUDA: the
  // interceptor closes it at the first launch of a module's kernel that tracks its variables).
  // With code-patching counters any lazy load closes it (CUDA: code loaded inside a range's
  // counter session crashed CUPTI when a later pass launched it again).
  if (!m.pending_globals.empty() || dev->patches_code()) {
    sdk::Runtime::get().engine().range_barrier(dev->agent, KREPLAY_RANGE_CLOSE_MODULE,
                                               "hostrt: lazy module load");
  }
  for (const auto& [p, size] : m.pending_globals) {
    sdk::Runtime::get().on_allocate(dev->agent, reinterpret_cast<uint64_t>(p), size,
                                    KREPLAY_MEMORY_KIND_MODULE_GLOBAL);
  }
  m.pending_globals.clear();
  m.materialized.store(true, std::memory_order_release);
  return Status::Ok();
}

}  // namespace detail

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
  return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
               fmt::format("no kernel '{}' in module", name));
}

namespace {

Result<void*> find_global(Module module, std::string_view name, ModuleRec** rec) {
  std::shared_lock lock(rt().mu_);
  if (module == 0 || module > rt().modules_.size())
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown module");
  *rec = rt().modules_[module - 1].get();
  const auto& globals = (*rec)->globals;
  auto it = globals.find(name);
  if (it == globals.end())
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, fmt::format("no global '{}'", name));
  return it->second;
}

}  // namespace

Result<void*> get_global(Module module, std::string_view name) {
  ModuleRec* rec = nullptr;
  ASSIGN_OR_RETURN(void* p, find_global(module, name, &rec));
  RETURN_IF_ERROR(detail::materialize(*rec));  // as cudaGetSymbolAddress loads a lazy module
  return p;
}

// profiler_start/stop and the NVTX calls: hostrt_nvtx.cpp.

namespace testing {
Result<void*> module_global(Module module, std::string_view name) {
  ModuleRec* rec = nullptr;
  return find_global(module, name, &rec);
}
void fail_next_snapshot(int device) {
  if (rt().ensure().ok() && rt().device(device)) rt().device(device)->fail_next_snapshot();
}
void set_heap_restorable(bool restorable, int device) {
  if (rt().ensure().ok() && rt().device(device))
    rt().device(device)->set_heap_restorable(restorable);
}
void set_counters_patch_code(bool on, int device) {
  if (rt().ensure().ok() && rt().device(device)) rt().device(device)->set_patches_code(on);
}

void set_heap_set_up(bool set_up, int device) {
  if (rt().ensure().ok() && rt().device(device)) rt().device(device)->set_heap_set_up(set_up);
}
void skip_heap_restore(bool skip, int device) {
  if (rt().ensure().ok() && rt().device(device)) rt().device(device)->skip_heap_restore(skip);
}
size_t heap_live_allocations(int device) {
  if (!rt().ensure().ok() || rt().device(device) == nullptr) return 0;
  return rt().device(device)->heap()->live();
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
  return {log.total, log.inside_pass, std::move(log.before_submission),
          std::move(log.dirty_at_start)};
}
void on_cache_flush(std::function<void()> hook, int device) {
  if (rt().ensure().ok() && rt().device(device))
    rt().device(device)->set_flush_hook(std::move(hook));
}
}  // namespace testing

}  // namespace kreplay::hostrt
