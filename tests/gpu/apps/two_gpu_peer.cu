// two_gpu_peer: one process driving two GPUs (issue 15 item 4). One host thread per device, each
// with its own stream and buffer, run rounds of in-place updates at the same time; between rounds
// each thread copies its buffer to the other device (cudaMemcpyPeerAsync) and folds the copy it
// received into its own buffer, and, where peer access is enabled, a kernel reads the other
// device's buffer through its pointer (kreplay declines that one as peer memory). Replay windows
// on the two devices can overlap; neither may undo the other's work. Every launch also bumps its
// device's slot of a __device__ counter. The result is checked against a CPU computation.
//
// Exit 77 with fewer than two GPUs, unless KREPLAY_TWO_GPU_ONE_DEVICE=1, which puts both threads
// on device 0 (peer copies become copies within it): the program's logic on a one-GPU machine.
#include "common.cuh"

#include <condition_variable>
#include <mutex>
#include <thread>

constexpr int kRounds = 8;

__device__ unsigned int g_launches[2];

__global__ void update(uint32_t* x, size_t n, int t, uint32_t round) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    uint32_t v = x[i];
    for (int k = 0; k < 64; ++k) v = v * (2u * t + 3u) + round + 1u;
    x[i] = v;
  }
  if (i == 0) atomicAdd(&g_launches[t], 1u);
}

__device__ __host__ inline uint32_t rotl7(uint32_t v) { return (v << 7) | (v >> 25); }

__global__ void fold(uint32_t* x, const uint32_t* received, size_t n, int t, uint32_t round) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] ^= rotl7(received[i]) + round;
  if (i == 0) atomicAdd(&g_launches[t], 1u);
}

// Reads the other device's buffer through its pointer (peer access).
__global__ void peer_sum(uint32_t* out, const uint32_t* mine, const uint32_t* theirs, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = mine[i] + theirs[i];
}

