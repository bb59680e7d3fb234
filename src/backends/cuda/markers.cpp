// See markers.hpp.
#include "backends/cuda/markers.hpp"

#include <generated_nvtx_meta.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "sdk/runtime.hpp"

namespace kreplay::cuda::markers {
namespace {

std::atomic<bool> g_enabled{false};

// Domains and registered strings by handle (nvtxDomainCreateA, nvtxDomainRegisterStringA; the
// wide forms are not followed: their ranges count as domain "?" and an empty name).
struct Names {
  std::mutex mu;
  std::unordered_map<const void*, std::string> domains;
  std::unordered_map<const void*, std::string> strings;
  std::unordered_map<uint64_t, std::string> range_domain;  // open start/end ranges
};
Names& names() {
  static auto* n = new Names();  // NOLINT: lives for the process (NVTX calls may come at exit)
  return *n;
}

std::string narrow(const wchar_t* w) {
  std::string out;
  if (w == nullptr) return out;
  for (; *w; ++w) out += (*w >= 0 && *w < 128) ? static_cast<char>(*w) : '?';
  return out;
}

std::string domain_name(const void* handle) {
  if (handle == nullptr) return {};
  std::lock_guard lock(names().mu);
  auto it = names().domains.find(handle);
  return it == names().domains.end() ? std::string("?") : it->second;
}

std::string message_of(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return {};
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return a->message.ascii ? a->message.ascii : "";
    case NVTX_MESSAGE_TYPE_UNICODE:
      return narrow(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED: {
      std::lock_guard lock(names().mu);
      auto it = names().strings.find(a->message.registered);
      return it == names().strings.end() ? std::string() : it->second;
    }
    default:
      return {};
  }
}

template <typename T>
const T* params(const CUpti_NvtxData* d) {
  return static_cast<const T*>(d->functionParams);
}

void push(const std::string& domain, const std::string& message) {
  sdk::Runtime::get().marker(KREPLAY_MARKER_RANGE_PUSH, message.c_str(), domain.c_str(), 0);
}
void pop(const std::string& domain) {
  sdk::Runtime::get().marker(KREPLAY_MARKER_RANGE_POP, nullptr, domain.c_str(), 0);
}
void start(const CUpti_NvtxData* d, const std::string& domain, const std::string& message) {
  const auto* id = static_cast<const nvtxRangeId_t*>(d->functionReturnValue);
  if (id == nullptr || *id == 0) return;  // no id: its end could not be matched
  {
    std::lock_guard lock(names().mu);
    names().range_domain[*id] = domain;
  }
  sdk::Runtime::get().marker(KREPLAY_MARKER_RANGE_START, message.c_str(), domain.c_str(), *id);
}
void end(nvtxRangeId_t id) {
  std::string domain;
  {
    std::lock_guard lock(names().mu);
    auto it = names().range_domain.find(id);
    if (it == names().range_domain.end()) return;
    domain = std::move(it->second);
    names().range_domain.erase(it);
  }
  sdk::Runtime::get().marker(KREPLAY_MARKER_RANGE_END, nullptr, domain.c_str(), id);
}

}  // namespace

void enable(CUpti_SubscriberHandle subscriber) {
  if (!sdk::Runtime::get().markers_wanted()) return;
  for (CUpti_CallbackId id :
       {CUPTI_CBID_NVTX_nvtxRangeStartA, CUPTI_CBID_NVTX_nvtxRangeStartW,
        CUPTI_CBID_NVTX_nvtxRangeStartEx, CUPTI_CBID_NVTX_nvtxRangeEnd,
        CUPTI_CBID_NVTX_nvtxRangePushA, CUPTI_CBID_NVTX_nvtxRangePushW,
        CUPTI_CBID_NVTX_nvtxRangePushEx, CUPTI_CBID_NVTX_nvtxRangePop,
        CUPTI_CBID_NVTX_nvtxDomainRangeStartEx, CUPTI_CBID_NVTX_nvtxDomainRangeEnd,
        CUPTI_CBID_NVTX_nvtxDomainRangePushEx, CUPTI_CBID_NVTX_nvtxDomainRangePop,
        CUPTI_CBID_NVTX_nvtxDomainCreateA, CUPTI_CBID_NVTX_nvtxDomainRegisterStringA}) {
    cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_NVTX, id);
  }
  for (CUpti_CallbackId id :
       {CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop}) {
    cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
  }
  g_enabled.store(true, std::memory_order_release);
}

bool enabled() { return g_enabled.load(std::memory_order_acquire); }

void nvtx_callback(CUpti_CallbackId cbid, const CUpti_NvtxData* d) {
  if (!enabled() || d == nullptr) return;
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxDomainCreateA: {
      const auto* h = static_cast<const nvtxDomainHandle_t*>(d->functionReturnValue);
      const char* name = params<nvtxDomainCreateA_params>(d)->name;
      if (h == nullptr || *h == nullptr) return;
      std::lock_guard lock(names().mu);
      names().domains[*h] = name ? name : "";
      return;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRegisterStringA: {
      const auto* h = static_cast<const nvtxStringHandle_t*>(d->functionReturnValue);
      const char* str = params<nvtxDomainRegisterStringA_params>(d)->string;
      if (h == nullptr || *h == nullptr) return;
      std::lock_guard lock(names().mu);
      names().strings[*h] = str ? str : "";
      return;
    }
    case CUPTI_CBID_NVTX_nvtxRangePushA: {
      const char* m = params<nvtxRangePushA_params>(d)->message;
      return push("", m ? m : "");
    }
    case CUPTI_CBID_NVTX_nvtxRangePushW:
      return push("", narrow(params<nvtxRangePushW_params>(d)->message));
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
      return push("", message_of(params<nvtxRangePushEx_params>(d)->eventAttrib));
    case CUPTI_CBID_NVTX_nvtxRangePop:
      return pop("");
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
      const auto* p = params<nvtxDomainRangePushEx_params>(d);
      return push(domain_name(p->domain), message_of(p->core.eventAttrib));
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
      return pop(domain_name(params<nvtxDomainRangePop_params>(d)->domain));
    case CUPTI_CBID_NVTX_nvtxRangeStartA: {
      const char* m = params<nvtxRangeStartA_params>(d)->message;
      return start(d, "", m ? m : "");
    }
    case CUPTI_CBID_NVTX_nvtxRangeStartW:
      return start(d, "", narrow(params<nvtxRangeStartW_params>(d)->message));
    case CUPTI_CBID_NVTX_nvtxRangeStartEx:
      return start(d, "", message_of(params<nvtxRangeStartEx_params>(d)->eventAttrib));
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx: {
      const auto* p = params<nvtxDomainRangeStartEx_params>(d);
      return start(d, domain_name(p->domain), message_of(p->core.eventAttrib));
    }
    case CUPTI_CBID_NVTX_nvtxRangeEnd:
      return end(params<nvtxRangeEnd_params>(d)->id);
    case CUPTI_CBID_NVTX_nvtxDomainRangeEnd:
      return end(params<nvtxDomainRangeEnd_params>(d)->core.id);
    default:
      return;
  }
}

void driver_call_enter(CUpti_CallbackId cbid) {
  if (!enabled()) return;
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart)
    sdk::Runtime::get().marker(KREPLAY_MARKER_PROFILER_START, nullptr, nullptr, 0);
  else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop)
    sdk::Runtime::get().marker(KREPLAY_MARKER_PROFILER_STOP, nullptr, nullptr, 0);
}

}  // namespace kreplay::cuda::markers
