// Pins the chunk digest of memory_layout.hpp (the kernels compute the same function; the GPU
// test checks them against this reference): every single-byte change and every swap of two
// different words changes it, and it does not depend on how a chunk is split among threads.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "backends/cuda/memory/memory_layout.hpp"

namespace kreplay::cuda::memory_layout {
namespace {

std::vector<unsigned char> random_bytes(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

TEST(MemoryDigest, EverySingleByteChangeChangesIt) {
  for (size_t n : {1u, 7u, 8u, 9u, 15u, 16u, 17u, 255u, 256u, 1000u}) {
    auto data = random_bytes(n, static_cast<uint32_t>(n));
    const uint64_t base = reference_digest(data.data(), n);
    for (size_t i = 0; i < n; ++i) {
      for (int flip : {1, 0x80, 0xff, 0x5a}) {
        auto copy = data;
        copy[i] = static_cast<unsigned char>(copy[i] ^ flip);
        EXPECT_NE(reference_digest(copy.data(), n), base) << "n=" << n << " byte " << i;
      }
    }
  }
}

TEST(MemoryDigest, SwappedWordsChangeIt) {
  auto data = random_bytes(4096, 7);
  const uint64_t base = reference_digest(data.data(), data.size());
  for (size_t a = 0; a < 512; a += 37) {
    for (size_t b = a + 1; b < 512; b += 53) {
      auto copy = data;
      std::swap_ranges(copy.begin() + a * 8, copy.begin() + a * 8 + 8, copy.begin() + b * 8);
      if (std::memcmp(copy.data(), data.data(), data.size()) == 0) continue;
      EXPECT_NE(reference_digest(copy.data(), copy.size()), base) << a << " <-> " << b;
    }
  }
}

TEST(MemoryDigest, ZeroesAndLengthsAreDistinguished) {
  std::vector<unsigned char> zeros(512, 0);
  std::set<uint64_t> seen;
  for (size_t n = 1; n <= zeros.size(); ++n) seen.insert(reference_digest(zeros.data(), n));
  EXPECT_EQ(seen.size(), zeros.size());  // trailing zero bytes still change the digest
}

TEST(MemoryDigest, SplitsSumToTheSameDigest) {
  // What a kernel does: lanes take interleaved 16-byte vectors and sum their words' terms.
  auto data = random_bytes(65536 + 13, 3);
  const uint64_t n = data.size();
  for (uint32_t lanes : {1u, 16u, 32u}) {
    uint64_t total = 0;
    for (uint32_t lane = 0; lane < lanes; ++lane) {
      uint64_t sum = 0;
      for (uint64_t v = lane; v * 16 < n; v += lanes) {
        for (uint64_t w = 2 * v; w < 2 * v + 2 && w * 8 < n; ++w) {
          uint64_t word = 0;
          for (uint64_t b = 0; b < 8 && w * 8 + b < n; ++b)
            word |= uint64_t{data[w * 8 + b]} << (8 * b);
          sum += word_term(word, w);
        }
      }
      total += sum;
    }
    EXPECT_EQ(finish_digest(total, n), reference_digest(data.data(), n)) << lanes << " lanes";
  }
}

}  // namespace
}  // namespace kreplay::cuda::memory_layout
