// counters_then_timing: hardware counters on passes 0..N-2, a clean timing pass last.
//
// Counters and timing disturb each other (collecting counters slows the kernel down), so a tool
// that wants both runs them on different passes of the same launch:
//
//   pass 1 .. N-1   the dispatch counting service, one counter group per pass
//   pass N          KERNEL_DISPATCH timing only, with no counters armed
//
// Three contexts, all started globally in initialize:
//   replay_ctx   KERNEL_REPLAY: plans the passes and switches the other two per pass
//   count_ctx    dispatch counting: picks the counter group of the pass, prints the values
//   timing_ctx   KERNEL_DISPATCH: prints the kernel time of the pass
//
// In PASS ENTER the tool calls payload->replay_stop_context / replay_start_context. These *local*
// switches apply to this replay loop only: they are sticky from one pass to the next, gone when the
// loop ends, and never change the global state that kreplay_start_context/kreplay_stop_context
// manage. So pass 1 stops timing_ctx (it stays stopped during the counter passes) and the last pass
// stops count_ctx and starts timing_ctx again.
//
// The counter groups are made per agent from what one pass of the agent can hold
// (kreplay_agent_t::counters_per_pass), and the pass count is "groups of this dispatch's agent
// + 1", the way the SDK documentation recommends. On the host device (2 counters per pass):
//
//   ... counters_then_timing dispatch 1 scale_add(...) grid 8x1x1 block 128x1x1: 3 passes
//   ... counters_then_timing dispatch 1 pass 1/3 counters: threads_launched=1024 bytes_written=4004
//   ... counters_then_timing dispatch 1 pass 2/3 counters: launches=1 ops=2000
//   ... counters_then_timing dispatch 1 pass 3/3 timing: 9912 ns
// (every line starts with ==KREPLAY-SAMPLE==)
//
// Run it:
//   export KREPLAY_TOOL_LIBRARIES=build/lib/libkreplay_sample_counters_then_timing.so
//   build/bin/kreplay-sample-app
//   (with KREPLAY_HOST_COUNTERS_PER_PASS=1 it becomes 4 counter passes + 1 timing pass)
#include <kreplay/kreplay.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace {

constexpr const char* kTag = "==KREPLAY-SAMPLE== counters_then_timing";

// The counters to collect, in the order they are split into groups.
const std::vector<std::string> kWanted = {"threads_launched", "bytes_written", "launches", "ops"};

struct Group {
  std::vector<std::string> names;
  kreplay_counter_config_id_t config{};
};

// Agent handle → its counter groups. Written in initialize, read-only afterwards (so callbacks on
// any thread may read it without a lock).
std::map<uint64_t, std::vector<Group>> g_groups;

kreplay_context_id_t g_replay_ctx{}, g_count_ctx{}, g_timing_ctx{};

// The pass plan of the loop running on this thread (set in PASS ENTER).
thread_local uint64_t t_total_passes = 0;

const std::vector<Group>* groups_of(kreplay_agent_id_t agent) {
  auto it = g_groups.find(agent.handle);
  return it == g_groups.end() ? nullptr : &it->second;
}

uint64_t pass_count(kreplay_kernel_dispatch_info_t info, kreplay_user_data_t) {
  const auto* groups = groups_of(info.agent_id);
  return groups == nullptr ? 1 : groups->size() + 1;  // 1: no groups here, do not replay
}

void report(kreplay_status_t s, const char* what) {
  if (s != KREPLAY_STATUS_SUCCESS)
    std::printf("%s error: %s: %s\n", kTag, what, kreplay_get_status_name(s));
}

void on_kernel_replay(kreplay_callback_tracing_record_t record, kreplay_user_data_t*, void*) {
  auto* payload = static_cast<kreplay_callback_tracing_kernel_replay_data_t*>(record.payload);
  const auto& info = payload->dispatch_info;
  if (record.operation == KREPLAY_KERNEL_REPLAY_CONFIG) {
    if (record.phase == KREPLAY_CALLBACK_PHASE_ENTER) {
      payload->replay_pass_count = pass_count;
      std::printf("%s dispatch %" PRIu64 " %s grid %ux%ux%u block %ux%ux%u: %" PRIu64 " passes\n",
                  kTag, info.dispatch_id, info.kernel_name, info.grid_size.x, info.grid_size.y,
                  info.grid_size.z, info.block_size.x, info.block_size.y, info.block_size.z,
                  pass_count(info, {}));
    } else if (payload->outcome->outcome != KREPLAY_REPLAY_OUTCOME_REPLAYED) {
      std::printf("%s dispatch %" PRIu64 " was not replayed (outcome %d, reason %d)\n", kTag,
                  info.dispatch_id, static_cast<int>(payload->outcome->outcome),
                  static_cast<int>(payload->outcome->reason));
    }
    return;
  }
  if (record.phase != KREPLAY_CALLBACK_PHASE_ENTER) return;

  // PASS ENTER: choose the services of this pass.
  t_total_passes = payload->total_passes;
  const uint64_t last = payload->total_passes - 1;
  if (payload->current_pass == 0) {
    report(payload->replay_stop_context(g_timing_ctx), "stop timing for the counter passes");
  }
  if (payload->current_pass == last) {
    report(payload->replay_stop_context(g_count_ctx), "stop counting for the timing pass");
    report(payload->replay_start_context(g_timing_ctx), "start timing for the last pass");
  }
}

