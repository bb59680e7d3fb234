// The extern "C" entry points. Each is thin: validate, call the runtime, convert. No exception
// leaves this file (an exception escaping an injected library would kill the application), and a
// failing call leaves its details in kreplay_get_last_error_message().
#include <algorithm>
#include <cstring>
#include <exception>
#include <mutex>
#include <set>
#include <string>

#include "common/logging.hpp"
#include "common/util.hpp"
#include "device/service.hpp"
#include "kreplay/kreplay.h"
#include "sdk/pass_services.hpp"
#include "sdk/runtime.hpp"

namespace {

using kreplay::Status;
using kreplay::sdk::Runtime;

// The last error of the calling thread. A plain array, not a std::string: a tool may call the API
// from an exit handler (finalize), after the main thread's thread-local destructors ran, and an
// array has none to run.
constexpr size_t kMaxErrorBytes = 1024;
thread_local char tl_last_error[kMaxErrorBytes];

void set_error(std::string_view message) {
  const size_t n = std::min(message.size(), kMaxErrorBytes - 1);
  if (n > 0) std::memcpy(tl_last_error, message.data(), n);
  tl_last_error[n] = '\0';
}

kreplay_status_t report(const Status& s) {
  set_error(s.ok() ? std::string_view() : std::string_view(s.message()));
  return s.code();
}

template <typename Fn>
kreplay_status_t firewall(Fn&& fn) noexcept {
  try {
    tl_last_error[0] = '\0';
    return fn();
  } catch (const std::bad_alloc&) {
    set_error("out of memory");
    return KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES;
  } catch (const std::exception& e) {
    set_error(std::string("internal error: ") + e.what());
    KR_ERROR("{}", static_cast<const char*>(tl_last_error));
    return KREPLAY_STATUS_ERROR_INTERNAL;
  } catch (...) {
    set_error("internal error");
    return KREPLAY_STATUS_ERROR_INTERNAL;
  }
}

kreplay_status_t fail(kreplay_status_t code, std::string message) {
  set_error(message);
  return code;
}

struct StatusInfo {
  const char* name;
  const char* text;
};

constexpr StatusInfo kStatus[] = {
    {"KREPLAY_STATUS_SUCCESS", "success"},
    {"KREPLAY_STATUS_ERROR", "unspecified error"},
    {"KREPLAY_STATUS_ERROR_INVALID_ARGUMENT", "an argument is NULL, out of range or malformed"},
    {"KREPLAY_STATUS_ERROR_CONTEXT_NOT_FOUND", "the context id names no context"},
    {"KREPLAY_STATUS_ERROR_CONTEXT_ERROR",
     "context control is only allowed during PASS ENTER of a replay loop"},
    {"KREPLAY_STATUS_ERROR_CONTEXT_NOT_STARTED",
     "the context was not active when the replay loop began"},
    {"KREPLAY_STATUS_ERROR_CONTEXT_INVALID", "the context's configuration cannot be started"},
    {"KREPLAY_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED",
     "the service allows one subscriber and already has one"},
    {"KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED",
     "services can only be configured during a tool's initialize function"},
    {"KREPLAY_STATUS_ERROR_KIND_NOT_FOUND", "unknown callback tracing kind"},
    {"KREPLAY_STATUS_ERROR_OPERATION_NOT_FOUND", "unknown operation for the tracing kind"},
    {"KREPLAY_STATUS_ERROR_AGENT_NOT_FOUND", "the agent id or index names no agent"},
    {"KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND", "a counter is unknown on the agent"},
    {"KREPLAY_STATUS_ERROR_EXCEEDS_HW_LIMIT", "the counter group does not fit the hardware"},
    {"KREPLAY_STATUS_ERROR_CONFIG_NOT_FOUND", "the counter config id names no config"},
    {"KREPLAY_STATUS_ERROR_INCOMPATIBLE_ABI", "a struct's size is smaller than its first version"},
    {"KREPLAY_STATUS_ERROR_NOT_AVAILABLE", "not available on this agent or backend"},
    {"KREPLAY_STATUS_ERROR_NOT_INITIALIZED", "the SDK is not initialized yet"},
    {"KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES", "memory or another resource ran out"},
    {"KREPLAY_STATUS_ERROR_INTERNAL", "internal error in kreplay"},
    {"KREPLAY_STATUS_ERROR_DEVICE_FAULT", "the work failed on the device (a fault or an assert)"},
    {"KREPLAY_STATUS_ERROR_SERVICE_CONFLICT",
     "services that cannot share a pass were both on it; none of them collected on that pass"},
};
static_assert(sizeof(kStatus) / sizeof(kStatus[0]) == KREPLAY_STATUS_LAST,
              "every status code needs a name and a description");

const char* kind_name(kreplay_callback_tracing_kind_t kind) {
  switch (kind) {
    case KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH: return "KERNEL_DISPATCH";
    case KREPLAY_CALLBACK_TRACING_CODE_OBJECT: return "CODE_OBJECT";
    case KREPLAY_CALLBACK_TRACING_MEMORY_ALLOCATION: return "MEMORY_ALLOCATION";
    case KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY: return "KERNEL_REPLAY";
    case KREPLAY_CALLBACK_TRACING_RANGE_REPLAY: return "RANGE_REPLAY";
    case KREPLAY_CALLBACK_TRACING_MARKER: return "MARKER";
    default: return nullptr;
  }
}

const char* operation_name(kreplay_callback_tracing_kind_t kind, uint32_t op) {
  switch (kind) {
    case KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH:
      return op == KREPLAY_KERNEL_DISPATCH_EXECUTE ? "EXECUTE" : nullptr;
    case KREPLAY_CALLBACK_TRACING_CODE_OBJECT:
      if (op == KREPLAY_CODE_OBJECT_LOAD) return "LOAD";
      if (op == KREPLAY_CODE_OBJECT_KERNEL_SYMBOL_REGISTER) return "KERNEL_SYMBOL_REGISTER";
      return nullptr;
    case KREPLAY_CALLBACK_TRACING_MEMORY_ALLOCATION:
      if (op == KREPLAY_MEMORY_ALLOCATION_ALLOCATE) return "ALLOCATE";
      if (op == KREPLAY_MEMORY_ALLOCATION_FREE) return "FREE";
      return nullptr;
    case KREPLAY_CALLBACK_TRACING_MARKER:
      switch (op) {
        case KREPLAY_MARKER_RANGE_PUSH: return "RANGE_PUSH";
        case KREPLAY_MARKER_RANGE_POP: return "RANGE_POP";
        case KREPLAY_MARKER_RANGE_START: return "RANGE_START";
        case KREPLAY_MARKER_RANGE_END: return "RANGE_END";
        case KREPLAY_MARKER_PROFILER_START: return "PROFILER_START";
        case KREPLAY_MARKER_PROFILER_STOP: return "PROFILER_STOP";
        default: return nullptr;
      }
    case KREPLAY_CALLBACK_TRACING_RANGE_REPLAY:
      switch (op) {
        case KREPLAY_RANGE_REPLAY_CONFIG: return "CONFIG";
        case KREPLAY_RANGE_REPLAY_PASS: return "PASS";
        case KREPLAY_RANGE_REPLAY_LAUNCH: return "LAUNCH";
        default: return nullptr;
      }
    case KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY:
      switch (op) {
        case KREPLAY_KERNEL_REPLAY_CONFIG: return "CONFIG";
        case KREPLAY_KERNEL_REPLAY_PASS: return "PASS";
        case KREPLAY_KERNEL_REPLAY_SNAPSHOT: return "SNAPSHOT";
        case KREPLAY_KERNEL_REPLAY_RESTORE: return "RESTORE";
        default: return nullptr;
      }
    default: return nullptr;
  }
}

}  // namespace

