#include "cli/options.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>
#include <sstream>

#include "cli/option_words.hpp"
#include "cli/service_options.hpp"
#include "common/util.hpp"
#include "config/filter.hpp"
#include "config/output_path.hpp"
#include "config/text.hpp"
#include "kreplay/kreplay.h"

namespace kreplay::cli {

using config::check_kernel_regex;
using config::FilterOptions;
using config::IterationRange;
using config::printable;
using config::valid_utf8;
using config::validate_filter_options;
using config::validate_output_template;

namespace {

constexpr const char* kSeeHelp = "run kreplay --help for the options";

// Everything as CLI11 leaves it; checked and converted by to_options().
struct Raw {
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

// Help within 100 columns: CLI11 2.1 does not wrap option descriptions, so wrap them here.
constexpr size_t kHelpWidth = 100;
constexpr size_t kHelpColumn = 32;

std::string wrap(const std::string& text, size_t width) {
  std::string out;
  size_t line = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t end = text.find(' ', i);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(i, end - i);
    if (line > 0 && line + 1 + word.size() > width) {
      out += '\n';
      line = 0;
    } else if (line > 0) {
      out += ' ';
      ++line;
    }
    out += word;
    line += word.size();
    i = end + 1;
  }
  return out;
}

class Formatter : public CLI::Formatter {
 public:
  Formatter() { column_width(kHelpColumn); }

  std::string make_usage(const CLI::App*, std::string) const override {
    return "\nUsage: kreplay [OPTIONS] -- APP [ARGS...]\n"
           "       kreplay report RUN.db [OPTIONS]       (kreplay report --help)\n"
           "       kreplay convert RUN.db --to FORMAT    (kreplay convert --help)\n"
           "       kreplay merge DIR|FILES... -o all.db  (kreplay merge --help)\n"
           "       kreplay --list-avail [--chip NAME]\n"
           "       kreplay --pmc-check COUNTER... [--chip NAME]\n"
           "       kreplay --list-sets | --list-sections [--section-folder DIR]\n";
  }

