// The kreplay command's option table (options.cpp parses with it): every option's names, value,
// group and help text as CLI11 is told them, and the help's layout (wrapped to 100 columns, the
// footer on output names). What CLI11 leaves is a RawOptions, which options.cpp checks and
// converts.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/service_options.hpp"

namespace kreplay::cli::option_table {

// Everything as CLI11 leaves it; checked and converted by to_options().
struct RawOptions {
  std::vector<std::vector<std::string>> pmc;
  std::vector<std::string> metrics;
  std::string metric_set, section_folder;
  std::vector<std::string> sections;
  bool list_sets = false, list_sections = false;
  std::string snapshot;
  std::string replay_mode, range_markers, replay_memory, graph_profiling, cache_control,
      clock_control;
  bool beta = false;
  std::string include, exclude, kernel_name, iteration_range, launch_skip, launch_count;
  std::vector<std::string> nvtx_include, nvtx_exclude;
  std::string profile_from_start, kernel_id, kernel_name_base;
  bool nvtx = false;
  std::string ranks;
  std::string output_directory, output_file;
  std::vector<std::string> output_format;
  bool kernel_trace = false, summary = false, gzip = false, check_divergence = false;
  std::string input;
  bool list_avail = false;
  std::vector<std::string> pmc_check;
  std::string chip;
  std::string log_level;
  bool quiet = false, version = false;
  ServiceRaw services;
};

/// The command's description, first in its help.
inline constexpr const char* kDescription =
    "kreplay: a kernel-replay profiler for CUDA applications.\n"
    "Runs APP with the profiler injected. Each selected kernel launch is replayed in place, once\n"
    "per pass, with device memory restored between passes, so every counter group sees the same\n"
    "inputs and the application sees exactly one execution.";

/// Declare every option of the command on @p app, bound to @p r; set the help's formatter.
void add_options(CLI::App& app, RawOptions& r);

}  // namespace kreplay::cli::option_table