extern "C" {

const char* kreplay_get_status_name(kreplay_status_t status) {
  if (status < 0 || status >= KREPLAY_STATUS_LAST) return nullptr;
  return kStatus[status].name;
}

const char* kreplay_get_status_string(kreplay_status_t status) {
  if (status < 0 || status >= KREPLAY_STATUS_LAST) return nullptr;
  return kStatus[status].text;
}

const char* kreplay_get_last_error_message(void) { return tl_last_error; }

const char* kreplay_get_replay_outcome_name(kreplay_replay_outcome_t outcome) {
  switch (outcome) {
    case KREPLAY_REPLAY_OUTCOME_NONE: return "none";
    case KREPLAY_REPLAY_OUTCOME_NOT_REQUESTED: return "not_requested";
    case KREPLAY_REPLAY_OUTCOME_REPLAYED: return "replayed";
    case KREPLAY_REPLAY_OUTCOME_DECLINED: return "declined";
    default: return nullptr;
  }
}

const char* kreplay_get_decline_reason_name(kreplay_decline_reason_t reason) {
  switch (reason) {
    case KREPLAY_DECLINE_REASON_NONE: return "";
    case KREPLAY_DECLINE_REASON_INVALID_PLAN: return "invalid_plan";
    case KREPLAY_DECLINE_REASON_SNAPSHOT_TOO_LARGE: return "snapshot_too_large";
    case KREPLAY_DECLINE_REASON_DRAIN_TIMEOUT: return "drain_timeout";
    case KREPLAY_DECLINE_REASON_REENTRANT_LAUNCH: return "reentrant_launch";
    case KREPLAY_DECLINE_REASON_STREAM_CAPTURE: return "stream_capture";
    case KREPLAY_DECLINE_REASON_GRAPH_LAUNCH: return "graph_launch";
    case KREPLAY_DECLINE_REASON_COLLECTIVE: return "collective";
    case KREPLAY_DECLINE_REASON_UNTRACKED_MEMORY: return "untracked_memory";
    case KREPLAY_DECLINE_REASON_SNAPSHOT_FAILED: return "snapshot_failed";
    case KREPLAY_DECLINE_REASON_LAUNCH_FAILED: return "launch_failed";
    case KREPLAY_DECLINE_REASON_PASS_TIMEOUT: return "pass_timeout";
    case KREPLAY_DECLINE_REASON_NOTHING_SELECTED: return "nothing_selected";
    case KREPLAY_DECLINE_REASON_DEVICE_HEAP: return "device_heap";
    case KREPLAY_DECLINE_REASON_GRAPH_HOST_NODE: return "graph_host_node";
    case KREPLAY_DECLINE_REASON_GRAPH_DEVICE_LAUNCH: return "graph_device_launch";
    case KREPLAY_DECLINE_REASON_GRAPH_MEMORY: return "graph_memory";
    case KREPLAY_DECLINE_REASON_WAITS_FOR_HOST: return "waits_for_host";
    case KREPLAY_DECLINE_REASON_PEER_MEMORY: return "peer_memory";
    case KREPLAY_DECLINE_REASON_WRITE_SET_UNKNOWN: return "write_set_unknown";
    default: return nullptr;
  }
}

const char* kreplay_get_range_close_reason_name(kreplay_range_close_reason_t reason) {
  switch (reason) {
    case KREPLAY_RANGE_CLOSE_NONE: return "";
    case KREPLAY_RANGE_CLOSE_SYNCHRONIZE: return "synchronize";
    case KREPLAY_RANGE_CLOSE_MEMORY: return "memory";
    case KREPLAY_RANGE_CLOSE_OTHER_STREAM: return "other_stream";
    case KREPLAY_RANGE_CLOSE_OTHER_THREAD: return "other_thread";
    case KREPLAY_RANGE_CLOSE_MARKER: return "marker";
    case KREPLAY_RANGE_CLOSE_LAUNCH_LIMIT: return "launch_limit";
    case KREPLAY_RANGE_CLOSE_GRAPH: return "graph";
    case KREPLAY_RANGE_CLOSE_MODULE: return "module";
    case KREPLAY_RANGE_CLOSE_EXIT: return "exit";
    case KREPLAY_RANGE_CLOSE_OTHER: return "other";
    case KREPLAY_RANGE_CLOSE_SIGNAL: return "signal";
    case KREPLAY_RANGE_CLOSE_WRITE_SET: return "write_set";
    default: return nullptr;
  }
}

kreplay_status_t kreplay_get_version(uint32_t* major, uint32_t* minor, uint32_t* patch) {
  if (major) *major = KREPLAY_VERSION_MAJOR;
  if (minor) *minor = KREPLAY_VERSION_MINOR;
  if (patch) *patch = KREPLAY_VERSION_PATCH;
  return KREPLAY_STATUS_SUCCESS;
}

kreplay_status_t kreplay_get_timestamp(kreplay_timestamp_t* timestamp) {
  if (timestamp == nullptr) return fail(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "timestamp is NULL");
  *timestamp = kreplay::now_ns();
  return KREPLAY_STATUS_SUCCESS;
}

kreplay_status_t kreplay_create_context(kreplay_context_id_t* context_id) {
  return firewall([&] {
    if (context_id == nullptr)
      return fail(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "context_id is NULL");
    auto r = Runtime::get().registry().create_context();
    if (!r.ok()) return report(r.status());
    *context_id = *r;
    return KREPLAY_STATUS_SUCCESS;
  });
}

kreplay_status_t kreplay_start_context(kreplay_context_id_t context_id) {
  return firewall([&] { return report(Runtime::get().registry().start(context_id.handle)); });
}

kreplay_status_t kreplay_stop_context(kreplay_context_id_t context_id) {
  return firewall([&] { return report(Runtime::get().registry().stop(context_id.handle)); });
}

kreplay_status_t kreplay_context_is_active(kreplay_context_id_t context_id, int* status) {
  return firewall([&] {
    if (status == nullptr) return fail(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "status is NULL");
    auto* c = Runtime::get().registry().find(context_id.handle);
    if (c == nullptr) return fail(KREPLAY_STATUS_ERROR_CONTEXT_NOT_FOUND, "no such context");
    *status = c->active.load() ? 1 : 0;
    return KREPLAY_STATUS_SUCCESS;
  });
}

kreplay_status_t kreplay_context_is_valid(kreplay_context_id_t context_id, int* status) {
  return firewall([&] {
    if (status == nullptr) return fail(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "status is NULL");
    *status = Runtime::get().registry().find(context_id.handle) != nullptr ? 1 : 0;
    return KREPLAY_STATUS_SUCCESS;
  });
}

kreplay_status_t kreplay_configure_callback_tracing_service(kreplay_context_id_t context_id,
                                                            kreplay_callback_tracing_kind_t kind,
                                                            const uint32_t* operations,
                                                            size_t operations_count,
                                                            kreplay_callback_tracing_cb_t callback,
                                                            void* callback_args) {
  return firewall([&] {
    return report(Runtime::get().registry().configure_callback(
        context_id.handle, kind, operations, operations_count, callback, callback_args));
  });
}

kreplay_status_t kreplay_query_callback_tracing_kind_name(kreplay_callback_tracing_kind_t kind,
                                                          const char** name) {
  if (name == nullptr) return fail(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "name is NULL");
  const char* n = kind_name(kind);
  if (n == nullptr) return fail(KREPLAY_STATUS_ERROR_KIND_NOT_FOUND, "unknown kind");
  *name = n;
  return KREPLAY_STATUS_SUCCESS;
}

kreplay_status_t kreplay_query_callback_tracing_kind_operation_name(
    kreplay_callback_tracing_kind_t kind, uint32_t operation, const char** name) {
  if (name == nullptr) return fail(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "name is NULL");
  if (kind_name(kind) == nullptr) return fail(KREPLAY_STATUS_ERROR_KIND_NOT_FOUND, "unknown kind");
  const char* n = operation_name(kind, operation);
  if (n == nullptr) return fail(KREPLAY_STATUS_ERROR_OPERATION_NOT_FOUND, "unknown operation");
  *name = n;
  return KREPLAY_STATUS_SUCCESS;
}

kreplay_status_t kreplay_configure_kernel_replay_options(
    const kreplay_kernel_replay_options_t* options) {
  return firewall([&] {
    if (options == nullptr) return fail(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "options is NULL");
    return report(Runtime::get().set_replay_options(*options));
  });
}

kreplay_status_t kreplay_query_replay_storage(kreplay_agent_id_t agent_id,
                                              kreplay_replay_storage_t* storage) {
  return firewall([&] {
    if (storage == nullptr || storage->size < sizeof(kreplay_replay_storage_t))
      return fail(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                  "storage is NULL or its size is smaller than kreplay_replay_storage_t");
    kreplay_replay_storage_t out{};
    out.size = sizeof(out);
    if (!Runtime::get().engine().replay_storage(agent_id.handle, &out))
      return fail(KREPLAY_STATUS_ERROR_AGENT_NOT_FOUND, "no such agent");
    *storage = out;
    return KREPLAY_STATUS_SUCCESS;
  });
}

kreplay_status_t kreplay_configure_range_replay_options(
    const kreplay_range_replay_options_t* options) {
  return firewall([&] {
    if (options == nullptr) return fail(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "options is NULL");
    return report(Runtime::get().set_range_options(*options));
  });
}

kreplay_status_t kreplay_range_replay_close_open(uint64_t timeout_ms, uint64_t* open_launches) {
  return firewall([&] {
    return report(Runtime::get().engine().close_open_ranges(KREPLAY_RANGE_CLOSE_SIGNAL, timeout_ms,
                                                            open_launches));
  });
}

kreplay_status_t kreplay_range_replay_close_at_marker(void) {
  return firewall([&] {
    auto& engine = Runtime::get().engine();
    if (kreplay::replay::Engine::in_range_machinery() || kreplay::replay::Engine::in_window()) {
      return fail(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                  "ranges cannot be closed from inside kreplay's own replay");
    }
    engine.range_barrier(0, KREPLAY_RANGE_CLOSE_MARKER);
    return KREPLAY_STATUS_SUCCESS;
  });
}

kreplay_status_t kreplay_get_agent_count(size_t* count) {
  return firewall([&] {
    if (count == nullptr) return fail(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "count is NULL");
    *count = Runtime::get().agent_count();
    return KREPLAY_STATUS_SUCCESS;
  });
}

namespace {
kreplay_status_t copy_agent(const kreplay::sdk::AgentEntry* e, kreplay_agent_t* agent) {
  if (agent == nullptr) return fail(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "agent is NULL");
  if (e == nullptr) return fail(KREPLAY_STATUS_ERROR_AGENT_NOT_FOUND, "no such agent");
  if (agent->size < KREPLAY_AGENT_V1_SIZE) {
    return fail(KREPLAY_STATUS_ERROR_INCOMPATIBLE_ABI,
                "agent->size is smaller than KREPLAY_AGENT_V1_SIZE; set agent->size = "
                "sizeof(kreplay_agent_t)");
  }
  size_t n = std::min<size_t>(agent->size, sizeof(kreplay_agent_t));
  std::memcpy(agent, &e->desc, n);
  agent->size = n;
  return KREPLAY_STATUS_SUCCESS;
}
}  // namespace

kreplay_status_t kreplay_query_agent(size_t index, kreplay_agent_t* agent) {
  return firewall([&] { return copy_agent(Runtime::get().agent_by_index(index), agent); });
}

kreplay_status_t kreplay_query_agent_by_id(kreplay_agent_id_t agent_id, kreplay_agent_t* agent) {
  return firewall([&] { return copy_agent(Runtime::get().agent(agent_id.handle), agent); });
}

kreplay_status_t kreplay_iterate_agent_counters(kreplay_agent_id_t agent_id,
                                                kreplay_agent_counters_cb_t callback,
                                                void* user_data) {
  return firewall([&] {
    if (callback == nullptr) return fail(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "callback is NULL");
    auto& rt = Runtime::get();
    const auto* a = rt.agent(agent_id.handle);
    if (a == nullptr) return fail(KREPLAY_STATUS_ERROR_AGENT_NOT_FOUND, "no such agent");
    auto list = rt.counters().list(agent_id.handle, a->device);
    if (!list.ok()) return report(list.status());
    callback(agent_id, list->data(), list->size(), user_data);
    return KREPLAY_STATUS_SUCCESS;
  });
}

kreplay_status_t kreplay_query_counter_info(kreplay_counter_id_t counter_id,
                                            kreplay_counter_info_t* info) {
  return firewall([&] {
    if (info == nullptr) return fail(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "info is NULL");
    if (info->size < KREPLAY_COUNTER_INFO_V1_SIZE)
      return fail(KREPLAY_STATUS_ERROR_INCOMPATIBLE_ABI, "info->size is too small");
    const auto* e = Runtime::get().counters().counter(counter_id.handle);
    if (e == nullptr) return fail(KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND, "no such counter");
    size_t n = std::min<size_t>(info->size, sizeof(kreplay_counter_info_t));
    std::memcpy(info, &e->info, n);
    info->size = n;
    return KREPLAY_STATUS_SUCCESS;
  });
}

kreplay_status_t kreplay_create_counter_config(kreplay_agent_id_t agent_id,
                                               const char* const* counter_names, size_t count,
                                               kreplay_counter_config_id_t* config_id) {
  return firewall([&] {
    if (counter_names == nullptr || config_id == nullptr || count == 0)
      return fail(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                  "counter_names and config_id must be set and count > 0");
    auto& rt = Runtime::get();
    const auto* a = rt.agent(agent_id.handle);
    if (a == nullptr) return fail(KREPLAY_STATUS_ERROR_AGENT_NOT_FOUND, "no such agent");
    std::vector<std::string> names;
    for (size_t i = 0; i < count; ++i) {
      if (counter_names[i] == nullptr)
        return fail(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "a counter name is NULL");
      names.emplace_back(counter_names[i]);
    }
    auto r = rt.counters().create_config(agent_id.handle, a->device, names);
    if (!r.ok()) return report(r.status());
    config_id->handle = *r;
    return KREPLAY_STATUS_SUCCESS;
  });
}

kreplay_status_t kreplay_query_counter_config(kreplay_counter_config_id_t config_id,
                                              kreplay_counter_config_info_t* info) {
  return firewall([&] {
    if (info == nullptr) return fail(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "info is NULL");
    if (info->size < KREPLAY_STRUCT_SIZE(kreplay_counter_config_info_t, pass_count))
      return fail(KREPLAY_STATUS_ERROR_INCOMPATIBLE_ABI, "info->size is too small");
    const auto* c = Runtime::get().counters().config(config_id.handle);
    if (c == nullptr) return fail(KREPLAY_STATUS_ERROR_CONFIG_NOT_FOUND, "no such config");
    kreplay_counter_config_info_t out{};
    out.size = sizeof(out);
    out.agent_id.handle = c->agent;
    out.counter_count = c->counter_ids.size();
    out.pass_count = c->set->pass_count();
    size_t n = std::min<size_t>(info->size, sizeof(out));
    std::memcpy(info, &out, n);
    info->size = n;
    return KREPLAY_STATUS_SUCCESS;
  });
}

kreplay_status_t kreplay_configure_dispatch_counting_service(
    kreplay_context_id_t context_id, kreplay_dispatch_counting_cb_t dispatch_callback,
    void* dispatch_callback_args, kreplay_counter_record_cb_t record_callback,
    void* record_callback_args) {
  return firewall([&] {
    kreplay::sdk::CountingService s{dispatch_callback, dispatch_callback_args, record_callback,
                                    record_callback_args};
    return report(Runtime::get().registry().configure_counting(context_id.handle, s));
  });
}

const char* kreplay_get_pass_service_name(kreplay_pass_service_kind_t kind) {
  return kreplay::device::pass_service_name(kind);
}

namespace {

// @p text as a string that lives until the process ends (metric names and descriptions).
const char* interned(const std::string& text) {
  static std::mutex mu;
  static auto* strings = new std::set<std::string>();  // NOLINT: lives for the process
  std::lock_guard lock(mu);
  return strings->insert(text).first->c_str();
}

// The names of a settings struct's metrics; INVALID_ARGUMENT for a NULL list or name.
kreplay::Result<std::vector<std::string>> metric_names(const char* const* metrics, size_t count) {
  std::vector<std::string> out;
  if (count > 0 && metrics == nullptr)
    return kreplay::Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "metrics is NULL");
  for (size_t i = 0; i < count; ++i) {
    if (metrics[i] == nullptr || *metrics[i] == '\0')
      return kreplay::Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                            "metric " + std::to_string(i) + " is NULL or empty");
    out.emplace_back(metrics[i]);
  }
  return out;
}

