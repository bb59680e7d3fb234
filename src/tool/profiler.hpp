// The profiler tool's state (see tool.cpp): one Profiler per process, whose callbacks the SDK
// calls. Split over tool.cpp (callbacks, kernel replay, outputs, exit), profiler_setup.cpp
// (initialize: run metadata, pass plans, the SDK's services) and profiler_range.cpp (range replay).
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "config/filter.hpp"
#include "config/tool_config.hpp"
#include "kreplay/kreplay.h"
#include "output/summary_writer.hpp"
#include "output/writer.hpp"
#include "tool/divergence.hpp"
#include "tool/markers.hpp"
#include "tool/pass_plan.hpp"
#include "tool/services/tool_service.hpp"
#include "tool/signals.hpp"

namespace kreplay::tool {

inline const char* reason_name(kreplay_decline_reason_t r) {
  const char* n = kreplay_get_decline_reason_name(r);
  return n ? n : "unknown";
}

// Widen a dispatch's [start_ns, end_ns] to cover one more pass.
inline void extend_span(output::DispatchRecord& r, uint64_t start, uint64_t end) {
  if (r.start_ns == 0 || start < r.start_ns) r.start_ns = start;
  r.end_ns = std::max(r.end_ns, end);
}

inline const char* outcome_name(kreplay_replay_outcome_t o) {
  const char* n = kreplay_get_replay_outcome_name(o);
  return n ? n : "unknown";
}

/// The outputs' snapshot_mode: "full", "write_set", or "" when nothing was saved.
inline const char* snapshot_mode_name(kreplay_snapshot_mode_t m) {
  switch (m) {
    case KREPLAY_SNAPSHOT_MODE_FULL:
      return "full";
    case KREPLAY_SNAPSHOT_MODE_WRITE_SET:
      return "write_set";
    default:
      return "";
  }
}

inline const char* memory_kind_name(kreplay_memory_kind_t k) {
  switch (k) {
    case KREPLAY_MEMORY_KIND_POOL:
      return "pool";
    case KREPLAY_MEMORY_KIND_VIRTUAL:
      return "virtual";
    case KREPLAY_MEMORY_KIND_MANAGED:
      return "managed";
    case KREPLAY_MEMORY_KIND_HOST_MAPPED:
      return "host_mapped";
    case KREPLAY_MEMORY_KIND_MODULE_GLOBAL:
      return "module_global";
    default:
      return "device";
  }
}

// What the tool keeps about a logical dispatch between its callbacks.
struct Dispatch {
  bool selected = false;
  bool replayed = false;  // in a replay loop (PASS ENTER seen) or replayed
  bool declined = false;  // CONFIG EXIT said declined: it runs once, its pass 0 alone
  const AgentPlan* plan = nullptr;
  uint64_t rotation_config = 0;
  output::DispatchRecord record;
  bool record_ready = false;                       // CONFIG EXIT seen
  bool ran = false;                                // start/end known
  std::map<uint64_t, std::string> counter_status;  // pass -> "ok" (armed) or "lost"
};

class Profiler final : public ServiceHost {
 public:
  static Profiler& get() {
    static Profiler* p = new Profiler();  // NOLINT: lives for the process
    return *p;
  }

  config::ToolConfig config;
  std::optional<config::KernelFilter> filter;
  std::optional<MarkerSelection> markers;  ///< stage 0 of the filter (tool/markers.hpp)
  kreplay_context_id_t replay_ctx{}, count_ctx{}, trace_ctx{}, misc_ctx{};
  bool counting = false;
  bool tracing = false;  // the dispatch trace runs: it times single runs and writes pass records

  int initialize();
  void close_ranges_on_signal();
  void finalize(bool from_signal);

