// kv_decode: an LLM server's decode loop over a paged KV cache that takes most of the GPU, for
// write-bounded snapshots (tests/gpu/writeset_check.py, bench/writeset_bench.py).
//
// At start, cudaMemGetInfo, then ONE cudaMalloc of KV_POOL_FRACTION (default 0.85) of the free
// memory: the KV-cache pool, as vLLM reserves gpu_memory_utilization of the GPU. The pool is never
// initialised or touched as a whole: only the blocks in use are written.
//
// Paged like vLLM: a block holds 16 tokens of K and V for every layer ([layer][k|v][head][token]
// [dim], float32, 4 layers, 8 KV heads, head dim 128: 512 KiB). 32 sequences with prompts of 8 to
// 120 tokens; the blocks a sequence uses are scattered over the pool, held in a device block
// table. Block choice: a seeded shuffle of kLogicalBlocks logical blocks (a fixed 512 MiB logical
// pool), logical block b living at physical block b * stride, stride = physical blocks /
// kLogicalBlocks: whatever the pool's size, the same logical blocks are used, spread over the
// whole pool, and the result digest does not depend on KV_POOL_FRACTION (0.02 is the "small
// footprint" variant).
//
// A prefill kernel writes every prompt's K/V; then kSteps decode steps. Each step: one small
// host-to-device copy of the step's inputs (the new token of every sequence, and the physical
// block the scheduler gives a sequence whose last block is full), a kernel that advances the
// lengths and enters new blocks into the block table, and per layer: append_kv (the new token's
// K and V into its slot, found on the device from the block table, as vLLM's reshape_and_cache),
// attention (reads the sequence's K/V through the block table, writes a small output buffer),
// update_hidden (the hidden states in place). Deterministic: fixed loop order per thread, no
// atomics. At the end a gather kernel copies the used blocks (tokens past a sequence's length
// zeroed) into one buffer; the hidden states and the blocks are checked against a float64 CPU
// reference (tolerance 1e-3 absolute + 1e-3 relative: the GPU computes in float32 with expf) and
// digested:
//
//   KREPLAY_APP_INFO kv_decode pool_bytes=<n> pool_fraction=<f> steps=<n> sequences=<n> ...
//   KREPLAY_RESULT kv_decode <digest over the hidden states and the used KV blocks>
#include "common.cuh"

#include <algorithm>
#include <cerrno>
#include <cmath>

