#include "cli/option_table.hpp"

#include <fmt/format.h>

#include <memory>
#include <sstream>

#include "kreplay/kreplay.h"

namespace kreplay::cli::option_table {
namespace {

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

}  // namespace

void add_options(CLI::App& app, RawOptions& r) {
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

}  // namespace kreplay::cli::option_table
