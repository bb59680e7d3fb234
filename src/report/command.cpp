#include "report/command.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli/option_words.hpp"
#include "common/logging.hpp"
#include "output/writer.hpp"
#include "report/database.hpp"
#include "report/render.hpp"
#include "report/sections.hpp"

namespace kreplay::report {
namespace {

namespace fs = std::filesystem;

int fail(const std::string& message) {
  std::fprintf(stderr, "==KREPLAY== error: %s\n", message.c_str());
  return 2;
}

Status from_cli11(const CLI::ParseError& e, const char* command) {
  std::string what = e.what();
  for (char& c : what) {
    if (c == '\n') c = ' ';
  }
  return InvalidArgument(fmt::format("{}; run kreplay {} --help for the options", what, command));
}

// As the main command (cli/options.cpp): an option never takes another option as its value.
Status check_option_values(const CLI::App& app, const std::vector<std::string>& words,
                           const char* command) {
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    const CLI::Option* opt = cli::option_of(app, words[i]);
    if (opt == nullptr || opt->get_expected_min() < 1 || opt->get_type_size_max() < 1 ||
        words[i].find('=') != std::string::npos)
      continue;
    const std::string& next = words[i + 1];
    if (!cli::looks_like_option(next)) continue;
    return InvalidArgument(fmt::format(
        "{} needs a value before {}, which is an option (a list ends at the "
        "next option); write {} {} ... (kreplay {} --help)",
        words[i], next.substr(0, next.find('=')), words[i], opt->get_type_name(), command));
  }
  return Status::Ok();
}

Result<std::vector<std::string>> parse_args(CLI::App& app, const std::vector<std::string>& args,
                                            const char* command, bool* help) {
  std::vector<std::string> rest(args.begin() + 1, args.end());
  RETURN_IF_ERROR(check_option_values(app, rest, command));
  std::vector<std::string> reversed(rest.rbegin(), rest.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    *help = true;
  } catch (const CLI::ParseError& e) {
    return from_cli11(e, command);
  }
  return rest;
}

}  // namespace

std::string default_html_path(const std::string& database) {
  fs::path p(database);
  std::string name = p.filename().string();
  const std::string suffix = "_results.db";
  if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
    name.resize(name.size() - suffix.size());
  } else {
    name = p.stem().string();
  }
  return (p.parent_path() / (name + "_report.html")).string();
}

Result<ReportCommand> parse_report_command(const std::vector<std::string>& args) {
  ReportCommand c;
  CLI::App app{"kreplay report: the sections a run collected, per kernel or launch, with derived "
               "values and the rules that fired",
               "kreplay report"};
  std::string launch;
  app.add_option("database", c.database, "The results database (<host>/<pid>_results.db)")
      ->type_name("RUN.db");
  app.add_option("--baseline", c.baseline, "Show each value beside this database's, with the "
                                           "change in percent")
      ->type_name("OTHER.db");
  app.add_option("--format", c.format, "text (default), csv, json or html (one file with charts)")
      ->type_name("FORMAT");
  app.add_option("-o,--output", c.output,
                 "Write here instead of stdout (html: default <stem>_report.html next to the "
                 "database; - for stdout)")
      ->type_name("FILE");
  app.add_option("-k,--kernel-name", c.options.kernel,
                 "Only kernels with this name (demangled, mangled or function name) or matching "
                 "regex:EXPR")
      ->type_name("NAME|regex:EXPR");
  app.add_option("--launch", launch, "One launch (its dispatch id) instead of kernel averages, or "
                                     "all for every launch")
      ->type_name("N|all");
  app.add_option("--section", c.options.sections,
                 "Only these sections (names or regex:EXPR); default: every section the run "
                 "collected")
      ->delimiter(',')
      ->type_name("NAME");
  app.add_option("--section-folder", c.section_folders,
                 "Also read the section files of this folder")
      ->type_name("DIR");
  app.footer(
      "Examples:\n"
      "  kreplay report host/1234_results.db\n"
      "  kreplay report run.db -k regex:gemm --launch all --format csv -o gemm.csv\n"
      "  kreplay report new.db --baseline old.db --format html");
  ASSIGN_OR_RETURN(auto rest, parse_args(app, args, "report", &c.help));
  if (c.help) {
    c.help_text = app.help();
    return c;
  }
  if (c.database.empty()) {
    return InvalidArgument(
        "kreplay report needs a results database: kreplay report RUN.db [options]");
  }
  if (c.format != "text" && c.format != "csv" && c.format != "json" && c.format != "html") {
    return InvalidArgument(fmt::format("--format {}: use text, csv, json or html", c.format));
  }
  if (!launch.empty()) {
    if (launch == "all") {
      c.options.every_launch = true;
    } else {
      uint64_t n = 0;
      auto [ptr, ec] = std::from_chars(launch.data(), launch.data() + launch.size(), n);
      if (ec != std::errc() || ptr != launch.data() + launch.size()) {
        return InvalidArgument(
            fmt::format("--launch {}: give a dispatch id (a number) or all", launch));
      }
      c.options.launch = n;
    }
  }
  for (auto& s : c.options.sections) {
    if (s.empty())
      return InvalidArgument("--section is empty; give a section name such as SpeedOfLight");
  }
  return c;
}

