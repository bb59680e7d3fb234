#include "cli/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>

#include "cli/job_services.hpp"
#include "cli/service_options.hpp"
#include "common/util.hpp"
#include "config/filter.hpp"
#include "config/output_path.hpp"
#include "config/text.hpp"
#include "report/sections.hpp"

namespace kreplay::cli {

using config::PassKind;
using config::PassSpec;
using config::printable;
using config::RotationSpec;
using config::ServiceOptions;
using config::template_is_per_process;
using config::ToolConfig;
using config::validate_filter_options;
using config::validate_output_template;

namespace {

// What --replay-mode auto replays with: range
// replay — launches up to the next call that can observe memory are replayed together, and a range
// of one launch is replayed as kernel replay would replay it — unless the request is one that
// kernel replay serves and range replay does not: kernel filters (a range would still snapshot and
// replay the unselected launches around the selected ones), --replay-memory args (a range saves
// every allocation) and --check-divergence (hashed per launch). --range-markers means range.
ReplayMode resolve_auto(const RunSettings& s) {
  if (s.range_markers) return ReplayMode::kRange;
  // (NVTX and profiler selection keep range replay: ranges close where the selection changes.)
  const bool filtered = s.kernel_include_regex || s.kernel_exclude_regex || s.kernel_name ||
                        s.kernel_iteration_range || s.launch_skip || s.launch_count ||
                        s.kernel_id;
  const bool args_only = s.replay_memory && *s.replay_memory == ReplayMemory::kArgs;
  return filtered || args_only || s.check_divergence.value_or(false) ? ReplayMode::kKernel
                                                                     : ReplayMode::kRange;
}

// A job's worth of collection before it becomes runs: the command line alone, or one job of an
// application-mode input file merged with the command line.
struct Unit {
  std::string origin;  // "command line" or "jobs.yaml, job 2"
  // Prefixes messages: "" for the command line, "jobs.yaml:3:5: jobs[1]" for a job. The
  // functions below take the key so a message can point at it.
  std::function<std::string(std::string_view key)> where;
  bool from_job = false;
  RunSettings settings;
  std::vector<std::vector<std::string>> groups;
  bool groups_from_cli = false;
  std::optional<RotationSpec> rotation;
  std::optional<PassSpec> timing;
  // Per-pass services from the command line (placed by place_service_passes): they are something
  // named, so no default set is collected, and kernel replay needs no counters for them.
  bool services = false;
  // The replay mode (and range markers) came from the command line, not from the job: they apply
  // to the job's counters, and a job without counters runs as it would without them (rocprofv3:
  // "input files are unaffected by the flag").
  bool replay_from_cli = false;
  // The counters of --set / --section (or of the default set), resolved by choose_sections().
  std::vector<std::string> section_counters;
  std::string sections_label;
  bool sections_default = false;
};

std::string prefixed(const Unit& unit, std::string_view key, std::string_view message) {
  std::string where = unit.where ? unit.where(key) : std::string();
  return where.empty() ? std::string(message) : fmt::format("{}: {}", where, message);
}

// "--metrics" or "metrics", as the user wrote it.
std::string spelled(const Unit& unit, std::string_view key, std::string_view flag) {
  return std::string(unit.from_job ? key : flag);
}

ToolConfig base_config(const RunSettings& s, const std::vector<std::string>& command,
                       const std::string& origin) {
  ToolConfig c;
  c.metrics = s.metrics.value_or(std::vector<std::string>{});
  c.range_markers = s.range_markers.value_or("");
  c.replay_memory = s.replay_memory.value_or(ReplayMemory::kAll);
  c.graph_profiling = s.graph_profiling.value_or(GraphProfiling::kNode);
  c.cache_control = s.cache_control.value_or(CacheControl::kAll);
  c.snapshot = s.snapshot.value_or(SnapshotMode::kAuto);
  c.check_divergence = s.check_divergence.value_or(false);
  c.filters.include_regex = s.kernel_include_regex.value_or("");
  c.filters.exclude_regex = s.kernel_exclude_regex.value_or("");
  c.filters.kernel_name = s.kernel_name.value_or("");
  c.filters.iteration_range = s.kernel_iteration_range.value_or("");
  c.filters.launch_skip = s.launch_skip.value_or(0);
  c.filters.launch_count = s.launch_count.value_or(0);
  c.filters.nvtx_include = s.nvtx_include.value_or(std::vector<std::string>{});
  c.filters.nvtx_exclude = s.nvtx_exclude.value_or(std::vector<std::string>{});
  c.filters.profile_from_start = s.profile_from_start.value_or(true);
  c.filters.kernel_id = s.kernel_id.value_or("");
  c.filters.kernel_name_base = s.kernel_name_base.value_or("");
  if (s.output_directory) c.output.directory = *s.output_directory;
  if (s.output_file) {
    c.output.file = *s.output_file;
    c.output.file_from_user = true;
  }
  if (s.output_format) c.output.formats = *s.output_format;
  c.output.kernel_trace = s.kernel_trace.value_or(false);
  c.output.summary = s.summary.value_or(false);
  c.output.gzip = s.output_gzip.value_or(false);
  c.log_level = s.log_level.value_or("");
  c.command = command;
  c.origin = origin;
  return c;
}

void add_counter_passes(ToolConfig& c) {
  for (size_t g = 0; g < c.pmc_groups.size(); ++g) {
    c.passes.push_back(PassSpec{PassKind::kCounters, static_cast<int32_t>(g), false});
  }
}

// The section catalog: kreplay's own folder, then the unit's --section-folder.
Result<report::Catalog> load_catalog(const CliOptions& o, const RunSettings& s) {
  std::vector<std::string> folders = {o.sections_folder.empty()
                                          ? report::default_sections_folder()
                                          : o.sections_folder};
  if (s.section_folder) folders.push_back(*s.section_folder);
  return report::Catalog::load(folders);
}

// "LaunchStats, Occupancy and SpeedOfLight"
std::string section_names(const std::vector<const report::Section*>& sections) {
  std::vector<std::string> names;
  for (const auto* s : sections) names.push_back(s->name);
  if (names.empty()) return "no section";
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += i == 0 ? "" : (i + 1 == names.size() ? " and " : ", ");
    out += names[i];
  }
  return out;
}

// Resolve --set / --section into counters. With none of --pmc, --metrics, --set, --section (and
// @p allow_default: the command line, not an application-replay or rotation request), the default
// set basic. Sections that need data this kreplay does not collect are skipped: with a note when
// named with --section, silently when they come with a set.
Status choose_sections(Unit& u, const CliOptions& o, bool allow_default,
                       std::vector<std::string>* notes) {
  const RunSettings& s = u.settings;
  const bool given = s.metric_set || s.sections;
  const bool nothing_named =
      u.groups.empty() && !s.metrics && !given && !u.rotation && !u.timing && !u.services;
  const bool default_set =
      allow_default && nothing_named &&
      !(s.replay_mode && *s.replay_mode == ReplayMode::kApplication);
  if (!given && !default_set) {
    if (s.section_folder && !given) {
      return InvalidArgument(prefixed(
          u, "section_folder",
          fmt::format("{} adds section files, but no {} or {} picks one; add "
                      "{} NAME or drop {}",
                      spelled(u, "section_folder", "--section-folder"), spelled(u, "set", "--set"),
                      spelled(u, "section", "--section"), spelled(u, "set", "--set"),
                      spelled(u, "section_folder", "--section-folder"))));
    }
    return Status::Ok();
  }
  auto catalog = load_catalog(o, s);
  if (!catalog.ok()) {
    return InvalidArgument(
        prefixed(u, s.section_folder ? "section_folder" : "set", catalog.status().message()));
  }
  const std::string set = default_set ? "basic" : s.metric_set.value_or("");
  auto chosen = catalog->resolve(set, s.sections.value_or(std::vector<std::string>{}));
  if (!chosen.ok()) {
    return InvalidArgument(
        prefixed(u, s.sections && !s.metric_set ? "section" : "set", chosen.status().message()));
  }
  std::vector<const report::Section*> collected;
  for (const report::Section* section : *chosen) {
    if (!section->collectable()) {
      bool named = false;
      for (const auto& spec : s.sections.value_or(std::vector<std::string>{}))
        named |= spec == section->name;
      if (named) {
        notes->push_back(fmt::format(
            "section {} needs {} data (per-instruction counters), which this kreplay does not "
            "collect yet; it is skipped",
            section->name, section->requires_data));
      }
      continue;
    }
    collected.push_back(section);
  }
  u.section_counters = report::counters_of(collected);
  if (s.metric_set || default_set) {
    u.sections_label = fmt::format("set {}", set);
    if (s.sections) u.sections_label += fmt::format(" and sections {}", fmt::join(*s.sections, ", "));
  } else {
    u.sections_label = fmt::format("sections {}", fmt::join(*s.sections, ", "));
  }
  u.sections_default = default_set;
  if (default_set) {
    notes->push_back(fmt::format(
        "no counters named: collecting set basic ({}, {} counters); --list-sets shows the other "
        "sets, --set none collects none",
        section_names(collected), u.section_counters.size()));
  }
  return Status::Ok();
}

// Turn one unit into one or more runs (appended to @p runs).
Status expand_unit(Unit u, const std::vector<std::string>& command, std::vector<ToolConfig>* runs) {
  if (u.replay_from_cli && (u.rotation || u.timing || (u.groups.empty() && !u.settings.metrics))) {
    u.settings.replay_mode.reset();
    u.settings.range_markers.reset();
  }
  const RunSettings& s = u.settings;
  const bool has_metrics = s.metrics.has_value();
  const bool has_sections = !u.section_counters.empty();
  const std::string mode_key = spelled(u, "replay_mode", "--replay-mode");
  const std::string sets_key = spelled(u, s.metric_set ? "set" : "section",
                                       s.metric_set ? "--set" : "--section");
  auto with_sections = [&u](ToolConfig c) {
    c.section_metrics = u.section_counters;
    c.sections_label = u.sections_label;
    c.sections_default = u.sections_default;
    return c;
  };

  if (u.rotation) {
    if (!u.groups.empty()) {
      return InvalidArgument(prefixed(
          u, "pmc_groups",
          u.groups_from_cli
              ? "--pmc and pmc_groups both give counter groups; pmc_groups rotates groups across "
                "launches without replay and --pmc measures every group on every launch, so "
                "give one of them"
              : "pmc and pmc_groups both give counters; use pmc_groups (rotation) or pmc (one "
                "group), not both"));
    }
    if (has_metrics || s.metric_set || s.sections) {
      return InvalidArgument(prefixed(
          u, "pmc_groups",
          fmt::format("pmc_groups and {} both give counters; rotation takes counter groups only, "
                      "so move the {} into a job of their own",
                      has_metrics ? "metrics" : sets_key, has_metrics ? "metrics" : sets_key)));
    }
    if (u.timing) {
      return InvalidArgument(
          prefixed(u, "timing_pass",
                   "timing_pass cannot share a run with rotating pmc_groups; give the "
                   "timing pass a job of its own"));
    }
    if (s.replay_mode && *s.replay_mode != ReplayMode::kApplication) {
      return InvalidArgument(prefixed(
          u, "replay_mode",
          fmt::format("pmc_groups rotates counter groups across launches without replay, so it "
                      "takes no replay_mode {}; to replay, give each group its own job with pmc "
                      "and set job_replay_mode: kernel",
                      to_string(*s.replay_mode))));
    }
    ToolConfig c = base_config(s, command, u.origin);
    c.replay_mode = ReplayMode::kApplication;
    c.rotation = *u.rotation;
    runs->push_back(std::move(c));
    return Status::Ok();
  }

  if (u.timing) {
    if (!u.groups.empty() || has_metrics || s.metric_set || s.sections) {
      return InvalidArgument(prefixed(
          u, "timing_pass",
          "timing_pass and counters in one job: in job_replay_mode: application each job is one "
          "run, and a clean timing pass cannot share a run with counters; split the job in two, "
          "or set job_replay_mode: kernel to make them passes of one run"));
    }
    if (s.replay_mode && *s.replay_mode == ReplayMode::kRange) {
      return InvalidArgument(prefixed(u, "replay_mode",
                                      "a timing job is one pass and needs no range replay; drop "
                                      "replay_mode"));
    }
    ToolConfig c = base_config(s, command, u.origin);
    c.replay_mode = s.replay_mode.value_or(ReplayMode::kApplication);
    c.passes.push_back(*u.timing);
    runs->push_back(std::move(c));
    return Status::Ok();
  }

  const bool multi_pass = u.groups.size() > 1 || has_metrics || has_sections;
  // --replay-mode auto (the default when more than one pass is needed) picks range or kernel
  // replay (resolve_auto); per-pass services turn it into kernel replay (place_service_passes).
  ReplayMode mode =
      s.replay_mode.value_or(multi_pass ? ReplayMode::kAuto : ReplayMode::kApplication);
  if (mode == ReplayMode::kAuto) mode = resolve_auto(s);

  if (s.range_markers && mode != ReplayMode::kRange) {
    return InvalidArgument(
        prefixed(u, "range_markers",
                 fmt::format("{} applies to replay mode range, not {}; set {} range or drop {}",
                             spelled(u, "range_markers", "--range-markers"), to_string(mode),
                             mode_key, spelled(u, "range_markers", "--range-markers"))));
  }

  if (mode == ReplayMode::kApplication) {
    if (has_metrics) {
      return InvalidArgument(prefixed(
          u, "metrics",
          fmt::format("{} needs kernel or range replay, since the device decides how many passes "
                      "metrics take; drop {} application, or list the counters as {} groups for "
                      "application replay",
                      spelled(u, "metrics", "--metrics"), mode_key, spelled(u, "pmc", "--pmc"))));
    }
    if (has_sections) {
      return InvalidArgument(prefixed(
          u, s.metric_set ? "set" : "section",
          fmt::format("{} needs kernel or range replay, since the device decides how many passes "
                      "its metrics take; drop {} application",
                      sets_key, mode_key)));
    }
    if (u.groups.size() <= 1) {
      ToolConfig c = base_config(s, command, u.origin);
      c.replay_mode = ReplayMode::kApplication;
      c.pmc_groups = u.groups;
      add_counter_passes(c);
      runs->push_back(std::move(c));
      return Status::Ok();
    }
    for (const auto& group : u.groups) {
      ToolConfig c = base_config(s, command, u.origin);
      c.replay_mode = ReplayMode::kApplication;
      c.pmc_groups = {group};
      add_counter_passes(c);
      runs->push_back(std::move(c));
    }
    return Status::Ok();
  }

  if (u.groups.empty() && !has_metrics && !has_sections && !u.services) {
    return InvalidArgument(prefixed(
        u, "replay_mode",
        fmt::format("{} {} replays launches to collect counters, but there are none; add {}, "
                    "{} or {}, or drop {}",
                    mode_key, to_string(mode), spelled(u, "pmc", "--pmc"),
                    spelled(u, "metrics", "--metrics"), spelled(u, "set", "--set"), mode_key)));
  }
  ToolConfig c = with_sections(base_config(s, command, u.origin));
  c.replay_mode = mode;
  c.pmc_groups = u.groups;
  add_counter_passes(c);
  runs->push_back(std::move(c));
  return Status::Ok();
}

// ----- job_replay_mode: application ----------------------------------------------------------

Status application_jobs(const CliOptions& o, const InputFile& file, std::vector<ToolConfig>* runs,
                        std::vector<std::string>* notes) {
  for (const JobSpec& job : file.jobs) {
    RETURN_IF_ERROR(check_no_service_keys(file, job));
    Unit u;
    u.origin = fmt::format("{}, {}", file.path, file.job_label(job));
    // Point at the key when the job has it; a value that came from the command line is
    // reported at the job.
    u.where = [&file, &job](std::string_view key) {
      return file.where(job, job.has(key) ? key : std::string_view());
    };
    u.from_job = true;

    u.replay_from_cli = o.settings.replay_mode && !job.settings.replay_mode;
    RunSettings merged = job.settings;
    if (auto conflict = merge_settings(merged, o.settings)) {
      return InvalidArgument(
          fmt::format("{}: {} is {} here but {} on the command line ({}); give it in "
                      "one place",
                      file.where(job, conflict->key), conflict->key, conflict->first,
                      conflict->second, conflict->flag));
    }
    u.settings = std::move(merged);

    if (job.pmc_group_interval && !job.pmc_groups) {
      return InvalidArgument(
          fmt::format("{}: pmc_group_interval needs pmc_groups, the groups to rotate; "
                      "add pmc_groups or drop pmc_group_interval",
                      file.where(job, "pmc_group_interval")));
    }
    if (job.pmc_groups) {
      if (!o.pmc.empty()) {
        u.groups = o.pmc;
        u.groups_from_cli = true;
      } else if (job.pmc) {
        u.groups = {*job.pmc};
      }
      u.rotation = RotationSpec{*job.pmc_groups, job.pmc_group_interval.value_or(1)};
    } else if (job.pmc) {
      if (!o.pmc.empty() && o.pmc != std::vector<std::vector<std::string>>{*job.pmc}) {
        return InvalidArgument(
            fmt::format("{}: the job's pmc {} differs from --pmc on the command line; "
                        "give the counters in one place",
                        file.where(job, "pmc"), describe_value(*job.pmc)));
      }
      u.groups = {*job.pmc};
    } else {
      u.groups = o.pmc;
      u.groups_from_cli = !o.pmc.empty();
    }

    const bool timing = job.timing_pass.value_or(false);
    if (job.timing_pass_flush_cache && !timing) {
      return InvalidArgument(
          fmt::format("{}: timing_pass_flush_cache applies to a timing pass; set "
                      "timing_pass: true on this job or drop the option",
                      file.where(job, "timing_pass_flush_cache")));
    }
    if (timing) {
      u.timing = PassSpec{PassKind::kTiming, -1, job.timing_pass_flush_cache.value_or(false)};
    }
    // A job without counters stays one (a trace-only job): no default set for jobs.
    RETURN_IF_ERROR(choose_sections(u, o, /*allow_default=*/false, notes));
    RETURN_IF_ERROR(expand_unit(u, o.command, runs));
  }
  return Status::Ok();
}

// ----- job_replay_mode: kernel ----------------------------------------------------------------

std::string first_job_with(const InputFile& file, size_t before, std::string_view key) {
  for (size_t i = 0; i < before && i < file.jobs.size(); ++i) {
    if (file.jobs[i].has(key)) return file.job_label(file.jobs[i]);
  }
  return "an earlier job";
}

Status kernel_jobs(const CliOptions& o, const InputFile& file, std::vector<ToolConfig>* runs,
                   std::vector<std::string>* notes) {
  const std::string mode_where =
      file.job_replay_mode_mark.line > 0
          ? fmt::format("{}:{}:{}", file.path, file.job_replay_mode_mark.line,
                        file.job_replay_mode_mark.column)
          : file.path;
  if (!o.pmc.empty()) {
    return InvalidArgument(
        fmt::format("{}: job_replay_mode: kernel takes its counter groups from the "
                    "jobs' pmc; drop --pmc from the command line, or drop "
                    "job_replay_mode to run each job on its own",
                    mode_where));
  }
  if (o.settings.metrics || o.settings.metric_set || o.settings.sections) {
    const char* flag = o.settings.metrics ? "--metrics" : (o.settings.metric_set ? "--set" : "--section");
    return InvalidArgument(
        fmt::format("{}: job_replay_mode: kernel takes its passes from the jobs; drop "
                    "{} from the command line and list the counters with pmc "
                    "in the jobs",
                    mode_where, flag));
  }

  RunSettings merged;
  std::vector<std::vector<std::string>> groups;
  std::vector<PassSpec> passes;
  std::map<PassKind, size_t> service_jobs;  // kind -> the job that has it (one per run)
  ServiceOptions services;
  for (const JobSpec& job : file.jobs) {
    for (const char* key : {"metrics", "set", "section"}) {
      if (job.has(key)) {
        return InvalidArgument(
            fmt::format("{}: {} cannot be a pass of job_replay_mode: kernel (the "
                        "device decides how many passes they take); list the counters "
                        "with pmc, one group per job",
                        file.where(job, key), key));
      }
    }
    for (const char* key : {"pmc_groups", "pmc_group_interval"}) {
      if (job.has(key)) {
        return InvalidArgument(
            fmt::format("{}: {} rotates groups across launches and cannot be a replay "
                        "pass; give each group a job of its own with pmc",
                        file.where(job, key), key));
      }
    }
    // The one pass service the job selects (job_services.cpp).
    ASSIGN_OR_RETURN(JobService service, job_service(file, job));
    if (service.kind == PassKind::kCounters) {
      passes.push_back(PassSpec{PassKind::kCounters, static_cast<int32_t>(groups.size()), false});
      groups.push_back(*job.pmc);
    } else {
      if (auto first = service_jobs.find(service.kind); first != service_jobs.end()) {
        return InvalidArgument(
            fmt::format("{}: a second {} job ({} is the first); a run has at most one {} pass",
                        file.where(job, service.key), service.noun,
                        file.job_label(file.jobs[first->second]), service.noun));
      }
      service_jobs[service.kind] = job.index;
      passes.push_back(PassSpec{service.kind, -1, job.timing_pass_flush_cache.value_or(false)});
      add_job_settings(job, &services);
    }
    if (auto conflict = merge_settings(merged, job.settings)) {
      return InvalidArgument(
          fmt::format("{}: jobs disagree on {}: {} has {}, {} has {}; the jobs are "
                      "passes of one run, so give run options once or give every job "
                      "the same value",
                      file.where(job, conflict->key), conflict->key,
                      first_job_with(file, job.index, conflict->key), conflict->first,
                      file.job_label(job), conflict->second));
    }
  }
  if (groups.empty() && passes.size() < 2) {
    return InvalidArgument(
        fmt::format("{}: job_replay_mode: kernel needs at least one job with pmc (or two "
                    "service jobs); a {} pass alone needs no replay, so drop job_replay_mode",
                    mode_where, to_string(passes.front().kind)));
  }
  if (auto conflict = merge_settings(merged, o.settings)) {
    return InvalidArgument(
        fmt::format("{}: {} is {} in the jobs but {} on the command line ({}); give it "
                    "in one place",
                    file.path, conflict->key, conflict->first, conflict->second, conflict->flag));
  }
  // job_replay_mode: kernel names kernel replay (as in rocprofv3); replay_mode: auto or range
  // in the jobs or on the command line choose otherwise.
  ReplayMode mode = merged.replay_mode.value_or(ReplayMode::kKernel);
  if (mode == ReplayMode::kAuto) {
    // As on the command line; a job that selects a per-pass service needs kernel replay.
    const bool per_pass_service = std::ranges::any_of(passes, [](const PassSpec& p) {
      return p.kind != PassKind::kCounters && p.kind != PassKind::kTiming;
    });
    mode = per_pass_service ? ReplayMode::kKernel : resolve_auto(merged);
  }
  if (mode == ReplayMode::kApplication) {
    std::string where = mode_where;
    std::string spelling = "replay_mode: application";
    if (o.settings.replay_mode) {
      spelling = "--replay-mode application";
    } else {
      for (const JobSpec& job : file.jobs) {
        if (job.has("replay_mode")) {
          where = file.where(job, "replay_mode");
          break;
        }
      }
    }
    return InvalidArgument(
        fmt::format("{}: {} contradicts job_replay_mode: kernel, which runs the jobs "
                    "as replay passes of one run; drop it, or drop job_replay_mode to "
                    "run each job on its own",
                    where, spelling));
  }
  if (merged.range_markers && mode != ReplayMode::kRange) {
    return InvalidArgument(
        fmt::format("{}: range_markers applies to replay_mode range; set "
                    "replay_mode: range or drop range_markers",
                    file.path));
  }
  ToolConfig c =
      base_config(merged, o.command,
                  fmt::format("{}, job_replay_mode: kernel, {} passes", file.path, passes.size()));
  c.replay_mode = mode;
  c.pmc_groups = std::move(groups);
  c.passes = std::move(passes);
  c.services = std::move(services);
  default_to_first_launches(c, notes);
  runs->push_back(std::move(c));
  return Status::Ok();
}

}  // namespace

