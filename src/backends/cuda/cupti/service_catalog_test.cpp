// Pins the offline part of the services' catalog (no GPU): CUPTI 13.0 lists GH100's SASS metrics
// from the chip name, and every name of the --source-counters default set is one of them (the
// CUDA SASS-metrics service leaves out of the default what a chip lacks; on the H200 nothing
// should be left out).
#include "backends/cuda/cupti/service_catalog.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace kreplay::cupti {
namespace {

TEST(ServiceCatalog, ListsGh100SassMetricsWithTheDefaultSet) {
  auto list = sass_metrics("GH100");
  ASSERT_TRUE(list.ok()) << list.status().message();
  EXPECT_GE(list->size(), 20u);
  for (const char* d : kSassDefaultSet) {
    EXPECT_TRUE(std::any_of(list->begin(), list->end(), [&](const SassMetricInfo& m) {
      return m.name == d;
    })) << d;
  }
  EXPECT_TRUE(std::is_sorted(list->begin(), list->end(),
                             [](const auto& a, const auto& b) { return a.name < b.name; }));
}

TEST(ServiceCatalog, UnknownChipIsNotAvailable) {
  auto list = sass_metrics("NOSUCHCHIP");
  ASSERT_FALSE(list.ok());
  EXPECT_NE(list.status().message().find("NOSUCHCHIP"), std::string::npos)
      << list.status().message();
}

}  // namespace
}  // namespace kreplay::cupti