  std::string make_option(const CLI::Option* opt, bool is_positional) const override {
    std::stringstream out;
    CLI::detail::format_help(out, make_option_name(opt, is_positional) + make_option_opts(opt),
                             wrap(make_option_desc(opt), kHelpWidth - kHelpColumn), kHelpColumn);
    return out.str();
  }
};

constexpr const char* kDescription =
    "kreplay: a kernel-replay profiler for CUDA applications.\n"
    "Runs APP with the profiler injected. Each selected kernel launch is replayed in place, once\n"
    "per pass, with device memory restored between passes, so every counter group sees the same\n"
    "inputs and the application sees exactly one execution.";

constexpr const char* kFooter =
    "Examples:\n"
    "  kreplay -- ./app\n"
    "      no counters named: the set basic (launch statistics, occupancy, speed of light)\n"
    "  kreplay --set full -k regex:gemm --launch-count 3 -- ./app\n"
    "      every section on the first 3 gemm launches; then: kreplay report "
    "<host>/<pid>_results.db\n"
    "  kreplay --pmc sm__cycles_elapsed.avg smsp__inst_executed.sum -- ./app\n"
    "      one counter group, one run, no replay\n"
    "  kreplay --pmc sm__cycles_elapsed.avg --pmc dram__bytes_read.sum -- ./app\n"
    "      two groups: each launch is measured twice in one run (range replay, or kernel\n"
    "      replay with a kernel filter: --replay-mode auto)\n"
    "  kreplay --pmc A --pmc B --replay-mode application -d out -- ./app\n"
    "      two groups, two full runs of the application, in out/pass_1/ and out/pass_2/\n"
    "  kreplay --metrics sm__throughput.avg.pct_of_peak_sustained_elapsed -k regex:gemm \\\n"
    "          --launch-skip 10 --launch-count 5 -- ./app --size 4096\n"
    "      metrics on launches 11-15 of the kernels whose names contain gemm\n"
    "  kreplay --metrics dram__bytes_read.sum,smsp__inst_executed.sum --replay-mode range \\\n"
    "          --range-markers nvtx:step -- ./app\n"
    "      ranges of launches inside the NVTX range \"step\", each launch with its own values\n"
    "  kreplay -i jobs.yaml -- ./app\n"
    "      the jobs of an input file (schema: share/kreplay/input-schema.json)\n"
    "  kreplay --list-avail --chip GH100\n"
    "      the counters of a chip, no GPU needed\n"
    "\n"
    "Output names may use %hostname%, %pid%, %ppid%, %rank%, %q{VAR}, %env{VAR}%, %h, %p and %%.\n"
    "The default is -d . -o %hostname%/%pid%, giving ./<host>/<pid>_results.db, or, in a job\n"
    "whose launcher gives a rank (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID, ...),\n"
    "./<host>/<rank>_results.db.";

void add_options(CLI::App& app, Raw& r) {
  app.formatter(std::make_shared<Formatter>());
  app.footer(kFooter);

  const char* counters = "Counters";
  app.add_option("--pmc", r.pmc,
                 "A counter group (names separated by blanks or commas). Repeat for more "
                 "groups; each group is one pass")
      ->delimiter(',')
      ->expected(1, -1)
      ->allow_extra_args()
      ->type_name("COUNTER")
      ->group(counters);
  app.add_option("--metrics", r.metrics,
                 "Metrics to collect (comma list); split into passes automatically")
      ->delimiter(',')
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("M1,M2,...")
      ->group(counters);
  app.add_option("--set", r.metric_set,
                 "Collect a set of sections: basic (the default when no counters are named), "
                 "detailed, full or none (--list-sets)")
      ->type_name("NAME")
      ->group(counters);
  app.add_option("--section", r.sections,
                 "Collect a section (--list-sections), or those matching regex:EXPR; repeatable, "
                 "and adds to --set")
      ->delimiter(',')
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("NAME|regex:EXPR")
      ->group(counters);
  app.add_option("--section-folder", r.section_folder,
                 "Also read the section files (*.yaml, sets.yaml) of this folder")
      ->type_name("DIR")
      ->group(counters);

  add_service_options(app, r.services);

  const char* replay = "Replay";
  app.add_option("--replay-mode", r.replay_mode,
                 "auto (default when more than one pass is needed): range replay, or kernel replay "
                 "for requests range replay does not serve (kernel filters, per-pass services, "
                 "--replay-memory args, --check-divergence); kernel: replay each launch in place; "
                 "application: re-run the application once per pass; range: replay "
                 "consecutive launches up to the next call that can observe memory as one unit "
                 "(one counter session per pass for all of them: far faster for short kernels)")
      ->type_name("kernel|auto|application|range")
      ->group(replay);
  app.add_option("--range-markers", r.range_markers,
                 "With --replay-mode range: profile only the launches between "
                 "cudaProfilerStart and cudaProfilerStop, or inside the NVTX range NAME (as ncu "
                 "--nvtx-include); ranges also close at those markers")
      ->type_name("cuda-profiler|nvtx:NAME")
      ->group(replay);
  app.add_option("--replay-memory", r.replay_memory,
                 "Memory restored between passes: all tracked memory (default) or only what the "
                 "launch's arguments point into")
      ->type_name("all|args")
      ->group(replay);
  app.add_option("--graph-profiling", r.graph_profiling,
                 "CUDA graph launches: node (default) profiles every kernel node of a graph as a "
                 "launch of its own, replayed with the graph; graph profiles each graph launch "
                 "as one workload with one set of values (as ncu --graph-profiling)")
      ->type_name("node|graph")
      ->group(replay);
  app.add_option("--cache-control", r.cache_control,
                 "Caches before every counted pass: all (default) writes them back and invalidates "
                 "them, after the restore, so every pass starts cold; none leaves them as the "
                 "restore left them (as ncu --cache-control)")
      ->type_name("all|none")
      ->group(replay);
  app.add_option("--snapshot", r.snapshot,
                 "How a replay saves memory: auto (default) saves every tracked allocation where "
                 "that fits in device memory, else only what the launch writes (learned from its "
                 "earlier launches and proven by digests of all memory); full always saves every "
                 "allocation; write-set always saves only what the launch writes")
      ->type_name("auto|full|write-set")
      ->group(replay);
  app.add_flag("--check-divergence", r.check_divergence,
               "After every pass, digest the memory the launch can change and compare the passes; "
               "a launch whose passes leave different memory is flagged (they did not measure "
               "the same work)")
      ->group(replay);
  app.add_option("--clock-control", r.clock_control,
                 "Accepted with none only: kreplay never changes clocks on a shared GPU (as ncu "
                 "--clock-control none)")
      ->type_name("none")
      ->group(replay);
  app.add_flag("--kernel-replay-beta-enabled", r.beta,
               "Accepted and ignored, so rocprofv3 command lines work unchanged")
      ->group(replay);

  const char* select = "Kernel selection";
  app.add_option("--kernel-include-regex", r.include,
                 "Profile kernels whose demangled name matches this RE2 regex (partial match)")
      ->type_name("REGEX")
      ->group(select);
  app.add_option("--kernel-exclude-regex", r.exclude,
                 "Then skip kernels whose demangled name matches this regex")
      ->type_name("REGEX")
      ->group(select);
  app.add_option("-k,--kernel-name", r.kernel_name,
                 "Profile kernels with exactly this name (function name, demangled or mangled), "
                 "or matching regex:EXPR")
      ->type_name("NAME|regex:EXPR")
      ->group(select);
  app.add_option("--kernel-id", r.kernel_id,
                 "Profile the launches with this ncu-style id, context:stream:name:invocation, "
                 "each part optional, e.g. ::gemm:3 (the third gemm launch) or "
                 "0::regex:^sgemm: (context: the device index; stream: as the results show it)")
      ->type_name("CTX:STREAM:NAME:N")
      ->group(select);
  app.add_option("--kernel-name-base", r.kernel_name_base,
                 "What -k and --kernel-id compare: function (default; the function name with or "
                 "without templates and scope, and the full names), demangled (with parameters) "
                 "or mangled")
      ->type_name("function|demangled|mangled")
      ->group(select);
  app.add_option("--nvtx-include", r.nvtx_include,
                 "Profile only launches inside these NVTX ranges (ncu's syntax; repeatable, any "
                 "may match): \"step/\" push/pop range step, \"A/B/\" B inside A, \"A/*/B\", "
                 "\"A]\" A innermost, \"[A/\" A outermost, \"A\" a start/end range, \"D@A/\" "
                 "domain D, regex:EXPR")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("EXPR")
      ->group(select);
  app.add_option("--nvtx-exclude", r.nvtx_exclude,
                 "Then skip launches inside these NVTX ranges (same syntax; repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("EXPR")
      ->group(select);
  app.add_flag("--nvtx", r.nvtx,
               "Accepted for ncu's command lines: kreplay follows NVTX whenever --nvtx-include or "
               "--nvtx-exclude is given")
      ->group(select);
  app.add_option("--profile-from-start", r.profile_from_start,
                 "off: profile nothing until the application calls cudaProfilerStart (or "
                 "torch.cuda.profiler.start()), and nothing after cudaProfilerStop; on (default)")
      ->type_name("on|off")
      ->group(select);
  app.add_option("--kernel-iteration-range", r.iteration_range,
                 "Launches of each kernel to profile, 1-based, e.g. \"[1-3, 5]\" or 2-4")
      ->type_name("RANGE")
      ->group(select);
  app.add_option("--launch-skip", r.launch_skip,
                 "Skip the first N launches that pass the filters above")
      ->type_name("N")
      ->group(select);
  app.add_option("--launch-count", r.launch_count, "Then profile at most N launches")
      ->type_name("N")
      ->group(select);
  app.add_option("--ranks", r.ranks,
                 "Profile only these ranks of an MPI or torchrun job, e.g. 0,3 or 0-3 (the rank "
                 "from RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID, ...); the other ranks "
                 "run without profiling")
      ->type_name("LIST")
      ->group(select);

  const char* output = "Output";
  app.add_option("-d,--output-directory", r.output_directory,
                 "Directory for the outputs (default: the current directory)")
      ->type_name("DIR")
      ->group(output);
  app.add_option("-o,--output-file", r.output_file,
                 "Output file name, without extension (default: %hostname%/%pid%, or "
                 "%hostname%/%rank% when a launcher gives a rank)")
      ->type_name("NAME")
      ->group(output);
  app.add_option("--output-format", r.output_format,
                 "Formats to write, comma list of sqlite, csv, json, perfetto (default: sqlite)")
      ->delimiter(',')
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("FMT,...")
      ->group(output);
  app.add_flag("--output-gzip", r.gzip, "Compress the json and perfetto outputs")->group(output);
  app.add_flag("--kernel-trace", r.kernel_trace, "Also write one record per kernel execution")
      ->group(output);
  app.add_flag("-S,--summary", r.summary, "Print and write a summary table per kernel")
      ->group(output);

  const char* input = "Input files";
  app.add_option("-i,--input", r.input,
                 "Read jobs from a JSON or YAML file (see share/kreplay/input-schema.json)")
      ->type_name("FILE")
      ->group(input);

  const char* discover = "Counter discovery (no application)";
  app.add_flag("--list-avail", r.list_avail, "List the counters and metrics, then exit")
      ->group(discover);
  app.add_flag("--list-sets", r.list_sets, "List the sets of sections, then exit")->group(discover);
  app.add_flag("--list-sections", r.list_sections,
               "List the sections, their metrics and rules, then exit")
      ->group(discover);
  app.add_option("--pmc-check", r.pmc_check, "Check that these counters fit in one pass, then exit")
      ->delimiter(',')
      ->expected(1, -1)
      ->allow_extra_args()
      ->type_name("COUNTER")
      ->group(discover);
  app.add_option("--chip", r.chip,
                 "With --list-avail, --pmc-check, --list-sets or --list-sections: the chip to ask "
                 "about (e.g. GH100), so no GPU is needed")
      ->type_name("NAME")
      ->group(discover);

  const char* general = "General";
  app.add_option("--log-level", r.log_level,
                 "quiet, error, warning (default), info, debug or trace")
      ->type_name("LEVEL")
      ->group(general);
  app.add_flag("-q,--quiet", r.quiet, "Print only errors")->group(general);
  app.add_flag("--version", r.version, "Print the version and exit")->group(general);
  // Re-created here so that it is listed last, under General.
  app.set_help_flag("-h,--help", "Print this help and exit")->group(general);
}

std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& n : opt->get_lnames()) names.push_back("--" + n);
    for (const std::string& n : opt->get_snames()) names.push_back("-" + n);
  }
  return names;
}

