// Header-only RAII over kreplay contexts, for C++ tools.
//
//   kreplay::cxx::Context ctx;                       // kreplay_create_context (during initialize)
//   ctx.subscribe(KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY, cb);
//   ctx.start();
#pragma once

#include "kreplay/kreplay.h"

namespace kreplay::cxx {

class Context {
 public:
  Context() { status_ = kreplay_create_context(&id_); }
  kreplay_context_id_t id() const { return id_; }
  /// Status of the creation (CONFIGURATION_LOCKED outside initialize).
  kreplay_status_t status() const { return status_; }
  kreplay_status_t subscribe(kreplay_callback_tracing_kind_t kind, kreplay_callback_tracing_cb_t cb,
                             void* args = nullptr) {
    return kreplay_configure_callback_tracing_service(id_, kind, nullptr, 0, cb, args);
  }
  kreplay_status_t start() { return kreplay_start_context(id_); }
  kreplay_status_t stop() { return kreplay_stop_context(id_); }
  bool active() const {
    int a = 0;
    return kreplay_context_is_active(id_, &a) == KREPLAY_STATUS_SUCCESS && a != 0;
  }

 private:
  kreplay_context_id_t id_{};
  kreplay_status_t status_ = KREPLAY_STATUS_ERROR;
};

}  // namespace kreplay::cxx
