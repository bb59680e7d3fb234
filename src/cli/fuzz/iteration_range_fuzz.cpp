// Fuzz target: --kernel-iteration-range. A range that parses must print to a text that parses
// to the same intervals, and a filter built on it must count launches consistently.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cli/fuzz/fuzz_check.hpp"
#include "config/filter.hpp"

using namespace kreplay::config;
namespace fuzz = kreplay::cli::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto range = IterationRange::Parse(text);
  if (!range.ok()) {
    fuzz::check_error_message(range.status());
    return 0;
  }
  auto again = IterationRange::Parse(range->to_string());
  fuzz::check(
      again.ok() && again->intervals() == range->intervals() && again->all() == range->all(),
      "to_string() parses back to the same range");
  const auto& iv = range->intervals();
  for (size_t i = 0; i < iv.size(); ++i) {
    fuzz::check(iv[i].first >= 1 && iv[i].first <= iv[i].second, "intervals are well formed");
    if (i > 0) fuzz::check(iv[i - 1].second + 1 < iv[i].first, "intervals are merged and sorted");
    fuzz::check(range->contains(iv[i].first) && range->contains(iv[i].second), "bounds included");
  }
  FilterOptions options;
  options.iteration_range = std::string(text);
  auto filter = KernelFilter::Create(options);
  fuzz::check(filter.ok(), "a range that parses makes a filter");
  for (uint64_t n = 1; n <= 64; ++n) {
    fuzz::check(filter->select("k()", "_Z1kv") == range->contains(n), "select follows the range");
  }
  FilterStats stats = filter->stats();
  fuzz::check(stats.selected + stats.not_selected == 64, "every launch counted once");
  return 0;
}
