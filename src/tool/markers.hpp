// The tool's marker selection (--profile-from-start off, --nvtx-include / --nvtx-exclude): the
// NVTX state and profiler start/stop the application made, from the SDK's MARKER domain
// (kreplay/markers.h), and the verdict stage 0 of the kernel filter takes for each launch.
//
// Under range replay a marker that changes the calling thread's verdict closes the open ranges
// (kreplay_range_replay_close_at_marker), so no range holds launches of both sides.
#pragma once

#include <atomic>
#include <cstdint>

#include "config/filter.hpp"
#include "config/nvtx_filter.hpp"
#include "config/tool_config.hpp"
#include "kreplay/kreplay.h"

namespace kreplay::tool {

class MarkerSelection {
 public:
  /// @p options were validated by KernelFilter::Create already.
  explicit MarkerSelection(const config::FilterOptions& options);

  /// Whether the selection needs the markers at all.
  bool active() const { return active_; }
  /// Whether the verdict depends on the calling thread (NVTX ranges are per thread; profiler
  /// start/stop is the process's).
  bool per_thread() const { return active_ && !nvtx_.empty(); }
  /// Subscribe to MARKER on a context of its own and start it (during the tool's initialize).
  /// @p split_ranges: range replay, close ranges where the verdict changes.
  bool subscribe(bool split_ranges);
  /// The verdict for a launch the calling thread makes now.
  config::KernelFilter::Markers verdict(uint64_t thread) const;
  /// Whether cudaProfilerStart was ever seen (for the exit's word on --profile-from-start off).
  bool profiler_started() const { return started_.load(std::memory_order_relaxed); }

  /// One MARKER record (the C callback calls it).
  void on_marker(uint32_t op, const kreplay_callback_tracing_marker_data_t& data, uint64_t thread);

 private:
  bool active_ = false;
  bool profile_from_start_ = true;
  bool split_ranges_ = false;
  config::NvtxFilter nvtx_;
  config::NvtxState state_;
  std::atomic<bool> profiling_{true};  ///< between start and stop (always, when from start)
  std::atomic<bool> started_{false};
};

}  // namespace kreplay::tool
