/*
 * c_tool: a tool written in C11 (-std=c11 -Wall -Wextra -Werror -pedantic) that includes every
 * public header and drives the whole C API from C, checking each answer as it goes.
 *
 * It is loaded into kreplay-sample-app with KREPLAY_TOOL_LIBRARIES. Every check that fails prints
 *   ==KREPLAY-C-TOOL== FAILED: <expression> (c_tool.c:<line>)
 * and counts as an error; at exit the tool prints one summary line that the ctest compares with
 * what the application launched:
 *   ==KREPLAY-C-TOOL== summary: dispatches=10 replayed=10 passes=26 dispatch_exits=16
 *                      counter_records=26 continue_calls=26 api_checks=... errors=0
 *
 * The plan, by kernel:
 *   scale_add   fixed loop of 4 passes with replay_continue stopping after 3 (continue asked 3x)
 *   other       indefinite loop (pass count 0) stopping after 2 passes (continue asked 2x)
 * Every pass: dispatch counting of [threads_launched, launches]. KERNEL_DISPATCH tracing is masked
 * locally on pass 0 and unmasked on pass 1, so it reports every pass but the first.
 */
#include "kreplay/agent.h"
#include "kreplay/callback_tracing.h"
#include "kreplay/context.h"
#include "kreplay/counters.h"
#include "kreplay/fwd.h"
#include "kreplay/kernel_replay.h"
#include "kreplay/kreplay.h"
#include "kreplay/registration.h"
#include "kreplay/services.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG "==KREPLAY-C-TOOL== "

/* ---- checking -------------------------------------------------------------------------------- */

static atomic_ulong g_checks;
static atomic_ulong g_errors;

