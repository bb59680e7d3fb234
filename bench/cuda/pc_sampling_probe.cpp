// pc_sampling_probe: does CUPTI's PC sampling still collect on a context after the range profiler
// counted there? kreplay's PC-sampling pass collected nothing in runs with counter passes (issue
// 11), while a probe that only enabled and disabled the range profiler sampled normally. This one
// runs whole counter collections (configure, begin, every pass with a launch, decode, values)
// between PC-sampled launches, as kreplay's counter passes do.
//
//   pc_sampling_probe STEP...
//     pc          PC-sample one launch of a hot FFMA kernel the way kreplay's pass does (enable,
//                 configure kernel-serialized with start/stop control, start, launch, stop, read
//                 every PC, disable) and print how many samples it got
//     pcidle      the same, but with no launch between start and stop (what is left over?)
//     collect:M   one whole counter collection of metrics M (comma-separated) over the kernel on
//                 the context's range profiler (created if there is none)
//     drop        destroy the context's range profiler (cuptiRangeProfilerDisable), as kreplay's
//                 make_room does before a service's pass
//     sync        cuCtxSynchronize
//     cb:M        inside the ENTER callback of the application's next launch: collect:M, drop,
//                 pc, all inside that one callback
//     cbexit:M    the application's next launch counted with M (Start in its ENTER callback),
//                 then in its EXIT callback: Stop, decode, drop, pc (kreplay's counter pass 0
//                 and PC-sampling pass 1); cbexit: with no metrics is the same without counters
//     cbexitk:M   cbexit:M with another kernel launched after the decode, before the drop (as
//                 kreplay restores memory and flushes the caches between passes)
//     other       launch that other kernel
//     launch      launch the kernel (no PC sampling, no counters)
//     enable      enable and configure PC sampling and keep it so: later pc steps (and cbexit's)
//                 only Start, launch, Stop and read, as a tool that enables it once per context
//     disable     disable what enable kept
//     cbenable    enable as `enable` does, inside the ENTER callback of the application's next
//                 launch (where kreplay enables it)
//     cbboth:M    cbenable and cbexit:M on one launch: enabled, then counted, in one ENTER callback
//     newstream / hostalloc / events / alloc   what kreplay does on a context besides launches: a
//                 kernel on a stream of its own, pinned host memory, a launch between events, 1 GiB
//                 of device memory
//     memops      kreplay's memory module on the context (load, cache flush, fill, tiny launch)
//     memload     kreplay's memory module loaded on the context, none of its kernels run
//     reenable    disable and enable again what enable kept (no launch in between)
//     stallquery  the stall-reason query on the primary context (enable, read, disable)
//     offline:M   an offline CUPTI host for the device's chip, and a config image of metrics M
//     devsupported  cuptiProfilerDeviceSupported for the device (kreplay asks it before its first
//                 range profiler)
//     kernel=hot|stream  the kernel every later step launches: the hot FFMA loop (the default) or
//                 a memory-bound copy of 256 MiB (reads and writes global memory)
// PC_PROBE_ENABLE_AT_CREATE=1 enables PC sampling (as `enable` does, kept) inside the CUPTI
// resource callback of the context's creation, before any module is loaded there, as kreplay does.
// Prints one `pc_sampling_probe step=... samples=... status=...` line per step; a probe, not a
// test: it asserts nothing.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_pcsampling.h>
#include <cupti_profiler_target.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cuda/cupti/profiler_host.hpp"
#include "backends/cuda/cupti/range_profiler.hpp"
#include "backends/cuda/cupti/service_catalog.hpp"
#include "backends/cuda/memory/memory_ops.hpp"

// pc_sampling_probe_kernel.cu: a hot FFMA loop, 264 x 256 threads.
void pc_sampling_probe_launch(float* out);
void pc_sampling_probe_other(float* out);
void pc_sampling_probe_stream(const void* in, void* out, size_t n4);
void pc_sampling_probe_other_on(float* out, cudaStream_t stream);

