// libkreplay_tool.so: kreplay's profiler tool. It is an ordinary SDK tool — it uses only the public
// C API — loaded into the application by the kreplay command (KREPLAY_TOOL_LIBRARIES), configured
// through KREPLAY_TOOL_CONFIG (cli/tool_config.hpp).
//
// Per logical launch: at CONFIG the kernel filter decides (once per launch, never per pass); a
// selected launch gets the agent's pass plan (pass_plan.hpp) as its pass count; the counting
// service picks the config of the current pass; PASS ENTER switches the counters off for timing
// passes (local context control); records stream to the output writers. At exit the tool prints
// one tally line and where the outputs are.
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>

#include "cli/filter.hpp"
#include "cli/output_path.hpp"
#include "cli/tool_config.hpp"
#include "common/logging.hpp"
#include "common/util.hpp"
#include "kreplay/kreplay.h"
#include "output/writer.hpp"
#include "tool/divergence.hpp"
#include "tool/pass_plan.hpp"
#include "tool/progress.hpp"
#include "tool/services/tool_service.hpp"
#include "tool/signals.hpp"

namespace kreplay::tool {
namespace {

const char* reason_name(kreplay_decline_reason_t r) {
  const char* n = kreplay_get_decline_reason_name(r);
  return n ? n : "unknown";
}

// Widen a dispatch's [start_ns, end_ns] to cover one more pass.
void extend_span(output::DispatchRecord& r, uint64_t start, uint64_t end) {
  if (r.start_ns == 0 || start < r.start_ns) r.start_ns = start;
  r.end_ns = std::max(r.end_ns, end);
}

const char* outcome_name(kreplay_replay_outcome_t o) {
  const char* n = kreplay_get_replay_outcome_name(o);
  return n ? n : "unknown";
}

const char* memory_kind_name(kreplay_memory_kind_t k) {
  switch (k) {
    case KREPLAY_MEMORY_KIND_POOL: return "pool";
    case KREPLAY_MEMORY_KIND_VIRTUAL: return "virtual";
    case KREPLAY_MEMORY_KIND_MANAGED: return "managed";
    case KREPLAY_MEMORY_KIND_HOST_MAPPED: return "host_mapped";
    case KREPLAY_MEMORY_KIND_MODULE_GLOBAL: return "module_global";
    default: return "device";
  }
}

// What the tool keeps about a logical dispatch between its callbacks.
struct Dispatch {
  bool selected = false;
  bool replayed = false;  // in a replay loop (PASS ENTER seen) or replayed
  const AgentPlan* plan = nullptr;
  uint64_t rotation_config = 0;
  output::DispatchRecord record;
  bool record_ready = false;  // CONFIG EXIT seen
  bool ran = false;           // start/end known
  std::map<uint64_t, std::string> counter_status;  // pass -> "ok" (armed) or "lost"
};

class Profiler final : public ServiceHost {
 public:
  static Profiler& get() {
    static Profiler* p = new Profiler();  // NOLINT: lives for the process
    return *p;
  }

  cli::ToolConfig config;
  std::optional<cli::KernelFilter> filter;
  kreplay_context_id_t replay_ctx{}, count_ctx{}, trace_ctx{}, misc_ctx{};
  bool counting = false;
  bool tracing = false;  // the dispatch trace runs: it times single runs and writes pass records

  int initialize();
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

  // ServiceHost (tool/services/tool_service.hpp)
  const PlannedPass* pass_of(const kreplay_kernel_dispatch_info_t& info, uint64_t pass) override;
  void on_samples(cli::PassKind kind, const kreplay_pass_service_data_t& data,
                  const kreplay_pass_service_record_t* records, size_t count) override;

  // range replay
  bool range_mode() const { return config.replay_mode == cli::ReplayMode::kRange; }
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
  void write_pass_locked(const kreplay_kernel_dispatch_info_t& info, uint64_t pass,
                         uint64_t start, uint64_t end);
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
  std::map<cli::PassKind, ServiceTally> service_tally_;  // guarded by mu_
  DivergenceTally divergence_;                           // guarded by mu_
  std::atomic<uint64_t> launches_{0}, replayed_{0}, declined_{0}, not_selected_{0}, passes_{0};
  uint64_t counter_passes_lost_ = 0;  // guarded by mu_

