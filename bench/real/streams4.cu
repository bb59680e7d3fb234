// streams4: four host threads, each with its own non-blocking stream and its own two buffers,
// run chains of kernels that update those buffers in place, all at the same time (they start
// together at a latch), each thread synchronizing its stream after every third launch. Launch l of
// thread t is, by l % 3:
//   scale   x = x·(2t + 3) + l + 1
//   blend   y = y ^ mix32(x)
//   fold    x = x + (y >> 3)
// A launch of another thread that ran between a snapshot and its restore would be undone. 32-bit
// integers throughout: checked exactly against a host reference and digested over every buffer.
//   streams4 [launches=40]     launches in all, split evenly over the four threads
#include "real_common.cuh"

#include <latch>
#include <thread>

constexpr int kThreads = 4;

__global__ void scale(uint32_t* x, size_t n, uint32_t mul, uint32_t add) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = x[i] * mul + add;
}

__global__ void blend(uint32_t* y, const uint32_t* x, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] ^= real::mix32(x[i]);
}

__global__ void fold(uint32_t* x, const uint32_t* y, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] += y[i] >> 3;
}

struct Chain {
  int t = 0;
  int launches = 0;
  size_t n = 0;
  std::vector<uint32_t> x, y;  // in: initial data; out: the device's result
};

static void apply(Chain& c, int l) {  // the host reference of launch l
  const uint32_t mul = 2u * c.t + 3u, add = static_cast<uint32_t>(l) + 1u;
  for (size_t i = 0; i < c.n; ++i) {
    if (l % 3 == 0)
      c.x[i] = c.x[i] * mul + add;
    else if (l % 3 == 1)
      c.y[i] ^= real::mix32(c.x[i]);
    else
      c.x[i] += c.y[i] >> 3;
  }
}

static void worker(Chain* c, std::latch* start) {
  CHECK(cudaSetDevice(0));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t bytes = c->n * sizeof(uint32_t);
  uint32_t *x = nullptr, *y = nullptr;
  CHECK(cudaMalloc(&x, bytes));
  CHECK(cudaMalloc(&y, bytes));
  CHECK(cudaMemcpyAsync(x, c->x.data(), bytes, cudaMemcpyHostToDevice, s));
  CHECK(cudaMemcpyAsync(y, c->y.data(), bytes, cudaMemcpyHostToDevice, s));
  CHECK(cudaStreamSynchronize(s));
  start->arrive_and_wait();
  const unsigned blocks = real::blocks_for(c->n, 256);
  for (int l = 0; l < c->launches; ++l) {
    if (l % 3 == 0)
      scale<<<blocks, 256, 0, s>>>(x, c->n, 2u * c->t + 3u, l + 1u);
    else if (l % 3 == 1)
      blend<<<blocks, 256, 0, s>>>(y, x, c->n);
    else
      fold<<<blocks, 256, 0, s>>>(x, y, c->n);
    CHECK_LAUNCH();
    if (l % 3 == 2) CHECK(cudaStreamSynchronize(s));
  }
  CHECK(cudaMemcpyAsync(c->x.data(), x, bytes, cudaMemcpyDeviceToHost, s));
  CHECK(cudaMemcpyAsync(c->y.data(), y, bytes, cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  CHECK(cudaStreamDestroy(s));
}

int main(int argc, char** argv) {
  real::begin("streams4");
  const int launches = real::count_arg(argc, argv, 40);

  Chain chains[kThreads];
  for (int t = 0; t < kThreads; ++t) {
    Chain& c = chains[t];
    c.t = t;
    c.launches = launches / kThreads + (t < launches % kThreads ? 1 : 0);
    c.n = (size_t{1} << 20) + static_cast<size_t>(t) * 4096;
    real::Rng rng(0x5000 + t);
    c.x.resize(c.n);
    c.y.resize(c.n);
    for (size_t i = 0; i < c.n; ++i) {
      c.x[i] = rng.u32();
      c.y[i] = rng.u32();
    }
  }
  Chain want[kThreads];
  for (int t = 0; t < kThreads; ++t) want[t] = chains[t];

  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, &chains[t], &start);
  for (auto& th : threads) th.join();

  real::Digest dig;
  for (int t = 0; t < kThreads; ++t) {
    Chain& w = want[t];
    for (int l = 0; l < w.launches; ++l) apply(w, l);
    for (size_t i = 0; i < w.n; ++i) {
      if (chains[t].x[i] != w.x[i] || chains[t].y[i] != w.y[i]) {
        real::fail("thread %d element %zu: (x, y) = (%u, %u), host (%u, %u)", t, i, chains[t].x[i],
                   chains[t].y[i], w.x[i], w.y[i]);
      }
    }
    dig.add(chains[t].x);
    dig.add(chains[t].y);
  }
  dig.pass();
  return 0;
}