kreplay_status_t configure_service(kreplay_context_id_t context_id,
                                   kreplay_pass_service_kind_t kind,
                                   kreplay::device::ServiceSettings settings,
                                   kreplay_pass_service_dispatch_cb_t dispatch_callback,
                                   void* dispatch_args, kreplay_pass_service_record_cb_t callback,
                                   void* args) {
  kreplay::sdk::PassServiceSub sub;
  sub.dispatch_callback = dispatch_callback;
  sub.dispatch_args = dispatch_args;
  sub.callback = callback;
  sub.args = args;
  return report(kreplay::sdk::configure_pass_service(Runtime::get(), context_id.handle, kind,
                                                     std::move(settings), std::move(sub)));
}

}  // namespace

kreplay_status_t kreplay_configure_pc_sampling_service(
    kreplay_context_id_t context_id, const kreplay_pc_sampling_config_t* config,
    kreplay_pass_service_dispatch_cb_t dispatch_callback, void* dispatch_callback_args,
    kreplay_pass_service_record_cb_t record_callback, void* record_callback_args) {
  return firewall([&] {
    if (config == nullptr) return fail(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "config is NULL");
    if (config->size < KREPLAY_PC_SAMPLING_CONFIG_V1_SIZE)
      return fail(KREPLAY_STATUS_ERROR_INCOMPATIBLE_ABI, "config->size is too small");
    kreplay::device::ServiceSettings s;
    s.period = config->period_log2;
    return configure_service(context_id, KREPLAY_PASS_SERVICE_PC_SAMPLING, std::move(s),
                             dispatch_callback, dispatch_callback_args, record_callback,
                             record_callback_args);
  });
}

