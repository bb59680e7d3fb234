// What memory_ops.cpp and memory_ops_digest.cpp share: the driver-call check macro, the context
// scope every MemoryOps call runs in, and the chunk-size check.
#pragma once

#include <fmt/format.h>

#include <bit>
#include <cstdint>

#include "backends/cuda/memory/driver.hpp"
#include "common/status.hpp"

#define KR_MEM_CU(call) RETURN_IF_ERROR(::kreplay::cuda::memdrv::check((call), #call))

namespace kreplay::cuda::memops {

// Makes the MemoryOps' context current for the scope when the caller's thread has another one
// (or none); restores the caller's on exit. Needs an InternalScope around it.
class CtxScope {
 public:
  explicit CtxScope(CUcontext ctx) {
    CUcontext current = nullptr;
    status_ = memdrv::check(memdrv::api().cuCtxGetCurrent(&current), "cuCtxGetCurrent");
    if (status_.ok() && current != ctx) {
      status_ = memdrv::check(memdrv::api().cuCtxPushCurrent(ctx), "cuCtxPushCurrent");
      pushed_ = status_.ok();
    }
  }
  ~CtxScope() {
    if (pushed_) {
      CUcontext popped = nullptr;
      memdrv::api().cuCtxPopCurrent(&popped);
    }
  }
  CtxScope(const CtxScope&) = delete;
  CtxScope& operator=(const CtxScope&) = delete;
  const Status& status() const { return status_; }

 private:
  Status status_;
  bool pushed_ = false;
};

inline Status check_chunk_bytes(uint64_t chunk_bytes) {
  if (chunk_bytes < 256 || !std::has_single_bit(chunk_bytes) || chunk_bytes > (1ull << 40)) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 fmt::format("chunk size {} is not a power of two between 256 bytes and 1 TiB",
                             chunk_bytes));
  }
  return Status::Ok();
}

}  // namespace kreplay::cuda::memops