namespace {

constexpr int kSeqs = 32;
constexpr int kLayers = 4;
constexpr int kHeads = 8;
constexpr int kHeadDim = 128;
constexpr int kModel = kHeads * kHeadDim;  // 1024: hidden size
constexpr int kBlockTokens = 16;
constexpr int kSteps = 24;
constexpr int kMinPrompt = 8;
constexpr int kMaxPrompt = 120;
constexpr int kMaxTokens = kMaxPrompt + kSteps;                                   // 144
constexpr int kMaxBlocksPerSeq = (kMaxTokens + kBlockTokens - 1) / kBlockTokens;  // 9
constexpr int kLogicalBlocks = 1024;  // the logical pool: 1024 blocks, 512 MiB
// Floats of one block and of its parts; layout [layer][kv][head][token][dim].
constexpr size_t kHeadFloats = static_cast<size_t>(kBlockTokens) * kHeadDim;  // 2048
constexpr size_t kKvFloats = kHeads * kHeadFloats;                            // 16384
constexpr size_t kLayerFloats = 2 * kKvFloats;                                // 32768
constexpr size_t kBlockFloats = kLayers * kLayerFloats;                       // 131072
constexpr size_t kBlockBytes = kBlockFloats * sizeof(float);                  // 512 KiB
constexpr float kScale = 0.08838834764831845f;                                // 1 / sqrt(kHeadDim)
constexpr uint32_t kVocab = 32000;

// Weights per layer: wq, wk, wv, wo, each kModel floats.
enum Weight { kWq = 0, kWk = 1, kWv = 2, kWo = 3 };
constexpr size_t kWeightFloats = 4ull * kLayers * kModel;
__host__ __device__ inline size_t widx(int layer, Weight w, int i) {
  return (static_cast<size_t>(layer) * 4 + w) * kModel + i;
}

// What the host sends every step (one cudaMemcpy).
struct StepInput {
  int token[kSeqs];
  int new_block[kSeqs];  // physical block for a sequence whose next token starts a block, else -1
};

// Error bits the kernels set (checked at the end; a replay bug that corrupts the block table
// shows here as well as in the results).
constexpr int kErrNoBlock = 1;    // a token starts a block but the step brought none
constexpr int kErrTableFull = 2;  // a sequence outgrew kMaxBlocksPerSeq
constexpr int kErrBadBlock = 4;   // the block table names a block outside the pool
constexpr int kErrTooLong = 8;    // a sequence longer than kMaxTokens

// Deterministic token embedding: a hash to 16 bits, scaled to [-0.5, 0.5): exact in float.
__host__ __device__ inline float embed(uint32_t token, uint32_t idx, uint32_t layer, uint32_t kv) {
  uint32_t h =
      token * 0x9E3779B1u ^ idx * 0x85EBCA77u ^ (layer + 1) * 0xC2B2AE3Du ^ (kv + 1) * 0x27D4EB2Fu;
  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  h ^= h >> 12;
  h *= 0x297A2D39u;
  h ^= h >> 15;
  return static_cast<float>(h & 0xFFFFu) * (1.0f / 65536.0f) - 0.5f;
}

// The hidden-state element that V of element idx reads (an odd multiplier: a permutation).
__host__ __device__ inline int v_source(int idx, int layer) {
  return (idx * 7 + 3 + layer) & (kModel - 1);
}

__device__ inline float* block_ptr(float* pool, int phys, int layer, int kv, int head, int tok) {
  return pool + static_cast<size_t>(phys) * kBlockFloats + layer * kLayerFloats + kv * kKvFloats +
         head * kHeadFloats + static_cast<size_t>(tok) * kHeadDim;
}

// K and V of one token of one layer from a hidden state, into the token's slot of block phys.
__device__ inline void write_kv(float* pool, int phys, int layer, int tok_in_block, int token,
                                const float* h, const float* w, int tid, int nthreads) {
  for (int idx = tid; idx < kModel; idx += nthreads) {
    const int head = idx / kHeadDim, d = idx % kHeadDim;
    const float k = __fmaf_rn(h[idx], w[widx(layer, kWk, idx)],
                              embed(static_cast<uint32_t>(token), idx, layer, 0));
    const float v = __fmaf_rn(h[v_source(idx, layer)], w[widx(layer, kWv, idx)],
                              embed(static_cast<uint32_t>(token), idx, layer, 1));
    block_ptr(pool, phys, layer, 0, head, tok_in_block)[d] = k;
    block_ptr(pool, phys, layer, 1, head, tok_in_block)[d] = v;
  }
}

__device__ inline bool valid_block(int phys, long long pool_blocks) {
  return phys >= 0 && phys < pool_blocks;
}

}  // namespace

// The kernels at global scope: their names read plainly in kreplay's and ncu's output.

// Prefill: one thread block per (prompt token, sequence); K/V of every layer from the sequence's
// initial hidden state and the token.
__global__ void prefill(float* pool, long long pool_blocks, const int* block_table,
                        const int* prompt_len, const int* prompt_tokens, const float* hidden,
                        const float* w, int* err) {
  const int t = blockIdx.x, s = blockIdx.y;
  if (t >= prompt_len[s]) return;
  const int phys = block_table[s * kMaxBlocksPerSeq + t / kBlockTokens];
  if (!valid_block(phys, pool_blocks)) {
    if (threadIdx.x == 0) atomicOr(err, kErrBadBlock);
    return;
  }
  for (int layer = 0; layer < kLayers; ++layer) {
    write_kv(pool, phys, layer, t % kBlockTokens, prompt_tokens[s * kMaxPrompt + t],
             hidden + static_cast<size_t>(s) * kModel, w, threadIdx.x, blockDim.x);
  }
}

