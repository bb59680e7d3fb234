/*
 * pass_tool: the GPU suite's KERNEL_REPLAY tool, written in C11 against the public headers only,
 * as any third-party tool would be. It links no kreplay library: the kreplay_* symbols resolve at
 * load time from the SDK already in the process.
 *
 * Environment:
 *   KREPLAY_TEST_PASSES=N        pass count returned by replay_pass_count (default 2)
 *   KREPLAY_TEST_EARLY_EXIT=K    set replay_continue, which stops once pass K has run, so
 *                                min(K+1, N) passes run (K+1 when N is 0, an indefinite loop)
 *   KREPLAY_TEST_KERNEL_REGEX=S  only launches whose kernel name contains S are replayed; the
 *                                others get replay_pass_count left NULL (a substring, not a regex)
 *   KREPLAY_TEST_MAX_DISPATCHES=M  only the first M launches it would replay are replayed (as
 *                                ncu's --launch-count); later ones are left NULL (not requested)
 *
 * It checks the KERNEL_REPLAY contract (DESIGN §2) on every dispatch: one dispatch id from CONFIG
 * through every PASS; pass indices 0, 1, 2, ... with ENTER/EXIT paired; total_passes equal to the
 * plan; replay_pass_count called once; replay_continue asked only about the pass that just ended
 * and never after pass N-1; CONFIG EXIT's outcome matching what ran (executed passes, no PASS
 * callbacks for a declined or unrequested dispatch, no launch into a capturing stream). Each
 * violation is printed as a KREPLAY_TEST_TOOL_ERROR line and counted.
 *
 * At finalize it prints to stderr (run_gpu_suite.sh parses the first line):
 *   KREPLAY_TEST_TOOL replayed=R declined=D not_requested=X passes=P errors=E
 *   KREPLAY_TEST_TOOL_DEVICE_FAULTS N   (only when N > 0: dispatches whose kernel failed on
 *                                           the device, an assert or fault of the application's)
 *   KREPLAY_TEST_TOOL_DECLINES <reason>=<count> ...
 *   KREPLAY_TEST_TOOL_COSTS snapshot_ms=.. restore_ms=.. snapshot_bytes=.. restore_bytes=..
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kreplay/kreplay.h"

#define TOOL_EXPORT __attribute__((visibility("default")))
#define MAX_ERROR_LINES 50

/* Settings, read once in initialize. */
static uint64_t g_passes = 2;
static int g_early_exit_set = 0;
static uint64_t g_early_exit = 0;
static const char* g_kernel_filter = NULL;

/* Counters: callbacks arrive on every application thread that launches. */
static atomic_ullong g_replayed;
static atomic_ullong g_declined;
static atomic_ullong g_not_requested;
static atomic_ullong g_launch_failures; /* replayed dispatches whose kernel failed on the device */
static atomic_ullong g_requested;       /* launches it asked to replay (KREPLAY_TEST_MAX_DISPATCHES) */
static uint64_t g_max_dispatches = 0;
static int g_max_dispatches_set = 0;
static atomic_ullong g_passes_executed;
static atomic_ullong g_errors;
static atomic_ullong g_config_enters;
static atomic_ullong g_config_exits;
static atomic_ullong g_declined_by_reason[KREPLAY_DECLINE_REASON_LAST + 1];
/* Where replay time went (replayed dispatches): snapshot and restore times and bytes. */
static atomic_ullong g_snapshot_ns;
static atomic_ullong g_restore_ns;
static atomic_ullong g_snapshot_bytes;
static atomic_ullong g_restore_bytes;
static atomic_int g_initialized;
static atomic_int g_finalized;

/* Per requested dispatch, behind user_data.ptr from CONFIG ENTER to CONFIG EXIT. */
typedef struct dispatch_state_t {
  uint64_t dispatch_id;
  uint32_t flags;
  uint64_t pass_count_calls;
  uint64_t planned;         /* what replay_pass_count returned */
  uint64_t passes_entered;  /* PASS ENTER callbacks so far == next expected index */
  uint64_t passes_exited;
  int in_pass;              /* between a PASS ENTER and its EXIT */
  uint64_t continue_calls;
  int continue_said_stop;
} dispatch_state_t;

