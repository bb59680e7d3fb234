// profiler_api_cost: what a user-replay pass costs with CUPTI's range profiler against the legacy
// profiler API (cupti_profiler_target.h), and with one profiler-API session per dispatch against
// one session kept across all dispatches.
//
// Every case drives its profiler the way kernel replay does -- per dispatch: begin(); per pass:
// start(), [push_range("d<k>")], one launch of a 256 MiB in-place update (~0.2 ms), [pop_range()],
// stop(); then decode() and values() -- for two metric sets: `sm1` (kOnePassSmMetrics, 1 pass) and
// `ten` (kTenPassMetrics, 16 metrics in 10 passes). User range unless the case says auto. Cases:
//   range                   RangeProfiler (cuptiRangeProfilerStart/Stop per pass), auto range and
//                           a 1-range image, as kreplay's kernel replay (cuda_counters.cpp)
//   range_user              the same in user range
//   api_per_dispatch        ProfilerApiSession, BeginSession + SetConfig ... EndSession per dispatch
//   api_per_dispatch_auto   the same in auto range
//   api_per_dispatch_nvpw   the same with the config image NVPW builds instead of the host API's
//   api_kept                one session and config for all dispatches, one range per dispatch,
//                           FlushCounterData + values after each dispatch
//   api_kept_auto           the same in auto range (are the launches of later dispatches new
//                           ranges, or do they fold into range "0"? `ranges` says)
//   api_kept_flush_end      the same, one FlushCounterData and values() after the last dispatch
//   api_kept_setconfig      kept session, UnsetConfig + SetConfig before each dispatch
//   api_kept_warm           kept session, a whole throw-away collection (every pass, a tiny
//                           launch, flush) before dispatch 0: does the first BeginPass cost leave
//                           dispatch 0, and are the later values whole (nan_values)?
//   api_kept_warm_empty     kept session, one empty BeginPass/EndPass then UnsetConfig +
//                           SetConfig before dispatch 0
//   range_warm_full         `range` with a whole throw-away collection before dispatch 0
//   range_warm_light        `range` with a throw-away collection of the 1-pass `sm1` set before
//                           dispatch 0, then the set configured for real (a new profiler object,
//                           as RangeProfiler::configure makes for another set): does dispatch 0
//                           still pay the first Start (first_start_ms), and are its values whole?
//                           Run it in a process of its own: a case run earlier in the process has
//                           paid the context's first Start already.
//
//   profiler_api_cost [dispatches=8] [case[,case...]|all] [--list]
// Prints one `profiler_api_cost case=... set=...` line per case, one `profiler_api_values` line for
// its first and last dispatch, and `... unavailable: <call> <status>` for a case whose API refuses
// (then goes on; the exit status is then 3). values_agree compares smsp__inst_executed.sum with the `range` case of the same
// set run earlier in the process (within 1%). A benchmark, not a test: no assertion on time.
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cupti/metric_sets.hpp"
#include "backends/cuda/cupti/profiler_api.hpp"
#include "backends/cuda/cupti/range_profiler.hpp"

