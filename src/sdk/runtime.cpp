#include "sdk/runtime.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "common/env.hpp"
#include "common/logging.hpp"
#include "common/util.hpp"
#include "sdk/hooks.hpp"

namespace kreplay::sdk {
namespace {

replay::Options options_from_env() {
  replay::Options o;
  if (auto scope = env::get("KREPLAY_REPLAY_MEMORY")) {
    if (*scope == "args") {
      o.scope = KREPLAY_SNAPSHOT_SCOPE_ARGS;
    } else if (*scope == "all" || scope->empty()) {
      o.scope = KREPLAY_SNAPSHOT_SCOPE_ALL;
    } else {
      KR_WARN("KREPLAY_REPLAY_MEMORY='{}' is not a snapshot scope; use all or args (using all)",
              *scope);
    }
  }
  if (auto max = env::get("KREPLAY_MAX_SNAPSHOT_BYTES")) {
    uint64_t v = 0;
    if (env::parse_bytes(*max, &v)) {
      o.max_snapshot_bytes = v;
    } else {
      KR_WARN("KREPLAY_MAX_SNAPSHOT_BYTES='{}' is not a size (e.g. 512M, 8G); ignored", *max);
    }
  }
  if (auto chunk = env::get("KREPLAY_RESTORE_CHUNK_BYTES")) {
    uint64_t v = 0;
    if (env::parse_bytes(*chunk, &v) && v >= 256 && (v & (v - 1)) == 0) {
      o.chunk_bytes = v;
    } else {
      KR_WARN("KREPLAY_RESTORE_CHUNK_BYTES='{}' must be a power of two of at least 256; ignored",
              *chunk);
    }
  }
  int64_t timeout = env::get_int("KREPLAY_DRAIN_TIMEOUT_MS", static_cast<int64_t>(o.drain_timeout_ms));
  if (timeout > 0) o.drain_timeout_ms = static_cast<uint64_t>(timeout);
  o.verify_restore = env::get_bool("KREPLAY_VERIFY_RESTORE", o.verify_restore);
  o.decline_untracked = env::get_bool("KREPLAY_DECLINE_ON_UNTRACKED", o.decline_untracked);
  int64_t host_wait = env::get_int("KREPLAY_HOST_WAIT_MS", static_cast<int64_t>(o.host_wait_ms));
  if (host_wait > 0) o.host_wait_ms = static_cast<uint64_t>(host_wait);
  if (auto g = env::get("KREPLAY_GRAPH_PROFILING")) {
    if (*g == "node" || *g == "graph") {
      o.graph_nodes = *g == "node";
    } else {
      KR_WARN("KREPLAY_GRAPH_PROFILING='{}' is not node or graph (using node)", *g);
    }
  }
  o.check_divergence = env::get_bool("KREPLAY_CHECK_DIVERGENCE", o.check_divergence);
  if (auto m = env::get("KREPLAY_SNAPSHOT")) {
    if (*m == "auto" || m->empty()) {
      o.snapshot_mode = KREPLAY_SNAPSHOT_MODE_AUTO;
    } else if (*m == "full") {
      o.snapshot_mode = KREPLAY_SNAPSHOT_MODE_FULL;
    } else if (*m == "write-set") {
      o.snapshot_mode = KREPLAY_SNAPSHOT_MODE_WRITE_SET;
    } else {
      KR_WARN("KREPLAY_SNAPSHOT='{}' is not auto, full or write-set (using auto)", *m);
    }
  }
  if (auto spill = env::get("KREPLAY_AUTO_HOST_SNAPSHOT_BYTES")) {
    uint64_t v = 0;
    if (env::parse_bytes(*spill, &v)) {
      o.auto_host_bytes = v;
    } else {
      KR_WARN("KREPLAY_AUTO_HOST_SNAPSHOT_BYTES='{}' is not a size (e.g. 512M, 4G); ignored", *spill);
    }
  }
  if (auto c = env::get("KREPLAY_CACHE_CONTROL")) {
    if (*c == "all" || *c == "none") {
      o.flush_caches = *c == "all";
    } else {
      KR_WARN("KREPLAY_CACHE_CONTROL='{}' is not all or none (using all)", *c);
    }
  }
  return o;
}

// "", "cuda-profiler" or "nvtx:NAME" → RangeOptions; false when malformed.
bool parse_marker(std::string_view text, replay::RangeOptions* o) {
  if (text.empty()) {
    o->marker = replay::RangeOptions::Marker::kNone;
  } else if (text == "cuda-profiler") {
    o->marker = replay::RangeOptions::Marker::kCudaProfiler;
  } else if (text.substr(0, 5) == "nvtx:" && text.size() > 5) {
    o->marker = replay::RangeOptions::Marker::kNvtx;
    o->nvtx_name = std::string(text.substr(5));
  } else {
    return false;
  }
  return true;
}

replay::RangeOptions range_options_from_env() {
  replay::RangeOptions o;
  int64_t max = env::get_int("KREPLAY_RANGE_MAX_LAUNCHES", 64);
  if (max > 0) o.max_launches = static_cast<uint64_t>(max);
  if (auto m = env::get("KREPLAY_RANGE_MARKERS"); m && !parse_marker(*m, &o)) {
    KR_WARN("KREPLAY_RANGE_MARKERS='{}' is not a marker; use cuda-profiler or nvtx:NAME", *m);
  }
  if (auto v = env::get("KREPLAY_RANGE_SYNC"); v && !v->empty()) {
    if (*v == "close") {
      o.span_syncs = false;
    } else if (*v != "span") {
      KR_WARN(
          "KREPLAY_RANGE_SYNC='{}' is not a choice; use span (the default: a range stays open "
          "across synchronizations that cannot observe its work) or close",
          *v);
    }
  }
  return o;
}

void run_finalize_at_exit() { Runtime::get().finalize(); }

}  // namespace

Runtime& Runtime::get() {
  // Never destroyed: see the header.
  static Runtime* rt = new Runtime();  // NOLINT
  return *rt;
}

Runtime::Runtime() {
  hooks_ = std::make_unique<SdkHooks>(*this);
  engine_ = std::make_unique<replay::Engine>(*hooks_, inventory_);
  engine_->set_options(options_from_env());
  engine_->set_range_options(range_options_from_env());
  replay::set_context_exists_fn(
      [](uint64_t handle) { return Runtime::get().registry().find(handle) != nullptr; });
}

uint64_t Runtime::add_device(device::Device* dev) {
  std::unique_lock lock(agents_mu_);
  AgentEntry& e = agents_.emplace_back();
  const auto& d = dev->desc();
  e.device = dev;
  e.name = d.name;
  e.chip = d.chip;
  e.desc.size = sizeof(e.desc);
  e.desc.id.handle = agents_.size();
  e.desc.type = d.type;
  e.desc.device_index = d.device_index;
  e.desc.name = e.name.c_str();
  e.desc.chip_name = e.chip.c_str();
  e.desc.memory_bytes = d.memory_bytes;
  e.desc.multiprocessor_count = d.multiprocessor_count;
  e.desc.compute_capability_major = d.cc_major;
  e.desc.compute_capability_minor = d.cc_minor;
  e.desc.counters_per_pass = d.counters_per_pass;
  std::snprintf(e.desc.uuid, sizeof(e.desc.uuid), "%s", d.uuid.c_str());
  uint64_t handle = e.desc.id.handle;
  lock.unlock();
  engine_->add_device(handle, dev);
  return handle;
}

size_t Runtime::agent_count() const {
  std::shared_lock lock(agents_mu_);
  return agents_.size();
}

const AgentEntry* Runtime::agent_by_index(size_t index) const {
  std::shared_lock lock(agents_mu_);
  return index < agents_.size() ? &agents_[index] : nullptr;
}

const AgentEntry* Runtime::agent(uint64_t handle) const {
  std::shared_lock lock(agents_mu_);
  return handle >= 1 && handle <= agents_.size() ? &agents_[handle - 1] : nullptr;
}

Status Runtime::force_configure(kreplay_configure_func_t fn) {
  if (fn == nullptr) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "configure_func is NULL");
  std::lock_guard lock(tools_mu_);
  if (initialized_.load()) {
    return Error(KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED,
                 "the SDK is already initialized; call kreplay_force_configure earlier");
  }
  forced_.push_back(fn);
  return Status::Ok();
}

