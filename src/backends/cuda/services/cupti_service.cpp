#include "backends/cuda/services/cupti_service.hpp"

#include <cupti_pcsampling.h>
#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/cuda_counters.hpp"
#include "backends/cuda/cupti/cupti_common.hpp"
#include "backends/cuda/cupti/range_profiler.hpp"
#include "backends/cuda/disassembly.hpp"
#include "backends/cuda/internal_guard.hpp"
#include "common/logging.hpp"
#include "sdk/runtime.hpp"

namespace kreplay::cuda::services {

void PassSamples::put(const device::Launch& launch, std::vector<device::ServiceSample> samples) {
  std::lock_guard lock(mu_);
  by_launch_[&launch] = std::move(samples);
}

std::vector<device::ServiceSample> PassSamples::take(const device::Launch& launch) {
  std::lock_guard lock(mu_);
  auto it = by_launch_.find(&launch);
  if (it == by_launch_.end()) return {};
  auto out = std::move(it->second);
  by_launch_.erase(it);
  return out;
}

Result<CudaLaunch*> cuda_launch(device::Launch& launch) {
  auto* cl = dynamic_cast<CudaLaunch*>(&launch);
  if (cl == nullptr) return Error(KREPLAY_STATUS_ERROR_INTERNAL, "not a CUDA launch");
  return cl;
}

Result<CUcontext> current_context() {
  CUcontext ctx = nullptr;
  KR_CU(cuCtxGetCurrent(&ctx));
  if (ctx == nullptr) return Error(KREPLAY_STATUS_ERROR_INTERNAL, "no current CUDA context");
  return ctx;
}

Status service_status(CUptiResult result, const char* call, const char* service, CudaDevice* dev) {
  Status s = cupti::cupti_status(result, call);
  if (s.ok()) return s;
  auto* counters = dev ? dynamic_cast<CudaCounterBackend*>(dev->counters()) : nullptr;
  if (counters != nullptr &&
      (!counters->existing_profilers().empty() || !counters->existing_sessions().empty())) {
    // CUPTI: "one cannot mix the usage of different sets of profiling APIs"; the range profiler
    // stays enabled on the context between counter passes (re-enabling it costs ~170 ms).
    return Error(KREPLAY_STATUS_ERROR_SERVICE_CONFLICT,
                 fmt::format("{} could not start next to the counters' range profiler on this "
                             "context ({}); collect {} in a run without counters",
                             service, s.message(), service));
  }
  return s;
}

bool yield_counters(CudaDevice* dev, CudaLaunch& launch, const char* service) {
  auto* counters = dev ? dynamic_cast<CudaCounterBackend*>(dev->counters()) : nullptr;
  if (counters == nullptr || !counters->yield_profiler(launch)) return false;
  KR_WARN_ONCE("service-yield",
               "{} could not start while the counters' range profiler was enabled on the "
               "context; it is disabled for the service's pass and re-enabled (~170 ms) by the "
               "next counter pass",
               service);
  return true;
}

Status make_room(CudaDevice* dev, CudaLaunch& launch, const char* service) {
  auto* counters = dev ? dynamic_cast<CudaCounterBackend*>(dev->counters()) : nullptr;
  if (counters == nullptr || !counters->holds_profiler_here()) return Status::Ok();
  if (counters->yield_profiler(launch)) {
    KR_WARN_ONCE("service-room",
                 "{} does not run next to the counters' range profiler: it is disabled for the "
                 "service's pass and re-enabled (~170 ms) by the next counter pass",
                 service);
    return Status::Ok();
  }
  return Error(KREPLAY_STATUS_ERROR_SERVICE_CONFLICT,
               fmt::format("{} cannot run between the counter passes of one launch (the counters' "
                           "range profiler holds the context until its last pass); put its pass "
                           "before or after them (--<service>-pass-position)",
                           service));
}

// ---- cubins -------------------------------------------------------------------------------

namespace {

struct Cubin {
  std::vector<std::byte> bytes;
  std::atomic<uint64_t> crc{0};  // computed on first lookup (never in the module callback)
  std::atomic<bool> crc_known{false};
  std::once_flag disassembled;  // instructions: nvdisasm's listing, read once when first asked
  Instructions instructions;
};

struct CubinStore {
  std::mutex mu;
  std::map<uint32_t, std::shared_ptr<Cubin>> by_module;
  std::map<std::tuple<uint64_t, std::string, uint64_t>, SourceLine> lines;
};

CubinStore& store() {
  static auto* s = new CubinStore;  // outlives static destructors run at exit
  return *s;
}

// Called without the store's lock: CUPTI may load modules (and so call back into
// remember_cubin) while it works.
uint64_t crc_of(Cubin& c) {
  if (!c.crc_known.load()) {
    CUpti_GetCubinCrcParams p{};
    p.size = CUpti_GetCubinCrcParamsSize;
    p.cubin = c.bytes.data();
    p.cubinSize = c.bytes.size();
    c.crc = cuptiGetCubinCrc(&p) == CUPTI_SUCCESS ? p.cubinCrc : 0;
    c.crc_known = true;
  }
  return c.crc.load();
}

}  // namespace

bool cubins_wanted() {
  for (const auto& c : sdk::Runtime::get().registry().contexts()) {
    if (c->services[KREPLAY_PASS_SERVICE_PC_SAMPLING].configured() ||
        c->services[KREPLAY_PASS_SERVICE_SASS_METRICS].configured())
      return true;
  }
  return false;
}

const device::ServiceSettings* configured_settings(kreplay_pass_service_kind_t kind) {
  for (const auto& c : sdk::Runtime::get().registry().contexts()) {
    if (c->services[kind].configured() && c->active.load(std::memory_order_acquire))
      return &c->services[kind].settings;
  }
  return nullptr;
}

void remember_cubin(uint32_t module_id, const void* cubin, size_t size) {
  if (cubin == nullptr || size == 0) return;
  auto c = std::make_shared<Cubin>();
  const auto* b = static_cast<const std::byte*>(cubin);
  c->bytes.assign(b, b + size);
  std::lock_guard lock(store().mu);
  store().by_module[module_id] = std::move(c);
}

void forget_cubin(uint32_t module_id) {
  // Samples of this module's kernels were flushed before it could unload (end_pass reads them).
  std::lock_guard lock(store().mu);
  store().by_module.erase(module_id);
}

namespace {

// The kept cubin whose CRC is @p crc (its low 32 bits with @p crc32_only); nullptr if none.
std::shared_ptr<Cubin> cubin_of(uint64_t crc, bool crc32_only) {
  std::vector<std::shared_ptr<Cubin>> cubins;
  {
    std::lock_guard lock(store().mu);
    for (const auto& [id, c] : store().by_module) cubins.push_back(c);
  }
  for (const auto& c : cubins) {
    const uint64_t mine = crc_of(*c);
    if (mine != 0 && (crc32_only ? (mine & 0xffffffffu) == (crc & 0xffffffffu) : mine == crc))
      return c;
  }
  return nullptr;
}

// The instruction at @p pc_offset of @p function in @p c, disassembled by nvdisasm on first use;
// "" when there is no nvdisasm (said once) or it failed on the cubin (said once).
std::string instruction_of(Cubin& c, const std::string& function, uint64_t pc_offset) {
  static const std::string tool = find_nvdisasm();
  std::call_once(c.disassembled, [&] {
    if (tool.empty()) {
      KR_WARN_ONCE("no-nvdisasm",
                   "the sass table's instruction text is left empty: nvdisasm was not found (it "
                   "comes with the CUDA toolkit; put it on PATH or set KREPLAY_NVDISASM)");
      return;
    }
    auto ins = disassemble(c.bytes, tool);
    if (!ins.ok()) {
      KR_WARN_ONCE("nvdisasm-failed", "the sass table's instruction text is empty for a module: {}",
                   ins.status().message());
      return;
    }
    c.instructions = std::move(ins).value();
  });
  auto it = c.instructions.find({function, pc_offset});
  return it == c.instructions.end() ? std::string() : it->second;
}

}  // namespace

SourceLine source_line(uint64_t crc, bool crc32_only, const std::string& function,
                       uint64_t pc_offset) {
  InternalScope internal;
  auto& s = store();
  auto key = std::make_tuple(crc, function, pc_offset);
  {
    std::lock_guard lock(s.mu);
    if (auto it = s.lines.find(key); it != s.lines.end()) return it->second;
  }
  SourceLine out;
  if (std::shared_ptr<Cubin> c = cubin_of(crc, crc32_only)) {
    CUpti_GetSassToSourceCorrelationParams p{};
    p.size = CUpti_GetSassToSourceCorrelationParamsSize;
    p.cubin = c->bytes.data();
    p.cubinSize = c->bytes.size();
    p.functionName = function.c_str();
    p.pcOffset = pc_offset;
    if (cuptiGetSassToSourceCorrelation(&p) == CUPTI_SUCCESS) {
      // CUPTI allocates both strings with malloc; the caller frees them.
      std::string dir = p.dirName ? p.dirName : "";
      std::string file = p.fileName ? p.fileName : "";
      if (!file.empty() && !dir.empty() && file.front() != '/') file = dir + "/" + file;
      out.file = file;
      out.line = p.lineNumber;
    }
    std::free(p.fileName);
    std::free(p.dirName);
  }
  std::lock_guard lock(s.mu);
  s.lines.emplace(std::move(key), out);
  return out;
}

void add_sources(std::vector<device::ServiceSample>& samples, const std::vector<uint64_t>& crcs,
                 bool crc32_only) {
  InternalScope internal;
  std::map<uint64_t, std::shared_ptr<Cubin>> cubins;  // looked up once per CRC, not per sample
  for (size_t i = 0; i < samples.size() && i < crcs.size(); ++i) {
    SourceLine l = source_line(crcs[i], crc32_only, samples[i].function, samples[i].pc_offset);
    samples[i].source_file = std::move(l.file);
    samples[i].source_line = l.line;
    if (!samples[i].instruction.empty()) continue;
    auto [it, fresh] = cubins.try_emplace(crcs[i]);
    if (fresh) it->second = cubin_of(crcs[i], crc32_only);
    if (it->second)
      samples[i].instruction = instruction_of(*it->second, samples[i].function, samples[i].pc_offset);
  }
}

}  // namespace kreplay::cuda::services
