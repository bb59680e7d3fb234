// The host runtime's memory calls (see hostrt.hpp): allocations (plain, mapped, managed,
// untracked, stream-ordered from a pool), frees, copies and memsets.
//
// Range replay (docs/design.md, "Range replay"): a memset, a copy into device memory (from the
// same device or from host memory), a copy from device memory into plain host memory (with
// RangeOptions::join_host_reads; run on pass 0 only) and a device allocation or free do not close
// the open range
// (from another thread than the range's, only on a stream all threads share). Each memory operation
// asks Engine::range_memory_begin; when it joins, the call is submitted on its stream as pass 0 and
// a HostMemoryOp (the same work, with a host source's bytes captured at the call) is handed to the
// range, which submits it again on every later pass. An allocation is saved by the range as it is
// made (range_allocated); a free inside the range is deferred (range_defer_free): the block is
// neither released nor put back into the pool until the range's last pass ended, so no allocation
// made meanwhile can alias it.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "backends/host/hostrt_internal.hpp"
#include "common/logging.hpp"
#include "common/util.hpp"

namespace kreplay::hostrt {
using detail::Allocation;
using detail::PooledBlock;
using detail::rt;

namespace {

constexpr size_t kAlign = 256;

size_t rounded(size_t bytes) {
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

/// A memory operation recorded into a range: the work again on its stream.
class HostMemoryOp final : public device::MemoryOp {
 public:
  HostMemoryOp(std::shared_ptr<HostStream> stream, std::function<void()> work)
      : stream_(std::move(stream)), work_(std::move(work)) {}
  /// Submit to the stream (pass 0: the application's call; later passes: resubmit()).
  Status submit() {
    auto rec = std::make_shared<ExecRecord>();
    stream_->enqueue([work = work_, rec] {
      work();
      rec->finish();
    });
    last_ = std::move(rec);
    return Status::Ok();
  }
  Status resubmit() override { return submit(); }
  Status wait(uint64_t timeout_ms) override {
    if (!last_) return Error(KREPLAY_STATUS_ERROR_INTERNAL, "nothing was submitted");
    if (!last_->wait(timeout_ms))
      return Error(KREPLAY_STATUS_ERROR,
                   fmt::format("a memory operation did not complete within {} ms", timeout_ms));
    return Status::Ok();
  }

 private:
  std::shared_ptr<HostStream> stream_;
  std::function<void()> work_;
  std::shared_ptr<ExecRecord> last_;
};

/// The allocation holding @p p (its device, kind), or none (host memory).
bool allocation_of(const void* p, Allocation* out) {
  std::shared_lock lock(rt().mu_);
  auto it = rt().allocations_.upper_bound(reinterpret_cast<uintptr_t>(p));
  if (it == rt().allocations_.begin()) return false;
  --it;
  if (reinterpret_cast<uintptr_t>(p) >= it->first + it->second.size) return false;
  if (out != nullptr) *out = it->second;
  return true;
}

/// The device whose allocation holds @p p, or -1 (host memory).
int owner_of(const void* p) {
  Allocation a;
  return allocation_of(p, &a) ? a.device : -1;
}

int device_of(const void* p) {
  return std::max(owner_of(p), 0);
}

/// The devices a copy between @p dst and @p src involves: dst's (device 0 for host memory), and
/// src's when it is another device's allocation (a peer copy), in ascending order. A peer copy
/// is ordered after the work of both devices, like cudaMemcpyPeer.
std::vector<HostDevice*> copy_devices(const void* dst, const void* src, int stream_device = -1) {
  std::vector<int> ids{stream_device >= 0 ? stream_device : device_of(dst)};
  for (int d : {owner_of(dst), src != nullptr ? owner_of(src) : -1}) {
    if (d >= 0 && d != ids.front()) ids.push_back(d);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<HostDevice*> devs;
  for (int d : ids) devs.push_back(rt().device(d));
  return devs;
}

/// Guards the memory of every device in @p devs (in their order, so two copies cannot deadlock)
/// and, with @p drain, waits for their work.
Status guard_and_drain(const std::vector<HostDevice*>& devs,
                       std::vector<replay::Engine::MemoryGuard>* guards, bool drain,
                       const char* call) {
  for (HostDevice* dev : devs)
    guards->push_back(sdk::Runtime::get().engine().guard_memory(dev->agent, call));
  if (drain) {
    for (HostDevice* dev : devs) RETURN_IF_ERROR(dev->drain(UINT32_MAX));
  }
  return Status::Ok();
}

/// Device memory a range may hold: what a memory call inside one writes, allocates or frees.
bool range_memory_kind(kreplay_memory_kind_t kind) {
  return kind == KREPLAY_MEMORY_KIND_DEVICE || kind == KREPLAY_MEMORY_KIND_POOL;
}

/// A memory operation on @p s (the application named it @p handle) that writes [dst, dst + bytes):
/// offered to the open range.
/// With @p capture, @p src is host memory whose bytes are taken now. Returns true when the range
/// took it (then it ran, as pass 0, and the range holds its copy; with @p sync the call waited for
/// it); false when the caller goes on as for any memory call (a range that was open closed).
bool offer_to_range(replay::Engine::MemoryCall::Kind kind, const std::shared_ptr<HostStream>& s,
                    Stream handle, void* dst, const void* src, size_t bytes,
                    std::function<void()> work, bool sync, const char* call) {
  auto& engine = sdk::Runtime::get().engine();
  HostDevice* dev = rt().device(s->device());
  replay::Engine::MemoryCall op;
  op.kind = kind;
  op.stream = handle;  // as the application named it, like a launch's (kPerThreadStream too)
  op.dst = reinterpret_cast<uint64_t>(dst);
  op.src = reinterpret_cast<uint64_t>(src);
  op.bytes = bytes;
  op.call = call;
  const auto join = engine.range_memory_begin(dev->agent, op);
  if (join == replay::Engine::MemoryJoin::kNone) return false;
  auto recorded = std::make_unique<HostMemoryOp>(s, std::move(work));
  (void)recorded->submit();  // pass 0, the application's own
  if (sync) (void)recorded->wait(UINT32_MAX);
  engine.range_memory_done(
      dev->agent, true,
      join == replay::Engine::MemoryJoin::kRecord ? std::move(recorded) : nullptr);
  return true;
}

/// Frees @p ptr now: the inventory stops tracking it, then the memory goes (a pool block back
/// into the pool, where @p stream may take it at once and another stream once @p stream got
/// there).
void release_now(void* ptr, const Allocation& a, HostDevice* dev, Stream stream) {
  if (a.tracked) {
    sdk::Runtime::get().on_free(dev->agent, reinterpret_cast<uint64_t>(ptr));
  } else {
    dev->add_untracked(-static_cast<int64_t>(a.size));
  }
  if (a.kind == KREPLAY_MEMORY_KIND_POOL && stream != 0) {
    auto reached = std::make_shared<std::atomic<bool>>(false);
    if (auto s = rt().stream(stream)) {
      s->enqueue([reached] { reached->store(true); });
    } else {
      reached->store(true);
    }
    std::unique_lock lock(rt().mu_);
    rt().allocations_[reinterpret_cast<uintptr_t>(ptr)].pooled = true;
    rt().pool_.push_back({ptr, a.size, a.device, stream, std::move(reached)});
    return;
  }
  {
    std::unique_lock lock(rt().mu_);
    rt().allocations_.erase(reinterpret_cast<uintptr_t>(ptr));
  }
  std::free(ptr);
  dev->unreserve(a.size);
}

Result<void*> allocate(size_t bytes, int device, bool tracked,
                       kreplay_memory_kind_t kind = KREPLAY_MEMORY_KIND_DEVICE,
                       const char* call = "hostrt::malloc") {
  ASSIGN_OR_RETURN(HostDevice * dev, rt().checked_device(device));
  auto& engine = sdk::Runtime::get().engine();
  // Device memory stays inside an open range (saved below); memory the host sees without a call,
  // or that kreplay does not track, closes it.
  if (tracked && range_memory_kind(kind)) {
    engine.range_allocation_begin(dev->agent, call);
  } else {
    engine.range_barrier(dev->agent, KREPLAY_RANGE_CLOSE_MEMORY, call);
  }
  if (bytes == 0) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "allocation of 0 bytes");
  // kreplay never takes the application's memory: its snapshot storage goes first (an open
  // range's entry state lives there: the range closes before).
  if (!dev->reserve(bytes)) {
    // Closing the range also runs its deferred frees and gives back what it saved.
    engine.range_barrier(dev->agent, KREPLAY_RANGE_CLOSE_MEMORY, call);
    if (!dev->reserve(bytes) &&
        (!engine.release_storage_for_application(dev->agent) || !dev->reserve(bytes))) {
      return Error(KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES,
                   fmt::format("host device {} is out of memory ({} requested)", device,
                               format_bytes(bytes)));
    }
  }
  void* p = std::aligned_alloc(kAlign, rounded(bytes));
  if (p == nullptr) {
    dev->unreserve(bytes);
    return Error(KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES, "host allocation failed");
  }
  {
    std::unique_lock lock(rt().mu_);
    rt().allocations_[reinterpret_cast<uintptr_t>(p)] = {bytes, device, tracked, kind, false};
  }
  if (tracked) {
    sdk::Runtime::get().on_allocate(dev->agent, reinterpret_cast<uint64_t>(p), bytes, kind);
    if (range_memory_kind(kind))
      engine.range_allocated(dev->agent, reinterpret_cast<uint64_t>(p), bytes, call);
  } else {
    dev->add_untracked(static_cast<int64_t>(bytes));
  }
  return p;
}

}  // namespace

Result<void*> malloc(size_t bytes, int device) {
  return allocate(bytes, device, true);
}
Result<void*> malloc_untracked(size_t bytes, int device) {
  return allocate(bytes, device, false);
}
Result<void*> malloc_host_mapped(size_t bytes, int device) {
  return allocate(bytes, device, true, KREPLAY_MEMORY_KIND_HOST_MAPPED);
}

Result<void*> malloc_managed(size_t bytes, int device) {
  return allocate(bytes, device, true, KREPLAY_MEMORY_KIND_MANAGED);
}

Result<void*> malloc_async(size_t bytes, Stream stream) {
  RETURN_IF_ERROR(rt().ensure());
  auto s = rt().stream(stream);
  if (!s) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown stream");
  if (bytes == 0) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "allocation of 0 bytes");
  HostDevice* dev = rt().device(s->device());
  auto& engine = sdk::Runtime::get().engine();
  engine.range_allocation_begin(dev->agent, "hostrt::malloc_async");
  void* p = nullptr;
  {
    // Stream-ordered reuse: a block freed on this stream at once, on another once reached.
    std::unique_lock lock(rt().mu_);
    auto& pool = rt().pool_;
    auto it = std::find_if(pool.begin(), pool.end(), [&](const PooledBlock& b) {
      return b.device == s->device() && rounded(b.size) == rounded(bytes) &&
             (b.stream == stream || b.reached->load());
    });
    if (it != pool.end()) {
      p = it->ptr;
      Allocation& a = rt().allocations_[reinterpret_cast<uintptr_t>(p)];
      a.pooled = false;
      a.size = bytes;
      pool.erase(it);
    }
  }
  if (p == nullptr) {
    return allocate(bytes, s->device(), true, KREPLAY_MEMORY_KIND_POOL, "hostrt::malloc_async");
  }
  sdk::Runtime::get().on_allocate(dev->agent, reinterpret_cast<uint64_t>(p), bytes,
                                  KREPLAY_MEMORY_KIND_POOL);
  engine.range_allocated(dev->agent, reinterpret_cast<uint64_t>(p), bytes, "hostrt::malloc_async");
  return p;
}

namespace {

Status free_impl(void* ptr, Stream stream, const char* call) {
  RETURN_IF_ERROR(rt().ensure());
  if (ptr == nullptr) return Status::Ok();
  Allocation a;
  {
    std::shared_lock lock(rt().mu_);
    auto it = rt().allocations_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == rt().allocations_.end() || it->second.pooled)
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   "free of a pointer hostrt did not allocate");
    a = it->second;
  }
  if (stream != 0 && a.kind != KREPLAY_MEMORY_KIND_POOL)
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 "free_async of memory malloc_async did not give");
  HostDevice* dev = rt().device(a.device);
  auto& engine = sdk::Runtime::get().engine();
  if (a.tracked && range_memory_kind(a.kind) &&
      engine.range_defer_free(
          dev->agent, reinterpret_cast<uint64_t>(ptr),
          [ptr, a, dev, stream] { release_now(ptr, a, dev, stream); }, call)) {
    return Status::Ok();  // after the range's last pass
  }
  auto guard = engine.guard_memory(dev->agent, call);
  // Like cudaFree, work using it completes first; a stream-ordered free is ordered on its stream.
  if (stream == 0) RETURN_IF_ERROR(dev->drain(UINT32_MAX));
  release_now(ptr, a, dev, stream);
  return Status::Ok();
}

}  // namespace