Status Runtime::set_replay_options(const kreplay_kernel_replay_options_t& o) {
  if (!registry_.configuring()) {
    return Error(KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED,
                 "replay options can only be set during a tool's initialize function");
  }
  if (o.size < KREPLAY_STRUCT_SIZE(kreplay_kernel_replay_options_t, verify_restore)) {
    return Error(KREPLAY_STATUS_ERROR_INCOMPATIBLE_ABI, "options->size is too small");
  }
  if (o.snapshot_scope >= KREPLAY_SNAPSHOT_SCOPE_LAST) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown snapshot scope");
  }
  const bool has_graph_profiling =
      o.size >= KREPLAY_STRUCT_SIZE(kreplay_kernel_replay_options_t, graph_profiling);
  if (has_graph_profiling && o.graph_profiling >= KREPLAY_GRAPH_PROFILING_LAST) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown graph profiling mode");
  }
  const bool has_cache_control =
      o.size >= KREPLAY_STRUCT_SIZE(kreplay_kernel_replay_options_t, cache_control);
  if (has_cache_control && o.cache_control >= KREPLAY_CACHE_CONTROL_LAST) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown cache control mode");
  }
  replay::Options opt = engine_->options();
  if (o.snapshot_scope != KREPLAY_SNAPSHOT_SCOPE_NONE) opt.scope = o.snapshot_scope;
  if (has_graph_profiling && o.graph_profiling != KREPLAY_GRAPH_PROFILING_NONE) {
    opt.graph_nodes = o.graph_profiling == KREPLAY_GRAPH_PROFILING_NODE;
  }
  if (has_cache_control && o.cache_control != KREPLAY_CACHE_CONTROL_NONE) {
    opt.flush_caches = o.cache_control == KREPLAY_CACHE_CONTROL_FLUSH_ALL;
  }
  if (o.size >= KREPLAY_STRUCT_SIZE(kreplay_kernel_replay_options_t, check_divergence)) {
    opt.check_divergence = o.check_divergence != 0;
  }
  if (o.size >= KREPLAY_STRUCT_SIZE(kreplay_kernel_replay_options_t, snapshot_mode)) {
    if (o.snapshot_mode >= KREPLAY_SNAPSHOT_MODE_LAST) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown snapshot mode");
    }
    if (o.snapshot_mode != KREPLAY_SNAPSHOT_MODE_NONE) opt.snapshot_mode = o.snapshot_mode;
  }
  opt.max_snapshot_bytes = o.max_snapshot_bytes;
  if (o.drain_timeout_ms != 0) opt.drain_timeout_ms = o.drain_timeout_ms;
  opt.verify_restore = o.verify_restore != 0;
  engine_->set_options(opt);
  return Status::Ok();
}