// "--launch-skip 12" -> 12.
Result<uint64_t> parse_count(std::string_view flag, const std::string& text, uint64_t minimum) {
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    return InvalidArgument(fmt::format("{}: \"{}\" is not a {} integer; write e.g. {} {}", flag,
                                       printable(text), minimum > 0 ? "positive" : "non-negative",
                                       flag, minimum > 0 ? 5 : 10));
  }
  if (value < minimum) {
    return InvalidArgument(
        fmt::format("{}: must be at least {}; leave it out for no limit", flag, minimum));
  }
  return value;
}

// "--ranks 0,3,5-7" -> {0, 3, 5, 6, 7}, sorted, without repeats.
Result<std::vector<int64_t>> parse_ranks(const std::string& text) {
  auto bad = [&](std::string_view item) {
    return InvalidArgument(fmt::format("--ranks: \"{}\" is not a rank; give ranks as non-negative "
                                       "integers and ranges, e.g. --ranks 0,3 or --ranks 0-3",
                                       printable(item)));
  };
  auto number = [](std::string_view s, int64_t* v) {
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
    return !s.empty() && ec == std::errc() && ptr == s.data() + s.size() && *v >= 0;
  };
  std::set<int64_t> ranks;
  const std::vector<std::string> items = split_list(text);
  if (items.empty()) return bad(text);
  for (const std::string& item : items) {
    size_t dash = item.find('-', 1);
    int64_t first = 0, last = 0;
    if (dash == std::string::npos) {
      if (!number(item, &first)) return bad(item);
      last = first;
    } else if (!number(std::string_view(item).substr(0, dash), &first) ||
               !number(std::string_view(item).substr(dash + 1), &last) || last < first ||
               last - first > 1000000) {
      return bad(item);
    }
    for (int64_t r = first; r <= last; ++r) ranks.insert(r);
  }
  return std::vector<int64_t>(ranks.begin(), ranks.end());
}

