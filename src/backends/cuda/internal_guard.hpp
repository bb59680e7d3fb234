// Marks CUDA calls that kreplay itself makes (snapshot kernels, relaunches, copies) so the
// interceptor does not treat them as the application's. Thread-local, nestable.
//
//   { InternalScope internal; cuLaunchKernel(...); }   // not intercepted
#pragma once

namespace kreplay::cuda {

inline thread_local int tl_internal_depth = 0;

class InternalScope {
 public:
  InternalScope() { ++tl_internal_depth; }
  ~InternalScope() { --tl_internal_depth; }
  InternalScope(const InternalScope&) = delete;
  InternalScope& operator=(const InternalScope&) = delete;
};

/// True while the calling thread is inside kreplay's own CUDA calls.
inline bool in_internal_call() { return tl_internal_depth > 0; }

}  // namespace kreplay::cuda
