#include "cli/job_services.hpp"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace kreplay::cli {

using config::PassKind;
using config::ServiceOptions;

namespace {

struct ServiceKeys {
  PassKind kind;
  const char* key;       // selects the service
  const char* noun;      // "PC sampling"
  const char* article;   // "the timing pass", for "configures ..."
  const char* selector;  // "pc_sampling: true", for "move it to the job with ..."
  std::vector<const char*> settings;
};

// One entry per service a job can select.
const std::vector<ServiceKeys>& services() {
  static const std::vector<ServiceKeys> kServices = {
      {PassKind::kCounters, "pmc", "counter", "the counters", "pmc", {}},
      {PassKind::kTiming,
       "timing_pass",
       "timing",
       "the timing pass",
       "timing_pass: true",
       {"timing_pass_flush_cache"}},
      {PassKind::kPcSampling,
       "pc_sampling",
       "PC sampling",
       "PC sampling",
       "pc_sampling: true",
       {"pc_sampling_period"}},
      {PassKind::kSassMetrics,
       "sass_metrics",
       "SASS metrics",
       "SASS metrics",
       "sass_metrics or source_counters",
       {}},
      {PassKind::kPmSampling,
       "pm_sampling",
       "PM sampling",
       "PM sampling",
       "pm_sampling",
       {"pm_sampling_interval"}},
  };
  return kServices;
}

bool selects(const JobSpec& job, PassKind kind) {
  switch (kind) {
    case PassKind::kCounters:
      return job.pmc.has_value();
    case PassKind::kTiming:
      return job.timing_pass.value_or(false);
    case PassKind::kPcSampling:
      return job.pc_sampling.value_or(false);
    case PassKind::kSassMetrics:
      return job.sass_metrics.has_value() || job.source_counters.value_or(false);
    case PassKind::kPmSampling:
      return job.pm_sampling.has_value();
  }
  return false;
}

}  // namespace

Result<JobService> job_service(const InputFile& file, const JobSpec& job) {
  if (job.sass_metrics && job.source_counters.value_or(false)) {
    return InvalidArgument(fmt::format(
        "{}: sass_metrics and source_counters both choose the SASS metrics; source_counters is "
        "the default set, so give one of them",
        file.where(job, "source_counters")));
  }
  std::vector<const ServiceKeys*> chosen;
  for (const auto& s : services()) {
    if (selects(job, s.kind)) chosen.push_back(&s);
  }
  if (chosen.size() > 1) {
    return InvalidArgument(fmt::format(
        "{}: selects both {} and {}; a pass collects one service, so split it into two jobs",
        file.where(job), chosen[0]->key, chosen[1]->key));
  }
  if (chosen.empty()) {
    return InvalidArgument(fmt::format(
        "{}: collects nothing; in job_replay_mode: kernel each job is one pass, so give it pmc "
        "(a counter group), timing_pass: true, pc_sampling: true, sass_metrics, "
        "source_counters: true or pm_sampling",
        file.where(job)));
  }
  const ServiceKeys& mine = *chosen.front();
  for (const auto& other : services()) {
    if (other.kind == mine.kind) continue;
    for (const char* key : other.settings) {
      if (!job.has(key)) continue;
      return InvalidArgument(
          fmt::format("{}: {} configures {}, but this is a {} job; move it to the job with {}",
                      file.where(job, key), key, other.article, mine.noun, other.selector));
    }
  }
  const char* key =
      mine.kind == PassKind::kSassMetrics && !job.sass_metrics ? "source_counters" : mine.key;
  return JobService{mine.kind, key, mine.noun};
}

void add_job_settings(const JobSpec& job, ServiceOptions* services) {
  if (job.pc_sampling_period)
    services->pc_sampling_period = static_cast<uint32_t>(*job.pc_sampling_period);
  if (job.sass_metrics) services->sass_metrics = *job.sass_metrics;
  if (job.pm_sampling) services->pm_metrics = *job.pm_sampling;
  if (job.pm_sampling_interval) services->pm_interval_ns = *job.pm_sampling_interval;
}

Status check_no_service_keys(const InputFile& file, const JobSpec& job) {
  for (const char* key : {"pc_sampling", "pc_sampling_period", "sass_metrics", "source_counters",
                          "pm_sampling", "pm_sampling_interval"}) {
    if (!job.has(key)) continue;
    return InvalidArgument(fmt::format(
        "{}: {} selects a pass of its own, which needs job_replay_mode: kernel (the jobs are "
        "then the passes of one run); set job_replay_mode: kernel",
        file.where(job, key), key));
  }
  return Status::Ok();
}

}  // namespace kreplay::cli