  std::thread progress_;
  std::mutex progress_mu_;
  std::condition_variable progress_cv_;
  bool stop_progress_ = false;
};

// Thread-local: the pass a replayed dispatch is in, for the counting callback.
thread_local const PlannedPass* tl_pass = nullptr;
thread_local uint64_t tl_range_launch_id = 0;  // the last launch this thread saw join a range

// ---- C callbacks ------------------------------------------------------------------------------

uint64_t pass_count_cb(kreplay_kernel_dispatch_info_t info, kreplay_user_data_t) {
  return Profiler::get().pass_count_of(info);
}

void replay_cb(kreplay_callback_tracing_record_t rec, kreplay_user_data_t*, void*) {
  auto& p = *static_cast<kreplay_callback_tracing_kernel_replay_data_t*>(rec.payload);
  auto& prof = Profiler::get();
  if (rec.operation == KREPLAY_KERNEL_REPLAY_CONFIG) {
    if (rec.phase == KREPLAY_CALLBACK_PHASE_ENTER) prof.on_config_enter(p);
    else prof.on_config_exit(p, rec.correlation_id.internal);
  } else if (rec.operation == KREPLAY_KERNEL_REPLAY_PASS) {
    if (rec.phase == KREPLAY_CALLBACK_PHASE_ENTER) prof.on_pass_enter(p); else prof.on_pass_exit(p);
  }
}

uint64_t range_pass_count_cb(kreplay_range_info_t info, kreplay_user_data_t) {
  return Profiler::get().range_pass_count(info);
}

void range_cb(kreplay_callback_tracing_record_t rec, kreplay_user_data_t*, void*) {
  auto& p = *static_cast<kreplay_callback_tracing_range_replay_data_t*>(rec.payload);
  auto& prof = Profiler::get();
  const bool enter = rec.phase == KREPLAY_CALLBACK_PHASE_ENTER;
  switch (rec.operation) {
    case KREPLAY_RANGE_REPLAY_CONFIG:
      if (enter) prof.on_range_config_enter(p); else prof.on_range_config_exit(p);
      break;
    case KREPLAY_RANGE_REPLAY_LAUNCH: prof.on_range_launch(p, rec.correlation_id.internal); break;
    case KREPLAY_RANGE_REPLAY_PASS: prof.on_range_pass(p, enter); break;
    default: break;
  }
}

void counting_cb(const kreplay_dispatch_counting_data_t* d, kreplay_counter_config_id_t* config,
                 kreplay_user_data_t*, void*) {
  config->handle = Profiler::get().pick_config(*d);
}

void record_cb(const kreplay_dispatch_counting_data_t* d, const kreplay_counter_record_t* r,
               size_t n, kreplay_user_data_t, void*) {
  Profiler::get().on_counters(*d, r, n);
}

void trace_cb(kreplay_callback_tracing_record_t rec, kreplay_user_data_t*, void*) {
  auto& prof = Profiler::get();
  if (rec.kind == KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH) {
    prof.on_trace(*static_cast<kreplay_callback_tracing_kernel_dispatch_data_t*>(rec.payload),
                  rec.phase == KREPLAY_CALLBACK_PHASE_EXIT);
  } else if (rec.kind == KREPLAY_CALLBACK_TRACING_CODE_OBJECT) {
    prof.on_code_object(*static_cast<kreplay_callback_tracing_code_object_data_t*>(rec.payload),
                        rec.phase, rec.operation);
  } else if (rec.kind == KREPLAY_CALLBACK_TRACING_MEMORY_ALLOCATION) {
    prof.on_memory(*static_cast<kreplay_callback_tracing_memory_allocation_data_t*>(rec.payload),
                   rec.operation);
  }
}

// ---- Profiler ---------------------------------------------------------------------------------

std::string agent_type(kreplay_agent_type_t t) {
  return t == KREPLAY_AGENT_TYPE_CUDA_GPU ? "cuda" : "host";
}

int Profiler::initialize() {
  // Tell the kreplay command that the tool started in this process (it warns when none did).
  if (const char* status = std::getenv("KREPLAY_TOOL_STATUS_FILE"); status && *status) {  // NOLINT
    if (std::FILE* f = std::fopen(status, "a")) {
      std::fprintf(f, "%d\n", static_cast<int>(getpid()));
      std::fclose(f);
    }
  }
  start_ns_ = now_ns();
  if (log::level() == log::Level::kWarning) {
    log::Level l;
    if (log::parse_level(config.log_level, &l)) log::set_level(l);
  }
  auto f = cli::KernelFilter::Create(config.filters);
  if (!f.ok()) {
    KR_ERROR("{}", f.status().message());
    return 1;
  }
  filter.emplace(std::move(f).value());

  // Outputs: expanded in this (the application's) process, so %pid% names the application.
  auto ctx = cli::ExpansionContext::current();
  auto base = cli::output_base_path(config.output, ctx);
  if (!base.ok()) {
    KR_ERROR("{}", base.status().message());
    return 1;
  }

  // Plans for every agent now, so a counter that does not exist fails before the first launch.
  size_t agents = 0;
  kreplay_get_agent_count(&agents);
  output::RunInfo run;
  run.kreplay_version = KREPLAY_VERSION_STRING;
  run.command = config.command;
  run.hostname = ctx.hostname;
  run.pid = static_cast<uint64_t>(ctx.pid);
  run.start_ns = start_ns_;
  run.start_unix_ns = static_cast<int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                               std::chrono::system_clock::now().time_since_epoch())
                                               .count());
  run.replay_mode = std::string(cli::to_string(config.replay_mode));
  run.app_pass = config.replay_mode == cli::ReplayMode::kApplication && config.app_pass_count > 1
                     ? config.app_pass
                     : 0;
  run.app_pass_count = run.app_pass ? config.app_pass_count : 0;
  for (const char* var :
       {"KREPLAY_TOOL_LIBRARIES", "CUDA_INJECTION64_PATH", "LD_PRELOAD", "CUDA_VISIBLE_DEVICES",
        "KREPLAY_REPLAY_MEMORY", "KREPLAY_LOG_LEVEL", "KREPLAY_CACHE_CONTROL"}) {
    if (const char* v = std::getenv(var)) run.environment[var] = v;  // NOLINT: read-only
  }
  run.options["replay_memory"] = std::string(cli::to_string(config.replay_memory));
  run.options["graph_profiling"] = std::string(cli::to_string(config.graph_profiling));
  run.options["cache_control"] = std::string(cli::to_string(config.cache_control));
  run.options["clock_control"] = "none";  // kreplay never changes clocks
  run.options["check_divergence"] = config.check_divergence ? "true" : "false";
  run.options["origin"] = config.origin;
  std::vector<kreplay_agent_t> agent_list;
  for (size_t i = 0; i < agents; ++i) {
    kreplay_agent_t a{};
    a.size = sizeof(a);
    if (kreplay_query_agent(i, &a) == KREPLAY_STATUS_SUCCESS) agent_list.push_back(a);
  }
  bool any_error = false;
  for (const auto& a : agent_list) {
    auto make = [&](const std::vector<std::string>& names)
        -> Result<std::pair<uint64_t, uint64_t>> {
      std::vector<const char*> ptrs;
      for (const auto& n : names) ptrs.push_back(n.c_str());
      kreplay_counter_config_id_t id{};
      kreplay_status_t s = kreplay_create_counter_config(a.id, ptrs.data(), ptrs.size(), &id);
      if (s != KREPLAY_STATUS_SUCCESS)
        return Error(s, std::string(kreplay_get_last_error_message()));
      kreplay_counter_config_info_t info{};
      info.size = sizeof(info);
      kreplay_query_counter_config(id, &info);
      return std::make_pair(id.handle, info.pass_count);
    };
    auto plan = plan_for_agent(config, a.counters_per_pass, make, a.name ? a.name : "");
    if (!plan.ok()) {
      KR_ERROR("{} ({}): {}", a.name, config.origin.empty() ? "counters" : config.origin,
               plan.status().message());
      plan_errors_[a.id.handle] = plan.status().message();
      any_error = true;
      continue;
    }
    for (const auto& n : plan->counters) {
      if (std::find(run.counter_names.begin(), run.counter_names.end(), n) == run.counter_names.end())
        run.counter_names.push_back(n);
    }
    plans_[a.id.handle] = std::move(plan).value();
  }
  if (any_error) return 1;

