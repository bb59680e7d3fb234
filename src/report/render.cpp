#include "report/render.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>

#include "output/text.hpp"

namespace kreplay::report {
namespace {

using ojson = nlohmann::ordered_json;

std::string change_text(std::optional<double> pct) {
  if (!pct) return "";
  return fmt::format("{:+.1f}%", *pct);
}

std::string run_line(const Database& db) {
  if (db.runs.empty()) return "no run information";
  const DbRun& r = db.runs.front();
  std::string mode = r.replay_mode;
  if (db.by_rank) {
    std::set<int64_t> ranks;
    for (const DbRun& run : db.runs) ranks.insert(run.rank.value_or(0));
    mode = fmt::format("{} replay, {} ranks", r.replay_mode, ranks.size());
    if (db.runs.size() > ranks.size()) mode += fmt::format(", {} runs", db.runs.size());
  } else if (db.runs.size() > 1) {
    mode = fmt::format("application replay, {} runs", db.runs.size());
  } else {
    mode += " replay";
  }
  return fmt::format("{}, {} launches, kreplay {}", mode, db.launches.size(), r.kreplay_version);
}

ojson opt_json(std::optional<double> v) {
  if (!v) return nullptr;
  return *v;
}

}  // namespace

std::string render_text(const Report& report, const Database& db) {
  std::string out = fmt::format("kreplay report: {} ({})\n", report.database, run_line(db));
  if (!report.baseline.empty()) out += fmt::format("baseline: {}\n", report.baseline);
  for (const auto& n : report.notes) out += fmt::format("note: {}\n", n);
  const bool base = !report.baseline.empty();
  for (const Subject& s : report.subjects) {
    out += "\n";
    if (s.dispatch_id) {
      out += fmt::format("{}: launch {} ({})\n", s.kernel, *s.dispatch_id,
                         output::format_duration(s.total_ns));
    } else {
      out += fmt::format("{}: {} launch{}, {} in total ({:.1f}% of kernel time)\n", s.kernel,
                         s.launches, s.launches == 1 ? "" : "es",
                         output::format_duration(s.total_ns), s.time_share_pct);
    }
    if (base && !s.has_baseline) out += "  (not in the baseline)\n";
    for (const SectionResult& r : s.sections) {
      out += fmt::format("  Section: {}\n", r.section->title);
      if (base) {
        out += fmt::format("    {:<40} {:<10} {:>16} {:>16} {:>9}\n", "Name", "Unit", "Value",
                           "Baseline", "Change");
      } else {
        out += fmt::format("    {:<40} {:<10} {:>16}\n", "Name", "Unit", "Value");
      }
      for (const ValueRow& v : r.values) {
        if (base) {
          out += fmt::format("    {:<40} {:<10} {:>16} {:>16} {:>9}\n", v.label, v.unit,
                             format_value(v.value), format_value(v.baseline),
                             change_text(v.change_pct()));
        } else {
          out += fmt::format("    {:<40} {:<10} {:>16}\n", v.label, v.unit, format_value(v.value));
        }
      }
      for (const RuleRow& rule : r.rules) {
        out += fmt::format("    {:<8} {}\n", rule.severity == "warning" ? "WARNING" : "INFO",
                           rule.advice);
      }
    }
  }
  if (report.subjects.empty()) out += "\nno launches\n";
  return out;
}

std::string render_csv(const Report& report) {
  using output::csv_field;
  std::string out =
      "Kernel,Dispatch_Id,Launches,Section,Kind,Name,Label,Unit,Value,Baseline,Change_Pct,"
      "Severity,Advice\n";
  auto num = [](std::optional<double> v) { return v ? output::format_double(*v) : std::string(); };
  for (const Subject& s : report.subjects) {
    const std::string head = fmt::format(
        "{},{},{}", csv_field(s.kernel), s.dispatch_id ? std::to_string(*s.dispatch_id) : "",
        s.launches);
    for (const SectionResult& r : s.sections) {
      for (const ValueRow& v : r.values) {
        out += fmt::format("{},{},{},{},{},{},{},{},{},,\n", head, csv_field(r.section->name),
                           v.kind, csv_field(v.name), csv_field(v.label), csv_field(v.unit),
                           num(v.value), num(v.baseline), num(v.change_pct()));
      }
      for (const RuleRow& rule : r.rules) {
        out += fmt::format("{},{},rule,{},,,,,,{},{}\n", head, csv_field(r.section->name),
                           csv_field(rule.name), rule.severity, csv_field(rule.advice));
      }
    }
  }
  return out;
}

std::string render_json(const Report& report, const Database& db) {
  ojson runs = ojson::array();
  for (const DbRun& r : db.runs) {
    runs.push_back({{"app_pass", r.app_pass},
                    {"replay_mode", r.replay_mode},
                    {"kreplay_version", r.kreplay_version},
                    {"hostname", r.hostname},
                    {"pid", r.pid},
                    {"launches", r.launches ? ojson(*r.launches) : ojson(nullptr)},
                    {"exit_code", r.exit_code ? ojson(*r.exit_code) : ojson(nullptr)}});
    if (db.by_rank) runs.back()["rank"] = r.rank ? ojson(*r.rank) : ojson(nullptr);
  }
  ojson shown = ojson::array();
  for (const Section* s : report.shown) shown.push_back(s->name);
  ojson subjects = ojson::array();
  for (const Subject& s : report.subjects) {
    ojson sections = ojson::array();
    for (const SectionResult& r : s.sections) {
      ojson values = ojson::array();
      for (const ValueRow& v : r.values) {
        values.push_back({{"name", v.name},
                          {"label", v.label},
                          {"unit", v.unit},
                          {"kind", v.kind},
                          {"value", opt_json(v.value)},
                          {"baseline", opt_json(v.baseline)},
                          {"change_pct", opt_json(v.change_pct())}});
      }
      ojson rules = ojson::array();
      for (const RuleRow& rule : r.rules) {
        rules.push_back({{"name", rule.name}, {"severity", rule.severity}, {"advice", rule.advice}});
      }
      sections.push_back({{"name", r.section->name},
                          {"title", r.section->title},
                          {"values", values},
                          {"rules", rules}});
    }
    subjects.push_back({{"kernel", s.kernel},
                        {"dispatch_id", s.dispatch_id ? ojson(*s.dispatch_id) : ojson(nullptr)},
                        {"launches", s.launches},
                        {"total_ns", s.total_ns},
                        {"time_share_pct", s.time_share_pct},
                        {"has_baseline", s.has_baseline},
                        {"sections", sections}});
  }
  ojson doc = {{"format", "kreplay report"},
               {"schema_version", 1},
               {"database", report.database},
               {"baseline", report.baseline.empty() ? ojson(nullptr) : ojson(report.baseline)},
               {"runs", runs},
               {"notes", report.notes},
               {"sections", shown},
               {"subjects", subjects}};
  return doc.dump(1, ' ', false, ojson::error_handler_t::replace) + "\n";
}

}  // namespace kreplay::report
