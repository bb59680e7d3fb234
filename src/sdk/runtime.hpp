// The SDK runtime: one per process. Backends register devices, code objects, kernels and memory
// here, and hand intercepted launches to its engine; the C API reads and configures it.
//
// Lifetime: created on first use and never destroyed (an injected library must not run
// destructors in an unpredictable order at exit); finalize() runs the tools' finalize functions.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "device/device.hpp"
#include "kreplay/kreplay.h"
#include "replay/engine.hpp"
#include "replay/inventory.hpp"
#include "sdk/counters.hpp"
#include "sdk/registry.hpp"

namespace kreplay::sdk {

struct KernelEntry {
  uint64_t id = 0;
  uint64_t agent = 0;
  uint64_t code_object = 0;
  std::string mangled;
  std::string demangled;
  /// KREPLAY_DISPATCH_FLAG_* every launch of the kernel carries, known from the kernel alone
  /// (COLLECTIVE for an NCCL/RCCL kernel, DEVICE_HEAP for a kernel whose module uses the device
  /// heap); the backends add them to each launch's flags.
  uint32_t dispatch_flags = 0;
};

struct AgentEntry {
  kreplay_agent_t desc{};
  std::string name, chip;
  device::Device* device = nullptr;
};

class Runtime {
 public:
  static Runtime& get();

  // ---- backends ----
  /// Register a device; returns its agent handle. The runtime keeps the pointer (not ownership).
  uint64_t add_device(device::Device* dev);
  /// Load tools (executable, KREPLAY_TOOL_LIBRARIES, forced) and run their initialize. Once.
  void initialize();
  /// Run the tools' finalize functions (reverse order). Once; also registered with atexit.
  void finalize();
  bool initialized() const { return initialized_.load(); }
  bool finalized() const { return finalized_.load(); }

  uint64_t register_code_object(uint64_t agent, const std::string& module_name);
  void unregister_code_object(uint64_t agent, uint64_t code_object);
  /// Register a kernel symbol; returns its kernel id. Same (code object, name) → same id.
  /// @p dispatch_flags: KREPLAY_DISPATCH_FLAG_* the backend knows of the kernel (DEVICE_HEAP).
  uint64_t register_kernel(uint64_t agent, uint64_t code_object, const std::string& mangled,
                           uint32_t dispatch_flags = 0);
  const KernelEntry* kernel(uint64_t kernel_id) const;

  /// Memory the application (or a module) made; tracked for snapshots. Returns the region id.
  uint64_t on_allocate(uint64_t agent, uint64_t address, uint64_t size, kreplay_memory_kind_t kind);
  /// Memory about to go away. Call before the real free, inside a memory guard.
  void on_free(uint64_t agent, uint64_t address);

  replay::Engine& engine() { return *engine_; }
  replay::MemoryInventory& inventory() { return inventory_; }
  Registry& registry() { return registry_; }
  Counters& counters() { return counters_; }

  // ---- C API support ----
  size_t agent_count() const;
  const AgentEntry* agent_by_index(size_t index) const;
  const AgentEntry* agent(uint64_t handle) const;

  Status force_configure(kreplay_configure_func_t fn);
  Status set_replay_options(const kreplay_kernel_replay_options_t& options);
  Status set_range_options(const kreplay_range_replay_options_t& options);

  /// A marker of the application (markers.h): delivered to the MARKER subscribers. @p message
  /// and @p domain may be NULL (delivered as documented in markers.h).
  void marker(kreplay_marker_operation_t op, const char* message, const char* domain,
              uint64_t range_id);
  /// Whether any context subscribes to MARKER (backends enable their marker callbacks only then).
  /// Known once the tools are initialized.
  bool markers_wanted() const;

  /// Fire a callback-tracing event of a non-dispatch kind to every active subscriber.
  void notify(kreplay_callback_tracing_kind_t kind, uint32_t operation,
              kreplay_callback_phase_t phase, void* payload);

 private:
  Runtime();
  struct Tool {
    kreplay_client_id_t id{};
    kreplay_tool_configure_result_t result{};
    bool initialized = false;
    bool finalized = false;
  };
  void finalize_tool(Tool& tool);
  static void finalize_client(kreplay_client_id_t id);

  Registry registry_;
  replay::MemoryInventory inventory_;
  Counters counters_;
  std::unique_ptr<replay::Hooks> hooks_;
  std::unique_ptr<replay::Engine> engine_;

  mutable std::shared_mutex agents_mu_;
  std::deque<AgentEntry> agents_;

  mutable std::shared_mutex kernels_mu_;
  std::deque<KernelEntry> kernels_;
  std::unordered_map<std::string, uint64_t> kernel_index_;  // "code_object:mangled" → id
  uint64_t next_code_object_ = 1;

  std::mutex tools_mu_;
  std::once_flag init_once_;
  std::atomic<bool> initialized_{false};
  std::atomic<bool> finalized_{false};
  std::vector<kreplay_configure_func_t> forced_;
  std::vector<Tool> tools_;
};

}  // namespace kreplay::sdk