#define CHECK(cond)                                                  \
  do {                                                               \
    atomic_fetch_add(&g_checks, 1);                                  \
    if (!(cond)) {                                                   \
      atomic_fetch_add(&g_errors, 1);                                \
      printf(TAG "FAILED: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
    }                                                                \
  } while (0)

/* A call that must return @p want; on a mismatch both status names are printed. */
#define CHECK_STATUS(call, want)                                                               \
  do {                                                                                         \
    kreplay_status_t got_ = (call);                                                            \
    atomic_fetch_add(&g_checks, 1);                                                            \
    if (got_ != (want)) {                                                                      \
      atomic_fetch_add(&g_errors, 1);                                                          \
      printf(TAG "FAILED: %s returned %s, expected %s (%s:%d) %s\n", #call,                    \
             kreplay_get_status_name(got_), kreplay_get_status_name(want), __FILE__, __LINE__, \
             kreplay_get_last_error_message());                                                \
    }                                                                                          \
  } while (0)

#define CHECK_OK(call) CHECK_STATUS(call, KREPLAY_STATUS_SUCCESS)

/* ---- state ----------------------------------------------------------------------------------- */

static kreplay_context_id_t g_replay_ctx, g_trace_ctx, g_count_ctx, g_idle_ctx;

#define MAX_AGENTS 16
static struct {
  kreplay_agent_id_t agent;
  kreplay_counter_config_id_t config;
} g_configs[MAX_AGENTS];
static size_t g_config_count;

/* Local context control saved from a PASS ENTER, to prove it is refused everywhere else. */
static kreplay_kernel_replay_context_cb_t g_saved_stop;

/* Totals over all dispatches, added at CONFIG EXIT. */
static atomic_ulong g_dispatches, g_replayed, g_passes, g_dispatch_exits, g_counter_records,
    g_continue_calls;

typedef struct dispatch_state {
  uint64_t dispatch_id;
  uint64_t correlation; /* internal correlation id seen at CONFIG ENTER */
  uint64_t requested;   /* what pass_count returns: 4 (fixed) or 0 (indefinite) */
  uint64_t stop_after;  /* passes after which replay_continue says stop */
  kreplay_dim3_t grid, block;
  uint64_t pass_count_calls;
  uint64_t continue_calls;
  uint64_t passes_entered;
  uint64_t passes_exited;
  uint64_t dispatch_exits;
  uint64_t counter_records;
} dispatch_state;

/* The dispatch whose pass runs on this thread, from PASS ENTER to PASS EXIT. */
static _Thread_local dispatch_state* t_current;

static kreplay_counter_config_id_t config_for(kreplay_agent_id_t agent) {
  kreplay_counter_config_id_t none = {0};
  size_t i;
  for (i = 0; i < g_config_count; ++i) {
    if (g_configs[i].agent.handle == agent.handle) return g_configs[i].config;
  }
  return none;
}

static uint64_t threads_of(const dispatch_state* s) {
  return (uint64_t)s->grid.x * s->grid.y * s->grid.z * s->block.x * s->block.y * s->block.z;
}

/* ---- the replay plan ------------------------------------------------------------------------- */

static uint64_t pass_count(kreplay_kernel_dispatch_info_t info, kreplay_user_data_t user_data) {
  dispatch_state* s = user_data.ptr;
  CHECK(s != NULL);
  if (s == NULL) return 1;
  CHECK(s->dispatch_id == info.dispatch_id);
  CHECK(info.size >= KREPLAY_STRUCT_SIZE(kreplay_kernel_dispatch_info_t, flags));
  s->pass_count_calls++;
  return s->requested;
}

static int replay_continue(kreplay_kernel_dispatch_info_t info, uint64_t current_pass,
                           uint64_t total_passes, kreplay_user_data_t user_data) {
  dispatch_state* s = user_data.ptr;
  CHECK(s != NULL);
  if (s == NULL) return 0; /* always terminate */
  CHECK(s->dispatch_id == info.dispatch_id);
  CHECK(total_passes == s->requested);         /* 0 for the indefinite loop */
  CHECK(current_pass + 1 == s->passes_exited); /* asked after the pass's PASS EXIT */
  CHECK(s->requested == 0 || current_pass + 1 < s->requested); /* never after pass N-1 */
  s->continue_calls++;
  return current_pass + 1 < s->stop_after;
}

/* ---- KERNEL_REPLAY --------------------------------------------------------------------------- */

static void config_enter(kreplay_callback_tracing_record_t record,
                         kreplay_callback_tracing_kernel_replay_data_t* p,
                         kreplay_user_data_t* user_data) {
  const kreplay_kernel_dispatch_info_t* info = &p->dispatch_info;
  kreplay_context_id_t late;
  dispatch_state* s;

  CHECK(p->size >= KREPLAY_STRUCT_SIZE(kreplay_callback_tracing_kernel_replay_data_t, outcome));
  CHECK(info->dispatch_id != 0);
  CHECK(info->kernel_name != NULL && info->mangled_name != NULL);
  CHECK(p->current_pass == 0 && p->total_passes == 0); /* pass fields are zero in CONFIG */
  CHECK(p->replay_start_context == NULL && p->replay_stop_context == NULL);
  CHECK(p->replay_pass_count == NULL && p->replay_continue == NULL);
  CHECK(user_data->value == 0);
  CHECK(record.context_id.handle == g_replay_ctx.handle);
  /* Services are configured only during initialize. */
  CHECK_STATUS(kreplay_create_context(&late), KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED);
  /* Local context control outside PASS ENTER is refused (the pointer came from an earlier pass). */
  if (g_saved_stop != NULL)
    CHECK_STATUS(g_saved_stop(g_trace_ctx), KREPLAY_STATUS_ERROR_CONTEXT_ERROR);

  s = calloc(1, sizeof *s);
  CHECK(s != NULL);
  if (s == NULL) return; /* not replayed */
  s->dispatch_id = info->dispatch_id;
  s->correlation = record.correlation_id.internal;
  s->grid = info->grid_size;
  s->block = info->block_size;
  if (strstr(info->kernel_name, "scale_add") == info->kernel_name) {
    s->requested = 4;  /* up to 4 ... */
    s->stop_after = 3; /* ... ended after 3 by replay_continue */
  } else {
    s->requested = 0;  /* indefinite ... */
    s->stop_after = 2; /* ... ended after 2 */
  }
  user_data->ptr = s;
  p->replay_pass_count = pass_count;
  p->replay_continue = replay_continue;
  atomic_fetch_add(&g_dispatches, 1);
}

static void pass_enter(kreplay_callback_tracing_record_t record,
                       const kreplay_callback_tracing_kernel_replay_data_t* p, dispatch_state* s) {
  const kreplay_context_id_t unknown = {999999};
  int active = -1;
  CHECK(p->current_pass == s->passes_entered);
  CHECK(p->total_passes == s->requested);
  CHECK(p->replay_pass_count == NULL && p->replay_continue == NULL);
  CHECK(p->replay_start_context != NULL && p->replay_stop_context != NULL);
  CHECK(record.correlation_id.internal == s->correlation); /* the same on every pass */
  s->passes_entered++;
  t_current = s;
  if (p->replay_stop_context == NULL) return;
  g_saved_stop = p->replay_stop_context;

  /* Mask dispatch tracing on pass 0 only (the mask is sticky, so unmask it on pass 1). */
  if (p->current_pass == 0) CHECK_OK(p->replay_stop_context(g_trace_ctx));
  if (p->current_pass == 1) CHECK_OK(p->replay_start_context(g_trace_ctx));
  /* Only contexts active when the loop began can be switched; unknown ids are not found. */
  CHECK_STATUS(p->replay_start_context(g_idle_ctx), KREPLAY_STATUS_ERROR_CONTEXT_NOT_STARTED);
  CHECK_STATUS(p->replay_stop_context(unknown), KREPLAY_STATUS_ERROR_CONTEXT_NOT_FOUND);
  /* The global state is untouched by local control. */
  CHECK_OK(kreplay_context_is_active(g_trace_ctx, &active));
  CHECK(active == 1);
}

static void pass_exit(const kreplay_callback_tracing_kernel_replay_data_t* p, dispatch_state* s) {
  CHECK(p->current_pass + 1 == s->passes_entered);
  s->passes_exited++;
  t_current = NULL;
  if (g_saved_stop != NULL)
    CHECK_STATUS(g_saved_stop(g_trace_ctx), KREPLAY_STATUS_ERROR_CONTEXT_ERROR);
}

static void config_exit(const kreplay_callback_tracing_kernel_replay_data_t* p, dispatch_state* s) {
  const kreplay_replay_outcome_record_t* o = p->outcome;
  CHECK(o != NULL);
  if (o != NULL) {
    CHECK(o->size >= KREPLAY_STRUCT_SIZE(kreplay_replay_outcome_record_t, interval_count));
    CHECK(o->dispatch_id == s->dispatch_id);
    CHECK(o->outcome == KREPLAY_REPLAY_OUTCOME_REPLAYED);
    CHECK(o->reason == KREPLAY_DECLINE_REASON_NONE);
    CHECK(o->passes_requested == s->requested);
    CHECK(o->passes_executed == s->stop_after);
    CHECK(o->bytes_snapshotted > 0);
    CHECK(o->bytes_restored > 0);              /* every kernel of the app writes memory */
    CHECK(o->interval_count == s->stop_after); /* one snapshot, then a restore between passes */
    if (o->interval_count > 0 && o->intervals != NULL) {
      CHECK(o->intervals[0].kind == KREPLAY_REPLAY_INTERVAL_SNAPSHOT);
      CHECK(o->intervals[o->interval_count - 1].kind == KREPLAY_REPLAY_INTERVAL_RESTORE);
    }
    if (o->outcome == KREPLAY_REPLAY_OUTCOME_REPLAYED) atomic_fetch_add(&g_replayed, 1);
  }
  CHECK(s->pass_count_calls == 1);
  CHECK(s->passes_entered == s->stop_after && s->passes_exited == s->stop_after);
  CHECK(s->continue_calls == s->stop_after);     /* asked after every executed pass here */
  CHECK(s->dispatch_exits == s->stop_after - 1); /* pass 0 was masked */
  CHECK(s->counter_records == s->stop_after);    /* one record callback per pass */
  atomic_fetch_add(&g_passes, s->passes_exited);
  atomic_fetch_add(&g_dispatch_exits, s->dispatch_exits);
  atomic_fetch_add(&g_counter_records, s->counter_records);
  atomic_fetch_add(&g_continue_calls, s->continue_calls);
  free(s);
}

static void on_kernel_replay(kreplay_callback_tracing_record_t record,
                             kreplay_user_data_t* user_data, void* callback_data) {
  kreplay_callback_tracing_kernel_replay_data_t* p = record.payload;
  dispatch_state* s;
  CHECK(callback_data == &g_replay_ctx);
  CHECK(record.kind == KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY);
  if (record.operation == KREPLAY_KERNEL_REPLAY_CONFIG &&
      record.phase == KREPLAY_CALLBACK_PHASE_ENTER) {
    config_enter(record, p, user_data);
    return;
  }
  s = user_data->ptr; /* written in CONFIG ENTER, the same for the whole sequence */
  CHECK(s != NULL);
  if (s == NULL) return;
  CHECK(s->dispatch_id == p->dispatch_info.dispatch_id);
  if (record.operation == KREPLAY_KERNEL_REPLAY_PASS) {
    if (record.phase == KREPLAY_CALLBACK_PHASE_ENTER) {
      pass_enter(record, p, s);
    } else {
      pass_exit(p, s);
    }
  } else {
    CHECK(record.operation == KREPLAY_KERNEL_REPLAY_CONFIG);
    config_exit(p, s);
  }
}

/* ---- KERNEL_DISPATCH ------------------------------------------------------------------------- */

static void on_kernel_dispatch(kreplay_callback_tracing_record_t record,
                               kreplay_user_data_t* user_data, void* callback_data) {
  const kreplay_callback_tracing_kernel_dispatch_data_t* p = record.payload;
  (void)callback_data;
  CHECK(record.kind == KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH);
  CHECK(record.operation == KREPLAY_KERNEL_DISPATCH_EXECUTE);
  CHECK(t_current != NULL && t_current->dispatch_id == p->dispatch_info.dispatch_id);
  CHECK(record.correlation_id.internal == (t_current ? t_current->correlation : 0));
  CHECK(p->replay_pass != 0); /* masked on pass 0 */
  if (record.phase == KREPLAY_CALLBACK_PHASE_ENTER) {
    user_data->value = p->replay_pass + 7; /* ENTER and EXIT share user_data */
    return;
  }
  CHECK(user_data->value == p->replay_pass + 7);
  CHECK(p->start_timestamp != 0 && p->end_timestamp >= p->start_timestamp);
  if (t_current != NULL) t_current->dispatch_exits++;
}

/* ---- dispatch counting ----------------------------------------------------------------------- */

/* Never called: the per-pass services are only checked for their configuration errors. */
static void service_records(const kreplay_pass_service_data_t* data,
                            const kreplay_pass_service_record_t* records, size_t count,
                            void* args) {
  (void)data;
  (void)records;
  (void)count;
  (void)args;
}

static void pick_counters(const kreplay_dispatch_counting_data_t* data,
                          kreplay_counter_config_id_t* config, kreplay_user_data_t* user_data,
                          void* callback_args) {
  CHECK(callback_args == &g_count_ctx);
  CHECK(data->size >= KREPLAY_STRUCT_SIZE(kreplay_dispatch_counting_data_t, replay_pass));
  CHECK(t_current != NULL && data->replay_pass + 1 == t_current->passes_entered);
  *config = config_for(data->dispatch_info.agent_id);
  CHECK(config->handle != 0);
  user_data->value = data->replay_pass + 100; /* reaches the record callback of this pass */
}

static void counter_records(const kreplay_dispatch_counting_data_t* data,
                            const kreplay_counter_record_t* records, size_t count,
                            kreplay_user_data_t user_data, void* callback_args) {
  size_t i;
  CHECK(callback_args == &g_count_ctx);
  CHECK(user_data.value == data->replay_pass + 100);
  CHECK(count == 2);
  CHECK(t_current != NULL);
  if (t_current == NULL) return;
  for (i = 0; i < count; ++i) {
    kreplay_counter_info_t info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    CHECK(records[i].dispatch_id == data->dispatch_info.dispatch_id);
    CHECK(records[i].replay_pass == data->replay_pass);
    CHECK(records[i].agent_id.handle == data->dispatch_info.agent_id.handle);
    CHECK_OK(kreplay_query_counter_info(records[i].counter_id, &info));
    if (info.name != NULL && strcmp(info.name, "threads_launched") == 0) {
      CHECK(records[i].value == (double)threads_of(t_current));
    } else if (info.name != NULL && strcmp(info.name, "launches") == 0) {
      CHECK(records[i].value == 1.0);
    } else {
      CHECK(!"a counter that was not asked for");
    }
  }
  t_current->counter_records++;
}

/* ---- initialize: the API calls that need no launch ------------------------------------------ */

static void check_names(void) {
  int s;
  const char* name = NULL;
  for (s = KREPLAY_STATUS_SUCCESS; s < KREPLAY_STATUS_LAST; ++s) {
    const char* n = kreplay_get_status_name((kreplay_status_t)s);
    const char* text = kreplay_get_status_string((kreplay_status_t)s);
    CHECK(n != NULL && strncmp(n, "KREPLAY_STATUS_", 15) == 0);
    CHECK(text != NULL && text[0] != '\0');
  }
  CHECK(kreplay_get_status_name(KREPLAY_STATUS_LAST) == NULL);
  CHECK(strcmp(kreplay_get_status_name(KREPLAY_STATUS_ERROR_CONTEXT_NOT_STARTED),
               "KREPLAY_STATUS_ERROR_CONTEXT_NOT_STARTED") == 0);
  for (s = KREPLAY_CALLBACK_TRACING_NONE + 1; s < KREPLAY_CALLBACK_TRACING_LAST; ++s) {
    CHECK_OK(kreplay_query_callback_tracing_kind_name((kreplay_callback_tracing_kind_t)s, &name));
    CHECK(name != NULL && name[0] != '\0');
  }
  CHECK_OK(kreplay_query_callback_tracing_kind_operation_name(
      KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY, KREPLAY_KERNEL_REPLAY_PASS, &name));
  CHECK(name != NULL && strcmp(name, "PASS") == 0);
  CHECK_STATUS(kreplay_query_callback_tracing_kind_name(KREPLAY_CALLBACK_TRACING_LAST, &name),
               KREPLAY_STATUS_ERROR_KIND_NOT_FOUND);
  CHECK_STATUS(kreplay_query_callback_tracing_kind_operation_name(
                   KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH, KREPLAY_KERNEL_DISPATCH_LAST, &name),
               KREPLAY_STATUS_ERROR_OPERATION_NOT_FOUND);
}

static void check_version_and_time(void) {
  uint32_t major = 99, minor = 99, patch = 99;
  kreplay_timestamp_t t0 = 0, t1 = 0;
  int flag = -1;
  CHECK_OK(kreplay_get_version(&major, &minor, &patch));
  CHECK(major == KREPLAY_VERSION_MAJOR && minor == KREPLAY_VERSION_MINOR &&
        patch == KREPLAY_VERSION_PATCH);
  CHECK_OK(kreplay_get_version(NULL, NULL, NULL));
  CHECK_OK(kreplay_get_timestamp(&t0));
  CHECK_OK(kreplay_get_timestamp(&t1));
  CHECK(t0 != 0 && t1 >= t0);
  CHECK_STATUS(kreplay_get_timestamp(NULL), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  CHECK(kreplay_get_last_error_message() != NULL);
  CHECK_OK(kreplay_is_finalized(&flag));
  CHECK(flag == 0);
  CHECK_OK(kreplay_is_initialized(&flag));
}

typedef struct counter_listing {
  size_t count;
  int has_threads_launched;
  int has_launches;
} counter_listing;

static kreplay_status_t list_counters(kreplay_agent_id_t agent, const kreplay_counter_info_t* c,
                                      size_t count, void* user_data) {
  counter_listing* l = user_data;
  size_t i;
  l->count = count;
  for (i = 0; i < count; ++i) {
    kreplay_counter_info_t again;
    CHECK(c[i].agent_id.handle == agent.handle);
    CHECK(c[i].name != NULL && c[i].description != NULL && c[i].unit != NULL);
    CHECK(c[i].value_type > KREPLAY_COUNTER_VALUE_TYPE_NONE &&
          c[i].value_type < KREPLAY_COUNTER_VALUE_TYPE_LAST);
    if (strcmp(c[i].name, "threads_launched") == 0) l->has_threads_launched = 1;
    if (strcmp(c[i].name, "launches") == 0) l->has_launches = 1;
    memset(&again, 0, sizeof again);
    again.size = KREPLAY_COUNTER_INFO_V1_SIZE;
    CHECK_OK(kreplay_query_counter_info(c[i].id, &again));
    CHECK(again.name != NULL && strcmp(again.name, c[i].name) == 0);
  }
  return KREPLAY_STATUS_SUCCESS;
}

static void check_agents_and_counters(void) {
  size_t count = 0, i;
  CHECK_OK(kreplay_get_agent_count(&count));
  CHECK(count >= 1);
  CHECK_STATUS(kreplay_get_agent_count(NULL), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  for (i = 0; i < count && i < MAX_AGENTS; ++i) {
    kreplay_agent_t a, v1, by_id;
    counter_listing listing = {0, 0, 0};
    const char* names[] = {"threads_launched", "launches"};
    const char* misspelled[] = {"threads_lanched"};
    const char* three[] = {"threads_launched", "launches", "ops"};
    kreplay_counter_config_id_t config = {0}, ignored = {0};
    kreplay_counter_config_info_t cinfo;

    /* Size-checked queries: too small is refused, an older (v1) struct gets only its prefix. */
    memset(&a, 0, sizeof a);
    a.size = 8;
    CHECK_STATUS(kreplay_query_agent(i, &a), KREPLAY_STATUS_ERROR_INCOMPATIBLE_ABI);
    a.size = sizeof a;
    CHECK_OK(kreplay_query_agent(i, &a));
    CHECK(a.size == sizeof a);
    CHECK(a.id.handle != 0 && a.name != NULL && a.chip_name != NULL);
    CHECK(a.type == KREPLAY_AGENT_TYPE_HOST_DEVICE);
    CHECK(a.device_index == i);
    CHECK(memchr(a.uuid, '\0', sizeof a.uuid) != NULL); /* NUL-terminated */
    memset(&v1, 0, sizeof v1);
    v1.size = KREPLAY_AGENT_V1_SIZE;
    CHECK_OK(kreplay_query_agent(i, &v1));
    CHECK(v1.size == KREPLAY_AGENT_V1_SIZE && v1.id.handle == a.id.handle);
    memset(&by_id, 0, sizeof by_id);
    by_id.size = sizeof by_id;
    CHECK_OK(kreplay_query_agent_by_id(a.id, &by_id));
    CHECK(by_id.id.handle == a.id.handle && strcmp(by_id.name, a.name) == 0);

    /* Counters of the agent, and a config for [threads_launched, launches]. */
    CHECK_OK(kreplay_iterate_agent_counters(a.id, list_counters, &listing));
    CHECK(listing.count >= 2 && listing.has_threads_launched && listing.has_launches);
    CHECK_STATUS(kreplay_create_counter_config(a.id, misspelled, 1, &ignored),
                 KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND);
    CHECK(strstr(kreplay_get_last_error_message(), "threads_lanched") != NULL);
    if (a.counters_per_pass == 2) {
      CHECK_STATUS(kreplay_create_counter_config(a.id, three, 3, &ignored),
                   KREPLAY_STATUS_ERROR_EXCEEDS_HW_LIMIT);
    }
    CHECK_STATUS(kreplay_create_counter_config(a.id, names, 0, &ignored),
                 KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_OK(kreplay_create_counter_config(a.id, names, 2, &config));
    CHECK(config.handle != 0);
    memset(&cinfo, 0, sizeof cinfo);
    cinfo.size = sizeof cinfo;
    CHECK_OK(kreplay_query_counter_config(config, &cinfo));
    CHECK(cinfo.agent_id.handle == a.id.handle && cinfo.counter_count == 2 &&
          cinfo.pass_count == 1);
    g_configs[g_config_count].agent = a.id;
    g_configs[g_config_count].config = config;
    ++g_config_count;
  }
  {
    kreplay_agent_t none;
    kreplay_counter_config_info_t cinfo;
    const kreplay_counter_config_id_t bogus = {424242};
    memset(&none, 0, sizeof none);
    none.size = sizeof none;
    CHECK_STATUS(kreplay_query_agent(count, &none), KREPLAY_STATUS_ERROR_AGENT_NOT_FOUND);
    CHECK_STATUS(kreplay_query_agent(0, NULL), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
    memset(&cinfo, 0, sizeof cinfo);
    cinfo.size = sizeof cinfo;
    CHECK_STATUS(kreplay_query_counter_config(bogus, &cinfo),
                 KREPLAY_STATUS_ERROR_CONFIG_NOT_FOUND);
  }
}

static void check_contexts(void) {
  const kreplay_context_id_t unknown = {424242};
  const uint32_t execute = KREPLAY_KERNEL_DISPATCH_EXECUTE;
  const uint32_t bad_operation = KREPLAY_KERNEL_DISPATCH_LAST;
  kreplay_context_id_t second;
  int flag = -1;
  kreplay_kernel_replay_options_t options;

  CHECK_OK(kreplay_create_context(&g_replay_ctx));
  CHECK_OK(kreplay_create_context(&g_trace_ctx));
  CHECK_OK(kreplay_create_context(&g_count_ctx));
  CHECK_OK(kreplay_create_context(&g_idle_ctx));
  CHECK_OK(kreplay_create_context(&second));
  CHECK(g_replay_ctx.handle != 0 && g_replay_ctx.handle != g_trace_ctx.handle);
  CHECK_STATUS(kreplay_create_context(NULL), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);

  CHECK_OK(kreplay_configure_callback_tracing_service(g_replay_ctx,
                                                      KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY, NULL,
                                                      0, on_kernel_replay, &g_replay_ctx));
  /* One KERNEL_REPLAY subscriber per process. */
  CHECK_STATUS(kreplay_configure_callback_tracing_service(
                   second, KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY, NULL, 0, on_kernel_replay, NULL),
               KREPLAY_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED);
  CHECK_OK(kreplay_configure_callback_tracing_service(g_trace_ctx,
                                                      KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH,
                                                      &execute, 1, on_kernel_dispatch, NULL));
  CHECK_STATUS(
      kreplay_configure_callback_tracing_service(
          g_trace_ctx, KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH, NULL, 0, on_kernel_dispatch, NULL),
      KREPLAY_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED);
  CHECK_STATUS(kreplay_configure_callback_tracing_service(second, KREPLAY_CALLBACK_TRACING_LAST,
                                                          NULL, 0, on_kernel_dispatch, NULL),
               KREPLAY_STATUS_ERROR_KIND_NOT_FOUND);
  CHECK_STATUS(
      kreplay_configure_callback_tracing_service(second, KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH,
                                                 &bad_operation, 1, on_kernel_dispatch, NULL),
      KREPLAY_STATUS_ERROR_OPERATION_NOT_FOUND);
  CHECK_STATUS(kreplay_configure_callback_tracing_service(
                   second, KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH, NULL, 0, NULL, NULL),
               KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(
      kreplay_configure_callback_tracing_service(unknown, KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH,
                                                 NULL, 0, on_kernel_dispatch, NULL),
      KREPLAY_STATUS_ERROR_CONTEXT_NOT_FOUND);
  CHECK_OK(kreplay_configure_dispatch_counting_service(g_count_ctx, pick_counters, &g_count_ctx,
                                                       counter_records, &g_count_ctx));
  CHECK_STATUS(kreplay_configure_dispatch_counting_service(g_count_ctx, pick_counters, NULL,
                                                           counter_records, NULL),
               KREPLAY_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED);
  /* Per-pass services (services.h): size-checked settings, a record callback, known metrics. None
   * of these configures anything. */
  {
    kreplay_pc_sampling_config_t pc;
    kreplay_sass_metrics_config_t sass;
    const char* unknown_metric = "no_such_sass_metric";
    memset(&pc, 0, sizeof pc);
    pc.size = 4;
    CHECK_STATUS(
        kreplay_configure_pc_sampling_service(second, &pc, NULL, NULL, service_records, NULL),
        KREPLAY_STATUS_ERROR_INCOMPATIBLE_ABI);
    pc.size = sizeof pc;
    CHECK_STATUS(kreplay_configure_pc_sampling_service(second, &pc, NULL, NULL, NULL, NULL),
                 KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
    pc.period_log2 = 40;
    CHECK_STATUS(
        kreplay_configure_pc_sampling_service(second, &pc, NULL, NULL, service_records, NULL),
        KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
    memset(&sass, 0, sizeof sass);
    sass.size = sizeof sass;
    sass.metrics = &unknown_metric;
    sass.metric_count = 1;
    CHECK_STATUS(
        kreplay_configure_sass_metrics_service(second, &sass, NULL, NULL, service_records, NULL),
        KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND);
    CHECK(strcmp(kreplay_get_pass_service_name(KREPLAY_PASS_SERVICE_PM_SAMPLING), "pm_sampling") ==
          0);
  }

  /* Configured, never started: local control must refuse it. */
  CHECK_OK(kreplay_configure_callback_tracing_service(
      g_idle_ctx, KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH, NULL, 0, on_kernel_dispatch, NULL));

  /* Replay options: size-checked; NONE keeps the current scope. */
  memset(&options, 0, sizeof options);
  options.size = 8;
  CHECK_STATUS(kreplay_configure_kernel_replay_options(&options),
               KREPLAY_STATUS_ERROR_INCOMPATIBLE_ABI);
  options.size = sizeof options;
  options.snapshot_scope = KREPLAY_SNAPSHOT_SCOPE_LAST;
  CHECK_STATUS(kreplay_configure_kernel_replay_options(&options),
               KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  options.snapshot_scope = KREPLAY_SNAPSHOT_SCOPE_ALL;
  CHECK_OK(kreplay_configure_kernel_replay_options(&options));
  /* cache_control is range-checked, and ignored when the caller's size ends before it. */
  options.cache_control = KREPLAY_CACHE_CONTROL_LAST;
  CHECK_STATUS(kreplay_configure_kernel_replay_options(&options),
               KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  options.size = offsetof(kreplay_kernel_replay_options_t, cache_control);
  CHECK_OK(kreplay_configure_kernel_replay_options(&options));
  options.size = sizeof options;
  options.cache_control = KREPLAY_CACHE_CONTROL_NONE;

  CHECK_OK(kreplay_context_is_valid(g_replay_ctx, &flag));
  CHECK(flag == 1);
  CHECK_OK(kreplay_context_is_valid(unknown, &flag));
  CHECK(flag == 0);
  CHECK_OK(kreplay_context_is_active(g_replay_ctx, &flag));
  CHECK(flag == 0);
  CHECK_STATUS(kreplay_start_context(unknown), KREPLAY_STATUS_ERROR_CONTEXT_NOT_FOUND);
  CHECK_STATUS(kreplay_context_is_active(g_replay_ctx, NULL),
               KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);

  CHECK_OK(kreplay_start_context(g_trace_ctx));
  CHECK_OK(kreplay_start_context(g_count_ctx));
  CHECK_OK(kreplay_start_context(g_replay_ctx));
  CHECK_OK(kreplay_start_context(g_replay_ctx)); /* starting twice is fine */
  CHECK_OK(kreplay_context_is_active(g_replay_ctx, &flag));
  CHECK(flag == 1);
  CHECK_OK(kreplay_context_is_active(g_idle_ctx, &flag));
  CHECK(flag == 0);
}

static int tool_initialize(kreplay_client_finalize_t finalize, void* tool_data) {
  CHECK(finalize != NULL);
  CHECK(tool_data == &g_checks);
  check_version_and_time();
  check_names();
  check_agents_and_counters();
  check_contexts();
  printf(TAG "initialized: %lu API checks, %lu errors\n", atomic_load(&g_checks),
         atomic_load(&g_errors));
  return 0;
}

static void tool_finalize(void* tool_data) {
  CHECK(tool_data == &g_checks);
  printf(TAG
         "summary: dispatches=%lu replayed=%lu passes=%lu dispatch_exits=%lu "
         "counter_records=%lu continue_calls=%lu api_checks=%lu errors=%lu\n",
         atomic_load(&g_dispatches), atomic_load(&g_replayed), atomic_load(&g_passes),
         atomic_load(&g_dispatch_exits), atomic_load(&g_counter_records),
         atomic_load(&g_continue_calls), atomic_load(&g_checks), atomic_load(&g_errors));
  fflush(stdout);
}

kreplay_tool_configure_result_t* kreplay_configure(uint32_t version, const char* runtime_version,
                                                   uint32_t priority,
                                                   kreplay_client_id_t* client_id) {
  static kreplay_tool_configure_result_t result;
  CHECK(version == KREPLAY_VERSION);
  CHECK(runtime_version != NULL && strcmp(runtime_version, KREPLAY_VERSION_STRING) == 0);
  CHECK(client_id != NULL && client_id->handle != 0);
  (void)priority;
  result.size = sizeof result;
  result.initialize = tool_initialize;
  result.finalize = tool_finalize;
  result.tool_data = &g_checks;
  client_id->name = "kreplay-c-tool";
  return &result;
}
