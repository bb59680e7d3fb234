// What the CUDA backend's three per-pass services (pc_sampling.cpp, sass_metrics.cpp,
// pm_sampling.cpp) share: a per-launch holder for what a pass collected, the cubins kept for
// SASS-to-source correlation, and the one rule for telling a CUPTI failure caused by the
// counters' range profiler (SERVICE_CONFLICT) from the others.
//
// SASS metrics and PM sampling enable their CUPTI API in begin_pass and disable it in end_pass,
// so nothing of it is on during another pass of the same launch: CUPTI says its profiling API
// sets cannot be mixed, and the counter passes run the range profiler on the same context. PC
// sampling is the exception: it stays enabled on each context from its creation (pc_sampling.cpp
// says why) and is enabled afresh before the counters or PM sampling begin. end_pass also reads
// the data (PC sampling and SASS metrics lose what is unread when disabled); flush only hands it
// over.
//
// The range profiler is the exception: it stays enabled on the context between counter passes
// (re-enabling costs ~170 ms). When SASS metrics' enable fails while it is there, the service
// asks the counters to give it up (yield_counters) and tries once more. PC sampling and PM
// sampling do not fail next to it in a way that can be caught at enable (PC sampling enables,
// then collects nothing; PM sampling's Start is refused as HARDWARE_BUSY), so they ask first
// (make_room). When the counters cannot give it up (the launch is midway through a counter
// collection) or it does not help, the pass's status is SERVICE_CONFLICT, saying that the
// service could not start next to the counters.
//
// Threading (service.hpp): one launch's passes run on one thread; several launches may run on
// several threads, so the per-launch holder and the cubin store take a mutex.
#pragma once

#include <cuda.h>
#include <cupti_result.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "device/service.hpp"

namespace kreplay::cuda {

class CudaDevice;
class CudaLaunch;

namespace services {

/// What one pass collected, kept from end_pass to flush, per launch.
class PassSamples {
 public:
  void put(const device::Launch& launch, std::vector<device::ServiceSample> samples);
  /// What end_pass kept for @p launch (empty when nothing), and forget it.
  std::vector<device::ServiceSample> take(const device::Launch& launch);

 private:
  std::mutex mu_;
  std::unordered_map<const device::Launch*, std::vector<device::ServiceSample>> by_launch_;
};

/// What a service armed for a launch in begin_pass, until end_pass takes it back.
template <class T>
class ArmedPasses {
 public:
  void put(const device::Launch& launch, std::unique_ptr<T> armed) {
    std::lock_guard lock(mu_);
    by_launch_[&launch] = std::move(armed);
  }
  /// What begin_pass armed for @p launch, and forget it; nullptr when it armed nothing.
  std::unique_ptr<T> take(const device::Launch& launch) {
    std::lock_guard lock(mu_);
    auto it = by_launch_.find(&launch);
    if (it == by_launch_.end()) return nullptr;
    std::unique_ptr<T> armed = std::move(it->second);
    by_launch_.erase(it);
    return armed;
  }

 private:
  std::mutex mu_;
  std::unordered_map<const device::Launch*, std::unique_ptr<T>> by_launch_;
};

/// The CUDA launch behind @p launch and its current context; INTERNAL when it is not one.
Result<CudaLaunch*> cuda_launch(device::Launch& launch);
Result<CUcontext> current_context();

/// Status for a failed CUPTI call of @p service: SERVICE_CONFLICT when the device's counters hold
/// a range profiler on this context (the message says so and how to separate them), else as
/// cupti::cupti_status.
Status service_status(CUptiResult result, const char* call, const char* service, CudaDevice* dev);

/// After a failed enable: give up the counters' range profiler on this context, if it holds one
/// and @p launch is not midway through a counter collection, so the caller can enable once more
/// (CudaCounterBackend::yield_profiler). Says so once.
bool yield_counters(CudaDevice* dev, CudaLaunch& launch, const char* service);

/// Before enabling a service that collects nothing next to an enabled range profiler (PC
/// sampling: no sample; PM sampling: Start answers CUPTI_ERROR_HARDWARE_BUSY; both seen on the
/// H200 in runs with counters): give the counters' range profiler on this context up first, as
/// yield_counters does after a failure. SERVICE_CONFLICT when the counters hold it and cannot
/// give it up (the launch is midway through a counter collection: the service's pass sits
/// between counter passes), saying to move the pass; Ok otherwise.
Status make_room(CudaDevice* dev, CudaLaunch& launch, const char* service);

// ---- cubins, for the `sass` table ------------------------------------------------------------

/// Whether modules loaded now should be kept: some context configured PC sampling or SASS
/// metrics (the registry is frozen after configuration). Cubins are copies, so this keeps the
/// memory cost to runs that use them.
bool cubins_wanted();
/// Keep a copy of a loaded module's cubin (called from the module-loaded callback; no CUPTI call
/// there: cuptiGetCubinCrc inside module callbacks is reported to deadlock, so the CRC is computed
/// when a sample first asks for it).
void remember_cubin(uint32_t module_id, const void* cubin, size_t size);
void forget_cubin(uint32_t module_id);

struct SourceLine {
  std::string file;  ///< "dir/file.cu", "" when the cubin has no line info or is not known
  uint32_t line = 0;
};
/// Source of @p pc_offset in @p function of the cubin whose CRC is @p crc
/// (cuptiGetSassToSourceCorrelation; the cubin needs -lineinfo or -G). @p crc32_only: the caller
/// has only the low 32 bits (SASS metrics records). Cached per (crc, function, pc).
SourceLine source_line(uint64_t crc, bool crc32_only, const std::string& function,
                       uint64_t pc_offset);
/// Fill in source_file/source_line of every sample, whose function's cubin has CRC crcs[i].
/// CUPTI gives no instruction text: it comes from nvdisasm's listing of the cubin, made once per
/// module when first asked (disassembly.hpp; empty, said once, when there is no nvdisasm).
void add_sources(std::vector<device::ServiceSample>& samples, const std::vector<uint64_t>& crcs,
                 bool crc32_only);

/// The settings of @p kind of the first active SDK context that configured it; nullptr if none.
const device::ServiceSettings* configured_settings(kreplay_pass_service_kind_t kind);

/// A context of @p dev was created: when some tool configured PC sampling, enable it there now
/// (pc_sampling.cpp says why).
void pc_sampling_context_created(CudaDevice* dev, CUcontext ctx);
/// A module was loaded in @p ctx of @p dev (its resource callback; no CUPTI call is made there).
void pc_sampling_module_loaded(CudaDevice* dev, CUcontext ctx);
/// The counters are about to begin a collection pass on @p ctx, or PM sampling on the device
/// (@p ctx nullptr: every context): PC sampling, kept enabled there, is enabled afresh if it was
/// started or a module was loaded since (pc_sampling.cpp says why).
void pc_sampling_ready_for_profiling(CudaDevice* dev, CUcontext ctx);

std::unique_ptr<device::PassService> make_pc_sampling(CudaDevice* dev);
std::unique_ptr<device::PassService> make_sass_metrics(CudaDevice* dev);
std::unique_ptr<device::PassService> make_pm_sampling(CudaDevice* dev);

}  // namespace services
}  // namespace kreplay::cuda