// Dispatch counting, before each pass that count_ctx takes part in: pick this pass's group.
void pick_counters(const kreplay_dispatch_counting_data_t* data,
                   kreplay_counter_config_id_t* config, kreplay_user_data_t*, void*) {
  const auto* groups = groups_of(data->dispatch_info.agent_id);
  if (groups != nullptr && data->replay_pass < groups->size())
    *config = (*groups)[data->replay_pass].config;
}

// After the pass: the values of its group.
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
    char value[64];
    std::snprintf(value, sizeof(value), "%.15g", records[i].value);
    line += ' ';
    line += name;
    line += '=';
    line += value;
  }
  std::printf("%s dispatch %" PRIu64 " pass %" PRIu64 "/%" PRIu64 " counters:%s\n", kTag,
              data->dispatch_info.dispatch_id, data->replay_pass + 1, t_total_passes, line.c_str());
}

void print_timing(kreplay_callback_tracing_record_t record, kreplay_user_data_t*, void*) {
  if (record.phase != KREPLAY_CALLBACK_PHASE_EXIT) return;
  const auto* p =
      static_cast<const kreplay_callback_tracing_kernel_dispatch_data_t*>(record.payload);
  std::printf("%s dispatch %" PRIu64 " pass %" PRIu64 "/%" PRIu64 " timing: %" PRIu64 " ns\n", kTag,
              p->dispatch_info.dispatch_id, p->replay_pass + 1, t_total_passes,
              p->end_timestamp - p->start_timestamp);
}

bool ok(kreplay_status_t s, const char* what) {
  if (s == KREPLAY_STATUS_SUCCESS) return true;
  std::fprintf(stderr, "%s: %s failed: %s: %s\n", kTag, what, kreplay_get_status_name(s),
               kreplay_get_last_error_message());
  return false;
}

// Split kWanted into groups that fit one pass of each agent and make a counter config per group.
bool make_groups() {
  size_t agents = 0;
  if (!ok(kreplay_get_agent_count(&agents), "count agents")) return false;
  for (size_t a = 0; a < agents; ++a) {
    kreplay_agent_t agent{};
    agent.size = sizeof(agent);
    if (!ok(kreplay_query_agent(a, &agent), "query agent")) return false;
    // 0 means the backend schedules passes itself: one config with everything.
    const size_t per_pass = agent.counters_per_pass == 0 ? kWanted.size() : agent.counters_per_pass;
    std::vector<Group> groups;
    for (size_t i = 0; i < kWanted.size(); i += per_pass) {
      Group g;
      g.names.assign(
          kWanted.begin() + static_cast<std::ptrdiff_t>(i),
          kWanted.begin() + static_cast<std::ptrdiff_t>(std::min(i + per_pass, kWanted.size())));
      std::vector<const char*> names;
      for (const auto& n : g.names) names.push_back(n.c_str());
      if (!ok(kreplay_create_counter_config(agent.id, names.data(), names.size(), &g.config),
              "create counter config")) {
        return false;
      }
      groups.push_back(std::move(g));
    }
    std::string text;
    for (const auto& g : groups) {
      text += " [";
      for (size_t i = 0; i < g.names.size(); ++i) text += (i ? ", " : "") + g.names[i];
      text += ']';
    }
    std::printf("%s: agent %s: %zu counter groups%s, then a timing pass\n", kTag, agent.name,
                groups.size(), text.c_str());
    g_groups[agent.id.handle] = std::move(groups);
  }
  return true;
}

int tool_initialize(kreplay_client_finalize_t, void*) {
  if (!make_groups()) return -1;
  const uint32_t execute = KREPLAY_KERNEL_DISPATCH_EXECUTE;
  bool good = ok(kreplay_create_context(&g_replay_ctx), "create replay context") &&
              ok(kreplay_configure_callback_tracing_service(g_replay_ctx,
                                                            KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY,
                                                            nullptr, 0, on_kernel_replay, nullptr),
                 "subscribe KERNEL_REPLAY") &&
              ok(kreplay_create_context(&g_count_ctx), "create counting context") &&
              ok(kreplay_configure_dispatch_counting_service(g_count_ctx, pick_counters, nullptr,
                                                             print_counters, nullptr),
                 "configure dispatch counting") &&
              ok(kreplay_create_context(&g_timing_ctx), "create timing context") &&
              ok(kreplay_configure_callback_tracing_service(
                     g_timing_ctx, KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH, &execute, 1,
                     print_timing, nullptr),
                 "subscribe KERNEL_DISPATCH");
  // Local switches only mask contexts that were active when the loop began: start all three.
  good = good && ok(kreplay_start_context(g_count_ctx), "start counting") &&
         ok(kreplay_start_context(g_timing_ctx), "start timing") &&
         ok(kreplay_start_context(g_replay_ctx), "start replay");
  return good ? 0 : -1;
}

}  // namespace

extern "C" kreplay_tool_configure_result_t* kreplay_configure(uint32_t, const char*, uint32_t,
                                                              kreplay_client_id_t* client_id) {
  static kreplay_tool_configure_result_t result{sizeof(result), tool_initialize, nullptr, nullptr};
  client_id->name = "kreplay-sample-counters_then_timing";
  return &result;
}