// One thread per sequence: the new token's position is the old length; a token that starts a
// block enters the block the host sent into the block table.
__global__ void begin_step(const StepInput* in, int* block_table, int* seq_len, int* cur_pos,
                           int* err) {
  const int s = threadIdx.x;
  if (s >= kSeqs) return;
  const int p = seq_len[s];
  cur_pos[s] = p;
  if (p >= kMaxTokens) atomicOr(err, kErrTooLong);
  if (p % kBlockTokens == 0) {
    if (p / kBlockTokens >= kMaxBlocksPerSeq) {
      atomicOr(err, kErrTableFull);
    } else if (in->new_block[s] < 0) {
      atomicOr(err, kErrNoBlock);
    } else {
      block_table[s * kMaxBlocksPerSeq + p / kBlockTokens] = in->new_block[s];
    }
  }
  seq_len[s] = p + 1;
}

// reshape_and_cache: the new token's K and V of one layer into its slot.
__global__ void append_kv(int layer, float* pool, long long pool_blocks, const int* block_table,
                          const int* cur_pos, const StepInput* in, const float* hidden,
                          const float* w, int* err) {
  const int s = blockIdx.x;
  const int p = cur_pos[s];
  if (p < 0 || p >= kMaxTokens) return;  // begin_step flagged it
  const int phys = block_table[s * kMaxBlocksPerSeq + p / kBlockTokens];
  if (!valid_block(phys, pool_blocks)) {
    if (threadIdx.x == 0) atomicOr(err, kErrBadBlock);
    return;
  }
  write_kv(pool, phys, layer, p % kBlockTokens, in->token[s],
           hidden + static_cast<size_t>(s) * kModel, w, threadIdx.x, blockDim.x);
}

// One thread block per (head, sequence), one thread per head dimension (kHeadDim threads).
// Scores: thread t-mod-128 computes the dot products of its tokens in a fixed order; softmax by
// thread 0 in token order; output: thread d sums over the tokens in order.
__global__ void attention(int layer, const float* pool, long long pool_blocks,
                          const int* block_table, const int* seq_len, const float* hidden,
                          const float* w, float* attn_out, int* err) {
  __shared__ float q[kHeadDim];
  __shared__ float score[kMaxTokens];
  __shared__ float inv_sum;
  const int head = blockIdx.x, s = blockIdx.y, d = threadIdx.x;
  const int len = seq_len[s];
  if (len <= 0 || len > kMaxTokens) {
    if (d == 0) atomicOr(err, kErrTooLong);
    return;
  }
  const int idx = head * kHeadDim + d;
  q[d] = hidden[static_cast<size_t>(s) * kModel + idx] * w[widx(layer, kWq, idx)];
  __syncthreads();
  for (int t = d; t < len; t += kHeadDim) {
    const int phys = block_table[s * kMaxBlocksPerSeq + t / kBlockTokens];
    float acc = 0.0f;
    if (valid_block(phys, pool_blocks)) {
      const float* k = block_ptr(const_cast<float*>(pool), phys, layer, 0, head, t % kBlockTokens);
      for (int j = 0; j < kHeadDim; ++j) acc = __fmaf_rn(q[j], k[j], acc);
    } else {
      atomicOr(err, kErrBadBlock);
    }
    score[t] = acc * kScale;
  }
  __syncthreads();
  if (d == 0) {
    float m = score[0];
    for (int t = 1; t < len; ++t) m = fmaxf(m, score[t]);
    float sum = 0.0f;
    for (int t = 0; t < len; ++t) {
      score[t] = expf(score[t] - m);
      sum += score[t];
    }
    inv_sum = 1.0f / sum;
  }
  __syncthreads();
  float out = 0.0f;
  for (int t = 0; t < len; ++t) {
    const int phys = block_table[s * kMaxBlocksPerSeq + t / kBlockTokens];
    if (!valid_block(phys, pool_blocks)) continue;  // flagged above
    const float* v = block_ptr(const_cast<float*>(pool), phys, layer, 1, head, t % kBlockTokens);
    out = __fmaf_rn(score[t], v[d], out);
  }
  attn_out[static_cast<size_t>(s) * kModel + idx] = out * inv_sum;
}

// h = 0.75 h + 0.25 (o * wo), in place.
__global__ void update_hidden(int layer, float* hidden, const float* attn_out, const float* w) {
  const int s = blockIdx.x;
  for (int i = threadIdx.x; i < kModel; i += blockDim.x) {
    const size_t at = static_cast<size_t>(s) * kModel + i;
    const float o = __fmul_rn(attn_out[at], w[widx(layer, kWo, i)]);
    hidden[at] = __fadd_rn(__fmul_rn(0.75f, hidden[at]), __fmul_rn(0.25f, o));
  }
}

