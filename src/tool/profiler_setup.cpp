// Profiler::initialize: run metadata, devices, pass plans, and the SDK services the tool uses.
#include <fmt/format.h>
#include <unistd.h>

#include <cstring>

#include "common/logging.hpp"
#include "common/util.hpp"
#include "config/output_path.hpp"
#include "tool/profiler.hpp"
#include "tool/progress.hpp"

namespace kreplay::tool {

// ---- Profiler ---------------------------------------------------------------------------------

std::string agent_type(kreplay_agent_type_t t) {
  return t == KREPLAY_AGENT_TYPE_CUDA_GPU ? "cuda" : "host";
}

// A per-pass service (PC sampling, SASS metrics, PM sampling) among the passes.
bool has_pass_services(const config::ToolConfig& config) {
  return std::any_of(config.passes.begin(), config.passes.end(), [](const auto& p) {
    return p.kind != config::PassKind::kCounters && p.kind != config::PassKind::kTiming;
  });
}

int Profiler::initialize() {
  note_tool_started();
  start_ns_ = now_ns();
  if (log::level() == log::Level::kWarning) {
    log::Level l;
    if (log::parse_level(config.log_level, &l)) log::set_level(l);
  }
  auto f = config::KernelFilter::Create(config.filters);
  if (!f.ok()) {
    KR_ERROR("{}", f.status().message());
    return 1;
  }
  filter.emplace(std::move(f).value());
  markers.emplace(config.filters);

  // Outputs: expanded in this (the application's) process, so %pid% names the application.
  auto ctx = config::ExpansionContext::current();
  auto base = config::output_base_path(config.output, ctx);
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
  run.rank = config::mpi_rank(ctx);
  run.local_rank = config::local_rank(ctx);
  run.start_ns = start_ns_;
  run.start_unix_ns = static_cast<int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                               std::chrono::system_clock::now().time_since_epoch())
                                               .count());
  run.replay_mode = std::string(config::to_string(config.replay_mode));
  run.app_pass = config.replay_mode == config::ReplayMode::kApplication && config.app_pass_count > 1
                     ? config.app_pass
                     : 0;
  run.app_pass_count = run.app_pass ? config.app_pass_count : 0;
  for (const char* var :
       {"KREPLAY_TOOL_LIBRARIES", "CUDA_INJECTION64_PATH", "LD_PRELOAD", "CUDA_VISIBLE_DEVICES",
        "KREPLAY_REPLAY_MEMORY", "KREPLAY_LOG_LEVEL", "KREPLAY_CACHE_CONTROL"}) {
    if (const char* v = std::getenv(var)) run.environment[var] = v;  // NOLINT: read-only
  }
  run.options["replay_memory"] = std::string(config::to_string(config.replay_memory));
  run.options["graph_profiling"] = std::string(config::to_string(config.graph_profiling));
  run.options["cache_control"] = std::string(config::to_string(config.cache_control));
  run.options["snapshot"] = std::string(config::to_string(config.snapshot));
  run.options["clock_control"] = "none";  // kreplay never changes clocks
  run.options["check_divergence"] = config.check_divergence ? "true" : "false";
  run.options["origin"] = config.origin;
  // Whether the CSV output has a _pass_services.csv (kreplay convert writes the same files).
  run.options["pass_services"] = has_pass_services(config) ? "true" : "false";
  std::vector<kreplay_agent_t> agent_list;
  for (size_t i = 0; i < agents; ++i) {
    kreplay_agent_t a{};
    a.size = sizeof(a);
    if (kreplay_query_agent(i, &a) == KREPLAY_STATUS_SUCCESS) agent_list.push_back(a);
  }
  bool any_error = false;
  for (const auto& a : agent_list) {
    auto make =
        [&](const std::vector<std::string>& names) -> Result<std::pair<uint64_t, uint64_t>> {
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
      if (std::find(run.counter_names.begin(), run.counter_names.end(), n) ==
          run.counter_names.end())
        run.counter_names.push_back(n);
    }
    plans_[a.id.handle] = std::move(plan).value();
  }
  if (any_error) return 1;

  // The output files are claimed and created only once the plans hold: a configuration error
  // leaves no empty results file behind.
  std::string path = *base;
  if (!config::template_is_per_process(config.output.file)) {
    const char* first = config.output.formats.empty() ? "_results.db" : "";
    std::string suffix = first;
    if (suffix.empty()) {
      switch (config.output.formats.front()) {
        case config::OutputFormat::kSqlite:
          suffix = "_results.db";
          break;
        case config::OutputFormat::kCsv:
          suffix = "_counter_collection.csv";
          break;
        case config::OutputFormat::kJson:
          suffix = config.output.gzip ? "_results.json.gz" : "_results.json";
          break;
        case config::OutputFormat::kPerfetto:
          suffix = config.output.gzip ? "_trace.json.gz" : "_trace.json";
          break;
      }
    }
    auto claimed = config::claim_output_base(path, suffix, ctx.pid);
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
  for (auto fmt_ : config.output.formats) oc.formats.emplace_back(config::to_string(fmt_));
  oc.summary = config.output.summary;
  oc.gzip_trace = config.output.gzip;
  oc.kernel_trace = config.output.kernel_trace;
  oc.pass_services = has_pass_services(config);
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
      device_index_[a.id.handle] = a.device_index;
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
  if (!markers->subscribe(range_mode())) return 1;
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
    kreplay_configure_dispatch_counting_service(count_ctx, counting_cb, nullptr, record_cb,
                                                nullptr);
    kreplay_start_context(count_ctx);
    counting = true;
  }
  if (counting) services_.push_back(make_context_service(config::PassKind::kCounters, count_ctx));
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
  opts.snapshot_scope = config.replay_memory == config::ReplayMemory::kArgs
                            ? KREPLAY_SNAPSHOT_SCOPE_ARGS
                            : KREPLAY_SNAPSHOT_SCOPE_ALL;
  opts.graph_profiling = config.graph_profiling == config::GraphProfiling::kGraph
                             ? KREPLAY_GRAPH_PROFILING_GRAPH
                             : KREPLAY_GRAPH_PROFILING_NODE;
  opts.cache_control = config.cache_control == config::CacheControl::kNone
                           ? KREPLAY_CACHE_CONTROL_FLUSH_NONE
                           : KREPLAY_CACHE_CONTROL_FLUSH_ALL;
  opts.check_divergence = config.check_divergence ? 1 : 0;
  opts.snapshot_mode = config.snapshot == config::SnapshotMode::kFull       ? KREPLAY_SNAPSHOT_MODE_FULL
                       : config.snapshot == config::SnapshotMode::kWriteSet ? KREPLAY_SNAPSHOT_MODE_WRITE_SET
                                                                            : KREPLAY_SNAPSHOT_MODE_AUTO;
  kreplay_configure_kernel_replay_options(&opts);
  kreplay_start_context(replay_ctx);

  install_signal_handlers(mu_, [] { Profiler::get().finalize(true); });
  progress_ = std::thread([this] { progress_loop(); });
  return 0;
}

}  // namespace kreplay::tool
