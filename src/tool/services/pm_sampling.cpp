// The tool's PM sampling pass (--pm-sampling M1,... [--pm-sampling-interval NS]).
#include <vector>

#include "tool/services/sdk_pass_service.hpp"

namespace kreplay::tool {
namespace {

class PmSampling final : public SdkPassService {
 public:
  PmSampling() : SdkPassService(config::PassKind::kPmSampling) {}

 protected:
  kreplay_status_t configure_sdk(const config::ToolConfig& config, kreplay_context_id_t ctx,
                                 kreplay_pass_service_dispatch_cb_t want, void* want_args,
                                 kreplay_pass_service_record_cb_t record,
                                 void* record_args) override {
    std::vector<const char*> names;
    for (const auto& m : config.services.pm_metrics) names.push_back(m.c_str());
    kreplay_pm_sampling_config_t c{};
    c.size = sizeof(c);
    c.metrics = names.data();
    c.metric_count = names.size();
    c.interval_ns = config.services.pm_interval_ns;
    return kreplay_configure_pm_sampling_service(ctx, &c, want, want_args, record, record_args);
  }
};

}  // namespace

std::unique_ptr<ToolService> make_pm_sampling_service() {
  return std::make_unique<PmSampling>();
}

}  // namespace kreplay::tool
