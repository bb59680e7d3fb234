// indefinite: replay until a measurement settles, with a bounded fallback.
//
// replay_pass_count returns 0 and replay_continue is set: an *indefinite* loop. The SDK runs pass
// after pass and asks replay_continue after every one of them (including the pass that ends the
// loop); total_passes is reported as 0. The SDK itself never stops such a loop, and the
// application's launch does not complete until it ends, so the tool must guarantee that
// replay_continue returns 0 on every path. A condition derived from data needs a fallback for data
// that never satisfies it.
//
// Here the condition is "the kernel's duration is stable": the last 3 passes, timed from the
// KERNEL_DISPATCH EXIT timestamps, lie within 5% of each other (max - min <= 5% of min). The
// fallback: stop after 20 passes whatever the data says (also if no timing arrived at all).
//
//   ==KREPLAY-SAMPLE== indefinite dispatch 1 scale_add(...) pass 1: kernel 10532 ns
//   ==KREPLAY-SAMPLE== indefinite dispatch 1 scale_add(...) pass 2: kernel 9951 ns
//   ==KREPLAY-SAMPLE== indefinite dispatch 1 scale_add(...) pass 3: kernel 9902 ns
//   ==KREPLAY-SAMPLE== indefinite dispatch 1 scale_add(...) pass 4: kernel 9930 ns
//   ==KREPLAY-SAMPLE== indefinite dispatch 1 stop after pass 4: stable (last 3 within 5%: ...)
//   ==KREPLAY-SAMPLE== indefinite dispatch 1 done: 4 passes, total_passes reported 0
//
// Knobs: KREPLAY_SAMPLE_TOLERANCE_PCT (5), KREPLAY_SAMPLE_MAX_PASSES (20).
//
// It also shows the thread-local pattern: all callbacks of one dispatch run on the launching
// thread, so PASS ENTER publishes the dispatch's state in a thread_local that the KERNEL_DISPATCH
// callback (a different service, with its own user_data) reads; PASS EXIT clears it.
//
// Run it:
//   KREPLAY_TOOL_LIBRARIES=build/lib/libkreplay_sample_indefinite.so build/bin/kreplay-sample-app
#include <kreplay/kreplay.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

