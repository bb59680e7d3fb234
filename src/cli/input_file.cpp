#include "cli/input_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "cli/input_tree.hpp"
#include "common/util.hpp"
#include "config/filter.hpp"
#include "config/output_path.hpp"
#include "config/text.hpp"

namespace kreplay::cli {

using config::check_kernel_regex;
using config::FilterOptions;
using config::IterationRange;
using config::printable;
using config::valid_utf8;
using config::validate_filter_options;
using config::validate_output_template;

using input_tree::kind_name;
using input_tree::Member;
using input_tree::Node;
using input_tree::parse_json_tree;
using input_tree::parse_yaml_tree;

namespace {

// ---------------------------------------------------------------------------------------------
// Tree -> InputFile
// ---------------------------------------------------------------------------------------------

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

template <size_t N>
std::vector<std::string> names_of(const std::array<std::string_view, N>& names) {
  return std::vector<std::string>(names.begin(), names.end());
}

// Converts one value; `what` is "file:line:col: jobs[i].key" for messages.
class ValueReader {
 public:
  ValueReader(const Node& node, std::string what) : node_(node), what_(std::move(what)) {}

  Status type_error(std::string_view expected) const {
    return InvalidArgument(
        fmt::format("{}: expected {}, found {}", what_, expected, kind_name(node_)));
  }

  Result<bool> boolean() const {
    if (node_.kind == Node::Kind::kScalar) {
      if (node_.scalar == Node::Scalar::kBool) return node_.text == "true";
      if (node_.scalar == Node::Scalar::kPlain) {
        std::string v = lower(node_.text);
        if (v == "true" || v == "yes" || v == "on") return true;
        if (v == "false" || v == "no" || v == "off") return false;
      }
    }
    return type_error("true or false");
  }

  Result<uint64_t> unsigned_integer(uint64_t minimum) const {
    if (node_.kind == Node::Kind::kScalar &&
        (node_.scalar == Node::Scalar::kNumber || node_.scalar == Node::Scalar::kPlain)) {
      const std::string& t = node_.text;
      uint64_t value = 0;
      auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
      if (!t.empty() && ec == std::errc() && ptr == t.data() + t.size()) {
        if (value < minimum) {
          return InvalidArgument(
              fmt::format("{}: must be at least {}, found {}", what_, minimum, value));
        }
        return value;
      }
    }
    return type_error(minimum > 0 ? "a positive integer" : "a non-negative integer");
  }

  // A string; numbers are taken as written (a YAML "3" is the text 3).
  Result<std::string> text() const {
    if (node_.kind == Node::Kind::kScalar && node_.scalar != Node::Scalar::kBool) {
      return node_.text;
    }
    return type_error("a string");
  }

  Result<std::string> non_empty_text(std::string_view example) const {
    ASSIGN_OR_RETURN(std::string value, text());
    if (value.empty()) {
      return InvalidArgument(fmt::format("{}: is empty; give a value such as {}", what_, example));
    }
    return value;
  }

  // A list of names, or one string of names separated by commas or blanks.
  Result<std::vector<std::string>> name_list() const {
    if (node_.kind == Node::Kind::kScalar && node_.scalar != Node::Scalar::kBool) {
      return split_list(node_.text);
    }
    if (node_.kind != Node::Kind::kSeq) return type_error("a list of names");
    std::vector<std::string> out;
    for (size_t i = 0; i < node_.items.size(); ++i) {
      const Node& item = node_.items[i];
      if (item.kind != Node::Kind::kScalar || item.scalar == Node::Scalar::kBool) {
        return InvalidArgument(
            fmt::format("{}[{}]: expected a name, found {}", what_, i, kind_name(item)));
      }
      for (std::string& name : split_list(item.text)) out.push_back(std::move(name));
    }
    return out;
  }

  // Strings taken whole (NVTX expressions hold commas): one string, or a list of strings.
  Result<std::vector<std::string>> text_list() const {
    if (node_.kind == Node::Kind::kScalar && node_.scalar != Node::Scalar::kBool)
      return std::vector<std::string>{node_.text};
    if (node_.kind != Node::Kind::kSeq) return type_error("a string or a list of strings");
    std::vector<std::string> out;
    for (size_t i = 0; i < node_.items.size(); ++i) {
      const Node& item = node_.items[i];
      if (item.kind != Node::Kind::kScalar || item.scalar == Node::Scalar::kBool) {
        return InvalidArgument(
            fmt::format("{}[{}]: expected a string, found {}", what_, i, kind_name(item)));
      }
      out.push_back(item.text);
    }
    return out;
  }

