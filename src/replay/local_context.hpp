// Local context control during a replay loop (DESIGN.md §2, rule 5).
//
// A LocalContextScope lives on the stack of the thread that runs a replay loop. While it exists,
// the tool may call replay_start_context / replay_stop_context — but only while the scope is
// armed (during PASS ENTER) and only for contexts that were active when the loop began. The
// overrides are sticky across passes and vanish with the scope. Global context state is never
// touched: services ask local_override() on the same thread.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "kreplay/kernel_replay.h"

namespace kreplay::replay {

class LocalContextScope {
 public:
  /// @param pre_active handles of the contexts globally active as the loop begins.
  explicit LocalContextScope(std::vector<uint64_t> pre_active);
  /// Resume a loop's state on this thread (range replay: a loop spans several API calls).
  LocalContextScope(std::vector<uint64_t> pre_active,
                    std::vector<std::pair<uint64_t, bool>> overrides);
  ~LocalContextScope();
  LocalContextScope(const LocalContextScope&) = delete;
  LocalContextScope& operator=(const LocalContextScope&) = delete;

  /// Allow local control (around the tool's PASS ENTER callback).
  void arm(bool on) { armed_ = on; }

  kreplay_status_t set(uint64_t context, bool enabled);
  std::optional<bool> get(uint64_t context) const;
  const std::vector<uint64_t>& pre_active() const { return pre_active_; }
  const std::vector<std::pair<uint64_t, bool>>& overrides() const { return overrides_; }

 private:
  std::vector<uint64_t> pre_active_;
  std::vector<std::pair<uint64_t, bool>> overrides_;
  bool armed_ = false;
  LocalContextScope* outer_ = nullptr;
};

/// The override for @p context on this thread: nullopt when no loop overrides it.
std::optional<bool> local_override(uint64_t context);

/// True when a replay loop with overrides is active on this thread (cheap).
bool local_overrides_present();

/// The C entry points handed to tools in the PASS payload.
kreplay_status_t replay_start_context(kreplay_context_id_t context);
kreplay_status_t replay_stop_context(kreplay_context_id_t context);

/// Set by the SDK: does this handle name a context? (so the callbacks can say NOT_FOUND)
using ContextExistsFn = bool (*)(uint64_t handle);
void set_context_exists_fn(ContextExistsFn fn);

}  // namespace kreplay::replay