static void violation(uint64_t dispatch_id, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Count a contract violation; print the first MAX_ERROR_LINES of them. */
static void violation(uint64_t dispatch_id, const char* fmt, ...) {
  unsigned long long n = atomic_fetch_add(&g_errors, 1) + 1;
  if (n > MAX_ERROR_LINES) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "KREPLAY_TEST_TOOL_ERROR dispatch=%" PRIu64 " %s\n", dispatch_id, msg);
}

static const char* decline_reason_name(kreplay_decline_reason_t r) {
  switch (r) {
    case KREPLAY_DECLINE_REASON_NONE: return "NONE";
    case KREPLAY_DECLINE_REASON_INVALID_PLAN: return "INVALID_PLAN";
    case KREPLAY_DECLINE_REASON_SNAPSHOT_TOO_LARGE: return "SNAPSHOT_TOO_LARGE";
    case KREPLAY_DECLINE_REASON_DRAIN_TIMEOUT: return "DRAIN_TIMEOUT";
    case KREPLAY_DECLINE_REASON_REENTRANT_LAUNCH: return "REENTRANT_LAUNCH";
    case KREPLAY_DECLINE_REASON_STREAM_CAPTURE: return "STREAM_CAPTURE";
    case KREPLAY_DECLINE_REASON_GRAPH_LAUNCH: return "GRAPH_LAUNCH";
    case KREPLAY_DECLINE_REASON_UNTRACKED_MEMORY: return "UNTRACKED_MEMORY";
    case KREPLAY_DECLINE_REASON_SNAPSHOT_FAILED: return "SNAPSHOT_FAILED";
    case KREPLAY_DECLINE_REASON_LAUNCH_FAILED: return "LAUNCH_FAILED";
    case KREPLAY_DECLINE_REASON_PASS_TIMEOUT: return "PASS_TIMEOUT";
    case KREPLAY_DECLINE_REASON_COLLECTIVE: return "COLLECTIVE";
    case KREPLAY_DECLINE_REASON_NOTHING_SELECTED: return "NOTHING_SELECTED";
    case KREPLAY_DECLINE_REASON_DEVICE_HEAP: return "DEVICE_HEAP";
    case KREPLAY_DECLINE_REASON_GRAPH_HOST_NODE: return "GRAPH_HOST_NODE";
    case KREPLAY_DECLINE_REASON_GRAPH_DEVICE_LAUNCH: return "GRAPH_DEVICE_LAUNCH";
    case KREPLAY_DECLINE_REASON_GRAPH_MEMORY: return "GRAPH_MEMORY";
    case KREPLAY_DECLINE_REASON_WAITS_FOR_HOST: return "WAITS_FOR_HOST";
    case KREPLAY_DECLINE_REASON_PEER_MEMORY: return "PEER_MEMORY";
    case KREPLAY_DECLINE_REASON_WRITE_SET_UNKNOWN: return "WRITE_SET_UNKNOWN";
    case KREPLAY_DECLINE_REASON_LAST: break;
  }
  return "UNKNOWN";
}

static int wants_replay(const kreplay_kernel_dispatch_info_t* info) {
  if (g_kernel_filter == NULL) return 1;
  return info->kernel_name != NULL && strstr(info->kernel_name, g_kernel_filter) != NULL;
}

/* Passes a fixed or early-ending loop must run under the current settings. */
static uint64_t expected_passes(uint64_t planned) {
  if (!g_early_exit_set) return planned;
  uint64_t stop_after = g_early_exit + 1;
  return (planned == 0 || stop_after < planned) ? stop_after : planned;
}

static uint64_t on_pass_count(kreplay_kernel_dispatch_info_t info, kreplay_user_data_t user_data) {
  dispatch_state_t* st = (dispatch_state_t*)user_data.ptr;
  if (st == NULL) {
    violation(info.dispatch_id, "replay_pass_count got user_data.ptr NULL (written in CONFIG ENTER)");
    return g_passes;
  }
  st->pass_count_calls++;
  if (info.dispatch_id != st->dispatch_id) {
    violation(info.dispatch_id, "replay_pass_count: dispatch id differs from CONFIG ENTER's %" PRIu64,
              st->dispatch_id);
  }
  st->planned = g_passes;
  return g_passes;
}