  // The output files are claimed and created only once the plans hold: a configuration error
  // leaves no empty results file behind.
  std::string path = *base;
  if (!cli::template_is_per_process(config.output.file)) {
    const char* first = config.output.formats.empty() ? "_results.db" : "";
    std::string suffix = first;
    if (suffix.empty()) {
      switch (config.output.formats.front()) {
        case cli::OutputFormat::kSqlite: suffix = "_results.db"; break;
        case cli::OutputFormat::kCsv: suffix = "_counter_collection.csv"; break;
        case cli::OutputFormat::kJson:
          suffix = config.output.gzip ? "_results.json.gz" : "_results.json";
          break;
        case cli::OutputFormat::kPerfetto:
          suffix = config.output.gzip ? "_trace.json.gz" : "_trace.json";
          break;
      }
    }
    auto claimed = cli::claim_output_base(path, suffix, ctx.pid);
    if (!claimed.ok()) {
      KR_ERROR("{}", claimed.status().message());
      return 1;
    }
    path = *claimed;
  }
  output::OutputConfig oc;
  auto slash = path.rfind('/');
  oc.directory = slash == std::string::npos ? "" : path.substr(0, slash);
  oc.file_stem = slash == std::string::npos ? path : path.substr(slash + 1);
  for (auto fmt_ : config.output.formats) oc.formats.emplace_back(cli::to_string(fmt_));
  oc.summary = config.output.summary;
  oc.gzip_trace = config.output.gzip;
  oc.kernel_trace = config.output.kernel_trace;
  oc.pass_services = std::any_of(config.passes.begin(), config.passes.end(), [](const auto& p) {
    return p.kind != cli::PassKind::kCounters && p.kind != cli::PassKind::kTiming;
  });
  auto w = output::make_writer(oc);
  if (!w.ok()) {
    KR_ERROR("{}", w.status().message());
    return 1;
  }
  writer_ = std::move(w).value();
  outputs_ = writer_->output_files();

  {
    std::lock_guard lock(mu_);
    Status s = writer_->begin(run);
    for (const auto& a : agent_list) {
      output::DeviceRecord d;
      d.agent_id = a.id.handle;
      d.type = agent_type(a.type);
      d.device_index = a.device_index;
      d.name = a.name ? a.name : "";
      d.chip = a.chip_name ? a.chip_name : "";
      d.uuid = a.uuid;
      d.memory_bytes = a.memory_bytes;
      d.multiprocessor_count = a.multiprocessor_count;
      d.cc_major = a.compute_capability_major;
      d.cc_minor = a.compute_capability_minor;
      if (s.ok()) s = writer_->device(d);
    }
    if (!s.ok()) KR_ERROR("{}", s.message());
  }

