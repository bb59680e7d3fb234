// snapshot_bench: kreplay's GPU snapshot, find_changed and restore (kreplay::cuda::MemoryOps)
// against the copy ceiling (cuMemcpyDtoD of the same bytes) and against CUPTI's checkpoint API
// (OPT_NONE), all measured side by side in one run. A program, not a test: it prints ratios and
// asserts nothing about time (it does check that every result is correct, and exits 1 if not).
//
// Usage (see README.md):
//   snapshot_bench [--sizes 1G,16G] [--restore-footprint 16G] [--changed 256M] [--chunk 64K]
//                  [--regions 1] [--reps 7] [--pinned 1G] [--no-checkpoint] [--sweep]
//                  [--device 0]
//
// Timing: the median of --reps repetitions after two warm-up runs, on random (non-zero) data.
// "gpu" times are CUDA events recorded around the work on the stream that runs it (for a
// MemoryOps call, on its own stream before and after the call, which returns when its work is
// done); "wall" times are the host clock around the call and its synchronization.
#include <cuda.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cuda/memory/driver.hpp"
#include "backends/cuda/memory/memory_ops.hpp"
#include "common/env.hpp"
#include "common/util.hpp"

#if KREPLAY_BENCH_CHECKPOINT
#include <cupti_checkpoint.h>
#endif

namespace {

using kreplay::Status;
using kreplay::cuda::MemoryOps;
using kreplay::device::CopyRegion;
using kreplay::device::StorageTier;
namespace drv = kreplay::cuda::memdrv;

constexpr uint64_t kGiB = 1ull << 30, kMiB = 1ull << 20;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "snapshot_bench: %s\n", what.c_str());
  std::exit(1);
}

void ok(const Status& s, const char* what) {
  if (!s.ok()) die(fmt::format("{}: {}", what, s.message()));
}

#define CU(call) ok(drv::check((call), #call), #call)

struct Options {
  std::vector<uint64_t> sizes = {1 * kGiB, 16 * kGiB};
  uint64_t restore_footprint = 16 * kGiB;
  uint64_t changed = 256 * kMiB;
  uint64_t chunk = 64 * 1024;
  int regions = 1;
  int reps = 7;
  uint64_t pinned = 0;
  bool checkpoint = true;
  bool sweep = false;
  int device = 0;
};

uint64_t bytes_arg(const char* text) {
  uint64_t v = 0;
  if (!kreplay::env::parse_bytes(text, &v) || v == 0) die(fmt::format("bad size '{}'", text));
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--sizes") {
      o.sizes.clear();
      for (const auto& s : kreplay::env::split(next(), ','))
        o.sizes.push_back(bytes_arg(s.c_str()));
    } else if (a == "--restore-footprint") {
      o.restore_footprint = bytes_arg(next());
    } else if (a == "--changed") {
      o.changed = bytes_arg(next());
    } else if (a == "--chunk") {
      o.chunk = bytes_arg(next());
    } else if (a == "--regions") {
      o.regions = std::max(1, std::atoi(next()));
    } else if (a == "--reps") {
      o.reps = std::max(1, std::atoi(next()));
    } else if (a == "--pinned") {
      o.pinned = bytes_arg(next());
    } else if (a == "--no-checkpoint") {
      o.checkpoint = false;
    } else if (a == "--sweep") {
      o.sweep = true;
    } else if (a == "--device") {
      o.device = std::atoi(next());
    } else if (a == "--help" || a == "-h") {
      std::printf(
          "snapshot_bench [--sizes 1G,16G] [--restore-footprint 16G] [--changed 256M] "
          "[--chunk 64K] [--regions 1] [--reps 7] [--pinned 1G] [--no-checkpoint] [--sweep] "
          "[--device 0]\n");
      std::exit(0);
    } else {
      die("unknown argument " + a);
    }
  }
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Sample {
  double gpu_ms = 0, wall_ms = 0;
};
struct Stats {
  double gpu_ms = 0, wall_ms = 0;
};

Stats stats(const std::vector<Sample>& s) {
  std::vector<double> g, w;
  for (const auto& x : s) {
    g.push_back(x.gpu_ms);
    w.push_back(x.wall_ms);
  }
  return {median(g), median(w)};
}