static int on_continue(kreplay_kernel_dispatch_info_t info, uint64_t current_pass,
                       uint64_t total_passes, kreplay_user_data_t user_data) {
  dispatch_state_t* st = (dispatch_state_t*)user_data.ptr;
  if (st == NULL) {
    violation(info.dispatch_id, "replay_continue got user_data.ptr NULL");
    return 0;
  }
  st->continue_calls++;
  if (info.dispatch_id != st->dispatch_id) {
    violation(info.dispatch_id, "replay_continue: dispatch id differs from CONFIG's %" PRIu64,
              st->dispatch_id);
  }
  if (st->in_pass || current_pass + 1 != st->passes_exited) {
    violation(info.dispatch_id,
              "replay_continue asked about pass %" PRIu64 " but %" PRIu64 " passes have exited%s",
              current_pass, st->passes_exited, st->in_pass ? " (inside a pass)" : "");
  }
  if (total_passes != st->planned) {
    violation(info.dispatch_id, "replay_continue total_passes %" PRIu64 ", plan %" PRIu64,
              total_passes, st->planned);
  }
  if (st->planned != 0 && current_pass + 1 >= st->planned) {
    violation(info.dispatch_id, "replay_continue asked after pass %" PRIu64 " of a %" PRIu64
              "-pass loop", current_pass, st->planned);
  }
  if (st->continue_said_stop) {
    violation(info.dispatch_id, "replay_continue asked again after it returned 0");
  }
  int go_on = current_pass < g_early_exit;
  if (!go_on) st->continue_said_stop = 1;
  return go_on;
}

static void on_config_enter(kreplay_callback_tracing_kernel_replay_data_t* p,
                            kreplay_user_data_t* user_data) {
  atomic_fetch_add(&g_config_enters, 1);
  const kreplay_kernel_dispatch_info_t* info = &p->dispatch_info;
  if (info->dispatch_id == 0) violation(0, "CONFIG ENTER with dispatch id 0");
  if (p->current_pass != 0 || p->total_passes != 0 || p->outcome != NULL) {
    violation(info->dispatch_id, "CONFIG ENTER carries pass fields or an outcome");
  }
  user_data->ptr = NULL;
  if (!wants_replay(info)) return;  /* replay_pass_count stays NULL: not requested */
  if (g_max_dispatches_set && atomic_fetch_add(&g_requested, 1) >= g_max_dispatches) return;
  dispatch_state_t* st = (dispatch_state_t*)calloc(1, sizeof *st);
  if (st == NULL) {
    violation(info->dispatch_id, "out of memory");
    return;
  }
  st->dispatch_id = info->dispatch_id;
  st->flags = info->flags;
  user_data->ptr = st;
  p->replay_pass_count = on_pass_count;
  if (g_early_exit_set) p->replay_continue = on_continue;
}

static void on_pass(kreplay_callback_tracing_record_t record,
                    kreplay_callback_tracing_kernel_replay_data_t* p, kreplay_user_data_t user_data) {
  uint64_t id = p->dispatch_info.dispatch_id;
  dispatch_state_t* st = (dispatch_state_t*)user_data.ptr;
  if (st == NULL) {
    violation(id, "PASS %" PRIu64 " for a dispatch that asked for no replay", p->current_pass);
    return;
  }
  if (id != st->dispatch_id) {
    violation(id, "PASS carries dispatch id %" PRIu64 ", CONFIG had %" PRIu64, id, st->dispatch_id);
  }
  if (p->replay_pass_count != NULL || p->replay_continue != NULL || p->outcome != NULL) {
    violation(id, "PASS payload carries CONFIG callbacks or an outcome");
  }
  if (p->total_passes != st->planned) {
    violation(id, "PASS total_passes %" PRIu64 ", plan %" PRIu64, p->total_passes, st->planned);
  }
  if (record.phase == KREPLAY_CALLBACK_PHASE_ENTER) {
    if (st->in_pass || p->current_pass != st->passes_entered) {
      violation(id, "PASS ENTER index %" PRIu64 ", expected %" PRIu64 "%s", p->current_pass,
                st->passes_entered, st->in_pass ? " (previous pass never exited)" : "");
    }
    if (p->replay_start_context == NULL || p->replay_stop_context == NULL) {
      violation(id, "PASS ENTER without replay_start_context / replay_stop_context");
    }
    st->in_pass = 1;
    st->passes_entered++;
  } else {
    if (!st->in_pass || p->current_pass + 1 != st->passes_entered) {
      violation(id, "PASS EXIT index %" PRIu64 " does not close PASS ENTER %" PRIu64,
                p->current_pass, st->passes_entered ? st->passes_entered - 1 : 0);
    }
    st->in_pass = 0;
    st->passes_exited++;
  }
}

