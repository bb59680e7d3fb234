#include "backends/cuda/cupti/profiler_host.hpp"

#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <unordered_set>
#include <utility>

#include "backends/cuda/cupti/cupti_common.hpp"
#include "common/logging.hpp"
#include "common/util.hpp"

namespace kreplay::cupti {

struct ProfilerHost::SuffixSet {
  std::vector<std::string> list;           // as CUPTI gives them
  std::unordered_set<std::string> lookup;  // same, for membership
  std::string described;                   // "a rollup (.avg, .max, .min, .sum) optionally ..."
};

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

kreplay_counter_value_type_t to_value_type(CUpti_MetricType type) {
  switch (type) {
    case CUPTI_METRIC_TYPE_COUNTER:
      return KREPLAY_COUNTER_VALUE_TYPE_COUNT;
    case CUPTI_METRIC_TYPE_RATIO:
      return KREPLAY_COUNTER_VALUE_TYPE_RATIO;
    case CUPTI_METRIC_TYPE_THROUGHPUT:
      return KREPLAY_COUNTER_VALUE_TYPE_THROUGHPUT;
    default:
      return KREPLAY_COUNTER_VALUE_TYPE_NONE;
  }
}

const char* kind_name(kreplay_counter_value_type_t type) {
  switch (type) {
    case KREPLAY_COUNTER_VALUE_TYPE_RATIO:
      return "ratio";
    case KREPLAY_COUNTER_VALUE_TYPE_THROUGHPUT:
      return "throughput";
    default:
      return "counter";
  }
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += separator;
    out += items[i];
  }
  return out;
}

std::vector<std::string> quoted(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  out.reserve(items.size());
  for (const auto& s : items) out.push_back("'" + s + "'");
  return out;
}

/// "a rollup (.avg, .max, .min or .sum) optionally followed by .per_second, ..." when the
/// suffixes are a full cross product of rollups and submetrics, else "one of <all>".
std::string describe_suffixes(const std::vector<std::string>& suffixes) {
  std::vector<std::string> rollups;
  std::vector<std::string> rests;
  auto add_unique = [](std::vector<std::string>& v, const std::string& s) {
    if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
  };
  for (const auto& s : suffixes) {
    size_t second_dot = s.find('.', 1);
    add_unique(rollups, s.substr(0, second_dot));
    add_unique(rests, second_dot == std::string::npos ? std::string() : s.substr(second_dot));
  }
  if (rests.size() == 1 && rests[0].empty()) return "one of " + join_or(rollups);
  if (rollups.size() * rests.size() != suffixes.size()) return "one of " + join_or(suffixes);
  bool optional = std::find(rests.begin(), rests.end(), std::string()) != rests.end();
  std::erase(rests, std::string());
  return fmt::format("a rollup ({}) {} {}", join_or(rollups),
                     optional ? "optionally followed by one of" : "followed by",
                     rests.size() == 1 ? rests[0] : join_or(rests));
}

/// Suffix to offer in a suggestion when the user's own suffix does not fit the suggested base.
std::string default_suffix(kreplay_counter_value_type_t type,
                           const std::unordered_set<std::string>& valid,
                           const std::vector<std::string>& list) {
  const char* preferred = ".sum";
  if (type == KREPLAY_COUNTER_VALUE_TYPE_RATIO) preferred = ".pct";
  if (type == KREPLAY_COUNTER_VALUE_TYPE_THROUGHPUT)
    preferred = ".avg.pct_of_peak_sustained_elapsed";
  if (valid.count(preferred)) return preferred;
  return list.empty() ? std::string() : list.front();
}

std::string config_key(const std::vector<std::string>& names) {
  return join(names, "\n");
}

std::vector<const char*> c_names(const std::vector<std::string>& names) {
  std::vector<const char*> out;
  out.reserve(names.size());
  for (const auto& n : names) out.push_back(n.c_str());
  return out;
}

void destroy_host_object(CUpti_Profiler_Host_Object* host) {
  if (host == nullptr) return;
  auto params = KR_CUPTI_PARAMS(CUpti_Profiler_Host_Deinitialize_Params);
  params.pHostObject = host;
  std::lock_guard api(host_api_mutex());
  CUptiResult r = cuptiProfilerHostDeinitialize(&params);
  if (r != CUPTI_SUCCESS) {
    KR_WARN("cuptiProfilerHostDeinitialize failed: {}", result_name(r));
  }
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Creation
// ------------------------------------------------------------------------------------------

Result<std::vector<std::string>> ProfilerHost::supported_chips() {
  auto params = KR_CUPTI_PARAMS(CUpti_Profiler_Host_GetSupportedChips_Params);
  std::lock_guard api(host_api_mutex());
  KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerHostGetSupportedChips(&params));
  std::vector<std::string> chips;
  chips.reserve(params.numChips);
  for (size_t i = 0; i < params.numChips; ++i) chips.emplace_back(params.ppChipNames[i]);
  return chips;
}