class Timer {
 public:
  Timer() {
    CU(drv::api().cuEventCreate(&a_, CU_EVENT_DEFAULT));
    CU(drv::api().cuEventCreate(&b_, CU_EVENT_DEFAULT));
  }
  ~Timer() {
    drv::api().cuEventDestroy(a_);
    drv::api().cuEventDestroy(b_);
  }
  // Events on `stream` around f(); f may be asynchronous on `stream` or synchronous.
  template <typename F>
  Sample run(CUstream stream, F&& f) {
    const auto& cu = drv::api();
    CU(cu.cuEventRecord(a_, stream));
    auto t0 = std::chrono::steady_clock::now();
    f();
    CU(cu.cuEventRecord(b_, stream));
    CU(cu.cuEventSynchronize(b_));
    auto t1 = std::chrono::steady_clock::now();
    float ms = 0;
    CU(cu.cuEventElapsedTime(&ms, a_, b_));
    return {ms, std::chrono::duration<double, std::milli>(t1 - t0).count()};
  }

 private:
  CUevent a_ = nullptr, b_ = nullptr;
};

template <typename F>
Stats measure(Timer& t, CUstream stream, int reps, F&& f) {
  for (int i = 0; i < 2; ++i) t.run(stream, f);  // warm-up
  std::vector<Sample> s;
  for (int i = 0; i < reps; ++i) s.push_back(t.run(stream, f));
  return stats(s);
}

// A and B alternate in every repetition (after two warm-up pairs), so that drift (clocks, the
// machine's other tenants) hits both alike.
template <typename FA, typename FB>
std::pair<Stats, Stats> measure_pair(Timer& t, int reps, CUstream sa, FA&& fa, CUstream sb,
                                     FB&& fb) {
  std::vector<Sample> a, b;
  for (int i = 0; i < reps + 2; ++i) {
    Sample x = t.run(sa, fa);
    Sample y = t.run(sb, fb);
    if (i >= 2) {
      a.push_back(x);
      b.push_back(y);
    }
  }
  return {stats(a), stats(b)};
}

double gbps(uint64_t bytes, double ms) {
  return ms > 0 ? bytes / (ms * 1e6) : 0;
}

// Calls `call` and records the GPU time of the MemoryOps kernels it ran (set_kernel_timing).
struct KernelTimes {
  std::vector<double> ms;
  double median_ms(int reps) const {
    std::vector<double> last(ms.end() - std::min<size_t>(ms.size(), reps), ms.end());
    return median(last);
  }
};

// A footprint: `count` live allocations totalling `bytes`, and one storage block holding their
// snapshot, laid out as the engine does (256-byte aligned offsets, consecutive chunk numbers).
struct Footprint {
  std::vector<CUdeviceptr> live;
  kreplay::device::Storage storage;
  std::vector<CopyRegion> regions;
  std::vector<uint64_t> digests;
  uint64_t bytes = 0;
  uint64_t chunks = 0;
};

Footprint make_footprint(MemoryOps& ops, uint64_t bytes, int count, uint64_t chunk,
                         StorageTier tier, uint64_t seed) {
  Footprint f;
  f.bytes = bytes;
  uint64_t storage_bytes = 0;
  std::vector<uint64_t> sizes;
  for (int i = 0; i < count; ++i) {
    const uint64_t s =
        i + 1 < count ? bytes / count / 256 * 256 : bytes - bytes / count / 256 * 256 * (count - 1);
    sizes.push_back(s);
    storage_bytes += (s + 255) / 256 * 256;
  }
  auto st = ops.allocate_storage(tier, storage_bytes);
  ok(st.status().ok() ? Status::Ok() : st.status(), "allocate_storage");
  f.storage = *st;
  uint64_t off = 0;
  for (uint64_t s : sizes) {
    CUdeviceptr p = 0;
    CU(drv::api().cuMemAlloc(&p, s));
    ok(ops.fill_random(p, s, seed++), "fill_random");
    f.live.push_back(p);
    f.regions.push_back({p, f.storage.address + off, s, f.chunks});
    off += (s + 255) / 256 * 256;
    f.chunks += kreplay::device::chunk_count(s, chunk);
  }
  f.digests.assign(f.chunks, 0);
  return f;
}

void release(MemoryOps& ops, Footprint& f) {
  for (CUdeviceptr p : f.live) drv::api().cuMemFree(p);
  if (f.storage.size != 0) ops.free_storage(f.storage);
  f = {};
}

