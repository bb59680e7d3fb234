// engine_overhead: what the replay engine itself costs per launch it does not replay and per pass,
// excluding copies and the kernel: an empty kernel (1 thread, no parameters) and a zero-byte
// footprint (the process allocates no device memory, so snapshots and restores copy nothing).
// See bench/README.md for how to run it and read it.
//
// On the host device (Google Benchmark; wall time and CPU time of the launching thread; median):
//   no_tool/launch              async launch in a process where no tool exists (a forked child)
//   tool/launch_replay_stopped  async launch; a tool configured KERNEL_REPLAY, context stopped
//   tool/launch_not_replayed    async launch; KERNEL_REPLAY active, replay_pass_count left NULL
//   device_pass                 one pass's device work alone: HostLaunch submit + wait, no engine
//   tool/launch_passes/2        launch replayed with 2 passes (returns after the last pass)
//   tool/launch_passes/10       launch replayed with 10 passes
// Derived:
//   engine per not-replayed launch = launch_not_replayed - no_tool/launch
//       (both asynchronous launches on the same stream: submission and kernel cancel out)
//   engine per pass = (launch_passes/10 - launch_passes/2) / 8 - device_pass
//       (a further pass is the device's submit + wait, measured alone by device_pass, plus the
//        engine's bookkeeping: PASS ENTER/EXIT, continue decision, restore check, hooks)
//
// The host device runs every submission on a worker thread, so each pass carries two thread
// wake-ups whose latency on a shared machine varies by microseconds from run to run: the
// subtraction above leaves the bookkeeping inside that noise. The cross-check pins it exactly: a
// "null device" whose launches complete instantly on the calling thread, driven through the same
// engine entry points a backend uses (engine.enter / exit), with the same tool:
//   null/launch_replay_stopped, null/launch_not_replayed, null/launch_passes/2, /10
//
// Targets: < 2 us per not-replayed launch, < 10 us per pass; the ratio printed uses the largest
// estimate. This program asserts nothing about time (benchmarks are not tests); it exits 1 only
// when a benchmark failed, e.g. a launch was not replayed with the planned passes.
#include <benchmark/benchmark.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/host/host_device.hpp"
#include "backends/host/hostrt.hpp"
#include "kreplay/kreplay.h"
#include "sdk/runtime.hpp"

namespace hostrt = kreplay::hostrt;
namespace device = kreplay::device;

