// Fuzz target: the command line. The input is split into arguments at NUL and newline bytes;
// a line that parses is also planned (without reading any input file).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/fuzz/fuzz_check.hpp"
#include "cli/options.hpp"
#include "cli/plan.hpp"

using namespace kreplay::cli;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args{"kreplay"};
  std::string current;
  for (size_t i = 0; i < size; ++i) {
    char c = static_cast<char>(data[i]);
    if (c == '\0' || c == '\n') {
      args.push_back(std::move(current));
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  if (!current.empty()) args.push_back(std::move(current));
  if (args.size() > 256) return 0;

  auto options = parse_command_line(args);
  if (!options.ok()) {
    fuzz::check_error_message(options.status());
    return 0;
  }
  if (options->input_file) return 0;  // would read an arbitrary path
  auto plan = make_run_plan(*options, nullptr);
  if (!plan.ok()) {
    fuzz::check_error_message(plan.status());
    return 0;
  }
  if (plan->action == PlanAction::kRun) fuzz::check(!plan->runs.empty(), "a run plan has runs");
  return 0;
}