namespace {

const char* cupti_name(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s ? s : "?";
}

float* g_out = nullptr;
void* g_stream_in = nullptr;
void* g_stream_out = nullptr;
constexpr size_t kStreamBytes = size_t{256} << 20;
bool g_stream_kernel = false;                        // kernel=stream
std::unique_ptr<kreplay::cuda::MemoryOps> g_memops;  // memops
void launch() {
  if (g_stream_kernel) {
    pc_sampling_probe_stream(g_stream_in, g_stream_out, kStreamBytes / 16);
  } else {
    pc_sampling_probe_launch(g_out);
  }
}

struct Sampled {
  uint64_t samples = 0;
  uint64_t pcs = 0;
  uint64_t dropped = 0;
  std::string status = "ok";
};

uint64_t add(CUpti_PCSamplingData& d, Sampled& s) {
  uint64_t n = 0;
  for (size_t i = 0; i < d.totalNumPcs && i < d.collectNumPcs; ++i) {
    ++s.pcs;
    for (size_t k = 0; k < d.pPcData[i].stallReasonCount; ++k)
      n += d.pPcData[i].stallReason[k].samples;
  }
  s.dropped += d.droppedSamples;
  s.samples += n;
  d.totalNumPcs = 0;
  return n;
}

struct Buf {
  CUpti_PCSamplingData data{};
  std::vector<CUpti_PCSamplingPCData> pcs;
  std::vector<CUpti_PCSamplingStallReason> reasons;
  Buf(size_t n, size_t r) : pcs(n), reasons(n * r) {
    data.size = sizeof(data);
    data.collectNumPcs = n;
    data.pPcData = pcs.data();
    for (size_t i = 0; i < n; ++i) {
      pcs[i].size = sizeof(CUpti_PCSamplingPCData);
      pcs[i].stallReason = &reasons[i * r];
    }
  }
};

// PC sampling enabled and configured on the context (kreplay's begin_pass before Start), with the
// buffers it was configured with. `enable` keeps one for later steps; `pc` makes its own.
struct Enabled {
  std::unique_ptr<Buf> config, read;
};
std::unique_ptr<Enabled> g_kept;  // enable ... disable

void pc_disable(CUcontext ctx) {
  CUpti_PCSamplingDisableParams dis{};
  dis.size = CUpti_PCSamplingDisableParamsSize;
  dis.ctx = ctx;
  cuptiPCSamplingDisable(&dis);
}

std::unique_ptr<Enabled> pc_enable(CUcontext ctx, std::string& status) {
  CUpti_PCSamplingEnableParams en{};
  en.size = CUpti_PCSamplingEnableParamsSize;
  en.ctx = ctx;
  if (CUptiResult r = cuptiPCSamplingEnable(&en); r != CUPTI_SUCCESS) {
    status = std::string("cuptiPCSamplingEnable: ") + cupti_name(r);
    return nullptr;
  }
  // The stall reasons, as kreplay's service asks for them.
  auto reasons = kreplay::cupti::pc_stall_reasons(ctx);
  std::vector<uint32_t> idx;
  if (reasons.ok()) {
    for (const auto& r : *reasons) idx.push_back(r.index);
  }
  const size_t num = idx.size();
  auto e = std::make_unique<Enabled>();
  e->config = std::make_unique<Buf>(4096, num);
  e->read = std::make_unique<Buf>(4096, num);
  std::vector<CUpti_PCSamplingConfigurationInfo> attrs(5);
  attrs[0].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
  attrs[0].attributeData.collectionModeData.collectionMode =
      CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED;
  attrs[1].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL;
  attrs[1].attributeData.enableStartStopControlData.enableStartStopControl = 1;
  attrs[2].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT;
  attrs[2].attributeData.outputDataFormatData.outputDataFormat =
      CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
  attrs[3].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
  attrs[3].attributeData.samplingDataBufferData.samplingDataBuffer = &e->config->data;
  attrs[4].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON;
  attrs[4].attributeData.stallReasonData.stallReasonCount = num;
  attrs[4].attributeData.stallReasonData.pStallReasonIndex = idx.data();
  CUpti_PCSamplingConfigurationInfoParams cfg{};
  cfg.size = CUpti_PCSamplingConfigurationInfoParamsSize;
  cfg.ctx = ctx;
  cfg.numAttributes = attrs.size();
  cfg.pPCSamplingConfigurationInfo = attrs.data();
  if (CUptiResult r = cuptiPCSamplingSetConfigurationAttribute(&cfg); r != CUPTI_SUCCESS) {
    pc_disable(ctx);
    status = std::string("cuptiPCSamplingSetConfigurationAttribute: ") + cupti_name(r);
    return nullptr;
  }
  return e;
}

// Start, the launch, Stop and every PC on an enabled context.
Sampled pc_collect(CUcontext ctx, Enabled& e, bool with_launch) {
  Sampled s;
  CUpti_PCSamplingStartParams start{};
  start.size = CUpti_PCSamplingStartParamsSize;
  start.ctx = ctx;
  if (CUptiResult r = cuptiPCSamplingStart(&start); r != CUPTI_SUCCESS) {
    s.status = std::string("cuptiPCSamplingStart: ") + cupti_name(r);
    return s;
  }
  if (with_launch) {
    launch();
    cuCtxSynchronize();
  }
  CUpti_PCSamplingStopParams stop{};
  stop.size = CUpti_PCSamplingStopParamsSize;
  stop.ctx = ctx;
  if (CUptiResult r = cuptiPCSamplingStop(&stop); r != CUPTI_SUCCESS) s.status = cupti_name(r);
  for (int calls = 0; calls < 1000; ++calls) {
    CUpti_PCSamplingGetDataParams get{};
    get.size = CUpti_PCSamplingGetDataParamsSize;
    get.ctx = ctx;
    get.pcSamplingData = &e.read->data;
    if (CUptiResult r = cuptiPCSamplingGetData(&get); r != CUPTI_SUCCESS) {
      s.status = std::string("cuptiPCSamplingGetData: ") + cupti_name(r);
      break;
    }
    const size_t got = e.read->data.totalNumPcs;
    add(e.read->data, s);
    if (e.read->data.remainingNumPcs == 0 && (e.config->data.totalNumPcs == 0 || got == 0)) break;
  }
  return s;
}

// One PC-sampled launch as kreplay's pass takes it: enable, configure, collect, disable (or, after
// `enable`, only collect).
Sampled pc_sample(CUcontext ctx, bool with_launch) {
  if (g_kept) return pc_collect(ctx, *g_kept, with_launch);
  Sampled s;
  std::unique_ptr<Enabled> e = pc_enable(ctx, s.status);
  if (!e) return s;
  s = pc_collect(ctx, *e, with_launch);
  pc_disable(ctx);
  add(e->config->data, s);
  return s;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string m; std::getline(in, m, ',');) out.push_back(m);
  return out;
}