  // Contexts. Counting runs whenever counters are asked for; dispatch tracing only with
  // --kernel-trace (it makes every launch wait for its completion).
  const kreplay_callback_tracing_kind_t replay_kind =
      range_mode() ? KREPLAY_CALLBACK_TRACING_RANGE_REPLAY : KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY;
  if (kreplay_create_context(&replay_ctx) != KREPLAY_STATUS_SUCCESS ||
      kreplay_configure_callback_tracing_service(replay_ctx, replay_kind, nullptr, 0,
                                                 range_mode() ? range_cb : replay_cb,
                                                 nullptr) != KREPLAY_STATUS_SUCCESS) {
    KR_ERROR("cannot subscribe to {} replay: {}", range_mode() ? "range" : "kernel",
             kreplay_get_last_error_message());
    return 1;
  }
  if (range_mode()) {
    kreplay_range_replay_options_t ro{};
    ro.size = sizeof(ro);
    ro.marker = config.range_markers.c_str();
    if (kreplay_configure_range_replay_options(&ro) != KREPLAY_STATUS_SUCCESS) {
      KR_ERROR("{}", kreplay_get_last_error_message());
      return 1;
    }
  }
  kreplay_create_context(&misc_ctx);
  kreplay_configure_callback_tracing_service(misc_ctx, KREPLAY_CALLBACK_TRACING_CODE_OBJECT,
                                             nullptr, 0, trace_cb, nullptr);
  kreplay_configure_callback_tracing_service(misc_ctx, KREPLAY_CALLBACK_TRACING_MEMORY_ALLOCATION,
                                             nullptr, 0, trace_cb, nullptr);
  kreplay_start_context(misc_ctx);
  bool want_counters = false;
  for (const auto& [agent, plan] : plans_) want_counters |= !plan.counters.empty();
  if (want_counters) {
    kreplay_create_context(&count_ctx);
    kreplay_configure_dispatch_counting_service(count_ctx, counting_cb, nullptr, record_cb, nullptr);
    kreplay_start_context(count_ctx);
    counting = true;
  }
  if (counting) services_.push_back(make_context_service(cli::PassKind::kCounters, count_ctx));
  for (auto& service : make_services(config)) {
    if (Status st = service->configure(config, *this); !st.ok()) {
      KR_ERROR("{}", st.message());
      return 1;
    }
    services_.push_back(std::move(service));
  }
  // Range passes are waited for anyway: their per-launch times come from dispatch tracing.
  // So is a single run with no counter pass (no counters at all, or a timing pass first): only
  // the dispatch trace tells its start and end.
  bool need_times = false;
  for (const auto& [agent, plan] : plans_) {
    need_times |= plan.rotation.empty() &&
                  (plan.passes.empty() || plan.passes.front().kind != PlannedPass::Kind::kCounters);
  }
  if (config.output.kernel_trace || range_mode() || need_times) {
    tracing = true;
    kreplay_create_context(&trace_ctx);
    uint32_t op = KREPLAY_KERNEL_DISPATCH_EXECUTE;
    kreplay_configure_callback_tracing_service(trace_ctx, KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH,
                                               &op, 1, trace_cb, nullptr);
    kreplay_start_context(trace_ctx);
  }
  kreplay_kernel_replay_options_t opts{};
  opts.size = sizeof(opts);
  opts.snapshot_scope = config.replay_memory == cli::ReplayMemory::kArgs
                            ? KREPLAY_SNAPSHOT_SCOPE_ARGS
                            : KREPLAY_SNAPSHOT_SCOPE_ALL;
  opts.graph_profiling = config.graph_profiling == cli::GraphProfiling::kGraph
                             ? KREPLAY_GRAPH_PROFILING_GRAPH
                             : KREPLAY_GRAPH_PROFILING_NODE;
  opts.cache_control = config.cache_control == cli::CacheControl::kNone
                           ? KREPLAY_CACHE_CONTROL_FLUSH_NONE
                           : KREPLAY_CACHE_CONTROL_FLUSH_ALL;
  opts.check_divergence = config.check_divergence ? 1 : 0;
  kreplay_configure_kernel_replay_options(&opts);
  kreplay_start_context(replay_ctx);

  install_signal_handlers(mu_, [] { Profiler::get().finalize(true); });
  progress_ = std::thread([this] { progress_loop(); });
  return 0;
}

const AgentPlan* Profiler::plan_for(uint64_t agent) {
  auto it = plans_.find(agent);
  return it == plans_.end() ? nullptr : &it->second;
}

uint64_t Profiler::pass_count_of(const kreplay_kernel_dispatch_info_t& info) {
  std::lock_guard lock(mu_);
  auto it = dispatches_.find(info.dispatch_id);
  if (it == dispatches_.end() || !it->second.plan) return 1;
  return it->second.plan->passes.size();
}

void Profiler::write_kernel_locked(const kreplay_kernel_dispatch_info_t& info) {
  if (!kernels_written_.insert(info.kernel_id).second) return;
  output::KernelRecord k;
  k.kernel_id = info.kernel_id;
  k.agent_id = info.agent_id.handle;
  auto co = kernel_code_object_.find(info.kernel_id);
  k.code_object_id = co == kernel_code_object_.end() ? 0 : co->second;
  k.mangled_name = info.mangled_name ? info.mangled_name : "";
  k.demangled_name = info.kernel_name ? info.kernel_name : "";
  if (Status s = writer_->kernel(k); !s.ok()) KR_WARN("{}", s.message());
}