  // callbacks
  void on_config_enter(kreplay_callback_tracing_kernel_replay_data_t& p);
  void on_config_exit(const kreplay_callback_tracing_kernel_replay_data_t& p,
                      uint64_t correlation_id);
  void on_pass_enter(const kreplay_callback_tracing_kernel_replay_data_t& p);
  void on_pass_exit(const kreplay_callback_tracing_kernel_replay_data_t& p);
  uint64_t pick_config(const kreplay_dispatch_counting_data_t& d);
  void on_counters(const kreplay_dispatch_counting_data_t& d, const kreplay_counter_record_t* r,
                   size_t n);
  void on_trace(const kreplay_callback_tracing_kernel_dispatch_data_t& p, bool exit);
  void on_code_object(const kreplay_callback_tracing_code_object_data_t& p,
                      kreplay_callback_phase_t phase, uint32_t op);
  void on_memory(const kreplay_callback_tracing_memory_allocation_data_t& p, uint32_t op);

  uint64_t pass_count_of(const kreplay_kernel_dispatch_info_t& info);
  /// The filter's verdict on one logical launch (every stage, markers included); advances it.
  bool select_launch(const kreplay_kernel_dispatch_info_t& info);

  // ServiceHost (tool/services/tool_service.hpp)
  const PlannedPass* pass_of(const kreplay_kernel_dispatch_info_t& info, uint64_t pass) override;
  void on_samples(config::PassKind kind, const kreplay_pass_service_data_t& data,
                  const kreplay_pass_service_record_t* records, size_t count) override;

  // range replay
  bool range_mode() const { return config.replay_mode == config::ReplayMode::kRange; }
  /// The app_pass records carry: the run's pass under application replay, else 0.
  uint32_t record_app_pass() const { return config.app_pass_count > 1 ? config.app_pass : 0; }
  uint64_t range_pass_count(const kreplay_range_info_t& info);
  void on_range_config_enter(kreplay_callback_tracing_range_replay_data_t& p);
  void on_range_launch(kreplay_callback_tracing_range_replay_data_t& p, uint64_t correlation_id);
  void on_range_pass(const kreplay_callback_tracing_range_replay_data_t& p, bool enter);
  void on_range_config_exit(const kreplay_callback_tracing_range_replay_data_t& p);

 private:
  Profiler() = default;
  const AgentPlan* plan_for(uint64_t agent);
  void write_kernel_locked(const kreplay_kernel_dispatch_info_t& info);
  /// The launch's identity and geometry, from its dispatch info.
  void fill_launch(output::DispatchRecord& r, const kreplay_kernel_dispatch_info_t& info,
                   uint64_t correlation_id) const;
  /// The snapshot and restores of a replay, booked on the dispatch of @p r.
  void write_phases_locked(const output::DispatchRecord& r,
                           const kreplay_replay_interval_t* intervals, uint64_t count);
  /// Every pass sets every service explicitly (PASS ENTER, kernel or range): the service of the
  /// pass on, the others off.
  void set_services_for_pass(const PlannedPass& pass, kreplay_kernel_replay_context_cb_t start,
                             kreplay_kernel_replay_context_cb_t stop) {
    for (const auto& s : services_) s->pass_begin(pass, start, stop);
  }
  /// One pass of a dispatch, [@p start, @p end], to the writer.
  void write_pass_locked(const kreplay_kernel_dispatch_info_t& info, uint64_t pass, uint64_t start,
                         uint64_t end);
  void finish_dispatch_locked(uint64_t id);
  void progress_loop();
  std::string counter_name(uint64_t id);

  OwnedMutex mu_;  // guards everything below and the writer (signals.hpp: why owned)
  std::unique_ptr<output::Writer> writer_;
  std::vector<std::string> outputs_;
  std::map<uint64_t, AgentPlan> plans_;
  std::map<uint64_t, std::string> plan_errors_;
  std::unordered_map<uint64_t, Dispatch> dispatches_;
  std::set<uint64_t> kernels_written_;
  std::unordered_map<uint64_t, uint64_t> kernel_code_object_;
  std::unordered_map<uint64_t, std::string> counter_names_;
  std::map<uint64_t, uint64_t> launches_per_agent_;
  std::map<std::string, uint64_t> declined_by_reason_;
  uint64_t start_ns_ = 0;
  bool finished_ = false;