// The used blocks, in (sequence, logical block) order, into one buffer; slots at or past the
// sequence's length (never written: the pool is not initialised) read as 0.
__global__ void gather_kv(const float* pool, const int* phys_of, const int* valid_of, float* out) {
  const int e = blockIdx.x;
  const float* src = pool + static_cast<size_t>(phys_of[e]) * kBlockFloats;
  float* dst = out + static_cast<size_t>(e) * kBlockFloats;
  const int valid = valid_of[e];
  for (size_t i = threadIdx.x; i < kBlockFloats; i += blockDim.x) {
    const int tok = static_cast<int>((i / kHeadDim) % kBlockTokens);
    dst[i] = tok < valid ? src[i] : 0.0f;
  }
}

namespace {

double pool_fraction_from_env() {
  const char* s = std::getenv("KV_POOL_FRACTION");
  if (s == nullptr || *s == '\0') return 0.85;
  char* end = nullptr;
  errno = 0;
  double f = std::strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !(f > 0.0) || !(f < 1.0)) {
    std::fprintf(stderr, "kv_decode: KV_POOL_FRACTION='%s' is not a number in (0, 1)\n", s);
    std::exit(1);
  }
  return f;
}

struct Mismatch {
  long long count = 0, first = -1;
  double got = 0, want = 0, worst = 0;
  void check(long long i, double g, double r) {
    double diff = std::fabs(g - r);
    if (!(diff <= 1e-3 + 1e-3 * std::fabs(r))) {  // NaN fails too
      if (count++ == 0) {
        first = i;
        got = g;
        want = r;
      }
    }
    if (diff > worst || std::isnan(diff)) worst = diff;
  }
};

}  // namespace