Status free(void* ptr) {
  return free_impl(ptr, 0, "hostrt::free");
}

Status free_async(void* ptr, Stream stream) {
  if (!rt().stream(stream)) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown stream");
  return free_impl(ptr, stream, "hostrt::free_async");
}

namespace {

/// What a copy from @p src into @p dst is for a range: into device memory from the same device
/// or from host memory hostrt did not allocate; anything else (into host memory, between
/// devices, from mapped or managed memory) is no memory call a range can hold (nullopt).
std::optional<replay::Engine::MemoryCall::Kind> copy_kind(const void* dst, const void* src,
                                                          int device) {
  Allocation d, s;
  if (!allocation_of(dst, &d) || d.device != device || !range_memory_kind(d.kind)) return {};
  if (!allocation_of(src, &s)) return replay::Engine::MemoryCall::Kind::kCopyHostToDevice;
  if (s.device != device || !range_memory_kind(s.kind)) return {};
  return replay::Engine::MemoryCall::Kind::kCopyDeviceToDevice;
}

/// The device a copy from @p src into @p dst reads when it is a copy to the host a range may hold
/// (RangeOptions::join_host_reads): from device memory into host memory hostrt did not allocate.
std::optional<int> host_read_device(const void* dst, const void* src) {
  Allocation d, s;
  if (allocation_of(dst, &d) || !allocation_of(src, &s) || !range_memory_kind(s.kind)) return {};
  return s.device;
}

/// The copy's work. From host memory the bytes are taken now (as CUDA stages pageable memory),
/// so the host may reuse its buffer at once; every later pass of a range copies the same bytes.
std::function<void()> copy_work(void* dst, const void* src, size_t bytes, bool capture) {
  if (!capture) return [dst, src, bytes] { std::memcpy(dst, src, bytes); };
  auto staged = std::make_shared<std::vector<std::byte>>(bytes);
  std::memcpy(staged->data(), src, bytes);
  return [dst, staged] { std::memcpy(dst, staged->data(), staged->size()); };
}

}  // namespace

