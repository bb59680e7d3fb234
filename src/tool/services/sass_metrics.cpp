// The tool's SASS metrics pass (--sass-metrics M1,... or --source-counters).
#include <vector>

#include "tool/services/sdk_pass_service.hpp"

namespace kreplay::tool {
namespace {

class SassMetrics final : public SdkPassService {
 public:
  SassMetrics() : SdkPassService(config::PassKind::kSassMetrics) {}

 protected:
  kreplay_status_t configure_sdk(const config::ToolConfig& config, kreplay_context_id_t ctx,
                                 kreplay_pass_service_dispatch_cb_t want, void* want_args,
                                 kreplay_pass_service_record_cb_t record,
                                 void* record_args) override {
    std::vector<const char*> names;
    for (const auto& m : config.services.sass_metrics) names.push_back(m.c_str());
    kreplay_sass_metrics_config_t c{};
    c.size = sizeof(c);
    c.metrics = names.data();
    c.metric_count = names.size();  // 0: the default set (--source-counters)
    return kreplay_configure_sass_metrics_service(ctx, &c, want, want_args, record, record_args);
  }
};

}  // namespace

std::unique_ptr<ToolService> make_sass_metrics_service() {
  return std::make_unique<SassMetrics>();
}

}  // namespace kreplay::tool
