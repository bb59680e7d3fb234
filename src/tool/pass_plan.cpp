#include "tool/pass_plan.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/logging.hpp"

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

// The section counters this agent can collect: all of them when one config takes them, else
// those a config of their own accepts.
std::vector<std::string> available_counters(const std::vector<std::string>& names,
                                            const MakeConfig& make_config) {
  if (names.empty() || make_config(names).ok()) return names;
  std::vector<std::string> out;
  for (const auto& n : names) {
    if (make_config({n}).ok()) out.push_back(n);
  }
  return out;
}

void note_missing(const config::ToolConfig& config, const AgentPlan& plan, size_t wanted,
                  const std::string& agent_name) {
  const auto& missing = plan.sections_missing;
  if (missing.empty()) return;
  const std::string label = config.sections_label.empty() ? "sections" : config.sections_label;
  const std::string where = agent_name.empty() ? "this device" : agent_name;
  std::string examples;
  for (size_t i = 0; i < missing.size() && i < 3; ++i) {
    examples += fmt::format("{}{}", i ? ", " : "", missing[i]);
  }
  if (missing.size() > 3) examples += ", ...";
  if (missing.size() == wanted) {
    if (config.sections_default) {
      KR_INFO("{}: {} has none of its {} counters; only launch records are collected", label,
              where, wanted);
    } else {
      KR_WARN("{}: {} has none of its {} counters ({}); only their launch fields can be reported",
              label, where, wanted, examples);
    }
    return;
  }
  KR_WARN("{}: {} of {} counters are not available on {} ({}); the sections that need them are "
          "left out of reports",
          label, missing.size(), wanted, where, examples);
}

// The pass of a spec that is not a counter group.
PlannedPass service_pass(const config::PassSpec& spec) {
  PlannedPass p;
  p.kind = spec.kind;
  p.flush_cache = spec.flush_cache;
  p.label = std::string(config::to_string(spec.kind));
  p.positioned = spec.after_counters >= 0;
  return p;
}

// After the spec's after_counters-th counter pass (and after the passes already placed there);
// kAfterAllCounters is the end (plan_for_agent refuses any other position past the counter
// passes).
void place_after_counters(std::vector<PlannedPass>& passes, PlannedPass pass,
                          const config::PassSpec& spec) {
  const auto k = static_cast<uint64_t>(spec.after_counters);
  size_t at = passes.size();
  uint64_t counted = 0;
  for (size_t i = 0; i <= passes.size(); ++i) {
    if (counted == k) {
      at = i;
      while (at < passes.size() && passes[at].positioned) ++at;
      break;
    }
    if (i < passes.size() && passes[i].kind == config::PassKind::kCounters) ++counted;
  }
  passes.insert(passes.begin() + static_cast<std::ptrdiff_t>(at), std::move(pass));
}

}  // namespace

Result<AgentPlan> plan_for_agent(const config::ToolConfig& config, uint32_t counters_per_pass,
                                 const MakeConfig& make_config, const std::string& agent_name) {
  if (!config.section_metrics.empty()) {
    // Section counters go with --metrics, without the ones the agent lacks or already collects.
    config::ToolConfig with_sections = config;
    std::vector<std::string> have = available_counters(config.section_metrics, make_config);
    AgentPlan probe;
    for (const auto& n : config.section_metrics) {
      if (std::find(have.begin(), have.end(), n) == have.end()) probe.sections_missing.push_back(n);
    }
    std::vector<std::string> taken;
    for (const auto& g : config.pmc_groups) add_unique(taken, g);
    add_unique(taken, config.metrics);
    for (const auto& n : have) {
      if (std::find(taken.begin(), taken.end(), n) == taken.end()) {
        with_sections.metrics.push_back(n);
        taken.push_back(n);
      }
    }
    with_sections.section_metrics.clear();
    note_missing(config, probe, config.section_metrics.size(), agent_name);
    auto plan = plan_for_agent(with_sections, counters_per_pass, make_config, agent_name);
    if (plan.ok()) plan->sections_missing = std::move(probe.sections_missing);
    return plan;
  }
  AgentPlan plan;
  for (const auto& spec : config.passes) {
    if (spec.kind == config::PassKind::kCounters && spec.group >= 0 &&
        static_cast<size_t>(spec.group) < config.pmc_groups.size()) {
      add_unique(plan.counters, config.pmc_groups[spec.group]);
    }
  }
  add_unique(plan.counters, config.metrics);

  if (counters_per_pass > 0) {
    for (const auto& spec : config.passes) {
      if (spec.after_counters >= 0) continue;  // placed below
      PlannedPass p;
      if (spec.kind != config::PassKind::kCounters) {
        p = service_pass(spec);
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
      if (spec.after_counters >= 0) continue;  // placed below
      if (spec.kind != config::PassKind::kCounters) {
        plan.passes.push_back(service_pass(spec));
      } else if (!placed) {
        place_counters();
      }
    }
    if (!placed && hw_passes > 0) place_counters();
  }

  // A position past the agent's counter passes is refused: the pass would silently land after
  // all of them, which is not what was asked.
  const auto counter_passes = static_cast<uint64_t>(
      std::count_if(plan.passes.begin(), plan.passes.end(),
                    [](const PlannedPass& p) { return p.kind == PlannedPass::Kind::kCounters; }));
  for (const auto& spec : config.passes) {
    if (spec.after_counters < 0 || spec.after_counters == config::PassSpec::kAfterAllCounters ||
        static_cast<uint64_t>(spec.after_counters) <= counter_passes)
      continue;
    const std::string option = config::pass_position_option(spec.kind);
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 fmt::format("{} {} is past the counter passes: the run has {} counter pass{} on "
                             "this device, so the largest position is {}; lower it, or drop {} "
                             "to put the pass after all counter passes",
                             option, spec.after_counters, counter_passes,
                             counter_passes == 1 ? "" : "es", counter_passes, option));
  }
  for (const auto& spec : config.passes) {
    if (spec.after_counters >= 0) place_after_counters(plan.passes, service_pass(spec), spec);
  }

  for (size_t g = 0; g < config.rotation.groups.size(); ++g) {
    auto made = make_config(config.rotation.groups[g]);
    if (!made.ok()) return group_error(made.status(), fmt::format("pmc_groups[{}]", g));
    plan.rotation.push_back(made->first);
    add_unique(plan.counters, config.rotation.groups[g]);
  }
  return plan;
}

bool first_pass_completes(const AgentPlan& plan) {
  if (plan.passes.empty() || plan.passes[0].kind != PlannedPass::Kind::kCounters) return true;
  const uint64_t config = plan.passes[0].config;
  return std::count_if(plan.passes.begin(), plan.passes.end(), [&](const PlannedPass& p) {
           return p.kind == PlannedPass::Kind::kCounters && p.config == config;
         }) == 1;
}

}  // namespace kreplay::tool