void Runtime::initialize() {
  std::call_once(init_once_, [this] {
    std::vector<kreplay_configure_func_t> candidates;
    {
      std::lock_guard lock(tools_mu_);
      candidates = forced_;
    }
    // 1. The executable (and anything loaded globally before us).
    if (void* self = dlopen(nullptr, RTLD_NOW)) {
      if (void* sym = dlsym(self, "kreplay_configure")) {
        candidates.push_back(reinterpret_cast<kreplay_configure_func_t>(sym));
      }
    }
    // 2. KREPLAY_TOOL_LIBRARIES, colon-separated.
    if (auto libs = env::get("KREPLAY_TOOL_LIBRARIES")) {
      for (const auto& path : env::split(*libs, ':')) {
        void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle == nullptr) {
          const char* err = dlerror();
          KR_ERROR("cannot load tool library '{}': {}; check KREPLAY_TOOL_LIBRARIES", path,
                   err ? err : "unknown error");
          continue;
        }
        void* sym = dlsym(handle, "kreplay_configure");
        if (sym == nullptr) {
          KR_ERROR("tool library '{}' does not export kreplay_configure; it is not loaded", path);
          continue;
        }
        candidates.push_back(reinterpret_cast<kreplay_configure_func_t>(sym));
      }
    }
    // Each configure function once, in the order found.
    std::vector<kreplay_configure_func_t> unique;
    for (auto fn : candidates) {
      if (std::find(unique.begin(), unique.end(), fn) == unique.end()) unique.push_back(fn);
    }
    std::vector<Tool> tools;
    uint32_t priority = 0;
    for (auto fn : unique) {
      Tool t;
      t.id.handle = static_cast<uint32_t>(tools.size() + 1);
      kreplay_tool_configure_result_t* r = nullptr;
      try {
        r = fn(KREPLAY_VERSION, KREPLAY_VERSION_STRING, priority, &t.id);
      } catch (...) {
        KR_ERROR("a tool's kreplay_configure threw; the tool is not loaded");
        continue;
      }
      ++priority;
      if (r == nullptr) continue;  // the tool declined
      std::memset(&t.result, 0, sizeof(t.result));
      std::memcpy(&t.result, r, std::min<size_t>(sizeof(t.result), r->size ? r->size : sizeof(t.result)));
      tools.push_back(t);
    }
    for (auto& t : tools) {
      registry_.set_configuring(true, t.id.handle);
      int rc = 0;
      if (t.result.initialize) {
        try {
          rc = t.result.initialize(&Runtime::finalize_client, t.result.tool_data);
        } catch (...) {
          rc = -1;
        }
      }
      registry_.set_configuring(false, 0);
      if (rc != 0) {
        KR_WARN("tool '{}' failed to initialize (returned {}); its services are off",
                t.id.name ? t.id.name : "unnamed", rc);
        registry_.stop_client(t.id.handle);
        t.finalized = true;
        continue;
      }
      t.initialized = true;
    }
    {
      std::lock_guard lock(tools_mu_);
      tools_ = std::move(tools);
    }
    initialized_.store(true);
    std::atexit(&run_finalize_at_exit);
  });
}

