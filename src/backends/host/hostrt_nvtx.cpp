// The host runtime's markers: cudaProfilerStart/Stop and NVTX's push/pop and start/end ranges,
// with domains, as a CUDA application makes them. Each goes to the engine (range replay's
// --range-markers: profiler start/stop and the default domain's push/pop) and to the SDK's MARKER
// domain (kreplay/markers.h), which the tool's --profile-from-start and --nvtx-include read.
//
// NVTX's rules, kept here as the NVTX library keeps them: a push/pop stack per thread and domain
// (a pop with nothing pushed is ignored), start/end ranges per process with ids from 1 (an end
// with an unknown id is ignored).
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "backends/host/hostrt.hpp"
#include "sdk/runtime.hpp"

namespace kreplay::hostrt {
namespace {

std::vector<std::string>& push_stack(const std::string& domain) {
  thread_local std::map<std::string, std::vector<std::string>> stacks;
  return stacks[domain];
}

struct StartEnd {
  std::mutex mu;
  uint64_t next_id = 1;
  std::map<uint64_t, std::string> domain_of;  // open ranges: id -> domain
};
StartEnd& start_end() {
  static auto* s = new StartEnd();  // NOLINT: lives for the process (ranges may end at exit)
  return *s;
}

}  // namespace

void profiler_start() {
  if (!init().ok()) return;
  sdk::Runtime::get().engine().range_marker(replay::Engine::MarkerEvent::kProfilerStart, "");
  sdk::Runtime::get().marker(KREPLAY_MARKER_PROFILER_START, nullptr, nullptr, 0);
}

void profiler_stop() {
  if (!init().ok()) return;
  sdk::Runtime::get().engine().range_marker(replay::Engine::MarkerEvent::kProfilerStop, "");
  sdk::Runtime::get().marker(KREPLAY_MARKER_PROFILER_STOP, nullptr, nullptr, 0);
}

void nvtx_domain_range_push(const char* domain, const char* name) {
  if (!init().ok()) return;
  const std::string d = domain ? domain : "";
  auto& stack = push_stack(d);
  stack.emplace_back(name ? name : "");
  // The range markers (nvtx:NAME) are ranges of the default domain, as on CUDA.
  if (d.empty()) {
    sdk::Runtime::get().engine().range_marker(replay::Engine::MarkerEvent::kNvtxPush,
                                              stack.back());
  }
  sdk::Runtime::get().marker(KREPLAY_MARKER_RANGE_PUSH, stack.back().c_str(), d.c_str(), 0);
}

void nvtx_domain_range_pop(const char* domain) {
  if (!init().ok()) return;
  const std::string d = domain ? domain : "";
  auto& stack = push_stack(d);
  if (stack.empty()) return;
  std::string name = std::move(stack.back());
  stack.pop_back();
  if (d.empty()) sdk::Runtime::get().engine().range_marker(replay::Engine::MarkerEvent::kNvtxPop, name);
  sdk::Runtime::get().marker(KREPLAY_MARKER_RANGE_POP, nullptr, d.c_str(), 0);
}

void nvtx_range_push(const char* name) { nvtx_domain_range_push(nullptr, name); }
void nvtx_range_pop() { nvtx_domain_range_pop(nullptr); }

uint64_t nvtx_range_start(const char* name, const char* domain) {
  if (!init().ok()) return 0;
  const std::string d = domain ? domain : "";
  uint64_t id = 0;
  {
    auto& s = start_end();
    std::lock_guard lock(s.mu);
    id = s.next_id++;
    s.domain_of.emplace(id, d);
  }
  sdk::Runtime::get().marker(KREPLAY_MARKER_RANGE_START, name ? name : "", d.c_str(), id);
  return id;
}

void nvtx_range_end(uint64_t id) {
  if (!init().ok()) return;
  std::string d;
  {
    auto& s = start_end();
    std::lock_guard lock(s.mu);
    auto it = s.domain_of.find(id);
    if (it == s.domain_of.end()) return;
    d = std::move(it->second);
    s.domain_of.erase(it);
  }
  sdk::Runtime::get().marker(KREPLAY_MARKER_RANGE_END, nullptr, d.c_str(), id);
}

}  // namespace kreplay::hostrt