// CLI11's own errors, reworded where they are terse.
Status from_cli11(const CLI::ParseError& e) {
  std::string what = printable(e.what(), 300);
  size_t colon = what.find(": ");
  std::string name = colon == std::string::npos ? "" : what.substr(0, colon);
  if (what.find("At Most") != std::string::npos && !name.empty()) {
    return InvalidArgument(
        fmt::format("{} is given more than once; give it once (repeat only --pmc, "
                    "--metrics, --section, --output-format and --pmc-check)",
                    name));
  }
  if (what.find("required") != std::string::npos && what.find("missing") != std::string::npos &&
      !name.empty()) {
    return InvalidArgument(fmt::format("{} needs a value; {}", name, kSeeHelp));
  }
  return InvalidArgument(fmt::format("{}; {}", what, kSeeHelp));
}

// An option that takes values never takes an option as its value: a list ends at the next word
// written as an option, wherever it stands (CLI11 would let `--pmc-check --chip GH100 A B` take
// --chip as a counter, because a list must have one value). `--opt=value` is always a value.
Status check_option_values(const CLI::App& app, const std::vector<std::string>& words) {
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    const CLI::Option* opt = option_of(app, words[i]);
    if (opt == nullptr || opt->get_expected_min() < 1 || opt->get_type_size_max() < 1 ||
        words[i].find('=') != std::string::npos)
      continue;
    const std::string& next = words[i + 1];
    if (!looks_like_option(next)) continue;
    const std::string name = words[i];
    const std::string type = opt->get_type_name().empty() ? "VALUE" : opt->get_type_name();
    const bool list = opt->get_expected_max() > 1;
    const std::string other = printable(next.substr(0, next.find('=')));
    std::string example = fmt::format("{} {}{}", name, type, list ? " ..." : "");
    if (name == "--pmc-check") example = "kreplay --pmc-check A B --chip GH100";
    if (name == "--pmc") example = "kreplay --pmc A B --pmc C -- ./app";
    return InvalidArgument(fmt::format(
        "{} needs {} before {}, which is {} (a{} ends at the next option); write {}", name,
        list ? "its values" : "a value", other,
        option_of(app, next) != nullptr ? "one of kreplay's options" : "written as an option",
        list ? " list" : "n option's value", example));
  }
  return Status::Ok();
}

