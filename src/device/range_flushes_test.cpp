// launch_ranges(): which ranges of a range pass are its launches', once the flushes made between
// them (each a counted range of its own on CUDA) are left out.
#include "device/range_flushes.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace kreplay::device {
namespace {

using V = std::vector<size_t>;

TEST(LaunchRanges, NoFlushesKeepsEveryRange) {
  EXPECT_EQ(launch_ranges(4, {}), (V{0, 1, 2, 3}));
  EXPECT_EQ(launch_ranges(0, {}), V{});
}

TEST(LaunchRanges, AFlushBeforeEveryLaunchButTheFirst) {
  // launch 0, flush, launch 1, flush, launch 2: ranges 0, 2, 4 are the launches'.
  const V flushes{1, 2};
  EXPECT_EQ(launch_ranges(5, flushes), (V{0, 2, 4}));
}

TEST(LaunchRanges, AFlushBeforeTheFirstCountedLaunch) {
  // The session began before a flush (a flush at position 0): its range comes first.
  const V flushes{0, 1};
  EXPECT_EQ(launch_ranges(4, flushes), (V{1, 3}));
}

TEST(LaunchRanges, TwoFlushesBetweenTwoLaunches) {
  // launch 0, flush, flush, launch 1 (a launch that left the range had a flush before it).
  const V flushes{1, 1};
  EXPECT_EQ(launch_ranges(4, flushes), (V{0, 3}));
}

TEST(LaunchRanges, FlushesOnlySomeWhere) {
  // launch 0, launch 1, flush, launch 2, launch 3.
  const V flushes{2};
  EXPECT_EQ(launch_ranges(5, flushes), (V{0, 1, 3, 4}));
}

TEST(LaunchRanges, FewerRangesThanExpected) {
  // CUPTI dropped the last ranges (or a launch made none): what is there is mapped in order, and
  // flushes past the end drop nothing.
  const V flushes{1, 2, 3};
  EXPECT_EQ(launch_ranges(3, flushes), (V{0, 2}));
  EXPECT_EQ(launch_ranges(1, flushes), (V{0}));
}

TEST(LaunchRanges, AFlushAfterTheLastLaunch) {
  const V flushes{1, 2};
  EXPECT_EQ(launch_ranges(4, flushes), (V{0, 2}));  // launch, flush, launch, flush
}

}  // namespace
}  // namespace kreplay::device
