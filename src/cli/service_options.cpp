#include "cli/service_options.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>

#include "config/text.hpp"

namespace kreplay::cli {

using config::FilterOptions;
using config::PassKind;
using config::PassSpec;
using config::printable;
using config::ToolConfig;

namespace {

// One service's flags: what it is called and which of the raw fields are its own.
struct ServiceFlags {
  PassKind kind;
  const char* flag;      // "--pc-sampling"
  const char* title;     // "PC sampling"
  bool per_instruction;  // profiles first launches only without a filter
};

constexpr ServiceFlags kServices[] = {
    {PassKind::kTiming, "--timing-pass", "a timing pass", false},
    {PassKind::kPcSampling, "--pc-sampling", "PC sampling", true},
    {PassKind::kSassMetrics, "--sass-metrics", "SASS metrics", true},
    {PassKind::kPmSampling, "--pm-sampling", "PM sampling", false},
};

Result<uint64_t> parse_number(std::string_view flag, const std::string& text, uint64_t lo,
                              uint64_t hi, std::string_view example) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || v < lo || v > hi) {
    return InvalidArgument(
        fmt::format("{}: \"{}\" is not a whole number from {} to {}; write e.g. "
                    "{} {}",
                    flag, printable(text), lo, hi, flag, example));
  }
  return v;
}

const ServiceFlags& flags_of(PassKind kind) {
  for (const auto& s : kServices) {
    if (s.kind == kind) return s;
  }
  return kServices[0];
}

}  // namespace

void add_service_options(CLI::App& app, ServiceRaw& r) {
  const char* group = "Per-pass services (each one pass of its own)";
  app.add_flag("--timing-pass", r.timing, "A clean pass that only times the kernel")->group(group);
  app.add_flag("--pc-sampling", r.pc, "Warp-state samples per instruction (stall reasons)")
      ->group(group);
  app.add_option("--pc-sampling-period", r.pc_period,
                 "With --pc-sampling: a sample every 2^N cycles, 5..31 (default: 10 on the host "
                 "device, CUPTI's own on CUDA)")
      ->type_name("N")
      ->group(group);
  app.add_option("--sass-metrics", r.sass,
                 "Exact per-instruction counts of these SASS metrics (comma list)")
      ->delimiter(',')
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("M1,M2,...")
      ->group(group);
  app.add_flag("--source-counters", r.source_counters,
               "SASS metrics of the default per-instruction set (ncu's SourceCounters)")
      ->group(group);
  app.add_option("--pm-sampling", r.pm, "Sample these counters over time during the kernel")
      ->delimiter(',')
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("M1,M2,...")
      ->group(group);
  app.add_option("--pm-sampling-interval", r.pm_interval,
                 "With --pm-sampling: nanoseconds between samples (default: 1000 on the host "
                 "device, 20000 on CUDA)")
      ->type_name("NS")
      ->group(group);
  for (auto [position, flag] : {std::pair{&r.timing_position, "--timing-pass-position"},
                                std::pair{&r.pc_position, "--pc-sampling-pass-position"},
                                std::pair{&r.sass_position, "--sass-metrics-pass-position"},
                                std::pair{&r.pm_position, "--pm-sampling-pass-position"}}) {
    app.add_option(flag, *position,
                   "Put that service's pass after K counter passes (default: after all of them)")
        ->type_name("K")
        ->group(group);
  }
}

Status to_service_options(const CLI::App& app, const ServiceRaw& r, CliOptions& o) {
  auto given = [&](const char* name) { return app.count(name) > 0; };
  const bool sass = given("--sass-metrics") || r.source_counters;
  const bool on[] = {r.timing, r.pc, sass, given("--pm-sampling")};
  const char* positions[] = {"--timing-pass-position", "--pc-sampling-pass-position",
                             "--sass-metrics-pass-position", "--pm-sampling-pass-position"};
  const std::string* position_text[] = {&r.timing_position, &r.pc_position, &r.sass_position,
                                        &r.pm_position};
  if (given("--pc-sampling-period") && !r.pc) {
    return InvalidArgument(
        "--pc-sampling-period sets the period of --pc-sampling; add --pc-sampling or drop it");
  }
  if (given("--pm-sampling-interval") && !on[3]) {
    return InvalidArgument(
        "--pm-sampling-interval sets the interval of --pm-sampling; add --pm-sampling M1,... or "
        "drop it");
  }
  if (given("--sass-metrics") && r.source_counters) {
    return InvalidArgument(
        "--sass-metrics and --source-counters both choose the SASS metrics; --source-counters is "
        "the default set, so give one of them");
  }
  if (given("--pc-sampling-period")) {
    ASSIGN_OR_RETURN(uint64_t p, parse_number("--pc-sampling-period", r.pc_period, 5, 31, "10"));
    o.services.pc_sampling_period = static_cast<uint32_t>(p);
  }
  if (given("--pm-sampling-interval")) {
    ASSIGN_OR_RETURN(
        o.services.pm_interval_ns,
        parse_number("--pm-sampling-interval", r.pm_interval, 1, 1000000000000ull, "1000"));
  }
  if (given("--sass-metrics")) {
    RETURN_IF_ERROR(check_counter_names("--sass-metrics", r.sass));
    o.services.sass_metrics = r.sass;
  }
  if (on[3]) {
    RETURN_IF_ERROR(check_counter_names("--pm-sampling", r.pm));
    o.services.pm_metrics = r.pm;
  }
  for (size_t i = 0; i < std::size(kServices); ++i) {
    if (given(positions[i]) && !on[i]) {
      return InvalidArgument(
          fmt::format("{} places the pass of {}, which is not asked for; add "
                      "{} or drop {}",
                      positions[i], kServices[i].flag, kServices[i].flag, positions[i]));
    }
    if (!on[i]) continue;
    PassSpec spec;
    spec.kind = kServices[i].kind;
    spec.after_counters = PassSpec::kAfterAllCounters;
    if (given(positions[i])) {
      ASSIGN_OR_RETURN(uint64_t k, parse_number(positions[i], *position_text[i], 0, 1000, "1"));
      spec.after_counters = static_cast<int32_t>(k);
    }
    o.service_passes.push_back(spec);
  }
  return Status::Ok();
}

