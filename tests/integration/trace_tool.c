/* A second, independent tool: counts KERNEL_DISPATCH executions and prints them at exit. Loaded
 * together with another tool to show several tools coexist (tools_test.py). C11, public API only. */
#include <stdio.h>

#include "kreplay/kreplay.h"

static unsigned long g_enters, g_exits;

static void on_dispatch(kreplay_callback_tracing_record_t rec, kreplay_user_data_t* ud, void* args) {
  (void)ud;
  (void)args;
  if (rec.phase == KREPLAY_CALLBACK_PHASE_ENTER) ++g_enters;
  if (rec.phase == KREPLAY_CALLBACK_PHASE_EXIT) ++g_exits;
}

static int init(kreplay_client_finalize_t fini, void* data) {
  (void)fini;
  (void)data;
  kreplay_context_id_t ctx;
  if (kreplay_create_context(&ctx) != KREPLAY_STATUS_SUCCESS) return 1;
  if (kreplay_configure_callback_tracing_service(ctx, KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH, NULL,
                                                 0, on_dispatch, NULL) != KREPLAY_STATUS_SUCCESS)
    return 1;
  return kreplay_start_context(ctx) == KREPLAY_STATUS_SUCCESS ? 0 : 1;
}

static void fini(void* data) {
  (void)data;
  fprintf(stderr, "TRACE_TOOL enters=%lu exits=%lu\n", g_enters, g_exits);
}

kreplay_tool_configure_result_t* kreplay_configure(uint32_t version, const char* runtime,
                                                   uint32_t priority, kreplay_client_id_t* id) {
  (void)version;
  (void)runtime;
  (void)priority;
  static kreplay_tool_configure_result_t r = {sizeof(r), init, fini, NULL};
  id->name = "trace-tool";
  return &r;
}