namespace {

namespace kc = kreplay::cupti;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

__global__ void update(float* x, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = x[i] * 1.0001f + 1.0f;
}

__global__ void tiny(unsigned* c) { atomicAdd(c, 1u); }

struct Buffers {
  float* data = nullptr;
  size_t n = 0;
  unsigned* counter = nullptr;
  void launch() const { update<<<static_cast<unsigned>((n + 255) / 256), 256>>>(data, n); }
  void launch_tiny() const { tiny<<<1, 32>>>(counter); }
};

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

/// What every method gives back per case.
struct Run {
  size_t passes = 0;
  double setup_ms = 0;      // create + configure
  double warm_ms = 0;       // warm-up before dispatch 0
  double first_start_ms = 0;  // the first start() of dispatch 0
  std::vector<double> dispatch_ms;
  double final_ms = 0;      // flush-at-end: decode + values after the last dispatch
  std::vector<std::vector<double>> values;  // per dispatch (range d<k>), metric order
  size_t nan_values = 0;
  std::string calls;        // "<call>_ms=<mean> ..." (steady dispatches)
  std::string extra;        // case-specific key=values
};

struct Failure {
  std::string what;
};

template <typename T>
T check(kreplay::Result<T> r) {
  if (!r.ok()) throw Failure{r.status().message()};
  return std::move(r).value();
}
void check(const kreplay::Status& s) {
  if (!s.ok()) throw Failure{s.message()};
}

std::string fmt_call(const char* name, const kc::CallCost& c) {
  char buf[96];
  std::snprintf(buf, sizeof buf, " %s_ms=%.3f", name, c.mean_ms());
  return c.calls ? buf : "";
}

/// The per-pass loop shared by both profilers. P has start/stop/push_range/pop_range.
/// The per-pass loop shared by both profilers; user range mode wraps the launch in @p range.
template <typename P>
size_t run_passes(P& p, const std::string& range, const std::function<void()>& launch,
                  double* first_start_ms) {
  const bool user = p.mode() == kc::RangeMode::kUser;
  size_t pass = 0;
  for (bool done = false; !done; ++pass) {
    if (pass > 64) throw Failure{"no end after 64 passes"};
    auto t0 = Clock::now();
    check(p.start());
    if (first_start_ms && pass == 0) *first_start_ms = ms_since(t0);
    if (user) check(p.push_range(range));
    launch();
    if (user) check(p.pop_range());
    done = check(p.stop()).all_passes_submitted;
  }
  return pass;
}

void collect_values(Run& run, const std::vector<kc::RangeValues>& ranges) {
  for (const auto& r : ranges) {
    for (double v : r.values) run.nan_values += std::isnan(v) ? 1 : 0;
    run.values.push_back(r.values);
  }
}

// ------------------------------------------------------------------------------------------
// (a) range profiler
// ------------------------------------------------------------------------------------------

enum class RangeWarm { kNone, kFull, kLight };

Run run_range(CUcontext ctx, const std::vector<std::string>& metrics, const Buffers& b,
              int dispatches, kc::RangeMode mode, RangeWarm warm) {
  Run run;
  auto t0 = Clock::now();
  auto rp = check(kc::RangeProfiler::create(ctx));
  // One range, as kreplay's kernel replay sizes the image (cuda_counters.cpp).
  check(rp->configure(warm == RangeWarm::kLight ? kc::one_pass_sm_metrics() : metrics, mode, 1));
  run.setup_ms = ms_since(t0);
  if (warm != RangeWarm::kNone) {
    t0 = Clock::now();
    check(rp->begin());
    double warm_start_ms = 0;
    const size_t passes = run_passes(*rp, "warm", [&] { b.launch_tiny(); }, &warm_start_ms);
    check(rp->decode());
    size_t nan = 0;
    for (const auto& r : check(rp->values()))
      for (double v : r.values) nan += std::isnan(v) ? 1 : 0;
    // The light warm-up's set differs from the dispatches': configure makes a new object.
    if (warm == RangeWarm::kLight) check(rp->configure(metrics, mode, 1));
    run.warm_ms = ms_since(t0);
    char buf[128];
    std::snprintf(buf, sizeof buf, " warm_passes=%zu warm_first_start_ms=%.3f warm_nan=%zu",
                  passes, warm_start_ms, nan);
    run.extra += buf;
  }
  for (int d = 0; d < dispatches; ++d) {
    if (d == 1) rp->reset_costs();
    auto td = Clock::now();
    check(rp->begin());
    run.passes = run_passes(*rp, "d" + std::to_string(d), [&] { b.launch(); },
                            d == 0 ? &run.first_start_ms : nullptr);
    check(rp->decode());
    collect_values(run, check(rp->values()));
    cuCtxSynchronize();
    run.dispatch_ms.push_back(ms_since(td));
  }
  const auto& k = rp->costs();
  run.calls = fmt_call("start", k.start) + fmt_call("stop", k.stop) +
              fmt_call("push_range", k.push_range) + fmt_call("pop_range", k.pop_range) +
              fmt_call("counter_data_init", k.counter_data_init) +
              fmt_call("set_config", k.set_config) + fmt_call("decode", k.decode) +
              fmt_call("evaluate", k.evaluate);
  return run;
}

// ------------------------------------------------------------------------------------------
// (b), (c) profiler API
// ------------------------------------------------------------------------------------------

enum class Warm { kNone, kFull, kEmpty };

Run run_api(CUcontext ctx, const std::vector<std::string>& metrics, const Buffers& b,
            int dispatches, kc::ProfilerApiOptions o, bool flush_end, Warm warm) {
  Run run;
  auto t0 = Clock::now();
  auto s = check(kc::ProfilerApiSession::create(ctx));
  o.max_ranges = o.scope == kc::SessionScope::kKept ? static_cast<size_t>(dispatches) + 2 : 1;
  check(s->configure(metrics, o));
  run.setup_ms = ms_since(t0);
  double first_begin_ms = 0;
  if (warm != Warm::kNone) {
    t0 = Clock::now();
    check(s->begin());
    if (warm == Warm::kFull) {
      run_passes(*s, "warm", [&] { b.launch_tiny(); }, nullptr);
      check(s->decode());
      auto w = check(s->values());
      size_t nan = 0;
      for (const auto& r : w)
        for (double v : r.values) nan += std::isnan(v) ? 1 : 0;
      run.extra += " warm_ranges=" + std::to_string(w.size()) + " warm_nan=" + std::to_string(nan);
    } else {
      check(s->start());
      check(s->stop());
      check(s->restart_config());
    }
    run.warm_ms = ms_since(t0);
  }
  for (int d = 0; d < dispatches; ++d) {
    if (d == 1) s->reset_costs();
    auto td = Clock::now();
    auto tb = Clock::now();
    check(s->begin());
    if (d == 0) first_begin_ms = ms_since(tb);
    run.passes = run_passes(*s, "d" + std::to_string(d), [&] { b.launch(); },
                            d == 0 ? &run.first_start_ms : nullptr);
    if (!flush_end) {
      check(s->decode());
      auto vals = check(s->values());
      if (d == 0) {
        // Cross-check the two decoders on the first range of this collection.
        size_t first = check(s->ranges_in_image()) - vals.size();
        auto host = s->evaluate_range(first, kc::EvalPath::kHostApi);
        auto nvpw = s->evaluate_range(first, kc::EvalPath::kNvpw);
        char buf[256];
        std::snprintf(buf, sizeof buf, " eval_host_inst=%.0f eval_nvpw_inst=%.0f",
                      host.ok() ? (*host)[0] : NAN, nvpw.ok() ? (*nvpw)[0] : NAN);
        run.extra += buf;
        if (!host.ok()) std::printf("profiler_api_cost_note host API decode: %s\n", host.status().message().c_str());
        if (!nvpw.ok()) std::printf("profiler_api_cost_note NVPW decode: %s\n", nvpw.status().message().c_str());
        run.extra += std::string(" eval_path=") +
                     (s->last_eval_path() == kc::EvalPath::kNvpw ? "nvpw" : "host_api");
      }
      collect_values(run, vals);
    }
    cuCtxSynchronize();
    run.dispatch_ms.push_back(ms_since(td));
  }
  if (flush_end) {
    t0 = Clock::now();
    check(s->decode());
    auto vals = check(s->values());
    run.final_ms = ms_since(t0);
    collect_values(run, vals);
    run.extra += std::string(" eval_path=") +
                 (s->last_eval_path() == kc::EvalPath::kNvpw ? "nvpw" : "host_api");
  }
  t0 = Clock::now();
  check(s->end_session());
  double end_ms = ms_since(t0);
  const auto& k = s->costs();
  char buf[160];
  std::snprintf(buf, sizeof buf,
                " first_begin_ms=%.3f final_decode_ms=%.3f end_ms=%.3f sessions=%llu "
                "ranges_dropped=%llu image_kb=%.0f",
                first_begin_ms, run.final_ms, end_ms,
                static_cast<unsigned long long>(k.sessions),
                static_cast<unsigned long long>(k.ranges_dropped),
                static_cast<double>(s->counter_data_size()) / 1024.0);
  run.extra += buf;
  run.calls = fmt_call("begin_session", k.begin_session) + fmt_call("end_session", k.end_session) +
              fmt_call("set_config", k.set_config) + fmt_call("unset_config", k.unset_config) +
              fmt_call("begin_pass", k.begin_pass) + fmt_call("end_pass", k.end_pass) +
              fmt_call("enable", k.enable) + fmt_call("disable", k.disable) +
              fmt_call("push_range", k.push_range) + fmt_call("pop_range", k.pop_range) +
              fmt_call("flush", k.flush) + fmt_call("counter_data_init", k.counter_data_init) +
              fmt_call("evaluate", k.evaluate);
  return run;
}

// ------------------------------------------------------------------------------------------
// Cases
// ------------------------------------------------------------------------------------------

struct Case {
  std::string name;
  std::function<Run(const std::vector<std::string>&)> run;
};

std::string value_text(const std::vector<std::string>& metrics, const std::vector<double>& v) {
  std::string out;
  for (size_t i = 0; i < metrics.size() && i < v.size() && i < 3; ++i) {
    char buf[160];
    std::snprintf(buf, sizeof buf, " %s=%.6g", metrics[i].c_str(), v[i]);
    out += buf;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int dispatches = 8;
  std::string only = "all";
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--list") == 0) {
      list = true;
    } else if (argv[i][0] >= '0' && argv[i][0] <= '9') {
      dispatches = std::atoi(argv[i]);
    } else {
      only = argv[i];
    }
  }
  if (dispatches < 2) dispatches = 2;

