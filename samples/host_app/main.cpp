// kreplay-sample-app: a small application for the host device that checks its own results.
//
// It is the application every sample tool runs against:
//
//   KREPLAY_TOOL_LIBRARIES=build/lib/libkreplay_sample_basic.so build/bin/kreplay-sample-app
//
// What it does, written the way a CUDA program would be:
//   - loads a module with two kernels and one module-scope (`__device__`) variable:
//       scale_add(float* x, float a, float b, unsigned n)       x[i] = x[i] * a + b
//       sum_reduce(const unsigned* data, unsigned long long* total, unsigned n)
//                                                               *total += sum(data[0..n))
//       unsigned launch_count                                    +1 per kernel execution
//   - runs 10 launches, 6 of scale_add on stream A and 4 of sum_reduce on stream B, interleaved;
//   - copies the results back and compares them with the same arithmetic done on the CPU.
//
// Every kernel is deliberately *not* idempotent: scale_add updates x in place, sum_reduce adds to
// *total, and every execution bumps launch_count. So the results are right only if a replaying
// tool restored device memory between passes and left the application exactly one execution per
// launch. The app prints `sample-app: OK` and exits 0, or prints what differed and exits 1.
//
// Each launch is announced on stdout before it is issued, so a tool's output (printed from its
// callbacks, on this thread, while the launch call runs) appears right under the launch it
// belongs to.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "backends/host/hostrt.hpp"

namespace hostrt = kreplay::hostrt;

namespace {

// ---------------------------------------------------------------------------------------------
// Device code. On a GPU these would be __global__ functions and a __device__ variable. On the host
// device a kernel is a plain function called once per thread; it reaches memory through the
// ThreadContext, so the device's counters (bytes_read, bytes_written, ops) see what it really did.
// ---------------------------------------------------------------------------------------------

// Device address of the module-scope variable `launch_count` (a kernel refers to a __device__
// variable directly; here the host sets this pointer once the module is loaded).
uint32_t* g_launch_count = nullptr;

// scale_add(float* x, float a, float b, unsigned n): x[i] = x[i] * a + b, two operations each.
void scale_add(hostrt::ThreadContext& t) {
  auto* x = t.arg<float*>(0);
  const float a = t.arg<float>(1);
  const float b = t.arg<float>(2);
  const auto n = t.arg<uint32_t>(3);
  const uint64_t i = t.global_thread_id();
  if (i < n) {
    t.store(&x[i], t.load(&x[i]) * a + b);
    t.count_ops(2);
  }
  if (i == 0) t.atomic_add(g_launch_count, 1u);
}

// sum_reduce(const unsigned* data, unsigned long long* total, unsigned n): a block-level reduction.
// Thread 0 of every block sums the block's slice (a GPU kernel would use shared memory and a tree;
// the result is the same) and adds it to *total with one atomic; one operation per element.
void sum_reduce(hostrt::ThreadContext& t) {
  if (t.thread_idx.x != 0) return;
  const auto* data = t.arg<const uint32_t*>(0);
  auto* total = t.arg<unsigned long long*>(1);
  const auto n = t.arg<uint32_t>(2);
  const uint64_t begin = uint64_t{t.block_idx.x} * t.block_dim.x;
  const uint64_t end = std::min<uint64_t>(begin + t.block_dim.x, n);
  unsigned long long sum = 0;
  for (uint64_t i = begin; i < end; ++i) {
    sum += t.load(&data[i]);
    t.count_ops(1);
  }
  t.atomic_add(total, sum);
  if (t.block_idx.x == 0) t.atomic_add(g_launch_count, 1u);
}

// ---------------------------------------------------------------------------------------------
// Host code.
// ---------------------------------------------------------------------------------------------

constexpr uint32_t kN = 1000;  // floats updated by scale_add
constexpr uint32_t kM = 4096;  // values reduced by sum_reduce
constexpr uint32_t kScaleBlock = 128;
constexpr uint32_t kReduceBlock = 256;

// Stop with a message when a runtime call fails (like a CUDA_CHECK macro).
void check(const kreplay::Status& s, const char* what) {
  if (!s.ok()) {
    std::printf("sample-app: FAILED: %s: %s\n", what, s.message().c_str());
    std::exit(1);
  }
}
template <typename T>
T check(kreplay::Result<T> r, const char* what) {
  check(r.ok() ? kreplay::Status::Ok() : r.status(), what);
  return std::move(r).value();
}

struct Step {
  bool reduce;  // false: scale_add(x, a, b, n) on stream A; true: sum_reduce on stream B
  float a, b;
};

// The launches, in issue order: 6 scale_add on stream A and 4 sum_reduce on stream B.
constexpr Step kSteps[] = {
    {false, 2.0f, 1.0f}, {true, 0, 0},         {false, 0.5f, 0.25f}, {false, 3.0f, -2.0f},
    {true, 0, 0},        {false, 0.75f, 1.0f}, {true, 0, 0},         {false, 1.5f, 0.5f},
    {true, 0, 0},        {false, 0.25f, 3.0f},
};
constexpr uint32_t kLaunches = sizeof(kSteps) / sizeof(kSteps[0]);

}  // namespace