static void on_config_exit(kreplay_callback_tracing_kernel_replay_data_t* p,
                           kreplay_user_data_t* user_data) {
  atomic_fetch_add(&g_config_exits, 1);
  uint64_t id = p->dispatch_info.dispatch_id;
  dispatch_state_t* st = (dispatch_state_t*)user_data->ptr;
  const kreplay_replay_outcome_record_t* o = p->outcome;
  if (o == NULL) {
    violation(id, "CONFIG EXIT without an outcome");
    free(st);
    user_data->ptr = NULL;
    return;
  }
  if (o->dispatch_id != id) {
    violation(id, "outcome names dispatch %" PRIu64, o->dispatch_id);
  }
  switch (o->outcome) {
    case KREPLAY_REPLAY_OUTCOME_REPLAYED:
      atomic_fetch_add(&g_replayed, 1);
      atomic_fetch_add(&g_passes_executed, o->passes_executed);
      atomic_fetch_add(&g_snapshot_ns, o->snapshot_ns);
      atomic_fetch_add(&g_restore_ns, o->restore_ns);
      atomic_fetch_add(&g_snapshot_bytes, o->bytes_snapshotted);
      atomic_fetch_add(&g_restore_bytes, o->bytes_restored);
      break;
    case KREPLAY_REPLAY_OUTCOME_DECLINED: {
      atomic_fetch_add(&g_declined, 1);
      unsigned r = (unsigned)o->reason;
      if (r > (unsigned)KREPLAY_DECLINE_REASON_LAST) r = (unsigned)KREPLAY_DECLINE_REASON_LAST;
      atomic_fetch_add(&g_declined_by_reason[r], 1);
      if (o->reason == KREPLAY_DECLINE_REASON_NONE) violation(id, "declined without a reason");
      break;
    }
    case KREPLAY_REPLAY_OUTCOME_NOT_REQUESTED:
      atomic_fetch_add(&g_not_requested, 1);
      break;
    default:
      violation(id, "outcome %d is not a valid kreplay_replay_outcome_t", (int)o->outcome);
      break;
  }

  if (st == NULL) { /* not requested by the filter */
    if (o->outcome != KREPLAY_REPLAY_OUTCOME_NOT_REQUESTED) {
      violation(id, "a dispatch with replay_pass_count NULL has outcome %d", (int)o->outcome);
    }
    return;
  }
  if (st->pass_count_calls != 1) {
    violation(id, "replay_pass_count called %" PRIu64 " times", st->pass_count_calls);
  }
  if (st->in_pass) violation(id, "CONFIG EXIT inside a pass (PASS EXIT missing)");

  const int loop_planned = st->planned > 1 || (st->planned == 0 && g_early_exit_set);
  if (o->outcome == KREPLAY_REPLAY_OUTCOME_REPLAYED &&
      o->reason == KREPLAY_DECLINE_REASON_LAUNCH_FAILED) {
    /* The kernel failed on the device (an assert, a fault: the application's own error): the loop
     * ends in the pass that failed, which had its PASS ENTER and EXIT but did not complete. */
    atomic_fetch_add(&g_launch_failures, 1);
    if (st->passes_entered != st->passes_exited || o->passes_executed + 1 != st->passes_entered) {
      violation(id,
                "failed on the device: outcome says %" PRIu64 " passes, PASS ENTER %" PRIu64
                ", EXIT %" PRIu64,
                o->passes_executed, st->passes_entered, st->passes_exited);
    }
  } else if (o->outcome == KREPLAY_REPLAY_OUTCOME_REPLAYED) {
    const uint64_t want = expected_passes(st->planned);
    if (!loop_planned) violation(id, "replayed although the plan was %" PRIu64, st->planned);
    if (o->reason != KREPLAY_DECLINE_REASON_NONE) {
      violation(id, "replayed but the loop ended early: %s", decline_reason_name(o->reason));
    }
    if (o->passes_executed != want || st->passes_entered != want || st->passes_exited != want) {
      violation(id, "passes: outcome says %" PRIu64 ", PASS ENTER %" PRIu64 ", EXIT %" PRIu64
                ", expected %" PRIu64, o->passes_executed, st->passes_entered, st->passes_exited,
                want);
    }
    if (o->passes_requested != st->planned) {
      violation(id, "outcome passes_requested %" PRIu64 ", plan %" PRIu64, o->passes_requested,
                st->planned);
    }
    /* Asked after every pass but the last of a loop that ran to its plan. */
    if (g_early_exit_set && st->continue_calls != want - (want == st->planned)) {
      violation(id, "replay_continue asked %" PRIu64 " times for %" PRIu64 " passes",
                st->continue_calls, want);
    }
    if (st->flags & KREPLAY_DISPATCH_FLAG_CAPTURED) violation(id, "a captured launch was replayed");
  } else if (o->outcome == KREPLAY_REPLAY_OUTCOME_DECLINED &&
             o->reason == KREPLAY_DECLINE_REASON_WRITE_SET_UNKNOWN && st->passes_entered != 0) {
    /* A write-bounded snapshot found, after the application's own pass, that the launch wrote
     * outside what was saved: that pass (0, with its callbacks) was the only one. */
    if (st->passes_entered != 1 || st->passes_exited != 1 || o->passes_executed != 1) {
      violation(id, "declined after its own pass: outcome says %" PRIu64 " passes, PASS ENTER %" PRIu64
                ", EXIT %" PRIu64, o->passes_executed, st->passes_entered, st->passes_exited);
    }
  } else {
    if (st->passes_entered != 0 || st->passes_exited != 0) {
      violation(id, "outcome %d but %" PRIu64 " PASS callbacks ran", (int)o->outcome,
                st->passes_entered + st->passes_exited);
    }
    if (o->outcome == KREPLAY_REPLAY_OUTCOME_NOT_REQUESTED && loop_planned) {
      violation(id, "a %" PRIu64 "-pass plan came back NOT_REQUESTED", st->planned);
    }
    if (o->outcome == KREPLAY_REPLAY_OUTCOME_DECLINED && !loop_planned &&
        o->reason != KREPLAY_DECLINE_REASON_INVALID_PLAN) {
      violation(id, "a plan of %" PRIu64 " passes was declined for %s", st->planned,
                decline_reason_name(o->reason));
    }
  }
  free(st);
  user_data->ptr = NULL;
}