void Runtime::finalize_tool(Tool& tool) {
  if (!tool.initialized || tool.finalized) return;
  tool.finalized = true;
  registry_.stop_client(tool.id.handle);
  if (tool.result.finalize) {
    try {
      tool.result.finalize(tool.result.tool_data);
    } catch (...) {
      KR_ERROR("a tool's finalize threw");
    }
  }
}

void Runtime::finalize_client(kreplay_client_id_t id) {
  Runtime& rt = get();
  std::lock_guard lock(rt.tools_mu_);
  for (auto& t : rt.tools_) {
    if (t.id.handle == id.handle) rt.finalize_tool(t);
  }
}

Status Runtime::set_range_options(const kreplay_range_replay_options_t& o) {
  if (!registry_.configuring()) {
    return Error(KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED,
                 "range options can only be set during a tool's initialize function");
  }
  if (o.size < KREPLAY_STRUCT_SIZE(kreplay_range_replay_options_t, marker)) {
    return Error(KREPLAY_STATUS_ERROR_INCOMPATIBLE_ABI, "options->size is too small");
  }
  replay::RangeOptions r = engine_->range_options();
  if (o.max_launches != 0) r.max_launches = o.max_launches;
  if (o.size >= KREPLAY_STRUCT_SIZE(kreplay_range_replay_options_t, synchronize)) {
    if (o.synchronize >= KREPLAY_RANGE_SYNC_LAST) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   "options->synchronize is not a kreplay_range_sync_t");
    }
    if (o.synchronize != KREPLAY_RANGE_SYNC_DEFAULT)
      r.span_syncs = o.synchronize == KREPLAY_RANGE_SYNC_SPAN;
  }
  if (o.marker != nullptr && !parse_marker(o.marker, &r)) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 std::string("range marker '") + o.marker +
                     "' is not one of cuda-profiler or nvtx:NAME");
  }
  engine_->set_range_options(r);
  return Status::Ok();
}

