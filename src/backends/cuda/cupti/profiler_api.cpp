#include "backends/cuda/cupti/profiler_api.hpp"

#include <cupti_profiler_target.h>
#include <cupti_target.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <utility>

#include "backends/cuda/cupti/cupti_common.hpp"
#include "backends/cuda/cupti/driver_api.hpp"
#include "common/logging.hpp"

namespace kreplay::cupti {
namespace {

#define KR_PAPI_CALL(cost, call)                                                     \
  do {                                                                               \
    CUptiResult kr_r_;                                                               \
    {                                                                                \
      TimedCall kr_timed_(cost);                                                     \
      kr_r_ = (call);                                                                \
    }                                                                                \
    if (kr_r_ != CUPTI_SUCCESS) return ::kreplay::cupti::cupti_status(kr_r_, #call); \
  } while (0)

}  // namespace

Status ProfilerApiSession::device_supported(CUdevice device) {
  return RangeProfiler::device_supported(device);
}

ProfilerApiSession::ProfilerApiSession(CUcontext ctx, CUdevice device, std::string chip,
                                       std::shared_ptr<ProfilerHost> host)
    : ctx_(ctx), device_(device), chip_(std::move(chip)), host_(std::move(host)) {}

Result<std::unique_ptr<ProfilerApiSession>> ProfilerApiSession::create(CUcontext ctx) {
  ProfilerApiCosts costs;
  // The device's ProfilerHost is the one RangeProfiler uses (made once per device).
  ASSIGN_OR_RETURN(ContextDevice cd, context_device_host(ctx, costs.counter_availability));
  std::unique_ptr<ProfilerApiSession> s(
      new ProfilerApiSession(ctx, cd.device, std::move(cd.chip), std::move(cd.host)));
  s->costs_ = costs;
  return s;
}

ProfilerApiSession::~ProfilerApiSession() {
  Status s = end_session();
  if (!s.ok()) KR_WARN("{}", s.message());
}

// ------------------------------------------------------------------------------------------
// Configuration
// ------------------------------------------------------------------------------------------

Status ProfilerApiSession::configure(const std::vector<std::string>& metrics,
                                     const ProfilerApiOptions& options) {
  if (options.max_ranges == 0 || options.max_ranges > UINT32_MAX) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "max_ranges must be in 1..2^32-1");
  }
  if (in_pass_) return Error(KREPLAY_STATUS_ERROR, "configure() inside a pass");
  RETURN_IF_ERROR(end_session());

  // Validate through the catalog first: NVPW's own error for a bad name is a bare
  // INVALID_ARGUMENT.
  Result<ConfigImage> config = [&] {
    TimedCall timed(costs_.host_config);
    return host_->build_config(metrics);
  }();
  if (!config.ok()) return config.status();

  if (!legacy_ || legacy_->metrics() != metrics) {
    Result<std::unique_ptr<LegacyMetrics>> legacy = [&] {
      TimedCall timed(costs_.prefix);
      return LegacyMetrics::create(chip_, metrics, host_->counter_availability());
    }();
    if (!legacy.ok()) return legacy.status();
    legacy_ = std::move(legacy).value();
    data_ = {};
  }
  pass_count_ = config->pass_count;
  if (options.config == ConfigSource::kNvpw) {
    Result<LegacyMetrics::NvpwConfig> nvpw = [&] {
      TimedCall timed(costs_.host_config);
      return legacy_->config_image();
    }();
    if (!nvpw.ok()) return nvpw.status();
    if (nvpw->pass_count != pass_count_) {
      KR_WARN("NVPW schedules {} passes for the set, the host API {}", nvpw->pass_count,
              pass_count_);
    }
    config_ = std::move(nvpw->image);
    pass_count_ = nvpw->pass_count;
  } else {
    config_ = std::move(config->image);
  }
  if (data_.image.empty() || data_.max_ranges != options.max_ranges) {
    TimedCall timed(costs_.counter_data_size);
    ASSIGN_OR_RETURN(data_,
                     legacy_->make_counter_data(static_cast<uint32_t>(options.max_ranges)));
    image_fresh_ = true;
  }
  metrics_ = metrics;
  options_ = options;
  host_api_reads_ = -1;
  all_submitted_ = false;
  decoded_ = false;
  passes_done_ = 0;
  return Status::Ok();
}

