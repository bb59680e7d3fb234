// What the programs of the real-program benchmark (bench/real/) share: error checks that end the
// run with a FAIL line, the no-GPU skip, deterministic data, and the result line.
//
// Contract of every program (run.py relies on it):
//  - exit 77 when no GPU is usable, before any other CUDA call;
//  - every CUDA and library call is checked; a failure prints the call, then
//    `RESULT <name> FAIL <why>`, and exits 1;
//  - the result is checked against a host reference; a mismatch does the same;
//  - on success the last line on stdout is `RESULT <name> PASS digest=<16 hex digits>`: 64-bit
//    FNV-1a over the result's bytes, so runs can be compared bit for bit.
#pragma once

#include <cuda_runtime.h>

#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace real {

inline const char*& program_name() {
  static const char* name = "?";
  return name;
}

[[noreturn]] inline void fail(const char* fmt, ...) {
  char why[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(why, sizeof(why), fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "%s: %s\n", program_name(), why);
  std::printf("RESULT %s FAIL %s\n", program_name(), why);
  std::fflush(stdout);
  std::exit(1);
}

// Name the program, exit 77 when there is no usable GPU, select device 0 and create its context.
inline void begin(const char* name) {
  program_name() = name;
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    std::fprintf(stderr, "SKIP: no CUDA device (%s)\n",
                 err != cudaSuccess ? cudaGetErrorName(err) : "count 0");
    std::exit(77);
  }
  if (cudaSetDevice(0) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) fail("no context");
}

// The first command-line argument as a positive count, or `fallback` when there is none.
inline int count_arg(int argc, char** argv, int fallback) {
  if (argc < 2) return fallback;
  int v = std::atoi(argv[1]);
  if (v <= 0) fail("argument '%s' is not a positive count", argv[1]);
  return v;
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
  uint32_t u32() { return static_cast<uint32_t>(next() >> 32); }
  float signed_unit() {  // in [-1, 1)
    return static_cast<float>(static_cast<double>(next() >> 40) / (1ull << 23) - 1.0);
  }
};

// 64-bit FNV-1a over bytes, fed in the order the program chooses.
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
  void pass() const {
    std::printf("RESULT %s PASS digest=%016" PRIx64 "\n", program_name(), h);
    std::fflush(stdout);
  }
};

// A 32-bit mix (lowbias32), the same on host and device: the programs' data-dependent updates.
__host__ __device__ inline uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

inline unsigned blocks_for(size_t n, unsigned threads) {
  return static_cast<unsigned>((n + threads - 1) / threads);
}

}  // namespace real

#define CHECK(call)                                                                            \
  do {                                                                                         \
    cudaError_t e_ = (call);                                                                   \
    if (e_ != cudaSuccess) {                                                                   \
      ::real::fail("%s:%d: %s failed: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
    }                                                                                          \
  } while (0)

// For cublasStatus_t and other "0 is success" library status enums.
#define CHECK_STATUS(call)                                                                       \
  do {                                                                                           \
    long long st_ = static_cast<long long>(call);                                                \
    if (st_ != 0) ::real::fail("%s:%d: %s failed: status %lld", __FILE__, __LINE__, #call, st_); \
  } while (0)

#define CHECK_LAUNCH() CHECK(cudaGetLastError())
