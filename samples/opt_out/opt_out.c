/*
 * opt_out: replay only the kernels you care about.
 *
 * replay_pass_count is the per-dispatch switch. A tool that leaves it NULL in CONFIG ENTER opts
 * that dispatch out: it runs once, as if no tool were there (no snapshot, no PASS callbacks), and
 * CONFIG EXIT reports it as "not requested". Deciding in CONFIG is what makes filters cheap: a
 * launch nobody selected is never snapshotted.
 *
 * Here a kernel is replayed (2 passes) when its name contains the text in KREPLAY_SAMPLE_KERNEL
 * (matched against the demangled name, e.g. "scale_add"); every other launch runs once.
 *
 *   ==KREPLAY-SAMPLE== opt_out dispatch 1 scale_add(...) selected: 2 passes
 *   ==KREPLAY-SAMPLE== opt_out dispatch 1 pass 1/2
 *   ==KREPLAY-SAMPLE== opt_out dispatch 1 pass 2/2
 *   ==KREPLAY-SAMPLE== opt_out dispatch 1 outcome: replayed, 2 passes
 *   ==KREPLAY-SAMPLE== opt_out dispatch 2 sum_reduce(...) skipped: replay_pass_count left NULL
 *   ==KREPLAY-SAMPLE== opt_out dispatch 2 outcome: not requested, 1 pass
 *
 * Run it:
 *   KREPLAY_SAMPLE_KERNEL=scale_add \
 *   KREPLAY_TOOL_LIBRARIES=build/lib/libkreplay_sample_opt_out.so build/bin/kreplay-sample-app
 */
#include <kreplay/kreplay.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG "==KREPLAY-SAMPLE== opt_out "
#define PASSES 2

static const char* g_pattern = NULL; /* KREPLAY_SAMPLE_KERNEL; NULL: replay nothing */
static atomic_ulong g_selected;
static atomic_ulong g_skipped;

static uint64_t pass_count(kreplay_kernel_dispatch_info_t dispatch_info,
                           kreplay_user_data_t user_data) {
  (void)dispatch_info;
  (void)user_data;
  return PASSES;
}

static const char* outcome_name(kreplay_replay_outcome_t outcome) {
  switch (outcome) {
    case KREPLAY_REPLAY_OUTCOME_NOT_REQUESTED:
      return "not requested";
    case KREPLAY_REPLAY_OUTCOME_REPLAYED:
      return "replayed";
    case KREPLAY_REPLAY_OUTCOME_DECLINED:
      return "declined";
    default:
      return "unknown";
  }
}

static void on_kernel_replay(kreplay_callback_tracing_record_t record,
                             kreplay_user_data_t* user_data, void* callback_data) {
  kreplay_callback_tracing_kernel_replay_data_t* payload = record.payload;
  const kreplay_kernel_dispatch_info_t* info = &payload->dispatch_info;
  const unsigned long long id = (unsigned long long)info->dispatch_id;
  (void)user_data;
  (void)callback_data;

  if (record.operation == KREPLAY_KERNEL_REPLAY_CONFIG &&
      record.phase == KREPLAY_CALLBACK_PHASE_ENTER) {
    if (g_pattern != NULL && strstr(info->kernel_name, g_pattern) != NULL) {
      payload->replay_pass_count = pass_count;
      atomic_fetch_add(&g_selected, 1);
      printf(TAG "dispatch %llu %s selected: %d passes\n", id, info->kernel_name, PASSES);
    } else {
      /* Leave replay_pass_count NULL: this launch is not replayed. */
      atomic_fetch_add(&g_skipped, 1);
      printf(TAG "dispatch %llu %s skipped: replay_pass_count left NULL\n", id, info->kernel_name);
    }
  } else if (record.operation == KREPLAY_KERNEL_REPLAY_CONFIG) {
    printf(TAG "dispatch %llu outcome: %s, %llu pass%s\n", id,
           outcome_name(payload->outcome->outcome),
           (unsigned long long)payload->outcome->passes_executed,
           payload->outcome->passes_executed == 1 ? "" : "es");
  } else if (record.operation == KREPLAY_KERNEL_REPLAY_PASS &&
             record.phase == KREPLAY_CALLBACK_PHASE_ENTER) {
    printf(TAG "dispatch %llu pass %llu/%llu\n", id, (unsigned long long)payload->current_pass + 1,
           (unsigned long long)payload->total_passes);
  }
}

static int tool_initialize(kreplay_client_finalize_t finalize, void* tool_data) {
  kreplay_context_id_t ctx;
  kreplay_status_t status;
  (void)finalize;
  (void)tool_data;
  g_pattern = getenv("KREPLAY_SAMPLE_KERNEL");
  if (g_pattern != NULL && g_pattern[0] == '\0') g_pattern = NULL;
  if (g_pattern == NULL) {
    printf(TAG "KREPLAY_SAMPLE_KERNEL is not set: no kernel is replayed\n");
  } else {
    printf(TAG "replaying kernels whose name contains '%s'\n", g_pattern);
  }
  status = kreplay_create_context(&ctx);
  if (status == KREPLAY_STATUS_SUCCESS)
    status = kreplay_configure_callback_tracing_service(ctx, KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY,
                                                        NULL, 0, on_kernel_replay, NULL);
  if (status == KREPLAY_STATUS_SUCCESS) status = kreplay_start_context(ctx);
  if (status != KREPLAY_STATUS_SUCCESS) {
    fprintf(stderr, TAG "setup failed: %s: %s\n", kreplay_get_status_name(status),
            kreplay_get_last_error_message());
    return -1;
  }
  return 0;
}

static void tool_finalize(void* tool_data) {
  (void)tool_data;
  printf(TAG "summary: %lu dispatches selected, %lu skipped\n", atomic_load(&g_selected),
         atomic_load(&g_skipped));
}

kreplay_tool_configure_result_t* kreplay_configure(uint32_t version, const char* runtime_version,
                                                   uint32_t priority,
                                                   kreplay_client_id_t* client_id) {
  static kreplay_tool_configure_result_t result = {sizeof(kreplay_tool_configure_result_t),
                                                   tool_initialize, tool_finalize, NULL};
  (void)version;
  (void)runtime_version;
  (void)priority;
  client_id->name = "kreplay-sample-opt_out";
  return &result;
}