// ------------------------------------------------------------------------------------------
// Session and config
// ------------------------------------------------------------------------------------------

Status ProfilerApiSession::begin_session() {
  if (!image_fresh_) {
    TimedCall timed(costs_.counter_data_init);
    RETURN_IF_ERROR(legacy_->reinitialize(data_));
  }
  image_fresh_ = false;
  auto params = KR_CUPTI_PARAMS(CUpti_Profiler_BeginSession_Params);
  params.ctx = ctx_;
  params.counterDataImageSize = data_.image.size();
  params.pCounterDataImage = data_.image.data();
  params.counterDataScratchBufferSize = data_.scratch.size();
  params.pCounterDataScratchBuffer = data_.scratch.data();
  params.range = options_.mode == RangeMode::kUser ? CUPTI_UserRange : CUPTI_AutoRange;
  params.replayMode = CUPTI_UserReplay;
  size_t per_pass = options_.max_ranges_per_pass ? options_.max_ranges_per_pass
                                                 : options_.max_ranges;
  params.maxRangesPerPass = per_pass;
  params.maxLaunchesPerPass = std::max(per_pass, options_.max_launches_per_pass);
  KR_PAPI_CALL(costs_.begin_session, cuptiProfilerBeginSession(&params));
  ++costs_.sessions;
  session_open_ = true;
  config_set_ = false;
  unflushed_ = false;
  returned_ = 0;
  collections_in_session_ = 0;
  names_.clear();
  return Status::Ok();
}

Status ProfilerApiSession::set_config() {
  auto params = KR_CUPTI_PARAMS(CUpti_Profiler_SetConfig_Params);
  params.ctx = ctx_;
  params.pConfig = config_.data();
  params.configSize = config_.size();
  params.minNestingLevel = 1;
  params.numNestingLevels = 1;
  params.passIndex = 0;
  params.targetNestingLevel = 1;
  KR_PAPI_CALL(costs_.set_config, cuptiProfilerSetConfig(&params));
  config_set_ = true;
  all_submitted_ = false;
  passes_done_ = 0;
  return Status::Ok();
}

Status ProfilerApiSession::unset_config() {
  if (!config_set_) return Status::Ok();
  auto params = KR_CUPTI_PARAMS(CUpti_Profiler_UnsetConfig_Params);
  params.ctx = ctx_;
  config_set_ = false;
  KR_PAPI_CALL(costs_.unset_config, cuptiProfilerUnsetConfig(&params));
  return Status::Ok();
}

Status ProfilerApiSession::flush() {
  auto params = KR_CUPTI_PARAMS(CUpti_Profiler_FlushCounterData_Params);
  params.ctx = ctx_;
  KR_PAPI_CALL(costs_.flush, cuptiProfilerFlushCounterData(&params));
  unflushed_ = false;
  costs_.ranges_dropped += params.numRangesDropped;
  costs_.trace_bytes_dropped += params.numTraceBytesDropped;
  if (params.numRangesDropped) {
    KR_WARN("profiler API dropped {} range(s) ({} trace bytes)", params.numRangesDropped,
            params.numTraceBytesDropped);
  }
  return Status::Ok();
}

Status ProfilerApiSession::restart_config() {
  if (!session_open_) return Error(KREPLAY_STATUS_ERROR, "restart_config() without a session");
  if (in_pass_) return Error(KREPLAY_STATUS_ERROR, "restart_config() inside a pass");
  if (unflushed_) RETURN_IF_ERROR(flush());
  RETURN_IF_ERROR(unset_config());
  return set_config();
}

Status ProfilerApiSession::end_session() {
  if (!session_open_) return Status::Ok();
  Status first = Status::Ok();
  auto keep = [&](Status s) {
    if (first.ok() && !s.ok()) first = std::move(s);
  };
  if (in_pass_) {
    auto disable = KR_CUPTI_PARAMS(CUpti_Profiler_DisableProfiling_Params);
    disable.ctx = ctx_;
    cuptiProfilerDisableProfiling(&disable);
    auto end = KR_CUPTI_PARAMS(CUpti_Profiler_EndPass_Params);
    end.ctx = ctx_;
    cuptiProfilerEndPass(&end);
    in_pass_ = false;
  }
  if (unflushed_) keep(flush());
  keep(unset_config());
  auto params = KR_CUPTI_PARAMS(CUpti_Profiler_EndSession_Params);
  params.ctx = ctx_;
  session_open_ = false;
  CUptiResult r;
  {
    TimedCall timed(costs_.end_session);
    r = cuptiProfilerEndSession(&params);
  }
  keep(cupti_status(r, "cuptiProfilerEndSession"));
  return first;
}