static void on_replay(kreplay_callback_tracing_record_t record, kreplay_user_data_t* user_data,
                      void* callback_data) {
  (void)callback_data;
  if (record.kind != KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY || record.payload == NULL) {
    violation(0, "callback of kind %d (payload %p) on the KERNEL_REPLAY subscription",
              (int)record.kind, record.payload);
    return;
  }
  kreplay_callback_tracing_kernel_replay_data_t* p =
      (kreplay_callback_tracing_kernel_replay_data_t*)record.payload;
  if (record.operation == KREPLAY_KERNEL_REPLAY_CONFIG) {
    if (record.phase == KREPLAY_CALLBACK_PHASE_ENTER) {
      on_config_enter(p, user_data);
    } else {
      on_config_exit(p, user_data);
    }
  } else if (record.operation == KREPLAY_KERNEL_REPLAY_PASS) {
    on_pass(record, p, *user_data);
  } else {
    violation(p->dispatch_info.dispatch_id, "unexpected KERNEL_REPLAY operation %u",
              (unsigned)record.operation);
  }
}

static int env_u64(const char* name, uint64_t* out) {
  const char* s = getenv(name);
  if (s == NULL || *s == '\0') return 0;
  char* end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || *end != '\0') {
    fprintf(stderr, "KREPLAY_TEST_TOOL_ERROR %s=%s is not a number\n", name, s);
    atomic_fetch_add(&g_errors, 1);
    return 0;
  }
  *out = (uint64_t)v;
  return 1;
}