ProfilerHost::ProfilerHost(std::string chip, std::vector<uint8_t> availability)
    : chip_(std::move(chip)), availability_(std::move(availability)) {}

ProfilerHost::~ProfilerHost() {
  for (auto& [key, cached] : configs_) destroy_host_object(cached.host);
  destroy_host_object(base_);
}

Result<std::unique_ptr<ProfilerHost>> ProfilerHost::create(
    const std::string& chip, std::span<const uint8_t> counter_availability_image) {
  if (chip.empty()) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "no chip name");
  std::unique_ptr<ProfilerHost> host(new ProfilerHost(
      chip,
      std::vector<uint8_t>(counter_availability_image.begin(), counter_availability_image.end())));
  auto base = host->new_host_object(&host->init_ms_);
  if (!base.ok()) {
    if (base.status().code() == KREPLAY_STATUS_ERROR_NOT_AVAILABLE) {
      auto chips = supported_chips();
      if (chips.ok() && std::find(chips->begin(), chips->end(), chip) == chips->end()) {
        std::string message = fmt::format("CUPTI does not know the chip '{}'", chip);
        auto close = suggest(chip, *chips);
        if (!close.empty()) message += fmt::format("; did you mean {}?", join_or(close));
        message += fmt::format(" (supported: {})", join(*chips, " "));
        return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE, std::move(message));
      }
    }
    return base.status();
  }
  host->base_ = *base;
  host->stats_.host_objects = 1;
  KR_DEBUG("CUPTI host object for {} ({}) in {:.2f} ms", chip,
           host->offline() ? "offline" : "with counter availability", host->init_ms_);
  return host;
}

Result<std::shared_ptr<ProfilerHost>> ProfilerHost::shared(const std::string& chip) {
  // Process lifetime, never destroyed: nothing to release at exit, when CUPTI may be gone.
  static std::mutex* mu = new std::mutex;
  static auto* hosts = new std::map<std::string, std::shared_ptr<ProfilerHost>>;
  std::lock_guard lock(*mu);
  auto it = hosts->find(chip);
  if (it != hosts->end()) return it->second;
  ASSIGN_OR_RETURN(std::unique_ptr<ProfilerHost> host, create(chip));
  std::shared_ptr<ProfilerHost> shared_host(std::move(host));
  hosts->emplace(chip, shared_host);
  return shared_host;
}

Result<CUpti_Profiler_Host_Object*> ProfilerHost::new_host_object(double* elapsed_ms) {
  auto params = KR_CUPTI_PARAMS(CUpti_Profiler_Host_Initialize_Params);
  params.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  params.pChipName = chip_.c_str();
  params.pCounterAvailabilityImage = availability_.empty() ? nullptr : availability_.data();
  auto t0 = Clock::now();
  {
    std::lock_guard api(host_api_mutex());
    KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerHostInitialize(&params));
  }
  if (elapsed_ms) *elapsed_ms = ms_since(t0);
  return params.pHostObject;
}

ProfilerHost::Stats ProfilerHost::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

// ------------------------------------------------------------------------------------------
// Catalog and names
// ------------------------------------------------------------------------------------------

Status ProfilerHost::ensure_catalog_locked() {
  if (catalog_ready_) return Status::Ok();
  std::lock_guard api(host_api_mutex());
  std::map<std::string, SuffixSet*> interned;  // suffix list joined -> set
  std::vector<std::string> names;
  for (CUpti_MetricType type :
       {CUPTI_METRIC_TYPE_COUNTER, CUPTI_METRIC_TYPE_RATIO, CUPTI_METRIC_TYPE_THROUGHPUT}) {
    auto base = KR_CUPTI_PARAMS(CUpti_Profiler_Host_GetBaseMetrics_Params);
    base.pHostObject = base_;
    base.metricType = type;
    KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerHostGetBaseMetrics(&base));
    for (size_t i = 0; i < base.numMetrics; ++i) {
      std::string name = base.ppMetricNames[i];
      auto sub = KR_CUPTI_PARAMS(CUpti_Profiler_Host_GetSubMetrics_Params);
      sub.pHostObject = base_;
      sub.metricType = type;
      sub.pMetricName = name.c_str();
      KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerHostGetSubMetrics(&sub));
      std::vector<std::string> suffixes(sub.ppSubMetrics, sub.ppSubMetrics + sub.numOfSubmetrics);
      std::string key = std::to_string(type) + ":" + join(suffixes, " ");
      SuffixSet*& set = interned[key];
      if (set == nullptr) {
        auto owned = std::make_unique<SuffixSet>();
        owned->lookup.insert(suffixes.begin(), suffixes.end());
        owned->described = describe_suffixes(suffixes);
        owned->list = std::move(suffixes);
        set = owned.get();
        suffix_sets_.push_back(std::move(owned));
      }
      if (catalog_.emplace(name, CatalogEntry{to_value_type(type), set}).second) {
        names.push_back(std::move(name));
      }
    }
  }
  // Unprefixed names first ("dram__bytes_read"), then the PM-unit variants
  // ("SM_A.TriageCompute.sm__throughput"); alphabetical within each.
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    bool pa = a.find('.') != std::string::npos;
    bool pb = b.find('.') != std::string::npos;
    return pa != pb ? pb : a < b;
  });
  base_names_ = std::move(names);
  catalog_ready_ = true;
  return Status::Ok();
}

