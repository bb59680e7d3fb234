// SdkPassService: a ToolService backed by one of the SDK's per-pass services (services.h). It
// owns a context, collects only on the passes of its kind (its context is switched at PASS ENTER;
// its dispatch callback also declines every other pass, which covers the single run of a launch
// that is not replayed), and hands its records to the tool. Each service only says how to
// configure itself (pc_sampling.cpp, sass_metrics.cpp, pm_sampling.cpp).
#pragma once

#include "tool/services/tool_service.hpp"

namespace kreplay::tool {

class SdkPassService : public ToolService {
 public:
  using ToolService::ToolService;
  Status configure(const config::ToolConfig& config, ServiceHost& host) final;

 protected:
  /// The service's kreplay_configure_*_service call on @p ctx with these callbacks.
  virtual kreplay_status_t configure_sdk(const config::ToolConfig& config, kreplay_context_id_t ctx,
                                         kreplay_pass_service_dispatch_cb_t want, void* want_args,
                                         kreplay_pass_service_record_cb_t record,
                                         void* record_args) = 0;

 private:
  static int want(const kreplay_pass_service_data_t* data, void* self);
  static void record(const kreplay_pass_service_data_t* data,
                     const kreplay_pass_service_record_t* records, size_t count, void* self);
  ServiceHost* host_ = nullptr;
};

}  // namespace kreplay::tool
