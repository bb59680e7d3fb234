// event_streams: range replay across synchronizations and across streams ordered by events
// (issue 13 item 3). Each of 6 rounds updates x in place three times on stream s1 with a
// cudaStreamSynchronize between the updates (the host observes no memory: a range stays open),
// then hands x to stream s2 through an event (cudaEventRecord on s1, cudaStreamWaitEvent on s2),
// where accumulate adds x into y in place, and hands back to s1 the same way for one more update,
// and ends with cudaDeviceSynchronize and an event query. Nothing is copied back until the end, so
// under range replay all of it can be one range spanning two streams. Every kernel is in place and
// not idempotent, and accumulate reads what the update on the other stream wrote: a replay that
// does not restore memory, or resubmits the launches of the two streams out of order, changes the
// result. Checked against a CPU reference.
#include "common.cuh"

__global__ void update(uint32_t* x, size_t n, uint32_t k) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = x[i] * 5u + k;
}

__global__ void accumulate(uint32_t* y, const uint32_t* x, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = (y[i] ^ x[i]) + (x[i] >> 7);
}

int main() {
  kr::require_gpu();
  constexpr size_t n = 1 << 20;
  constexpr size_t bytes = n * sizeof(uint32_t);
  constexpr unsigned threads = 256;
  const unsigned blocks = kr::blocks_for(n, threads);
  std::vector<uint32_t> x = kr::random_u32(n, 0x5e), y = kr::random_u32(n, 0x7a);
  uint32_t *dx = nullptr, *dy = nullptr;
  KR_CHECK(cudaMalloc(&dx, bytes));
  KR_CHECK(cudaMalloc(&dy, bytes));
  KR_CHECK(cudaMemcpy(dx, x.data(), bytes, cudaMemcpyHostToDevice));
  KR_CHECK(cudaMemcpy(dy, y.data(), bytes, cudaMemcpyHostToDevice));
  cudaStream_t s1, s2;
  KR_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  KR_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t to_s2, to_s1;
  KR_CHECK(cudaEventCreateWithFlags(&to_s2, cudaEventDisableTiming));
  KR_CHECK(cudaEventCreateWithFlags(&to_s1, cudaEventDisableTiming));

  auto cpu_update = [&](uint32_t k) {
    for (auto& v : x) v = v * 5u + k;
  };
  for (uint32_t round = 0; round < 6; ++round) {
    for (uint32_t j = 0; j < 3; ++j) {
      update<<<blocks, threads, 0, s1>>>(dx, n, round * 3 + j);
      KR_CHECK_LAUNCH();
      KR_CHECK(cudaStreamSynchronize(s1));
      cpu_update(round * 3 + j);
    }
    KR_CHECK(cudaEventRecord(to_s2, s1));
    KR_CHECK(cudaStreamWaitEvent(s2, to_s2, 0));
    accumulate<<<blocks, threads, 0, s2>>>(dy, dx, n);
    KR_CHECK_LAUNCH();
    for (size_t i = 0; i < n; ++i) y[i] = (y[i] ^ x[i]) + (x[i] >> 7);
    KR_CHECK(cudaEventRecord(to_s1, s2));
    KR_CHECK(cudaStreamWaitEvent(s1, to_s1, 0));
    update<<<blocks, threads, 0, s1>>>(dx, n, 100 + round);
    KR_CHECK_LAUNCH();
    cpu_update(100 + round);
    KR_CHECK(cudaDeviceSynchronize());
    KR_CHECK(cudaEventQuery(to_s1));
  }

  std::vector<uint32_t> ox(n), oy(n);
  KR_CHECK(cudaMemcpy(ox.data(), dx, bytes, cudaMemcpyDeviceToHost));
  KR_CHECK(cudaMemcpy(oy.data(), dy, bytes, cudaMemcpyDeviceToHost));
  long long bad = kr::first_mismatch(ox, x);
  KR_EXPECT(bad < 0, "x[%lld] = %u, CPU %u", bad, ox[bad], x[bad]);
  bad = kr::first_mismatch(oy, y);
  KR_EXPECT(bad < 0, "y[%lld] = %u, CPU %u", bad, oy[bad], y[bad]);
  kr::Digest d;
  d.add(ox);
  d.add(oy);
  KR_CHECK(cudaEventDestroy(to_s2));
  KR_CHECK(cudaEventDestroy(to_s1));
  KR_CHECK(cudaStreamDestroy(s1));
  KR_CHECK(cudaStreamDestroy(s2));
  KR_CHECK(cudaFree(dx));
  KR_CHECK(cudaFree(dy));
  d.print("event_streams");
  return 0;
}
