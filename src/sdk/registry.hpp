// Contexts and their services (the state behind context.h, callback_tracing.h, counters.h).
//
// Contexts and services are created only while a tool's initialize runs (the configuration
// window); afterwards the set is frozen and read without locks. Only the `active` flags change,
// through start/stop, which also maintain cheap summary counters for the launch fast path.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "common/status.hpp"
#include "device/service.hpp"
#include "kreplay/kreplay.h"

namespace kreplay::sdk {

struct CallbackSubscription {
  kreplay_callback_tracing_cb_t callback = nullptr;
  void* args = nullptr;
  uint64_t operations = 0;  ///< bit i set: operation i delivered
  bool wants(uint32_t op) const { return callback && op < 64 && (operations >> op) & 1u; }
};

struct CountingService {
  kreplay_dispatch_counting_cb_t dispatch_callback = nullptr;
  void* dispatch_args = nullptr;
  kreplay_counter_record_cb_t record_callback = nullptr;
  void* record_args = nullptr;
  bool configured() const { return dispatch_callback != nullptr; }
};

/// A per-pass service configured on a context (services.h).
struct PassServiceSub {
  device::ServiceSettings settings;  ///< checked and completed by the first agent's service
  kreplay_pass_service_dispatch_cb_t dispatch_callback = nullptr;  ///< NULL: every pass
  void* dispatch_args = nullptr;
  kreplay_pass_service_record_cb_t callback = nullptr;
  void* args = nullptr;
  bool configured() const { return callback != nullptr; }
};

struct Context {
  uint64_t handle = 0;
  uint32_t client = 0;  ///< tool that created it
  std::atomic<bool> active{false};
  std::array<CallbackSubscription, KREPLAY_CALLBACK_TRACING_LAST> callbacks{};
  CountingService counting;
  std::array<PassServiceSub, KREPLAY_PASS_SERVICE_LAST> services{};

  bool any_pass_service() const {
    for (const auto& s : services) {
      if (s.configured()) return true;
    }
    return false;
  }

  /// Does the context run per-dispatch services (those that need the launch path)?
  bool dispatch_level() const {
    return callbacks[KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH].callback != nullptr ||
           callbacks[KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY].callback != nullptr ||
           callbacks[KREPLAY_CALLBACK_TRACING_RANGE_REPLAY].callback != nullptr ||
           counting.configured() || any_pass_service();
  }
};

class Registry {
 public:
  /// Open/close the configuration window (around tools' initialize functions).
  void set_configuring(bool on, uint32_t client);
  bool configuring() const { return configuring_.load(std::memory_order_acquire); }

  Result<kreplay_context_id_t> create_context();
  Context* find(uint64_t handle);
  Status start(uint64_t handle);
  Status stop(uint64_t handle);
  Status configure_callback(uint64_t handle, kreplay_callback_tracing_kind_t kind,
                            const uint32_t* operations, size_t count,
                            kreplay_callback_tracing_cb_t callback, void* args);
  Status configure_counting(uint64_t handle, const CountingService& service);
  /// @p sub's settings are already checked against the agents (sdk/pass_services.cpp).
  Status configure_pass_service(uint64_t handle, kreplay_pass_service_kind_t kind,
                                PassServiceSub sub);
  /// The configuration window is open and @p handle names a context (checked before the
  /// agents are asked about a service's settings).
  Status check_configurable(uint64_t handle);

  /// Stop every context of @p client (a tool whose initialize failed or that finalized).
  void stop_client(uint32_t client);

  /// Frozen after configuration: safe to iterate from any thread.
  const std::vector<std::unique_ptr<Context>>& contexts() const { return contexts_; }

  /// The single KERNEL_REPLAY subscriber, or nullptr.
  Context* replay_context() const { return replay_context_; }
  /// The single RANGE_REPLAY subscriber, or nullptr.
  Context* range_context() const { return range_context_; }
  /// Number of active contexts that run per-dispatch services.
  bool any_dispatch_level_active() const {
    return active_dispatch_level_.load(std::memory_order_acquire) > 0;
  }
  std::vector<uint64_t> active_handles() const;

 private:
  Status set_active(uint64_t handle, bool active);
  void recount_locked();

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Context>> contexts_;
  Context* replay_context_ = nullptr;
  Context* range_context_ = nullptr;
  std::atomic<bool> configuring_{false};
  uint32_t configuring_client_ = 0;
  std::atomic<uint32_t> active_dispatch_level_{0};
};

/// Maximum operation value per kind (the kind's _LAST), or 0 for an unknown kind.
uint32_t operation_limit(kreplay_callback_tracing_kind_t kind);

}  // namespace kreplay::sdk
