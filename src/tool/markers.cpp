#include "tool/markers.hpp"

#include "common/logging.hpp"
#include "common/util.hpp"

namespace kreplay::tool {
namespace {

MarkerSelection* g_selection = nullptr;  // the one the C callback feeds

void marker_cb(kreplay_callback_tracing_record_t rec, kreplay_user_data_t*, void*) {
  if (g_selection == nullptr || rec.payload == nullptr) return;
  g_selection->on_marker(rec.operation,
                         *static_cast<const kreplay_callback_tracing_marker_data_t*>(rec.payload),
                         rec.thread_id);
}

}  // namespace

MarkerSelection::MarkerSelection(const config::FilterOptions& options)
    : profile_from_start_(options.profile_from_start) {
  auto nvtx = config::NvtxFilter::Create(options.nvtx_include, options.nvtx_exclude);
  if (nvtx.ok()) nvtx_ = std::move(nvtx).value();
  active_ = !profile_from_start_ || !nvtx_.empty();
  profiling_.store(profile_from_start_);
}

bool MarkerSelection::subscribe(bool split_ranges) {
  if (!active_) return true;
  split_ranges_ = split_ranges;
  g_selection = this;
  kreplay_context_id_t ctx{};
  if (kreplay_create_context(&ctx) != KREPLAY_STATUS_SUCCESS ||
      kreplay_configure_callback_tracing_service(ctx, KREPLAY_CALLBACK_TRACING_MARKER, nullptr, 0,
                                                 marker_cb, nullptr) != KREPLAY_STATUS_SUCCESS ||
      kreplay_start_context(ctx) != KREPLAY_STATUS_SUCCESS) {
    KR_ERROR("cannot follow the application's NVTX ranges and profiler start/stop: {}",
             kreplay_get_last_error_message());
    return false;
  }
  return true;
}

config::KernelFilter::Markers MarkerSelection::verdict(uint64_t thread) const {
  using M = config::KernelFilter::Markers;
  if (!active_) return M::kSelected;
  if (!profiling_.load(std::memory_order_acquire)) return M::kProfilerStopped;
  if (!nvtx_.empty() && !state_.selects(nvtx_, thread)) return M::kNvtx;
  return M::kSelected;
}

void MarkerSelection::on_marker(uint32_t op, const kreplay_callback_tracing_marker_data_t& d,
                                uint64_t thread) {
  const auto before = verdict(thread);
  const char* domain = d.domain ? d.domain : "";
  switch (op) {
    case KREPLAY_MARKER_RANGE_PUSH:
      state_.push(thread, domain, d.message ? d.message : "");
      break;
    case KREPLAY_MARKER_RANGE_POP:
      state_.pop(thread, domain);
      break;
    case KREPLAY_MARKER_RANGE_START:
      state_.start(d.range_id, domain, d.message ? d.message : "");
      break;
    case KREPLAY_MARKER_RANGE_END:
      state_.end(d.range_id);
      break;
    case KREPLAY_MARKER_PROFILER_START:
      started_.store(true, std::memory_order_relaxed);
      if (!profile_from_start_) profiling_.store(true, std::memory_order_release);
      break;
    case KREPLAY_MARKER_PROFILER_STOP:
      if (!profile_from_start_) profiling_.store(false, std::memory_order_release);
      break;
    default:
      return;
  }
  if (split_ranges_ && verdict(thread) != before) {
    if (kreplay_range_replay_close_at_marker() != KREPLAY_STATUS_SUCCESS) {
      KR_DEBUG("a range could not be closed at a selection change: {}",
               kreplay_get_last_error_message());
    }
  }
}

}  // namespace kreplay::tool
