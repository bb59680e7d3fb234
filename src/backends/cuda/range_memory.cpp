// See range_memory.hpp.
#include "backends/cuda/range_memory.hpp"

#include <cuda.h>
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/interception.hpp"
#include "backends/cuda/internal_guard.hpp"
#include "backends/cuda/range_calls.hpp"
#include "common/logging.hpp"
#include "common/util.hpp"
#include "replay/engine.hpp"
#include "sdk/runtime.hpp"

namespace kreplay::cuda::range_memory {
namespace {

using Kind = replay::Engine::MemoryCall::Kind;

/// A memory operation as the application called it, decoded from CUPTI's parameters.
struct Op {
  Kind kind = Kind::kMemset;
  unsigned element = 1;       ///< memset: 1, 2 or 4 bytes per element
  unsigned value = 0;         ///< memset: the element's value
  CUdeviceptr dst = 0;
  CUdeviceptr src = 0;        ///< device copy
  /// Host copy: the application's buffer (read at ENTER only); a copy to the host: where it goes.
  const void* host = nullptr;
  size_t count = 0;           ///< elements (memset) or bytes (copy) of one row
  size_t pitch = 0, height = 1;  ///< 2D memsets (height 1 otherwise)
  CUstream stream = nullptr;
  bool sync = false;          ///< the synchronous form (the application's thread waits)

  /// Bytes from dst the operation may write.
  uint64_t extent() const {
    const uint64_t row = static_cast<uint64_t>(count) * (kind == Kind::kMemset ? element : 1);
    return height <= 1 ? row : static_cast<uint64_t>(pitch) * (height - 1) + row;
  }
};

/// A memory operation recorded into a range: the same call again, asynchronous on its stream,
/// followed by an event the range waits for.
class CudaMemoryOp final : public device::MemoryOp {
 public:
  CudaMemoryOp(const Op& op, CUcontext ctx, std::vector<std::byte> captured)
      : op_(op), ctx_(ctx), captured_(std::move(captured)) {}
  ~CudaMemoryOp() override {
    if (done_ != nullptr) {
      InternalScope internal;
      cuEventDestroy(done_);
    }
  }
  /// After the application's call returned: mark where its work ends on the stream (pass 0).
  Status mark_done() {
    InternalScope internal;
    if (done_ == nullptr) KR_CU(cuEventCreate(&done_, CU_EVENT_DISABLE_TIMING));
    KR_CU(cuEventRecord(done_, op_.stream));
    return Status::Ok();
  }
  Status resubmit() override {
    InternalScope internal;
    // The range's later passes run on the thread that made the call; should it have switched
    // contexts meanwhile, the operation still runs in its own.
    CUcontext current = nullptr;
    cuCtxGetCurrent(&current);
    const bool push = ctx_ != nullptr && current != ctx_;
    if (push) KR_CU(cuCtxPushCurrent(ctx_));
    Status s = submit();
    if (push) {
      CUcontext popped = nullptr;
      cuCtxPopCurrent(&popped);
    }
    return s;
  }
  Status wait(uint64_t timeout_ms) override {
    if (done_ == nullptr) return Error(KREPLAY_STATUS_ERROR_INTERNAL, "nothing was submitted");
    InternalScope internal;
    const uint64_t deadline = now_ns() + timeout_ms * 1000000ull;
    unsigned spins = 0;
    while (true) {
      CUresult r = cuEventQuery(done_);
      if (r == CUDA_SUCCESS) return Status::Ok();
      if (r != CUDA_ERROR_NOT_READY) return cu_error(r, "cuEventQuery");
      if (now_ns() > deadline)
        return Error(KREPLAY_STATUS_ERROR,
                     fmt::format("a memory operation did not complete within {} ms", timeout_ms));
      if (++spins > 256) std::this_thread::sleep_for(std::chrono::microseconds(10));
    }
  }

