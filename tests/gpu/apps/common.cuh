// Shared by the GPU suite's applications: error checks, the no-GPU skip, deterministic data and
// the result digest.
//
// Contract of every application (run_gpu_suite.sh relies on it):
//  - exit 77 when no GPU is usable (cudaGetDeviceCount fails or returns 0), before any other
//    CUDA call;
//  - every CUDA call is checked; a failure prints the call and exits 1;
//  - the result is checked against a CPU reference where that is cheap; a mismatch exits 1;
//  - the last line on stdout is `KREPLAY_RESULT <app> <16 hex digits>`: 64-bit FNV-1a over every
//    result byte, so a replay that forgets to restore memory changes it.
#pragma once

#include <cuda_runtime.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define KR_CHECK(call)                                                                     \
  do {                                                                                     \
    cudaError_t kr_err_ = (call);                                                          \
    if (kr_err_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call,       \
                   cudaGetErrorName(kr_err_), cudaGetErrorString(kr_err_));                \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

// After every <<<>>> launch: the launch error now, not at the next synchronizing call.
#define KR_CHECK_LAUNCH() KR_CHECK(cudaGetLastError())

// For CUresult (driver entry points) and cublasStatus_t: both are "0 is success" enums.
#define KR_CHECK_STATUS(call)                                                              \
  do {                                                                                     \
    long long kr_st_ = static_cast<long long>(call);                                       \
    if (kr_st_ != 0) {                                                                     \
      std::fprintf(stderr, "%s:%d: %s failed: status %lld\n", __FILE__, __LINE__, #call,   \
                   kr_st_);                                                                \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

#define KR_EXPECT(cond, ...)                                                               \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);        \
      std::fprintf(stderr, __VA_ARGS__);                                                   \
      std::fprintf(stderr, "\n");                                                          \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

namespace kr {

constexpr int kSkipNoGpu = 77;

// Exit 77 when there is no usable GPU; otherwise select device 0 and create its context.
inline void require_gpu() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    std::fprintf(stderr, "SKIP: no CUDA device (%s)\n",
                 err != cudaSuccess ? cudaGetErrorName(err) : "count 0");
    std::exit(kSkipNoGpu);
  }
  KR_CHECK(cudaSetDevice(0));
  KR_CHECK(cudaFree(nullptr));
}

// splitmix64: fixed seed in, the same stream out on every run.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint32_t u32() {  // never 0
    uint32_t v = static_cast<uint32_t>(next() >> 32);
    return v ? v : 1u;
  }
  float unit() {  // in [0.5, 1.5): never 0, never tiny
    return 0.5f + static_cast<float>(next() >> 40) / static_cast<float>(1ull << 24);
  }
  float signed_unit() {  // in (-1, -0.25] U [0.25, 1): non-zero magnitude, both signs
    float m = 0.25f + 0.75f * static_cast<float>(next() >> 40) / static_cast<float>(1ull << 24);
    return (next() & 1) ? m : -m;
  }
};

inline std::vector<uint32_t> random_u32(size_t n, uint64_t seed) {
  Rng r(seed);
  std::vector<uint32_t> v(n);
  for (auto& x : v) x = r.u32();
  return v;
}

inline std::vector<float> random_unit(size_t n, uint64_t seed) {
  Rng r(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = r.unit();
  return v;
}

// 64-bit FNV-1a over bytes, fed in the order the app chooses.
struct Digest {
  uint64_t h = 0xcbf29ce484222325ull;
  void add(const void* data, size_t bytes) {
    const unsigned char* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < bytes; ++i) {
      h ^= p[i];
      h *= 0x100000001b3ull;
    }
  }
  template <class T>
  void add(const std::vector<T>& v) {
    add(v.data(), v.size() * sizeof(T));
  }
  template <class T>
  void add_value(const T& v) {
    add(&v, sizeof(T));
  }
  void print(const char* app) const {
    std::printf("KREPLAY_RESULT %s %016" PRIx64 "\n", app, h);
    std::fflush(stdout);
  }
};

// Index of the first element where a and b differ bitwise, or -1.
template <class T>
long long first_mismatch(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return static_cast<long long>(i);
  }
  return -1;
}

// A driver API function, reached through the runtime (as PyTorch reaches the VMM calls), so the
// apps need no link against libcuda and still start, and skip, on a machine without a driver.
template <class Fn>
Fn driver_fn(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  KR_CHECK(cudaGetDriverEntryPointByVersion(name, &fn, CUDART_VERSION, cudaEnableDefault, &found));
  KR_EXPECT(found == cudaDriverEntryPointSuccess && fn != nullptr, "no driver entry point %s", name);
  return reinterpret_cast<Fn>(fn);
}

inline unsigned blocks_for(size_t n, unsigned threads) {
  return static_cast<unsigned>((n + threads - 1) / threads);
}

}  // namespace kr