Status memcpy(void* dst, const void* src, size_t bytes) {
  RETURN_IF_ERROR(rt().ensure());
  // Into device memory: stream-ordered on the device's default stream, waited for.
  const int device = device_of(dst);
  if (auto kind = copy_kind(dst, src, device)) {
    auto s = rt().stream(default_stream(device));
    const bool host = *kind == replay::Engine::MemoryCall::Kind::kCopyHostToDevice;
    if (s && offer_to_range(*kind, s, default_stream(device), dst, src, bytes,
                            copy_work(dst, src, bytes, host), true, "hostrt::memcpy"))
      return Status::Ok();
  } else if (auto from = host_read_device(dst, src)) {
    auto s = rt().stream(default_stream(*from));
    if (s && offer_to_range(replay::Engine::MemoryCall::Kind::kCopyDeviceToHost, s,
                            default_stream(*from), dst, src, bytes,
                            copy_work(dst, src, bytes, false), true, "hostrt::memcpy"))
      return Status::Ok();
  }
  std::vector<replay::Engine::MemoryGuard> guards;
  RETURN_IF_ERROR(guard_and_drain(copy_devices(dst, src), &guards, true, "hostrt::memcpy"));
  std::memcpy(dst, src, bytes);
  return Status::Ok();
}

Status memset(void* dst, int value, size_t bytes) {
  RETURN_IF_ERROR(rt().ensure());
  const int device = device_of(dst);
  Allocation a;
  if (allocation_of(dst, &a) && range_memory_kind(a.kind)) {
    auto s = rt().stream(default_stream(device));
    if (s &&
        offer_to_range(
            replay::Engine::MemoryCall::Kind::kMemset, s, default_stream(device), dst, nullptr,
            bytes, [dst, value, bytes] { std::memset(dst, value, bytes); }, true, "hostrt::memset"))
      return Status::Ok();
  }
  HostDevice* dev = rt().device(device);
  auto guard = sdk::Runtime::get().engine().guard_memory(dev->agent, "hostrt::memset");
  RETURN_IF_ERROR(dev->drain(UINT32_MAX));
  std::memset(dst, value, bytes);
  return Status::Ok();
}

