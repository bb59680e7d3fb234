// Pins RangeProfiler on a real GPU (ctest label gpu): user replay with auto and user ranges,
// values that match what the kernels do, a multi-pass set collected in exactly pass_count()
// Start/Stop passes with memory restored between passes, and the metric-set switch workaround.
// Skips cleanly (GTEST_SKIP -> ctest "Skipped") when cuInit/cuDeviceGetCount find no GPU, and
// with the reason when CUPTI may not profile the device (permissions, another profiler, vGPU).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include "backends/cuda/cupti/driver_api.hpp"
#include "backends/cuda/cupti/metric_sets.hpp"
#include "backends/cuda/cupti/range_profiler.hpp"

namespace kreplay::cupti {
namespace {

// ---------------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------------

/// Reads n4 float4 (16 n4 bytes) and writes nothing unless the sum is an impossible value, so it
/// is idempotent and its DRAM reads are the buffer.
__global__ void stream_read(const float4* __restrict__ in, size_t n4, float* out) {
  float acc = 0.0f;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4;
       i += size_t(gridDim.x) * blockDim.x) {
    float4 v = in[i];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 12345.678f) out[0] = acc;
}

/// Overwrites a scratch buffer larger than L2, so the next kernel's reads come from DRAM.
__global__ void flush_l2(int4* scratch, size_t n4) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4;
       i += size_t(gridDim.x) * blockDim.x) {
    scratch[i] = make_int4(int(i), 1, 2, 3);
  }
}

