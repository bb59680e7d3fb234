// The pass-count table of DESIGN.md §2 rule 2, as pure functions (unit-tested row by row).
#pragma once

#include <cstdint>

#include "kreplay/kernel_replay.h"

namespace kreplay::replay {

struct Plan {
  bool replay = false;          ///< run the pass loop
  bool indefinite = false;      ///< pass count 0 with a continue callback
  uint64_t requested = 0;       ///< as returned by replay_pass_count (0 = indefinite)
  bool invalid = false;         ///< 0 without continue: rejected with a warning
};

/// Call @p pass_count (if set) once and classify the result.
Plan make_plan(kreplay_kernel_replay_pass_count_cb_t pass_count,
               kreplay_kernel_replay_continue_cb_t replay_continue,
               const kreplay_kernel_dispatch_info_t& info, kreplay_user_data_t user_data);

/// After pass @p pass (0-based) ended: does another pass follow? Never asks @p replay_continue
/// after the last pass of a fixed loop; asks it after every pass of an indefinite one.
bool should_continue(const Plan& plan, uint64_t pass,
                     kreplay_kernel_replay_continue_cb_t replay_continue,
                     const kreplay_kernel_dispatch_info_t& info, kreplay_user_data_t user_data);

}  // namespace kreplay::replay
