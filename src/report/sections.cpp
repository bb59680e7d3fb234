#include "report/sections.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "common/util.hpp"

namespace kreplay::report {
namespace {

namespace fs = std::filesystem;

std::string at(const std::string& file, const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  if (m.is_null()) return file;
  return fmt::format("{}:{}:{}", file, m.line + 1, m.column + 1);
}

Status check_keys(const std::string& file, const YAML::Node& map,
                  std::initializer_list<const char*> allowed, std::string_view what) {
  if (!map.IsMap())
    return InvalidArgument(fmt::format("{}: {} must be a mapping", at(file, map), what));
  for (const auto& kv : map) {
    std::string key = kv.first.as<std::string>();
    bool ok = false;
    std::vector<std::string> names;
    for (const char* a : allowed) {
      ok |= key == a;
      names.emplace_back(a);
    }
    if (!ok) {
      auto close = suggest(key, names, 1);
      return InvalidArgument(fmt::format(
          "{}: unknown key \"{}\" in {}{}; the keys are {}", at(file, kv.first), key, what,
          close.empty() ? "" : fmt::format(" (did you mean {}?)", close[0]), join_or(names)));
    }
  }
  return Status::Ok();
}

Result<std::string> text(const std::string& file, const YAML::Node& map, const char* key,
                         bool required) {
  const YAML::Node v = map[key];
  if (!v) {
    if (required) return InvalidArgument(fmt::format("{}: \"{}\" is missing", at(file, map), key));
    return std::string();
  }
  if (!v.IsScalar())
    return InvalidArgument(fmt::format("{}: \"{}\" must be text", at(file, v), key));
  std::string s = v.Scalar();
  // Folded scalars (>-) keep single spaces; collapse runs the indentation left.
  std::string out;
  for (char c : s) {
    if (c == '\n') c = ' ';
    if (c == ' ' && !out.empty() && out.back() == ' ') continue;
    out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (required && out.empty())
    return InvalidArgument(fmt::format("{}: \"{}\" is empty", at(file, v), key));
  return out;
}

Result<std::vector<std::string>> names(const std::string& file, const YAML::Node& map,
                                       const char* key) {
  const YAML::Node v = map[key];
  std::vector<std::string> out;
  if (!v) return out;
  if (!v.IsSequence())
    return InvalidArgument(fmt::format("{}: \"{}\" must be a list", at(file, v), key));
  for (const auto& item : v) {
    if (!item.IsScalar())
      return InvalidArgument(fmt::format("{}: items of \"{}\" must be names", at(file, item), key));
    out.push_back(item.Scalar());
  }
  return out;
}

bool valid_name(std::string_view n) {
  if (n.empty() || !(std::isalpha(static_cast<unsigned char>(n[0])) || n[0] == '_')) return false;
  for (char c : n) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  }
  return true;
}

Result<Section> parse_section_node(const YAML::Node& root, const std::string& file) {
  RETURN_IF_ERROR(check_keys(file, root,
                             {"name", "title", "description", "order", "requires", "metrics",
                              "derived", "chart", "rules"},
                             "a section"));
  Section s;
  s.file = file;
  ASSIGN_OR_RETURN(s.name, text(file, root, "name", true));
  if (!valid_name(s.name) || s.name.find('.') != std::string::npos)
    return InvalidArgument(
        fmt::format("{}: section name \"{}\" must be a word of letters, digits and _",
                    at(file, root["name"]), s.name));
  ASSIGN_OR_RETURN(s.title, text(file, root, "title", true));
  ASSIGN_OR_RETURN(s.description, text(file, root, "description", false));
  ASSIGN_OR_RETURN(s.requires_data, text(file, root, "requires", false));
  if (!s.requires_data.empty() && s.requires_data != "source_counters") {
    return InvalidArgument(
        fmt::format("{}: requires: \"{}\" is not a kind of data kreplay knows; use "
                    "source_counters",
                    at(file, root["requires"]), s.requires_data));
  }
  if (root["order"]) {
    try {
      s.order = root["order"].as<int>();
    } catch (const YAML::Exception&) {
      return InvalidArgument(fmt::format("{}: order must be an integer", at(file, root["order"])));
    }
  }

  // What expressions may name: metric names, aliases, derived names, fields.
  std::set<std::string> defined(field_names().begin(), field_names().end());
  auto define = [&](const std::string& name, const YAML::Node& where) -> Status {
    if (!valid_name(name))
      return InvalidArgument(fmt::format("{}: \"{}\" is not a valid name", at(file, where), name));
    if (!defined.insert(name).second && !is_field_name(name))
      return InvalidArgument(
          fmt::format("{}: \"{}\" is defined twice in section {}", at(file, where), name, s.name));
    return Status::Ok();
  };

  const YAML::Node metrics = root["metrics"];
  if (metrics && !metrics.IsSequence())
    return InvalidArgument(fmt::format("{}: metrics must be a list", at(file, metrics)));
  for (const auto& m : metrics) {
    RETURN_IF_ERROR(check_keys(file, m, {"name", "as", "label", "unit"}, "a metric"));
    SectionMetric sm;
    ASSIGN_OR_RETURN(sm.name, text(file, m, "name", true));
    ASSIGN_OR_RETURN(sm.alias, text(file, m, "as", false));
    ASSIGN_OR_RETURN(sm.label, text(file, m, "label", true));
    ASSIGN_OR_RETURN(sm.unit, text(file, m, "unit", false));
    sm.field = is_field_name(sm.name);
    if (sm.field && std::find(field_names().begin(), field_names().end(), sm.name) ==
                        field_names().end()) {
      auto close = suggest(sm.name, field_names(), 1);
      return InvalidArgument(
          fmt::format("{}: unknown record field \"{}\"{}", at(file, m["name"]), sm.name,
                      close.empty() ? "" : fmt::format(" (did you mean {}?)", close[0])));
    }
    if (!sm.field) RETURN_IF_ERROR(define(sm.name, m["name"]));
    if (!sm.alias.empty()) {
      if (is_field_name(sm.alias))
        return InvalidArgument(
            fmt::format("{}: an alias cannot start with launch. or device.", at(file, m["as"])));
      RETURN_IF_ERROR(define(sm.alias, m["as"]));
    }
    s.metrics.push_back(std::move(sm));
  }

  auto parse_expr = [&](const YAML::Node& where, const std::string& expr_text,
                        std::string_view what) -> Result<Expr> {
    auto e = Expr::parse(expr_text);
    if (!e.ok())
      return InvalidArgument(
          fmt::format("{}: {}: {}", at(file, where), what, e.status().message()));
    for (const auto& n : e->names()) {
      if (defined.count(n) == 0) {
        std::vector<std::string> candidates(defined.begin(), defined.end());
        auto close = suggest(n, candidates, 1);
        return InvalidArgument(fmt::format(
            "{}: {} uses \"{}\", which section {} does not define{}; add it to metrics or "
            "derived",
            at(file, where), what, n, s.name,
            close.empty() ? "" : fmt::format(" (did you mean {}?)", close[0])));
      }
    }
    return e;
  };

  const YAML::Node derived = root["derived"];
  if (derived && !derived.IsSequence())
    return InvalidArgument(fmt::format("{}: derived must be a list", at(file, derived)));
  for (const auto& d : derived) {
    RETURN_IF_ERROR(check_keys(file, d, {"name", "label", "unit", "expr"}, "a derived value"));
    SectionDerived sd;
    ASSIGN_OR_RETURN(sd.name, text(file, d, "name", true));
    ASSIGN_OR_RETURN(sd.label, text(file, d, "label", true));
    ASSIGN_OR_RETURN(sd.unit, text(file, d, "unit", false));
    ASSIGN_OR_RETURN(std::string expr_text, text(file, d, "expr", true));
    ASSIGN_OR_RETURN(sd.expr, parse_expr(d["expr"], expr_text, fmt::format("derived {}", sd.name)));
    if (is_field_name(sd.name))
      return InvalidArgument(fmt::format("{}: a derived name cannot start with launch. or device.",
                                         at(file, d["name"])));
    RETURN_IF_ERROR(define(sd.name, d["name"]));
    s.derived.push_back(std::move(sd));
  }

  const YAML::Node rules = root["rules"];
  if (rules && !rules.IsSequence())
    return InvalidArgument(fmt::format("{}: rules must be a list", at(file, rules)));
  for (const auto& r : rules) {
    RETURN_IF_ERROR(check_keys(file, r, {"name", "severity", "when", "advice"}, "a rule"));
    SectionRule sr;
    ASSIGN_OR_RETURN(sr.name, text(file, r, "name", true));
    ASSIGN_OR_RETURN(sr.severity, text(file, r, "severity", false));
    if (sr.severity.empty()) sr.severity = "warning";
    if (sr.severity != "info" && sr.severity != "warning")
      return InvalidArgument(fmt::format("{}: severity \"{}\": use info or warning",
                                         at(file, r["severity"]), sr.severity));
    ASSIGN_OR_RETURN(std::string when, text(file, r, "when", true));
    ASSIGN_OR_RETURN(sr.when, parse_expr(r["when"], when, fmt::format("rule {}", sr.name)));
    ASSIGN_OR_RETURN(sr.advice, text(file, r, "advice", true));
    for (const auto& n : placeholder_names(sr.advice)) {
      if (defined.count(n) == 0)
        return InvalidArgument(
            fmt::format("{}: rule {}: advice names {{{}}}, which section {} does not "
                        "define",
                        at(file, r["advice"]), sr.name, n, s.name));
    }
    s.rules.push_back(std::move(sr));
  }

  if (const YAML::Node chart = root["chart"]) {
    RETURN_IF_ERROR(check_keys(file, chart, {"kind", "values", "x", "y", "peak_compute",
                                             "peak_bandwidth"},
                               "a chart"));
    ASSIGN_OR_RETURN(s.chart.kind, text(file, chart, "kind", true));
    ASSIGN_OR_RETURN(s.chart.values, names(file, chart, "values"));
    ASSIGN_OR_RETURN(s.chart.x, text(file, chart, "x", false));
    ASSIGN_OR_RETURN(s.chart.y, text(file, chart, "y", false));
    ASSIGN_OR_RETURN(s.chart.peak_compute, text(file, chart, "peak_compute", false));
    ASSIGN_OR_RETURN(s.chart.peak_bandwidth, text(file, chart, "peak_bandwidth", false));
    std::vector<std::string> used = s.chart.values;
    if (s.chart.kind == "bars") {
      if (used.empty())
        return InvalidArgument(fmt::format("{}: a bars chart needs values", at(file, chart)));
    } else if (s.chart.kind == "roofline") {
      used = {s.chart.x, s.chart.y, s.chart.peak_compute, s.chart.peak_bandwidth};
      for (const auto& n : used) {
        if (n.empty())
          return InvalidArgument(
              fmt::format("{}: a roofline chart needs x, y, peak_compute and "
                          "peak_bandwidth",
                          at(file, chart)));
      }
    } else if (s.chart.kind != "hotspots") {
      return InvalidArgument(fmt::format("{}: chart kind \"{}\": use bars, roofline or hotspots",
                                         at(file, chart["kind"]), s.chart.kind));
    }
    for (const auto& n : used) {
      if (defined.count(n) == 0)
        return InvalidArgument(
            fmt::format("{}: the chart names \"{}\", which section {} does not define",
                        at(file, chart), n, s.name));
    }
  }
  if (s.metrics.empty() && s.derived.empty())
    return InvalidArgument(fmt::format("{}: section {} has no metrics", file, s.name));
  return s;
}

Result<std::vector<MetricSet>> parse_sets(const YAML::Node& root, const std::string& file) {
  RETURN_IF_ERROR(check_keys(file, root, {"sets"}, "sets.yaml"));
  std::vector<MetricSet> out;
  const YAML::Node sets = root["sets"];
  if (!sets || !sets.IsSequence())
    return InvalidArgument(fmt::format("{}: sets must be a list", at(file, root)));
  for (const auto& s : sets) {
    RETURN_IF_ERROR(check_keys(file, s, {"name", "description", "sections"}, "a set"));
    MetricSet set;
    set.file = file;
    ASSIGN_OR_RETURN(set.name, text(file, s, "name", true));
    ASSIGN_OR_RETURN(set.description, text(file, s, "description", false));
    if (!s["sections"])
      return InvalidArgument(fmt::format("{}: set {} has no sections list", at(file, s), set.name));
    ASSIGN_OR_RETURN(set.sections, names(file, s, "sections"));
    out.push_back(std::move(set));
  }
  return out;
}

Result<YAML::Node> load_yaml(const std::string& file) {
  std::ifstream in(file);
  if (!in) return InvalidArgument(fmt::format("cannot read section file {}", file));
  std::stringstream buffer;
  buffer << in.rdbuf();
  try {
    return YAML::Load(buffer.str());
  } catch (const YAML::Exception& e) {
    return InvalidArgument(fmt::format("{}:{}:{}: {}; fix the YAML syntax", file, e.mark.line + 1,
                                       e.mark.column + 1, e.msg));
  }
}

}  // namespace

const std::vector<std::string>& field_names() {
  static const std::vector<std::string> kFields = {
      "launch.grid_x",         "launch.grid_y",          "launch.grid_z",
      "launch.grid_size",      "launch.block_x",         "launch.block_y",
      "launch.block_z",        "launch.block_size",      "launch.threads",
      "launch.cluster_size",   "launch.registers_per_thread", "launch.static_shared_bytes",
      "launch.dynamic_shared_bytes", "launch.shared_bytes", "launch.duration_ns",
      "launch.passes",         "launch.bytes_snapshotted", "launch.bytes_changed",
      "launch.bytes_restored", "launch.snapshot_ns",     "launch.restore_ns",
      "device.sm_count",       "device.cc_major",        "device.cc_minor",
      "device.memory_bytes"};
  return kFields;
}

bool is_field_name(std::string_view name) {
  return name.rfind("launch.", 0) == 0 || name.rfind("device.", 0) == 0;
}

const std::vector<std::string>& available_data_kinds() {
  static const std::vector<std::string> kKinds;
  return kKinds;
}

std::vector<std::string> Section::counters() const {
  std::vector<std::string> out;
  for (const auto& m : metrics) {
    if (!m.field) out.push_back(m.name);
  }
  return out;
}

bool Section::collectable() const {
  const auto& kinds = available_data_kinds();
  return requires_data.empty() ||
         std::find(kinds.begin(), kinds.end(), requires_data) != kinds.end();
}

const SectionMetric* Section::metric(std::string_view name_or_alias) const {
  for (const auto& m : metrics) {
    if (m.name == name_or_alias || (!m.alias.empty() && m.alias == name_or_alias)) return &m;
  }
  return nullptr;
}

Result<Section> Catalog::parse_section(std::string_view text_in, const std::string& file) {
  try {
    return parse_section_node(YAML::Load(std::string(text_in)), file);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(fmt::format("{}:{}:{}: {}; fix the YAML syntax", file, e.mark.line + 1,
                                       e.mark.column + 1, e.msg));
  }
}

Result<Catalog> Catalog::load(const std::vector<std::string>& folders) {
  Catalog c;
  std::map<std::string, Section> sections;
  std::map<std::string, MetricSet> sets;
  std::vector<std::string> set_order;
  for (const auto& folder : folders) {
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) {
      return InvalidArgument(
          fmt::format("section folder {} does not exist; give a folder of section "
                      "files (*.yaml)",
                      folder));
    }
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(folder, ec)) {
      if (entry.is_regular_file() && entry.path().extension() == ".yaml")
        files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& path : files) {
      ASSIGN_OR_RETURN(YAML::Node root, load_yaml(path.string()));
      try {
        if (path.filename() == "sets.yaml") {
          ASSIGN_OR_RETURN(auto list, parse_sets(root, path.string()));
          for (auto& s : list) {
            if (sets.count(s.name) == 0) set_order.push_back(s.name);
            sets[s.name] = std::move(s);
          }
        } else {
          ASSIGN_OR_RETURN(Section s, parse_section_node(root, path.string()));
          sections[s.name] = std::move(s);
        }
      } catch (const YAML::Exception& e) {
        return InvalidArgument(fmt::format("{}: {}", path.string(), e.what()));
      }
    }
  }
  for (auto& [name, s] : sections) c.sections_.push_back(std::move(s));
  std::stable_sort(c.sections_.begin(), c.sections_.end(),
                   [](const Section& a, const Section& b) { return a.order < b.order; });
  for (const auto& name : set_order) {
    MetricSet& set = sets[name];
    for (const auto& s : set.sections) {
      if (c.section(s) == nullptr) {
        std::vector<std::string> known;
        for (const auto& sec : c.sections_) known.push_back(sec.name);
        auto close = suggest(s, known, 1);
        return InvalidArgument(fmt::format(
            "{}: set {} names section {}, which no section file defines{}", set.file, set.name, s,
            close.empty() ? "" : fmt::format(" (did you mean {}?)", close[0])));
      }
    }
    c.sets_.push_back(std::move(set));
  }
  return c;
}