Status check_extras(const CLI::App& app, const std::vector<std::string>& words) {
  std::vector<std::string> extras = app.remaining();
  if (extras.empty()) return Status::Ok();
  const std::string& first = extras.front();
  // A word left over after a list that another option ended: say where its values must go.
  auto at = std::find(words.begin(), words.end(), first);
  const CLI::Option* ended = nullptr;
  std::string ender;
  for (auto it = words.begin(); it != at && it != words.end(); ++it) {
    const CLI::Option* opt = option_of(app, *it);
    if (opt == nullptr) continue;
    if (ended == nullptr && opt->get_expected_max() > 1 && it->find('=') == std::string::npos) {
      ended = opt;
    } else if (ended != nullptr && ender.empty()) {
      ender = it->substr(0, it->find('='));
    }
  }
  if (!looks_like_option(first) && ended != nullptr && !ender.empty() &&
      first.find('/') == std::string::npos) {
    const std::string list = "--" + ended->get_lnames().front();
    return InvalidArgument(fmt::format(
        "unexpected argument \"{}\": {} ends the list of {} (a list ends at the next option); "
        "put all of {}'s values before {}, or the application after --",
        printable(first), ender, list, list, ender));
  }
  if (first.size() > 1 && first[0] == '-') {
    std::string name = printable(first.substr(0, first.find('=')));
    std::string close = closest_name(name, option_names(app));
    std::string hint = close.empty() ? "" : fmt::format(" (did you mean {}?)", close);
    return InvalidArgument(
        fmt::format("unknown option {}{}; {}; the application's own options go after "
                    "--",
                    name, hint, kSeeHelp));
  }
  return InvalidArgument(
      fmt::format("unexpected argument \"{}\": the application and its arguments go "
                  "after --, e.g. kreplay [options] -- {} ...",
                  printable(first), printable(first)));
}