kreplay::Status collect(CUcontext ctx, std::unique_ptr<kreplay::cupti::RangeProfiler>& rp,
                        const std::string& metrics, uint64_t& passes, uint64_t& first_value) {
  if (!rp) {
    auto made = kreplay::cupti::RangeProfiler::create(ctx);
    if (!made.ok()) return made.status();
    rp = std::move(made).value();
  }
  // As kreplay's counter passes: configure only when the set changes (a version that configured
  // the same set again for a second collection died with SIGSEGV on the H200; not looked into).
  if (rp->metrics() != split(metrics))
    RETURN_IF_ERROR(rp->configure(split(metrics), kreplay::cupti::RangeMode::kAuto, 1));
  RETURN_IF_ERROR(rp->begin());
  for (int pass = 0; pass < 64; ++pass) {
    RETURN_IF_ERROR(rp->start());
    launch();
    auto stopped = rp->stop();
    if (!stopped.ok()) return stopped.status();
    ++passes;
    if (stopped->all_passes_submitted) break;
  }
  auto d = rp->decode();
  if (!d.ok()) return d.status();
  auto v = rp->values();
  if (!v.ok()) return v.status();
  if (!v->empty() && !v->front().values.empty()) first_value = (uint64_t)v->front().values[0];
  return kreplay::Status::Ok();
}

