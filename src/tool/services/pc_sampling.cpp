// The tool's PC sampling pass (--pc-sampling [--pc-sampling-period N]).
#include "tool/services/sdk_pass_service.hpp"

namespace kreplay::tool {
namespace {

class PcSampling final : public SdkPassService {
 public:
  PcSampling() : SdkPassService(config::PassKind::kPcSampling) {}

 protected:
  kreplay_status_t configure_sdk(const config::ToolConfig& config, kreplay_context_id_t ctx,
                                 kreplay_pass_service_dispatch_cb_t want, void* want_args,
                                 kreplay_pass_service_record_cb_t record,
                                 void* record_args) override {
    kreplay_pc_sampling_config_t c{};
    c.size = sizeof(c);
    c.period_log2 = config.services.pc_sampling_period;
    return kreplay_configure_pc_sampling_service(ctx, &c, want, want_args, record, record_args);
  }
};

}  // namespace

std::unique_ptr<ToolService> make_pc_sampling_service() {
  return std::make_unique<PcSampling>();
}

}  // namespace kreplay::tool