Result<CliOptions> to_options(const CLI::App& app, Raw& r, std::vector<std::string> command) {
  CliOptions o;
  RunSettings& s = o.settings;
  auto given = [&](const char* name) { return app.count(name) > 0; };
  o.command = std::move(command);

  // Counters.
  for (auto& group : r.pmc) {
    RETURN_IF_ERROR(check_counter_names("--pmc", group));
    o.pmc.push_back(std::move(group));
  }
  if (given("--metrics")) {
    RETURN_IF_ERROR(check_counter_names("--metrics", r.metrics));
    s.metrics = r.metrics;
  }
  if (given("--set")) {
    if (r.metric_set.empty()) return InvalidArgument("--set is empty; give a set such as basic");
    s.metric_set = r.metric_set;
  }
  if (given("--section")) {
    std::vector<std::string> items;
    for (const std::string& item : r.sections) {
      for (std::string& part : split_list(item)) items.push_back(std::move(part));
    }
    if (items.empty())
      return InvalidArgument("--section is empty; give a section such as SpeedOfLight");
    s.sections = std::move(items);
  }
  if (given("--section-folder")) {
    if (r.section_folder.empty())
      return InvalidArgument("--section-folder is empty; give a folder of section files");
    s.section_folder = r.section_folder;
  }

  RETURN_IF_ERROR(to_service_options(app, r.services, o));

  // Replay.
  if (given("--replay-mode")) {
    ASSIGN_OR_RETURN(s.replay_mode, parse_replay_mode_value("--replay-mode", r.replay_mode));
  }
  if (given("--range-markers")) {
    RETURN_IF_ERROR(check_range_markers("--range-markers", r.range_markers));
    if (s.replay_mode && *s.replay_mode != ReplayMode::kRange &&
        *s.replay_mode != ReplayMode::kAuto) {
      return InvalidArgument(
          fmt::format("--range-markers applies to --replay-mode range, not {}; use "
                      "--replay-mode range or drop --range-markers",
                      to_string(*s.replay_mode)));
    }
    s.range_markers = r.range_markers;
  }
  if (given("--replay-memory")) {
    ASSIGN_OR_RETURN(s.replay_memory,
                     parse_replay_memory_value("--replay-memory", r.replay_memory));
  }
  if (given("--graph-profiling")) {
    ASSIGN_OR_RETURN(s.graph_profiling,
                     parse_graph_profiling_value("--graph-profiling", r.graph_profiling));
  }
  if (given("--cache-control")) {
    ASSIGN_OR_RETURN(s.cache_control,
                     parse_cache_control_value("--cache-control", r.cache_control));
  }
  if (given("--snapshot")) {
    ASSIGN_OR_RETURN(s.snapshot, parse_snapshot_mode_value("--snapshot", r.snapshot));
  }
  if (given("--check-divergence")) s.check_divergence = r.check_divergence;
  if (given("--clock-control")) {
    RETURN_IF_ERROR(check_clock_control("--clock-control", r.clock_control));
  }
  o.kernel_replay_beta_enabled = r.beta;

  // Kernel selection.
  if (given("--kernel-include-regex")) {
    RETURN_IF_ERROR(check_kernel_regex(r.include, "--kernel-include-regex"));
    s.kernel_include_regex = r.include;
  }
  if (given("--kernel-exclude-regex")) {
    RETURN_IF_ERROR(check_kernel_regex(r.exclude, "--kernel-exclude-regex"));
    s.kernel_exclude_regex = r.exclude;
  }
  if (given("--kernel-name")) {
    FilterOptions probe;
    probe.kernel_name = r.kernel_name;
    RETURN_IF_ERROR(validate_filter_options(probe));
    s.kernel_name = r.kernel_name;
  }
  if (given("--kernel-iteration-range")) {
    auto range = IterationRange::Parse(r.iteration_range);
    if (!range.ok()) {
      return InvalidArgument(fmt::format("--kernel-iteration-range: {}", range.status().message()));
    }
    s.kernel_iteration_range = r.iteration_range;
  }
  if (given("--launch-skip")) {
    ASSIGN_OR_RETURN(s.launch_skip, parse_count("--launch-skip", r.launch_skip, 0));
  }
  if (given("--kernel-id")) {
    RETURN_IF_ERROR(check_kernel_id("--kernel-id", r.kernel_id));
    s.kernel_id = r.kernel_id;
  }
  if (given("--kernel-name-base")) {
    RETURN_IF_ERROR(check_kernel_name_base("--kernel-name-base", r.kernel_name_base));
    s.kernel_name_base = r.kernel_name_base;
  }
  if (given("--nvtx-include")) {
    RETURN_IF_ERROR(check_nvtx_expressions("--nvtx-include", r.nvtx_include));
    s.nvtx_include = r.nvtx_include;
  }
  if (given("--nvtx-exclude")) {
    RETURN_IF_ERROR(check_nvtx_expressions("--nvtx-exclude", r.nvtx_exclude));
    s.nvtx_exclude = r.nvtx_exclude;
  }
  if (given("--profile-from-start")) {
    ASSIGN_OR_RETURN(s.profile_from_start,
                     parse_profile_from_start_value("--profile-from-start", r.profile_from_start));
  }
  if (given("--launch-count")) {
    ASSIGN_OR_RETURN(s.launch_count, parse_count("--launch-count", r.launch_count, 1));
  }
  if (given("--ranks")) {
    ASSIGN_OR_RETURN(o.ranks, parse_ranks(r.ranks));
  }

  // Output.
  auto output_name = [&](const char* flag, const std::string& text, const char* example,
                         std::optional<std::string>* out) -> Status {
    if (!given(flag)) return Status::Ok();
    if (text.empty())
      return InvalidArgument(fmt::format("{} is empty; give a name such as {}", flag, example));
    Status st = validate_output_template(text);
    if (!st.ok()) return InvalidArgument(fmt::format("{}: {}", flag, st.message()));
    *out = text;
    return Status::Ok();
  };
  RETURN_IF_ERROR(
      output_name("--output-directory", r.output_directory, "out", &s.output_directory));
  RETURN_IF_ERROR(output_name("--output-file", r.output_file, "%hostname%/%pid%", &s.output_file));
  if (given("--output-format")) {
    std::vector<std::string> items;
    for (const std::string& item : r.output_format) {
      for (std::string& part : split_list(item)) items.push_back(std::move(part));
    }
    ASSIGN_OR_RETURN(s.output_format, parse_output_formats("--output-format", items));
  }
  if (given("--output-gzip")) s.output_gzip = r.gzip;
  if (given("--kernel-trace")) s.kernel_trace = r.kernel_trace;
  if (given("--summary")) s.summary = r.summary;

  // General.
  if (given("--log-level") && given("--quiet")) {
    return InvalidArgument("-q/--quiet and --log-level both set the log level; give one of them");
  }
  if (given("--log-level")) {
    RETURN_IF_ERROR(check_log_level("--log-level", r.log_level));
    s.log_level = r.log_level;
  }
  if (r.quiet) {
    o.quiet = true;
    s.log_level = "quiet";
  }

  // Input file.
  if (given("--input")) {
    if (r.input.empty())
      return InvalidArgument("-i/--input is empty; give the path of a JSON or YAML file");
    o.input_file = r.input;
  }

  // Discovery modes.
  o.list_avail = r.list_avail;
  o.list_sets = r.list_sets;
  o.list_sections = r.list_sections;

  if (given("--pmc-check")) {
    RETURN_IF_ERROR(check_counter_names("--pmc-check", r.pmc_check));
    o.pmc_check = r.pmc_check;
  }
  if (given("--chip")) {
    if (r.chip.empty()) return InvalidArgument("--chip is empty; give a chip name such as GH100");
    o.chip = r.chip;
  }
  if (o.list_sets || o.list_sections) {
    const char* mode = o.list_sets ? "--list-sets" : "--list-sections";
    if (o.list_sets && o.list_sections)
      return InvalidArgument(
          "--list-sets and --list-sections are two separate commands; give one of them");
    if (r.list_avail || given("--pmc-check"))
      return InvalidArgument(fmt::format("{} and {} are two separate commands; give one of them",
                                         mode, r.list_avail ? "--list-avail" : "--pmc-check"));
    if (!o.command.empty())
      return InvalidArgument(fmt::format("{} runs no application; drop \"-- {} ...\" or drop {}",
                                         mode, printable(o.command.front()), mode));
    return o;
  }
  const bool discovery = o.list_avail || !o.pmc_check.empty();
  if (o.list_avail && !o.pmc_check.empty()) {
    return InvalidArgument(
        "--list-avail and --pmc-check are two separate commands; give one of them");
  }
  if (o.chip && !discovery && !o.list_sets && !o.list_sections) {
    return InvalidArgument(
        "--chip only applies to --list-avail, --pmc-check, --list-sets and --list-sections; drop "
        "it when profiling (the GPU the application uses is asked directly)");
  }
  if (discovery) {
    const char* mode = o.list_avail ? "--list-avail" : "--pmc-check";
    if (!o.command.empty()) {
      return InvalidArgument(fmt::format("{} runs no application; drop \"-- {} ...\" or drop {}",
                                         mode, printable(o.command.front()), mode));
    }
    if (o.input_file) {
      return InvalidArgument(
          fmt::format("{} runs no application and reads no input file; drop -i or {}", mode, mode));
    }
    if (!o.pmc.empty() || s.metrics) {
      return InvalidArgument(fmt::format(
          "{} takes no --pmc or --metrics; {}", mode,
          o.list_avail ? "it lists every counter" : "give the counters to --pmc-check itself"));
    }
    return o;
  }

  if (o.command.empty()) {
    return InvalidArgument(
        "no application to profile: put the command after --, e.g. "
        "kreplay --pmc sm__cycles_elapsed.avg -- ./app arg1");
  }
  if (o.command.front().empty()) {
    return InvalidArgument("the application name after -- is empty; give the program to run");
  }
  return o;
}

}  // namespace

