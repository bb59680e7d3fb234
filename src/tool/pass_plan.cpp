#include "tool/pass_plan.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace kreplay::tool {
namespace {

void add_unique(std::vector<std::string>& into, const std::vector<std::string>& names) {
  for (const auto& n : names) {
    if (std::find(into.begin(), into.end(), n) == into.end()) into.push_back(n);
  }
}

Status group_error(const Status& s, const std::string& label) {
  return Error(s.code(), fmt::format("{}: {}", label, s.message()));
}

}  // namespace

Result<AgentPlan> plan_for_agent(const cli::ToolConfig& config, uint32_t counters_per_pass,
                                 const MakeConfig& make_config) {
  AgentPlan plan;
  for (const auto& spec : config.passes) {
    if (spec.kind == cli::PassKind::kCounters && spec.group >= 0 &&
        static_cast<size_t>(spec.group) < config.pmc_groups.size()) {
      add_unique(plan.counters, config.pmc_groups[spec.group]);
    }
  }
  add_unique(plan.counters, config.metrics);

  if (counters_per_pass > 0) {
    for (const auto& spec : config.passes) {
      PlannedPass p;
      if (spec.kind == cli::PassKind::kTiming) {
        p.kind = PlannedPass::Kind::kTiming;
        p.flush_cache = spec.flush_cache;
        p.label = "timing";
      } else {
        if (spec.group < 0 || static_cast<size_t>(spec.group) >= config.pmc_groups.size()) {
          return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                       fmt::format("pass names counter group {} of {}", spec.group,
                                   config.pmc_groups.size()));
        }
        p.label = fmt::format("group {}", spec.group + 1);
        auto made = make_config(config.pmc_groups[spec.group]);
        if (!made.ok()) return group_error(made.status(), p.label);
        p.config = made->first;
      }
      plan.passes.push_back(std::move(p));
    }
    for (size_t i = 0; i < config.metrics.size(); i += counters_per_pass) {
      std::vector<std::string> chunk(
          config.metrics.begin() + static_cast<std::ptrdiff_t>(i),
          config.metrics.begin() +
              static_cast<std::ptrdiff_t>(std::min(config.metrics.size(), i + counters_per_pass)));
      PlannedPass p;
      p.label = fmt::format("metrics {}-{}", i + 1, i + chunk.size());
      auto made = make_config(chunk);
      if (!made.ok()) return group_error(made.status(), p.label);
      p.config = made->first;
      plan.passes.push_back(std::move(p));
    }
  } else {
    // One config for everything; CUPTI schedules its passes.
    uint64_t config_handle = 0, hw_passes = 0;
    if (!plan.counters.empty()) {
      auto made = make_config(plan.counters);
      if (!made.ok()) return group_error(made.status(), "counters");
      config_handle = made->first;
      hw_passes = std::max<uint64_t>(1, made->second);
    }
    bool placed = false;
    auto place_counters = [&] {
      for (uint64_t i = 0; i < hw_passes; ++i) {
        PlannedPass p;
        p.config = config_handle;
        p.label = fmt::format("counters {}/{}", i + 1, hw_passes);
        plan.passes.push_back(std::move(p));
      }
      placed = true;
    };
    for (const auto& spec : config.passes) {
      if (spec.kind == cli::PassKind::kTiming) {
        PlannedPass p;
        p.kind = PlannedPass::Kind::kTiming;
        p.flush_cache = spec.flush_cache;
        p.label = "timing";
        plan.passes.push_back(std::move(p));
      } else if (!placed) {
        place_counters();
      }
    }
    if (!placed && hw_passes > 0) place_counters();
  }

  for (size_t g = 0; g < config.rotation.groups.size(); ++g) {
    auto made = make_config(config.rotation.groups[g]);
    if (!made.ok()) return group_error(made.status(), fmt::format("pmc_groups[{}]", g));
    plan.rotation.push_back(made->first);
    add_unique(plan.counters, config.rotation.groups[g]);
  }
  return plan;
}

}  // namespace kreplay::tool