Result<std::vector<MetricInfo>> ProfilerHost::list_metrics() {
  std::lock_guard lock(mu_);
  RETURN_IF_ERROR(ensure_catalog_locked());
  std::vector<MetricInfo> out;
  out.reserve(base_names_.size());
  std::lock_guard api(host_api_mutex());
  for (const auto& name : base_names_) {
    const CatalogEntry& entry = catalog_.at(name);
    auto props = KR_CUPTI_PARAMS(CUpti_Profiler_Host_GetMetricProperties_Params);
    props.pHostObject = base_;
    props.pMetricName = name.c_str();
    KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerHostGetMetricProperties(&props));
    MetricInfo info;
    info.name = name;
    info.description = props.pDescription ? props.pDescription : "";
    info.unit = props.pDimUnit ? props.pDimUnit : "";
    info.hw_unit = props.pHwUnit ? props.pHwUnit : "";
    info.type = entry.type;
    info.suffixes = entry.suffixes->list;
    out.push_back(std::move(info));
  }
  // Prefixed variants often have no text of their own: borrow the unprefixed metric's.
  std::unordered_map<std::string_view, size_t> plain;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].name.find('.') == std::string::npos) plain.emplace(out[i].name, i);
  }
  for (auto& info : out) {
    if (!info.description.empty()) continue;
    size_t dot = info.name.rfind('.');
    if (dot == std::string::npos) continue;
    auto it = plain.find(std::string_view(info.name).substr(dot + 1));
    if (it != plain.end()) info.description = out[it->second].description;
  }
  return out;
}

Result<std::vector<std::string>> ProfilerHost::list_metric_names_full() {
  std::lock_guard lock(mu_);
  RETURN_IF_ERROR(ensure_catalog_locked());
  std::vector<std::string> out;
  for (const auto& name : base_names_) {
    for (const auto& suffix : catalog_.at(name).suffixes->list) out.push_back(name + suffix);
  }
  return out;
}

Result<ResolvedMetric> ProfilerHost::resolve(std::string_view full_name) {
  std::lock_guard lock(mu_);
  RETURN_IF_ERROR(ensure_catalog_locked());
  return resolve_locked(full_name);
}

Result<ResolvedMetric> ProfilerHost::resolve_locked(std::string_view full_name) {
  if (full_name.empty()) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "empty metric name");
  // The base may itself contain dots (PM-unit prefixes), so try every split point; the last base
  // that matches is the longest.
  const CatalogEntry* matched = nullptr;
  std::string matched_base;
  for (size_t pos = full_name.find('.');; pos = full_name.find('.', pos + 1)) {
    size_t end = pos == std::string_view::npos ? full_name.size() : pos;
    auto it = catalog_.find(std::string(full_name.substr(0, end)));
    if (it != catalog_.end()) {
      std::string suffix(full_name.substr(end));
      if (it->second.suffixes->lookup.count(suffix)) {
        return ResolvedMetric{it->first, std::move(suffix), it->second.type};
      }
      matched = &it->second;
      matched_base = it->first;
    }
    if (pos == std::string_view::npos) break;
  }
  if (matched == nullptr) {
    return Error(KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND, unknown_metric_message(full_name));
  }
  std::string suffix(full_name.substr(matched_base.size()));
  const SuffixSet& valid = *matched->suffixes;
  std::string message;
  if (suffix.empty()) {
    message = fmt::format("metric '{}' on {} is a base {} and needs a suffix: {}", full_name, chip_,
                          kind_name(matched->type), valid.described);
  } else {
    message = fmt::format("metric '{}' on {}: '{}' is not a suffix of the {} '{}'", full_name,
                          chip_, suffix, kind_name(matched->type), matched_base);
    auto close = suggest(suffix, valid.list);
    if (!close.empty()) {
      std::vector<std::string> full;
      for (const auto& s : close) full.push_back(matched_base + s);
      message += fmt::format("; did you mean {}?", join_or(quoted(full)));
    } else {
      message += ".";
    }
    message += fmt::format(" Valid suffixes: {}", valid.described);
  }
  return Error(KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND, std::move(message));
}