namespace {

constexpr const char* kTag = "==KREPLAY-SAMPLE== indefinite";
constexpr size_t kWindow = 3;  // passes that must agree

uint64_t g_tolerance_pct = 5;
uint64_t g_max_passes = 20;
std::atomic<uint64_t> g_dispatches{0}, g_passes{0}, g_stable{0}, g_bounded{0};

// Per-dispatch state, behind user_data.ptr from CONFIG ENTER to CONFIG EXIT.
struct DispatchState {
  std::vector<uint64_t> durations_ns;  // one per timed pass, in pass order
};

// The state of the dispatch whose pass is running on this thread (PASS ENTER .. PASS EXIT).
thread_local DispatchState* t_current = nullptr;
thread_local uint64_t t_current_id = 0;

// Are the last kWindow durations within the tolerance? (max - min <= tolerance% of min)
bool stable(const std::vector<uint64_t>& d) {
  if (d.size() < kWindow) return false;
  auto [lo, hi] = std::minmax_element(d.end() - kWindow, d.end());
  return (*hi - *lo) * 100 <= g_tolerance_pct * *lo;
}

std::string last_window(const std::vector<uint64_t>& d) {
  std::string s;
  for (size_t i = d.size() >= kWindow ? d.size() - kWindow : 0; i < d.size(); ++i) {
    s += std::to_string(d[i]);
    s += ' ';
  }
  return s + "ns";
}

uint64_t pass_count(kreplay_kernel_dispatch_info_t, kreplay_user_data_t) {
  return 0;  // indefinite: replay_continue decides
}

int replay_continue(kreplay_kernel_dispatch_info_t info, uint64_t current_pass,
                    uint64_t /*total_passes: 0 for an indefinite loop*/,
                    kreplay_user_data_t user_data) {
  const auto* state = static_cast<const DispatchState*>(user_data.ptr);
  const uint64_t done = current_pass + 1;
  if (stable(state->durations_ns)) {
    std::printf("%s dispatch %" PRIu64 " stop after pass %" PRIu64
                ": stable (last %zu within %" PRIu64 "%%: %s)\n",
                kTag, info.dispatch_id, done, kWindow, g_tolerance_pct,
                last_window(state->durations_ns).c_str());
    ++g_stable;
    return 0;
  }
  // The fallback that makes the loop bounded, whatever the measurements do.
  if (done >= g_max_passes) {
    std::printf("%s dispatch %" PRIu64 " stop after pass %" PRIu64 ": bound of %" PRIu64
                " passes reached, not stable (last: %s)\n",
                kTag, info.dispatch_id, done, g_max_passes,
                last_window(state->durations_ns).c_str());
    ++g_bounded;
    return 0;
  }
  return 1;
}

void on_kernel_replay(kreplay_callback_tracing_record_t record, kreplay_user_data_t* user_data,
                      void*) {
  auto* payload = static_cast<kreplay_callback_tracing_kernel_replay_data_t*>(record.payload);
  const auto& info = payload->dispatch_info;
  if (record.operation == KREPLAY_KERNEL_REPLAY_CONFIG) {
    if (record.phase == KREPLAY_CALLBACK_PHASE_ENTER) {
      auto* state = new (std::nothrow) DispatchState();
      if (state == nullptr) return;  // no state: leave replay_pass_count NULL, the launch runs once
      user_data->ptr = state;
      payload->replay_pass_count = pass_count;
      payload->replay_continue = replay_continue;
      ++g_dispatches;
    } else {
      auto* state = static_cast<DispatchState*>(user_data->ptr);
      std::printf("%s dispatch %" PRIu64 " done: %" PRIu64 " passes, total_passes reported %" PRIu64
                  "\n",
                  kTag, info.dispatch_id, payload->outcome->passes_executed,
                  payload->outcome->passes_requested);
      delete state;
    }
    return;
  }
  // PASS: publish the state for the KERNEL_DISPATCH callback of this pass.
  if (record.phase == KREPLAY_CALLBACK_PHASE_ENTER) {
    t_current = static_cast<DispatchState*>(user_data->ptr);
    t_current_id = info.dispatch_id;
  } else {
    ++g_passes;
    t_current = nullptr;
    t_current_id = 0;
  }
}

void on_kernel_dispatch(kreplay_callback_tracing_record_t record, kreplay_user_data_t*, void*) {
  if (record.phase != KREPLAY_CALLBACK_PHASE_EXIT) return;
  const auto* payload =
      static_cast<const kreplay_callback_tracing_kernel_dispatch_data_t*>(record.payload);
  const auto& info = payload->dispatch_info;
  if (t_current == nullptr || t_current_id != info.dispatch_id) return;  // not one of our loops
  const uint64_t ns = payload->end_timestamp - payload->start_timestamp;
  t_current->durations_ns.push_back(ns);
  std::printf("%s dispatch %" PRIu64 " %s pass %" PRIu64 ": kernel %" PRIu64 " ns\n", kTag,
              info.dispatch_id, info.kernel_name, payload->replay_pass + 1, ns);
}

uint64_t env_u64(const char* name, uint64_t fallback, uint64_t min) {
  const char* v = std::getenv(name);
  if (v == nullptr) return fallback;
  char* end = nullptr;
  unsigned long long x = std::strtoull(v, &end, 10);
  if (end == v || *end != '\0' || x < min) {
    std::fprintf(stderr, "%s: %s='%s' is not a number >= %" PRIu64 "; using %" PRIu64 "\n", kTag,
                 name, v, min, fallback);
    return fallback;
  }
  return x;
}

bool ok(kreplay_status_t s, const char* what) {
  if (s == KREPLAY_STATUS_SUCCESS) return true;
  std::fprintf(stderr, "%s: %s failed: %s: %s\n", kTag, what, kreplay_get_status_name(s),
               kreplay_get_last_error_message());
  return false;
}

int tool_initialize(kreplay_client_finalize_t, void*) {
  g_tolerance_pct = env_u64("KREPLAY_SAMPLE_TOLERANCE_PCT", g_tolerance_pct, 0);
  // At least 1: a bound of 0 passes would mean no bound.
  g_max_passes = env_u64("KREPLAY_SAMPLE_MAX_PASSES", g_max_passes, 1);

  // Timing and replay in two contexts: a tool could stop timing without touching replay.
  kreplay_context_id_t replay_ctx{}, timing_ctx{};
  const uint32_t execute = KREPLAY_KERNEL_DISPATCH_EXECUTE;
  if (!ok(kreplay_create_context(&replay_ctx), "create replay context") ||
      !ok(kreplay_configure_callback_tracing_service(replay_ctx,
                                                     KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY,
                                                     nullptr, 0, on_kernel_replay, nullptr),
          "subscribe KERNEL_REPLAY") ||
      !ok(kreplay_create_context(&timing_ctx), "create timing context") ||
      !ok(kreplay_configure_callback_tracing_service(timing_ctx,
                                                     KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH,
                                                     &execute, 1, on_kernel_dispatch, nullptr),
          "subscribe KERNEL_DISPATCH") ||
      !ok(kreplay_start_context(timing_ctx), "start timing") ||
      !ok(kreplay_start_context(replay_ctx), "start replay")) {
    return -1;
  }
  std::printf("%s: replay until the last %zu kernel times agree within %" PRIu64
              "%%, at most %" PRIu64 " passes\n",
              kTag, kWindow, g_tolerance_pct, g_max_passes);
  return 0;
}

void tool_finalize(void*) {
  std::printf("%s summary: %" PRIu64 " dispatches, %" PRIu64 " passes; %" PRIu64
              " stopped stable, %" PRIu64 " at the bound\n",
              kTag, g_dispatches.load(), g_passes.load(), g_stable.load(), g_bounded.load());
}

}  // namespace

extern "C" kreplay_tool_configure_result_t* kreplay_configure(uint32_t, const char*, uint32_t,
                                                              kreplay_client_id_t* client_id) {
  static kreplay_tool_configure_result_t result{sizeof(result), tool_initialize, tool_finalize,
                                                nullptr};
  client_id->name = "kreplay-sample-indefinite";
  return &result;
}
