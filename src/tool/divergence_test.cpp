// Pins the run-end line of --check-divergence: nothing when no launch diverged; else the count of
// launches and kernels, and the kernels, most launches first, capped.
#include "tool/divergence.hpp"

#include <gtest/gtest.h>

namespace kreplay::tool {
namespace {

TEST(DivergenceTally, NothingWhenNoLaunchDiverged) {
  DivergenceTally t;
  EXPECT_EQ(t.launches(), 0u);
  EXPECT_EQ(t.line(), "");
}

TEST(DivergenceTally, CountsLaunchesAndNamesKernelsMostFirst) {
  DivergenceTally t;
  t.add("reduce_atomic(float*)");
  t.add("stamp(float*)");
  t.add("reduce_atomic(float*)");
  EXPECT_EQ(t.launches(), 3u);
  EXPECT_EQ(t.line(),
            "3 launches of 2 kernels left different memory on different passes, so "
            "their passes did not measure the same work: reduce_atomic(float*) (2), "
            "stamp(float*) (1)");
  EXPECT_NE(t.line(1).find("reduce_atomic(float*) (2) and 1 more"), std::string::npos) << t.line(1);
}

TEST(DivergenceTally, OneLaunch) {
  DivergenceTally t;
  t.add("k");
  EXPECT_EQ(t.line(),
            "1 launch of 1 kernel left different memory on different passes, so their "
            "passes did not measure the same work: k (1)");
}

}  // namespace
}  // namespace kreplay::tool