  // What each pass collects: counters (when counting), then the other services of the plan.
  std::vector<std::unique_ptr<ToolService>> services_;
  struct ServiceTally {
    uint64_t passes = 0, records = 0, refused = 0;
    std::string why;  // the last refusal's message
  };
  std::map<config::PassKind, ServiceTally> service_tally_;  // guarded by mu_
  DivergenceTally divergence_;                              // guarded by mu_
  /// Range replay: how many launches each range held and what kept it open or closed it.
  struct RangeTally {
    uint64_t ranges = 0, launches = 0, largest = 0;
    uint64_t by_size[4] = {};  // 1 launch, 2-7, 8-63, 64 or more
    uint64_t spanned_ranges = 0, syncs_spanned = 0, multi_stream = 0;
    uint64_t memory_ranges = 0, memory_calls = 0;  ///< ranges that held memory calls, and how many
    std::map<std::string, uint64_t> closed_by;
    std::map<std::string, uint64_t> closed_by_call;  // API function names
    void add(const kreplay_range_outcome_record_t& o);
    std::string line() const;  // "" when no range closed
  };
  RangeTally range_tally_;  // guarded by mu_
  /// What the windows saved (a range counted once): the exit tally's snapshots line.
  output::SnapshotTally snapshot_tally_;  // guarded by mu_
  /// The snapshot storage of every agent, summed over their peaks, into @p sum
  /// (kreplay_query_replay_storage); not while mu_ is held (the engine's storage lock may be
  /// held by a thread calling into the tool).
  static void query_storage(output::RunSummary& sum);
  std::atomic<uint64_t> launches_{0}, replayed_{0}, declined_{0}, not_selected_{0}, passes_{0};
  uint64_t counter_passes_lost_ = 0;  // guarded by mu_
  /// Passes that asked for counters (pick_config gave a config) and why the last lost pass lost
  /// them: when every such pass lost its counters, the exit says so as an error.
  uint64_t counter_passes_asked_ = 0;  // guarded by mu_
  std::string counter_lost_why_;       // guarded by mu_
  std::map<uint64_t, uint32_t> device_index_;  // agent handle -> device_index (set at initialize)
  std::set<uint32_t> devices_used_;            // devices that ran a launch; guarded by mu_

  std::thread progress_;
  std::mutex progress_mu_;
  std::condition_variable progress_cv_;
  bool stop_progress_ = false;
};

// Thread-local: the pass a replayed dispatch is in, for the counting callback; the last launch
// this thread saw join a range (tool.cpp defines them).
extern thread_local const PlannedPass* tl_pass;
extern thread_local uint64_t tl_range_launch_id;

// The C callbacks the SDK calls (tool.cpp); initialize() configures the services with them.
uint64_t pass_count_cb(kreplay_kernel_dispatch_info_t info, kreplay_user_data_t);
void replay_cb(kreplay_callback_tracing_record_t rec, kreplay_user_data_t*, void*);
uint64_t range_pass_count_cb(kreplay_range_info_t info, kreplay_user_data_t);
void range_cb(kreplay_callback_tracing_record_t rec, kreplay_user_data_t*, void*);
void counting_cb(const kreplay_dispatch_counting_data_t* d, kreplay_counter_config_id_t* config,
                 kreplay_user_data_t*, void*);
void record_cb(const kreplay_dispatch_counting_data_t* d, const kreplay_counter_record_t* r,
               size_t n, kreplay_user_data_t, void*);
void trace_cb(kreplay_callback_tracing_record_t rec, kreplay_user_data_t*, void*);

/// Tell the kreplay command that the tool started in this process (it warns when none did).
void note_tool_started();
/// --ranks: whether this process's rank is profiled. A rank that is not says nothing, except the
/// lowest such rank, which says in one line which ranks are; a process with no rank is profiled
/// (with a warning).
bool rank_selected(const config::ToolConfig& config);

}  // namespace kreplay::tool
