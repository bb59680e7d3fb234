// The per-pass service options of the kreplay command (issue 11): --timing-pass, --pc-sampling
// [--pc-sampling-period N], --sass-metrics M1,... or --source-counters, --pm-sampling M1,...
// [--pm-sampling-interval NS], and --<service>-pass-position K for each. Kept apart from
// options.cpp so that each service's flags live in one place.
//
// place_service_passes() (make_run_plan) puts them into the command line's run: each service one
// pass of its own, after the counter passes unless its position says otherwise (the tool places
// it, as the counter passes' number is known on the device); more than one pass makes the run
// replay launches in kernel mode. The per-instruction services (PC sampling, SASS metrics) with
// no kernel filter or iteration range profile each kernel's first launch only, and say so.
#pragma once

#include <string>
#include <vector>

#include "cli/options.hpp"
#include "common/status.hpp"

namespace CLI {
class App;
}

namespace kreplay::cli {

/// The service flags as CLI11 leaves them.
struct ServiceRaw {
  bool timing = false, pc = false, source_counters = false;
  std::string pc_period, pm_interval;
  std::vector<std::string> sass, pm;
  std::string timing_position, pc_position, sass_position, pm_position;
};

void add_service_options(CLI::App& app, ServiceRaw& raw);

/// Check the flags (one line per problem, naming the fix) and fill o.service_passes and
/// o.services.
Status to_service_options(const CLI::App& app, const ServiceRaw& raw, CliOptions& o);

/// Put @p o's service passes into @p runs (the command line's runs). Errors: services with
/// --replay-mode application or range, or with an input file (each cannot confine them to a
/// pass). @p notes gets the first-launch-only line.
Status place_service_passes(const CliOptions& o, bool from_input_file,
                            std::vector<config::ToolConfig>* runs, std::vector<std::string>* notes);

/// A run with a per-instruction service (PC sampling, SASS metrics) and no kernel filter or
/// iteration range profiles each kernel's first launch only (iteration range [1]), with one note.
/// Used for the command line's services and for an input file's service jobs.
void default_to_first_launches(config::ToolConfig& c, std::vector<std::string>* notes);

}  // namespace kreplay::cli
