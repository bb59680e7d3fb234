// KREPLAY_PRINT_COSTS=1: where profiling time went, printed at exit as `==KREPLAY== startup ...`
// and `==KREPLAY== cost ...` lines (CUPTI's calls per counter backend, the warm start, the frees
// range replay deferred). bench/ and scripts/gpu-check.sh read these lines.
#include <cstdio>
#include <string>

#include "backends/cuda/cuda_counters.hpp"
#include "backends/cuda/cupti/profiler_api.hpp"
#include "backends/cuda/cupti/range_profiler.hpp"
#include "backends/cuda/interception.hpp"
#include "backends/cuda/range_free.hpp"

namespace kreplay::cuda::interception {
namespace {

// One `cost` row of print_costs: @p name padded to 22 columns, then the call count and times.
void print_cost_row(const std::string& name, uint64_t calls, double total_ms, double mean_ms,
                    double max_ms) {
  std::fprintf(stderr,
               "==KREPLAY== cost %-22s calls=%-6llu total_ms=%-10.3f mean_ms=%-8.3f max_ms=%.3f\n",
               name.c_str(), static_cast<unsigned long long>(calls), total_ms, mean_ms, max_ms);
}

void print_cost_row(const std::string& name, const cupti::CallCost& cc) {
  if (cc.calls > 0)
    print_cost_row(name, cc.calls, cc.total_ms(), cc.mean_ms(),
                   static_cast<double>(cc.max_ns) / 1e6);
}

}  // namespace

void print_costs() {
  std::fprintf(stderr,
               "==KREPLAY== startup subscribe_ms=%.3f callbacks_ms=%.3f devices_and_tools_ms=%.3f "
               "modules=%llu modules_ms=%.3f\n",
               state().subscribe_ms, state().callbacks_ms, state().devices_ms,
               static_cast<unsigned long long>(state().modules_loaded), state().modules_ms);
  const range_free::Counts frees = range_free::counts();
  std::fprintf(stderr, "==KREPLAY== cost range_frees seen=%llu deferred=%llu\n", frees.seen,
               frees.deferred);
  for (auto& b : state().counter_backends) {
   // KREPLAY_WARM_START: the throw-away collections run before the first window of a context.
   if (const WarmStartCost w = b->warm_start_cost(); w.runs + w.failed > 0) {
     const double total_ms = static_cast<double>(w.total_ns) / 1e6;
     print_cost_row("warm_start", w.runs, total_ms,
                    w.runs ? total_ms / static_cast<double>(w.runs) : 0.0,
                    static_cast<double>(w.max_ns) / 1e6);
     std::fprintf(stderr,
                  "==KREPLAY== cost warm_start first_start_ms=%.3f passes=%llu failed=%llu "
                  "failed_ms=%.3f nan_values=%llu\n",
                  static_cast<double>(w.first_start_ns) / 1e6,
                  static_cast<unsigned long long>(w.passes),
                  static_cast<unsigned long long>(w.failed), static_cast<double>(w.failed_ns) / 1e6,
                  static_cast<unsigned long long>(w.nan_values));
   }
   for (cupti::RangeProfiler* rp : b->existing_profilers()) {
    const auto& c = rp->costs();
    auto row = [](const char* name, const cupti::CallCost& cc) { print_cost_row(name, cc); };
    row("enable", c.enable);
    row("counter_availability", c.counter_availability);
    row("host_config", c.host_config);
    row("counter_data_size", c.counter_data_size);
    row("counter_data_init", c.counter_data_init);
    row("set_config", c.set_config);
    row("start", c.start);
    row("stop", c.stop);
    row("decode", c.decode);
    row("evaluate", c.evaluate);
    std::fprintf(stderr, "==KREPLAY== cost reenables=%llu ranges_dropped=%llu\n",
                 static_cast<unsigned long long>(c.reenables),
                 static_cast<unsigned long long>(c.ranges_dropped));
   }
   // KREPLAY_COUNTER_API=profiler*: the legacy profiler API's calls.
   for (cupti::ProfilerApiSession* s : b->existing_sessions()) {
    const auto& c = s->costs();
    auto row = [](const char* name, const cupti::CallCost& cc) {
      print_cost_row(std::string("api_") + name, cc);
    };
    row("counter_availability", c.counter_availability);
    row("host_config", c.host_config);
    row("prefix", c.prefix);
    row("counter_data_size", c.counter_data_size);
    row("counter_data_init", c.counter_data_init);
    row("begin_session", c.begin_session);
    row("end_session", c.end_session);
    row("set_config", c.set_config);
    row("unset_config", c.unset_config);
    row("begin_pass", c.begin_pass);
    row("end_pass", c.end_pass);
    row("enable", c.enable);
    row("disable", c.disable);
    row("push_range", c.push_range);
    row("pop_range", c.pop_range);
    row("flush", c.flush);
    row("evaluate", c.evaluate);
    std::fprintf(stderr, "==KREPLAY== cost api_sessions=%llu api_rollovers=%llu api_ranges_dropped=%llu\n",
                 static_cast<unsigned long long>(c.sessions),
                 static_cast<unsigned long long>(c.rollovers),
                 static_cast<unsigned long long>(c.ranges_dropped));
   }
  }
}


}  // namespace kreplay::cuda::interception
