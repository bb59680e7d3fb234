#include "sdk/registry.hpp"

#include <fmt/format.h>

namespace kreplay::sdk {

uint32_t operation_limit(kreplay_callback_tracing_kind_t kind) {
  switch (kind) {
    case KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH: return KREPLAY_KERNEL_DISPATCH_LAST;
    case KREPLAY_CALLBACK_TRACING_CODE_OBJECT: return KREPLAY_CODE_OBJECT_LAST;
    case KREPLAY_CALLBACK_TRACING_MEMORY_ALLOCATION: return KREPLAY_MEMORY_ALLOCATION_LAST;
    case KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY: return KREPLAY_KERNEL_REPLAY_LAST;
    case KREPLAY_CALLBACK_TRACING_RANGE_REPLAY: return KREPLAY_RANGE_REPLAY_LAST;
    case KREPLAY_CALLBACK_TRACING_MARKER: return KREPLAY_MARKER_LAST;
    default: return 0;
  }
}

void Registry::set_configuring(bool on, uint32_t client) {
  std::lock_guard lock(mu_);
  configuring_client_ = client;
  configuring_.store(on, std::memory_order_release);
}

Result<kreplay_context_id_t> Registry::create_context() {
  std::lock_guard lock(mu_);
  if (!configuring_.load()) {
    return Error(KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED,
                 "contexts can only be created during a tool's initialize function");
  }
  auto ctx = std::make_unique<Context>();
  ctx->handle = contexts_.size() + 1;
  ctx->client = configuring_client_;
  kreplay_context_id_t id{ctx->handle};
  contexts_.push_back(std::move(ctx));
  return id;
}

Context* Registry::find(uint64_t handle) {
  // contexts_ only grows during configuration (single thread); the size read is safe after.
  if (handle == 0 || handle > contexts_.size()) return nullptr;
  return contexts_[handle - 1].get();
}

void Registry::recount_locked() {
  uint32_t n = 0;
  for (const auto& c : contexts_) {
    if (c->active.load() && c->dispatch_level()) ++n;
  }
  active_dispatch_level_.store(n, std::memory_order_release);
}

Status Registry::start(uint64_t handle) { return set_active(handle, true); }

Status Registry::stop(uint64_t handle) { return set_active(handle, false); }

Status Registry::set_active(uint64_t handle, bool active) {
  std::lock_guard lock(mu_);
  Context* c = find(handle);
  if (c == nullptr) return Error(KREPLAY_STATUS_ERROR_CONTEXT_NOT_FOUND, "no such context");
  c->active.store(active, std::memory_order_release);
  recount_locked();
  return Status::Ok();
}

void Registry::stop_client(uint32_t client) {
  std::lock_guard lock(mu_);
  for (auto& c : contexts_) {
    if (c->client == client) c->active.store(false);
  }
  recount_locked();
}

Status Registry::configure_callback(uint64_t handle, kreplay_callback_tracing_kind_t kind,
                                    const uint32_t* operations, size_t count,
                                    kreplay_callback_tracing_cb_t callback, void* args) {
  std::lock_guard lock(mu_);
  if (!configuring_.load()) {
    return Error(KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED,
                 "services can only be configured during a tool's initialize function");
  }
  Context* c = find(handle);
  if (c == nullptr) return Error(KREPLAY_STATUS_ERROR_CONTEXT_NOT_FOUND, "no such context");
  uint32_t limit = operation_limit(kind);
  if (limit == 0) {
    return Error(KREPLAY_STATUS_ERROR_KIND_NOT_FOUND,
                 fmt::format("unknown callback tracing kind {}", static_cast<int>(kind)));
  }
  if (callback == nullptr) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "callback is NULL");
  if (operations == nullptr && count != 0) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "operations is NULL but count is not 0");
  }
  uint64_t mask = 0;
  if (count == 0) {
    for (uint32_t op = 1; op < limit; ++op) mask |= 1ull << op;
  } else {
    for (size_t i = 0; i < count; ++i) {
      if (operations[i] == 0 || operations[i] >= limit) {
        return Error(KREPLAY_STATUS_ERROR_OPERATION_NOT_FOUND,
                     fmt::format("operation {} is not an operation of this kind", operations[i]));
      }
      mask |= 1ull << operations[i];
    }
  }
  if (c->callbacks[kind].callback != nullptr) {
    return Error(KREPLAY_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED,
                 "the context already subscribes to this kind");
  }
  if (kind == KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY) {
    if (replay_context_ != nullptr) {
      return Error(KREPLAY_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED,
                   "another context already subscribes to KERNEL_REPLAY (one per process)");
    }
    replay_context_ = c;
  }
  if (kind == KREPLAY_CALLBACK_TRACING_RANGE_REPLAY) {
    if (range_context_ != nullptr) {
      return Error(KREPLAY_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED,
                   "another context already subscribes to RANGE_REPLAY (one per process)");
    }
    range_context_ = c;
  }
  c->callbacks[kind] = CallbackSubscription{callback, args, mask};
  recount_locked();
  return Status::Ok();
}

Status Registry::configure_counting(uint64_t handle, const CountingService& service) {
  std::lock_guard lock(mu_);
  if (!configuring_.load()) {
    return Error(KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED,
                 "services can only be configured during a tool's initialize function");
  }
  Context* c = find(handle);
  if (c == nullptr) return Error(KREPLAY_STATUS_ERROR_CONTEXT_NOT_FOUND, "no such context");
  if (service.dispatch_callback == nullptr || service.record_callback == nullptr) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "a counting callback is NULL");
  }
  if (c->counting.configured()) {
    return Error(KREPLAY_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED, "the context already counts");
  }
  c->counting = service;
  recount_locked();
  return Status::Ok();
}

Status Registry::check_configurable(uint64_t handle) {
  std::lock_guard lock(mu_);
  if (!configuring_.load()) {
    return Error(KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED,
                 "services can only be configured during a tool's initialize function");
  }
  if (find(handle) == nullptr)
    return Error(KREPLAY_STATUS_ERROR_CONTEXT_NOT_FOUND, "no such context");
  return Status::Ok();
}

Status Registry::configure_pass_service(uint64_t handle, kreplay_pass_service_kind_t kind,
                                        PassServiceSub sub) {
  std::lock_guard lock(mu_);
  if (!configuring_.load()) {
    return Error(KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED,
                 "services can only be configured during a tool's initialize function");
  }
  Context* c = find(handle);
  if (c == nullptr) return Error(KREPLAY_STATUS_ERROR_CONTEXT_NOT_FOUND, "no such context");
  if (kind <= KREPLAY_PASS_SERVICE_NONE || kind >= KREPLAY_PASS_SERVICE_LAST)
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown per-pass service");
  if (sub.callback == nullptr)
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "the record callback is NULL");
  if (c->services[kind].configured()) {
    return Error(KREPLAY_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED,
                 fmt::format("the context already runs {}", kreplay_get_pass_service_name(kind)));
  }
  c->services[kind] = std::move(sub);
  recount_locked();
  return Status::Ok();
}

std::vector<uint64_t> Registry::active_handles() const {
  std::vector<uint64_t> out;
  for (const auto& c : contexts_) {
    if (c->active.load(std::memory_order_acquire)) out.push_back(c->handle);
  }
  return out;
}

}  // namespace kreplay::sdk