  // An iteration range, written as a string ("[1-3, 5]"), a number, or (YAML) a flow list.
  Result<std::string> range_text() const {
    if (node_.kind != Node::Kind::kSeq) return text();
    std::string out;
    append_seq(node_, &out);
    return out;
  }

 private:
  static void append_seq(const Node& node, std::string* out) {
    out->push_back('[');
    for (size_t i = 0; i < node.items.size(); ++i) {
      if (i > 0) out->append(", ");
      const Node& item = node.items[i];
      if (item.kind == Node::Kind::kSeq) {
        append_seq(item, out);
      } else {
        out->append(item.text);
      }
    }
    out->push_back(']');
  }

  const Node& node_;
  std::string what_;
};

// rocprofv3 keys with a kreplay counterpart, for a better hint than the edit distance gives.
std::string rocprofv3_hint(std::string_view key) {
  if (key == "stats") return "; kreplay calls it summary";
  if (key == "advanced_thread_trace" || key.substr(0, 4) == "att_") {
    return "; thread trace is AMD-only, kreplay's trace-like pass is timing_pass: true";
  }
  if (key == "pmc_raw") return "; list counters by name with pmc";
  return "";
}

class JobReader {
 public:
  JobReader(const InputFile& file, JobSpec* job) : file_(file), job_(job) {}

