// What the interceptor knows of kernels and modules: kernel ids by mangled name, the modules CUPTI
// reported loaded (their symbol tables, for module-scope variables), and per CUfunction its
// parameter layout and the range closes its first launch needs (a module whose variables become
// tracked; with SASS-patched metrics, code lazy loading has not loaded yet). Split from
// interceptor.cpp, which calls these from the CUPTI callback.
#include <cupti.h>
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/interception.hpp"
#include "backends/cuda/internal_guard.hpp"
#include "backends/cuda/module_symbols.hpp"
#include "backends/cuda/services/cupti_service.hpp"
#include "common/logging.hpp"
#include "sdk/runtime.hpp"

namespace kreplay::cuda::interception {

uint64_t kernel_id_for(uint64_t agent, const std::string& mangled) {
  {
    std::shared_lock lock(state().mu);
    auto it = state().kernel_ids.find(mangled);
    if (it != state().kernel_ids.end()) return it->second;
  }
  uint64_t id = sdk::Runtime::get().register_kernel(agent, 0, mangled);
  std::unique_lock lock(state().mu);
  state().kernel_ids.emplace(mangled, id);
  return id;
}

void on_module_loaded(CUcontext ctx, const CUpti_ModuleResourceData* m) {
  CudaDevice* dev = device_of_context(ctx);
  if (dev == nullptr || m == nullptr) return;
  LoadedModule mod;
  mod.agent = dev->agent;
  auto syms = read_module_symbols(
      std::span<const std::byte>(reinterpret_cast<const std::byte*>(m->pCubin), m->cubinSize));
  if (syms.ok()) {
    mod.symbols = std::move(syms).value();
  } else {
    KR_DEBUG("module {}: {}", m->moduleId, syms.status().message());
  }
  // kreplay's own module (the snapshot and restore kernels) is not the application's code.
  const auto& kernels = mod.symbols.kernels;
  if (!kernels.empty() && std::all_of(kernels.begin(), kernels.end(), [](const std::string& k) {
        return k.rfind("kreplay_", 0) == 0;
      })) {
    return;
  }
  // PC sampling and SASS metrics map their samples to source lines through the cubin, which
  // CUPTI hands out only here.
  if (services::cubins_wanted()) services::remember_cubin(m->moduleId, m->pCubin, m->cubinSize);
  auto& rt = sdk::Runtime::get();
  mod.code_object = rt.register_code_object(dev->agent, fmt::format("cuda-module-{}", m->moduleId));
  if (mod.symbols.uses_device_heap) {
    KR_DEBUG("module {} uses the device heap: its kernels are not replayed", m->moduleId);
  }
  const uint32_t flags = mod.symbols.uses_device_heap ? KREPLAY_DISPATCH_FLAG_DEVICE_HEAP : 0u;
  for (const auto& k : mod.symbols.kernels) {
    uint64_t id = rt.register_kernel(dev->agent, mod.code_object, k, flags);
    std::unique_lock lock(state().mu);
    state().kernel_ids.emplace(k, id);
  }
  std::unique_lock lock(state().mu);
  state().modules[m->moduleId] = std::move(mod);
}

void on_module_unloading(const CUpti_ModuleResourceData* m) {
  if (m == nullptr) return;
  services::forget_cubin(m->moduleId);
  LoadedModule mod;
  {
    std::unique_lock lock(state().mu);
    auto it = state().modules.find(m->moduleId);
    if (it == state().modules.end()) return;
    mod = std::move(it->second);
    state().modules.erase(it);
  }
  auto& rt = sdk::Runtime::get();
  auto guard = rt.engine().guard_memory(mod.agent);
  for (uint64_t addr : mod.globals) rt.on_free(mod.agent, addr);
  rt.unregister_code_object(mod.agent, mod.code_object);
}

namespace {

// The module (or library) a kernel belongs to, as a key of scanned_modules; 0 when neither is
// known. Call inside an InternalScope.
uintptr_t module_key(CUfunction f, CUmodule* mod, CUlibrary* lib) {
  if (cuFuncGetModule(mod, f) == CUDA_SUCCESS && *mod != nullptr)
    return reinterpret_cast<uintptr_t>(*mod);
  if (cuKernelGetLibrary(lib, reinterpret_cast<CUkernel>(f)) == CUDA_SUCCESS && *lib != nullptr)
    return reinterpret_cast<uintptr_t>(*lib);
  return 0;
}

// The variables of a kernel's module that are not tracked yet. Module-scope variables become
// tracked the first time a kernel of their module launches: only then is the module's handle known
// (CUPTI's load event carries the cubin, not the handle).
struct UntrackedGlobals {
  uintptr_t key = 0;  ///< the module (or library) as a key of scanned_modules; 0: nothing to do
  CUmodule mod = nullptr;
  CUlibrary lib = nullptr;
  std::vector<std::pair<uint32_t, ModuleSymbols::Variable>> vars;  ///< (module id, variable)
};

// What track_module_globals would track for @p f (named @p mangled): nothing when its module was
// scanned already or is not known.
UntrackedGlobals untracked_module_globals(CudaDevice* dev, CUfunction f,
                                          const std::string& mangled) {
  InternalScope internal;
  // Lazy loading: make sure the function (and its module) is loaded in this context, so the
  // module's load event has been seen and its variables exist.
  cuFuncLoad(f);
  UntrackedGlobals g;
  const uintptr_t key = module_key(f, &g.mod, &g.lib);
  if (key == 0) return g;
  std::shared_lock lock(state().mu);
  if (state().scanned_modules.count(key)) return g;
  g.key = key;
  // Candidate cubins: those defining this kernel.
  for (const auto& [id, m] : state().modules) {
    if (m.agent != dev->agent) continue;
    if (!std::binary_search(m.symbols.kernels.begin(), m.symbols.kernels.end(), mangled)) continue;
    for (const auto& v : m.symbols.variables) g.vars.emplace_back(id, v);
  }
  return g;
}

// Track @p g's variables (once per module).
void track_module_globals(CudaDevice* dev, const UntrackedGlobals& g) {
  if (g.key == 0) return;
  InternalScope internal;
  {
    std::unique_lock lock(state().mu);
    if (state().scanned_modules.count(g.key)) return;
    state().scanned_modules[g.key] = true;
  }
  auto& rt = sdk::Runtime::get();
  for (const auto& [module_id, v] : g.vars) {
    CUdeviceptr ptr = 0;
    size_t size = 0;
    CUresult r = CUDA_ERROR_NOT_FOUND;
    if (g.mod != nullptr) {
      r = cuModuleGetGlobal(&ptr, &size, g.mod, v.name.c_str());
    } else if (v.managed) {
      r = cuLibraryGetManaged(&ptr, &size, g.lib, v.name.c_str());
    } else {
      r = cuLibraryGetGlobal(&ptr, &size, g.lib, v.name.c_str());
    }
    if (r != CUDA_SUCCESS || ptr == 0 || size == 0) continue;
    replay::Region existing;
    if (rt.inventory().find(dev->agent, ptr, &existing)) continue;
    rt.on_allocate(dev->agent, ptr, size, KREPLAY_MEMORY_KIND_MODULE_GLOBAL);
    std::unique_lock lock(state().mu);
    auto it = state().modules.find(module_id);
    if (it != state().modules.end()) it->second.globals.push_back(ptr);
  }
}

// Whether @p f's code is not loaded in its context yet, so that its first launch (or cuFuncLoad)
// loads it: under lazy module loading, a function that does not say it is loaded (a kernel handle
// passed as a function answers no state).
bool loads_at_first_launch(CUfunction f) {
  InternalScope internal;
  CUmoduleLoadingMode mode = CU_MODULE_EAGER_LOADING;
  if (cuModuleGetLoadingMode(&mode) != CUDA_SUCCESS || mode != CU_MODULE_LAZY_LOADING) return false;
  CUfunctionLoadingState loaded = CU_FUNCTION_LOADING_STATE_UNLOADED;
  return cuFuncIsLoaded(&loaded, f) != CUDA_SUCCESS || loaded != CU_FUNCTION_LOADING_STATE_LOADED;
}

// With SASS-patched metrics, the first launch of a kernel that lazy loading has not loaded yet
// closes the open range and loads every function of its module (or library) in the current
// context, so the module's other kernels are loaded already and their first launches stay inside
// ranges (Thrust's algorithms launch a dozen kernels of one module). That is what eager loading
// would have done for the module, without loading the modules a program never uses (cuBLAS ships
// thousands). Once per module.
void close_and_preload_module(CudaDevice* dev, CUfunction f) {
  InternalScope internal;
  CUmodule mod = nullptr;
  CUlibrary lib = nullptr;
  const uintptr_t key = module_key(f, &mod, &lib);
  if (key != 0) {
    std::unique_lock lock(state().mu);
    if (!state().preloaded_modules.insert(key).second) return;
  }
  sdk::Runtime::get().engine().range_barrier(dev->agent, KREPLAY_RANGE_CLOSE_MODULE,
                                             "a kernel's first launch (lazy module loading)");
  unsigned int n = 0;
  if (mod != nullptr && cuModuleGetFunctionCount(&n, mod) == CUDA_SUCCESS && n > 0) {
    std::vector<CUfunction> fs(n);
    if (cuModuleEnumerateFunctions(fs.data(), n, mod) == CUDA_SUCCESS) {
      for (CUfunction g : fs) cuFuncLoad(g);
    }
  } else if (lib != nullptr && cuLibraryGetKernelCount(&n, lib) == CUDA_SUCCESS && n > 0) {
    std::vector<CUkernel> ks(n);
    if (cuLibraryEnumerateKernels(ks.data(), n, lib) == CUDA_SUCCESS) {
      for (CUkernel k : ks) {
        CUfunction g = nullptr;
        if (cuKernelGetFunction(&g, k) == CUDA_SUCCESS && g != nullptr) cuFuncLoad(g);
      }
    }
  }
}

}  // namespace

FuncInfo* func_info(CudaDevice* dev, CUfunction f, const char* symbol) {
  {
    std::shared_lock lock(state().mu);
    auto it = state().funcs.find(f);
    if (it != state().funcs.end()) return it->second.get();
  }
  std::string mangled;
  if (symbol != nullptr) {
    mangled = symbol;
  } else {
    InternalScope internal;
    const char* name = nullptr;
    if (cuFuncGetName(&name, f) == CUDA_SUCCESS && name) mangled = name;
  }
  if (mangled.empty()) mangled = fmt::format("kernel@{:p}", static_cast<void*>(f));
  // The first kernel of a module that defines variables: they become tracked below
  // (track_module_globals), in the inventory from then on. Like a module load, that closes the
  // open range first: its snapshot does not hold them, so a later pass would add to what an
  // earlier one wrote there. (The host runtime's lazy modules pin it: range_contract_test; on the
  // GPU, lazy_globals' second module.)
  // Lazy loading (CUDA_MODULE_LOADING=LAZY, the default): a kernel whose code is not loaded yet
  // is loaded by its first launch. With SASS-patched metrics that closes the open range first: a
  // kernel loaded while a range's counter session was running crashed inside CUPTI when a later
  // pass launched it again (cuFFT's, in convolutionFFT2D, on an H100). Without them such loads
  // stay inside ranges (a first training step loads most of its kernels). The close loads the
  // kernel's whole module, so one close per module rather than per kernel.
  if (dev->counters() != nullptr && dev->counters()->patches_code() && loads_at_first_launch(f))
    close_and_preload_module(dev, f);
  const UntrackedGlobals globals = untracked_module_globals(dev, f, mangled);
  if (!globals.vars.empty()) {
    sdk::Runtime::get().engine().range_barrier(dev->agent, KREPLAY_RANGE_CLOSE_MODULE,
                                               "a kernel's first launch (its module's variables)");
  }
  InternalScope internal;
  auto info = std::make_unique<FuncInfo>();
  // Parameter layout, for the argument bytes (snapshot scope "args") and range recording.
  for (size_t i = 0;; ++i) {
    size_t off = 0, size = 0;
    CUresult r = cuFuncGetParamInfo(f, i, &off, &size);
    if (r != CUDA_SUCCESS) r = cuKernelGetParamInfo(reinterpret_cast<CUkernel>(f), i, &off, &size);
    if (r != CUDA_SUCCESS) {
      info->params_known = r == CUDA_ERROR_INVALID_VALUE || i > 0;
      break;
    }
    info->params.emplace_back(off, size);
    info->arg_bytes = std::max(info->arg_bytes, off + size);
  }
  int v = 0;
  if (cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, f) == CUDA_SUCCESS) info->registers = v;
  if (cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f) == CUDA_SUCCESS)
    info->static_shared = v;
  track_module_globals(dev, globals);
  info->kernel_id = kernel_id_for(dev->agent, mangled);
  info->entry = sdk::Runtime::get().kernel(info->kernel_id);
  std::unique_lock lock(state().mu);
  auto [it, inserted] = state().funcs.emplace(f, std::move(info));
  return it->second.get();
}

}  // namespace kreplay::cuda::interception