  Buffers b;
  CUcontext ctx = nullptr;
  using M = kc::RangeMode;
  auto api = [&](kc::SessionScope scope, kc::KeptReset reset, kc::ConfigSource config,
                 bool flush_end, Warm warm, M mode = M::kUser) {
    return [&, scope, reset, config, flush_end, warm, mode](const std::vector<std::string>& m) {
      kc::ProfilerApiOptions o;
      o.mode = mode;
      o.scope = scope;
      o.kept_reset = reset;
      o.config = config;
      return run_api(ctx, m, b, dispatches, o, flush_end, warm);
    };
  };
  using S = kc::SessionScope;
  using R = kc::KeptReset;
  using C = kc::ConfigSource;
  std::vector<Case> cases = {
      {"range",
       [&](const auto& m) { return run_range(ctx, m, b, dispatches, M::kAuto, RangeWarm::kNone); }},
      {"range_user",
       [&](const auto& m) { return run_range(ctx, m, b, dispatches, M::kUser, RangeWarm::kNone); }},
      {"api_per_dispatch", api(S::kPerDispatch, R::kNone, C::kHostApi, false, Warm::kNone)},
      {"api_per_dispatch_auto",
       api(S::kPerDispatch, R::kNone, C::kHostApi, false, Warm::kNone, M::kAuto)},
      {"api_per_dispatch_nvpw", api(S::kPerDispatch, R::kNone, C::kNvpw, false, Warm::kNone)},
      {"api_kept", api(S::kKept, R::kNone, C::kHostApi, false, Warm::kNone)},
      {"api_kept_auto", api(S::kKept, R::kNone, C::kHostApi, false, Warm::kNone, M::kAuto)},
      {"api_kept_flush_end", api(S::kKept, R::kNone, C::kHostApi, true, Warm::kNone)},
      {"api_kept_setconfig", api(S::kKept, R::kSetConfig, C::kHostApi, false, Warm::kNone)},
      {"api_kept_warm", api(S::kKept, R::kNone, C::kHostApi, false, Warm::kFull)},
      {"api_kept_warm_empty", api(S::kKept, R::kNone, C::kHostApi, false, Warm::kEmpty)},
      {"range_warm_full",
       [&](const auto& m) { return run_range(ctx, m, b, dispatches, M::kAuto, RangeWarm::kFull); }},
      {"range_warm_light",
       [&](const auto& m) { return run_range(ctx, m, b, dispatches, M::kAuto, RangeWarm::kLight); }},
  };
  if (list) {
    for (const auto& c : cases) std::printf("%s\n", c.name.c_str());
    return 0;
  }
  auto selected = [&](const std::string& name) {
    if (only == "all") return true;
    std::string list_ = "," + only + ",";
    return list_.find("," + name + ",") != std::string::npos;
  };

  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "profiler_api_cost: no CUDA device\n");
    return 77;
  }
  b.n = (256u << 20) / sizeof(float);
  if (cudaMalloc(&b.data, b.n * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&b.counter, sizeof(unsigned)) != cudaSuccess) {
    std::fprintf(stderr, "profiler_api_cost: cudaMalloc failed\n");
    return 1;
  }
  cudaMemset(b.data, 0, b.n * sizeof(float));
  cudaMemset(b.counter, 0, sizeof(unsigned));
  cudaDeviceSynchronize();
  cuCtxGetCurrent(&ctx);
  if (auto s = kc::RangeProfiler::device_supported(0); !s.ok()) {
    std::printf("profiler_api_cost unavailable: %s\n", s.message().c_str());
    return 77;
  }

  const std::vector<std::pair<std::string, std::vector<std::string>>> sets = {
      {"sm1", kc::one_pass_sm_metrics()}, {"ten", kc::ten_pass_metrics()}};
  std::map<std::string, double> reference_inst;  // set -> range case's inst_executed, dispatch 0
  int failures = 0;
  for (const auto& [set, metrics] : sets) {
    for (const auto& c : cases) {
      if (!selected(c.name)) continue;
      Run run;
      try {
        run = c.run(metrics);
      } catch (const Failure& f) {
        std::printf("profiler_api_cost case=%s set=%s unavailable: %s\n", c.name.c_str(),
                    set.c_str(), f.what.c_str());
        std::fflush(stdout);
        ++failures;
        continue;
      }
      std::vector<double> steady(run.dispatch_ms.begin() + 1, run.dispatch_ms.end());
      double inst = run.values.empty() ? NAN : run.values.front()[0];
      double inst_last = run.values.empty() ? NAN : run.values.back()[0];
      if (c.name == "range") reference_inst[set] = inst;
      std::string agree = "unknown";
      if (c.name != "range" && reference_inst.count(set)) {
        double ref = reference_inst[set];
        auto close = [&](double v) { return std::fabs(v - ref) <= 0.01 * std::fabs(ref); };
        agree = close(inst) && close(inst_last) ? "yes" : "no";
      }
      std::printf(
          "profiler_api_cost case=%s set=%s metrics=%zu passes=%zu dispatches=%d setup_ms=%.2f "
          "warm_ms=%.2f first_start_ms=%.3f first_dispatch_ms=%.2f steady_dispatch_ms=%.3f "
          "per_pass_ms=%.3f ranges=%zu nan_values=%zu values_agree=%s%s%s\n",
          c.name.c_str(), set.c_str(), metrics.size(), run.passes, dispatches, run.setup_ms,
          run.warm_ms, run.first_start_ms, run.dispatch_ms.empty() ? 0.0 : run.dispatch_ms[0],
          mean(steady), run.passes ? mean(steady) / static_cast<double>(run.passes) : 0.0,
          run.values.size(), run.nan_values, agree.c_str(), run.calls.c_str(), run.extra.c_str());
      if (!run.values.empty()) {
        std::printf("profiler_api_values case=%s set=%s dispatch=first%s\n", c.name.c_str(),
                    set.c_str(), value_text(metrics, run.values.front()).c_str());
        std::printf("profiler_api_values case=%s set=%s dispatch=last%s\n", c.name.c_str(),
                    set.c_str(), value_text(metrics, run.values.back()).c_str());
      }
      std::fflush(stdout);
    }
  }
  std::printf("profiler_api_cost_done failures=%d\n", failures);
  // 3: some case was unavailable (scripts/gpu-check.sh then runs every case in a process of its
  // own, so that one case's failure cannot leave the context broken for the next).
  return failures ? 3 : 0;
}
