// services_per_pass: counters, PC sampling and SASS metrics on the same launches, one pass each.
//
// Instruction-level services perturb each other and the counters, so each gets a pass of its
// own (include/kreplay/services.h; two on one pass are refused with SERVICE_CONFLICT):
//
//   pass 1   dispatch counting: threads_launched and ops
//   pass 2   PC sampling: samples per instruction and stall reason
//   pass 3   SASS metrics: exact executions per instruction
//
// Four contexts, all started globally in initialize; PASS ENTER switches the three service
// contexts with the local calls (replay_start_context / replay_stop_context), which every service
// obeys. On the host device:
//
//   ... services_per_pass dispatch 1 scale_add: 3 passes
//   ... services_per_pass dispatch 1 pass 1/3 counters: threads_launched=1024 ops=2000
//   ... services_per_pass dispatch 1 pass 2/3 pc_sampling: samples=437 instructions=4
//   top=main.cpp:54 LDG.E.32 long_scoreboard
//   ... services_per_pass dispatch 1 pass 3/3 sass_metrics: thread_inst_executed=4001
//   instructions=4 top=main.cpp:54 LDG.E.32
// (every line starts with ==KREPLAY-SAMPLE==). A service an agent does not have is left out with
// one line, and the launches get one pass fewer; so are the counters where no agent has
// threads_launched and ops (the host device's names: on CUDA the sample runs PC sampling and SASS
// metrics, two passes).
//
// Run it:
//   export KREPLAY_TOOL_LIBRARIES=build/lib/libkreplay_sample_services_per_pass.so
//   build/bin/kreplay-sample-app
#include <kreplay/kreplay.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

constexpr const char* kTag = "==KREPLAY-SAMPLE== services_per_pass";
constexpr uint32_t kPeriodLog2 = 5;  // a PC sample every 32 cycles

enum Service { kCounters, kPcSampling, kSassMetrics, kServiceCount };
constexpr const char* kNames[kServiceCount] = {"counters", "pc_sampling", "sass_metrics"};

kreplay_context_id_t g_replay_ctx{}, g_ctx[kServiceCount]{};
bool g_have[kServiceCount] = {};
std::vector<Service> g_passes;  // pass i runs g_passes[i]; set in initialize, read-only after
std::map<uint64_t, kreplay_counter_config_id_t> g_config;  // agent -> counter config

bool ok(kreplay_status_t s, const char* what) {
  if (s == KREPLAY_STATUS_SUCCESS) return true;
  std::fprintf(stderr, "%s: %s failed: %s: %s\n", kTag, what, kreplay_get_status_name(s),
               kreplay_get_last_error_message());
  return false;
}

uint64_t pass_count(kreplay_kernel_dispatch_info_t, kreplay_user_data_t) {
  return g_passes.size();
}

void on_kernel_replay(kreplay_callback_tracing_record_t record, kreplay_user_data_t*, void*) {
  auto* payload = static_cast<kreplay_callback_tracing_kernel_replay_data_t*>(record.payload);
  if (record.operation == KREPLAY_KERNEL_REPLAY_CONFIG) {
    if (record.phase == KREPLAY_CALLBACK_PHASE_ENTER) {
      payload->replay_pass_count = pass_count;
      std::printf("%s dispatch %" PRIu64 " %s: %zu passes\n", kTag,
                  payload->dispatch_info.dispatch_id, payload->dispatch_info.kernel_name,
                  g_passes.size());
    }
    return;
  }
  if (record.phase != KREPLAY_CALLBACK_PHASE_ENTER || payload->current_pass >= g_passes.size())
    return;
  // PASS ENTER: this pass's service on, the others off (for this loop only).
  for (int s = 0; s < kServiceCount; ++s) {
    if (!g_have[s]) continue;
    kreplay_status_t st = g_passes[payload->current_pass] == s
                              ? payload->replay_start_context(g_ctx[s])
                              : payload->replay_stop_context(g_ctx[s]);
    ok(st, "switch a service for the pass");
  }
}

void pick_counters(const kreplay_dispatch_counting_data_t* data,
                   kreplay_counter_config_id_t* config, kreplay_user_data_t*, void*) {
  auto it = g_config.find(data->dispatch_info.agent_id.handle);
  if (it != g_config.end()) *config = it->second;
}

void print_counters(const kreplay_dispatch_counting_data_t* data,
                    const kreplay_counter_record_t* records, size_t count, kreplay_user_data_t,
                    void*) {
  std::string line;
  for (size_t i = 0; i < count; ++i) {
    kreplay_counter_info_t info{};
    info.size = sizeof(info);
    const char* name = "?";
    if (kreplay_query_counter_info(records[i].counter_id, &info) == KREPLAY_STATUS_SUCCESS)
      name = info.name;
    char text[96];
    std::snprintf(text, sizeof(text), " %s=%.15g", name, records[i].value);
    line += text;
  }
  std::printf("%s dispatch %" PRIu64 " pass %" PRIu64 "/%zu counters:%s\n", kTag,
              data->dispatch_info.dispatch_id, data->replay_pass + 1, g_passes.size(),
              line.c_str());
}

const char* base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