std::string ProfilerHost::unknown_metric_message(std::string_view full_name) {
  // Guess where the user's base ends: at the first dot after the "unit__" separator.
  std::string lowered(full_name);
  std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  size_t sep = lowered.find("__");
  size_t dot = lowered.find('.', sep == std::string::npos ? 0 : sep);
  std::string base_guess = lowered.substr(0, dot);
  std::string suffix_guess = dot == std::string::npos ? std::string() : lowered.substr(dot);

  std::vector<std::string> suggestions;
  for (const auto& base : suggest(base_guess, base_names_)) {
    const CatalogEntry& entry = catalog_.at(base);
    bool fits = entry.suffixes->lookup.count(suffix_guess) > 0;
    suggestions.push_back(
        base + (fits ? suffix_guess
                     : default_suffix(entry.type, entry.suffixes->lookup, entry.suffixes->list)));
  }
  std::string message = fmt::format("unknown metric '{}' on {}", full_name, chip_);
  if (!suggestions.empty()) {
    message += fmt::format("; did you mean {}?", join_or(quoted(suggestions)));
  } else {
    message += "; no close metric name";
  }
  message += " (`kreplay --list-avail` lists the metrics)";
  return message;
}

Status ProfilerHost::validate(const std::vector<std::string>& metric_names) {
  std::lock_guard lock(mu_);
  RETURN_IF_ERROR(ensure_catalog_locked());
  return validate_locked(metric_names);
}

Status ProfilerHost::validate_locked(const std::vector<std::string>& metric_names) {
  if (metric_names.empty()) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "the metric set is empty");
  }
  kreplay_status_t code = KREPLAY_STATUS_SUCCESS;
  std::vector<std::string> problems;
  for (const auto& name : metric_names) {
    auto r = resolve_locked(name);
    if (r.ok()) continue;
    if (code == KREPLAY_STATUS_SUCCESS) code = r.status().code();
    problems.push_back(r.status().message());
  }
  if (problems.empty()) return Status::Ok();
  return Error(code, join(problems, "\n"));
}

// ------------------------------------------------------------------------------------------
// Config images
// ------------------------------------------------------------------------------------------

Result<const ProfilerHost::CachedConfig*> ProfilerHost::config_locked(
    const std::vector<std::string>& metric_names) {
  std::string key = config_key(metric_names);
  auto it = configs_.find(key);
  if (it != configs_.end()) {
    ++stats_.config_cache_hits;
    return &it->second;
  }
  RETURN_IF_ERROR(ensure_catalog_locked());
  RETURN_IF_ERROR(validate_locked(metric_names));

  // A fresh host object: ConfigAddMetrics accumulates into the object it is given.
  ASSIGN_OR_RETURN(CUpti_Profiler_Host_Object * host, new_host_object(nullptr));
  CachedConfig cached;
  cached.host = host;
  Status built = [&]() -> Status {
    std::vector<const char*> names = c_names(metric_names);
    std::lock_guard api(host_api_mutex());
    auto add = KR_CUPTI_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
    add.pHostObject = host;
    add.ppMetricNames = names.data();
    add.numMetrics = names.size();
    KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerHostConfigAddMetrics(&add));
    auto size = KR_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
    size.pHostObject = host;
    KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerHostGetConfigImageSize(&size));
    cached.config.image.resize(size.configImageSize);
    auto image = KR_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
    image.pHostObject = host;
    image.configImageSize = cached.config.image.size();
    image.pConfigImage = cached.config.image.data();
    KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerHostGetConfigImage(&image));
    auto passes = KR_CUPTI_PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params);
    passes.configImageSize = cached.config.image.size();
    passes.pConfigImage = cached.config.image.data();
    KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerHostGetNumOfPasses(&passes));
    cached.config.pass_count = passes.numOfPasses;
    return Status::Ok();
  }();
  if (!built.ok()) {
    destroy_host_object(host);
    return built;
  }
  cached.config.chip = chip_;
  cached.config.metrics = metric_names;
  ++stats_.configs_built;
  ++stats_.host_objects;
  KR_DEBUG("CUPTI config for {} metrics on {}: {} passes, {} bytes", metric_names.size(), chip_,
           cached.config.pass_count, cached.config.image.size());
  auto [pos, inserted] = configs_.emplace(std::move(key), std::move(cached));
  return &pos->second;
}