void verify_equal(MemoryOps& ops, const Footprint& f, const char* when) {
  for (const auto& r : f.regions) {
    auto d = ops.count_differences(r.live, r.storage, r.size);
    ok(d.status().ok() ? Status::Ok() : d.status(), "count_differences");
    if (*d != 0) die(fmt::format("{}: {} bytes of live memory differ from the snapshot", when, *d));
  }
}

// Copy `bytes` storage -> live over the regions, starting at global byte offset `at`.
void copy_range(const Footprint& f, uint64_t at, uint64_t bytes, CUstream stream) {
  uint64_t base = 0;
  for (const auto& r : f.regions) {
    const uint64_t lo = std::max(at, base), hi = std::min(at + bytes, base + r.size);
    if (lo < hi)
      CU(drv::api().cuMemcpyDtoDAsync(r.live + (lo - base), r.storage + (lo - base), hi - lo,
                                      stream));
    base += r.size;
  }
}

struct Row {
  std::string name;
  std::string values;
};
std::vector<Row> g_summary;

void snapshot_section(MemoryOps& ops, const Options& o, Timer& timer, CUstream bench_stream,
                      CUstream ops_stream) {
  std::printf("\n== snapshot (copy + chunk digests) vs cuMemcpyDtoD of the same bytes ==\n");
  std::printf(
      "'call' is the whole MemoryOps::snapshot (launch, kernels, digests copied to the caller,\n"
      "synchronize); 'kernel' is its kernels alone. Both timed with events; ratio = copy / "
      "kreplay.\n");
  std::printf("%-10s %-7s %-21s %-21s %-7s %-17s %-7s %-21s\n", "footprint", "regions",
              "cuMemcpyDtoD ms", "snapshot call ms", "ratio", "snapshot kernel", "ratio",
              "find_changed (none)");
  for (uint64_t size : o.sizes) {
    Footprint f = make_footprint(ops, size, o.regions, o.chunk, StorageTier::kDevice, 100);
    ok(ops.snapshot(f.regions, o.chunk, f.digests), "snapshot");
    verify_equal(ops, f, "after snapshot");
    KernelTimes kt, kf;
    auto copy_fn = [&] {
      for (const auto& r : f.regions)
        CU(drv::api().cuMemcpyDtoDAsync(r.storage, r.live, r.size, bench_stream));
    };
    auto snap_fn = [&] {
      ok(ops.snapshot(f.regions, o.chunk, f.digests), "snapshot");
      kt.ms.push_back(ops.last_kernel_ms());
    };
    auto [copy, snap] = measure_pair(timer, o.reps, bench_stream, copy_fn, ops_stream, snap_fn);
    std::vector<uint64_t> changed;
    Stats scan = measure(timer, ops_stream, o.reps, [&] {
      changed.clear();
      ok(ops.find_changed(f.regions, o.chunk, f.digests, &changed), "find_changed");
      kf.ms.push_back(ops.last_kernel_ms());
    });
    if (!changed.empty()) die("find_changed reports changes in unchanged memory");
    const double ratio = copy.gpu_ms / snap.gpu_ms, kms = kt.median_ms(o.reps);
    std::printf(
        "%-10s %-7d %7.3f (%5.0f GB/s) %7.3f (%5.0f GB/s) %-7.3f %7.3f ms        %-7.3f %7.3f "
        "(%5.0f GB/s rd)\n",
        kreplay::format_bytes(size).c_str(), o.regions, copy.gpu_ms, gbps(size, copy.gpu_ms),
        snap.gpu_ms, gbps(size, snap.gpu_ms), ratio, kms, copy.gpu_ms / kms, scan.gpu_ms,
        gbps(size, scan.gpu_ms));
    std::printf("%-10s %-7s wall: copy %.3f ms, snapshot %.3f ms; find_changed kernel %.3f ms\n",
                "", "", copy.wall_ms, snap.wall_ms, kf.median_ms(o.reps));
    g_summary.push_back(
        {fmt::format("snapshot {} / cuMemcpyDtoD throughput", kreplay::format_bytes(size)),
         fmt::format("{:.3f}  (target >= 0.90; {:.3f} vs {:.3f} ms); kernel alone {:.3f}", ratio,
                     snap.gpu_ms, copy.gpu_ms, copy.gpu_ms / kms)});
    if (o.sweep) {
      // Launch geometry and the digest copy-out split (MemoryOps::Tuning); the first row is the
      // default.
      struct Knobs {
        uint32_t unroll, per_sm;
        uint64_t split_min;
        uint32_t split_shift;
      };
      const MemoryOps::Tuning def;
      for (Knobs k : {Knobs{def.unroll, def.blocks_per_sm, def.split_min_chunks, def.split_shift},
                      Knobs{8, 2, 0, 4}, Knobs{8, 2, def.split_min_chunks, 3},
                      Knobs{8, 3, def.split_min_chunks, 4}, Knobs{4, 2, def.split_min_chunks, 4},
                      Knobs{4, 4, def.split_min_chunks, 4}}) {
        MemoryOps::Tuning t;
        t.unroll = k.unroll;
        t.blocks_per_sm = k.per_sm;
        t.split_min_chunks = k.split_min;
        t.split_shift = k.split_shift;
        ops.set_tuning(t);
        KernelTimes ks;
        auto [c2, ts] = measure_pair(timer, o.reps, bench_stream, copy_fn, ops_stream, [&] {
          ok(ops.snapshot(f.regions, o.chunk, f.digests), "snapshot");
          ks.ms.push_back(ops.last_kernel_ms());
        });
        std::printf(
            "   sweep unroll %u blocks/SM %s split %s: snapshot %.3f ms (ratio %.3f), kernel %.3f "
            "ms (ratio %.3f)\n",
            k.unroll, k.per_sm ? std::to_string(k.per_sm).c_str() : "max",
            k.split_min ? fmt::format("copy-out at progress points >= {} chunks, up to 1-1/{}",
                                      k.split_min, 1u << k.split_shift)
                              .c_str()
                        : "off",
            ts.gpu_ms, c2.gpu_ms / ts.gpu_ms, ks.median_ms(o.reps),
            c2.gpu_ms / ks.median_ms(o.reps));
      }
      ops.set_tuning({});
      verify_equal(ops, f, "after the sweep");
    }
    release(ops, f);
  }
  if (o.pinned != 0) {
    Footprint f = make_footprint(ops, o.pinned, 1, o.chunk, StorageTier::kPinnedHost, 200);
    ok(ops.snapshot(f.regions, o.chunk, f.digests), "snapshot");
    verify_equal(ops, f, "after pinned snapshot");
    const int reps = std::min(o.reps, 3);
    auto [copy, snap] = measure_pair(
        timer, reps, bench_stream,
        [&] {
          CU(drv::api().cuMemcpyDtoHAsync(reinterpret_cast<void*>(f.storage.handle), f.live[0],
                                          o.pinned, bench_stream));
        },
        ops_stream, [&] { ok(ops.snapshot(f.regions, o.chunk, f.digests), "snapshot"); });
    std::printf("%-10s pinned  DtoH %7.3f (%5.1f GB/s) %7.3f (%5.1f GB/s) %-7.3f\n",
                kreplay::format_bytes(o.pinned).c_str(), copy.gpu_ms, gbps(o.pinned, copy.gpu_ms),
                snap.gpu_ms, gbps(o.pinned, snap.gpu_ms), copy.gpu_ms / snap.gpu_ms);
    g_summary.push_back(
        {fmt::format("snapshot {} to pinned host / cuMemcpyDtoH", kreplay::format_bytes(o.pinned)),
         fmt::format("{:.3f}  ({:.3f} vs {:.3f} ms)", copy.gpu_ms / snap.gpu_ms, snap.gpu_ms,
                     copy.gpu_ms)});
    release(ops, f);
  }
}

