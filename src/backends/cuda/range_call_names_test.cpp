// Pins which driver calls close an open range, and why, by name.
#include "backends/cuda/range_call_names.hpp"

#include <gtest/gtest.h>

namespace kreplay::cuda::range_calls {
namespace {

TEST(RangeCallNames, QueriesAndContextSwitchesLeaveTheRangeOpen) {
  for (const char* name : {"cuCtxGetCurrent", "cuCtxSetCurrent", "cuDevicePrimaryCtxRetain",
                           "cuDevicePrimaryCtxGetState", "cuDevicePrimaryCtxSetFlags_v2",
                           "cuEventRecord", "cuFuncGetAttribute", "cuMemGetInfo_v2"})
    EXPECT_EQ(range_close_reason(name), KREPLAY_RANGE_CLOSE_NONE) << name;
}

// Releasing or resetting the primary context may destroy it and free its memory (cudart releases
// it at exit, and kreplay's own exit handler runs after cudart's): the range closes first, while
// its context still lives.
TEST(RangeCallNames, ReleasingOrResettingThePrimaryContextClosesTheRange) {
  for (const char* name :
       {"cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxReset",
        "cuDevicePrimaryCtxReset_v2", "cuCtxDestroy_v2"})
    EXPECT_EQ(range_close_reason(name), KREPLAY_RANGE_CLOSE_OTHER) << name;
}

TEST(RangeCallNames, MemoryModuleGraphAndHostFunctionCallsSayWhy) {
  EXPECT_EQ(range_close_reason("cuMemcpyDtoH_v2"), KREPLAY_RANGE_CLOSE_MEMORY);
  EXPECT_EQ(range_close_reason("cuMemFree_v2"), KREPLAY_RANGE_CLOSE_MEMORY);
  EXPECT_EQ(range_close_reason("cuModuleLoadData"), KREPLAY_RANGE_CLOSE_MODULE);
  EXPECT_EQ(range_close_reason("cuLibraryLoadData"), KREPLAY_RANGE_CLOSE_MODULE);
  EXPECT_EQ(range_close_reason("cuGraphLaunch"), KREPLAY_RANGE_CLOSE_GRAPH);
  EXPECT_EQ(range_close_reason("cuStreamBeginCapture_v2"), KREPLAY_RANGE_CLOSE_GRAPH);
  EXPECT_EQ(range_close_reason("cuLaunchHostFunc"), KREPLAY_RANGE_CLOSE_SYNCHRONIZE);
  EXPECT_EQ(range_close_reason("cuStreamDestroy_v2"), KREPLAY_RANGE_CLOSE_OTHER);
  EXPECT_EQ(range_close_reason(nullptr), KREPLAY_RANGE_CLOSE_OTHER);
}

TEST(RangeCallNames, PlainSynchronizations) {
  for (const char* name : {"cuCtxSynchronize", "cuStreamSynchronize", "cuStreamSynchronize_ptsz",
                           "cuEventSynchronize", "cuStreamQuery", "cuEventQuery"})
    EXPECT_TRUE(is_plain_sync(name)) << name;
  EXPECT_FALSE(is_plain_sync("cuMemcpyDtoH_v2"));
  EXPECT_FALSE(is_plain_sync(nullptr));
}

}  // namespace
}  // namespace kreplay::cuda::range_calls