namespace {

constexpr uint32_t kSyncEvery = 256;  // async launches between (untimed) synchronizations
constexpr double kLaunchTargetUs = 2.0;
constexpr double kPassTargetUs = 10.0;

// ---- the bench's tool (public C API only) -------------------------------------------------------

kreplay_context_id_t g_replay_ctx{};
std::atomic<uint64_t> g_pass_count{0};  // <= 1: leave replay_pass_count NULL (not replayed)
std::atomic<uint64_t> g_pass_exits{0};
std::atomic<uint64_t> g_not_replayed{0};
std::atomic<uint64_t> g_bad_outcomes{0};  // declined, wrong pass count, or a non-empty snapshot

uint64_t pass_count(kreplay_kernel_dispatch_info_t, kreplay_user_data_t) {
  return g_pass_count;
}

void on_replay(kreplay_callback_tracing_record_t record, kreplay_user_data_t*, void*) {
  auto* p = static_cast<kreplay_callback_tracing_kernel_replay_data_t*>(record.payload);
  if (record.operation == KREPLAY_KERNEL_REPLAY_CONFIG) {
    const uint64_t want = g_pass_count.load(std::memory_order_relaxed);
    if (record.phase == KREPLAY_CALLBACK_PHASE_ENTER) {
      if (want > 1) p->replay_pass_count = pass_count;
      return;
    }
    const auto* o = p->outcome;
    if (want <= 1 && o->outcome == KREPLAY_REPLAY_OUTCOME_NOT_REQUESTED) {
      g_not_replayed.fetch_add(1, std::memory_order_relaxed);
    } else if (o->outcome != KREPLAY_REPLAY_OUTCOME_REPLAYED || o->passes_executed != want ||
               o->bytes_snapshotted != 0) {
      g_bad_outcomes.fetch_add(1, std::memory_order_relaxed);
    }
  } else if (record.operation == KREPLAY_KERNEL_REPLAY_PASS &&
             record.phase == KREPLAY_CALLBACK_PHASE_EXIT) {
    g_pass_exits.fetch_add(1, std::memory_order_relaxed);
  }
}

int tool_init(kreplay_client_finalize_t, void*) {
  if (kreplay_create_context(&g_replay_ctx) != KREPLAY_STATUS_SUCCESS) return -1;
  return kreplay_configure_callback_tracing_service(g_replay_ctx,
                                                    KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY, nullptr,
                                                    0, on_replay, nullptr) == KREPLAY_STATUS_SUCCESS
             ? 0
             : -1;  // the context stays stopped until a benchmark starts it
}

kreplay_tool_configure_result_t* bench_configure(uint32_t, const char*, uint32_t,
                                                 kreplay_client_id_t* id) {
  static kreplay_tool_configure_result_t result{sizeof(result), tool_init, nullptr, nullptr};
  id->name = "engine-overhead-bench";
  return &result;
}

// ---- the host-device application
// -------------------------------------------------------------------

void empty_kernel(hostrt::ThreadContext&) {}

struct App {
  hostrt::Kernel empty = 0;
  hostrt::Stream stream = 0;
};

App& app() {
  static App a = [] {
    App x;
    hostrt::ModuleDesc d;
    d.name = "bench_module";
    d.kernels = {{"_Z5emptyv", empty_kernel, {}}};  // no parameters, no module globals
    auto m = hostrt::load_module(d);
    if (!m.ok()) {
      std::fprintf(stderr, "engine_overhead: %s\n", m.status().message().c_str());
      std::exit(1);
    }
    x.empty = *hostrt::get_kernel(*m, "_Z5emptyv");
    x.stream = hostrt::default_stream();
    return x;
  }();
  return a;
}

bool launch_empty() {
  return hostrt::launch(app().empty, {1}, {1}, app().stream, nullptr).ok();
}

// ---- the null device: launches that complete at once, on the calling thread ---------------------

class NullDevice final : public device::Device {
 public:
  NullDevice() {
    desc_.type = KREPLAY_AGENT_TYPE_HOST_DEVICE;
    desc_.name = "null device (engine_overhead)";
    desc_.chip = "NULL";
  }
  const device::AgentDesc& desc() const override { return desc_; }
  kreplay::Status drain(uint64_t) override { return kreplay::Status::Ok(); }
  uint64_t storage_available(device::StorageTier) override { return 0; }
  kreplay::Result<device::Storage> allocate_storage(device::StorageTier, uint64_t) override {
    return kreplay::Error(KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES, "the null device has no memory");
  }
  void free_storage(const device::Storage&) override {}
  kreplay::Status snapshot(std::span<const device::CopyRegion>, uint64_t,
                           std::span<uint64_t>) override {
    return kreplay::Status::Ok();
  }
  kreplay::Status find_changed(std::span<const device::CopyRegion>, uint64_t,
                               std::span<const uint64_t>, std::vector<uint64_t>*) override {
    return kreplay::Status::Ok();
  }
  kreplay::Status restore(std::span<const device::CopyRegion>, uint64_t,
                          std::span<const uint64_t>) override {
    return kreplay::Status::Ok();
  }