kreplay_status_t kreplay_configure_sass_metrics_service(
    kreplay_context_id_t context_id, const kreplay_sass_metrics_config_t* config,
    kreplay_pass_service_dispatch_cb_t dispatch_callback, void* dispatch_callback_args,
    kreplay_pass_service_record_cb_t record_callback, void* record_callback_args) {
  return firewall([&] {
    if (config == nullptr) return fail(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "config is NULL");
    if (config->size < KREPLAY_SASS_METRICS_CONFIG_V1_SIZE)
      return fail(KREPLAY_STATUS_ERROR_INCOMPATIBLE_ABI, "config->size is too small");
    auto names = metric_names(config->metrics, config->metric_count);
    if (!names.ok()) return report(names.status());
    kreplay::device::ServiceSettings s;
    s.metrics = std::move(names).value();
    return configure_service(context_id, KREPLAY_PASS_SERVICE_SASS_METRICS, std::move(s),
                             dispatch_callback, dispatch_callback_args, record_callback,
                             record_callback_args);
  });
}

kreplay_status_t kreplay_configure_pm_sampling_service(
    kreplay_context_id_t context_id, const kreplay_pm_sampling_config_t* config,
    kreplay_pass_service_dispatch_cb_t dispatch_callback, void* dispatch_callback_args,
    kreplay_pass_service_record_cb_t record_callback, void* record_callback_args) {
  return firewall([&] {
    if (config == nullptr) return fail(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "config is NULL");
    if (config->size < KREPLAY_PM_SAMPLING_CONFIG_V1_SIZE)
      return fail(KREPLAY_STATUS_ERROR_INCOMPATIBLE_ABI, "config->size is too small");
    auto names = metric_names(config->metrics, config->metric_count);
    if (!names.ok()) return report(names.status());
    kreplay::device::ServiceSettings s;
    s.metrics = std::move(names).value();
    s.period = config->interval_ns;
    return configure_service(context_id, KREPLAY_PASS_SERVICE_PM_SAMPLING, std::move(s),
                             dispatch_callback, dispatch_callback_args, record_callback,
                             record_callback_args);
  });
}

