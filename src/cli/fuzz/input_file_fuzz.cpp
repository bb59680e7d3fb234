// Fuzz target: input files, parsed as JSON and as YAML; a file that parses is also planned, and
// every planned ToolConfig must survive a JSON round trip.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cli/fuzz/fuzz_check.hpp"
#include "cli/input_file.hpp"
#include "cli/plan.hpp"
#include "config/tool_config.hpp"

using namespace kreplay::cli;
using kreplay::config::parse_tool_config;
using kreplay::config::serialize_tool_config;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (InputFormat format : {InputFormat::kJson, InputFormat::kYaml}) {
    auto parsed = parse_input_text(text, format, "fuzz.in");
    if (!parsed.ok()) {
      fuzz::check_error_message(parsed.status());
      continue;
    }
    fuzz::check(!parsed->jobs.empty(), "a parsed file has jobs");
    CliOptions options;
    options.command = {"./app", "arg"};
    auto plan = make_run_plan(options, &*parsed);
    if (!plan.ok()) {
      fuzz::check_error_message(plan.status());
      continue;
    }
    fuzz::check(!plan->runs.empty(), "a plan has runs");
    for (const PlannedRun& run : plan->runs) {
      auto back = parse_tool_config(serialize_tool_config(run.config));
      fuzz::check(back.ok() && *back == run.config, "ToolConfig JSON round trip");
    }
  }
  return 0;
}