 private:
  device::AgentDesc desc_;
};

class NullLaunch final : public device::Launch {
 public:
  const device::LaunchInfo& info() const override { return info_; }
  kreplay::Status relaunch() override { return kreplay::Status::Ok(); }
  kreplay::Status wait(uint64_t, device::PassTiming* timing) override {
    if (timing != nullptr) *timing = {1, 2};  // "completed"; nothing reads the values here
    return kreplay::Status::Ok();
  }
  device::LaunchInfo info_;
};

NullLaunch& null_launch() {
  static NullLaunch launch = [] {
    static NullDevice dev;
    NullLaunch l;
    l.info_.agent.handle = kreplay::sdk::Runtime::get().add_device(&dev);
    l.info_.stream.handle = 1;
    l.info_.kernel_name = "null_kernel()";
    l.info_.mangled_name = "_Z11null_kernelv";
    return l;
  }();
  return launch;
}

// What a backend does around an application's launch (see hostrt.cpp launch_impl).
void null_launch_once() {
  auto& engine = kreplay::sdk::Runtime::get().engine();
  kreplay::replay::DispatchState* st = engine.enter(null_launch());
  engine.exit(st, /*submitted=*/true);
}

// ---- benchmarks ---------------------------------------------------------------------------------

// Asynchronous launches; the stream is drained every kSyncEvery launches with the clock stopped.
void run_async_launches(benchmark::State& state) {
  uint32_t since_sync = 0;
  for (auto _ : state) {
    if (!launch_empty()) {
      state.SkipWithError("launch failed");
      break;
    }
    if (++since_sync == kSyncEvery) {
      state.PauseTiming();
      (void)hostrt::stream_synchronize(app().stream);
      since_sync = 0;
      state.ResumeTiming();
    }
  }
  (void)hostrt::stream_synchronize(app().stream);
}

void BM_NoToolLaunch(benchmark::State& state) {
  run_async_launches(state);
}

// Not replayed: the tool's context stopped (state.range(0) == 0) or active with a NULL pass count.
void not_replayed(benchmark::State& state, bool null_device) {
  const bool active = state.range(0) != 0;
  g_pass_count = 0;
  g_not_replayed = 0;
  if (active) kreplay_start_context(g_replay_ctx);
  if (null_device) {
    for (auto _ : state) null_launch_once();
  } else {
    run_async_launches(state);
  }
  kreplay_stop_context(g_replay_ctx);
  if (active && g_not_replayed.load() != static_cast<uint64_t>(state.iterations()))
    state.SkipWithError("the tool did not see every launch as not replayed");
}
void BM_HostNotReplayed(benchmark::State& state) {
  not_replayed(state, false);
}
void BM_NullNotReplayed(benchmark::State& state) {
  not_replayed(state, true);
}

// Replayed with state.range(0) passes; a replayed launch returns after its last pass.
void replayed(benchmark::State& state, bool null_device) {
  const auto passes = static_cast<uint64_t>(state.range(0));
  g_pass_count = passes;
  g_pass_exits = 0;
  g_bad_outcomes = 0;
  kreplay_start_context(g_replay_ctx);
  for (auto _ : state) {
    if (null_device) {
      null_launch_once();
    } else if (!launch_empty()) {
      state.SkipWithError("launch failed");
      break;
    }
  }
  kreplay_stop_context(g_replay_ctx);
  if (!null_device) (void)hostrt::stream_synchronize(app().stream);
  g_pass_count = 0;
  if (g_bad_outcomes.load() != 0 ||
      g_pass_exits.load() != passes * static_cast<uint64_t>(state.iterations()))
    state.SkipWithError("a launch was not replayed with the planned passes and a 0-byte snapshot");
}
void BM_HostPasses(benchmark::State& state) {
  replayed(state, false);
}
void BM_NullPasses(benchmark::State& state) {
  replayed(state, true);
}

// One pass's work on the host device without the engine: exactly what the pass loop asks of the
// device per pass (HostLaunch::submit queues the kernel on a stream's worker; wait blocks for it).
void BM_DevicePass(benchmark::State& state) {
  auto stream = std::make_shared<hostrt::HostStream>(0, hostrt::Stream{1} << 40);  // private
  hostrt::HostLaunch launch;
  launch.fn = empty_kernel;
  launch.grid = {1, 1, 1};
  launch.block = {1, 1, 1};
  launch.stream = stream;
  device::PassTiming timing{};
  for (auto _ : state) {
    if (!launch.submit().ok() || !launch.wait(60000, &timing).ok()) {
      state.SkipWithError("host stream failed");
      break;
    }
  }
}

// ---- collecting the medians ---------------------------------------------------------------------

struct Median {
  double wall_us = -1;  ///< wall time per iteration
  double cpu_us = -1;   ///< CPU time of the launching (benchmark) thread per iteration
  double wall_sd = 0;   ///< standard deviation of wall_us over the repetitions
  double cpu_sd = 0;
};

// Shows Google Benchmark's usual table and keeps the medians (in microseconds) of every benchmark.
class MedianReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, Median> median;
  std::vector<std::string> errors;

  void ReportRuns(const std::vector<Run>& reports) override {
    for (const auto& r : reports) {
      if (r.error_occurred) {
        errors.push_back(r.run_name.function_name + ": " + r.error_message);
        continue;
      }
      if (r.run_type != Run::RT_Aggregate) continue;
      // "tool/launch_passes" with Arg(10) is kept as "tool/launch_passes/10".
      std::string name = r.run_name.function_name;
      if (!r.run_name.args.empty()) name += "/" + r.run_name.args;
      const double wall = r.GetAdjustedRealTime() * to_us(r.time_unit);
      const double cpu = r.GetAdjustedCPUTime() * to_us(r.time_unit);
      if (r.aggregate_name == "median") {
        median[name].wall_us = wall;
        median[name].cpu_us = cpu;
      } else if (r.aggregate_name == "stddev") {
        median[name].wall_sd = wall;
        median[name].cpu_sd = cpu;
      }
    }
    ConsoleReporter::ReportRuns(reports);
  }