Status place_service_passes(const CliOptions& o, bool from_input_file,
                            std::vector<ToolConfig>* runs, std::vector<std::string>* notes) {
  if (o.service_passes.empty()) return Status::Ok();
  const ServiceFlags& first = flags_of(o.service_passes.front().kind);
  const char* flag = first.kind == PassKind::kSassMetrics && !o.services.sass_metrics.size()
                         ? "--source-counters"
                         : first.flag;
  if (from_input_file) {
    return InvalidArgument(fmt::format(
        "{} applies to the command line's own run, not to the jobs of an input file; run it "
        "without -i, or drop {}",
        flag, flag));
  }
  const bool range = o.settings.replay_mode && *o.settings.replay_mode == ReplayMode::kRange;
  if (o.settings.replay_mode && *o.settings.replay_mode != ReplayMode::kKernel &&
      *o.settings.replay_mode != ReplayMode::kAuto && !range) {
    return InvalidArgument(fmt::format(
        "{} cannot be confined to a pass in --replay-mode {} (each run would collect it again); "
        "use --replay-mode kernel or range",
        flag, to_string(*o.settings.replay_mode)));
  }
  if (range) {
    // A range's first pass is the application's own submission, which no service can hold.
    for (const auto& spec : o.service_passes) {
      if (spec.after_counters == 0 && spec.kind != PassKind::kTiming) {
        const ServiceFlags& f = flags_of(spec.kind);
        return InvalidArgument(fmt::format(
            "{}-pass-position 0 puts {} on a range's first pass, which is the application's own "
            "run in --replay-mode range; use a position of 1 or more, or --replay-mode kernel",
            std::string(f.flag), f.flag));
      }
    }
  }
  for (ToolConfig& c : *runs) {
    c.services = o.services;
    const bool counters = !c.pmc_groups.empty() || !c.metrics.empty() || !c.section_metrics.empty();
    // A run without counters has no counter pass on any device: a position past 0 is refused
    // here. With counters only the device knows their passes: the tool checks it at initialize.
    for (const auto& spec : o.service_passes) {
      if (counters || spec.after_counters <= 0 || spec.after_counters == PassSpec::kAfterAllCounters)
        continue;
      const std::string option = config::pass_position_option(spec.kind);
      return InvalidArgument(
          fmt::format("{} {} is past the counter passes: the run collects no counters, so the "
                      "largest position is 0; drop {}",
                      option, spec.after_counters, option));
    }
    if (range && !counters) {
      // Nothing else for the range's first pass (the application's own): time it.
      PassSpec first;
      first.kind = PassKind::kTiming;
      c.passes.push_back(first);
    }
    for (const auto& spec : o.service_passes) c.passes.push_back(spec);
    // Per-pass services run under kernel replay unless range replay was asked for by name (a
    // range here came from auto).
    if (!range && (c.passes.size() > 1 || (counters && !c.passes.empty()) ||
                   c.replay_mode == ReplayMode::kRange))
      c.replay_mode = ReplayMode::kKernel;
    default_to_first_launches(c, notes);
  }
  return Status::Ok();
}

void default_to_first_launches(ToolConfig& c, std::vector<std::string>* notes) {
  bool per_instruction = false;
  for (const auto& spec : c.passes) per_instruction |= flags_of(spec.kind).per_instruction;
  if (!per_instruction || !(c.filters == FilterOptions{})) return;
  c.filters.iteration_range = "[1]";
  notes->push_back(
      "PC sampling and SASS metrics profile each kernel's first launch only (as rocprofv3 "
      "does for --att); a kernel filter or an iteration range selects other launches");
}

}  // namespace kreplay::cli
