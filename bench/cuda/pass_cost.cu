// pass_cost: what one CUPTI user-replay pass costs, and what that cost depends on.
//
// Drives kreplay's RangeProfiler (CUPTI range profiler, auto range, user replay) the way kernel
// replay does -- per dispatch: begin(); per pass: start(), one launch, stop() -- and times every
// call, varying one thing at a time against a base case:
//   metric set     one instruction count / DRAM bytes / one SASS-patched count / an 8-pass
//                  throughput / the 16-metric 10-pass set / the same without its 3 SASS metrics
//   image size     counter-data image for 1, 4, 64 or 256 ranges
//   kernel         a 256 MiB in-place update (~0.2 ms) / one block of 32 threads / no launch at all
//   sync           cuCtxSynchronize before start() and before stop() (timed apart from them)
//   footprint      8 GiB more device memory allocated and written
//   first pass     every case prints pass 0 of its first dispatch (the first Start after an
//                  Enable) apart from the steady-state passes of later dispatches
//   warm-up        a throw-away collection right after configure() (one empty pass, one pass
//                  with a tiny launch, or every pass plus DecodeData): does it take the
//                  first-Start cost out of the first dispatch, and are later values still whole
//                  (nan_values counts NaN among every dispatch's decoded values)?
//   CPU            user and system time of the calling thread during Start and Stop
//
//   pass_cost [dispatches=4]
// Prints one `pass_cost case=... key=value ...` line per case (milliseconds) and the per-pass-index
// steady Start times; a benchmark, not a test: no assertion on any time.
#include <cuda.h>
#include <cuda_runtime.h>

#include <sys/resource.h>

#include <chrono>
#include <ctime>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/cuda/cupti/metric_sets.hpp"
#include "backends/cuda/cupti/range_profiler.hpp"

namespace {

using kreplay::cupti::RangeMode;
using kreplay::cupti::RangeProfiler;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// CPU time of the calling thread in milliseconds: user and system (kernel) apart.
struct CpuTime {
  double user = 0, sys = 0;
};
CpuTime thread_cpu() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  auto ms = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) * 1e3 + static_cast<double>(tv.tv_usec) / 1e3;
  };
  return {ms(ru.ru_utime), ms(ru.ru_stime)};
}

__global__ void update(float* x, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = x[i] * 1.0001f + 1.0f;
}

__global__ void tiny(unsigned* c) { atomicAdd(c, 1u); }

enum class Kernel { kStream, kTiny, kNone };

struct Case {
  std::string name;
  std::vector<std::string> metrics;
  size_t max_ranges = 4;
  Kernel kernel = Kernel::kStream;
  bool sync = false;     // cuCtxSynchronize before start() and before stop()
  // Right after configure(), before the timed dispatches: a throw-away collection.
  //   kEmpty: one Start/Stop with no launch; kKernel: one Start, a tiny launch, Stop;
  //   kFull: every pass with a tiny launch, then DecodeData.
  enum class Warm { kNone, kEmpty, kKernel, kFull } warm = Warm::kNone;
};

struct Buffers {
  float* data = nullptr;
  size_t n = 0;
  unsigned* counter = nullptr;
};

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

