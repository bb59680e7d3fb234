// The SDK's side of the per-pass services (services.h): configuring one on a context (checked
// against every agent's device::PassService), and running the configured ones on a pass.
//
// The same code runs every service: nothing here names PC sampling, SASS metrics or PM sampling.
// A pass runs one kind of instrumentation (counters or one per-pass service); PassServiceRun
// gathers what the pass's effective contexts ask for, and the hooks refuse all of it together
// when more than one kind is asked for (SERVICE_CONFLICT).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/status.hpp"
#include "device/service.hpp"
#include "kreplay/services.h"
#include "replay/engine.hpp"
#include "sdk/registry.hpp"

namespace kreplay::sdk {

class Runtime;

/// Check @p settings against every agent's service of @p kind and configure it on @p context.
Status configure_pass_service(Runtime& rt, uint64_t context, kreplay_pass_service_kind_t kind,
                              device::ServiceSettings settings, PassServiceSub callbacks);

/// A window opens on @p st (its first pass, or a range's entry, not yet run): let every service
/// some active context has configured prepare the dispatch's device (device::PassService::prepare).
void prepare_pass_services(Runtime& rt, replay::DispatchState& st);

/// The per-pass services of one pass of one dispatch (kept in the hooks' per-dispatch data).
class PassServiceRun {
 public:
  /// Forget the previous pass.
  void clear();
  /// Note every service configured on @p c (a context that takes part in the pass) whose dispatch
  /// callback, if any, wants the pass.
  void gather(Context& c, const replay::DispatchState& st);
  /// Kinds of services asked for on this pass.
  size_t kinds() const { return kinds_.size(); }
  bool empty() const { return kinds_.empty(); }
  /// Names of the kinds asked for, for messages ("pc_sampling", ...).
  std::vector<std::string> names() const;
  /// None of them collects on this pass; each hears @p why after the pass.
  void refuse(const Status& why);
  /// Arm every kind on the dispatch's device for the coming submission; whether any was armed.
  bool begin(Runtime& rt, replay::DispatchState& st);
  /// The submission completed: stop every armed kind now (reading what it collected), before
  /// another launch's pass arms it; finish delivers it later.
  void end(replay::DispatchState& st);
  /// After the pass: end, flush and deliver each kind's records (or its status) to its contexts.
  void finish(Runtime& rt, replay::DispatchState& st);

 private:
  struct KindRun {
    kreplay_pass_service_kind_t kind = KREPLAY_PASS_SERVICE_NONE;
    std::vector<Context*> contexts;
    device::PassService* backend = nullptr;
    bool begun = false;
    bool ended = false;  ///< end() stopped it; finish only flushes
    Status status;
  };
  std::vector<KindRun> kinds_;
  std::vector<kreplay_pass_service_record_t> records_;
};

}  // namespace kreplay::sdk