void Runtime::finalize() {
  if (finalized_.exchange(true)) return;
  // A range still open at exit is closed (its passes run) before the tools finalize.
  engine_->range_barrier(0, KREPLAY_RANGE_CLOSE_EXIT);
  std::lock_guard lock(tools_mu_);
  for (auto it = tools_.rbegin(); it != tools_.rend(); ++it) finalize_tool(*it);
}

void Runtime::notify(kreplay_callback_tracing_kind_t kind, uint32_t operation,
                     kreplay_callback_phase_t phase, void* payload) {
  for (const auto& cptr : registry_.contexts()) {
    Context& c = *cptr;
    if (!c.active.load(std::memory_order_acquire)) continue;
    const auto& sub = c.callbacks[kind];
    if (!sub.wants(operation)) continue;
    kreplay_callback_tracing_record_t rec{};
    rec.context_id.handle = c.handle;
    rec.thread_id = thread_id();
    rec.kind = kind;
    rec.operation = operation;
    rec.phase = phase;
    rec.payload = payload;
    kreplay_user_data_t ud{};
    try {
      sub.callback(rec, &ud, sub.args);
    } catch (...) {
      KR_ERROR("a tool's callback threw");
    }
  }
}

void Runtime::marker(kreplay_marker_operation_t op, const char* message, const char* domain,
                     uint64_t range_id) {
  if (!markers_wanted()) return;
  kreplay_callback_tracing_marker_data_t p{};
  p.size = sizeof(p);
  const bool named = op == KREPLAY_MARKER_RANGE_PUSH || op == KREPLAY_MARKER_RANGE_START;
  p.message = named ? (message ? message : "") : nullptr;
  p.domain = domain ? domain : "";
  p.range_id = range_id;
  notify(KREPLAY_CALLBACK_TRACING_MARKER, op, KREPLAY_CALLBACK_PHASE_ENTER, &p);
}

bool Runtime::markers_wanted() const {
  for (const auto& c : registry_.contexts()) {
    if (c->callbacks[KREPLAY_CALLBACK_TRACING_MARKER].callback != nullptr) return true;
  }
  return false;
}

uint64_t Runtime::register_code_object(uint64_t agent, const std::string& module_name) {
  uint64_t id = 0;
  {
    std::unique_lock lock(kernels_mu_);
    id = next_code_object_++;
  }
  kreplay_callback_tracing_code_object_data_t p{};
  p.size = sizeof(p);
  p.agent_id.handle = agent;
  p.code_object_id = id;
  p.module_name = module_name.c_str();
  notify(KREPLAY_CALLBACK_TRACING_CODE_OBJECT, KREPLAY_CODE_OBJECT_LOAD,
         KREPLAY_CALLBACK_PHASE_ENTER, &p);
  return id;
}

void Runtime::unregister_code_object(uint64_t agent, uint64_t code_object) {
  std::vector<KernelEntry> gone;
  {
    std::shared_lock lock(kernels_mu_);
    for (const auto& k : kernels_) {
      if (k.code_object == code_object) gone.push_back(k);
    }
  }
  for (const auto& k : gone) {
    kreplay_callback_tracing_code_object_data_t p{};
    p.size = sizeof(p);
    p.agent_id.handle = agent;
    p.code_object_id = code_object;
    p.module_name = "";
    p.kernel_id = k.id;
    p.kernel_name = k.demangled.c_str();
    p.mangled_name = k.mangled.c_str();
    notify(KREPLAY_CALLBACK_TRACING_CODE_OBJECT, KREPLAY_CODE_OBJECT_KERNEL_SYMBOL_REGISTER,
           KREPLAY_CALLBACK_PHASE_EXIT, &p);
  }
  kreplay_callback_tracing_code_object_data_t p{};
  p.size = sizeof(p);
  p.agent_id.handle = agent;
  p.code_object_id = code_object;
  p.module_name = "";
  notify(KREPLAY_CALLBACK_TRACING_CODE_OBJECT, KREPLAY_CODE_OBJECT_LOAD,
         KREPLAY_CALLBACK_PHASE_EXIT, &p);
}

