#include "replay/plan.hpp"

namespace kreplay::replay {

Plan make_plan(kreplay_kernel_replay_pass_count_cb_t pass_count,
               kreplay_kernel_replay_continue_cb_t replay_continue,
               const kreplay_kernel_dispatch_info_t& info, kreplay_user_data_t user_data) {
  Plan plan;
  if (pass_count == nullptr) return plan;  // per-dispatch opt-out
  uint64_t n = pass_count(info, user_data);
  plan.requested = n;
  if (n == 1) return plan;  // one pass needs no snapshot
  if (n == 0) {
    if (replay_continue == nullptr) {
      plan.invalid = true;
      return plan;
    }
    plan.replay = true;
    plan.indefinite = true;
    return plan;
  }
  plan.replay = true;
  return plan;
}

bool should_continue(const Plan& plan, uint64_t pass,
                     kreplay_kernel_replay_continue_cb_t replay_continue,
                     const kreplay_kernel_dispatch_info_t& info, kreplay_user_data_t user_data) {
  if (!plan.indefinite && pass + 1 >= plan.requested) return false;
  if (replay_continue == nullptr) return true;
  uint64_t total = plan.indefinite ? 0 : plan.requested;
  return replay_continue(info, pass, total, user_data) != 0;
}

}  // namespace kreplay::replay
