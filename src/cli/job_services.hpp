// Which pass service a job of job_replay_mode: kernel selects (pmc, timing_pass, pc_sampling,
// sass_metrics or source_counters, pm_sampling), and the settings the service jobs give. Kept
// apart from plan.cpp so that each service's job keys are listed in one place.
#pragma once

#include "cli/input_file.hpp"
#include "common/status.hpp"
#include "config/tool_config.hpp"

namespace kreplay::cli {

struct JobService {
  config::PassKind kind = config::PassKind::kCounters;
  const char* key = "";   ///< the key that selects it ("pc_sampling")
  const char* noun = "";  ///< for messages ("PC sampling")
};

/// The job's one service. Errors (one line, at the key): two services on one job, none, SASS
/// given twice (sass_metrics and source_counters), or a service's setting on a job of another.
Result<JobService> job_service(const InputFile& file, const JobSpec& job);

/// Copy the job's service settings (PC period, SASS metrics, PM metrics and interval).
void add_job_settings(const JobSpec& job, config::ServiceOptions* services);

/// An application-mode job with a per-pass service key: one line saying that they are passes of
/// job_replay_mode: kernel; OK otherwise.
Status check_no_service_keys(const InputFile& file, const JobSpec& job);

}  // namespace kreplay::cli