int main() {
  kr::require_gpu();
  const double fraction = pool_fraction_from_env();

  // ---- the pool: one cudaMalloc of fraction x free memory -------------------------------------
  size_t free_bytes = 0, total_bytes = 0;
  KR_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const size_t min_pool = static_cast<size_t>(kLogicalBlocks) * kBlockBytes;
  double used_fraction = fraction;
  float* pool = nullptr;
  size_t pool_bytes = 0;
  // Some other process or the driver may hold memory that cudaMemGetInfo counted as free: step
  // down by 0.05 (at most 6 times) rather than fail outright.
  for (int attempt = 0; attempt < 7; ++attempt) {
    pool_bytes = static_cast<size_t>(used_fraction * static_cast<double>(free_bytes));
    pool_bytes = std::max(pool_bytes, min_pool) / kBlockBytes * kBlockBytes;
    cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&pool), pool_bytes);
    if (e == cudaSuccess) break;
    (void)cudaGetLastError();  // clear the allocation failure
    pool = nullptr;
    if (e != cudaErrorMemoryAllocation || pool_bytes == min_pool) {
      std::fprintf(stderr,
                   "kv_decode: cudaMalloc of the KV pool (%zu bytes, %.3f of free %zu) "
                   "failed: %s (%s)\n",
                   pool_bytes, used_fraction, free_bytes, cudaGetErrorName(e),
                   cudaGetErrorString(e));
      return 1;
    }
    std::fprintf(stderr,
                 "kv_decode: note: cudaMalloc of %zu bytes (%.3f of free) failed; "
                 "trying %.3f\n",
                 pool_bytes, used_fraction, used_fraction - 0.05);
    used_fraction -= 0.05;
    if (used_fraction <= 0.0) break;
  }
  if (pool == nullptr) {
    std::fprintf(stderr, "kv_decode: could not allocate the KV pool (free %zu bytes)\n",
                 free_bytes);
    return 1;
  }
  const long long pool_blocks = static_cast<long long>(pool_bytes / kBlockBytes);
  const long long stride = pool_blocks / kLogicalBlocks;  // >= 1: pool_bytes >= min_pool
  KR_EXPECT(stride >= 1 && (kLogicalBlocks - 1) * stride < pool_blocks, "pool of %lld blocks",
            pool_blocks);
  KR_EXPECT((kLogicalBlocks - 1) * stride <= 0x7fffffffLL, "stride %lld too large for int", stride);

  // ---- the workload, from fixed seeds (independent of the pool's size) ------------------------
  kr::Rng rng(0x6B76646563ull);  // "kvdec"
  std::vector<int> prompt_len(kSeqs);
  for (auto& l : prompt_len)
    l = kMinPrompt + static_cast<int>(rng.next() % (kMaxPrompt - kMinPrompt + 1));
  std::vector<int> prompt_tokens(static_cast<size_t>(kSeqs) * kMaxPrompt, 0);
  for (auto& t : prompt_tokens) t = static_cast<int>(rng.next() % kVocab);
  std::vector<int> step_tokens(static_cast<size_t>(kSteps) * kSeqs);
  for (auto& t : step_tokens) t = static_cast<int>(rng.next() % kVocab);
  std::vector<float> hidden0(static_cast<size_t>(kSeqs) * kModel);
  for (auto& h : hidden0) h = rng.signed_unit();
  std::vector<float> weights(kWeightFloats);
  for (auto& x : weights) x = rng.signed_unit();
  // The order in which the scheduler hands out logical blocks: a seeded shuffle of all of them.
  std::vector<int> free_list(kLogicalBlocks);
  for (int b = 0; b < kLogicalBlocks; ++b) free_list[b] = b;
  for (int b = kLogicalBlocks - 1; b > 0; --b) {
    int j = static_cast<int>(rng.next() % static_cast<uint64_t>(b + 1));
    std::swap(free_list[b], free_list[j]);
  }
  size_t next_free = 0;
  auto take_block = [&]() {  // returns the logical block
    KR_EXPECT(next_free < free_list.size(), "out of logical blocks");
    return free_list[next_free++];
  };
  auto phys_of = [&](int logical) { return static_cast<int>(logical * stride); };

  // Host-side scheduler state: every sequence's logical blocks, in order.
  std::vector<std::vector<int>> seq_blocks(kSeqs);
  std::vector<int> table(static_cast<size_t>(kSeqs) * kMaxBlocksPerSeq, -1);
  for (int s = 0; s < kSeqs; ++s) {
    const int nb = (prompt_len[s] + kBlockTokens - 1) / kBlockTokens;
    for (int j = 0; j < nb; ++j) {
      seq_blocks[s].push_back(take_block());
      table[s * kMaxBlocksPerSeq + j] = phys_of(seq_blocks[s].back());
    }
  }

  // ---- device buffers (after the pool, as a server allocates its working buffers) -------------
  int *d_table = nullptr, *d_len = nullptr, *d_pos = nullptr, *d_prompt_len = nullptr;
  int *d_prompt_tokens = nullptr, *d_err = nullptr;
  float *d_hidden = nullptr, *d_out = nullptr, *d_w = nullptr;
  StepInput* d_in = nullptr;
  KR_CHECK(cudaMalloc(&d_table, table.size() * sizeof(int)));
  KR_CHECK(cudaMalloc(&d_len, kSeqs * sizeof(int)));
  KR_CHECK(cudaMalloc(&d_pos, kSeqs * sizeof(int)));
  KR_CHECK(cudaMalloc(&d_prompt_len, kSeqs * sizeof(int)));
  KR_CHECK(cudaMalloc(&d_prompt_tokens, prompt_tokens.size() * sizeof(int)));
  KR_CHECK(cudaMalloc(&d_err, sizeof(int)));
  KR_CHECK(cudaMalloc(&d_hidden, hidden0.size() * sizeof(float)));
  KR_CHECK(cudaMalloc(&d_out, hidden0.size() * sizeof(float)));
  KR_CHECK(cudaMalloc(&d_w, weights.size() * sizeof(float)));
  KR_CHECK(cudaMalloc(&d_in, sizeof(StepInput)));
  KR_CHECK(cudaMemcpy(d_table, table.data(), table.size() * sizeof(int), cudaMemcpyHostToDevice));
  KR_CHECK(cudaMemcpy(d_len, prompt_len.data(), kSeqs * sizeof(int), cudaMemcpyHostToDevice));
  KR_CHECK(cudaMemset(d_pos, 0, kSeqs * sizeof(int)));
  KR_CHECK(
      cudaMemcpy(d_prompt_len, prompt_len.data(), kSeqs * sizeof(int), cudaMemcpyHostToDevice));
  KR_CHECK(cudaMemcpy(d_prompt_tokens, prompt_tokens.data(), prompt_tokens.size() * sizeof(int),
                      cudaMemcpyHostToDevice));
  KR_CHECK(cudaMemset(d_err, 0, sizeof(int)));
  KR_CHECK(
      cudaMemcpy(d_hidden, hidden0.data(), hidden0.size() * sizeof(float), cudaMemcpyHostToDevice));
  KR_CHECK(cudaMemset(d_out, 0, hidden0.size() * sizeof(float)));
  KR_CHECK(cudaMemcpy(d_w, weights.data(), weights.size() * sizeof(float), cudaMemcpyHostToDevice));

  // ---- prefill, then the decode steps ----------------------------------------------------------
  int launches = 0;
  prefill<<<dim3(kMaxPrompt, kSeqs), 256>>>(pool, pool_blocks, d_table, d_prompt_len,
                                            d_prompt_tokens, d_hidden, d_w, d_err);
  KR_CHECK_LAUNCH();
  ++launches;
  std::vector<int> host_len = prompt_len;
  for (int step = 0; step < kSteps; ++step) {
    StepInput in;
    for (int s = 0; s < kSeqs; ++s) {
      in.token[s] = step_tokens[static_cast<size_t>(step) * kSeqs + s];
      in.new_block[s] = -1;
      if (host_len[s] % kBlockTokens == 0) {  // the sequence's last block is full
        seq_blocks[s].push_back(take_block());
        in.new_block[s] = phys_of(seq_blocks[s].back());
      }
      ++host_len[s];
    }
    KR_CHECK(cudaMemcpy(d_in, &in, sizeof(in), cudaMemcpyHostToDevice));
    begin_step<<<1, kSeqs>>>(d_in, d_table, d_len, d_pos, d_err);
    KR_CHECK_LAUNCH();
    ++launches;
    for (int layer = 0; layer < kLayers; ++layer) {
      append_kv<<<kSeqs, 256>>>(layer, pool, pool_blocks, d_table, d_pos, d_in, d_hidden, d_w,
                                d_err);
      KR_CHECK_LAUNCH();
      attention<<<dim3(kHeads, kSeqs), kHeadDim>>>(layer, pool, pool_blocks, d_table, d_len,
                                                   d_hidden, d_w, d_out, d_err);
      KR_CHECK_LAUNCH();
      update_hidden<<<kSeqs, 256>>>(layer, d_hidden, d_out, d_w);
      KR_CHECK_LAUNCH();
      launches += 3;
    }
  }
  KR_CHECK(cudaDeviceSynchronize());

  // ---- the used blocks, gathered ---------------------------------------------------------------
  std::vector<int> used_phys, used_valid, seq_base(kSeqs);
  for (int s = 0; s < kSeqs; ++s) {
    seq_base[s] = static_cast<int>(used_phys.size());
    for (size_t j = 0; j < seq_blocks[s].size(); ++j) {
      used_phys.push_back(phys_of(seq_blocks[s][j]));
      used_valid.push_back(
          std::min(kBlockTokens, host_len[s] - static_cast<int>(j) * kBlockTokens));
    }
  }
  const int used = static_cast<int>(used_phys.size());
  int *d_used_phys = nullptr, *d_used_valid = nullptr;
  float* d_gather = nullptr;
  KR_CHECK(cudaMalloc(&d_used_phys, used * sizeof(int)));
  KR_CHECK(cudaMalloc(&d_used_valid, used * sizeof(int)));
  KR_CHECK(cudaMalloc(&d_gather, static_cast<size_t>(used) * kBlockBytes));
  KR_CHECK(cudaMemcpy(d_used_phys, used_phys.data(), used * sizeof(int), cudaMemcpyHostToDevice));
  KR_CHECK(cudaMemcpy(d_used_valid, used_valid.data(), used * sizeof(int), cudaMemcpyHostToDevice));
  gather_kv<<<used, 256>>>(pool, d_used_phys, d_used_valid, d_gather);
  KR_CHECK_LAUNCH();
  ++launches;
  KR_CHECK(cudaDeviceSynchronize());

  std::vector<float> hidden(hidden0.size());
  std::vector<float> blocks(static_cast<size_t>(used) * kBlockFloats);
  std::vector<int> lens(kSeqs), table_back(table.size());
  int err = 0;
  KR_CHECK(
      cudaMemcpy(hidden.data(), d_hidden, hidden.size() * sizeof(float), cudaMemcpyDeviceToHost));
  KR_CHECK(
      cudaMemcpy(blocks.data(), d_gather, blocks.size() * sizeof(float), cudaMemcpyDeviceToHost));
  KR_CHECK(cudaMemcpy(lens.data(), d_len, kSeqs * sizeof(int), cudaMemcpyDeviceToHost));
  KR_CHECK(
      cudaMemcpy(table_back.data(), d_table, table.size() * sizeof(int), cudaMemcpyDeviceToHost));
  KR_CHECK(cudaMemcpy(&err, d_err, sizeof(int), cudaMemcpyDeviceToHost));

  std::printf(
      "KREPLAY_APP_INFO kv_decode pool_bytes=%zu pool_fraction=%.4f steps=%d sequences=%d "
      "requested_fraction=%.4f free_bytes=%zu total_bytes=%zu pool_of_total=%.4f block_bytes=%zu "
      "pool_blocks=%lld stride_blocks=%lld used_blocks=%d launches=%d\n",
      pool_bytes, static_cast<double>(pool_bytes) / static_cast<double>(free_bytes), kSteps, kSeqs,
      fraction, free_bytes, total_bytes,
      static_cast<double>(pool_bytes) / static_cast<double>(total_bytes), kBlockBytes, pool_blocks,
      stride, used, launches);
  std::fflush(stdout);

  // ---- checks: device-side flags, lengths, block table -----------------------------------------
  KR_EXPECT(err == 0,
            "the kernels flagged errors 0x%x (1 no block, 2 table full, 4 block "
            "outside the pool, 8 sequence too long)",
            err);
  for (int s = 0; s < kSeqs; ++s) {
    KR_EXPECT(lens[s] == host_len[s], "sequence %d: device length %d, expected %d", s, lens[s],
              host_len[s]);
    for (size_t j = 0; j < seq_blocks[s].size(); ++j) {
      KR_EXPECT(table_back[s * kMaxBlocksPerSeq + j] == phys_of(seq_blocks[s][j]),
                "sequence %d block %zu: table says %d, expected %d", s, j,
                table_back[s * kMaxBlocksPerSeq + j], phys_of(seq_blocks[s][j]));
    }
  }

  // ---- CPU reference: the same steps in float64 over a compact copy of the used blocks ---------
  std::vector<float> ref_blocks(blocks.size(), 0.0f);
  std::vector<double> h(hidden0.begin(), hidden0.end());
  auto ref_at = [&](int s, int t, int layer, int kv, int head) {
    return ref_blocks.data() + static_cast<size_t>(seq_base[s] + t / kBlockTokens) * kBlockFloats +
           layer * kLayerFloats + kv * kKvFloats + head * kHeadFloats +
           static_cast<size_t>(t % kBlockTokens) * kHeadDim;
  };
  auto wgt = [&](int layer, Weight w, int i) {
    return static_cast<double>(weights[widx(layer, w, i)]);
  };
  auto ref_write_kv = [&](int s, int t, int layer, int token, const double* hs) {
    for (int idx = 0; idx < kModel; ++idx) {
      const int head = idx / kHeadDim, d = idx % kHeadDim;
      ref_at(s, t, layer, 0, head)[d] = static_cast<float>(std::fma(
          hs[idx], wgt(layer, kWk, idx), embed(static_cast<uint32_t>(token), idx, layer, 0)));
      ref_at(s, t, layer, 1, head)[d] =
          static_cast<float>(std::fma(hs[v_source(idx, layer)], wgt(layer, kWv, idx),
                                      embed(static_cast<uint32_t>(token), idx, layer, 1)));
    }
  };
  for (int s = 0; s < kSeqs; ++s) {
    for (int t = 0; t < prompt_len[s]; ++t) {
      for (int layer = 0; layer < kLayers; ++layer) {
        ref_write_kv(s, t, layer, prompt_tokens[s * kMaxPrompt + t],
                     &h[static_cast<size_t>(s) * kModel]);
      }
    }
  }
  std::vector<int> len = prompt_len;
  std::vector<double> q(kHeadDim), sc(kMaxTokens), o(kModel);
  for (int step = 0; step < kSteps; ++step) {
    for (int s = 0; s < kSeqs; ++s) ++len[s];
    for (int layer = 0; layer < kLayers; ++layer) {
      for (int s = 0; s < kSeqs; ++s) {
        double* hs = &h[static_cast<size_t>(s) * kModel];
        ref_write_kv(s, len[s] - 1, layer, step_tokens[static_cast<size_t>(step) * kSeqs + s], hs);
        for (int head = 0; head < kHeads; ++head) {
          for (int d = 0; d < kHeadDim; ++d)
            q[d] = hs[head * kHeadDim + d] * wgt(layer, kWq, head * kHeadDim + d);
          double m = -1e300;
          for (int t = 0; t < len[s]; ++t) {
            const float* k = ref_at(s, t, layer, 0, head);
            double acc = 0.0;
            for (int j = 0; j < kHeadDim; ++j) acc += q[j] * k[j];
            sc[t] = acc * kScale;
            m = std::max(m, sc[t]);
          }
          double sum = 0.0;
          for (int t = 0; t < len[s]; ++t) {
            sc[t] = std::exp(sc[t] - m);
            sum += sc[t];
          }
          for (int d = 0; d < kHeadDim; ++d) o[head * kHeadDim + d] = 0.0;
          for (int t = 0; t < len[s]; ++t) {
            const float* v = ref_at(s, t, layer, 1, head);
            for (int d = 0; d < kHeadDim; ++d) o[head * kHeadDim + d] += sc[t] * v[d];
          }
          for (int d = 0; d < kHeadDim; ++d) o[head * kHeadDim + d] /= sum;
        }
        for (int i = 0; i < kModel; ++i) hs[i] = 0.75 * hs[i] + 0.25 * (o[i] * wgt(layer, kWo, i));
      }
    }
  }
  Mismatch mh, mk;
  for (size_t i = 0; i < hidden.size(); ++i) mh.check(static_cast<long long>(i), hidden[i], h[i]);
  for (size_t i = 0; i < blocks.size(); ++i)
    mk.check(static_cast<long long>(i), blocks[i], ref_blocks[i]);
  KR_EXPECT(mh.count == 0,
            "hidden states differ from the CPU at %lld places, first [%lld] = %.9g, "
            "CPU %.9g (largest difference %.3g)",
            mh.count, mh.first, mh.got, mh.want, mh.worst);
  KR_EXPECT(mk.count == 0,
            "KV blocks differ from the CPU at %lld places, first float %lld "
            "(block entry %lld) = %.9g, CPU %.9g (largest difference %.3g)",
            mk.count, mk.first, mk.first / static_cast<long long>(kBlockFloats), mk.got, mk.want,
            mk.worst);
  std::fprintf(stderr, "kv_decode: CPU check passed: largest difference hidden %.3g, KV %.3g\n",
               mh.worst, mk.worst);

  kr::Digest dg;
  dg.add(hidden);
  dg.add(blocks);
  dg.add(lens);
  KR_CHECK(cudaFree(d_used_phys));
  KR_CHECK(cudaFree(d_used_valid));
  KR_CHECK(cudaFree(d_gather));
  KR_CHECK(cudaFree(d_in));
  KR_CHECK(cudaFree(d_w));
  KR_CHECK(cudaFree(d_out));
  KR_CHECK(cudaFree(d_hidden));
  KR_CHECK(cudaFree(d_err));
  KR_CHECK(cudaFree(d_prompt_tokens));
  KR_CHECK(cudaFree(d_prompt_len));
  KR_CHECK(cudaFree(d_pos));
  KR_CHECK(cudaFree(d_len));
  KR_CHECK(cudaFree(d_table));
  KR_CHECK(cudaFree(pool));
  dg.print("kv_decode");
  return 0;
}