// Chunk indices of a pattern of `changed` bytes: one contiguous run in the middle, or whole
// chunks spread evenly over the footprint.
std::vector<uint64_t> pattern_chunks(const Footprint& f, uint64_t chunk, uint64_t changed,
                                     bool strided) {
  const uint64_t n = std::min(f.chunks, (changed + chunk - 1) / chunk);
  std::vector<uint64_t> out;
  if (!strided) {
    const uint64_t first = (f.chunks - n) / 2;
    for (uint64_t i = 0; i < n; ++i) out.push_back(first + i);
  } else {
    for (uint64_t i = 0; i < n; ++i) out.push_back(i * f.chunks / n);
  }
  return out;
}

// Overwrite the listed chunks with new random bytes (what "a kernel wrote them" leaves behind).
void dirty(MemoryOps& ops, const Footprint& f, uint64_t chunk, const std::vector<uint64_t>& chunks,
           uint64_t seed) {
  size_t r = 0;
  for (size_t i = 0; i < chunks.size();) {
    // Merge runs of consecutive chunks into one fill.
    size_t j = i + 1;
    while (j < chunks.size() && chunks[j] == chunks[j - 1] + 1) ++j;
    uint64_t first = chunks[i], end = chunks[j - 1] + 1;
    while (first < end) {
      while (f.regions[r].first_chunk + kreplay::device::chunk_count(f.regions[r].size, chunk) <=
             first)
        ++r;
      const auto& reg = f.regions[r];
      const uint64_t reg_end = reg.first_chunk + kreplay::device::chunk_count(reg.size, chunk);
      const uint64_t stop = std::min(end, reg_end);
      const uint64_t off = (first - reg.first_chunk) * chunk;
      const uint64_t len = std::min(reg.size, (stop - reg.first_chunk) * chunk) - off;
      ok(ops.fill_random(reg.live + off, len, seed++), "fill_random");
      first = stop;
    }
    i = j;
  }
}