Result<ConfigImage> ProfilerHost::build_config(const std::vector<std::string>& metric_names) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(const CachedConfig* cached, config_locked(metric_names));
  return cached->config;
}

Result<size_t> ProfilerHost::pass_count(const std::vector<std::string>& metric_names) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(const CachedConfig* cached, config_locked(metric_names));
  return cached->config.pass_count;
}

// ------------------------------------------------------------------------------------------
// Counter data
// ------------------------------------------------------------------------------------------

Result<std::vector<double>> ProfilerHost::evaluate(std::span<const uint8_t> counter_data_image,
                                                   size_t range_index,
                                                   const std::vector<std::string>& metric_names) {
  if (counter_data_image.empty()) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "empty counter-data image");
  }
  std::lock_guard lock(mu_);
  CUpti_Profiler_Host_Object* host = base_;
  auto it = configs_.find(config_key(metric_names));
  if (it != configs_.end()) {
    host = it->second.host;
  } else {
    RETURN_IF_ERROR(ensure_catalog_locked());
    RETURN_IF_ERROR(validate_locked(metric_names));
  }
  std::vector<const char*> names = c_names(metric_names);
  std::vector<double> values(metric_names.size(), 0.0);
  auto params = KR_CUPTI_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
  params.pHostObject = host;
  params.pCounterDataImage = counter_data_image.data();
  params.counterDataImageSize = counter_data_image.size();
  params.rangeIndex = range_index;
  params.ppMetricNames = names.data();
  params.numMetrics = names.size();
  params.pMetricValues = values.data();
  std::lock_guard api(host_api_mutex());
  KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerHostEvaluateToGpuValues(&params));
  return values;
}

Result<size_t> ProfilerHost::range_count(std::span<const uint8_t> counter_data_image) {
  if (counter_data_image.empty()) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "empty counter-data image");
  }
  auto params = KR_CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataInfo_Params);
  params.pCounterDataImage = counter_data_image.data();
  params.counterDataImageSize = counter_data_image.size();
  std::lock_guard api(host_api_mutex());
  KR_CUPTI_RETURN_IF_ERROR(cuptiRangeProfilerGetCounterDataInfo(&params));
  return params.numTotalRanges;
}

Result<std::string> ProfilerHost::range_name(std::span<const uint8_t> counter_data_image,
                                             size_t range_index, const char* delimiter) {
  if (counter_data_image.empty()) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "empty counter-data image");
  }
  auto params = KR_CUPTI_PARAMS(CUpti_Profiler_Host_GetRangeName_Params);
  params.pCounterDataImage = counter_data_image.data();
  params.counterDataImageSize = counter_data_image.size();
  params.rangeIndex = range_index;
  params.delimiter = delimiter;
  {
    std::lock_guard api(host_api_mutex());
    KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerHostGetRangeName(&params));
  }
  std::string name = params.pRangeName ? params.pRangeName : "";
  // cupti_profiler_host.h: "CUPTI allocate the memory internal and its user responsibility to
  // free up the allocated memory".
  std::free(const_cast<char*>(params.pRangeName));
  return name;
}

Result<std::vector<std::string>> ProfilerHost::range_names(
    std::span<const uint8_t> counter_data_image) {
  ASSIGN_OR_RETURN(size_t count, range_count(counter_data_image));
  std::vector<std::string> names;
  names.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    ASSIGN_OR_RETURN(std::string name, range_name(counter_data_image, i));
    names.push_back(std::move(name));
  }
  return names;
}

Result<std::string> ProfilerHost::device_chip_name(int ordinal) {
  auto init = KR_CUPTI_PARAMS(CUpti_Profiler_Initialize_Params);
  CUptiResult r = cuptiProfilerInitialize(&init);
  if (r != CUPTI_SUCCESS) return cupti_status(r, "cuptiProfilerInitialize");
  auto p = KR_CUPTI_PARAMS(CUpti_Device_GetChipName_Params);
  p.deviceIndex = static_cast<size_t>(ordinal);
  r = cuptiDeviceGetChipName(&p);
  if (r != CUPTI_SUCCESS) return cupti_status(r, "cuptiDeviceGetChipName");
  return std::string(p.pChipName ? p.pChipName : "");
}

}  // namespace kreplay::cupti