 private:
  Status submit() {
    const Op& o = op_;
    if (o.kind == Kind::kMemset && o.height > 1) {
      switch (o.element) {
        case 1:
          KR_CU(cuMemsetD2D8Async(o.dst, o.pitch, static_cast<unsigned char>(o.value), o.count,
                                  o.height, o.stream));
          break;
        case 2:
          KR_CU(cuMemsetD2D16Async(o.dst, o.pitch, static_cast<unsigned short>(o.value), o.count,
                                   o.height, o.stream));
          break;
        default:
          KR_CU(cuMemsetD2D32Async(o.dst, o.pitch, o.value, o.count, o.height, o.stream));
          break;
      }
    } else if (o.kind == Kind::kMemset) {
      switch (o.element) {
        case 1:
          KR_CU(cuMemsetD8Async(o.dst, static_cast<unsigned char>(o.value), o.count, o.stream));
          break;
        case 2:
          KR_CU(cuMemsetD16Async(o.dst, static_cast<unsigned short>(o.value), o.count, o.stream));
          break;
        default:
          KR_CU(cuMemsetD32Async(o.dst, o.value, o.count, o.stream));
          break;
      }
    } else if (o.kind == Kind::kCopyDeviceToDevice) {
      KR_CU(cuMemcpyDtoDAsync(o.dst, o.src, o.count, o.stream));
    } else if (o.kind == Kind::kCopyDeviceToHost) {
      // The application's pass only (RangeMemop::repeats): the host holds what it read.
    } else {
      // From the bytes captured at the application's call (pageable: the driver stages them
      // before it returns; they stay with this object until the range closes).
      KR_CU(cuMemcpyHtoDAsync(o.dst, captured_.data(), captured_.size(), o.stream));
    }
    KR_CU(cuEventRecord(done_, o.stream));
    return Status::Ok();
  }