 private:
  static double to_us(benchmark::TimeUnit u) {
    switch (u) {
      case benchmark::kNanosecond:
        return 1e-3;
      case benchmark::kMicrosecond:
        return 1.0;
      case benchmark::kMillisecond:
        return 1e3;
      default:
        return 1e6;
    }
  }
};

benchmark::internal::Benchmark* configure(benchmark::internal::Benchmark* b) {
  return b->Unit(benchmark::kMicrosecond)
      ->UseRealTime()
      ->Repetitions(5)
      ->ReportAggregatesOnly(true);
}

// The child: a process in which no tool exists. Sends "name wall cpu wall_sd cpu_sd" lines (us)
// through @p fd.
int run_child(int fd) {
  configure(benchmark::RegisterBenchmark("no_tool/launch", BM_NoToolLaunch));
  app();  // initialize the host runtime before anything is timed
  MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::string out;
  for (const auto& [name, m] : reporter.median)
    out += name + " " + std::to_string(m.wall_us) + " " + std::to_string(m.cpu_us) + " " +
           std::to_string(m.wall_sd) + " " + std::to_string(m.cpu_sd) + "\n";
  for (const auto& e : reporter.errors) out += "error " + e + "\n";
  return write(fd, out.data(), out.size()) == static_cast<ssize_t>(out.size()) ? 0 : 1;
}

