// SASS metrics on CUDA (cupti_sass_metrics.h): exact per-instruction counts by patching the code
// (instructions and threads executed, global memory instructions and sectors), what ncu's
// SourceCounters section shows.
//
// Strictly inside the pass (cupti_service.hpp): begin_pass enables patching on the launch's
// context with lazy patching (only functions that run are patched, at their first execution in
// the enable/disable range); end_pass reads the records (cuptiSassMetricsGetDataProperties,
// cuptiSassMetricsFlushData) before cuptiSassMetricsDisable, which discards what is unread and
// unpatches. Counter passes of the same launch therefore run unpatched code. The device's config
// (cuptiSassMetricsSetConfig, one value per GPU: output granularity GPU) is set at the first pass
// and kept while the metrics stay the same: on the H200 (CUDA 13.0) a SetConfig after an
// UnsetConfig failed with CUPTI_ERROR_OUT_OF_MEMORY on every pass after the first.
//
// Unverified without a GPU, and a known risk (notes-services-and-anchors.md §3b, unattributed
// reports): with CUDA 13.0 lazy patching collects nothing when enabled inside the launch callback,
// which is where the engine calls begin_pass. The workaround here: when a completed pass flushed
// no record with lazy patching, later passes enable with enableLazyPatching = 0 (every function of
// the context is patched at Enable, before the submission; slower for large modules) and say so
// once. KREPLAY_SASS_LAZY_PATCHING=0 starts that way. A pass that still gets nothing reports
// NOT_AVAILABLE with that explanation rather than an empty, plausible-looking result.
#include <cupti_sass_metrics.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <optional>
#include <tuple>

#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/cuda_counters.hpp"
#include "backends/cuda/cupti/cupti_common.hpp"
#include "backends/cuda/cupti/range_profiler.hpp"
#include "backends/cuda/cupti/service_catalog.hpp"
#include "backends/cuda/internal_guard.hpp"
#include "backends/cuda/services/cupti_service.hpp"
#include "common/logging.hpp"
#include "common/util.hpp"

namespace kreplay::cuda::services {
namespace {

constexpr const char* kService = "SASS metrics";

bool lazy_from_env() {
  const char* v = std::getenv("KREPLAY_SASS_LAZY_PATCHING");
  return v == nullptr || std::string(v) != "0";
}

struct Armed {
  CUcontext ctx = nullptr;
  std::vector<std::string> metrics;
  bool lazy = true;
};

using Key = std::tuple<std::string, uint32_t, uint32_t, uint64_t>;  // function, pc, crc, metric id

class CudaSassMetrics final : public device::PassService {
 public:
  explicit CudaSassMetrics(CudaDevice* dev) : dev_(dev), lazy_(lazy_from_env()) {}

  kreplay_pass_service_kind_t kind() const override { return KREPLAY_PASS_SERVICE_SASS_METRICS; }

  std::vector<device::ServiceMetric> metrics() const override {
    std::vector<device::ServiceMetric> out;
    auto cat = catalog();
    if (!cat.ok()) return out;
    for (const auto& m : *cat) {
      out.push_back({m.name, m.description, cupti::in_sass_default_set(m.name)});
    }
    return out;
  }