kreplay_status_t kreplay_iterate_pass_service_metrics(kreplay_agent_id_t agent_id,
                                                      kreplay_pass_service_kind_t kind,
                                                      kreplay_pass_service_metrics_cb_t callback,
                                                      void* user_data) {
  return firewall([&] {
    if (callback == nullptr) return fail(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "callback is NULL");
    if (kreplay_get_pass_service_name(kind) == nullptr)
      return fail(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown per-pass service");
    const auto* a = Runtime::get().agent(agent_id.handle);
    if (a == nullptr || a->device == nullptr)
      return fail(KREPLAY_STATUS_ERROR_AGENT_NOT_FOUND, "no such agent");
    auto* svc = a->device->service(kind);
    if (svc == nullptr) {
      return fail(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                  std::string(kreplay_get_pass_service_name(kind)) +
                      " is not available on this agent in this build");
    }
    auto metrics = svc->metrics();
    std::vector<kreplay_pass_service_metric_t> out;
    for (const auto& m : metrics) {
      kreplay_pass_service_metric_t info{};
      info.size = sizeof(info);
      info.name = interned(m.name);
      info.description = interned(m.description);
      info.in_default_set = m.in_default_set ? 1 : 0;
      out.push_back(info);
    }
    callback(agent_id, kind, out.data(), out.size(), user_data);
    return KREPLAY_STATUS_SUCCESS;
  });
}

kreplay_status_t kreplay_force_configure(kreplay_configure_func_t configure_func) {
  return firewall([&] { return report(Runtime::get().force_configure(configure_func)); });
}

kreplay_status_t kreplay_is_initialized(int* status) {
  if (status == nullptr) return fail(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "status is NULL");
  *status = Runtime::get().initialized() ? 1 : 0;
  return KREPLAY_STATUS_SUCCESS;
}

kreplay_status_t kreplay_is_finalized(int* status) {
  if (status == nullptr) return fail(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "status is NULL");
  *status = Runtime::get().finalized() ? 1 : 0;
  return KREPLAY_STATUS_SUCCESS;
}

}  // extern "C"