struct CallbackRun {
  CUcontext ctx;
  std::unique_ptr<kreplay::cupti::RangeProfiler>* rp;
  std::string metrics;
  bool done;
  Sampled sampled;
  std::string status;
};
CallbackRun g_cb;

bool g_enable_mode = false;  // cbenable
bool g_exit_mode = false;    // cbexit: counters on the application's launch, PC in its EXIT
bool g_exit_other = false;   // cbexitk: another kernel between the collection and the drop
int g_depth = 0;
std::string g_collection = "none";  // cbexit: how the counted launch's collection went

void CUPTIAPI on_api(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || g_cb.done) return;
  if (cbid != CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel &&
      cbid != CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz &&
      cbid != CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx &&
      cbid != CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz)
    return;
  if (g_enable_mode) {
    // cbenable: PC sampling enabled (and kept) inside the application's launch's ENTER callback,
    // as kreplay's prepare does; cbboth: then that launch counted and PC-sampled as cbexit.
    if (info->callbackSite == CUPTI_API_ENTER && !g_kept && g_depth == 0) {
      std::string status = "ok";
      g_kept = pc_enable(g_cb.ctx, status);
      g_cb.status = status;
    }
    if (!g_exit_mode) {
      g_cb.done = true;
      return;
    }
  }
  if (g_exit_mode) {
    if (g_depth > 0) return;  // our own launches inside the callbacks
    ++g_depth;
    if (info->callbackSite == CUPTI_API_ENTER && !g_cb.metrics.empty()) {
      // The application's own launch is the counted one (kreplay's pass 0).
      if (!*g_cb.rp) {
        auto made = kreplay::cupti::RangeProfiler::create(g_cb.ctx);
        if (made.ok()) *g_cb.rp = std::move(made).value();
      }
      kreplay::Status s =
          *g_cb.rp ? (*g_cb.rp)->configure(split(g_cb.metrics), kreplay::cupti::RangeMode::kAuto, 1)
                   : kreplay::Status(kreplay::Error(KREPLAY_STATUS_ERROR, "no rp"));
      if (s.ok()) s = (*g_cb.rp)->begin();
      if (s.ok()) s = (*g_cb.rp)->start();
      g_collection = s.ok() ? "started" : "start failed: " + s.message();
    } else if (info->callbackSite == CUPTI_API_EXIT) {
      g_cb.done = true;
      cuCtxSynchronize();
      if (*g_cb.rp) {
        // Say what the collection gave, so that a PC count after it is known to follow one.
        auto stopped = (*g_cb.rp)->stop();
        if (!stopped.ok()) {
          g_collection = "stop failed: " + stopped.status().message();
        } else if (!stopped->all_passes_submitted) {
          g_collection = "stopped with passes to go";
        } else if (auto d = (*g_cb.rp)->decode(); !d.ok()) {
          g_collection = "decode failed: " + d.status().message();
        } else if (auto v = (*g_cb.rp)->values(); !v.ok() || v->empty()) {
          g_collection = "no values";
        } else {
          g_collection =
              "value " + std::to_string(v->front().values.empty() ? 0.0 : v->front().values[0]);
        }
        if (g_exit_other) {
          pc_sampling_probe_other(g_out);
          cuCtxSynchronize();
        }
        g_cb.rp->reset();
      }
      g_cb.sampled = pc_sample(g_cb.ctx, true);  // a relaunch inside the EXIT callback
      g_cb.status = g_cb.sampled.status + " (collection: " + g_collection + ")";
    }
    --g_depth;
    return;
  }
  if (info->callbackSite != CUPTI_API_ENTER) return;
  g_cb.done = true;  // the launches below call back too
  uint64_t passes = 0, value = 0;
  kreplay::Status s = collect(g_cb.ctx, *g_cb.rp, g_cb.metrics, passes, value);
  if (!s.ok()) {
    g_cb.status = s.message();
    return;
  }
  g_cb.rp->reset();
  g_cb.sampled = pc_sample(g_cb.ctx, true);
  g_cb.status = g_cb.sampled.status + " (collected " + std::to_string(passes) + " passes)";
}