struct RestoreResult {
  double find_ms = 0, restore_ms = 0, restore_wall_ms = 0, snapshot_ms = 0;
};

RestoreResult restore_section(MemoryOps& ops, const Options& o, Timer& timer, CUstream bench_stream,
                              CUstream ops_stream, Footprint& f) {
  const uint64_t R = o.restore_footprint, C = std::min(o.changed, R);
  std::printf("\n== restore after a kernel wrote %s of a %s footprint (chunk %s) ==\n",
              kreplay::format_bytes(C).c_str(), kreplay::format_bytes(R).c_str(),
              kreplay::format_bytes(o.chunk).c_str());
  f = make_footprint(ops, R, o.regions, o.chunk, StorageTier::kDevice, 300);
  RestoreResult result;
  result.snapshot_ms = measure(timer, ops_stream, o.reps, [&] {
                         ok(ops.snapshot(f.regions, o.chunk, f.digests), "snapshot");
                       }).gpu_ms;
  verify_equal(ops, f, "after snapshot");
  Stats copy_c =
      measure(timer, bench_stream, o.reps, [&] { copy_range(f, R / 2, C, bench_stream); });
  Stats copy_all = measure(timer, bench_stream, o.reps, [&] { copy_range(f, 0, R, bench_stream); });
  std::printf(
      "copy ceiling: cuMemcpyDtoD of %s %.3f ms gpu (%.3f wall), of the whole %s %.3f ms gpu\n"
      "ratio = kreplay restore call / copy of the changed bytes (interleaved); kernel = kernel "
      "alone / copy\n",
      kreplay::format_bytes(C).c_str(), copy_c.gpu_ms, copy_c.wall_ms,
      kreplay::format_bytes(R).c_str(), copy_all.gpu_ms);
  std::printf("%-11s %-7s %-20s %-20s %-15s %-20s %-7s %-7s\n", "pattern", "chunks",
              "find_changed ms", "restore call ms", "restore kernel", "restore wall ms", "ratio",
              "kernel");
  for (bool strided : {false, true}) {
    auto chunks = pattern_chunks(f, o.chunk, C, strided);
    dirty(ops, f, o.chunk, chunks, 400);
    std::vector<uint64_t> changed;
    Stats find = measure(timer, ops_stream, o.reps, [&] {
      changed.clear();
      ok(ops.find_changed(f.regions, o.chunk, f.digests, &changed), "find_changed");
    });
    if (changed != chunks)
      die(fmt::format("find_changed found {} chunks, expected {}", changed.size(), chunks.size()));
    // The first restore uploads the list; later ones (the engine's passes 2..N) reuse it.
    Sample first =
        timer.run(ops_stream, [&] { ok(ops.restore(f.regions, o.chunk, changed), "restore"); });
    verify_equal(ops, f, "after restore");
    KernelTimes kr;
    auto [copy_p, rest] = measure_pair(
        timer, o.reps, bench_stream, [&] { copy_range(f, R / 2, C, bench_stream); }, ops_stream,
        [&] {
          ok(ops.restore(f.regions, o.chunk, changed), "restore");
          kr.ms.push_back(ops.last_kernel_ms());
        });
    dirty(ops, f, o.chunk, chunks, 500);
    ok(ops.restore(f.regions, o.chunk, changed), "restore");
    verify_equal(ops, f, "after restore");
    const double ratio = rest.gpu_ms / copy_p.gpu_ms, kms = kr.median_ms(o.reps);
    std::printf(
        "%-11s %-7zu %7.3f (%5.0f GB/s) %7.3f (%5.0f GB/s) %7.3f ms     %7.3f (first %.3f) %-7.3f "
        "%-7.3f\n",
        strided ? "strided" : "contiguous", chunks.size(), find.gpu_ms, gbps(R, find.gpu_ms),
        rest.gpu_ms, gbps(C, rest.gpu_ms), kms, rest.wall_ms, first.wall_ms, ratio,
        kms / copy_p.gpu_ms);
    copy_c = copy_p;
    g_summary.push_back(
        {fmt::format("restore {} ({}) / cuMemcpyDtoD {}", kreplay::format_bytes(C),
                     strided ? "strided chunks" : "contiguous", kreplay::format_bytes(C)),
         fmt::format("{:.3f}  (target <= 2.0; {:.3f} vs {:.3f} ms; wall {:.3f} vs {:.3f}); "
                     "kernel alone {:.3f}",
                     ratio, rest.gpu_ms, copy_c.gpu_ms, rest.wall_ms, copy_c.wall_ms,
                     kms / copy_c.gpu_ms)});
    g_summary.push_back({fmt::format("find_changed over {} ({})", kreplay::format_bytes(R),
                                     strided ? "strided" : "contiguous"),
                         fmt::format("{:.3f} ms  ({:.0f} GB/s read; {:.2f}x a full {} copy)",
                                     find.gpu_ms, gbps(R, find.gpu_ms),
                                     find.gpu_ms / copy_all.gpu_ms, kreplay::format_bytes(R))});
    if (!strided) {
      result.find_ms = find.gpu_ms;
      result.restore_ms = rest.gpu_ms;
      result.restore_wall_ms = rest.wall_ms;
    }
  }
  return result;
}