// One line per pass and service: the total, the instructions seen and the top instruction.
void print_service(const kreplay_pass_service_data_t* data,
                   const kreplay_pass_service_record_t* records, size_t count, void*) {
  const char* name = kreplay_get_pass_service_name(data->kind);
  if (data->status != KREPLAY_STATUS_SUCCESS) {
    std::printf("%s dispatch %" PRIu64 " pass %" PRIu64 "/%zu %s: not collected: %s\n", kTag,
                data->dispatch_info.dispatch_id, data->replay_pass + 1, g_passes.size(), name,
                data->status_message);
    return;
  }
  const bool sass = data->kind == KREPLAY_PASS_SERVICE_SASS_METRICS;
  double total = 0, top_value = -1;
  const kreplay_pass_service_record_t* top = nullptr;
  std::map<uint64_t, double> per_pc;
  for (size_t i = 0; i < count; ++i) {
    const auto& r = records[i];
    if (sass && std::strcmp(r.name, "smsp__sass_thread_inst_executed") != 0) continue;
    total += r.value;
    per_pc[r.pc_offset] += r.value;
    if (per_pc[r.pc_offset] > top_value) {
      top_value = per_pc[r.pc_offset];
      top = &r;
    }
  }
  std::string where = "none";
  if (top != nullptr) {
    where = std::string(base_name(top->source_file)) + ":" + std::to_string(top->source_line) +
            " " + top->instruction + (sass ? "" : std::string(" ") + top->name);
  }
  std::printf("%s dispatch %" PRIu64 " pass %" PRIu64 "/%zu %s: %s=%.15g instructions=%zu top=%s\n",
              kTag, data->dispatch_info.dispatch_id, data->replay_pass + 1, g_passes.size(), name,
              sass ? "thread_inst_executed" : "samples", total, per_pc.size(), where.c_str());
}

// A service this build cannot run on some agent is left out with one line; any other failure
// fails initialize.
bool optional_service(kreplay_status_t s, Service which) {
  if (s == KREPLAY_STATUS_SUCCESS) {
    g_have[which] = true;
    return true;
  }
  if (s == KREPLAY_STATUS_ERROR_NOT_AVAILABLE) {
    std::printf("%s: %s left out: %s\n", kTag, kNames[which], kreplay_get_last_error_message());
    return true;
  }
  return ok(s, kNames[which]);
}

int tool_initialize(kreplay_client_finalize_t, void*) {
  bool good = ok(kreplay_create_context(&g_replay_ctx), "create replay context") &&
              ok(kreplay_configure_callback_tracing_service(g_replay_ctx,
                                                            KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY,
                                                            nullptr, 0, on_kernel_replay, nullptr),
                 "subscribe KERNEL_REPLAY");
  for (auto& c : g_ctx) good = good && ok(kreplay_create_context(&c), "create context");
  if (!good) return -1;

  // Counters: threads_launched and ops where the agent has them.
  size_t agents = 0;
  kreplay_get_agent_count(&agents);
  for (size_t a = 0; a < agents; ++a) {
    kreplay_agent_t agent{};
    agent.size = sizeof(agent);
    if (kreplay_query_agent(a, &agent) != KREPLAY_STATUS_SUCCESS) continue;
    const char* names[] = {"threads_launched", "ops"};
    kreplay_counter_config_id_t config{};
    if (kreplay_create_counter_config(agent.id, names, 2, &config) == KREPLAY_STATUS_SUCCESS)
      g_config[agent.id.handle] = config;
  }
  if (!g_config.empty()) {
    good = ok(kreplay_configure_dispatch_counting_service(g_ctx[kCounters], pick_counters, nullptr,
                                                          print_counters, nullptr),
              "configure dispatch counting");
    g_have[kCounters] = good;
  }
  kreplay_pc_sampling_config_t pc{};
  pc.size = sizeof(pc);
  pc.period_log2 = kPeriodLog2;
  good = good &&
         optional_service(kreplay_configure_pc_sampling_service(g_ctx[kPcSampling], &pc, nullptr,
                                                                nullptr, print_service, nullptr),
                          kPcSampling);
  kreplay_sass_metrics_config_t sass{};
  sass.size = sizeof(sass);  // no metrics named: the default per-instruction set
  good = good &&
         optional_service(kreplay_configure_sass_metrics_service(
                              g_ctx[kSassMetrics], &sass, nullptr, nullptr, print_service, nullptr),
                          kSassMetrics);
  if (!good) return -1;
  for (int s = 0; s < kServiceCount; ++s) {
    if (!g_have[s]) continue;
    g_passes.push_back(static_cast<Service>(s));
    good = good && ok(kreplay_start_context(g_ctx[s]), "start a service context");
  }
  std::printf("%s: %zu passes per launch\n", kTag, g_passes.size());
  return good && ok(kreplay_start_context(g_replay_ctx), "start replay") ? 0 : -1;
}

}  // namespace

extern "C" kreplay_tool_configure_result_t* kreplay_configure(uint32_t, const char*, uint32_t,
                                                              kreplay_client_id_t* client_id) {
  static kreplay_tool_configure_result_t result{sizeof(result), tool_initialize, nullptr, nullptr};
  client_id->name = "kreplay-sample-services_per_pass";
  return &result;
}