/// In place, one FFMA, one LDG and one STG per element: not idempotent, so every pass but the
/// last must be undone by a restore.
__global__ void update(float* x, size_t n) {
  size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = x[i] * 1.0001f + 1.0f;
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Empty when there is a GPU; else why not (no libcuda.so.1, cuInit failed, no device).
const std::string& no_gpu_reason() {
  static const std::string reason = []() -> std::string {
    Status s = driver::init();
    if (!s.ok()) return s.message();
    auto count = driver::device_count();
    if (!count.ok()) return count.status().message();
    if (*count == 0) return "cuDeviceGetCount found no CUDA device";
    return {};
  }();
  return reason;
}

#define CUDA_OK(call)                                                          \
  do {                                                                         \
    cudaError_t err_ = (call);                                                 \
    ASSERT_EQ(err_, cudaSuccess) << #call << ": " << cudaGetErrorString(err_); \
  } while (0)

#define KR_OK(expr)                                          \
  do {                                                       \
    ::kreplay::Status st_ = (expr);                          \
    ASSERT_TRUE(st_.ok()) << #expr << ": " << st_.message(); \
  } while (0)

constexpr size_t kMiB = size_t(1) << 20;

class RangeProfilerGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!no_gpu_reason().empty()) GTEST_SKIP() << "no GPU: " << no_gpu_reason();
    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaFree(nullptr));  // create the primary context
    auto ctx = driver::current_context();
    ASSERT_TRUE(ctx.ok()) << ctx.status().message();
    ctx_ = *ctx;
    auto dev = driver::context_device(ctx_);
    ASSERT_TRUE(dev.ok()) << dev.status().message();
    Status supported = RangeProfiler::device_supported(*dev);
    if (!supported.ok()) {
      std::fprintf(stderr, "==KREPLAY== range profiler unavailable: %s\n",
                   supported.message().c_str());
      GTEST_SKIP() << "range profiler unavailable: " << supported.message();
    }
    auto rp = RangeProfiler::create(ctx_);
    ASSERT_TRUE(rp.ok()) << rp.status().message();
    rp_ = std::move(rp).value();
    int sms = 0;
    CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    blocks_ = sms * 8;
    std::printf("[ info ] device chip %s, counter availability %zu bytes\n", rp_->chip().c_str(),
                rp_->counter_availability().size());
  }

  void TearDown() override {
    if (rp_) {
      const RangeProfilerCosts& c = rp_->costs();
      std::printf(
          "[ info ] costs (mean ms): enable %.2f (%llu), start %.2f (%llu, max %.2f), stop %.2f, "
          "push %.3f, pop %.3f, counter-data init %.3f, set-config %.3f, decode %.3f, evaluate "
          "%.3f per range, counter data %zu bytes\n",
          c.enable.mean_ms(), (unsigned long long)c.enable.calls, c.start.mean_ms(),
          (unsigned long long)c.start.calls, c.start.max_ns / 1e6, c.stop.mean_ms(),
          c.push_range.mean_ms(), c.pop_range.mean_ms(), c.counter_data_init.mean_ms(),
          c.set_config.mean_ms(), c.decode.mean_ms(), c.evaluate.mean_ms(),
          rp_->counter_data_size());
    }
    rp_.reset();  // cuptiRangeProfilerDisable while the context is alive
  }

  /// One collection: begin(), then passes of {before_pass(i); start; launch; sync; stop} until
  /// CUPTI has every pass; decode; values. Returns the number of passes run in *passes.
  void collect(const std::function<void(size_t)>& before_pass, const std::function<void()>& launch,
               std::vector<RangeValues>* out, size_t* passes) {
    KR_OK(rp_->begin());
    size_t n = 0;
    for (;;) {
      before_pass(n);
      CUDA_OK(cudaDeviceSynchronize());
      KR_OK(rp_->start());
      launch();
      CUDA_OK(cudaGetLastError());
      CUDA_OK(cudaDeviceSynchronize());
      auto pass = rp_->stop();
      ASSERT_TRUE(pass.ok()) << pass.status().message();
      ++n;
      if (pass->all_passes_submitted) {
        EXPECT_EQ(pass->next_pass_index, 0u);
        break;
      }
      EXPECT_EQ(pass->next_pass_index, n);
      ASSERT_LE(n, rp_->pass_count()) << "CUPTI wants more passes than it scheduled";
    }
    EXPECT_EQ(rp_->passes_done(), n);
    auto dropped = rp_->decode();
    ASSERT_TRUE(dropped.ok()) << dropped.status().message();
    EXPECT_EQ(*dropped, 0u);
    auto values = rp_->values();
    ASSERT_TRUE(values.ok()) << values.status().message();
    *out = std::move(values).value();
    *passes = n;
  }

  size_t index_of(const std::string& metric) const {
    const auto& m = rp_->metrics();
    return size_t(std::find(m.begin(), m.end(), metric) - m.begin());
  }

  CUcontext ctx_ = nullptr;
  std::unique_ptr<RangeProfiler> rp_;
  int blocks_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

