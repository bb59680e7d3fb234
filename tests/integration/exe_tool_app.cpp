// A host-device application that is its own tool: it exports kreplay_configure from the
// executable (ENABLE_EXPORTS), replays every launch twice, and checks what it saw.
#include <cstdio>

#include "backends/host/hostrt.hpp"
#include "kreplay/kreplay.h"

namespace {
unsigned g_pass_exits = 0, g_replayed = 0;

uint64_t two(kreplay_kernel_dispatch_info_t, kreplay_user_data_t) { return 2; }

void on_replay(kreplay_callback_tracing_record_t rec, kreplay_user_data_t*, void*) {
  auto* p = static_cast<kreplay_callback_tracing_kernel_replay_data_t*>(rec.payload);
  if (rec.operation == KREPLAY_KERNEL_REPLAY_CONFIG && rec.phase == KREPLAY_CALLBACK_PHASE_ENTER)
    p->replay_pass_count = &two;
  if (rec.operation == KREPLAY_KERNEL_REPLAY_PASS && rec.phase == KREPLAY_CALLBACK_PHASE_EXIT)
    ++g_pass_exits;
  if (rec.operation == KREPLAY_KERNEL_REPLAY_CONFIG && rec.phase == KREPLAY_CALLBACK_PHASE_EXIT &&
      p->outcome->outcome == KREPLAY_REPLAY_OUTCOME_REPLAYED)
    ++g_replayed;
}

int init(kreplay_client_finalize_t, void*) {
  kreplay_context_id_t ctx;
  kreplay_create_context(&ctx);
  kreplay_configure_callback_tracing_service(ctx, KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY, nullptr, 0,
                                             on_replay, nullptr);
  return kreplay_start_context(ctx) == KREPLAY_STATUS_SUCCESS ? 0 : 1;
}

void bump(kreplay::hostrt::ThreadContext& t) {
  auto* x = t.arg<unsigned*>(0);
  if (t.global_thread_id() == 0) t.store(x, t.load(x) + 1u);
}
}  // namespace

extern "C" kreplay_tool_configure_result_t* kreplay_configure(uint32_t, const char*, uint32_t,
                                                              kreplay_client_id_t* id) {
  static kreplay_tool_configure_result_t r{sizeof(r), init, nullptr, nullptr};
  id->name = "exe-tool";
  return &r;
}

int main() {
  namespace hr = kreplay::hostrt;
  auto mod = hr::load_module({"exe_tool", {{"_Z4bumpPj", bump, {8}}}, {}});
  auto k = hr::get_kernel(*mod, "_Z4bumpPj");
  auto* x = static_cast<unsigned*>(*hr::malloc(4));
  *x = 0;
  for (int i = 0; i < 5; ++i) {
    if (!hr::launch_args(*k, {1}, {32}, hr::default_stream(), x).ok()) return 1;
  }
  if (!hr::device_synchronize().ok()) return 1;
  std::printf("EXE_TOOL value=%u replayed=%u pass_exits=%u\n", *x, g_replayed, g_pass_exits);
  return *x == 5 && g_replayed == 5 && g_pass_exits == 10 ? 0 : 1;
}
