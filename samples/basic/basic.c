/*
 * basic: the smallest complete kernel-replay tool, in plain C.
 *
 * It replays every kernel launch 3 times and prints a line when each pass begins and ends (with
 * how long the kernel ran in that pass), then what became of the dispatch:
 *
 *   ==KREPLAY-SAMPLE== dispatch 1 scale_add(float*, float, float, unsigned int) pass 1/3 enter
 *   ==KREPLAY-SAMPLE== dispatch 1 scale_add(float*, ...) pass 1/3 exit (kernel 10.5 us)
 *   ...
 *   ==KREPLAY-SAMPLE== dispatch 1 replayed: 3 passes; snapshot 19.9 KiB in 4 regions, ...
 *
 * (The snapshot holds every tracked region of the device: the application's three buffers and its
 * module variable. After a pass only the chunks that changed are copied back: here x and the
 * launch counter, twice.)
 *
 * Run it:
 *   KREPLAY_TOOL_LIBRARIES=build/lib/libkreplay_sample_basic.so build/bin/kreplay-sample-app
 *
 * What it shows:
 *   1. kreplay_configure, the one symbol a tool exports. Contexts and services are set up in the
 *      initialize function it returns (and only there).
 *   2. A context subscribed to KERNEL_REPLAY. In CONFIG ENTER the tool sets replay_pass_count; the
 *      SDK calls it once and runs that many passes. PASS ENTER/EXIT bracket every pass; CONFIG
 *      EXIT reports the outcome (replayed, or declined and why).
 *   3. The same context subscribed to KERNEL_DISPATCH, to time every pass. A pass's
 *      KERNEL_DISPATCH EXIT arrives before its PASS EXIT, on the same thread, so a thread-local
 *      variable carries the duration from one callback to the other.
 *
 * Passes are printed 1-based ("pass 1/3" is current_pass 0); the SDK counts them from 0.
 */
#include <kreplay/kreplay.h>

#include <stdatomic.h>
#include <stdio.h>

/* How many times every launch runs: the application's own execution plus 2 replays. */
#define PASSES 3

#define TAG "==KREPLAY-SAMPLE== "

/* Summary counters, printed when the tool is finalized (at process exit). Atomic because
 * launches from several application threads call back concurrently. */
static atomic_ulong g_dispatches;
static atomic_ulong g_replayed;
static atomic_ulong g_passes;

/* Kernel time of the pass that just completed on this thread: written by the KERNEL_DISPATCH EXIT
 * callback, read by the PASS EXIT that follows it. */
static _Thread_local struct {
  uint64_t dispatch_id;
  uint64_t pass;
  uint64_t ns;
} g_last_kernel;

/* ---- helpers --------------------------------------------------------------------------------- */

static const char* decline_reason_text(kreplay_decline_reason_t reason) {
  switch (reason) {
    case KREPLAY_DECLINE_REASON_INVALID_PLAN:
      return "pass count 0 without replay_continue";
    case KREPLAY_DECLINE_REASON_SNAPSHOT_TOO_LARGE:
      return "snapshot does not fit";
    case KREPLAY_DECLINE_REASON_DRAIN_TIMEOUT:
      return "earlier work did not finish";
    case KREPLAY_DECLINE_REASON_REENTRANT_LAUNCH:
      return "launched from inside a replay";
    case KREPLAY_DECLINE_REASON_STREAM_CAPTURE:
      return "stream under capture";
    case KREPLAY_DECLINE_REASON_GRAPH_LAUNCH:
      return "graph launch";
    case KREPLAY_DECLINE_REASON_UNTRACKED_MEMORY:
      return "untracked memory";
    case KREPLAY_DECLINE_REASON_SNAPSHOT_FAILED:
      return "snapshot failed";
    case KREPLAY_DECLINE_REASON_LAUNCH_FAILED:
      return "launch failed";
    case KREPLAY_DECLINE_REASON_PASS_TIMEOUT:
      return "a pass timed out";
    default:
      return "no reason given";
  }
}

/* "8.0 KiB" into buf. */
static const char* format_bytes(uint64_t bytes, char* buf, size_t size) {
  if (bytes < 1024) {
    snprintf(buf, size, "%llu B", (unsigned long long)bytes);
  } else if (bytes < 1024 * 1024) {
    snprintf(buf, size, "%.1f KiB", (double)bytes / 1024.0);
  } else {
    snprintf(buf, size, "%.1f MiB", (double)bytes / (1024.0 * 1024.0));
  }
  return buf;
}

/* ---- the replay plan ------------------------------------------------------------------------- */

/* Called by the SDK once per dispatch, right after CONFIG ENTER returned. 0 would mean "until
 * replay_continue says stop", 1 "do not replay", N > 1 "exactly N passes". */
static uint64_t pass_count(kreplay_kernel_dispatch_info_t dispatch_info,
                           kreplay_user_data_t user_data) {
  (void)dispatch_info;
  (void)user_data;
  return PASSES;
}

/* ---- callbacks ------------------------------------------------------------------------------- */