// ------------------------------------------------------------------------------------------
// Collection
// ------------------------------------------------------------------------------------------

Status ProfilerApiSession::begin() {
  if (config_.empty() || !legacy_) return Error(KREPLAY_STATUS_ERROR, "begin() before configure()");
  if (in_pass_) return Error(KREPLAY_STATUS_ERROR, "begin() inside a pass");
  if (options_.scope == SessionScope::kPerDispatch) {
    RETURN_IF_ERROR(end_session());
    RETURN_IF_ERROR(begin_session());
    RETURN_IF_ERROR(set_config());
  } else {
    size_t used = options_.mode == RangeMode::kUser ? names_.size() : collections_in_session_;
    if (session_open_ && used >= options_.max_ranges) {
      // The image is full: its ranges must have been read before a new session reuses it.
      if (unflushed_) RETURN_IF_ERROR(flush());
      ASSIGN_OR_RETURN(size_t count, range_count());
      if (returned_ < count) {
        return Error(KREPLAY_STATUS_ERROR,
                     fmt::format("counter-data image full ({} ranges) with {} range(s) not read: "
                                 "call values() before the next begin()",
                                 options_.max_ranges, count - returned_));
      }
      ++costs_.rollovers;
      RETURN_IF_ERROR(end_session());
    }
    if (!session_open_) {
      RETURN_IF_ERROR(begin_session());
      RETURN_IF_ERROR(set_config());
    } else if (passes_done_ > 0) {
      if (!all_submitted_) {
        return Error(KREPLAY_STATUS_ERROR,
                     fmt::format("begin() after {} of {} passes", passes_done_, pass_count_));
      }
      if (options_.kept_reset == KeptReset::kSetConfig) {
        RETURN_IF_ERROR(restart_config());
      }
    }
  }
  ++collections_in_session_;
  all_submitted_ = false;
  decoded_ = false;
  passes_done_ = 0;
  return Status::Ok();
}

Status ProfilerApiSession::start() {
  if (!session_open_ || !config_set_) return Error(KREPLAY_STATUS_ERROR, "start() before begin()");
  if (in_pass_) return Error(KREPLAY_STATUS_ERROR, "start() twice without stop()");
  if (all_submitted_) {
    return Error(KREPLAY_STATUS_ERROR,
                 fmt::format("start() after all {} passes were submitted; call begin() for a new "
                             "collection",
                             pass_count_));
  }
  auto begin = KR_CUPTI_PARAMS(CUpti_Profiler_BeginPass_Params);
  begin.ctx = ctx_;
  KR_PAPI_CALL(costs_.begin_pass, cuptiProfilerBeginPass(&begin));
  in_pass_ = true;
  auto enable = KR_CUPTI_PARAMS(CUpti_Profiler_EnableProfiling_Params);
  enable.ctx = ctx_;
  KR_PAPI_CALL(costs_.enable, cuptiProfilerEnableProfiling(&enable));
  return Status::Ok();
}

Result<PassResult> ProfilerApiSession::stop() {
  if (!in_pass_) return Error(KREPLAY_STATUS_ERROR, "stop() without start()");
  auto disable = KR_CUPTI_PARAMS(CUpti_Profiler_DisableProfiling_Params);
  disable.ctx = ctx_;
  KR_PAPI_CALL(costs_.disable, cuptiProfilerDisableProfiling(&disable));
  auto end = KR_CUPTI_PARAMS(CUpti_Profiler_EndPass_Params);
  end.ctx = ctx_;
  in_pass_ = false;
  KR_PAPI_CALL(costs_.end_pass, cuptiProfilerEndPass(&end));
  ++passes_done_;
  unflushed_ = true;
  all_submitted_ = end.allPassesSubmitted != 0;
  return PassResult{all_submitted_, end.passIndex};
}