bool run_case(RangeProfiler& rp, const Case& c, const Buffers& b, int dispatches) {
  auto t0 = Clock::now();
  auto cs = rp.configure(c.metrics, RangeMode::kAuto, c.max_ranges);
  if (!cs.ok()) {
    std::fprintf(stderr, "pass_cost: case %s: %s\n", c.name.c_str(), cs.message().c_str());
    return false;
  }
  double configure_ms = ms_since(t0);
  double warm_ms = 0;
  if (c.warm != Case::Warm::kNone) {
    t0 = Clock::now();
    bool ok = rp.begin().ok();
    bool done = false;
    while (ok && !done) {
      ok = rp.start().ok();
      if (ok && c.warm != Case::Warm::kEmpty) tiny<<<1, 32>>>(b.counter);
      auto pr = rp.stop();
      ok = ok && pr.ok();
      done = !ok || c.warm != Case::Warm::kFull || pr->all_passes_submitted;
    }
    if (ok && c.warm == Case::Warm::kFull) ok = rp.decode().ok();
    if (!ok) {
      std::fprintf(stderr, "pass_cost: case %s: warm-up failed\n", c.name.c_str());
      return false;
    }
    warm_ms = ms_since(t0);
  }
  std::vector<double> first_start, first_stop;          // dispatch 0, per pass
  std::vector<std::vector<double>> steady_start_by_pass;  // dispatches 1.., per pass index
  std::vector<double> steady_start_user, steady_start_sys, steady_stop_user, steady_stop_sys;
  std::vector<double> steady_start, steady_stop, sync_start, sync_stop, begin_ms, finish_ms,
      dispatch_ms;
  size_t passes = 0;
  size_t nan_values = 0;  // decoded values that are NaN (a broken collection), all dispatches
  for (int d = 0; d < dispatches; ++d) {
    auto td = Clock::now();
    t0 = Clock::now();
    if (!rp.begin().ok()) return false;
    begin_ms.push_back(ms_since(t0));
    size_t pass = 0;
    bool done = false;
    while (!done) {
      if (c.sync) {
        t0 = Clock::now();
        cuCtxSynchronize();
        sync_start.push_back(ms_since(t0));
      }
      CpuTime c0 = thread_cpu();
      t0 = Clock::now();
      if (auto s = rp.start(); !s.ok()) {
        std::fprintf(stderr, "pass_cost: start: %s\n", s.message().c_str());
        return false;
      }
      double st = ms_since(t0);
      CpuTime c1 = thread_cpu();
      if (c.kernel == Kernel::kStream) {
        update<<<static_cast<unsigned>((b.n + 255) / 256), 256>>>(b.data, b.n);
      } else if (c.kernel == Kernel::kTiny) {
        tiny<<<1, 32>>>(b.counter);
      }
      if (c.sync) {
        t0 = Clock::now();
        cuCtxSynchronize();
        sync_stop.push_back(ms_since(t0));
      }
      CpuTime c2 = thread_cpu();
      t0 = Clock::now();
      auto pr = rp.stop();
      double sp = ms_since(t0);
      CpuTime c3 = thread_cpu();
      if (!pr.ok()) {
        std::fprintf(stderr, "pass_cost: stop: %s\n", pr.status().message().c_str());
        return false;
      }
      done = pr->all_passes_submitted;
      if (d == 0) {
        first_start.push_back(st);
        first_stop.push_back(sp);
      } else {
        steady_start.push_back(st);
        steady_stop.push_back(sp);
        steady_start_user.push_back(c1.user - c0.user);
        steady_start_sys.push_back(c1.sys - c0.sys);
        steady_stop_user.push_back(c3.user - c2.user);
        steady_stop_sys.push_back(c3.sys - c2.sys);
        if (steady_start_by_pass.size() <= pass) steady_start_by_pass.resize(pass + 1);
        steady_start_by_pass[pass].push_back(st);
      }
      ++pass;
      if (pass > 64) {
        std::fprintf(stderr, "pass_cost: case %s: no end after 64 passes\n", c.name.c_str());
        return false;
      }
    }
    passes = pass;
    t0 = Clock::now();
    auto dropped = rp.decode();
    auto vals = rp.values();
    finish_ms.push_back(ms_since(t0));
    if (!dropped.ok() || !vals.ok()) {
      std::fprintf(stderr, "pass_cost: case %s: decode/values failed\n", c.name.c_str());
      return false;
    }
    if (c.kernel != Kernel::kNone && vals->empty()) {
      std::fprintf(stderr, "pass_cost: case %s: no range decoded\n", c.name.c_str());
      return false;
    }
    for (const auto& range : *vals) {
      for (double v : range.values) nan_values += std::isnan(v) ? 1 : 0;
    }
    cuCtxSynchronize();
    dispatch_ms.push_back(ms_since(td));
  }
  std::string by_pass;
  for (const auto& v : steady_start_by_pass) by_pass += (by_pass.empty() ? "" : ",") + std::to_string(mean(v)).substr(0, 5);
  std::printf(
      "pass_cost case=%s metrics=%zu passes=%zu max_ranges=%zu image_kb=%.0f configure_ms=%.2f "
      "warm_ms=%.2f first_pass0_start_ms=%.2f first_dispatch_ms=%.2f steady_start_ms=%.3f "
      "steady_stop_ms=%.3f steady_start_user_ms=%.3f steady_start_sys_ms=%.3f steady_stop_user_ms=%.3f "
      "steady_stop_sys_ms=%.3f sync_before_start_ms=%.3f sync_before_stop_ms=%.3f begin_ms=%.3f "
      "decode_eval_ms=%.3f steady_dispatch_ms=%.2f steady_per_pass_ms=%.3f nan_values=%zu\n",
      c.name.c_str(), c.metrics.size(), passes, c.max_ranges,
      static_cast<double>(rp.counter_data_size()) / 1024.0, configure_ms, warm_ms,
      first_start.empty() ? 0.0 : first_start[0], dispatch_ms.empty() ? 0.0 : dispatch_ms[0],
      mean(steady_start), mean(steady_stop), mean(steady_start_user), mean(steady_start_sys),
      mean(steady_stop_user), mean(steady_stop_sys),
      mean(sync_start), mean(sync_stop), mean(begin_ms),
      mean(finish_ms),
      dispatch_ms.size() > 1
          ? mean(std::vector<double>(dispatch_ms.begin() + 1, dispatch_ms.end()))
          : 0.0,
      dispatch_ms.size() > 1 && passes
          ? mean(std::vector<double>(dispatch_ms.begin() + 1, dispatch_ms.end())) /
                static_cast<double>(passes)
          : 0.0,
      nan_values);
  std::printf("pass_cost_by_pass case=%s steady_start_ms_by_pass=%s first_dispatch_start_ms=", c.name.c_str(),
              by_pass.c_str());
  for (size_t i = 0; i < first_start.size(); ++i) std::printf("%s%.2f", i ? "," : "", first_start[i]);
  std::printf(" first_dispatch_stop_ms=");
  for (size_t i = 0; i < first_stop.size(); ++i) std::printf("%s%.2f", i ? "," : "", first_stop[i]);
  std::printf("\n");
  std::fflush(stdout);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int dispatches = argc > 1 ? std::atoi(argv[1]) : 4;
  if (dispatches < 2) dispatches = 2;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "pass_cost: no CUDA device\n");
    return 77;
  }
  Buffers b;
  b.n = (256u << 20) / sizeof(float);
  if (cudaMalloc(&b.data, b.n * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&b.counter, sizeof(unsigned)) != cudaSuccess) {
    std::fprintf(stderr, "pass_cost: cudaMalloc failed\n");
    return 1;
  }
  cudaMemset(b.data, 0, b.n * sizeof(float));
  cudaMemset(b.counter, 0, sizeof(unsigned));
  cudaDeviceSynchronize();
  CUcontext ctx = nullptr;
  cuCtxGetCurrent(&ctx);

  const std::vector<std::string> ten = kreplay::cupti::ten_pass_metrics();
  std::vector<std::string> ten_no_sass;
  for (const auto& m : ten) {
    if (m.rfind("smsp__sass", 0) != 0) ten_no_sass.push_back(m);
  }
  std::vector<Case> cases = {
      {"ten_base", ten},
      {"ten_base_again", ten},
      {"ten_ranges1", ten, 1},
      {"ten_ranges64", ten, 64},
      {"ten_ranges256", ten, 256},
      {"ten_tiny", ten, 4, Kernel::kTiny},
      {"ten_nolaunch", ten, 4, Kernel::kNone},
      {"ten_sync", ten, 4, Kernel::kStream, true},
      {"inst1", {"smsp__inst_executed.sum"}},
      {"dram2", {"dram__bytes_read.sum", "dram__bytes_write.sum"}},
      {"sass1", {"smsp__sass_inst_executed_op_global_ld.sum"}},
      {"sass3",
       {"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
        "smsp__sass_inst_executed_op_global_ld.sum", "smsp__sass_inst_executed_op_global_st.sum"}},
      {"sm_throughput", {"sm__throughput.avg.pct_of_peak_sustained_elapsed"}},
      {"ten_no_sass", ten_no_sass},
      {"sm_ten", kreplay::cupti::ten_pass_sm_metrics()},
      {"ten_warm_empty", ten, 4, Kernel::kStream, false, Case::Warm::kEmpty},
      {"ten_warm_kernel", ten, 4, Kernel::kStream, false, Case::Warm::kKernel},
      {"ten_warm_full", ten, 4, Kernel::kStream, false, Case::Warm::kFull},
  };
  // Every case on a fresh range-profiler object (Enable ... Disable), as kreplay has after a
  // metric-set switch: its first dispatch shows the first Start after an Enable.
  kreplay::cupti::RangeProfilerCosts totals;
  auto run_fresh = [&](const Case& c) {
    auto t0 = Clock::now();
    auto created = RangeProfiler::create(ctx);
    if (!created.ok()) {
      std::fprintf(stderr, "pass_cost: %s\n", created.status().message().c_str());
      return false;
    }
    std::printf("pass_cost_setup case=%s create_ms=%.2f\n", c.name.c_str(), ms_since(t0));
    bool r = run_case(**created, c, b, dispatches);
    const auto& k = (*created)->costs();
    totals.enable.add(k.enable.total_ns);
    totals.counter_data_size.add(k.counter_data_size.total_ns);
    totals.counter_data_init.add(k.counter_data_init.total_ns / (k.counter_data_init.calls ? k.counter_data_init.calls : 1));
    created->reset();
    return r;
  };
  bool ok = true;
  for (const auto& c : cases) ok = run_fresh(c) && ok;

  // Footprint: 8 GiB more, written, then the base case again.
  void* big = nullptr;
  size_t big_bytes = size_t{8} << 30;
  if (cudaMalloc(&big, big_bytes) == cudaSuccess) {
    cudaMemset(big, 1, big_bytes);
    cudaDeviceSynchronize();
    ok = run_fresh({"ten_footprint8g", ten}) && ok;
    ok = run_fresh({"inst1_footprint8g", {"smsp__inst_executed.sum"}}) && ok;
    cudaFree(big);
  }
  std::printf("pass_cost_totals enable_mean_ms=%.2f counter_data_size_mean_ms=%.2f "
              "counter_data_init_mean_ms=%.3f ok=%d\n",
              totals.enable.mean_ms(), totals.counter_data_size.mean_ms(),
              totals.counter_data_init.mean_ms(), ok ? 1 : 0);
  return ok ? 0 : 1;
}