const Section* Catalog::section(std::string_view name) const {
  for (const auto& s : sections_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const MetricSet* Catalog::set(std::string_view name) const {
  for (const auto& s : sets_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

Result<std::vector<const Section*>> Catalog::resolve(const std::string& set_name,
                                                     const std::vector<std::string>& specs) const {
  std::set<std::string> wanted;
  if (!set_name.empty()) {
    const MetricSet* set = this->set(set_name);
    if (set == nullptr) {
      std::vector<std::string> known;
      for (const auto& s : sets_) known.push_back(s.name);
      auto close = suggest(set_name, known, 1);
      return InvalidArgument(fmt::format(
          "unknown set \"{}\"{}; the sets are {} (kreplay --list-sets)", set_name,
          close.empty() ? "" : fmt::format(" (did you mean {}?)", close[0]), join_or(known)));
    }
    wanted.insert(set->sections.begin(), set->sections.end());
  }
  std::vector<std::string> known;
  for (const auto& s : sections_) known.push_back(s.name);
  for (const auto& spec : specs) {
    if (spec.rfind("regex:", 0) == 0) {
      std::regex re;
      try {
        re = std::regex(spec.substr(6));
      } catch (const std::regex_error& e) {
        return InvalidArgument(
            fmt::format("section \"{}\": bad regular expression ({})", spec, e.what()));
      }
      bool any = false;
      for (const auto& n : known) {
        if (std::regex_search(n, re)) {
          wanted.insert(n);
          any = true;
        }
      }
      if (!any)
        return InvalidArgument(
            fmt::format("section \"{}\" matches no section; the sections are {} "
                        "(kreplay --list-sections)",
                        spec, join_or(known)));
    } else {
      if (section(spec) == nullptr) {
        auto close = suggest(spec, known, 1);
        return InvalidArgument(
            fmt::format("unknown section \"{}\"{}; kreplay --list-sections lists them", spec,
                        close.empty() ? "" : fmt::format(" (did you mean {}?)", close[0])));
      }
      wanted.insert(spec);
    }
  }
  std::vector<const Section*> out;
  for (const auto& s : sections_) {
    if (wanted.count(s.name) != 0) out.push_back(&s);
  }
  return out;
}

std::vector<std::string> counters_of(const std::vector<const Section*>& sections) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const Section* s : sections) {
    for (const auto& c : s->counters()) {
      if (seen.insert(c).second) out.push_back(c);
    }
  }
  return out;
}

std::string default_sections_folder() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return (exe.parent_path().parent_path() / "share" / "kreplay" / "sections").string();
}

}  // namespace kreplay::report