// A set that takes a few passes, so the replay loop is exercised.
const std::vector<std::string> kFewPassMetrics = {
    "dram__bytes_read.sum", "smsp__inst_executed.sum", "lts__t_sector_hit_rate.pct",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed"};

TEST_F(RangeProfilerGpu, AutoRangeStreamingReadMatchesBytesAndIsRepeatable) {
  const size_t bytes = 512 * kMiB;
  const size_t scratch_bytes = 256 * kMiB;  // > L2 (50-60 MB on H100/H200)
  float4* in = nullptr;
  int4* scratch = nullptr;
  float* out = nullptr;
  CUDA_OK(cudaMalloc(&in, bytes));
  CUDA_OK(cudaMalloc(&scratch, scratch_bytes));
  CUDA_OK(cudaMalloc(&out, sizeof(float)));
  CUDA_OK(cudaMemset(in, 0, bytes));

  const std::vector<std::string>& metrics = kFewPassMetrics;
  KR_OK(rp_->configure(metrics, RangeMode::kAuto, 4));
  std::printf("[ info ] %zu metrics: %zu passes\n", metrics.size(), rp_->pass_count());
  ASSERT_GE(rp_->pass_count(), 2u);

  auto flush = [&](size_t) { flush_l2<<<blocks_, 256>>>(scratch, scratch_bytes / 16); };
  auto launch = [&] { stream_read<<<blocks_, 256>>>(in, bytes / 16, out); };
  double inst[2] = {};
  for (int run = 0; run < 2; ++run) {
    std::vector<RangeValues> ranges;
    size_t passes = 0;
    ASSERT_NO_FATAL_FAILURE(collect(flush, launch, &ranges, &passes));
    EXPECT_EQ(passes, rp_->pass_count());
    ASSERT_EQ(ranges.size(), 1u);  // one kernel between start and stop
    const auto& v = ranges[0].values;
    ASSERT_EQ(v.size(), metrics.size());
    for (double x : v) EXPECT_TRUE(std::isfinite(x));
    double read = v[index_of("dram__bytes_read.sum")];
    inst[run] = v[index_of("smsp__inst_executed.sum")];
    std::printf(
        "[ info ] run %d range '%s': dram__bytes_read.sum %.0f (N = %zu, %.2f%%), "
        "smsp__inst_executed.sum %.0f\n",
        run, ranges[0].name.c_str(), read, bytes, 100.0 * read / double(bytes), inst[run]);
    EXPECT_NEAR(read, double(bytes), 0.05 * double(bytes));
    EXPECT_GT(inst[run], 0.0);
  }
  EXPECT_EQ(inst[0], inst[1]);
  EXPECT_EQ(rp_->costs().start.calls, 2 * rp_->pass_count());
  EXPECT_EQ(rp_->costs().stop.calls, 2 * rp_->pass_count());

  CUDA_OK(cudaFree(in));
  CUDA_OK(cudaFree(scratch));
  CUDA_OK(cudaFree(out));
}

// A collection left after its first pass (a range of one pass, a learning run) must not leave
// the next collection short: it takes every pass again and its values are whole.
TEST_F(RangeProfilerGpu, ACollectionLeftMidwayDoesNotShortenTheNext) {
  float4* in = nullptr;
  float* out = nullptr;
  const size_t bytes = 64 * kMiB;
  CUDA_OK(cudaMalloc(&in, bytes));
  CUDA_OK(cudaMalloc(&out, sizeof(float)));
  CUDA_OK(cudaMemset(in, 0, bytes));
  KR_OK(rp_->configure(kFewPassMetrics, RangeMode::kAuto, 4));
  ASSERT_GE(rp_->pass_count(), 2u);
  auto launch = [&] { stream_read<<<blocks_, 256>>>(in, bytes / 16, out); };
  KR_OK(rp_->begin());  // one pass of several, then left
  KR_OK(rp_->start());
  launch();
  CUDA_OK(cudaDeviceSynchronize());
  auto first = rp_->stop();
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_FALSE(first->all_passes_submitted);
  std::vector<RangeValues> ranges;
  size_t passes = 0;
  ASSERT_NO_FATAL_FAILURE(collect([](size_t) {}, launch, &ranges, &passes));
  EXPECT_EQ(passes, rp_->pass_count());
  ASSERT_EQ(ranges.size(), 1u);
  for (double x : ranges[0].values) EXPECT_TRUE(std::isfinite(x));
  CUDA_OK(cudaFree(in));
  CUDA_OK(cudaFree(out));
}

TEST_F(RangeProfilerGpu, UserRangesNameEachKernel) {
  const size_t a_bytes = 256 * kMiB;
  const size_t b_bytes = 128 * kMiB;
  const size_t scratch_bytes = 256 * kMiB;
  float4 *a = nullptr, *b = nullptr;
  int4* scratch = nullptr;
  float* out = nullptr;
  CUDA_OK(cudaMalloc(&a, a_bytes));
  CUDA_OK(cudaMalloc(&b, b_bytes));
  CUDA_OK(cudaMalloc(&scratch, scratch_bytes));
  CUDA_OK(cudaMalloc(&out, sizeof(float)));
  CUDA_OK(cudaMemset(a, 0, a_bytes));
  CUDA_OK(cudaMemset(b, 0, b_bytes));

  KR_OK(rp_->configure({"dram__bytes_read.sum", "smsp__inst_executed.sum"}, RangeMode::kUser, 4));
  EXPECT_EQ(rp_->pass_count(), 1u);
  auto launch = [&] {
    ASSERT_TRUE(rp_->push_range("read_a").ok());
    stream_read<<<blocks_, 256>>>(a, a_bytes / 16, out);
    ASSERT_TRUE(rp_->pop_range().ok());
    // Flush between the two so that b is read from DRAM too (it is inside no range).
    flush_l2<<<blocks_, 256>>>(scratch, scratch_bytes / 16);
    ASSERT_TRUE(rp_->push_range("read_b").ok());
    stream_read<<<blocks_, 256>>>(b, b_bytes / 16, out);
    ASSERT_TRUE(rp_->pop_range().ok());
  };
  auto flush = [&](size_t) { flush_l2<<<blocks_, 256>>>(scratch, scratch_bytes / 16); };
  std::vector<RangeValues> ranges;
  size_t passes = 0;
  ASSERT_NO_FATAL_FAILURE(collect(flush, launch, &ranges, &passes));
  EXPECT_EQ(passes, 1u);
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0].name, "read_a");
  EXPECT_EQ(ranges[1].name, "read_b");
  for (const auto& r : ranges) {
    std::printf("[ info ] range '%s': dram__bytes_read.sum %.0f, smsp__inst_executed.sum %.0f\n",
                r.name.c_str(), r.values[0], r.values[1]);
  }
  EXPECT_NEAR(ranges[0].values[0], double(a_bytes), 0.05 * double(a_bytes));
  EXPECT_NEAR(ranges[1].values[0], double(b_bytes), 0.05 * double(b_bytes));

  CUDA_OK(cudaFree(a));
  CUDA_OK(cudaFree(b));
  CUDA_OK(cudaFree(scratch));
  CUDA_OK(cudaFree(out));
}

