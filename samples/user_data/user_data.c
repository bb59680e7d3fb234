/*
 * user_data: per-dispatch state behind user_data.ptr, without a side table.
 *
 * The SDK keeps one kreplay_user_data_t for the whole replay sequence of a dispatch. What the tool
 * writes into it during CONFIG ENTER is handed to replay_pass_count, to replay_continue and (as a
 * copy) to every PASS callback and to CONFIG EXIT. So a tool can:
 *
 *   CONFIG ENTER   malloc a struct, fill in the plan, store it in user_data->ptr
 *   pass_count     read the plan from user_data.ptr
 *   PASS ENTER/EXIT  update the struct (the pointer is a copy; what it points to is shared)
 *   CONFIG EXIT    print what was collected and free the struct
 *
 * CONFIG EXIT fires exactly once for every CONFIG ENTER, whether the dispatch was replayed, not
 * replayed or declined, so that is the one place to free.
 *
 * The plan here: small grids (under 16 blocks) get 2 passes, larger ones 4. Output:
 *
 *   ==KREPLAY-SAMPLE== user_data dispatch 1 scale_add(...) state 0x55d0c1a2b2c0 planned 2 passes
 *   ==KREPLAY-SAMPLE== user_data dispatch 1 pass 1/2 state 0x55d0c1a2b2c0 enter
 *   ...
 *   ==KREPLAY-SAMPLE== user_data dispatch 1 done: state 0x55d0c1a2b2c0 planned 2,
 *       pass_count asked 1x, passes seen 2, outcome 2 passes executed, pass times 52.4 19.2 us;
 * freed
 *   ==KREPLAY-SAMPLE== user_data summary: 10 states allocated, 10 freed
 *
 * Run it:
 *   KREPLAY_TOOL_LIBRARIES=build/lib/libkreplay_sample_user_data.so build/bin/kreplay-sample-app
 */
#include <kreplay/kreplay.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define TAG "==KREPLAY-SAMPLE== user_data "
#define MAX_TIMED_PASSES 8

/* Everything the tool knows about one dispatch. Lives from CONFIG ENTER to CONFIG EXIT. */
typedef struct dispatch_state {
  uint64_t dispatch_id;
  uint64_t planned_passes;   /* decided in CONFIG ENTER, returned by pass_count */
  uint64_t pass_count_calls; /* how often the SDK asked (must be once) */
  uint64_t passes_seen;      /* PASS EXIT callbacks */
  kreplay_timestamp_t pass_started;
  uint64_t pass_ns[MAX_TIMED_PASSES]; /* PASS ENTER to PASS EXIT, per pass */
} dispatch_state;

static atomic_ulong g_allocated;
static atomic_ulong g_freed;

static uint64_t pass_count(kreplay_kernel_dispatch_info_t dispatch_info,
                           kreplay_user_data_t user_data) {
  dispatch_state* state = user_data.ptr; /* what CONFIG ENTER stored */
  (void)dispatch_info;
  state->pass_count_calls++;
  return state->planned_passes;
}

static void on_kernel_replay(kreplay_callback_tracing_record_t record,
                             kreplay_user_data_t* user_data, void* callback_data) {
  kreplay_callback_tracing_kernel_replay_data_t* payload = record.payload;
  const kreplay_kernel_dispatch_info_t* info = &payload->dispatch_info;
  const unsigned long long id = (unsigned long long)info->dispatch_id;
  (void)callback_data;
  if (record.kind != KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY) return;

  if (record.operation == KREPLAY_KERNEL_REPLAY_CONFIG &&
      record.phase == KREPLAY_CALLBACK_PHASE_ENTER) {
    dispatch_state* state = calloc(1, sizeof *state);
    if (state == NULL) return; /* no state, no replay: the launch just runs once */
    atomic_fetch_add(&g_allocated, 1);
    state->dispatch_id = info->dispatch_id;
    state->planned_passes = info->grid_size.x * info->grid_size.y * info->grid_size.z < 16 ? 2 : 4;
    user_data->ptr = state; /* kept by the SDK for the whole sequence */
    payload->replay_pass_count = pass_count;
    printf(TAG "dispatch %llu %s state %p planned %llu passes\n", id, info->kernel_name,
           (void*)state, (unsigned long long)state->planned_passes);
    return;
  }

  dispatch_state* state = user_data->ptr;
  if (state == NULL) return; /* CONFIG ENTER could not allocate */

  if (record.operation == KREPLAY_KERNEL_REPLAY_PASS) {
    const unsigned long long pass = (unsigned long long)payload->current_pass + 1;
    const unsigned long long total = (unsigned long long)payload->total_passes;
    kreplay_timestamp_t now = 0;
    kreplay_get_timestamp(&now);
    if (record.phase == KREPLAY_CALLBACK_PHASE_ENTER) {
      state->pass_started = now;
      printf(TAG "dispatch %llu pass %llu/%llu state %p enter\n", id, pass, total, (void*)state);
    } else {
      if (payload->current_pass < MAX_TIMED_PASSES)
        state->pass_ns[payload->current_pass] = now - state->pass_started;
      state->passes_seen++;
      printf(TAG "dispatch %llu pass %llu/%llu state %p exit\n", id, pass, total, (void*)state);
    }
    return;
  }

  /* CONFIG EXIT: report and free. */
  {
    const kreplay_replay_outcome_record_t* out = payload->outcome;
    char times[16 * MAX_TIMED_PASSES] = "";
    size_t used = 0;
    for (uint64_t p = 0; p < state->passes_seen && p < MAX_TIMED_PASSES; ++p) {
      int n =
          snprintf(times + used, sizeof times - used, " %.1f", (double)state->pass_ns[p] / 1000.0);
      if (n < 0 || (size_t)n >= sizeof times - used) break;
      used += (size_t)n;
    }
    printf(TAG
           "dispatch %llu done: state %p planned %llu, pass_count asked %llux, passes seen "
           "%llu, outcome %llu passes executed, pass times%s us; freed\n",
           id, (void*)state, (unsigned long long)state->planned_passes,
           (unsigned long long)state->pass_count_calls, (unsigned long long)state->passes_seen,
           (unsigned long long)out->passes_executed, times);
    free(state);
    user_data->ptr = NULL;
    atomic_fetch_add(&g_freed, 1);
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
  (void)finalize;
  (void)tool_data;
  CHECK(kreplay_create_context(&ctx));
  CHECK(kreplay_configure_callback_tracing_service(ctx, KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY,
                                                   NULL, 0, on_kernel_replay, NULL));
  CHECK(kreplay_start_context(ctx));
  return 0;
}

static void tool_finalize(void* tool_data) {
  (void)tool_data;
  printf(TAG "summary: %lu states allocated, %lu freed\n", atomic_load(&g_allocated),
         atomic_load(&g_freed));
}

kreplay_tool_configure_result_t* kreplay_configure(uint32_t version, const char* runtime_version,
                                                   uint32_t priority,
                                                   kreplay_client_id_t* client_id) {
  static kreplay_tool_configure_result_t result = {sizeof(kreplay_tool_configure_result_t),
                                                   tool_initialize, tool_finalize, NULL};
  (void)version;
  (void)runtime_version;
  (void)priority;
  client_id->name = "kreplay-sample-user_data";
  return &result;
}