Result<CliOptions> parse_command_line(const std::vector<std::string>& args) {
  // Everything after the first "--" is the application; CLI11 sees only what comes before.
  std::vector<std::string> ours;
  std::vector<std::string> command;
  bool after = false;
  for (size_t i = 1; i < args.size(); ++i) {
    if (!after && args[i] == "--") {
      after = true;
    } else {
      (after ? command : ours).push_back(args[i]);
    }
  }
  for (size_t i = 0; i < ours.size(); ++i) {
    if (!valid_utf8(ours[i])) {
      return InvalidArgument(
          fmt::format("argument {} (\"{}\") is not valid UTF-8; kreplay's options are "
                      "UTF-8 text (the application's arguments after -- may be anything)",
                      i + 1, printable(ours[i])));
    }
  }
  try {
    CLI::App app{kDescription, "kreplay"};
    Raw raw;
    add_options(app, raw);
    app.allow_extras(true);
    RETURN_IF_ERROR(check_option_values(app, ours));
    std::vector<std::string> reversed(ours.rbegin(), ours.rend());
    try {
      app.parse(reversed);
    } catch (const CLI::CallForHelp&) {
      CliOptions o;
      o.show_help = true;
      o.help_text = app.help();
      return o;
    } catch (const CLI::CallForAllHelp&) {
      CliOptions o;
      o.show_help = true;
      o.help_text = app.help();
      return o;
    } catch (const CLI::ParseError& e) {
      return from_cli11(e);
    }
    if (raw.version) {
      CliOptions o;
      o.show_version = true;
      return o;
    }
    RETURN_IF_ERROR(check_extras(app, ours));
    return to_options(app, raw, std::move(command));
  } catch (const std::exception& e) {
    return Error(
        KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
        fmt::format("cannot parse the command line: {}; {}", printable(e.what(), 300), kSeeHelp));
  }
}

Result<CliOptions> parse_command_line(int argc, const char* const* argv) {
  std::vector<std::string> args;
  args.reserve(argc > 0 ? static_cast<size_t>(argc) : 0);
  for (int i = 0; i < argc; ++i) args.emplace_back(argv[i] ? argv[i] : "");
  return parse_command_line(args);
}

std::string help_text() {
  auto parsed = parse_command_line(std::vector<std::string>{"kreplay", "--help"});
  return parsed.ok() ? parsed->help_text : std::string();
}

std::string version_text() {
  return fmt::format("kreplay {}", KREPLAY_VERSION_STRING);
}

}  // namespace kreplay::cli
