#include "replay/local_context.hpp"

#include <algorithm>
#include <atomic>

namespace kreplay::replay {
namespace {

thread_local LocalContextScope* tl_scope = nullptr;
std::atomic<ContextExistsFn> g_exists{nullptr};

}  // namespace

LocalContextScope::LocalContextScope(std::vector<uint64_t> pre_active)
    : pre_active_(std::move(pre_active)), outer_(tl_scope) {
  tl_scope = this;
}

LocalContextScope::LocalContextScope(std::vector<uint64_t> pre_active,
                                     std::vector<std::pair<uint64_t, bool>> overrides)
    : pre_active_(std::move(pre_active)), overrides_(std::move(overrides)), outer_(tl_scope) {
  tl_scope = this;
}

LocalContextScope::~LocalContextScope() { tl_scope = outer_; }

kreplay_status_t LocalContextScope::set(uint64_t context, bool enabled) {
  if (!armed_) return KREPLAY_STATUS_ERROR_CONTEXT_ERROR;
  auto exists = g_exists.load();
  if (exists && !exists(context)) return KREPLAY_STATUS_ERROR_CONTEXT_NOT_FOUND;
  if (std::find(pre_active_.begin(), pre_active_.end(), context) == pre_active_.end())
    return KREPLAY_STATUS_ERROR_CONTEXT_NOT_STARTED;
  for (auto& [ctx, on] : overrides_) {
    if (ctx == context) {
      on = enabled;
      return KREPLAY_STATUS_SUCCESS;
    }
  }
  overrides_.emplace_back(context, enabled);
  return KREPLAY_STATUS_SUCCESS;
}

std::optional<bool> LocalContextScope::get(uint64_t context) const {
  for (const auto& [ctx, on] : overrides_) {
    if (ctx == context) return on;
  }
  return std::nullopt;
}

std::optional<bool> local_override(uint64_t context) {
  return tl_scope ? tl_scope->get(context) : std::nullopt;
}

bool local_overrides_present() { return tl_scope != nullptr; }

kreplay_status_t replay_start_context(kreplay_context_id_t context) {
  if (tl_scope == nullptr) return KREPLAY_STATUS_ERROR_CONTEXT_ERROR;
  return tl_scope->set(context.handle, true);
}

kreplay_status_t replay_stop_context(kreplay_context_id_t context) {
  if (tl_scope == nullptr) return KREPLAY_STATUS_ERROR_CONTEXT_ERROR;
  return tl_scope->set(context.handle, false);
}

void set_context_exists_fn(ContextExistsFn fn) { g_exists.store(fn); }

}  // namespace kreplay::replay