static int tool_init(kreplay_client_finalize_t finalize_func, void* tool_data) {
  (void)finalize_func;
  (void)tool_data;
  env_u64("KREPLAY_TEST_PASSES", &g_passes);
  g_early_exit_set = env_u64("KREPLAY_TEST_EARLY_EXIT", &g_early_exit);
  g_max_dispatches_set = env_u64("KREPLAY_TEST_MAX_DISPATCHES", &g_max_dispatches);
  const char* filter = getenv("KREPLAY_TEST_KERNEL_REGEX");
  g_kernel_filter = (filter != NULL && *filter != '\0') ? filter : NULL;

  kreplay_context_id_t ctx;
  kreplay_status_t st = kreplay_create_context(&ctx);
  if (st == KREPLAY_STATUS_SUCCESS) {
    st = kreplay_configure_callback_tracing_service(ctx, KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY,
                                                    NULL, 0, on_replay, NULL);
  }
  if (st == KREPLAY_STATUS_SUCCESS) st = kreplay_start_context(ctx);
  if (st != KREPLAY_STATUS_SUCCESS) {
    const char* name = kreplay_get_status_name(st);
    fprintf(stderr, "KREPLAY_TEST_TOOL_ERROR initialize failed: %s (%s)\n",
            name ? name : "unknown status", kreplay_get_last_error_message());
    return 1;
  }
  fprintf(stderr, "KREPLAY_TEST_TOOL_CONFIG passes=%" PRIu64 " early_exit=%s%" PRIu64
          " kernel_filter=%s\n", g_passes, g_early_exit_set ? "" : "unset/", g_early_exit,
          g_kernel_filter ? g_kernel_filter : "(none)");
  atomic_store(&g_initialized, 1);
  return 0;
}

static void tool_fini(void* tool_data) {
  (void)tool_data;
  if (atomic_fetch_add(&g_finalized, 1) != 0) {
    violation(0, "finalize called more than once");
    return;
  }
  unsigned long long enters = atomic_load(&g_config_enters);
  unsigned long long exits = atomic_load(&g_config_exits);
  if (enters != exits) {
    violation(0, "%llu CONFIG ENTER but %llu CONFIG EXIT", enters, exits);
  }
  fprintf(stderr, "KREPLAY_TEST_TOOL replayed=%llu declined=%llu not_requested=%llu passes=%llu "
          "errors=%llu\n", atomic_load(&g_replayed), atomic_load(&g_declined),
          atomic_load(&g_not_requested), atomic_load(&g_passes_executed), atomic_load(&g_errors));
  if (atomic_load(&g_launch_failures) != 0) {
    fprintf(stderr, "KREPLAY_TEST_TOOL_DEVICE_FAULTS %llu\n", atomic_load(&g_launch_failures));
  }
  fprintf(stderr, "KREPLAY_TEST_TOOL_DECLINES");
  for (int r = 0; r <= KREPLAY_DECLINE_REASON_LAST; ++r) {
    unsigned long long n = atomic_load(&g_declined_by_reason[r]);
    if (n) fprintf(stderr, " %s=%llu", decline_reason_name((kreplay_decline_reason_t)r), n);
  }
  fprintf(stderr, "\n");
  fprintf(stderr, "KREPLAY_TEST_TOOL_COSTS snapshot_ms=%.1f restore_ms=%.1f snapshot_bytes=%llu "
          "restore_bytes=%llu\n", (double)atomic_load(&g_snapshot_ns) / 1e6,
          (double)atomic_load(&g_restore_ns) / 1e6, atomic_load(&g_snapshot_bytes),
          atomic_load(&g_restore_bytes));
  fflush(stderr);
}

/* A tool that initialized but was never finalized says so, so that the missing summary line is
 * explained in the log (the suite fails the run either way). */
__attribute__((destructor)) static void tool_unload(void) {
  if (atomic_load(&g_initialized) && !atomic_load(&g_finalized)) {
    fprintf(stderr, "KREPLAY_TEST_TOOL_ERROR finalize was never called\n");
  }
}

TOOL_EXPORT kreplay_tool_configure_result_t* kreplay_configure(uint32_t version,
                                                               const char* runtime_version,
                                                               uint32_t priority,
                                                               kreplay_client_id_t* client_id) {
  (void)priority;
  static kreplay_tool_configure_result_t result = {sizeof(kreplay_tool_configure_result_t),
                                                   tool_init, tool_fini, NULL};
  if (version != KREPLAY_VERSION) {
    fprintf(stderr, "KREPLAY_TEST_TOOL note: built against SDK %d, running on %u (%s)\n",
            KREPLAY_VERSION, version, runtime_version ? runtime_version : "?");
  }
  if (client_id != NULL) client_id->name = "kreplay-test-pass-tool";
  return &result;
}