  Status read(const std::string& key, const Node& value) {
    ValueReader v(value, file_.where(*job_, key));
    RunSettings& s = job_->settings;
    const std::string what = file_.where(*job_, key);
    if (key == "pmc") {
      ASSIGN_OR_RETURN(auto names, v.name_list());
      RETURN_IF_ERROR(check_counter_names(what, names));
      job_->pmc = std::move(names);
    } else if (key == "pmc_groups") {
      if (value.kind != Node::Kind::kSeq || value.items.empty()) {
        return v.type_error("a non-empty list of counter groups, e.g. [[A, B], [C]]");
      }
      std::vector<std::vector<std::string>> groups;
      for (size_t i = 0; i < value.items.size(); ++i) {
        std::string item_what = fmt::format("{}[{}]", what, i);
        ASSIGN_OR_RETURN(auto names, ValueReader(value.items[i], item_what).name_list());
        RETURN_IF_ERROR(check_counter_names(item_what, names));
        groups.push_back(std::move(names));
      }
      job_->pmc_groups = std::move(groups);
    } else if (key == "pmc_group_interval") {
      ASSIGN_OR_RETURN(job_->pmc_group_interval, v.unsigned_integer(1));
    } else if (key == "metrics") {
      ASSIGN_OR_RETURN(auto names, v.name_list());
      RETURN_IF_ERROR(check_counter_names(what, names));
      s.metrics = std::move(names);
    } else if (key == "set") {
      ASSIGN_OR_RETURN(std::string text, v.non_empty_text("\"basic\""));
      s.metric_set = std::move(text);
    } else if (key == "section") {
      ASSIGN_OR_RETURN(auto names, v.name_list());
      if (names.empty()) return v.type_error("a section name or a list of them");
      s.sections = std::move(names);
    } else if (key == "section_folder") {
      ASSIGN_OR_RETURN(std::string text, v.non_empty_text("\"my_sections\""));
      s.section_folder = std::move(text);
    } else if (key == "timing_pass") {
      ASSIGN_OR_RETURN(job_->timing_pass, v.boolean());
    } else if (key == "timing_pass_flush_cache") {
      ASSIGN_OR_RETURN(job_->timing_pass_flush_cache, v.boolean());
    } else if (key == "pc_sampling" || key == "source_counters") {
      ASSIGN_OR_RETURN(bool on, v.boolean());
      (key == "pc_sampling" ? job_->pc_sampling : job_->source_counters) = on;
    } else if (key == "pc_sampling_period") {
      ASSIGN_OR_RETURN(uint64_t period, v.unsigned_integer(5));
      if (period > 31)
        return InvalidArgument(fmt::format("{}: 2^{} cycles; use 5 to 31", what, period));
      job_->pc_sampling_period = period;
    } else if (key == "sass_metrics" || key == "pm_sampling") {
      ASSIGN_OR_RETURN(auto names, v.name_list());
      RETURN_IF_ERROR(check_counter_names(what, names));
      (key == "sass_metrics" ? job_->sass_metrics : job_->pm_sampling) = std::move(names);
    } else if (key == "pm_sampling_interval") {
      ASSIGN_OR_RETURN(job_->pm_sampling_interval, v.unsigned_integer(1));
    } else if (key == "replay_mode") {
      ASSIGN_OR_RETURN(std::string text, v.text());
      ASSIGN_OR_RETURN(s.replay_mode, parse_replay_mode_value(what, text));
    } else if (key == "range_markers") {
      ASSIGN_OR_RETURN(std::string text, v.text());
      RETURN_IF_ERROR(check_range_markers(what, text));
      s.range_markers = std::move(text);
    } else if (key == "replay_memory") {
      ASSIGN_OR_RETURN(std::string text, v.text());
      ASSIGN_OR_RETURN(s.replay_memory, parse_replay_memory_value(what, text));
    } else if (key == "graph_profiling") {
      ASSIGN_OR_RETURN(std::string text, v.text());
      ASSIGN_OR_RETURN(s.graph_profiling, parse_graph_profiling_value(what, text));
    } else if (key == "cache_control") {
      ASSIGN_OR_RETURN(std::string text, v.text());
      ASSIGN_OR_RETURN(s.cache_control, parse_cache_control_value(what, text));
    } else if (key == "snapshot") {
      ASSIGN_OR_RETURN(std::string text, v.text());
      ASSIGN_OR_RETURN(s.snapshot, parse_snapshot_mode_value(what, text));
    } else if (key == "check_divergence") {
      ASSIGN_OR_RETURN(s.check_divergence, v.boolean());
    } else if (key == "clock_control") {
      ASSIGN_OR_RETURN(std::string text, v.text());
      RETURN_IF_ERROR(check_clock_control(what, text));
    } else if (key == "kernel_replay_beta_enabled") {
      // Accepted so rocprofv3 files work unchanged; kreplay needs no acknowledgement.
      ASSIGN_OR_RETURN(bool ignored, v.boolean());
      (void)ignored;
    } else if (key == "kernel_include_regex" || key == "kernel_exclude_regex") {
      ASSIGN_OR_RETURN(std::string text, v.text());
      RETURN_IF_ERROR(check_kernel_regex(text, what));
      (key == "kernel_include_regex" ? s.kernel_include_regex : s.kernel_exclude_regex) = text;
    } else if (key == "kernel_name") {
      ASSIGN_OR_RETURN(std::string text, v.text());
      FilterOptions probe;
      probe.kernel_name = text;
      Status st = validate_filter_options(probe);
      if (!st.ok()) return InvalidArgument(fmt::format("{}: {}", what, st.message()));
      s.kernel_name = std::move(text);
    } else if (key == "kernel_iteration_range") {
      ASSIGN_OR_RETURN(std::string text, v.range_text());
      auto range = IterationRange::Parse(text);
      if (!range.ok())
        return InvalidArgument(fmt::format("{}: {}", what, range.status().message()));
      s.kernel_iteration_range = std::move(text);
    } else if (key == "launch_skip") {
      ASSIGN_OR_RETURN(s.launch_skip, v.unsigned_integer(0));
    } else if (key == "launch_count") {
      ASSIGN_OR_RETURN(s.launch_count, v.unsigned_integer(1));
    } else if (key == "nvtx_include" || key == "nvtx_exclude") {
      ASSIGN_OR_RETURN(auto exprs, v.text_list());
      RETURN_IF_ERROR(check_nvtx_expressions(what, exprs));
      (key == "nvtx_include" ? s.nvtx_include : s.nvtx_exclude) = std::move(exprs);
    } else if (key == "profile_from_start") {
      // true/false, or ncu's on/off
      if (auto b = v.boolean(); b.ok()) {
        s.profile_from_start = *b;
      } else {
        ASSIGN_OR_RETURN(std::string text, v.text());
        ASSIGN_OR_RETURN(s.profile_from_start, parse_profile_from_start_value(what, text));
      }
    } else if (key == "kernel_id") {
      ASSIGN_OR_RETURN(std::string text, v.text());
      RETURN_IF_ERROR(check_kernel_id(what, text));
      s.kernel_id = std::move(text);
    } else if (key == "kernel_name_base") {
      ASSIGN_OR_RETURN(std::string text, v.text());
      RETURN_IF_ERROR(check_kernel_name_base(what, text));
      s.kernel_name_base = std::move(text);
    } else if (key == "output_directory" || key == "output_file") {
      bool is_dir = key == "output_directory";
      ASSIGN_OR_RETURN(std::string text,
                       v.non_empty_text(is_dir ? "\"out\"" : "\"%hostname%/%pid%\""));
      Status st = validate_output_template(text);
      if (!st.ok()) return InvalidArgument(fmt::format("{}: {}", what, st.message()));
      (is_dir ? s.output_directory : s.output_file) = std::move(text);
    } else if (key == "output_format") {
      ASSIGN_OR_RETURN(auto names, v.name_list());
      ASSIGN_OR_RETURN(s.output_format, parse_output_formats(what, names));
    } else if (key == "output_gzip") {
      ASSIGN_OR_RETURN(s.output_gzip, v.boolean());
    } else if (key == "kernel_trace") {
      ASSIGN_OR_RETURN(s.kernel_trace, v.boolean());
    } else if (key == "summary") {
      ASSIGN_OR_RETURN(s.summary, v.boolean());
    } else if (key == "log_level") {
      ASSIGN_OR_RETURN(std::string text, v.text());
      RETURN_IF_ERROR(check_log_level(what, text));
      s.log_level = std::move(text);
    } else if (key == "name") {
      ASSIGN_OR_RETURN(job_->name, v.text());
    } else {
      std::string close = closest_name(key, names_of(kJobKeys));
      std::string hint = close.empty() ? "" : fmt::format(" (did you mean {}?)", close);
      return InvalidArgument(
          fmt::format("{}: unknown key{}{}; the keys a job takes are listed in "
                      "share/kreplay/input-schema.json",
                      what, hint, rocprofv3_hint(key)));
    }
    return Status::Ok();
  }

