/*
 * early_exit: ask for up to 8 passes and stop early with replay_continue.
 *
 * replay_pass_count returns 8 and replay_continue is set, so the loop runs *up to* 8 passes. The
 * SDK asks replay_continue after every pass (after that pass's PASS EXIT) whether another pass
 * follows; returning 0 ends the loop. replay_continue can end a loop early but never extend it:
 * after pass 8 of 8 it is not asked at all.
 *
 * The stop condition here is simply "enough passes" (KREPLAY_SAMPLE_STOP_AFTER, default 3). A
 * real tool would stop when it has what it came for, e.g. once every counter group of the agent
 * was collected or a measurement settled; since the plan says 8, the loop is bounded either way.
 *
 *   ==KREPLAY-SAMPLE== early_exit dispatch 1 scale_add(...) pass 1/8 exit
 *   ==KREPLAY-SAMPLE== early_exit dispatch 1 continue after pass 1/8? yes
 *   ...
 *   ==KREPLAY-SAMPLE== early_exit dispatch 1 continue after pass 3/8? no, stop
 *   ==KREPLAY-SAMPLE== early_exit dispatch 1 done: 3 of up to 8 passes
 *
 * Run it:
 *   KREPLAY_TOOL_LIBRARIES=build/lib/libkreplay_sample_early_exit.so build/bin/kreplay-sample-app
 *   KREPLAY_SAMPLE_STOP_AFTER=5 KREPLAY_TOOL_LIBRARIES=... build/bin/kreplay-sample-app
 */
#include <kreplay/kreplay.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define TAG "==KREPLAY-SAMPLE== early_exit "
#define MAX_PASSES 8

static uint64_t g_stop_after = 3; /* set once in initialize */
static atomic_ulong g_dispatches;
static atomic_ulong g_passes;

static uint64_t pass_count(kreplay_kernel_dispatch_info_t dispatch_info,
                           kreplay_user_data_t user_data) {
  (void)dispatch_info;
  (void)user_data;
  return MAX_PASSES;
}

/* Asked after pass `current_pass` (0-based) ended: run another one? */
static int replay_continue(kreplay_kernel_dispatch_info_t dispatch_info, uint64_t current_pass,
                           uint64_t total_passes, kreplay_user_data_t user_data) {
  const uint64_t passes_done = current_pass + 1;
  const int more = passes_done < g_stop_after;
  (void)user_data;
  printf(TAG "dispatch %llu continue after pass %llu/%llu? %s\n",
         (unsigned long long)dispatch_info.dispatch_id, (unsigned long long)passes_done,
         (unsigned long long)total_passes, more ? "yes" : "no, stop");
  return more;
}

static void on_kernel_replay(kreplay_callback_tracing_record_t record,
                             kreplay_user_data_t* user_data, void* callback_data) {
  kreplay_callback_tracing_kernel_replay_data_t* payload = record.payload;
  const kreplay_kernel_dispatch_info_t* info = &payload->dispatch_info;
  (void)user_data;
  (void)callback_data;

  if (record.operation == KREPLAY_KERNEL_REPLAY_CONFIG) {
    if (record.phase == KREPLAY_CALLBACK_PHASE_ENTER) {
      payload->replay_pass_count = pass_count;
      payload->replay_continue = replay_continue;
      atomic_fetch_add(&g_dispatches, 1);
    } else {
      printf(TAG "dispatch %llu done: %llu of up to %llu passes\n",
             (unsigned long long)info->dispatch_id,
             (unsigned long long)payload->outcome->passes_executed,
             (unsigned long long)payload->outcome->passes_requested);
    }
  } else if (record.operation == KREPLAY_KERNEL_REPLAY_PASS &&
             record.phase == KREPLAY_CALLBACK_PHASE_EXIT) {
    atomic_fetch_add(&g_passes, 1);
    printf(TAG "dispatch %llu %s pass %llu/%llu exit\n", (unsigned long long)info->dispatch_id,
           info->kernel_name, (unsigned long long)payload->current_pass + 1,
           (unsigned long long)payload->total_passes);
  }
}

#define CHECK(call)                                                                       \
  do {                                                                                    \
    kreplay_status_t status_ = (call);                                                    \
    if (status_ != KREPLAY_STATUS_SUCCESS) {                                              \
      fprintf(stderr, TAG "%s failed: %s: %s\n", #call, kreplay_get_status_name(status_), \
              kreplay_get_last_error_message());                                          \
      return -1;                                                                          \
    }                                                                                     \
  } while (0)

static int tool_initialize(kreplay_client_finalize_t finalize, void* tool_data) {
  kreplay_context_id_t ctx;
  const char* env = getenv("KREPLAY_SAMPLE_STOP_AFTER");
  (void)finalize;
  (void)tool_data;
  if (env != NULL) {
    char* end = NULL;
    unsigned long v = strtoul(env, &end, 10);
    if (end == env || *end != '\0' || v < 1) {
      fprintf(stderr, TAG "KREPLAY_SAMPLE_STOP_AFTER='%s' is not a pass count >= 1\n", env);
      return -1;
    }
    g_stop_after = v;
  }
  /* Subscribe to CONFIG and PASS only (the same as NULL, 0 today). */
  {
    const uint32_t operations[] = {KREPLAY_KERNEL_REPLAY_CONFIG, KREPLAY_KERNEL_REPLAY_PASS};
    CHECK(kreplay_create_context(&ctx));
    CHECK(kreplay_configure_callback_tracing_service(ctx, KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY,
                                                     operations, 2, on_kernel_replay, NULL));
    CHECK(kreplay_start_context(ctx));
  }
  printf(TAG "up to %d passes per launch, stopping after %llu\n", MAX_PASSES,
         (unsigned long long)g_stop_after);
  return 0;
}

static void tool_finalize(void* tool_data) {
  (void)tool_data;
  printf(TAG "summary: %lu dispatches, %lu passes\n", atomic_load(&g_dispatches),
         atomic_load(&g_passes));
}

kreplay_tool_configure_result_t* kreplay_configure(uint32_t version, const char* runtime_version,
                                                   uint32_t priority,
                                                   kreplay_client_id_t* client_id) {
  static kreplay_tool_configure_result_t result = {sizeof(kreplay_tool_configure_result_t),
                                                   tool_initialize, tool_finalize, NULL};
  (void)version;
  (void)runtime_version;
  (void)priority;
  client_id->name = "kreplay-sample-early_exit";
  return &result;
}
