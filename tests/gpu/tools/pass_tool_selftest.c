/*
 * pass_tool_selftest: runs the GPU suite's test tool without a GPU, against a stand-in for the
 * SDK that drives KERNEL_REPLAY exactly as DESIGN §2 describes, so that the tool's own checks and
 * its summary line are proven before the tool judges the real engine on a GPU.
 *
 *   pass_tool_selftest <path to libkreplay_test_pass_tool.so> good|bad
 *
 * good: three dispatches (a plain launch, a launch whose kernel name is "other_kernel", a graph
 *       launch that is declined), each following the contract; the tool must report errors=0.
 * bad:  one dispatch whose passes skip index 1 and whose outcome miscounts them; the tool must
 *       report errors > 0.
 * The expected summary lines are in tests/gpu/CMakeLists.txt (PASS_REGULAR_EXPRESSION).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "kreplay/kreplay.h"

/* ---- the stand-in SDK: only what the tool calls ---- */
static kreplay_callback_tracing_cb_t g_cb;
static void* g_cb_args;

kreplay_status_t kreplay_create_context(kreplay_context_id_t* id) {
  id->handle = 1;
  return KREPLAY_STATUS_SUCCESS;
}
kreplay_status_t kreplay_start_context(kreplay_context_id_t id) {
  (void)id;
  return KREPLAY_STATUS_SUCCESS;
}
kreplay_status_t kreplay_configure_callback_tracing_service(kreplay_context_id_t id,
                                                            kreplay_callback_tracing_kind_t kind,
                                                            const uint32_t* ops, size_t n,
                                                            kreplay_callback_tracing_cb_t cb,
                                                            void* args) {
  (void)id;
  (void)ops;
  (void)n;
  if (kind != KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY) return KREPLAY_STATUS_ERROR_KIND_NOT_FOUND;
  g_cb = cb;
  g_cb_args = args;
  return KREPLAY_STATUS_SUCCESS;
}
const char* kreplay_get_status_name(kreplay_status_t s) {
  (void)s;
  return "KREPLAY_STATUS_?";
}
const char* kreplay_get_last_error_message(void) { return ""; }

static kreplay_status_t ctx_cb(kreplay_context_id_t id) {
  (void)id;
  return KREPLAY_STATUS_SUCCESS;
}

static void fire(uint32_t op, kreplay_callback_phase_t phase,
                 kreplay_callback_tracing_kernel_replay_data_t* payload, kreplay_user_data_t* ud) {
  kreplay_callback_tracing_record_t rec;
  memset(&rec, 0, sizeof rec);
  rec.context_id.handle = 1;
  rec.kind = KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY;
  rec.operation = op;
  rec.phase = phase;
  rec.payload = payload;
  g_cb(rec, ud, g_cb_args);
}

/* One logical dispatch through the contract. decline != NONE: declined before any pass.
 * skip_pass1: break the contract (pass indices 0, 2, ... and a wrong executed count). */
static void dispatch(uint64_t id, const char* name, uint32_t flags, kreplay_decline_reason_t decline,
                     int skip_pass1) {
  kreplay_callback_tracing_kernel_replay_data_t p;
  memset(&p, 0, sizeof p);
  p.size = sizeof p;
  p.dispatch_info.size = sizeof p.dispatch_info;
  p.dispatch_info.dispatch_id = id;
  p.dispatch_info.kernel_name = name;
  p.dispatch_info.flags = flags;
  kreplay_user_data_t ud = {0};
  fire(KREPLAY_KERNEL_REPLAY_CONFIG, KREPLAY_CALLBACK_PHASE_ENTER, &p, &ud);
  kreplay_kernel_replay_pass_count_cb_t count = p.replay_pass_count;
  kreplay_kernel_replay_continue_cb_t cont = p.replay_continue;
  uint64_t planned = count ? count(p.dispatch_info, ud) : 1;

  kreplay_replay_outcome_record_t o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.dispatch_id = id;
  o.passes_requested = planned;
  if (count == NULL || planned == 1) {
    o.outcome = KREPLAY_REPLAY_OUTCOME_NOT_REQUESTED;
  } else if (planned == 0 && cont == NULL) {
    o.outcome = KREPLAY_REPLAY_OUTCOME_DECLINED;
    o.reason = KREPLAY_DECLINE_REASON_INVALID_PLAN;
  } else if (decline != KREPLAY_DECLINE_REASON_NONE) {
    o.outcome = KREPLAY_REPLAY_OUTCOME_DECLINED;
    o.reason = decline;
  } else {
    o.outcome = KREPLAY_REPLAY_OUTCOME_REPLAYED;
    uint64_t pass = 0, executed = 0;
    for (;;) {
      kreplay_callback_tracing_kernel_replay_data_t q;
      memset(&q, 0, sizeof q);
      q.size = sizeof q;
      q.dispatch_info = p.dispatch_info;
      q.current_pass = pass;
      q.total_passes = planned;
      q.replay_start_context = ctx_cb;
      q.replay_stop_context = ctx_cb;
      kreplay_user_data_t copy = ud;
      fire(KREPLAY_KERNEL_REPLAY_PASS, KREPLAY_CALLBACK_PHASE_ENTER, &q, &copy);
      q.replay_start_context = q.replay_stop_context = NULL;
      copy = ud;
      fire(KREPLAY_KERNEL_REPLAY_PASS, KREPLAY_CALLBACK_PHASE_EXIT, &q, &copy);
      ++executed;
      if (planned != 0 && pass + 1 >= planned) break;
      if (cont != NULL && !cont(p.dispatch_info, pass, planned, ud)) break;
      pass += (skip_pass1 && pass == 0) ? 2 : 1;
    }
    o.passes_executed = executed + (skip_pass1 ? 1 : 0);
  }
  p.outcome = &o;
  fire(KREPLAY_KERNEL_REPLAY_CONFIG, KREPLAY_CALLBACK_PHASE_EXIT, &p, &ud);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s <tool.so> good|bad\n", argv[0]);
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  kreplay_configure_func_t configure = (kreplay_configure_func_t)dlsym(lib, "kreplay_configure");
  if (configure == NULL) {
    fprintf(stderr, "no kreplay_configure in %s\n", argv[1]);
    return 1;
  }
  kreplay_client_id_t client = {NULL, 1};
  kreplay_tool_configure_result_t* r = configure(KREPLAY_VERSION, KREPLAY_VERSION_STRING, 0, &client);
  if (r == NULL || r->initialize == NULL || r->finalize == NULL) return 1;
  if (r->initialize(NULL, r->tool_data) != 0 || g_cb == NULL) return 1;
  if (strcmp(argv[2], "bad") == 0) {
    dispatch(1, "some_kernel", 0, KREPLAY_DECLINE_REASON_NONE, 1);
  } else {
    dispatch(1, "some_kernel", 0, KREPLAY_DECLINE_REASON_NONE, 0);
    dispatch(2, "other_kernel", 0, KREPLAY_DECLINE_REASON_NONE, 0);
    dispatch(3, "some_kernel", KREPLAY_DISPATCH_FLAG_GRAPH, KREPLAY_DECLINE_REASON_GRAPH_LAUNCH, 0);
  }
  r->finalize(r->tool_data);
  fflush(stderr);
  return 0;
}