 private:
  const InputFile& file_;
  JobSpec* job_;
};

Result<InputFile> tree_to_input(const Node& root, std::string_view name) {
  InputFile file;
  file.path = std::string(name);
  auto at = [&](const Mark& m) {
    return m.line > 0 ? fmt::format("{}:{}:{}", name, m.line, m.column) : std::string(name);
  };
  if (root.kind == Node::Kind::kNull) {
    return InvalidArgument(
        fmt::format("{}: the file is empty; it needs a jobs list, e.g. "
                    "{{\"jobs\": [{{\"pmc\": [\"A\"]}}]}}",
                    name));
  }
  if (root.kind != Node::Kind::kMap) {
    return InvalidArgument(
        fmt::format("{}: the top level is {}; it must be a mapping with a jobs list, "
                    "e.g. {{\"jobs\": [{{\"pmc\": [\"A\"]}}]}}",
                    at(root.mark), kind_name(root)));
  }
  const Node* jobs = nullptr;
  Mark jobs_mark;
  for (const Member& member : root.members) {
    const std::string& key = member.key;
    const Node& value = member.value;
    const Mark& km = member.key_mark;
    if (key == "jobs") {
      jobs = &value;
      jobs_mark = km;
    } else if (key == "job_replay_mode") {
      std::string what = fmt::format("{}: job_replay_mode", at(km));
      ASSIGN_OR_RETURN(std::string text, ValueReader(value, what).text());
      auto mode = parse_job_replay_mode(text);
      if (!mode) return unknown_value(what, text, names_of(kJobReplayModeNames));
      file.job_replay_mode = *mode;
      file.job_replay_mode_given = true;
      file.job_replay_mode_mark = km;
    } else if (key == "$schema") {
      // Documentation for editors; not checked.
    } else {
      std::string close = closest_name(key, names_of(kTopLevelKeys));
      std::string hint = close.empty() ? "" : fmt::format(" (did you mean {}?)", close);
      std::string where_job = std::find(kJobKeys.begin(), kJobKeys.end(), key) != kJobKeys.end()
                                  ? "; job options go inside a job of the jobs list"
                                  : "; the top level takes jobs and job_replay_mode";
      return InvalidArgument(fmt::format("{}: unknown top-level key \"{}\"{}{}", at(km),
                                         printable(key), hint, where_job));
    }
  }
  if (!jobs) {
    return InvalidArgument(fmt::format(
        "{}: no jobs list; add one, e.g. {{\"jobs\": [{{\"pmc\": [\"A\"]}}]}}", at(root.mark)));
  }
  if (jobs->kind != Node::Kind::kSeq) {
    return InvalidArgument(fmt::format("{}: jobs: expected a list of jobs, found {}", at(jobs_mark),
                                       kind_name(*jobs)));
  }
  if (jobs->items.empty()) {
    return InvalidArgument(
        fmt::format("{}: jobs: the list is empty; a file needs at least one job", at(jobs_mark)));
  }
  for (size_t j = 0; j < jobs->items.size(); ++j) {
    const Node& job_node = jobs->items[j];
    JobSpec job;
    job.index = j;
    job.mark = job_node.mark;
    if (job_node.kind != Node::Kind::kMap) {
      return InvalidArgument(fmt::format("{}: jobs[{}]: expected a mapping of options, found {}",
                                         at(job_node.mark), j, kind_name(job_node)));
    }
    for (const Member& member : job_node.members) {
      job.keys.push_back(member.key);
      job.key_marks[member.key] = member.key_mark;
    }
    JobReader reader(file, &job);
    for (const Member& member : job_node.members) {
      RETURN_IF_ERROR(reader.read(member.key, member.value));
    }
    file.jobs.push_back(std::move(job));
  }
  return file;
}

}  // namespace

std::string_view to_string(JobReplayMode mode) {
  return mode == JobReplayMode::kKernel ? "kernel" : "application";
}

std::optional<JobReplayMode> parse_job_replay_mode(std::string_view text) {
  if (text == "application") return JobReplayMode::kApplication;
  if (text == "kernel") return JobReplayMode::kKernel;
  return std::nullopt;
}

std::string InputFile::where(const JobSpec& job, std::string_view key) const {
  Mark m = job.mark;
  if (!key.empty()) {
    auto it = job.key_marks.find(std::string(key));
    if (it != job.key_marks.end()) m = it->second;
  }
  std::string file = printable(path, 200);
  std::string place = m.line > 0 ? fmt::format("{}:{}:{}", file, m.line, m.column) : file;
  if (key.empty()) return fmt::format("{}: jobs[{}]", place, job.index);
  return fmt::format("{}: jobs[{}].{}", place, job.index, printable(key, 60));
}

std::string InputFile::job_label(const JobSpec& job) const {
  if (job.name.empty()) return fmt::format("job {}", job.index + 1);
  return fmt::format("job {} (\"{}\")", job.index + 1, printable(job.name, 40));
}

Result<InputFile> parse_input_text(std::string_view text, InputFormat format,
                                   std::string_view name) {
  const std::string safe_name = printable(name, 200);  // messages stay on one line
  try {
    ASSIGN_OR_RETURN(Node root, format == InputFormat::kJson ? parse_json_tree(text, safe_name)
                                                             : parse_yaml_tree(text, safe_name));
    return tree_to_input(root, safe_name);
  } catch (const std::exception& e) {
    // Nothing above is expected to throw; this is the exception firewall for third-party code.
    return InvalidArgument(
        fmt::format("{}: cannot read the input file: {}", safe_name, printable(e.what(), 300)));
  }
}

Result<InputFile> load_input_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 fmt::format("cannot read input file {}: {}; check the path given to -i",
                             printable(path, 200),
                             std::error_code(errno, std::generic_category()).message()));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  InputFormat format = InputFormat::kYaml;
  std::string ext = lower(std::filesystem::path(path).extension().string());
  if (ext == ".json") {
    format = InputFormat::kJson;
  } else if (ext == ".yaml" || ext == ".yml") {
    format = InputFormat::kYaml;
  } else {
    size_t first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '{') format = InputFormat::kJson;
  }
  return parse_input_text(text, format, path);
}

}  // namespace kreplay::cli
