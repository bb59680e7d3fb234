// compaction: a data-dependent stream compaction loop, the shape of a work queue that shrinks
// (a BFS frontier, a particle filter): every round keeps the elements that pass a test that
// depends on their value and the round, updates the survivors, and copies the survivor count back
// to the host, which sizes the next round's launches with it. Per round, on tiles of 1024
// elements (256 threads, 4 elements each):
//   count_kept     per tile, how many elements pass
//   scan_counts    one block: the tiles' exclusive offsets and the total
//   scatter        survivors to their stable positions in the other buffer, as mix32(v + round)
// then a synchronous copy of the total to the host. 32-bit integers throughout: checked exactly
// against a host reference (the count of every round and the last survivors), digested over both.
//   compaction [rounds=13]     three launches per round (fewer if nothing survives): 39 by default
#include "real_common.cuh"

constexpr unsigned kThreads = 256, kPerThread = 4, kTile = kThreads * kPerThread;
constexpr unsigned kMaxTiles = 1024;  // scan_counts scans the tiles' counts in one block

__host__ __device__ inline bool kept(uint32_t v, uint32_t round) {
  return real::mix32(v ^ (round * 0x9e3779b9u)) % 100u < 85u;
}

__global__ void count_kept(const uint32_t* in, uint32_t count, uint32_t round, uint32_t* counts) {
  __shared__ unsigned int block;
  if (threadIdx.x == 0) block = 0;
  __syncthreads();
  const size_t first = blockIdx.x * static_cast<size_t>(kTile) + threadIdx.x * kPerThread;
  unsigned mine = 0;
  for (unsigned j = 0; j < kPerThread; ++j) {
    if (first + j < count && kept(in[first + j], round)) ++mine;
  }
  atomicAdd(&block, mine);
  __syncthreads();
  if (threadIdx.x == 0) counts[blockIdx.x] = block;
}

// Exclusive scan of v[0..n) in shared memory by all of the block's threads (n <= blockDim.x;
// Hillis-Steele); returns the sum.
__device__ uint32_t block_exclusive_scan(uint32_t* v, unsigned n) {
  const unsigned i = threadIdx.x;
  uint32_t own = i < n ? v[i] : 0;
  __syncthreads();
  for (unsigned step = 1; step < blockDim.x; step *= 2) {
    uint32_t add = i >= step && i - step < n ? v[i - step] : 0;
    __syncthreads();
    if (i < n) v[i] += add;
    __syncthreads();
  }
  uint32_t total = v[n - 1];
  __syncthreads();
  if (i < n) v[i] -= own;
  __syncthreads();
  return total;
}

__global__ void scan_counts(uint32_t* counts, unsigned tiles, uint32_t* total) {
  __shared__ uint32_t v[kMaxTiles];
  if (threadIdx.x < tiles) v[threadIdx.x] = counts[threadIdx.x];
  uint32_t sum = block_exclusive_scan(v, tiles);
  if (threadIdx.x < tiles) counts[threadIdx.x] = v[threadIdx.x];
  if (threadIdx.x == 0) *total = sum;
}

__global__ void scatter(const uint32_t* in, uint32_t count, uint32_t round, const uint32_t* offsets,
                        uint32_t* out) {
  __shared__ uint32_t v[kThreads];
  const size_t first = blockIdx.x * static_cast<size_t>(kTile) + threadIdx.x * kPerThread;
  unsigned mine = 0;
  for (unsigned j = 0; j < kPerThread; ++j) {
    if (first + j < count && kept(in[first + j], round)) ++mine;
  }
  v[threadIdx.x] = mine;
  block_exclusive_scan(v, kThreads);
  uint32_t pos = offsets[blockIdx.x] + v[threadIdx.x];
  for (unsigned j = 0; j < kPerThread; ++j) {
    if (first + j < count && kept(in[first + j], round))
      out[pos++] = real::mix32(in[first + j] + round);
  }
}

int main(int argc, char** argv) {
  real::begin("compaction");
  const int rounds = real::count_arg(argc, argv, 13);
  constexpr uint32_t n0 = uint32_t{1} << 20;
  static_assert(n0 <= kTile * kMaxTiles);

  real::Rng rng(0xc0de);
  std::vector<uint32_t> data(n0);
  for (auto& x : data) x = rng.u32();

  uint32_t *buf[2] = {nullptr, nullptr}, *counts = nullptr, *total = nullptr;
  CHECK(cudaMalloc(&buf[0], n0 * sizeof(uint32_t)));
  CHECK(cudaMalloc(&buf[1], n0 * sizeof(uint32_t)));
  CHECK(cudaMalloc(&counts, kMaxTiles * sizeof(uint32_t)));
  CHECK(cudaMalloc(&total, sizeof(uint32_t)));
  CHECK(cudaMemcpy(buf[0], data.data(), n0 * sizeof(uint32_t), cudaMemcpyHostToDevice));

  std::vector<uint32_t> seen;  // the count after every round, as the host read it
  uint32_t count = n0;
  int cur = 0;
  for (int r = 0; r < rounds && count > 0; ++r) {
    const unsigned tiles = real::blocks_for(count, kTile);
    count_kept<<<tiles, kThreads>>>(buf[cur], count, r, counts);
    CHECK_LAUNCH();
    scan_counts<<<1, kMaxTiles>>>(counts, tiles, total);
    CHECK_LAUNCH();
    scatter<<<tiles, kThreads>>>(buf[cur], count, r, counts, buf[1 - cur]);
    CHECK_LAUNCH();
    CHECK(cudaMemcpy(&count, total, sizeof(uint32_t), cudaMemcpyDeviceToHost));
    seen.push_back(count);
    cur = 1 - cur;
  }
  std::vector<uint32_t> out(count);
  CHECK(cudaMemcpy(out.data(), buf[cur], count * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  for (uint32_t* p : {buf[0], buf[1], counts, total}) CHECK(cudaFree(p));

  std::vector<uint32_t> want = data, next;
  for (size_t r = 0; r < seen.size(); ++r) {
    next.clear();
    for (uint32_t v : want) {
      if (kept(v, static_cast<uint32_t>(r)))
        next.push_back(real::mix32(v + static_cast<uint32_t>(r)));
    }
    want.swap(next);
    if (seen[r] != want.size()) {
      real::fail("round %zu: %u survivors, host %zu", r, seen[r], want.size());
    }
  }
  if (seen.size() != static_cast<size_t>(rounds) && !want.empty()) {
    real::fail("stopped after %zu rounds with %zu survivors", seen.size(), want.size());
  }
  for (size_t i = 0; i < want.size(); ++i) {
    if (out[i] != want[i]) real::fail("survivor %zu = %u, host %u", i, out[i], want[i]);
  }

  real::Digest dig;
  dig.add(seen);
  dig.add(out);
  dig.pass();
  return 0;
}