Result<ConvertOptions> parse_convert_command(const std::vector<std::string>& args, bool* help,
                                             std::string* help_text) {
  ConvertOptions o;
  CLI::App app{"kreplay convert: write the CSV, JSON or Perfetto files of a run from its results "
               "database, as the run would have written them",
               "kreplay convert"};
  app.add_option("database", o.database, "The results database")->type_name("RUN.db");
  app.add_option("--to", o.formats, "csv, json, perfetto (a comma list for several)")
      ->delimiter(',')
      ->type_name("FORMAT");
  app.add_option("-d,--output-directory", o.directory,
                 "Directory for the files (default: the database's)")
      ->type_name("DIR");
  app.add_option("-o,--output-file", o.stem,
                 "File name stem (default: the database's name without _results.db)")
      ->type_name("NAME");
  app.add_flag("--kernel-trace", o.kernel_trace, "Also write <stem>_kernel_trace.csv");
  app.add_flag("--output-gzip", o.gzip, "Compress the json and perfetto files");
  app.footer("Example:\n  kreplay convert host/1234_results.db --to csv,perfetto -d out");
  ASSIGN_OR_RETURN(auto rest, parse_args(app, args, "convert", help));
  if (*help) {
    *help_text = app.help();
    return o;
  }
  if (o.database.empty()) {
    return InvalidArgument(
        "kreplay convert needs a results database: kreplay convert RUN.db --to csv");
  }
  return o;
}