  Op op_;
  CUcontext ctx_ = nullptr;
  std::vector<std::byte> captured_;
  CUevent done_ = nullptr;
};

// What a 1D and a 2D memset share: destination, element, value, stream, sync.
template <typename P>
Op memset_op(const P* p, unsigned element, bool async, bool per_thread) {
  Op o;
  o.kind = Kind::kMemset;
  o.element = element;
  o.dst = p->dstDevice;
  if constexpr (requires { p->uc; }) o.value = p->uc;
  if constexpr (requires { p->us; }) o.value = p->us;
  if constexpr (requires { p->ui; }) o.value = p->ui;
  if constexpr (requires { p->hStream; }) o.stream = p->hStream;
  o.stream = interception::stream_of(o.stream, per_thread);
  o.sync = !async;
  return o;
}

template <typename P>
Op memset1d(const void* params, unsigned element, bool async, bool per_thread) {
  auto* p = static_cast<const P*>(params);
  Op o = memset_op(p, element, async, per_thread);
  o.count = p->N;
  return o;
}

template <typename P>
Op memset2d(const void* params, unsigned element, bool async, bool per_thread) {
  auto* p = static_cast<const P*>(params);
  Op o = memset_op(p, element, async, per_thread);
  o.pitch = p->dstPitch;
  o.count = p->Width;
  o.height = p->Height;
  return o;
}

template <typename P>
Op copy(const void* params, Kind kind, bool async, bool per_thread) {
  auto* p = static_cast<const P*>(params);
  Op o;
  o.kind = kind;
  if constexpr (requires { p->srcHost; }) {
    o.dst = p->dstDevice;
    o.host = p->srcHost;
  } else if constexpr (requires { p->dstHost; }) {
    o.host = p->dstHost;
    o.src = p->srcDevice;
  } else if constexpr (requires { p->srcDevice; }) {
    o.dst = p->dstDevice;
    o.src = p->srcDevice;
  } else {
    o.dst = p->dst;  // cuMemcpy, cuMemcpyAsync: unified addressing, classified by the caller
    o.src = p->src;
  }
  o.count = p->ByteCount;
  if constexpr (requires { p->hStream; }) o.stream = p->hStream;
  o.stream = interception::stream_of(o.stream, per_thread);
  o.sync = !async;
  return o;
}

#define KR_CBID(name) CUPTI_DRIVER_TRACE_CBID_##name

/// The operation of a call a range may hold, or nullopt.
std::optional<Op> decode(CUpti_CallbackId cbid, const void* p) {
  // joinable_call asks without parameters: decode zeros (every parameter struct here is smaller).
  alignas(16) static const unsigned char kNoParams[256] = {};
  if (p == nullptr) p = kNoParams;
  switch (cbid) {
    case KR_CBID(cuMemsetD8_v2): return memset1d<cuMemsetD8_v2_params>(p, 1, false, false);
    case KR_CBID(cuMemsetD8_v2_ptds): return memset1d<cuMemsetD8_v2_ptds_params>(p, 1, false, true);
    case KR_CBID(cuMemsetD16_v2): return memset1d<cuMemsetD16_v2_params>(p, 2, false, false);
    case KR_CBID(cuMemsetD16_v2_ptds): return memset1d<cuMemsetD16_v2_ptds_params>(p, 2, false, true);
    case KR_CBID(cuMemsetD32_v2): return memset1d<cuMemsetD32_v2_params>(p, 4, false, false);
    case KR_CBID(cuMemsetD32_v2_ptds): return memset1d<cuMemsetD32_v2_ptds_params>(p, 4, false, true);
    case KR_CBID(cuMemsetD8Async): return memset1d<cuMemsetD8Async_params>(p, 1, true, false);
    case KR_CBID(cuMemsetD8Async_ptsz): return memset1d<cuMemsetD8Async_ptsz_params>(p, 1, true, true);
    case KR_CBID(cuMemsetD16Async): return memset1d<cuMemsetD16Async_params>(p, 2, true, false);
    case KR_CBID(cuMemsetD16Async_ptsz): return memset1d<cuMemsetD16Async_ptsz_params>(p, 2, true, true);
    case KR_CBID(cuMemsetD32Async): return memset1d<cuMemsetD32Async_params>(p, 4, true, false);
    case KR_CBID(cuMemsetD32Async_ptsz): return memset1d<cuMemsetD32Async_ptsz_params>(p, 4, true, true);
    case KR_CBID(cuMemsetD2D8_v2): return memset2d<cuMemsetD2D8_v2_params>(p, 1, false, false);
    case KR_CBID(cuMemsetD2D8_v2_ptds): return memset2d<cuMemsetD2D8_v2_ptds_params>(p, 1, false, true);
    case KR_CBID(cuMemsetD2D16_v2): return memset2d<cuMemsetD2D16_v2_params>(p, 2, false, false);
    case KR_CBID(cuMemsetD2D16_v2_ptds): return memset2d<cuMemsetD2D16_v2_ptds_params>(p, 2, false, true);
    case KR_CBID(cuMemsetD2D32_v2): return memset2d<cuMemsetD2D32_v2_params>(p, 4, false, false);
    case KR_CBID(cuMemsetD2D32_v2_ptds): return memset2d<cuMemsetD2D32_v2_ptds_params>(p, 4, false, true);
    case KR_CBID(cuMemsetD2D8Async): return memset2d<cuMemsetD2D8Async_params>(p, 1, true, false);
    case KR_CBID(cuMemsetD2D8Async_ptsz): return memset2d<cuMemsetD2D8Async_ptsz_params>(p, 1, true, true);
    case KR_CBID(cuMemsetD2D16Async): return memset2d<cuMemsetD2D16Async_params>(p, 2, true, false);
    case KR_CBID(cuMemsetD2D16Async_ptsz): return memset2d<cuMemsetD2D16Async_ptsz_params>(p, 2, true, true);
    case KR_CBID(cuMemsetD2D32Async): return memset2d<cuMemsetD2D32Async_params>(p, 4, true, false);
    case KR_CBID(cuMemsetD2D32Async_ptsz): return memset2d<cuMemsetD2D32Async_ptsz_params>(p, 4, true, true);
    case KR_CBID(cuMemcpyDtoD_v2): return copy<cuMemcpyDtoD_v2_params>(p, Kind::kCopyDeviceToDevice, false, false);
    case KR_CBID(cuMemcpyDtoD_v2_ptds): return copy<cuMemcpyDtoD_v2_ptds_params>(p, Kind::kCopyDeviceToDevice, false, true);
    case KR_CBID(cuMemcpyDtoDAsync_v2): return copy<cuMemcpyDtoDAsync_v2_params>(p, Kind::kCopyDeviceToDevice, true, false);
    case KR_CBID(cuMemcpyDtoDAsync_v2_ptsz): return copy<cuMemcpyDtoDAsync_v2_ptsz_params>(p, Kind::kCopyDeviceToDevice, true, true);
    case KR_CBID(cuMemcpyHtoD_v2): return copy<cuMemcpyHtoD_v2_params>(p, Kind::kCopyHostToDevice, false, false);
    case KR_CBID(cuMemcpyHtoD_v2_ptds): return copy<cuMemcpyHtoD_v2_ptds_params>(p, Kind::kCopyHostToDevice, false, true);
    case KR_CBID(cuMemcpyHtoDAsync_v2): return copy<cuMemcpyHtoDAsync_v2_params>(p, Kind::kCopyHostToDevice, true, false);
    case KR_CBID(cuMemcpyHtoDAsync_v2_ptsz): return copy<cuMemcpyHtoDAsync_v2_ptsz_params>(p, Kind::kCopyHostToDevice, true, true);
    case KR_CBID(cuMemcpyDtoH_v2): return copy<cuMemcpyDtoH_v2_params>(p, Kind::kCopyDeviceToHost, false, false);
    case KR_CBID(cuMemcpyDtoH_v2_ptds): return copy<cuMemcpyDtoH_v2_ptds_params>(p, Kind::kCopyDeviceToHost, false, true);
    case KR_CBID(cuMemcpyDtoHAsync_v2): return copy<cuMemcpyDtoHAsync_v2_params>(p, Kind::kCopyDeviceToHost, true, false);
    case KR_CBID(cuMemcpyDtoHAsync_v2_ptsz): return copy<cuMemcpyDtoHAsync_v2_ptsz_params>(p, Kind::kCopyDeviceToHost, true, true);
    case KR_CBID(cuMemcpy): return copy<cuMemcpy_params>(p, Kind::kCopyDeviceToDevice, false, false);
    case KR_CBID(cuMemcpy_ptds): return copy<cuMemcpy_ptds_params>(p, Kind::kCopyDeviceToDevice, false, true);
    case KR_CBID(cuMemcpyAsync): return copy<cuMemcpyAsync_params>(p, Kind::kCopyDeviceToDevice, true, false);
    case KR_CBID(cuMemcpyAsync_ptsz): return copy<cuMemcpyAsync_ptsz_params>(p, Kind::kCopyDeviceToDevice, true, true);
    default: return std::nullopt;
  }
}

bool unified(CUpti_CallbackId cbid) {
  return cbid == KR_CBID(cuMemcpy) || cbid == KR_CBID(cuMemcpy_ptds) ||
         cbid == KR_CBID(cuMemcpyAsync) || cbid == KR_CBID(cuMemcpyAsync_ptsz);
}

// Copies to the host join only with KREPLAY_RANGE_HOST_READS=join (RangeOptions::join_host_reads;
// not yet run on a GPU).
bool host_reads() { return sdk::Runtime::get().engine().range_options().join_host_reads; }

/// cuMemcpy and cuMemcpyAsync name no direction: a source the inventory tracks is device memory
/// (the engine checks its kind), one the driver does not know is pageable host memory; any other
/// (untracked device or registered memory) is no copy a range can hold. From device memory into
/// pageable host memory it is a copy to the host, asked about only when those may join.
bool classify_unified(uint64_t agent, Op& o) {
  replay::Region g;
  InternalScope internal;
  unsigned type = 0;
  if (sdk::Runtime::get().inventory().find(agent, o.src, &g)) {
    if (host_reads() && !sdk::Runtime::get().inventory().find(agent, o.dst, &g) &&
        cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, o.dst) ==
            CUDA_ERROR_INVALID_VALUE) {
      o.kind = Kind::kCopyDeviceToHost;
      o.host = reinterpret_cast<const void*>(o.dst);
      o.dst = 0;
    }
    return true;
  }
  CUresult r = cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, o.src);
  if (r != CUDA_ERROR_INVALID_VALUE) return false;
  o.kind = Kind::kCopyHostToDevice;
  o.host = reinterpret_cast<const void*>(o.src);
  o.src = 0;
  return true;
}

}  // namespace