Status ProfilerApiSession::push_range(const std::string& name) {
  if (options_.mode != RangeMode::kUser) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "push_range() needs RangeMode::kUser");
  }
  if (!in_pass_) return Error(KREPLAY_STATUS_ERROR, "push_range() outside a pass");
  auto params = KR_CUPTI_PARAMS(CUpti_Profiler_PushRange_Params);
  params.ctx = ctx_;
  params.pRangeName = name.c_str();
  params.rangeNameLength = name.size();
  KR_PAPI_CALL(costs_.push_range, cuptiProfilerPushRange(&params));
  if (passes_done_ == 0) names_.push_back(name);
  return Status::Ok();
}

Status ProfilerApiSession::pop_range() {
  if (options_.mode != RangeMode::kUser) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "pop_range() needs RangeMode::kUser");
  }
  if (!in_pass_) return Error(KREPLAY_STATUS_ERROR, "pop_range() outside a pass");
  auto params = KR_CUPTI_PARAMS(CUpti_Profiler_PopRange_Params);
  params.ctx = ctx_;
  KR_PAPI_CALL(costs_.pop_range, cuptiProfilerPopRange(&params));
  return Status::Ok();
}

Result<size_t> ProfilerApiSession::decode() {
  if (in_pass_) return Error(KREPLAY_STATUS_ERROR, "decode() inside a pass");
  if (!all_submitted_) {
    return Error(KREPLAY_STATUS_ERROR,
                 fmt::format("decode() after {} of {} passes: CUPTI has not seen every pass",
                             passes_done_, pass_count_));
  }
  uint64_t before = costs_.ranges_dropped;
  if (unflushed_) RETURN_IF_ERROR(flush());
  if (options_.scope == SessionScope::kPerDispatch) RETURN_IF_ERROR(end_session());
  decoded_ = true;
  return static_cast<size_t>(costs_.ranges_dropped - before);
}

Result<size_t> ProfilerApiSession::range_count() const {
  auto count = ProfilerHost::range_count(data_.image);
  if (count.ok()) return count;
  if (options_.mode == RangeMode::kUser) return names_.size();
  return count.status();
}

Result<std::vector<RangeValues>> ProfilerApiSession::values(EvalPath path) {
  if (!decoded_) return Error(KREPLAY_STATUS_ERROR, "values() before decode()");
  ASSIGN_OR_RETURN(size_t count, range_count());
  std::vector<RangeValues> out;
  if (path == EvalPath::kAuto && host_api_reads_ == 0) path = EvalPath::kNvpw;
  for (size_t i = returned_; i < count; ++i) {
    TimedCall timed(costs_.evaluate);
    RangeValues range;
    auto name = ProfilerHost::range_name(data_.image, i);
    if (name.ok()) {
      range.name = std::move(name).value();
    } else {
      range.name = i < names_.size() ? names_[i] : std::to_string(i);
    }
    Result<std::vector<double>> values = Error(KREPLAY_STATUS_ERROR, "not evaluated");
    if (path != EvalPath::kNvpw) {
      values = host_->evaluate(data_.image, i, metrics_);
      if (path == EvalPath::kAuto) {
        host_api_reads_ = values.ok() ? 1 : 0;
        if (!values.ok()) {
          KR_DEBUG("host API refuses the legacy counter data ({}); decoding with NVPW",
                   values.status().message());
          path = EvalPath::kNvpw;
        }
      }
      last_eval_ = EvalPath::kHostApi;
    }
    if (path == EvalPath::kNvpw) {
      values = legacy_->evaluate(data_.image, i);
      last_eval_ = EvalPath::kNvpw;
    }
    if (!values.ok()) return values.status();
    range.values = std::move(values).value();
    out.push_back(std::move(range));
  }
  // Only a session kept across collections remembers what was read: the next values() of a
  // per-dispatch session reads a new image.
  if (options_.scope == SessionScope::kKept) returned_ = count;
  return out;
}

Result<std::vector<double>> ProfilerApiSession::evaluate_range(size_t index, EvalPath path) {
  if (!decoded_) return Error(KREPLAY_STATUS_ERROR, "evaluate_range() before decode()");
  if (path == EvalPath::kNvpw) return legacy_->evaluate(data_.image, index);
  return host_->evaluate(data_.image, index, metrics_);
}

}  // namespace kreplay::cupti
