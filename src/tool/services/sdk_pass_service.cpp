#include "tool/services/sdk_pass_service.hpp"

#include <string>

namespace kreplay::tool {

Status SdkPassService::configure(const config::ToolConfig& config, ServiceHost& host) {
  host_ = &host;
  kreplay_status_t s = kreplay_create_context(&ctx_);
  if (s == KREPLAY_STATUS_SUCCESS) s = configure_sdk(config, ctx_, &want, this, &record, this);
  if (s == KREPLAY_STATUS_SUCCESS) s = kreplay_start_context(ctx_);
  if (s != KREPLAY_STATUS_SUCCESS) {
    std::string why = kreplay_get_last_error_message();
    if (why.empty()) why = kreplay_get_status_string(s);
    ctx_ = {};
    return Error(s, why);
  }
  return Status::Ok();
}

int SdkPassService::want(const kreplay_pass_service_data_t* data, void* self) {
  auto* s = static_cast<SdkPassService*>(self);
  const PlannedPass* pass = s->host_->pass_of(data->dispatch_info, data->replay_pass);
  return pass != nullptr && pass->kind == s->kind() ? 1 : 0;
}

void SdkPassService::record(const kreplay_pass_service_data_t* data,
                            const kreplay_pass_service_record_t* records, size_t count,
                            void* self) {
  auto* s = static_cast<SdkPassService*>(self);
  s->host_->on_samples(s->kind(), *data, records, count);
}

}  // namespace kreplay::tool