// As on the host device: memory calls join ranges unless KREPLAY_RANGE_MEMORY=close (on an H100
// the GPU suite, the framework programs, NVIDIA's cuda-samples, Thrust, CUB and PyTorch training
// pass in range replay with them joining: bench/RESULTS.md, seventeenth to nineteenth sessions).
bool enabled() { return replay::default_range_join_memory(); }

bool joinable_call(CUpti_CallbackId cbid) {
  if (!enabled()) return false;
  switch (cbid) {
    case KR_CBID(cuMemAlloc_v2):
    case KR_CBID(cuMemAllocPitch_v2):
    case KR_CBID(cuMemAllocAsync):
    case KR_CBID(cuMemAllocAsync_ptsz):
    case KR_CBID(cuMemAllocFromPoolAsync):
    case KR_CBID(cuMemAllocFromPoolAsync_ptsz):
    case KR_CBID(cuMemFree_v2):  // range_free.cpp defers it or closes the range
    case KR_CBID(cuMemFreeAsync):
    case KR_CBID(cuMemFreeAsync_ptsz):
      return true;
    default: {
      const std::optional<Op> op = decode(cbid, nullptr);
      return op && (op->kind != Kind::kCopyDeviceToHost || host_reads());
    }
  }
}

bool call_enter(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  if (!enabled() || !range_calls::range_mode()) return false;
  std::optional<Op> op = decode(cbid, cb->functionParams);
  if (!op) return false;
  CudaDevice* dev = interception::device_of_context(cb->context);
  if (dev == nullptr) return false;
  // Into a stream being captured the call becomes a graph node and runs nothing now.
  if (interception::capture_status(op->stream)) return false;
  if (unified(cbid) && !classify_unified(dev->agent, *op)) return false;
  if (op->kind == Kind::kCopyDeviceToHost && !host_reads()) return false;
  replay::Engine::MemoryCall call;
  call.kind = op->kind;
  call.stream = reinterpret_cast<uint64_t>(op->stream);
  call.dst = op->kind == Kind::kCopyDeviceToHost ? reinterpret_cast<uint64_t>(op->host) : op->dst;
  call.bytes = op->kind == Kind::kMemset ? op->extent() : op->count;
  call.src = op->kind == Kind::kCopyHostToDevice ? reinterpret_cast<uint64_t>(op->host) : op->src;
  call.call = cb->functionName;
  auto& engine = sdk::Runtime::get().engine();
  const auto join = engine.range_memory_begin(dev->agent, call);
  if (join == replay::Engine::MemoryJoin::kNone) return false;
  // Joined: the range is held until EXIT. The host bytes are taken now, before the call: the
  // application may reuse its buffer as soon as the call returns.
  std::unique_ptr<CudaMemoryOp> recorded;
  if (join == replay::Engine::MemoryJoin::kRecord) {
    std::vector<std::byte> captured;
    if (op->kind == Kind::kCopyHostToDevice) {
      captured.resize(op->count);
      if (op->count > 0) std::memcpy(captured.data(), op->host, op->count);
    }
    recorded = std::make_unique<CudaMemoryOp>(*op, cb->context, std::move(captured));
  }
  auto* inflight = new interception::InFlight();  // NOLINT: released at EXIT
  inflight->device = dev;
  const uint64_t agent = dev->agent;
  // (std::function needs a copyable callable: the recorded copy travels as a raw pointer, owned
  // again at EXIT, which CUPTI delivers exactly once after an ENTER.)
  inflight->on_exit = [agent, raw = recorded.release()](bool ok) {
    std::unique_ptr<CudaMemoryOp> op(raw);
    if (ok && op != nullptr && !op->mark_done().ok()) op.reset();  // the range then closes
    sdk::Runtime::get().engine().range_memory_done(agent, ok, std::move(op));
  };
  *cb->correlationData = reinterpret_cast<uint64_t>(inflight);
  return true;
}

}  // namespace kreplay::cuda::range_memory