  Status configure(device::ServiceSettings& settings) const override {
    if (settings.period != 0) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   "SASS metrics take no period: they count every execution");
    }
    ASSIGN_OR_RETURN(std::vector<cupti::SassMetricInfo> cat, catalog());
    std::vector<std::string> known;
    for (const auto& m : cat) known.push_back(m.name);
    if (settings.metrics.empty()) {
      for (const char* d : cupti::kSassDefaultSet) {
        if (std::find(known.begin(), known.end(), d) != known.end()) settings.metrics.push_back(d);
      }
      if (settings.metrics.empty()) {
        return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                     fmt::format("none of the default SASS metrics exists on {}; name them with "
                                 "--sass-metrics (list them with --list-avail)",
                                 chip()));
      }
    }
    for (const auto& n : settings.metrics) {
      if (std::find(known.begin(), known.end(), n) != known.end()) continue;
      auto close = suggest(n, known);
      return Error(KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND,
                   close.empty()
                       ? fmt::format("unknown SASS metric '{}' on {}; list them with --list-avail",
                                     n, chip())
                       : fmt::format("unknown SASS metric '{}' on {}; did you mean {}?", n, chip(),
                                     join_or(close)));
    }
    return Status::Ok();
  }

  Status begin_pass(device::Launch& launch, const device::ServiceSettings& given) override {
    ASSIGN_OR_RETURN(CudaLaunch * cl, cuda_launch(launch));
    if (cl->api == LaunchApi::kGraph) {
      // Patching a graph launched as a whole faulted on the H200 (a graph with conditional
      // nodes: CUDA_ERROR_ILLEGAL_ADDRESS in the SASS pass). Its kernel nodes, profiled node by
      // node (--graph-profiling node), are kernel launches and are counted.
      return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                   "SASS metrics do not patch a CUDA graph profiled as a whole; its kernel nodes "
                   "get them under --graph-profiling node (graphs with conditional nodes are "
                   "always profiled as a whole)");
    }
    // Settings the SDK could not check (no agent yet when the tool configured): the default set.
    device::ServiceSettings settings = given;
    if (settings.metrics.empty()) RETURN_IF_ERROR(configure(settings));
    if (cl->capturing) return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE, "stream is being captured");
    ASSIGN_OR_RETURN(CUcontext ctx, current_context());
    ASSIGN_OR_RETURN(std::vector<cupti::SassMetricInfo> cat, catalog());
    std::vector<CUpti_SassMetrics_Config> configs;
    for (const auto& n : settings.metrics) {
      auto it = std::find_if(cat.begin(), cat.end(),
                             [&](const cupti::SassMetricInfo& m) { return m.name == n; });
      if (it == cat.end()) {
        return Error(KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND,
                     fmt::format("unknown SASS metric '{}' on {}", n, chip()));
      }
      configs.push_back({it->id, CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU});
    }
    InternalScope internal;
    CUptiResult r = CUPTI_SUCCESS;
    {
      std::lock_guard lock(config_mu_);
      if (configured_ != settings.metrics) {
        if (configured_) unset_config();
        configured_.reset();
        auto set = KR_CUPTI_PARAMS(CUpti_SassMetricsSetConfig_Params);
        set.numOfMetricConfig = configs.size();
        set.pConfigs = configs.data();
        set.deviceIndex = dev_->desc().device_index;
        r = cuptiSassMetricsSetConfig(&set);
        if (r == CUPTI_ERROR_INVALID_OPERATION) {
          // A config is still set on the device (an earlier unset failed): unset it and set ours.
          unset_config();
          r = cuptiSassMetricsSetConfig(&set);
        }
        if (r != CUPTI_SUCCESS && yield_counters(dev_, *cl, kService))
          r = cuptiSassMetricsSetConfig(&set);
        if (r != CUPTI_SUCCESS) return service_status(r, "cuptiSassMetricsSetConfig", kService, dev_);
        configured_ = settings.metrics;
      }
    }
    auto armed = std::make_unique<Armed>();
    armed->ctx = ctx;
    armed->metrics = settings.metrics;
    armed->lazy = lazy_.load();
    auto en = KR_CUPTI_PARAMS(CUpti_SassMetricsEnable_Params);
    en.ctx = ctx;
    en.enableLazyPatching = armed->lazy ? 1 : 0;
    r = cuptiSassMetricsEnable(&en);
    if (r != CUPTI_SUCCESS && yield_counters(dev_, *cl, kService)) r = cuptiSassMetricsEnable(&en);
    if (r != CUPTI_SUCCESS) return service_status(r, "cuptiSassMetricsEnable", kService, dev_);
    armed_.put(launch, std::move(armed));
    return Status::Ok();
  }

  Status end_pass(device::Launch& launch) override {
    std::unique_ptr<Armed> armed = armed_.take(launch);
    if (!armed) return Status::Ok();
    InternalScope internal;
    auto values = read(*armed);
    auto dis = KR_CUPTI_PARAMS(CUpti_SassMetricsDisable_Params);
    dis.ctx = armed->ctx;
    CUptiResult dr = cuptiSassMetricsDisable(&dis);
    if (!values.ok()) return values.status();
    if (dr != CUPTI_SUCCESS) return service_status(dr, "cuptiSassMetricsDisable", kService, dev_);
    if (values->empty()) {
      if (armed->lazy) {
        lazy_ = false;
        KR_WARN_ONCE(
            "sass-lazy",
            "SASS metrics: lazy patching enabled in the launch callback collected nothing; "
            "later passes patch every function when enabled "
            "(KREPLAY_SASS_LAZY_PATCHING=0 starts that way)");
      }
      // Kept: flush tells an empty pass that ran from one that did not (the SDK drops samples of
      // a pass that did not complete).
      std::lock_guard lock(mu_);
      empty_[&launch] = armed->lazy;
    }
    samples_.put(launch, std::move(values).value());
    return Status::Ok();
  }

  Result<std::vector<device::ServiceSample>> flush(device::Launch& launch) override {
    auto out = samples_.take(launch);
    std::lock_guard lock(mu_);
    if (auto it = empty_.find(&launch); it != empty_.end()) {
      const bool lazy = it->second;
      empty_.erase(it);
      return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                   lazy ? "SASS metrics collected no instruction: lazy patching enabled inside the "
                          "launch callback may not patch the kernel (CUDA 13.0); the next passes "
                          "patch every function at enable"
                        : "SASS metrics collected no instruction even with every function "
                          "patched at enable; this CUPTI cannot collect them here");
    }
    return out;
  }

 private:
  const std::string& chip() const {
    auto* counters = dynamic_cast<CudaCounterBackend*>(dev_->counters());
    static const std::string none = "this GPU";
    return counters ? counters->chip() : (dev_->desc().chip.empty() ? none : dev_->desc().chip);
  }

  Result<std::vector<cupti::SassMetricInfo>> catalog() const {
    std::lock_guard lock(catalog_mu_);
    if (!catalog_) {
      auto c = cupti::sass_metrics(chip());
      if (!c.ok()) return c.status();
      catalog_ = std::move(c).value();
    }
    return *catalog_;
  }

  std::string name_of(uint64_t id) const {
    auto cat = catalog();
    if (cat.ok()) {
      for (const auto& m : *cat) {
        if (m.id == id) return m.name;
      }
    }
    return fmt::format("sass_metric_{}", id);
  }

  void unset_config() {
    auto unset = KR_CUPTI_PARAMS(CUpti_SassMetricsUnsetConfig_Params);
    unset.deviceIndex = dev_->desc().device_index;
    if (CUptiResult r = cuptiSassMetricsUnsetConfig(&unset); r != CUPTI_SUCCESS)
      KR_WARN_ONCE("sass-unset", "cuptiSassMetricsUnsetConfig failed: {}", cupti::result_name(r));
  }

  // Every record, summed per (function, pc, metric) over its instances.
  Result<std::vector<device::ServiceSample>> read(const Armed& armed) {
    auto props = KR_CUPTI_PARAMS(CUpti_SassMetricsGetDataProperties_Params);
    props.ctx = armed.ctx;
    if (CUptiResult r = cuptiSassMetricsGetDataProperties(&props); r != CUPTI_SUCCESS)
      return service_status(r, "cuptiSassMetricsGetDataProperties", kService, dev_);
    std::vector<device::ServiceSample> out;
    if (props.numOfPatchedInstructionRecords == 0 || props.numOfInstances == 0) return out;
    // Room for every metric's instances in each record: the header says a record holds "the
    // instances per metric"; whether one record holds one metric or all of them is not stated,
    // so unused slots keep a metric id no metric has and are skipped.
    constexpr uint64_t kUnused = ~uint64_t{0};
    const size_t slots = props.numOfInstances * std::max<size_t>(armed.metrics.size(), 1);
    std::vector<CUpti_SassMetrics_InstanceValue> values(
        props.numOfPatchedInstructionRecords * slots, CUpti_SassMetrics_InstanceValue{kUnused, 0});
    std::vector<CUpti_SassMetrics_Data> records(props.numOfPatchedInstructionRecords);
    for (size_t i = 0; i < records.size(); ++i) {
      // The header asks for CUpti_SassMetricsFlushData_Params_STRUCT_SIZE here, which looks like
      // a slip (that is another struct's size); users of the API pass the record's own size.
      records[i].structSize = sizeof(CUpti_SassMetrics_Data);
      records[i].pInstanceValues = &values[i * slots];
    }
    auto flush = KR_CUPTI_PARAMS(CUpti_SassMetricsFlushData_Params);
    flush.ctx = armed.ctx;
    flush.numOfPatchedInstructionRecords = records.size();
    flush.numOfInstances = props.numOfInstances;
    flush.pMetricsData = records.data();
    if (CUptiResult r = cuptiSassMetricsFlushData(&flush); r != CUPTI_SUCCESS)
      return service_status(r, "cuptiSassMetricsFlushData", kService, dev_);
    std::map<Key, double> sums;
    for (size_t i = 0; i < records.size(); ++i) {
      const auto& rec = records[i];
      std::string function = rec.functionName ? rec.functionName : "";
      for (size_t k = 0; k < slots; ++k) {
        const auto& v = rec.pInstanceValues[k];
        if (v.metricId == kUnused) continue;
        sums[{function, rec.pcOffset, rec.cubinCrc, v.metricId}] += static_cast<double>(v.value);
      }
    }
    std::vector<uint64_t> crcs;
    for (const auto& [key, value] : sums) {
      const auto& [function, pc, crc, id] = key;
      device::ServiceSample s;
      s.function = function;
      s.pc_offset = pc;
      s.name = name_of(id);
      s.value = value;
      out.push_back(std::move(s));
      crcs.push_back(crc);
    }
    add_sources(out, crcs, true);
    return out;
  }

  CudaDevice* dev_;
  std::atomic<bool> lazy_;
  std::mutex config_mu_;
  std::optional<std::vector<std::string>> configured_;  // the metrics set on the device
  mutable std::mutex catalog_mu_;
  mutable std::optional<std::vector<cupti::SassMetricInfo>> catalog_;
  std::mutex mu_;
  ArmedPasses<Armed> armed_;
  std::unordered_map<const device::Launch*, bool> empty_;
  PassSamples samples_;
};

}  // namespace

std::unique_ptr<device::PassService> make_sass_metrics(CudaDevice* dev) {
  return std::make_unique<CudaSassMetrics>(dev);
}

}  // namespace kreplay::cuda::services
