// The host device's executor: runs a kernel function over its grid on the calling (worker)
// thread, one call per thread with its ThreadContext, and books what the kernel counted. Used by
// launches (host_device.cpp) and graph launches (host_graph.cpp).
#pragma once

#include "backends/host/host_device.hpp"

namespace kreplay::hostrt {

class Executor {
 public:
  static void run(KernelFn fn, ThreadContext& ctx, const std::byte* args, const uint32_t* offsets,
                  ExecRecord& rec, Probe* probe, DeviceHeap* heap = nullptr) {
    ctx.args_ = args;
    ctx.heap_ = heap;
    ctx.offsets_ = offsets;
    ctx.probe_ = probe;
    const Dim3 g = ctx.grid_dim, b = ctx.block_dim;
    for (uint32_t bz = 0; bz < g.z; ++bz)
      for (uint32_t by = 0; by < g.y; ++by)
        for (uint32_t bx = 0; bx < g.x; ++bx)
          for (uint32_t tz = 0; tz < b.z; ++tz)
            for (uint32_t ty = 0; ty < b.y; ++ty)
              for (uint32_t tx = 0; tx < b.x; ++tx) {
                ctx.block_idx = {bx, by, bz};
                ctx.thread_idx = {tx, ty, tz};
                fn(ctx);
              }
    rec.blocks = uint64_t{g.x} * g.y * g.z;
    rec.threads = rec.blocks * b.x * b.y * b.z;
    rec.bytes_read = ctx.bytes_read_;
    rec.bytes_written = ctx.bytes_written_;
    rec.ops = ctx.ops_;
    rec.trapped = rec.trapped || ctx.trapped_;
  }
};

}  // namespace kreplay::hostrt