std::string g_create_status = "not called";
void CUPTIAPI on_resource(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RESOURCE || cbid != CUPTI_CBID_RESOURCE_CONTEXT_CREATED || g_kept)
    return;
  const auto* r = static_cast<const CUpti_ResourceData*>(data);
  g_create_status = "ok";
  g_kept = pc_enable(r->context, g_create_status);
}

}  // namespace

int main(int argc, char** argv) {
  CUpti_SubscriberHandle create_sub = nullptr;
  if (const char* at = std::getenv("PC_PROBE_ENABLE_AT_CREATE"); at && *at == '1') {
    if (cuptiSubscribe(&create_sub, on_resource, nullptr) == CUPTI_SUCCESS) {
      cuptiEnableCallback(1, create_sub, CUPTI_CB_DOMAIN_RESOURCE,
                          CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
    } else {
      g_create_status = "cuptiSubscribe failed";
    }
  }
  cudaSetDevice(0);
  cudaMalloc(reinterpret_cast<void**>(&g_out), 264 * 256 * sizeof(float));
  cudaMalloc(&g_stream_in, kStreamBytes);
  cudaMalloc(&g_stream_out, kStreamBytes);
  cudaMemset(g_stream_in, 0, kStreamBytes);
  launch();  // load the module, make the context
  cudaDeviceSynchronize();
  CUcontext ctx = nullptr;
  cuCtxGetCurrent(&ctx);
  if (std::getenv("PC_PROBE_ENABLE_AT_CREATE")) {
    if (create_sub) cuptiUnsubscribe(create_sub);  // the cb steps subscribe again
    std::printf("pc_sampling_probe step=0:enable_at_create samples=0 pcs=0 dropped_or_value=0 "
                "status=%s\n",
                g_create_status.c_str());
  }
  std::unique_ptr<kreplay::cupti::RangeProfiler> rp;
  for (int i = 1; i < argc; ++i) {
    const std::string step = argv[i];
    std::string status = "ok";
    uint64_t samples = 0, pcs = 0, dropped = 0;
    if (step == "pc" || step == "pcidle") {
      Sampled s = pc_sample(ctx, step == "pc");
      samples = s.samples;
      pcs = s.pcs;
      dropped = s.dropped;
      status = s.status;
    } else if (step.rfind("collect:", 0) == 0) {
      kreplay::Status run = collect(ctx, rp, step.substr(8), samples, dropped);
      if (!run.ok()) status = run.message();
    } else if (step.rfind("cb:", 0) == 0 || step.rfind("cbexit", 0) == 0 || step == "cbenable" ||
               step.rfind("cbboth:", 0) == 0) {
      g_enable_mode = step == "cbenable" || step.rfind("cbboth:", 0) == 0;
      g_exit_mode = step.rfind("cbexit", 0) == 0 || step.rfind("cbboth:", 0) == 0;
      g_exit_other = step.rfind("cbexitk:", 0) == 0;
      // Inside the ENTER callback of the application's next launch: collect, drop, PC-sample a
      // relaunch (as kreplay's counter pass, make_room and PC-sampling pass do).
      g_cb = {ctx, &rp, step.substr(step.find(':') + 1), false, {}, "not called"};
      CUpti_SubscriberHandle sub = nullptr;
      if (cuptiSubscribe(&sub, on_api, nullptr) != CUPTI_SUCCESS) {
        status = "cuptiSubscribe failed";
      } else {
        cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
        launch();
        cuCtxSynchronize();
        cuptiUnsubscribe(sub);
        samples = g_cb.sampled.samples;
        pcs = g_cb.sampled.pcs;
        status = g_cb.status;
      }
    } else if (step == "memops") {
      // kreplay's own memory module on the context: loaded, its flush, fill and tiny kernels run.
      CUdevice dev = 0;
      cuCtxGetDevice(&dev);
      auto ops = kreplay::cuda::MemoryOps::create(ctx, dev);
      kreplay::Status ms = ops.ok() ? (*ops)->init() : ops.status();
      if (ms.ok()) ms = (*ops)->flush_caches();
      if (ms.ok()) ms = (*ops)->fill_random(reinterpret_cast<CUdeviceptr>(g_out), 4096, 1);
      if (ms.ok()) ms = (*ops)->tiny_launch();
      if (!ms.ok()) status = ms.message();
      if (ops.ok()) g_memops = std::move(ops).value();  // kept, as kreplay keeps its own
    } else if (step == "memload") {
      CUdevice dev = 0;
      cuCtxGetDevice(&dev);
      auto ops = kreplay::cuda::MemoryOps::create(ctx, dev);
      kreplay::Status ms = ops.ok() ? (*ops)->init() : ops.status();
      if (!ms.ok()) status = ms.message();
      if (ops.ok()) g_memops = std::move(ops).value();
    } else if (step == "reenable") {
      if (!g_kept) {
        status = "nothing enabled";
      } else {
        pc_disable(ctx);
        g_kept = pc_enable(ctx, status);
      }
    } else if (step == "stallquery") {
      // What the PC-sampling service's metrics() does before any pass: enable on the primary
      // context, read the stall reasons, disable.
      auto r = kreplay::cupti::pc_stall_reasons_of_device(0);
      if (!r.ok()) status = r.status().message();
    } else if (step.rfind("offline:", 0) == 0) {
      // The offline host kreplay builds counter configs with at start (no counter availability).
      auto chip = kreplay::cupti::ProfilerHost::device_chip_name(0);
      auto host =
          chip.ok() ? kreplay::cupti::ProfilerHost::shared(*chip)
                    : kreplay::Result<std::shared_ptr<kreplay::cupti::ProfilerHost>>(chip.status());
      if (!host.ok()) {
        status = host.status().message();
      } else if (auto cfg = (*host)->build_config(split(step.substr(8))); !cfg.ok()) {
        status = cfg.status().message();
      }
    } else if (step == "devsupported") {
      CUdevice dev = 0;
      cuCtxGetDevice(&dev);
      kreplay::Status ds = kreplay::cupti::RangeProfiler::device_supported(dev);
      if (!ds.ok()) status = ds.message();
    } else if (step == "newstream") {
      CUstream st = nullptr;
      cuStreamCreate(&st, CU_STREAM_NON_BLOCKING);
      pc_sampling_probe_other_on(g_out, st);
      cuStreamSynchronize(st);
    } else if (step == "hostalloc") {
      void* h = nullptr;
      cuMemHostAlloc(&h, 1 << 20, 0);
    } else if (step == "events") {
      CUevent a = nullptr, b = nullptr;
      cuEventCreate(&a, 0);
      cuEventCreate(&b, 0);
      cuEventRecord(a, nullptr);
      launch();
      cuEventRecord(b, nullptr);
      cuEventSynchronize(b);
    } else if (step == "alloc") {
      CUdeviceptr d = 0;
      cuMemAlloc(&d, size_t{1} << 30);
    } else if (step == "launch") {
      launch();
      cuCtxSynchronize();
    } else if (step == "enable") {
      g_kept = pc_enable(ctx, status);
    } else if (step == "disable") {
      pc_disable(ctx);
      g_kept.reset();
    } else if (step == "kernel=hot" || step == "kernel=stream") {
      g_stream_kernel = step == "kernel=stream";
    } else if (step == "other") {
      pc_sampling_probe_other(g_out);
    } else if (step == "drop") {
      rp.reset();
    } else if (step == "sync") {
      cuCtxSynchronize();
    } else {
      std::printf("pc_sampling_probe: unknown step %s\n", step.c_str());
      return 2;
    }
    // For collect: samples = passes run, dropped = the first metric's value.
    std::printf(
        "pc_sampling_probe step=%d:%s samples=%llu pcs=%llu dropped_or_value=%llu status=%s\n", i,
        step.c_str(), (unsigned long long)samples, (unsigned long long)pcs,
        (unsigned long long)dropped, status.c_str());
    std::fflush(stdout);
  }
  return 0;
}