int main() {
  // The module: what cuModuleLoad would give for a .cubin with these kernels and one variable.
  hostrt::ModuleDesc desc;
  desc.name = "sample_module";
  desc.kernels = {
      // mangled name                      function     parameter sizes in bytes
      {"_Z9scale_addPfffj", scale_add, {8, 4, 4, 4}},
      {"_Z10sum_reducePKjPyj", sum_reduce, {8, 8, 4}},
  };
  desc.globals = {{"launch_count", sizeof(uint32_t), {}}};
  const hostrt::Module module = check(hostrt::load_module(desc), "load_module");
  const hostrt::Kernel k_scale =
      check(hostrt::get_kernel(module, "_Z9scale_addPfffj"), "scale_add");
  const hostrt::Kernel k_reduce =
      check(hostrt::get_kernel(module, "_Z10sum_reducePKjPyj"), "sum_reduce");
  g_launch_count =
      static_cast<uint32_t*>(check(hostrt::get_global(module, "launch_count"), "global"));

  // Inputs on the host.
  std::vector<float> x_host(kN);
  for (uint32_t i = 0; i < kN; ++i) x_host[i] = 0.5f + 0.01f * static_cast<float>(i % 50);
  std::vector<uint32_t> data_host(kM);
  for (uint32_t i = 0; i < kM; ++i) data_host[i] = (i * 2654435761u) % 1000u;

  // Device buffers, filled by copies (cudaMalloc + cudaMemcpy).
  auto* x = static_cast<float*>(check(hostrt::malloc(kN * sizeof(float)), "malloc x"));
  auto* data = static_cast<uint32_t*>(check(hostrt::malloc(kM * sizeof(uint32_t)), "malloc data"));
  auto* total = static_cast<unsigned long long*>(
      check(hostrt::malloc(sizeof(unsigned long long)), "malloc total"));
  check(hostrt::memcpy(x, x_host.data(), kN * sizeof(float)), "copy x");
  check(hostrt::memcpy(data, data_host.data(), kM * sizeof(uint32_t)), "copy data");
  check(hostrt::memset(total, 0, sizeof(unsigned long long)), "clear total");

  const hostrt::Stream stream_a = check(hostrt::stream_create(), "stream A");
  const hostrt::Stream stream_b = check(hostrt::stream_create(), "stream B");

  std::printf("sample-app: %u launches of scale_add and sum_reduce on streams A and B\n",
              kLaunches);
  std::fflush(stdout);

  // The CPU reference, computed with exactly the arithmetic the kernels do.
  std::vector<float> x_expect = x_host;
  unsigned long long total_expect = 0;

  uint32_t launch_no = 0;
  for (const Step& step : kSteps) {
    ++launch_no;
    if (!step.reduce) {
      const uint32_t grid = (kN + kScaleBlock - 1) / kScaleBlock;
      std::printf(
          "sample-app: launch %u/%u: scale_add on stream A, grid %u x %u threads "
          "(n=%u, a=%g, b=%g)\n",
          launch_no, kLaunches, grid, kScaleBlock, kN, static_cast<double>(step.a),
          static_cast<double>(step.b));
      std::fflush(stdout);
      check(hostrt::launch_args(k_scale, {grid}, {kScaleBlock}, stream_a, x, step.a, step.b, kN),
            "launch scale_add");
      for (auto& v : x_expect) v = v * step.a + step.b;
    } else {
      const uint32_t grid = (kM + kReduceBlock - 1) / kReduceBlock;
      std::printf("sample-app: launch %u/%u: sum_reduce on stream B, grid %u x %u threads (n=%u)\n",
                  launch_no, kLaunches, grid, kReduceBlock, kM);
      std::fflush(stdout);
      check(hostrt::launch_args(k_reduce, {grid}, {kReduceBlock}, stream_b,
                                static_cast<const uint32_t*>(data), total, kM),
            "launch sum_reduce");
      for (uint32_t v : data_host) total_expect += v;
    }
  }
  check(hostrt::stream_synchronize(stream_a), "synchronize A");
  check(hostrt::stream_synchronize(stream_b), "synchronize B");

  // Results back to the host (cudaMemcpy device-to-host).
  std::vector<float> x_got(kN);
  unsigned long long total_got = 0;
  uint32_t launches_got = 0;
  check(hostrt::memcpy(x_got.data(), x, kN * sizeof(float)), "read x");
  check(hostrt::memcpy(&total_got, total, sizeof(total_got)), "read total");
  check(hostrt::memcpy(&launches_got, g_launch_count, sizeof(launches_got)), "read launch_count");

  int failures = 0;
  uint32_t bad = 0, first_bad = 0;
  for (uint32_t i = 0; i < kN; ++i) {
    if (x_got[i] != x_expect[i]) {
      if (bad++ == 0) first_bad = i;
    }
  }
  if (bad != 0) {
    std::printf("sample-app: x differs in %u of %u elements; first x[%u] = %.9g, expected %.9g\n",
                bad, kN, first_bad, static_cast<double>(x_got[first_bad]),
                static_cast<double>(x_expect[first_bad]));
    ++failures;
  }
  if (total_got != total_expect) {
    std::printf("sample-app: total = %llu, expected %llu\n", total_got, total_expect);
    ++failures;
  }
  if (launches_got != kLaunches) {
    std::printf("sample-app: launch_count = %u, expected %u (one per launch)\n", launches_got,
                kLaunches);
    ++failures;
  }

  check(hostrt::stream_destroy(stream_a), "destroy A");
  check(hostrt::stream_destroy(stream_b), "destroy B");
  check(hostrt::free(x), "free x");
  check(hostrt::free(data), "free data");
  check(hostrt::free(total), "free total");

  if (failures != 0) {
    std::printf("sample-app: FAILED\n");
    return 1;
  }
  std::printf(
      "sample-app: OK (x matches the CPU in all %u elements, total = %llu, "
      "launch_count = %u)\n",
      kN, total_got, launches_got);
  return 0;
}
