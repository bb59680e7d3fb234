// Test harness for the engine contract tests: a tool linked into the test binary (registered with
// kreplay_force_configure before the SDK initializes) whose behaviour each test sets through a
// Scenario, an event log of every callback it received, and host-device kernels that check
// themselves (in-place updates plus a module-scope launch counter).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <vector>

#include "backends/host/hostrt.hpp"
#include "kreplay/kreplay.h"
#include "replay/engine.hpp"

namespace kreplay::test {

/// What the tool does; tests replace it (reset() restores the default: no replay).
struct Scenario {
  /// Pass count for a dispatch; unset → replay_pass_count left NULL.
  std::function<uint64_t(const kreplay_kernel_dispatch_info_t&)> pass_count;
  /// Continue decision; unset → replay_continue left NULL.
  std::function<int(uint64_t pass, uint64_t total)> cont;
  /// Extra work in PASS ENTER (local context control, launches from a tool callback, ...).
  std::function<void(const kreplay_callback_tracing_kernel_replay_data_t&)> on_pass_enter;
  /// Extra work in PASS EXIT.
  std::function<void(const kreplay_callback_tracing_kernel_replay_data_t&)> on_pass_exit;
  /// Extra work in CONFIG ENTER (writes user_data, tries local control, ...).
  std::function<void(kreplay_callback_tracing_kernel_replay_data_t&, kreplay_user_data_t*)>
      on_config_enter;
  /// Counter config for a pass (handle 0 = none).
  std::function<kreplay_counter_config_id_t(const kreplay_dispatch_counting_data_t&)> counters;
};

struct Event {
  kreplay_callback_tracing_kind_t kind = KREPLAY_CALLBACK_TRACING_NONE;
  uint32_t operation = 0;
  kreplay_callback_phase_t phase = KREPLAY_CALLBACK_PHASE_NONE;
  uint64_t dispatch_id = 0;
  uint64_t pass = 0;
  uint64_t total = 0;
  uint64_t correlation = 0;
  uint64_t context = 0;
  uint64_t thread = 0;
  kreplay_user_data_t user_data{};
  kreplay_replay_outcome_record_t outcome{};  // CONFIG EXIT
  uint64_t start = 0, end = 0;                // KERNEL_DISPATCH EXIT
  std::string name;                           // kernel or module name (CODE_OBJECT)
  uint32_t flags = 0;                         // KERNEL_REPLAY: dispatch_info.flags
  uint64_t graph_id = 0, graph_node = 0;      // KERNEL_REPLAY: the payload's graph fields
  std::string mangled;
  uint64_t address = 0, bytes = 0;            // MEMORY_ALLOCATION
};

struct CounterEvent {
  uint64_t dispatch_id, pass;
  std::string name;
  double value;
  kreplay_status_t status = KREPLAY_STATUS_SUCCESS;  // a lost pass: no name, no value
};

struct ContinueCall {
  uint64_t dispatch_id, pass, total;
};

/// Global state of the test tool.
struct ToolState {
  std::mutex mu;
  Scenario scenario;
  std::vector<Event> events;
  std::vector<CounterEvent> counters;
  std::vector<ContinueCall> continue_calls;
  std::vector<uint64_t> pass_count_calls;  // dispatch ids
  kreplay_context_id_t replay_ctx{}, trace_ctx{}, count_ctx{}, never_started_ctx{}, misc_ctx{};
  kreplay_status_t second_replay_status = KREPLAY_STATUS_SUCCESS;
  bool initialized = false;

  void reset();
  std::vector<Event> of(kreplay_callback_tracing_kind_t kind, uint32_t op = 0) const;
  std::vector<Event> for_dispatch(uint64_t id) const;
  const Event* config_exit(uint64_t dispatch_id) const;
  uint64_t last_dispatch_id() const;
};

ToolState& tool();

/// Initializes the host runtime (64 MiB device memory, 48 MiB pinned; KREPLAY_HOST_DEVICES
/// devices, 1 when unset) with the test tool.
void init_runtime();

/// A module with self-checking kernels.
struct TestModule {
  hostrt::Module module = 0;
  hostrt::Kernel update = 0;     // x[i] = x[i] * 2 + 1 over n floats, counter += 1 (thread 0)
  hostrt::Kernel touch = 0;      // writes one float at index k of x: x[k] += 1
  hostrt::Kernel spin = 0;       // spins while *flag == 0 (for drain/pass timeouts)
  hostrt::Kernel spin_second = 0;// executions after the first spin while *flag == 0
  hostrt::Kernel histogram = 0;  // atomic histogram of data[i] % 16 into bins
  hostrt::Kernel collective = 0; // named like an NCCL kernel; does what `update` does
  hostrt::Kernel heap_update = 0; // `update`, in a module that uses the device heap
  hostrt::Kernel checked = 0;     // `update` that traps (a device-side assert) on x[i] < 0
  uint32_t* launch_counter = nullptr;  // module-scope variable bumped by `update`
  uint32_t* exec_counter = nullptr;    // module-scope variable bumped by spin_second
};
TestModule& module();
/// Executions of spin_second so far (kept in host memory: restores do not rewind it).
std::atomic<uint32_t>& spin_second_executions();

/// Launch `update` over @p x (n floats) on @p stream and return its status.
Status launch_update(float* x, uint32_t n, hostrt::Stream stream = 0);
/// The expected value of one element after @p k updates starting from @p v.
float updated(float v, int k);

/// A test on the host device with the test tool: the engine's options are restored and the
/// buffers it made are freed after each test; every launch is planned for 3 passes.
class HostDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  /// Change the engine's options for this test.
  void set_options(const std::function<void(replay::Options&)>& change);
  /// A device buffer of @p n floats, each 0.25, freed after the test.
  float* buffer(uint32_t n);

  replay::Options opts_;
  std::vector<float*> buffers_;
};

}  // namespace kreplay::test
