#include "cli/options.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <set>

#include "cli/option_table.hpp"
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

using option_table::add_options;
using option_table::kDescription;
using Raw = option_table::RawOptions;

namespace {

constexpr const char* kSeeHelp = "run kreplay --help for the options";


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
