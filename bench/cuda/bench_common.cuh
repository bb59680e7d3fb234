// What the CUDA benchmark applications share: a CUDA call check that fails main() and the wall
// clock they stamp their output with (CLOCK_REALTIME, comparable with `date +%s%N` in the scripts).
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <ctime>

/// Run a CUDA runtime call; on failure print it and return 1 from the calling function (main).
#define CHECK(call)                                                                    \
  do {                                                                                 \
    cudaError_t e = (call);                                                            \
    if (e != cudaSuccess) {                                                            \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e));          \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

/// CLOCK_REALTIME in nanoseconds.
inline long long realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}
