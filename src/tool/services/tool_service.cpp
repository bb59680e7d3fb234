#include "tool/services/tool_service.hpp"

#include <algorithm>

#include "tool/services/sdk_pass_service.hpp"

namespace kreplay::tool {
namespace {

// A service whose collection needs no SDK service of its own: the timing pass is clean because
// every other service is off, and the counters' context is configured by the tool.
class ContextService final : public ToolService {
 public:
  ContextService(config::PassKind kind, kreplay_context_id_t ctx) : ToolService(kind) {
    ctx_ = ctx;
  }
  Status configure(const config::ToolConfig&, ServiceHost&) override { return Status::Ok(); }
};

struct Factory {
  config::PassKind kind;
  std::unique_ptr<ToolService> (*make)();
};

std::unique_ptr<ToolService> make_timing_service() {
  return std::make_unique<ContextService>(config::PassKind::kTiming, kreplay_context_id_t{});
}

// One line per service.
constexpr Factory kFactories[] = {
    {config::PassKind::kTiming, &make_timing_service},
    {config::PassKind::kPcSampling, &make_pc_sampling_service},
    {config::PassKind::kSassMetrics, &make_sass_metrics_service},
    {config::PassKind::kPmSampling, &make_pm_sampling_service},
};

}  // namespace

std::unique_ptr<ToolService> make_context_service(config::PassKind kind, kreplay_context_id_t ctx) {
  return std::make_unique<ContextService>(kind, ctx);
}

std::vector<std::unique_ptr<ToolService>> make_services(const config::ToolConfig& config) {
  std::vector<std::unique_ptr<ToolService>> out;
  for (const auto& f : kFactories) {
    const bool asked = std::any_of(config.passes.begin(), config.passes.end(),
                                   [&](const config::PassSpec& p) { return p.kind == f.kind; });
    if (asked) out.push_back(f.make());
  }
  return out;
}

}  // namespace kreplay::tool
