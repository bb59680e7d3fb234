// What range.cpp and range_close.cpp share: the thread-local depth of the range machinery (calls
// made from inside it neither join nor close a range).
#pragma once

namespace kreplay::replay::detail {

inline thread_local int tl_range_depth = 0;

struct RangeDepth {
  RangeDepth() { ++tl_range_depth; }
  ~RangeDepth() { --tl_range_depth; }
  RangeDepth(const RangeDepth&) = delete;
  RangeDepth& operator=(const RangeDepth&) = delete;
};

}  // namespace kreplay::replay::detail