Status memset_async(void* dst, int value, size_t bytes, Stream stream) {
  RETURN_IF_ERROR(rt().ensure());
  auto s = rt().stream(stream);
  if (!s) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown stream");
  auto work = [dst, value, bytes] { std::memset(dst, value, bytes); };
  Allocation a;
  if (allocation_of(dst, &a) && a.device == s->device() && range_memory_kind(a.kind) &&
      offer_to_range(replay::Engine::MemoryCall::Kind::kMemset, s, stream, dst, nullptr, bytes,
                     work, false, "hostrt::memset_async"))
    return Status::Ok();
  std::vector<replay::Engine::MemoryGuard> guards;
  RETURN_IF_ERROR(guard_and_drain(copy_devices(dst, nullptr, s->device()), &guards, false,
                                  "hostrt::memset_async"));
  s->enqueue(work);
  return Status::Ok();
}

Status memcpy_async(void* dst, const void* src, size_t bytes, Stream stream) {
  RETURN_IF_ERROR(rt().ensure());
  auto s = rt().stream(stream);
  if (!s) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "unknown stream");
  const bool from_host = owner_of(src) < 0;
  if (auto kind = copy_kind(dst, src, s->device())) {
    if (offer_to_range(*kind, s, stream, dst, src, bytes, copy_work(dst, src, bytes, from_host),
                       false, "hostrt::memcpy_async"))
      return Status::Ok();
  } else if (host_read_device(dst, src) == s->device() &&
             offer_to_range(replay::Engine::MemoryCall::Kind::kCopyDeviceToHost, s, stream, dst,
                            src, bytes, copy_work(dst, src, bytes, false), false,
                            "hostrt::memcpy_async")) {
    return Status::Ok();
  }
  std::vector<replay::Engine::MemoryGuard> guards;
  const auto devs = copy_devices(dst, src, s->device());
  RETURN_IF_ERROR(guard_and_drain(devs, &guards, devs.size() > 1, "hostrt::memcpy_async"));
  // Into host memory the copy writes when the stream gets there; from it, staged now.
  s->enqueue(copy_work(dst, src, bytes, from_host && owner_of(dst) >= 0));
  // A peer copy runs on this stream's worker but reads or writes another device's memory, whose
  // windows do not drain this stream: it completes before the guards are let go.
  if (devs.size() > 1) s->wait_idle(UINT32_MAX);
  return Status::Ok();
}

}  // namespace kreplay::hostrt
