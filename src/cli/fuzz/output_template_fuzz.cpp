// Fuzz target: output-name templates (-d, -o). Syntax checking and expansion must agree: a
// template that validates expands, unless it names an environment variable that is not set.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cli/fuzz/fuzz_check.hpp"
#include "config/output_path.hpp"

using namespace kreplay::config;
namespace fuzz = kreplay::cli::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ExpansionContext context;
  context.hostname = "node7";
  context.pid = 4242;
  context.ppid = 1;
  context.getenv = [](const std::string& name) -> std::optional<std::string> {
    if (name == "OMPI_COMM_WORLD_RANK") return "3";
    if (name.size() % 2 == 0) return "v_" + name;  // half the names are "set"
    return std::nullopt;
  };
  kreplay::Status valid = validate_output_template(text);
  auto expanded = expand_output_template(text, context);
  if (!valid.ok()) {
    fuzz::check_error_message(valid);
    fuzz::check(!expanded.ok(), "an invalid template does not expand");
  } else if (!expanded.ok()) {
    fuzz::check_error_message(expanded.status());
    fuzz::check(expanded.status().message().find("is not set") != std::string::npos,
                "a valid template fails only on an unset variable");
  }
  (void)template_is_per_process(text);
  return 0;
}
