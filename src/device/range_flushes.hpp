// Range replay with --cache-control all: the engine flushes the caches before every launch of a
// range pass, so on a device whose flush is a kernel of its own (CUDA: MemoryOps::flush_caches)
// each flush made inside the pass's counting session is a counted range of its own (CUPTI's auto
// range makes one range per kernel, in submission order). launch_ranges() says which of a pass's
// ranges are the launches'.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace kreplay::device {

/// Which of a pass's @p ranges counted ranges (in submission order) belong to launches, when
/// each entry of @p flushes is a flush that made a range of its own after that many of the pass's
/// counted launches (non-decreasing; a position may repeat: two flushes between two launches).
/// Returns the launches' range indices, in submission order. A flush position beyond the
/// ranges there are drops nothing.
inline std::vector<size_t> launch_ranges(size_t ranges, std::span<const size_t> flushes) {
  std::vector<size_t> out;
  out.reserve(ranges);
  size_t f = 0;
  for (size_t i = 0; i < ranges; ++i) {
    if (f < flushes.size() && flushes[f] <= out.size()) {
      ++f;  // the flush's range
      continue;
    }
    out.push_back(i);
  }
  return out;
}

}  // namespace kreplay::device