uint64_t Runtime::register_kernel(uint64_t agent, uint64_t code_object, const std::string& mangled,
                                  uint32_t dispatch_flags) {
  std::string key = fmt::format("{}:{}", code_object, mangled);
  const KernelEntry* entry = nullptr;
  {
    std::unique_lock lock(kernels_mu_);
    if (auto it = kernel_index_.find(key); it != kernel_index_.end()) return it->second;
    KernelEntry& k = kernels_.emplace_back();
    k.id = kernels_.size();
    k.agent = agent;
    k.code_object = code_object;
    k.mangled = mangled;
    k.demangled = demangle(mangled);
    k.dispatch_flags = dispatch_flags;
    if (replay::is_collective_kernel(k.mangled.c_str()) ||
        replay::is_collective_kernel(k.demangled.c_str())) {
      k.dispatch_flags |= KREPLAY_DISPATCH_FLAG_COLLECTIVE;
    }
    kernel_index_.emplace(std::move(key), k.id);
    entry = &k;
  }
  kreplay_callback_tracing_code_object_data_t p{};
  p.size = sizeof(p);
  p.agent_id.handle = agent;
  p.code_object_id = code_object;
  p.module_name = "";
  p.kernel_id = entry->id;
  p.kernel_name = entry->demangled.c_str();
  p.mangled_name = entry->mangled.c_str();
  notify(KREPLAY_CALLBACK_TRACING_CODE_OBJECT, KREPLAY_CODE_OBJECT_KERNEL_SYMBOL_REGISTER,
         KREPLAY_CALLBACK_PHASE_ENTER, &p);
  return entry->id;
}

const KernelEntry* Runtime::kernel(uint64_t kernel_id) const {
  std::shared_lock lock(kernels_mu_);
  return kernel_id >= 1 && kernel_id <= kernels_.size() ? &kernels_[kernel_id - 1] : nullptr;
}

uint64_t Runtime::on_allocate(uint64_t agent, uint64_t address, uint64_t size,
                              kreplay_memory_kind_t kind) {
  uint64_t id = inventory_.add(agent, address, size, kind);
  kreplay_callback_tracing_memory_allocation_data_t p{};
  p.size = sizeof(p);
  p.agent_id.handle = agent;
  p.address = address;
  p.allocation_size = size;
  p.memory_kind = kind;
  p.timestamp = now_ns();
  notify(KREPLAY_CALLBACK_TRACING_MEMORY_ALLOCATION, KREPLAY_MEMORY_ALLOCATION_ALLOCATE,
         KREPLAY_CALLBACK_PHASE_EXIT, &p);
  return id;
}

void Runtime::on_free(uint64_t agent, uint64_t address) {
  replay::Region r;
  if (!inventory_.remove(agent, address, &r)) return;
  kreplay_callback_tracing_memory_allocation_data_t p{};
  p.size = sizeof(p);
  p.agent_id.handle = agent;
  p.address = r.base;
  p.allocation_size = r.size;
  p.memory_kind = r.kind;
  p.timestamp = now_ns();
  notify(KREPLAY_CALLBACK_TRACING_MEMORY_ALLOCATION, KREPLAY_MEMORY_ALLOCATION_FREE,
         KREPLAY_CALLBACK_PHASE_ENTER, &p);
}

}  // namespace kreplay::sdk