std::string pass_directory(const std::string& directory, size_t k) {
  std::string dir = directory.empty() ? "." : directory;
  if (dir.back() != '/') dir.push_back('/');
  return fmt::format("{}pass_{}", dir, k);
}

Result<RunPlan> make_run_plan(const CliOptions& options, const InputFile* input) {
  RunPlan plan;
  if (options.show_help) {
    plan.action = PlanAction::kHelp;
    plan.help_text = options.help_text;
    return plan;
  }
  if (options.show_version) {
    plan.action = PlanAction::kVersion;
    return plan;
  }
  plan.log_level = options.settings.log_level.value_or("");
  if (options.list_avail || !options.pmc_check.empty()) {
    plan.action = options.list_avail ? PlanAction::kListAvail : PlanAction::kPmcCheck;
    plan.chip = options.chip;
    plan.pmc_check = options.pmc_check;
    return plan;
  }
  if (options.list_sets || options.list_sections) {
    plan.action = options.list_sets ? PlanAction::kListSets : PlanAction::kListSections;
    plan.chip = options.chip;
    plan.section_folders = {options.sections_folder.empty() ? report::default_sections_folder()
                                                            : options.sections_folder};
    if (options.settings.section_folder) plan.section_folders.push_back(*options.settings.section_folder);
    auto catalog = report::Catalog::load(plan.section_folders);
    if (!catalog.ok()) return InvalidArgument(catalog.status().message());
    return plan;
  }
  if (options.command.empty()) {
    return InvalidArgument(
        "no application to profile: put the command after --, e.g. "
        "kreplay --pmc sm__cycles_elapsed.avg -- ./app arg1");
  }
  plan.command = options.command;

  std::vector<ToolConfig> runs;
  if (!input) {
    Unit u;
    u.origin = "command line";
    u.settings = options.settings;
    u.groups = options.pmc;
    u.groups_from_cli = true;
    u.services = !options.service_passes.empty();
    RETURN_IF_ERROR(choose_sections(u, options, /*allow_default=*/true, &plan.notes));
    RETURN_IF_ERROR(expand_unit(u, options.command, &runs));
  } else if (input->job_replay_mode == JobReplayMode::kKernel) {
    RETURN_IF_ERROR(kernel_jobs(options, *input, &runs, &plan.notes));
  } else {
    RETURN_IF_ERROR(application_jobs(options, *input, &runs, &plan.notes));
  }

  RETURN_IF_ERROR(place_service_passes(options, input != nullptr, &runs, &plan.notes));

  const size_t total = runs.size();
  bool warned_output = false;
  for (size_t k = 0; k < total; ++k) {
    ToolConfig& c = runs[k];
    // Checked again on the merged result: the values came through different paths.
    Status filters = validate_filter_options(c.filters);
    if (!filters.ok()) return InvalidArgument(fmt::format("{}: {}", c.origin, filters.message()));
    for (const std::string* name : {&c.output.directory, &c.output.file}) {
      Status st = validate_output_template(*name);
      if (!st.ok()) return InvalidArgument(fmt::format("{}: {}", c.origin, st.message()));
    }
    c.ranks = options.ranks;
    c.app_pass = static_cast<uint32_t>(k + 1);
    c.app_pass_count = static_cast<uint32_t>(total);
    if (total > 1) {
      c.output.directory = pass_directory(c.output.directory, k + 1);
      // An absolute file name ignores the directory: put the pass into the file's own path.
      if (!c.output.file.empty() && c.output.file.front() == '/') {
        size_t slash = c.output.file.rfind('/');
        c.output.file = pass_directory(c.output.file.substr(0, slash), k + 1) +
                        c.output.file.substr(slash);
      }
    }
    if (c.output.file_from_user && !template_is_per_process(c.output.file) && !warned_output) {
      warned_output = true;
      plan.warnings.push_back(fmt::format(
          "output file \"{}\" has no %pid%, %rank% or %q{{VAR}}: if the application forks or runs "
          "several ranks, each process after the first writes \"{}.<pid>\" instead; put %pid% or "
          "%rank% in -o to choose the names",
          printable(c.output.file), printable(c.output.file)));
    }
    PlannedRun run;
    run.label = total > 1 ? fmt::format("run {} of {} ({})", k + 1, total, c.origin)
                          : fmt::format("run 1 of 1 ({})", c.origin);
    run.config = std::move(c);
    plan.runs.push_back(std::move(run));
  }
  return plan;
}

Result<RunPlan> make_run_plan(const CliOptions& options) {
  if (!options.input_file || options.show_help || options.show_version) {
    return make_run_plan(options, nullptr);
  }
  ASSIGN_OR_RETURN(InputFile input, load_input_file(*options.input_file));
  return make_run_plan(options, &input);
}

}  // namespace kreplay::cli
