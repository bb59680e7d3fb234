// The profiler tool's pass plan: what each replay pass of a dispatch collects on one agent.
//
// From the ToolConfig's ordered PassSpecs (counter groups and timing passes) and --metrics:
//  - on an agent whose counter configs fit one pass each (the host device: counters_per_pass >
//    0), each counter group is one pass with its own config, and --metrics are split into groups
//    of counters_per_pass appended after the placed passes;
//  - on an agent that schedules passes itself (CUDA: counters_per_pass == 0), every counter of
//    every group plus --metrics form ONE config (two configs on one CUPTI range profiler decode to
//    NaN), which runs on as many consecutive passes as the backend says, placed where the first
//    counter group was; timing passes keep their order around it.
// A pass of another service (timing, PC sampling, SASS metrics, PM sampling) keeps its place among
// the specs, or, with PassSpec::after_counters >= 0 (the command line's services), goes after that
// many of the agent's counter passes (kAfterAllCounters: after all of them; a position past the
// agent's counter passes is an error naming the option and the largest position).
// Rotation groups (no replay) get one config each. Section counters (--set, --section) join
// --metrics where the agent has them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.hpp"
#include "config/tool_config.hpp"

namespace kreplay::tool {

struct PlannedPass {
  using Kind = config::PassKind;  ///< counters, timing or a per-pass service
  Kind kind = Kind::kCounters;
  uint64_t config = 0;    ///< counter config handle (kCounters)
  bool flush_cache = false;
  std::string label;        ///< for messages: "group 2", "metrics", "timing", "pc_sampling"
  bool positioned = false;  ///< placed by PassSpec::after_counters
};

struct AgentPlan {
  std::vector<PlannedPass> passes;   ///< pass i of a dispatch does passes[i]
  std::vector<uint64_t> rotation;    ///< rotation configs, in group order
  std::vector<std::string> counters; ///< every counter collected, in request order
  /// Section counters (ToolConfig::section_metrics) the agent does not have: not collected.
  std::vector<std::string> sections_missing;
};

/// Whether pass 0's counter config completes its values in that one pass: false when the plan
/// gives the same config to later passes too (a config of several hardware passes, as CUDA's
/// are). A launch that runs once (declined) is counted only then. True when pass 0 counts nothing.
bool first_pass_completes(const AgentPlan& plan);

/// Builds a counter config from names; returns (handle, hardware passes it needs).
using MakeConfig =
    std::function<Result<std::pair<uint64_t, uint64_t>>(const std::vector<std::string>&)>;

/// Plan for one agent. Errors: a config the agent cannot build (the message names the group); a
/// PassSpec::after_counters past the agent's counter passes (the message names the option, e.g.
/// --pc-sampling-pass-position, and the largest position).
/// Section counters (ToolConfig::section_metrics) are collected as --metrics after them, except
/// those the agent has no config for: these are left out (AgentPlan::sections_missing) with one
/// line naming @p agent_name ("this device" when empty): info when the sections are the default
/// and the agent has none of them (the host device), a warning otherwise.
Result<AgentPlan> plan_for_agent(const config::ToolConfig& config, uint32_t counters_per_pass,
                                 const MakeConfig& make_config,
                                 const std::string& agent_name = "");

}  // namespace kreplay::tool