Result<MergeCommand> parse_merge_command(const std::vector<std::string>& args) {
  MergeCommand c;
  CLI::App app{
      "kreplay merge: put the results databases of the ranks of one job into one "
      "database, with a rank column on every table and views that compare the ranks",
      "kreplay merge"};
  std::vector<std::string> inputs;
  app.add_option("inputs", inputs,
                 "Results databases, or directories searched for *_results.db (recursively; "
                 "application replay's pass_<k> folders are left out)")
      ->type_name("DIR|FILE...");
  app.add_option("-o,--output-file", c.output, "The merged database (default: merged_results.db)")
      ->type_name("FILE");
  app.footer(
      "Example:\n  kreplay merge node01 node02 -o all.db    # every rank's "
      "<host>/<rank>_results.db\n  kreplay report all.db");
  ASSIGN_OR_RETURN(auto rest, parse_args(app, args, "merge", &c.help));
  if (c.help) {
    c.help_text = app.help();
    return c;
  }
  if (inputs.empty()) {
    return InvalidArgument(
        "kreplay merge needs the ranks' databases: kreplay merge DIR|FILES... -o all.db");
  }
  std::error_code ec;
  for (const std::string& in : inputs) {
    if (!fs::is_directory(in, ec)) {
      c.inputs.push_back(in);  // a missing file is reported by the merge
      continue;
    }
    std::vector<std::string> found;
    for (auto it = fs::recursive_directory_iterator(in, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
      const std::string name = it->path().filename().string();
      // Application replay's pass_<k> folders hold the runs of one rank, which kreplay merged
      // into the database beside them already.
      if (it->is_directory(ec) && name.size() > 5 && name.compare(0, 5, "pass_") == 0 &&
          std::all_of(name.begin() + 5, name.end(), [](char ch) { return std::isdigit(ch); })) {
        it.disable_recursion_pending();
        continue;
      }
      if (it->is_regular_file(ec) && name.size() > 11 &&
          name.compare(name.size() - 11, 11, "_results.db") == 0 &&
          (c.output.empty() || !fs::equivalent(it->path(), c.output, ec))) {
        found.push_back(it->path().string());
      }
    }
    if (found.empty()) {
      return InvalidArgument(fmt::format(
          "{}: no *_results.db in this directory; give the directory the ranks wrote to", in));
    }
    std::sort(found.begin(), found.end());
    c.inputs.insert(c.inputs.end(), found.begin(), found.end());
  }
  if (c.output.empty()) c.output = "merged_results.db";
  return c;
}

int run_command(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  const std::string command = args.front();
  if (command == "merge") {
    auto c = parse_merge_command(args);
    if (!c.ok()) return fail(c.status().message());
    if (c->help) {
      std::fputs(c->help_text.c_str(), stdout);
      return 0;
    }
    std::vector<int64_t> ranks;
    std::vector<std::string> left_out;
    Status s = output::merge_ranks(c->inputs, c->output, &ranks, &left_out);
    if (!s.ok()) return fail(s.message());
    if (!left_out.empty()) {
      KR_NOTICE("left out {} database(s) with no rank and no launch (the launcher's own process, "
                "e.g. torchrun's): {}",
                left_out.size(), fmt::join(left_out, ", "));
    }
    KR_NOTICE("{} rank{} in one database: {}", ranks.size(), ranks.size() == 1 ? "" : "s",
              c->output);
    return 0;
  }
  if (command == "convert") {
    bool help = false;
    std::string help_text;
    auto o = parse_convert_command(args, &help, &help_text);
    if (!o.ok()) return fail(o.status().message());
    if (help) {
      std::fputs(help_text.c_str(), stdout);
      return 0;
    }
    auto r = convert_database(*o);
    if (!r.ok()) return fail(r.status().message());
    for (const auto& n : r->notes) KR_NOTICE("note: {}", n);
    for (const auto& f : r->files) KR_NOTICE("output: {}", f);
    return 0;
  }

  auto c = parse_report_command(args);
  if (!c.ok()) return fail(c.status().message());
  if (c->help) {
    std::fputs(c->help_text.c_str(), stdout);
    return 0;
  }
  std::vector<std::string> folders = {default_sections_folder()};
  for (const auto& f : c->section_folders) folders.push_back(f);
  auto catalog = Catalog::load(folders);
  if (!catalog.ok()) return fail(catalog.status().message());
  auto db = Database::open(c->database);
  if (!db.ok()) return fail(db.status().message());
  std::optional<Database> baseline;
  if (!c->baseline.empty()) {
    auto b = Database::open(c->baseline);
    if (!b.ok()) return fail(fmt::format("--baseline: {}", b.status().message()));
    baseline = std::move(b).value();
  }
  auto report = build_report(*db, baseline ? &*baseline : nullptr, *catalog, c->options);
  if (!report.ok()) return fail(report.status().message());
  std::string text;
  if (c->format == "text") {
    text = render_text(*report, *db);
  } else if (c->format == "csv") {
    text = render_csv(*report);
  } else if (c->format == "json") {
    text = render_json(*report, *db);
  } else {
    auto html = render_html(*report, *db);
    if (!html.ok()) return fail(html.status().message());
    text = std::move(html).value();
  }
  std::string path = c->output;
  if (path.empty() && c->format == "html") path = default_html_path(c->database);
  if (path.empty() || path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return std::fflush(stdout) == 0 ? 0 : fail("cannot write the report to stdout");
  }
  std::error_code ec;
  if (fs::path(path).has_parent_path()) fs::create_directories(fs::path(path).parent_path(), ec);
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return fail(fmt::format("cannot write {}; choose a writable file with -o", path));
  for (const auto& n : report->notes) KR_NOTICE("note: {}", n);
  KR_NOTICE("report: {}", path);
  return 0;
}

}  // namespace kreplay::report