static void on_kernel_replay(kreplay_callback_tracing_record_t record,
                             kreplay_user_data_t* user_data, void* callback_data) {
  kreplay_callback_tracing_kernel_replay_data_t* payload = record.payload;
  const kreplay_kernel_dispatch_info_t* info = &payload->dispatch_info;
  (void)user_data;
  (void)callback_data;

  if (record.operation == KREPLAY_KERNEL_REPLAY_CONFIG) {
    if (record.phase == KREPLAY_CALLBACK_PHASE_ENTER) {
      /* Opt in: without replay_pass_count the launch simply runs once. */
      payload->replay_pass_count = pass_count;
      atomic_fetch_add(&g_dispatches, 1);
    } else {
      /* CONFIG EXIT: the outcome. A replayed dispatch gets it after its last pass; one that was
       * not replayed (or was declined) gets it before its single run. */
      const kreplay_replay_outcome_record_t* out = payload->outcome;
      char snap[32], restored[32];
      if (out->outcome == KREPLAY_REPLAY_OUTCOME_REPLAYED) {
        atomic_fetch_add(&g_replayed, 1);
        printf(TAG
               "dispatch %llu replayed: %llu passes; snapshot %s in %llu regions, %s restored\n",
               (unsigned long long)info->dispatch_id, (unsigned long long)out->passes_executed,
               format_bytes(out->bytes_snapshotted, snap, sizeof snap),
               (unsigned long long)out->regions,
               format_bytes(out->bytes_restored, restored, sizeof restored));
      } else if (out->outcome == KREPLAY_REPLAY_OUTCOME_DECLINED) {
        printf(TAG "dispatch %llu %s declined (%s): it runs once\n",
               (unsigned long long)info->dispatch_id, info->kernel_name,
               decline_reason_text(out->reason));
      } else {
        printf(TAG "dispatch %llu %s not replayed\n", (unsigned long long)info->dispatch_id,
               info->kernel_name);
      }
    }
    return;
  }

  if (record.operation == KREPLAY_KERNEL_REPLAY_PASS) {
    const unsigned long long pass = (unsigned long long)payload->current_pass + 1;
    const unsigned long long total = (unsigned long long)payload->total_passes;
    if (record.phase == KREPLAY_CALLBACK_PHASE_ENTER) {
      printf(TAG "dispatch %llu %s pass %llu/%llu enter\n", (unsigned long long)info->dispatch_id,
             info->kernel_name, pass, total);
    } else {
      atomic_fetch_add(&g_passes, 1);
      if (g_last_kernel.dispatch_id == info->dispatch_id &&
          g_last_kernel.pass == payload->current_pass) {
        printf(TAG "dispatch %llu %s pass %llu/%llu exit (kernel %.1f us)\n",
               (unsigned long long)info->dispatch_id, info->kernel_name, pass, total,
               (double)g_last_kernel.ns / 1000.0);
      } else {
        printf(TAG "dispatch %llu %s pass %llu/%llu exit\n", (unsigned long long)info->dispatch_id,
               info->kernel_name, pass, total);
      }
    }
  }
}

/* KERNEL_DISPATCH: ENTER before and EXIT after every execution of a kernel (every pass). */
static void on_kernel_dispatch(kreplay_callback_tracing_record_t record,
                               kreplay_user_data_t* user_data, void* callback_data) {
  const kreplay_callback_tracing_kernel_dispatch_data_t* payload = record.payload;
  (void)user_data;
  (void)callback_data;
  if (record.phase != KREPLAY_CALLBACK_PHASE_EXIT) return;
  g_last_kernel.dispatch_id = payload->dispatch_info.dispatch_id;
  g_last_kernel.pass = payload->replay_pass;
  g_last_kernel.ns = payload->end_timestamp - payload->start_timestamp;
}

/* One callback per context: route by kind. */
static void on_callback(kreplay_callback_tracing_record_t record, kreplay_user_data_t* user_data,
                        void* callback_data) {
  if (record.kind == KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY) {
    on_kernel_replay(record, user_data, callback_data);
  } else if (record.kind == KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH) {
    on_kernel_dispatch(record, user_data, callback_data);
  }
}

/* ---- registration ---------------------------------------------------------------------------- */

#define CHECK(call)                                                                              \
  do {                                                                                           \
    kreplay_status_t status_ = (call);                                                           \
    if (status_ != KREPLAY_STATUS_SUCCESS) {                                                     \
      fprintf(stderr, TAG "basic: %s failed: %s: %s\n", #call, kreplay_get_status_name(status_), \
              kreplay_get_last_error_message());                                                 \
      return -1; /* non-zero: the SDK turns this tool's services off */                          \
    }                                                                                            \
  } while (0)

static int tool_initialize(kreplay_client_finalize_t finalize, void* tool_data) {
  kreplay_context_id_t ctx;
  (void)finalize;
  (void)tool_data;
  CHECK(kreplay_create_context(&ctx));
  /* NULL, 0: every operation of the domain (CONFIG and PASS). */
  CHECK(kreplay_configure_callback_tracing_service(ctx, KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY,
                                                   NULL, 0, on_callback, NULL));
  CHECK(kreplay_configure_callback_tracing_service(ctx, KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH,
                                                   NULL, 0, on_callback, NULL));
  CHECK(kreplay_start_context(ctx));
  printf(TAG "basic: replaying every kernel launch %d times\n", PASSES);
  return 0;
}

static void tool_finalize(void* tool_data) {
  (void)tool_data;
  printf(TAG "basic: %lu dispatches, %lu replayed, %lu passes\n", atomic_load(&g_dispatches),
         atomic_load(&g_replayed), atomic_load(&g_passes));
}

kreplay_tool_configure_result_t* kreplay_configure(uint32_t version, const char* runtime_version,
                                                   uint32_t priority,
                                                   kreplay_client_id_t* client_id) {
  static kreplay_tool_configure_result_t result = {sizeof(kreplay_tool_configure_result_t),
                                                   tool_initialize, tool_finalize, NULL};
  (void)priority;
  /* Decline (return NULL) under an SDK whose API this tool was not built for. */
  if (version / 10000 != KREPLAY_VERSION_MAJOR) {
    fprintf(stderr, TAG "basic: built for kreplay %s, not %s; not loading\n",
            KREPLAY_VERSION_STRING, runtime_version);
    return NULL;
  }
  client_id->name = "kreplay-sample-basic";
  return &result;
}