// Runs the child and reads its medians into @p median; failures go to @p errors.
void run_no_tool_child(std::map<std::string, Median>* median, std::vector<std::string>* errors) {
  int fds[2];
  if (pipe(fds) != 0) {
    errors->push_back("pipe failed");
    return;
  }
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) {
    errors->push_back("fork failed");
    return;
  }
  if (pid == 0) {
    close(fds[0]);
    const int rc = run_child(fds[1]);
    std::fflush(stdout);
    _exit(rc);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;)
    out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) errors->push_back("the no-tool child failed");
  for (size_t pos = 0; pos < out.size();) {
    const size_t eol = std::min(out.find('\n', pos), out.size());
    const std::string line = out.substr(pos, eol - pos);
    pos = eol + 1;
    char name[256];
    Median m;
    if (line.rfind("error ", 0) == 0) {
      errors->push_back(line.substr(6));
    } else if (std::sscanf(line.c_str(), "%255s %lf %lf %lf %lf", name, &m.wall_us, &m.cpu_us,
                           &m.wall_sd, &m.cpu_sd) == 5) {
      (*median)[name] = m;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  unsetenv("KREPLAY_TOOL_LIBRARIES");  // the bench's own tool is the only one (none in the child)
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  std::map<std::string, Median> median;
  std::vector<std::string> errors;

  // 1. The baseline, in a child forked before anything of kreplay started: no tool at all.
  run_no_tool_child(&median, &errors);

  // 2. This process: the bench's tool, the host device, and the null device.
  if (kreplay_force_configure(bench_configure) != KREPLAY_STATUS_SUCCESS) return 1;
  app();  // initializes the host runtime, which loads the tool, before anything is timed
  null_launch();
  if (g_replay_ctx.handle == 0) {
    std::fprintf(stderr, "engine_overhead: the bench's tool did not initialize\n");
    return 1;
  }
  configure(benchmark::RegisterBenchmark("tool/launch_replay_stopped", BM_HostNotReplayed))->Arg(0);
  configure(benchmark::RegisterBenchmark("tool/launch_not_replayed", BM_HostNotReplayed))->Arg(1);
  configure(benchmark::RegisterBenchmark("device_pass", BM_DevicePass));
  configure(benchmark::RegisterBenchmark("tool/launch_passes", BM_HostPasses))->Arg(2)->Arg(10);
  configure(benchmark::RegisterBenchmark("null/launch_replay_stopped", BM_NullNotReplayed))->Arg(0);
  configure(benchmark::RegisterBenchmark("null/launch_not_replayed", BM_NullNotReplayed))->Arg(1);
  configure(benchmark::RegisterBenchmark("null/launch_passes", BM_NullPasses))->Arg(2)->Arg(10);
  MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  for (const auto& [name, m] : reporter.median) median[name] = m;
  for (const auto& e : reporter.errors) errors.push_back(e);

  auto get = [&](const char* name) {
    auto it = median.find(name);
    if (it != median.end()) return it->second;
    errors.push_back(std::string(name) + " did not report (filtered out?)");
    return Median{};
  };
  const Median no_tool = get("no_tool/launch");
  const Median stopped = get("tool/launch_replay_stopped/0");
  const Median not_replayed = get("tool/launch_not_replayed/1");
  const Median device_pass = get("device_pass");
  const Median p2 = get("tool/launch_passes/2");
  const Median p10 = get("tool/launch_passes/10");
  const Median null_stopped = get("null/launch_replay_stopped/0");
  const Median null_not_replayed = get("null/launch_not_replayed/1");
  const Median null_p2 = get("null/launch_passes/2");
  const Median null_p10 = get("null/launch_passes/10");

  // Uncertainty of a difference of medians: the repetitions' standard deviations, combined.
  auto sd = [](std::initializer_list<double> parts) {
    double v = 0;
    for (double p : parts) v += p * p;
    return std::sqrt(v);
  };
  const double launch_host = not_replayed.wall_us - no_tool.wall_us;
  const double launch_host_sd = sd({not_replayed.wall_sd, no_tool.wall_sd});
  const double launch_null = null_not_replayed.wall_us - null_stopped.wall_us;
  const double further_pass_wall = (p10.wall_us - p2.wall_us) / 8.0;
  const double further_pass_cpu = (p10.cpu_us - p2.cpu_us) / 8.0;
  const double pass_host_wall = further_pass_wall - device_pass.wall_us;
  const double pass_host_cpu = further_pass_cpu - device_pass.cpu_us;
  const double pass_host_wall_sd = sd({p10.wall_sd / 8, p2.wall_sd / 8, device_pass.wall_sd});
  const double pass_host_cpu_sd = sd({p10.cpu_sd / 8, p2.cpu_sd / 8, device_pass.cpu_sd});
  const double pass_null = (null_p10.wall_us - null_p2.wall_us) / 8.0;
  const double launch_worst = std::max(launch_host, launch_null);
  const double pass_worst = std::max({pass_host_wall, pass_host_cpu, pass_null});

  auto row = [](const char* what, const Median& m) {
    std::printf("  %-60s %9.3f %9.3f\n", what, m.wall_us, m.cpu_us);
  };
  std::printf(
      "\n==KREPLAY-BENCH== engine overhead: empty kernel (1 thread), 0-byte footprint, "
      "median of 5 repetitions\n");
  std::printf("  %-60s %9s %9s\n", "host device", "wall us", "cpu us");
  row("launch, no tool in the process (async)", no_tool);
  row("launch, KERNEL_REPLAY configured, context stopped (async)", stopped);
  row("launch, KERNEL_REPLAY active, pass count NULL (async)", not_replayed);
  row("one pass of device work alone (HostLaunch submit + wait)", device_pass);
  row("launch replayed with 2 passes", p2);
  row("launch replayed with 10 passes", p10);
  std::printf("  %-60s %9.3f %9.3f\n", "per further pass: (10 passes - 2 passes) / 8",
              further_pass_wall, further_pass_cpu);
  std::printf("  %-60s %9s %9s\n", "null device (the engine alone, no thread hand-off)", "", "");
  row("launch, KERNEL_REPLAY configured, context stopped", null_stopped);
  row("launch, KERNEL_REPLAY active, pass count NULL", null_not_replayed);
  row("launch replayed with 2 passes", null_p2);
  row("launch replayed with 10 passes", null_p10);

  std::printf(
      "\n==KREPLAY-BENCH== engine per not-replayed launch: %.3f us (null device); "
      "host device %.3f +- %.3f us; target < %.0f us: %.2f of target\n",
      launch_null, launch_host, launch_host_sd, kLaunchTargetUs, launch_worst / kLaunchTargetUs);
  std::printf(
      "==KREPLAY-BENCH== engine per pass: %.3f us (null device); host device %.3f +- "
      "%.3f us wall, %.3f +- %.3f us cpu after subtracting the device's own %.3f us wall, "
      "%.3f us cpu; target < %.0f us: %.2f of target\n",
      pass_null, pass_host_wall, pass_host_wall_sd, pass_host_cpu, pass_host_cpu_sd,
      device_pass.wall_us, device_pass.cpu_us, kPassTargetUs, pass_worst / kPassTargetUs);
  for (const auto& e : errors) std::printf("==KREPLAY-BENCH== error: %s\n", e.c_str());
  return errors.empty() ? 0 : 1;
}