// Two threads meet here (the apps build as C++17, which has no std::barrier).
class Meet {
 public:
  void arrive_and_wait() {
    std::unique_lock lock(mu_);
    const unsigned long round = round_;
    if (++arrived_ == 2) {
      arrived_ = 0;
      ++round_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return round_ != round; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  unsigned long round_ = 0;
};

struct Side {
  int device = 0;
  cudaStream_t stream{};
  uint32_t* x = nullptr;
  uint32_t* received = nullptr;
  uint32_t* sum = nullptr;
  std::vector<uint32_t> host;      // CPU reference of x
  std::vector<uint32_t> result;    // x at the end
  std::vector<uint32_t> sum_host;  // peer_sum's output at the end (peer access only)
};

constexpr size_t kN = 1 << 18;

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "SKIP: no CUDA device\n");
    return kr::kSkipNoGpu;
  }
  const char* one = std::getenv("KREPLAY_TWO_GPU_ONE_DEVICE");
  const bool one_device = one != nullptr && std::strcmp(one, "1") == 0;
  if (count < 2 && !one_device) {
    std::fprintf(stderr, "SKIP: %d CUDA device(s), two_gpu_peer needs 2 "
                 "(KREPLAY_TWO_GPU_ONE_DEVICE=1 runs it on one)\n", count);
    return kr::kSkipNoGpu;
  }
  Side side[2];
  side[0].device = 0;
  side[1].device = one_device ? 0 : 1;
  bool peer = false;
  if (!one_device) {
    int a = 0, b = 0;
    KR_CHECK(cudaDeviceCanAccessPeer(&a, 0, 1));
    KR_CHECK(cudaDeviceCanAccessPeer(&b, 1, 0));
    peer = a && b;
    if (peer) {
      KR_CHECK(cudaSetDevice(0));
      KR_CHECK(cudaDeviceEnablePeerAccess(1, 0));
      KR_CHECK(cudaSetDevice(1));
      KR_CHECK(cudaDeviceEnablePeerAccess(0, 0));
    }
  }
  for (int t = 0; t < 2; ++t) {
    Side& s = side[t];
    KR_CHECK(cudaSetDevice(s.device));
    KR_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
    s.host = kr::random_u32(kN, 0x7700 + t);
    KR_CHECK(cudaMalloc(&s.x, kN * sizeof(uint32_t)));
    KR_CHECK(cudaMalloc(&s.received, kN * sizeof(uint32_t)));
    KR_CHECK(cudaMalloc(&s.sum, kN * sizeof(uint32_t)));
    KR_CHECK(cudaMemcpy(s.x, s.host.data(), kN * sizeof(uint32_t), cudaMemcpyHostToDevice));
    const unsigned int zero = 0;
    KR_CHECK(cudaMemcpyToSymbol(g_launches, &zero, sizeof(zero), t * sizeof(unsigned int)));
  }
  KR_CHECK(cudaSetDevice(0));
  KR_CHECK(cudaDeviceSynchronize());
  if (!one_device) {
    KR_CHECK(cudaSetDevice(1));
    KR_CHECK(cudaDeviceSynchronize());
  }

  Meet sync;
  auto worker = [&](int t) {
    Side& me = side[t];
    Side& other = side[1 - t];
    KR_CHECK(cudaSetDevice(me.device));
    const unsigned grid = kr::blocks_for(kN, 256);
    for (uint32_t r = 0; r < kRounds; ++r) {
      update<<<grid, 256, 0, me.stream>>>(me.x, kN, t, r);
      KR_CHECK_LAUNCH();
      KR_CHECK(cudaStreamSynchronize(me.stream));
      sync.arrive_and_wait();  // both x are this round's
      KR_CHECK(cudaMemcpyPeerAsync(other.received, other.device, me.x, me.device,
                                   kN * sizeof(uint32_t), me.stream));
      KR_CHECK(cudaStreamSynchronize(me.stream));
      if (peer && r == kRounds - 1) {
        peer_sum<<<grid, 256, 0, me.stream>>>(me.sum, me.x, other.x, kN);
        KR_CHECK_LAUNCH();
        KR_CHECK(cudaStreamSynchronize(me.stream));
      }
      sync.arrive_and_wait();  // both copies have landed; nobody reads the other's x any more
      fold<<<grid, 256, 0, me.stream>>>(me.x, me.received, kN, t, r);
      KR_CHECK_LAUNCH();
      KR_CHECK(cudaStreamSynchronize(me.stream));
      sync.arrive_and_wait();  // nobody copies x before both folds are done
    }
    me.result.resize(kN);
    KR_CHECK(cudaMemcpy(me.result.data(), me.x, kN * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    if (peer) {
      me.sum_host.resize(kN);
      KR_CHECK(cudaMemcpy(me.sum_host.data(), me.sum, kN * sizeof(uint32_t),
                          cudaMemcpyDeviceToHost));
    }
  };
  std::thread a(worker, 0), b(worker, 1);
  a.join();
  b.join();

  // CPU reference, round by round as the devices did it.
  std::vector<uint32_t> sums[2];
  for (uint32_t r = 0; r < kRounds; ++r) {
    for (int t = 0; t < 2; ++t) {
      for (auto& v : side[t].host) {
        for (int k = 0; k < 64; ++k) v = v * (2u * t + 3u) + r + 1u;
      }
    }
    if (peer && r == kRounds - 1) {
      for (int t = 0; t < 2; ++t) {
        sums[t].resize(kN);
        for (size_t i = 0; i < kN; ++i) sums[t][i] = side[t].host[i] + side[1 - t].host[i];
      }
    }
    const std::vector<uint32_t> received0 = side[1].host, received1 = side[0].host;
    for (size_t i = 0; i < kN; ++i) side[0].host[i] ^= rotl7(received0[i]) + r;
    for (size_t i = 0; i < kN; ++i) side[1].host[i] ^= rotl7(received1[i]) + r;
  }
  kr::Digest d;
  for (int t = 0; t < 2; ++t) {
    long long bad = kr::first_mismatch(side[t].result, side[t].host);
    KR_EXPECT(bad < 0, "device %d x[%lld] = %u, CPU %u", t, bad, side[t].result[bad],
              side[t].host[bad]);
    d.add(side[t].result);
    if (peer) {
      bad = kr::first_mismatch(side[t].sum_host, sums[t]);
      KR_EXPECT(bad < 0, "device %d peer sum[%lld] = %u, CPU %u", t, bad, side[t].sum_host[bad],
                sums[t][bad]);
      d.add(side[t].sum_host);
    }
  }
  unsigned int counts[2][2] = {};
  for (int t = 0; t < 2; ++t) {
    KR_CHECK(cudaSetDevice(side[t].device));
    KR_CHECK(cudaMemcpyFromSymbol(counts[t], g_launches, sizeof(counts[t])));
  }
  // Each device's own slot: 2 launches a round. On one device both threads share one array.
  for (int t = 0; t < 2; ++t) {
    KR_EXPECT(counts[t][t] == 2 * kRounds, "device %d: %u launches counted, expected %d", t,
              counts[t][t], 2 * kRounds);
  }
  d.add_value(counts[0][0]);
  d.add_value(counts[1][1]);
  std::printf("two_gpu_peer: %s, peer access %s\n", one_device ? "one device" : "two devices",
              peer ? "enabled" : "off");
  d.print("two_gpu_peer");
  return 0;
}
