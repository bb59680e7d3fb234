// See range_calls.hpp.
#include "backends/cuda/range_calls.hpp"

#include <generated_nvtx_meta.h>

#include <cstring>
#include <string>
#include <vector>

#include "backends/cuda/interception.hpp"
#include "backends/cuda/range_call_names.hpp"
#include "backends/cuda/range_memory.hpp"
#include "common/exit_safe.hpp"
#include "sdk/runtime.hpp"

namespace kreplay::cuda::range_calls {
namespace {

/// cuEventRecord* and cuStreamWaitEvent* order work between streams without touching memory:
/// the engine learns of them (a stream that waited for the range's event may join the range).
/// Returns false for any other call.
bool note_stream_order(CUpti_CallbackId cbid, const CUpti_CallbackData* cb, uint64_t agent) {
  auto& engine = sdk::Runtime::get().engine();
  auto handle = [](CUstream s, bool ptsz) {
    return reinterpret_cast<uint64_t>(interception::stream_of(s, ptsz));
  };
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecord:
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz: {
      auto* p = static_cast<const cuEventRecord_params*>(cb->functionParams);
      engine.range_event_record(agent,
                                handle(p->hStream, cbid != CUPTI_DRIVER_TRACE_CBID_cuEventRecord),
                                reinterpret_cast<uint64_t>(p->hEvent));
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz: {
      auto* p = static_cast<const cuEventRecordWithFlags_params*>(cb->functionParams);
      engine.range_event_record(
          agent, handle(p->hStream, cbid != CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags),
          reinterpret_cast<uint64_t>(p->hEvent));
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz: {
      auto* p = static_cast<const cuStreamWaitEvent_params*>(cb->functionParams);
      engine.range_stream_wait(
          agent, handle(p->hStream, cbid != CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent),
          reinterpret_cast<uint64_t>(p->hEvent));
      return true;
    }
    default:
      return false;
  }
}

}  // namespace

bool range_mode() {
  auto* c = sdk::Runtime::get().registry().range_context();
  return c != nullptr && c->active.load(std::memory_order_acquire);
}

// Exit-safe: a program's exit handlers may still push and pop NVTX ranges (common/exit_safe.hpp).
struct NvtxStack {
  std::vector<std::string> names;
};
std::vector<std::string>& nvtx_stack() { return exit_safe_thread_local<NvtxStack>().names; }

void nvtx_callback(CUpti_CallbackId cbid, const CUpti_NvtxData* d) {
  auto& engine = sdk::Runtime::get().engine();
  if (cbid == CUPTI_CBID_NVTX_nvtxRangePushA) {
    auto* p = static_cast<const nvtxRangePushA_params*>(d->functionParams);
    nvtx_stack().emplace_back(p && p->message ? p->message : "");
    engine.range_marker(replay::Engine::MarkerEvent::kNvtxPush, nvtx_stack().back());
  } else if (cbid == CUPTI_CBID_NVTX_nvtxRangePushEx) {
    auto* p = static_cast<const nvtxRangePushEx_params*>(d->functionParams);
    const char* msg = p && p->eventAttrib && p->eventAttrib->messageType == NVTX_MESSAGE_TYPE_ASCII
                          ? p->eventAttrib->message.ascii
                          : "";
    nvtx_stack().emplace_back(msg ? msg : "");
    engine.range_marker(replay::Engine::MarkerEvent::kNvtxPush, nvtx_stack().back());
  } else if (cbid == CUPTI_CBID_NVTX_nvtxRangePop && !nvtx_stack().empty()) {
    std::string name = std::move(nvtx_stack().back());
    nvtx_stack().pop_back();
    engine.range_marker(replay::Engine::MarkerEvent::kNvtxPop, name);
  }
}

void driver_call_enter(CUpti_CallbackId cbid, const CUpti_CallbackData* cb, uint64_t agent) {
  auto& engine = sdk::Runtime::get().engine();
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart) {
    engine.range_marker(replay::Engine::MarkerEvent::kProfilerStart, "");
  } else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop) {
    engine.range_marker(replay::Engine::MarkerEvent::kProfilerStop, "");
  } else if (is_plain_sync(cb->functionName)) {
    engine.range_sync(agent, cb->functionName);
  } else if (range_memory::joinable_call(cbid)) {
    // Memsets, copies into device memory and allocations may stay inside the range: the memory
    // path decides (range_memory.cpp, memory_callbacks.cpp), closing the range where they cannot.
  } else if (!note_stream_order(cbid, cb, agent)) {
    // A range closes before any other call that could observe or change device memory.
    if (auto why = range_close_reason(cb->functionName); why != KREPLAY_RANGE_CLOSE_NONE)
      engine.range_barrier(agent, why, cb->functionName);
  }
}

}  // namespace kreplay::cuda::range_calls
