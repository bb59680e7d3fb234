/*
 * range_tool: the GPU suite's RANGE_REPLAY tool (C11, public headers only, links no kreplay
 * library). Every range is replayed:
 *   KREPLAY_TEST_PASSES=N      pass count of every range (default 2)
 *   KREPLAY_TEST_EARLY_EXIT=K  replay_continue stops once pass K has run
 * It checks the domain's contract on every range (PASS indices 0,1,2,... paired ENTER/EXIT, the
 * outcome's passes matching what ran, LAUNCH callbacks matching the outcome's launch count) and
 * prints at finalize, like pass_tool:
 *   KREPLAY_TEST_TOOL replayed=R declined=D not_requested=X passes=P errors=E
 * where R counts replayed ranges and P their passes.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "kreplay/kreplay.h"

static uint64_t g_passes = 2;
static int g_early_set = 0;
static uint64_t g_early = 0;
static atomic_ullong g_replayed, g_declined, g_not_requested, g_total_passes, g_errors, g_launches;

typedef struct range_state_t {
  uint64_t entered, exited, launches;
  int in_pass;
} range_state_t;

static void error(uint64_t range, const char* what) {
  if (atomic_fetch_add(&g_errors, 1) < 20)
    fprintf(stderr, "KREPLAY_TEST_TOOL_ERROR range=%" PRIu64 " %s\n", range, what);
}

static uint64_t pass_count(kreplay_range_info_t info, kreplay_user_data_t ud) {
  (void)info;
  (void)ud;
  return g_passes;
}

static int keep_going(kreplay_range_info_t info, uint64_t pass, uint64_t total,
                      kreplay_user_data_t ud) {
  (void)info;
  (void)ud;
  if (total != g_passes) error(info.range_id, "continue: total_passes differs from the plan");
  return pass < g_early;
}

static void on_range(kreplay_callback_tracing_record_t rec, kreplay_user_data_t* ud, void* args) {
  (void)args;
  kreplay_callback_tracing_range_replay_data_t* p = rec.payload;
  uint64_t id = p->range.range_id;
  if (rec.operation == KREPLAY_RANGE_REPLAY_CONFIG && rec.phase == KREPLAY_CALLBACK_PHASE_ENTER) {
    range_state_t* st = calloc(1, sizeof *st);
    ud->ptr = st;
    p->replay_pass_count = pass_count;
    if (g_early_set) p->replay_continue = keep_going;
    return;
  }
  range_state_t* st = ud->ptr;
  if (st == NULL) {
    error(id, "callback without the CONFIG state");
    return;
  }
  if (rec.operation == KREPLAY_RANGE_REPLAY_LAUNCH) {
    st->launches++;
    if (p->dispatch_info.dispatch_id == 0) error(id, "LAUNCH with dispatch id 0");
  } else if (rec.operation == KREPLAY_RANGE_REPLAY_PASS) {
    if (rec.phase == KREPLAY_CALLBACK_PHASE_ENTER) {
      if (st->in_pass || p->current_pass != st->entered) error(id, "PASS ENTER out of order");
      st->in_pass = 1;
      st->entered++;
    } else {
      if (!st->in_pass || p->current_pass + 1 != st->entered) error(id, "PASS EXIT out of order");
      st->in_pass = 0;
      st->exited++;
    }
  } else if (rec.operation == KREPLAY_RANGE_REPLAY_CONFIG) {
    const kreplay_range_outcome_record_t* o = p->outcome;
    if (o == NULL) {
      error(id, "CONFIG EXIT without an outcome");
    } else if (o->outcome == KREPLAY_REPLAY_OUTCOME_REPLAYED) {
      atomic_fetch_add(&g_replayed, 1);
      atomic_fetch_add(&g_total_passes, o->passes_executed);
      atomic_fetch_add(&g_launches, o->launches);
      if (o->passes_executed != st->exited) error(id, "outcome passes differ from PASS EXITs");
      if (o->launches != st->launches) error(id, "outcome launches differ from LAUNCH callbacks");
      uint64_t want = g_early_set && g_early + 1 < g_passes ? g_early + 1 : g_passes;
      if (o->passes_executed != want) error(id, "wrong number of passes");
    } else if (o->outcome == KREPLAY_REPLAY_OUTCOME_DECLINED) {
      atomic_fetch_add(&g_declined, 1);
    } else {
      atomic_fetch_add(&g_not_requested, 1);
    }
    free(st);
    ud->ptr = NULL;
  }
}

static int init(kreplay_client_finalize_t fini, void* data) {
  (void)fini;
  (void)data;
  const char* n = getenv("KREPLAY_TEST_PASSES");
  if (n) g_passes = strtoull(n, NULL, 10);
  const char* e = getenv("KREPLAY_TEST_EARLY_EXIT");
  if (e) {
    g_early_set = 1;
    g_early = strtoull(e, NULL, 10);
  }
  kreplay_context_id_t ctx;
  if (kreplay_create_context(&ctx) != KREPLAY_STATUS_SUCCESS) return 1;
  if (kreplay_configure_callback_tracing_service(ctx, KREPLAY_CALLBACK_TRACING_RANGE_REPLAY, NULL, 0,
                                                 on_range, NULL) != KREPLAY_STATUS_SUCCESS)
    return 1;
  return kreplay_start_context(ctx) == KREPLAY_STATUS_SUCCESS ? 0 : 1;
}

static void fini(void* data) {
  (void)data;
  fprintf(stderr,
          "KREPLAY_TEST_TOOL replayed=%llu declined=%llu not_requested=%llu passes=%llu "
          "errors=%llu launches=%llu\n",
          (unsigned long long)g_replayed, (unsigned long long)g_declined,
          (unsigned long long)g_not_requested, (unsigned long long)g_total_passes,
          (unsigned long long)g_errors, (unsigned long long)g_launches);
}

__attribute__((visibility("default"))) kreplay_tool_configure_result_t* kreplay_configure(
    uint32_t version, const char* runtime, uint32_t priority, kreplay_client_id_t* id) {
  (void)version;
  (void)runtime;
  (void)priority;
  static kreplay_tool_configure_result_t r = {sizeof(r), init, fini, NULL};
  id->name = "range-test-tool";
  return &r;
}