void checkpoint_section(MemoryOps& ops, const Options& o, Timer& timer, CUstream ops_stream,
                        Footprint& f, const RestoreResult& k) {
#if KREPLAY_BENCH_CHECKPOINT
  using namespace NV::Cupti::Checkpoint;
  const uint64_t R = o.restore_footprint, C = std::min(o.changed, R);
  std::printf("\n== CUPTI checkpoint (OPT_NONE, device-backed) of the same %s footprint ==\n",
              kreplay::format_bytes(R).c_str());
  // The checkpoint saves every allocation of the context: free kreplay's storage first, so it
  // sees the live footprint (plus kreplay's few MiB of buffers), as an application would.
  ops.free_storage(f.storage);
  f.storage = {};
  const auto& cu = drv::api();
  CUcontext ctx = ops.context();
  CUpti_Checkpoint cp{};
  cp.structSize = CUpti_Checkpoint_STRUCT_SIZE;
  cp.ctx = ctx;
  cp.allowOverwrite = 1;
  cp.optimizations = CUPTI_CHECKPOINT_OPT_NONE;
  auto wall = [&](auto&& fn) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    CU(cu.cuCtxSynchronize());
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  auto check = [](CUptiResult r, const char* what) {
    if (r != CUPTI_SUCCESS)
      die(fmt::format("{} returned CUPTI error {}", what, static_cast<int>(r)));
  };
  const double first_save = wall([&] { check(cuptiCheckpointSave(&cp), "cuptiCheckpointSave"); });
  std::vector<double> saves, restores;
  for (int i = 0; i < o.reps; ++i)
    saves.push_back(wall([&] { check(cuptiCheckpointSave(&cp), "cuptiCheckpointSave"); }));
  auto chunks = pattern_chunks(f, o.chunk, C, false);
  for (int i = 0; i < o.reps + 1; ++i) {
    dirty(ops, f, o.chunk, chunks, 600 + i);
    double ms = wall([&] { check(cuptiCheckpointRestore(&cp), "cuptiCheckpointRestore"); });
    if (i > 0) restores.push_back(ms);  // the first one is the warm-up
  }
  // Restored? The live memory must have the digests of kreplay's snapshot again.
  std::vector<uint64_t> changed;
  ok(ops.find_changed(f.regions, o.chunk, f.digests, &changed), "find_changed");
  if (!changed.empty())
    die(fmt::format("the checkpoint restore left {} chunks changed", changed.size()));
  check(cuptiCheckpointFree(&cp), "cuptiCheckpointFree");
  const double save = median(saves), restore = median(restores);
  std::printf(
      "save: first %.3f ms, then %.3f ms (wall); restore after %s changed: %.3f ms (wall)\n",
      first_save, save, kreplay::format_bytes(C).c_str(), restore);
  std::printf(
      "kreplay: snapshot %.3f ms; find_changed %.3f ms + restore %.3f ms (gpu; restore wall "
      "%.3f)\n",
      k.snapshot_ms, k.find_ms, k.restore_ms, k.restore_wall_ms);
  g_summary.push_back(
      {fmt::format("checkpoint save {} / kreplay snapshot", kreplay::format_bytes(R)),
       fmt::format("{:.2f}x  ({:.3f} vs {:.3f} ms; first save {:.3f} ms)", save / k.snapshot_ms,
                   save, k.snapshot_ms, first_save)});
  g_summary.push_back({"checkpoint restore / kreplay restore (set known)",
                       fmt::format("{:.1f}x  ({:.3f} vs {:.3f} ms wall)",
                                   restore / k.restore_wall_ms, restore, k.restore_wall_ms)});
  g_summary.push_back(
      {"checkpoint restore / kreplay find_changed + restore",
       fmt::format("{:.2f}x  ({:.3f} vs {:.3f} ms)", restore / (k.find_ms + k.restore_ms), restore,
                   k.find_ms + k.restore_ms)});
  (void)timer;
  (void)ops_stream;
#else
  (void)ops;
  (void)o;
  (void)timer;
  (void)ops_stream;
  (void)f;
  (void)k;
  std::printf("\n(built without libcheckpoint: no CUPTI checkpoint comparison)\n");
#endif
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  ok(drv::init(), "CUDA driver");
  const auto& cu = drv::api();
  CUdevice dev = 0;
  CU(cu.cuDeviceGet(&dev, o.device));
  CUcontext ctx = nullptr;
  CU(cu.cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cu.cuCtxSetCurrent(ctx));
  char name[256] = {};
  CU(cu.cuDeviceGetName(name, sizeof(name) - 1, dev));
  int sms = 0;
  CU(cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  size_t free = 0, total = 0;
  CU(cu.cuMemGetInfo(&free, &total));
  std::printf(
      "device %d: %s, %d SMs, %s (%s free); chunk %s, %d region(s) per footprint, median of %d\n",
      o.device, name, sms, kreplay::format_bytes(total).c_str(),
      kreplay::format_bytes(free).c_str(), kreplay::format_bytes(o.chunk).c_str(), o.regions,
      o.reps);
  {
    auto created = MemoryOps::create(ctx, dev);
    ok(created.ok() ? Status::Ok() : created.status(), "MemoryOps::create");
    MemoryOps& ops = **created;
    auto ops_stream = ops.stream();
    ok(ops_stream.ok() ? Status::Ok() : ops_stream.status(), "MemoryOps::stream");
    CUstream bench_stream = nullptr;
    CU(cu.cuStreamCreate(&bench_stream, CU_STREAM_NON_BLOCKING));
    Timer timer;
    ops.set_kernel_timing(true);
    snapshot_section(ops, o, timer, bench_stream, *ops_stream);
    Footprint f;
    RestoreResult k = restore_section(ops, o, timer, bench_stream, *ops_stream, f);
    if (o.checkpoint) checkpoint_section(ops, o, timer, *ops_stream, f, k);
    release(ops, f);
    CU(cu.cuStreamDestroy(bench_stream));
  }
  std::printf("\n== summary ==\n");
  for (const auto& r : g_summary) std::printf("%-55s %s\n", r.name.c_str(), r.values.c_str());
  CU(cu.cuDevicePrimaryCtxRelease(dev));
  return 0;
}