void Profiler::on_config_enter(kreplay_callback_tracing_kernel_replay_data_t& p) {
  const auto& info = p.dispatch_info;
  tl_range_launch_id = info.dispatch_id;
  launches_.fetch_add(1, std::memory_order_relaxed);
  bool selected = filter->selects_everything() ||
                  filter->select(info.kernel_name ? info.kernel_name : "",
                                 info.mangled_name ? info.mangled_name : "");
  std::lock_guard lock(mu_);
  Dispatch& d = dispatches_[info.dispatch_id];
  d.selected = selected;
  if (!selected) {
    not_selected_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  d.plan = plan_for(info.agent_id.handle);
  if (d.plan && !d.plan->rotation.empty()) {
    uint64_t n = ++launches_per_agent_[info.agent_id.handle];
    uint64_t interval = std::max<uint64_t>(1, config.rotation.interval);
    d.rotation_config = d.plan->rotation[((n - 1) / interval) % d.plan->rotation.size()];
  }
  if (d.plan && d.plan->passes.size() > 1) p.replay_pass_count = &pass_count_cb;
  write_kernel_locked(info);
}

void Profiler::on_config_exit(const kreplay_callback_tracing_kernel_replay_data_t& p,
                              uint64_t correlation_id) {
  const auto& info = p.dispatch_info;
  const auto* o = p.outcome;
  std::lock_guard lock(mu_);
  auto it = dispatches_.find(info.dispatch_id);
  if (it == dispatches_.end()) return;
  Dispatch& d = it->second;
  if (o) {
    if (o->outcome == KREPLAY_REPLAY_OUTCOME_REPLAYED) {
      replayed_.fetch_add(1, std::memory_order_relaxed);
      d.replayed = true;
    } else if (o->outcome == KREPLAY_REPLAY_OUTCOME_DECLINED) {
      declined_.fetch_add(1, std::memory_order_relaxed);
      ++declined_by_reason_[reason_name(o->reason)];
    }
    if (o->size >= KREPLAY_STRUCT_SIZE(kreplay_replay_outcome_record_t, divergence_checked) &&
        o->diverged_passes > 0) {
      divergence_.add(info.kernel_name ? info.kernel_name : "");
    }
    if (o->outcome == KREPLAY_REPLAY_OUTCOME_REPLAYED)
      passes_.fetch_add(o->passes_executed, std::memory_order_relaxed);
    else
      passes_.fetch_add(1, std::memory_order_relaxed);
  }
  if (!d.selected && !config.output.kernel_trace) {
    dispatches_.erase(it);
    return;
  }
  auto& r = d.record;
  fill_launch(r, info, correlation_id);
  r.graph_id = p.graph_id;
  r.graph_node = p.graph_node;
  if (o) {
    r.outcome = outcome_name(o->outcome);
    r.reason = reason_name(o->reason);
    r.passes_requested = o->passes_requested;
    r.passes_executed = o->passes_executed;
    r.bytes_snapshotted = o->bytes_snapshotted;
    r.bytes_restored = o->bytes_restored;
    r.snapshot_ns = o->snapshot_ns;
    r.restore_ns = o->restore_ns;
    write_phases_locked(r, o->intervals, o->interval_count);
  }
  d.record_ready = true;
  // A replayed dispatch is complete now. One that runs once completes when its counters or its
  // trace arrive; without either there is nothing more to learn.
  bool more_to_come = !d.replayed && ((counting && (d.plan && !d.plan->passes.empty() &&
                                                    d.plan->passes[0].kind ==
                                                        PlannedPass::Kind::kCounters)) ||
                                      d.rotation_config != 0 || tracing);
  if (!more_to_come) finish_dispatch_locked(info.dispatch_id);
}

uint64_t Profiler::range_pass_count(const kreplay_range_info_t& info) {
  std::lock_guard lock(mu_);
  const AgentPlan* plan = plan_for(info.agent_id.handle);
  return plan ? std::max<uint64_t>(1, plan->passes.size()) : 1;
}

void Profiler::on_range_config_enter(kreplay_callback_tracing_range_replay_data_t& p) {
  std::lock_guard lock(mu_);
  const AgentPlan* plan = plan_for(p.range.agent_id.handle);
  // Every range gets a pass count, even 1: a range of one pass runs without a snapshot, but its
  // launches still share one counter session.
  if (plan) p.replay_pass_count = &range_pass_count_cb;
}

void Profiler::on_range_launch(kreplay_callback_tracing_range_replay_data_t& p,
                               uint64_t correlation_id) {
  const auto& info = p.dispatch_info;
  tl_range_launch_id = info.dispatch_id;
  launches_.fetch_add(1, std::memory_order_relaxed);
  bool selected = filter->selects_everything() ||
                  filter->select(info.kernel_name ? info.kernel_name : "",
                                 info.mangled_name ? info.mangled_name : "");
  p.launch_selected = selected ? 1 : 0;
  std::lock_guard lock(mu_);
  if (!selected) {
    not_selected_.fetch_add(1, std::memory_order_relaxed);
    if (!config.output.kernel_trace) return;
  }
  Dispatch& d = dispatches_[info.dispatch_id];
  d.selected = selected;
  d.replayed = true;  // in a range: completes when the range closes
  d.plan = plan_for(info.agent_id.handle);
  auto& r = d.record;
  fill_launch(r, info, correlation_id);
  r.graph_id = p.graph_id;
  r.graph_node = p.graph_node;
  write_kernel_locked(info);
}

void Profiler::on_range_pass(const kreplay_callback_tracing_range_replay_data_t& p, bool enter) {
  tl_pass = nullptr;
  if (!enter) return;
  std::lock_guard lock(mu_);
  const AgentPlan* plan = plan_for(p.range.agent_id.handle);
  if (plan == nullptr || p.current_pass >= plan->passes.size()) return;
  tl_pass = &plan->passes[p.current_pass];
  set_services_for_pass(*tl_pass, p.replay_start_context, p.replay_stop_context);
}

void Profiler::on_range_config_exit(const kreplay_callback_tracing_range_replay_data_t& p) {
  const auto* o = p.outcome;
  if (o == nullptr) return;
  std::lock_guard lock(mu_);
  // The tally counts the selected launches as replayed or declined (the others are counted as not
  // selected when they join the range); passes count every execution of every launch, as in
  // kernel replay.
  uint64_t selected = 0;
  for (uint64_t i = 0; i < o->launches; ++i) {
    auto it = dispatches_.find(o->dispatch_ids[i]);
    if (it != dispatches_.end() && it->second.selected) ++selected;
  }
  if (o->outcome == KREPLAY_REPLAY_OUTCOME_REPLAYED) {
    replayed_.fetch_add(selected, std::memory_order_relaxed);
    passes_.fetch_add(o->launches * o->passes_executed, std::memory_order_relaxed);
  } else {
    passes_.fetch_add(o->launches, std::memory_order_relaxed);
    if (o->outcome == KREPLAY_REPLAY_OUTCOME_DECLINED && selected > 0) {
      declined_.fetch_add(selected, std::memory_order_relaxed);
      declined_by_reason_[reason_name(o->reason)] += selected;
    }
  }
  bool phases_booked = false;
  for (uint64_t i = 0; i < o->launches; ++i) {
    auto it = dispatches_.find(o->dispatch_ids[i]);
    if (it == dispatches_.end()) continue;
    auto& r = it->second.record;
    r.outcome = outcome_name(o->outcome);
    r.reason = reason_name(o->reason);
    r.passes_requested = o->passes_requested;
    r.passes_executed = o->passes_executed;
    // The range's snapshot and restores are shared by its launches: they are booked on the first
    // launch the outputs keep.
    if (!phases_booked) {
      phases_booked = true;
      r.bytes_snapshotted = o->bytes_snapshotted;
      r.bytes_restored = o->bytes_restored;
      r.snapshot_ns = o->snapshot_ns;
      r.restore_ns = o->restore_ns;
      write_phases_locked(r, o->intervals, o->interval_count);
    }
    it->second.record_ready = true;
    finish_dispatch_locked(o->dispatch_ids[i]);
  }
}

void Profiler::fill_launch(output::DispatchRecord& r, const kreplay_kernel_dispatch_info_t& info,
                           uint64_t correlation_id) const {
  r.dispatch_id = info.dispatch_id;
  r.correlation_id = correlation_id;
  r.agent_id = info.agent_id.handle;
  r.stream_id = info.stream_id.handle;
  r.kernel_id = info.kernel_id;
  r.grid = {info.grid_size.x, info.grid_size.y, info.grid_size.z};
  r.block = {info.block_size.x, info.block_size.y, info.block_size.z};
  r.cluster = {info.cluster_size.x, info.cluster_size.y, info.cluster_size.z};
  r.dynamic_shared_bytes = info.dynamic_shared_memory_bytes;
  r.static_shared_bytes = info.static_shared_memory_bytes;
  r.registers = info.registers_per_thread;
  r.thread_id = thread_id();
  r.app_pass = record_app_pass();
}

void Profiler::write_phases_locked(const output::DispatchRecord& r,
                                   const kreplay_replay_interval_t* intervals, uint64_t count) {
  for (uint64_t i = 0; i < count; ++i) {
    const auto& iv = intervals[i];
    output::ReplayPhaseRecord ph;
    ph.dispatch_id = r.dispatch_id;
    ph.agent_id = r.agent_id;
    ph.stream_id = r.stream_id;
    ph.phase = iv.kind == KREPLAY_REPLAY_INTERVAL_SNAPSHOT ? "snapshot" : "restore";
    ph.after_pass = iv.after_pass;
    ph.start_ns = iv.start_timestamp;
    ph.end_ns = iv.end_timestamp;
    ph.bytes = iv.bytes;
    ph.app_pass = r.app_pass;
    if (Status s = writer_->replay_phase(ph); !s.ok()) KR_WARN("{}", s.message());
  }
}

void Profiler::finish_dispatch_locked(uint64_t id) {
  auto it = dispatches_.find(id);
  if (it == dispatches_.end()) return;
  if (it->second.record_ready) {
    if (Status s = writer_->dispatch(it->second.record); !s.ok()) KR_WARN("{}", s.message());
  }
  dispatches_.erase(it);
}

void Profiler::on_pass_enter(const kreplay_callback_tracing_kernel_replay_data_t& p) {
  tl_pass = nullptr;
  std::lock_guard lock(mu_);
  auto it = dispatches_.find(p.dispatch_info.dispatch_id);
  if (it == dispatches_.end() || !it->second.plan) return;
  it->second.replayed = true;
  const auto& passes = it->second.plan->passes;
  if (p.current_pass >= passes.size()) return;
  tl_pass = &passes[p.current_pass];
  set_services_for_pass(*tl_pass, p.replay_start_context, p.replay_stop_context);
}

void Profiler::on_pass_exit(const kreplay_callback_tracing_kernel_replay_data_t& p) {
  tl_pass = nullptr;
  std::lock_guard lock(mu_);
  auto it = dispatches_.find(p.dispatch_info.dispatch_id);
  if (it == dispatches_.end()) return;
  if (p.end_timestamp == 0) return;  // the pass did not complete
  extend_span(it->second.record, p.start_timestamp, p.end_timestamp);
  if (tracing) return;  // the trace writes pass records
  write_pass_locked(p.dispatch_info, p.current_pass, p.start_timestamp, p.end_timestamp);
}

void Profiler::write_pass_locked(const kreplay_kernel_dispatch_info_t& info, uint64_t pass,
                                 uint64_t start, uint64_t end) {
  output::PassRecord pr;
  if (auto it = dispatches_.find(info.dispatch_id); it != dispatches_.end()) {
    if (auto s = it->second.counter_status.find(pass); s != it->second.counter_status.end())
      pr.counter_status = s->second;
  }
  pr.dispatch_id = info.dispatch_id;
  pr.replay_pass = pass;
  pr.agent_id = info.agent_id.handle;
  pr.stream_id = info.stream_id.handle;
  pr.start_ns = start;
  pr.end_ns = end;
  pr.app_pass = record_app_pass();
  if (Status s = writer_->pass(pr); !s.ok()) KR_WARN("{}", s.message());
}

const PlannedPass* Profiler::pass_of(const kreplay_kernel_dispatch_info_t& info, uint64_t pass) {
  const PlannedPass* current = tl_pass;
  std::lock_guard lock(mu_);
  auto it = dispatches_.find(info.dispatch_id);
  if (it == dispatches_.end() || !it->second.selected) return nullptr;
  const Dispatch& d = it->second;
  if (current == nullptr && d.plan && !d.plan->passes.empty() && pass == 0)
    current = &d.plan->passes[0];  // a single run runs pass 0's service
  return current;
}

void Profiler::on_samples(cli::PassKind kind, const kreplay_pass_service_data_t& data,
                          const kreplay_pass_service_record_t* records, size_t count) {
  std::lock_guard lock(mu_);
  ServiceTally& t = service_tally_[kind];
  if (data.status != KREPLAY_STATUS_SUCCESS) {
    ++t.refused;
    t.why = data.status_message ? data.status_message : "";
    return;
  }
  ++t.passes;
  t.records += count;
  output::ServiceSampleRecord o;
  o.service = std::string(cli::to_string(kind));
  o.app_pass = record_app_pass();
  for (size_t i = 0; i < count; ++i) {
    const auto& r = records[i];
    o.dispatch_id = r.dispatch_id;
    o.replay_pass = r.replay_pass;
    o.agent_id = r.agent_id.handle;
    o.kernel_id = r.kernel_id;
    o.function = r.function ? r.function : "";
    o.pc_offset = r.pc_offset;
    o.instruction = r.instruction ? r.instruction : "";
    o.source_file = r.source_file ? r.source_file : "";
    o.source_line = r.source_line;
    o.name = r.name ? r.name : "";
    o.timestamp_ns = r.timestamp;
    o.value = r.value;
    if (Status s = writer_->service_sample(o); !s.ok()) KR_WARN("{}", s.message());
  }
}

uint64_t Profiler::pick_config(const kreplay_dispatch_counting_data_t& data) {
  const PlannedPass* pass = tl_pass;
  std::lock_guard lock(mu_);
  auto it = dispatches_.find(data.dispatch_info.dispatch_id);
  if (it == dispatches_.end() || !it->second.selected) return 0;
  const Dispatch& d = it->second;
  if (d.rotation_config != 0) {
    it->second.counter_status.try_emplace(data.replay_pass, "ok");
    return d.rotation_config;
  }
  if (pass == nullptr && d.plan && !d.plan->passes.empty() && data.replay_pass == 0)
    pass = &d.plan->passes[0];  // a single run (not replayed, or declined) runs pass 0's service
  if (pass == nullptr || pass->kind != PlannedPass::Kind::kCounters) return 0;
  it->second.counter_status.try_emplace(data.replay_pass, "ok");
  return pass->config;
}

std::string Profiler::counter_name(uint64_t id) {
  auto it = counter_names_.find(id);
  if (it != counter_names_.end()) return it->second;
  kreplay_counter_info_t info{};
  info.size = sizeof(info);
  std::string name = kreplay_query_counter_info({id}, &info) == KREPLAY_STATUS_SUCCESS && info.name
                         ? info.name
                         : fmt::format("counter{}", id);
  counter_names_.emplace(id, name);
  return name;
}

void Profiler::on_counters(const kreplay_dispatch_counting_data_t& data,
                           const kreplay_counter_record_t* records, size_t n) {
  std::lock_guard lock(mu_);
  uint32_t app_pass = record_app_pass();
  if (data.size >= KREPLAY_STRUCT_SIZE(kreplay_dispatch_counting_data_t, status_message) &&
      data.status != KREPLAY_STATUS_SUCCESS) {
    // The counters of this pass were lost: its pass record says so and the summary counts it.
    ++counter_passes_lost_;
    auto it = dispatches_.find(data.dispatch_info.dispatch_id);
    if (it != dispatches_.end()) it->second.counter_status[data.replay_pass] = "lost";
  }
  for (size_t i = 0; i < n; ++i) {
    output::CounterRecord c;
    c.dispatch_id = records[i].dispatch_id;
    c.replay_pass = records[i].replay_pass;
    c.agent_id = records[i].agent_id.handle;
    c.kernel_id = data.dispatch_info.kernel_id;
    c.name = counter_name(records[i].counter_id.handle);
    c.value = records[i].value;
    c.app_pass = app_pass;
    if (Status s = writer_->counter(c); !s.ok()) KR_WARN("{}", s.message());
  }
  auto it = dispatches_.find(data.dispatch_info.dispatch_id);
  if (range_mode() || it == dispatches_.end() || it->second.replayed) return;
  // A single run: its pass and its dispatch are complete with these values.
  auto& r = it->second.record;
  r.start_ns = data.start_timestamp;
  r.end_ns = data.end_timestamp;
  if (!tracing) {
    write_pass_locked(data.dispatch_info, data.replay_pass, data.start_timestamp,
                      data.end_timestamp);
    finish_dispatch_locked(data.dispatch_info.dispatch_id);
  }
}

void Profiler::on_trace(const kreplay_callback_tracing_kernel_dispatch_data_t& p, bool exit) {
  if (!exit) {
    // Range mode sees a launch through RANGE_REPLAY only when it joins a range (LAUNCH comes just
    // before this ENTER, on this thread). One that runs outside any range (outside the markers,
    // or a graph launch) is tallied here: declined for a graph, otherwise not selected.
    if (range_mode() && p.replay_pass == 0 && p.dispatch_info.dispatch_id != tl_range_launch_id) {
      launches_.fetch_add(1, std::memory_order_relaxed);
      passes_.fetch_add(1, std::memory_order_relaxed);  // it runs once, as in kernel replay
      // (Graph launches are ranges of their own, declined ones included: the range outcome
      // counts them.)
      const uint32_t flags = p.dispatch_info.flags;
      kreplay_decline_reason_t why = KREPLAY_DECLINE_REASON_NONE;
      if (flags & KREPLAY_DISPATCH_FLAG_COLLECTIVE) {
        why = KREPLAY_DECLINE_REASON_COLLECTIVE;
      } else if (flags & KREPLAY_DISPATCH_FLAG_DEVICE_HEAP) {
        why = KREPLAY_DECLINE_REASON_DEVICE_HEAP;
      }
      if (why != KREPLAY_DECLINE_REASON_NONE) {
        std::lock_guard lock(mu_);
        declined_.fetch_add(1, std::memory_order_relaxed);
        ++declined_by_reason_[reason_name(why)];
      } else {
        not_selected_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    return;
  }
  std::lock_guard lock(mu_);
  auto it = dispatches_.find(p.dispatch_info.dispatch_id);
  if (it == dispatches_.end()) return;  // a dispatch the tool did not keep
  write_kernel_locked(p.dispatch_info);
  write_pass_locked(p.dispatch_info, p.replay_pass, p.start_timestamp, p.end_timestamp);
  extend_span(it->second.record, p.start_timestamp, p.end_timestamp);
  if (!range_mode() && !it->second.replayed && it->second.record_ready)
    finish_dispatch_locked(p.dispatch_info.dispatch_id);
}

void Profiler::on_code_object(const kreplay_callback_tracing_code_object_data_t& p,
                              kreplay_callback_phase_t phase, uint32_t op) {
  if (op != KREPLAY_CODE_OBJECT_KERNEL_SYMBOL_REGISTER || phase != KREPLAY_CALLBACK_PHASE_ENTER)
    return;
  std::lock_guard lock(mu_);
  kernel_code_object_[p.kernel_id] = p.code_object_id;
}

void Profiler::on_memory(const kreplay_callback_tracing_memory_allocation_data_t& p, uint32_t op) {
  std::lock_guard lock(mu_);
  if (!writer_ || finished_) return;
  output::AllocationRecord a;
  a.agent_id = p.agent_id.handle;
  a.operation = op == KREPLAY_MEMORY_ALLOCATION_FREE ? "free" : "alloc";
  a.kind = memory_kind_name(p.memory_kind);
  a.address = p.address;
  a.size = p.allocation_size;
  a.timestamp_ns = p.timestamp;
  a.app_pass = record_app_pass();
  if (Status s = writer_->allocation(a); !s.ok()) KR_WARN("{}", s.message());
}

void Profiler::progress_loop() {
  uint64_t next = start_ns_ + 2000000000ull;
  TerminalProgress line(TerminalProgress::wanted());  // on a terminal only (tool/progress.hpp)
  std::unique_lock lock(progress_mu_);
  while (!stop_progress_) {
    progress_cv_.wait_for(lock, std::chrono::milliseconds(200));
    if (stop_progress_) break;
    uint64_t now = now_ns();
    line.update(now - start_ns_, {launches_.load(), replayed_.load(), passes_.load(),
                                  declined_.load(), not_selected_.load()});
    if (now < next) continue;
    next = now + 2000000000ull;
    std::lock_guard wlock(mu_);
    if (writer_ && !finished_) (void)writer_->flush();
  }
}

void Profiler::finalize(bool from_signal) {
  {
    std::lock_guard lock(progress_mu_);
    stop_progress_ = true;
  }
  progress_cv_.notify_all();
  if (!from_signal && progress_.joinable()) progress_.join();

  std::unique_lock lock(mu_, std::defer_lock);
  if (from_signal) {
    // The signal may have interrupted a thread holding the lock: do not wait forever.
    for (int i = 0; i < 100 && !lock.try_lock(); ++i) usleep(10000);
    if (!lock.owns_lock()) return;
  } else {
    lock.lock();
  }
  if (finished_ || !writer_) return;
  finished_ = true;
  // Dispatches still waiting for their completion (e.g. the process exits mid-launch).
  std::vector<uint64_t> pending;
  for (const auto& [id, d] : dispatches_) pending.push_back(id);
  for (uint64_t id : pending) finish_dispatch_locked(id);
  output::RunSummary sum;
  sum.end_ns = now_ns();
  sum.launches = launches_.load();
  sum.replayed = replayed_.load();
  sum.declined = declined_.load();
  sum.not_selected = not_selected_.load();
  sum.passes = passes_.load();
  sum.declined_by_reason = declined_by_reason_;
  sum.counter_passes_lost = counter_passes_lost_;
  sum.exit_code = from_signal ? -1 : 0;
  if (Status s = writer_->finish(sum); !s.ok()) KR_ERROR("{}", s.message());

  std::string declined;
  for (const auto& [reason, n] : declined_by_reason_) {
    declined += fmt::format("{}{}: {}", declined.empty() ? " (" : ", ", reason, n);
  }
  if (!declined.empty()) declined += ")";
  KR_NOTICE("{} launches: {} replayed ({} passes), {} declined{}, {} not selected{}",
         sum.launches, sum.replayed, sum.passes, sum.declined, declined, sum.not_selected,
         sum.counter_passes_lost == 0
             ? std::string()
             : fmt::format("; the counters of {} passes were lost (counter_status 'lost' in the "
                           "passes table)",
                           sum.counter_passes_lost));
  if (std::string line = divergence_.line(); !line.empty()) KR_WARN("{}", line);
  for (const auto& [kind, t] : service_tally_) {
    KR_NOTICE("{}: {} records from {} passes{}", cli::to_string(kind), t.records, t.passes,
              t.refused == 0 ? std::string()
                             : fmt::format("; {} passes collected nothing: {}", t.refused, t.why));
  }
  for (const auto& f : outputs_) KR_NOTICE("output: {}", f);
}

// A configuration the user got wrong (a counter that does not exist, a group that does not fit, an
// output location that cannot be written) stops the application before it does any work, with the
// one-line error initialize() printed and exit status 2, as a command-line tool would: profiling
// it with part of the request silently missing would waste the run.
int tool_init(kreplay_client_finalize_t, void*) {
  int rc = Profiler::get().initialize();
  if (rc != 0) {
    std::fflush(stderr);
    _exit(2);
  }
  return rc;
}
void tool_fini(void*) { Profiler::get().finalize(false); }

}  // namespace
}  // namespace kreplay::tool

extern "C" __attribute__((visibility("default"))) kreplay_tool_configure_result_t* kreplay_configure(
    uint32_t, const char*, uint32_t, kreplay_client_id_t* id) {
  using kreplay::tool::Profiler;
  auto cfg = kreplay::cli::load_tool_config_from_env();
  if (!cfg.ok()) {
    if (cfg.status().code() != KREPLAY_STATUS_ERROR_NOT_AVAILABLE)
      KR_ERROR("kreplay tool: {}", cfg.status().message());
    return nullptr;  // not run by the kreplay command, or a broken config: do not load
  }
  Profiler::get().config = std::move(cfg).value();
  id->name = "kreplay";
  static kreplay_tool_configure_result_t result{sizeof(result), &kreplay::tool::tool_init,
                                                &kreplay::tool::tool_fini, nullptr};
  return &result;
}
