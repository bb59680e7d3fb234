// SdkHooks: the SDK's implementation of replay::Hooks (see hooks.cpp).
#pragma once

#include "replay/engine.hpp"

namespace kreplay::sdk {

class Runtime;

class SdkHooks final : public replay::Hooks {
 public:
  explicit SdkHooks(Runtime& rt);
  bool any_dispatch_service() override;
  bool replay_configured() override;
  void config_enter(replay::DispatchState& st) override;
  void config_exit(replay::DispatchState& st) override;
  std::vector<uint64_t> active_contexts() override;
  void pass_enter(replay::DispatchState& st, replay::LocalContextScope& local) override;
  void pass_exit(replay::DispatchState& st) override;
  bool before_submit(replay::DispatchState& st) override;
  void after_complete(replay::DispatchState& st) override;
  void end_dispatch(replay::DispatchState& st) override;
  bool range_configured() override;
  void range_config_enter(replay::RangeState& range) override;
  void range_config_exit(replay::RangeState& range) override;
  bool range_launch(replay::RangeState& range, replay::DispatchState& launch) override;
  void range_pass_enter(replay::RangeState& range, replay::LocalContextScope& local) override;
  void range_pass_exit(replay::RangeState& range) override;
  device::CounterSet* armed_set(replay::DispatchState& launch) override;
  bool range_services_begin(replay::DispatchState& launch) override;
  void range_services_end(replay::DispatchState& launch) override;
  /// When a tool counts: the agent's CounterBackend::warm_start for this launch.
  void warm_start(replay::DispatchState& st, bool range) override;

 private:
  void deliver_pass(replay::DispatchState& st, kreplay_callback_phase_t phase,
                    replay::LocalContextScope* local);
  void deliver_range(replay::RangeState& range, uint32_t op, kreplay_callback_phase_t phase,
                     replay::LocalContextScope* local, replay::DispatchState* launch,
                     bool* selected);
  Runtime& rt_;
};

}  // namespace kreplay::sdk