TEST_F(RangeProfilerGpu, TenPassSetInExactlyPassCountPassesWithRestore) {
  const size_t n = size_t(64) << 20;  // 64 Mi floats = 256 MiB
  const size_t bytes = n * sizeof(float);
  float* x = nullptr;
  float* backup = nullptr;
  CUDA_OK(cudaMalloc(&x, bytes));
  CUDA_OK(cudaMalloc(&backup, bytes));
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = float(i % 1024) * 0.5f;
  CUDA_OK(cudaMemcpy(x, host.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(backup, x, bytes, cudaMemcpyDeviceToDevice));  // the snapshot

  const auto metrics = ten_pass_metrics();
  KR_OK(rp_->configure(metrics, RangeMode::kAuto, 4));
  std::printf("[ info ] kTenPassMetrics on %s: %zu passes (offline GH100: %zu)\n",
              rp_->chip().c_str(), rp_->pass_count(), kTenPassMetricsPassesGH100);
  if (rp_->chip() == "GH100") EXPECT_EQ(rp_->pass_count(), kTenPassMetricsPassesGH100);

  // Pass 0 is the application's own run; every later pass starts from the snapshot.
  auto restore = [&](size_t pass) {
    if (pass > 0) cudaMemcpyAsync(x, backup, bytes, cudaMemcpyDeviceToDevice);
  };
  auto launch = [&] { update<<<unsigned((n + 255) / 256), 256>>>(x, n); };
  std::vector<RangeValues> ranges;
  size_t passes = 0;
  ASSERT_NO_FATAL_FAILURE(collect(restore, launch, &ranges, &passes));
  EXPECT_EQ(passes, rp_->pass_count());
  ASSERT_EQ(ranges.size(), 1u);
  const auto& v = ranges[0].values;
  ASSERT_EQ(v.size(), metrics.size());
  for (size_t i = 0; i < v.size(); ++i) {
    std::printf("[ info ]   %-66s %.6g\n", metrics[i].c_str(), v[i]);
    EXPECT_TRUE(std::isfinite(v[i])) << metrics[i] << " = " << v[i];
  }
  // Exact instruction counts: one FFMA per element, one LDG and one STG per warp of 32.
  EXPECT_EQ(v[index_of("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum")], double(n));
  EXPECT_EQ(v[index_of("smsp__sass_inst_executed_op_global_ld.sum")], double(n / 32));
  EXPECT_EQ(v[index_of("smsp__sass_inst_executed_op_global_st.sum")], double(n / 32));

  // The buffer holds exactly one update: every pass but the last was undone.
  std::vector<float> result(n);
  CUDA_OK(cudaMemcpy(result.data(), x, bytes, cudaMemcpyDeviceToHost));
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += result[i] != std::fmaf(host[i], 1.0001f, 1.0f);  // the GPU fuses the multiply-add
  EXPECT_EQ(wrong, 0u);

  CUDA_OK(cudaFree(x));
  CUDA_OK(cudaFree(backup));
}

TEST_F(RangeProfilerGpu, SwitchingMetricSetsReenablesInsteadOfDecodingNaN) {
  const size_t bytes = 64 * kMiB;
  float4* in = nullptr;
  float* out = nullptr;
  CUDA_OK(cudaMalloc(&in, bytes));
  CUDA_OK(cudaMalloc(&out, sizeof(float)));
  CUDA_OK(cudaMemset(in, 0, bytes));
  auto nothing = [](size_t) {};
  auto launch = [&] { stream_read<<<blocks_, 256>>>(in, bytes / 16, out); };

  const std::vector<std::vector<std::string>> sets = {
      {"smsp__inst_executed.sum", "sm__cycles_elapsed.max"},
      {"dram__bytes_read.sum", "dram__bytes_write.sum"},
      {"smsp__inst_executed.sum", "sm__cycles_elapsed.max"},
  };
  for (size_t s = 0; s < sets.size(); ++s) {
    KR_OK(rp_->configure(sets[s], RangeMode::kAuto, 4));
    std::vector<RangeValues> ranges;
    size_t passes = 0;
    ASSERT_NO_FATAL_FAILURE(collect(nothing, launch, &ranges, &passes));
    ASSERT_EQ(ranges.size(), 1u);
    for (size_t i = 0; i < sets[s].size(); ++i) {
      std::printf("[ info ] set %zu %s = %.6g\n", s, sets[s][i].c_str(), ranges[0].values[i]);
      EXPECT_TRUE(std::isfinite(ranges[0].values[i])) << "set " << s << " " << sets[s][i];
    }
  }
  EXPECT_EQ(rp_->costs().reenables, 2u);
  // Same set again: no re-enable.
  KR_OK(rp_->configure(sets[2], RangeMode::kAuto, 4));
  EXPECT_EQ(rp_->costs().reenables, 2u);

  CUDA_OK(cudaFree(in));
  CUDA_OK(cudaFree(out));
}

TEST_F(RangeProfilerGpu, MisuseIsReported) {
  EXPECT_FALSE(rp_->begin().ok());  // before configure
  Status bad = rp_->configure({"dram__byte_read.sum"});
  EXPECT_EQ(bad.code(), KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND);
  EXPECT_NE(bad.message().find("dram__bytes_read.sum"), std::string::npos) << bad.message();
  KR_OK(rp_->configure({"smsp__inst_executed.sum"}, RangeMode::kAuto, 1));
  KR_OK(rp_->begin());
  EXPECT_FALSE(rp_->stop().ok());           // stop without start
  EXPECT_FALSE(rp_->push_range("x").ok());  // auto range
  EXPECT_FALSE(rp_->decode().ok());         // before every pass
}

}  // namespace
}  // namespace kreplay::cupti
