#include "report/model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <unordered_map>

#include "common/util.hpp"
#include "config/filter.hpp"

namespace kreplay::report {
namespace {

// One launch of a kernel: a dispatch id, with its rows of every app_pass.
struct Logical {
  const DbLaunch* first = nullptr;
  std::unordered_map<std::string, double> counters;
  std::map<std::string, double> fields;
};

std::map<std::string, double> launch_fields(const Database& db, const DbLaunch& l) {
  std::map<std::string, double> f;
  auto d = [](uint64_t v) { return static_cast<double>(v); };
  const uint64_t grid = uint64_t{l.grid[0]} * l.grid[1] * l.grid[2];
  const uint64_t block = uint64_t{l.block[0]} * l.block[1] * l.block[2];
  f["launch.grid_x"] = l.grid[0];
  f["launch.grid_y"] = l.grid[1];
  f["launch.grid_z"] = l.grid[2];
  f["launch.grid_size"] = d(grid);
  f["launch.block_x"] = l.block[0];
  f["launch.block_y"] = l.block[1];
  f["launch.block_z"] = l.block[2];
  f["launch.block_size"] = d(block);
  f["launch.threads"] = d(grid * block);
  f["launch.cluster_size"] = d(uint64_t{l.cluster[0]} * l.cluster[1] * l.cluster[2]);
  f["launch.registers_per_thread"] = l.registers;
  f["launch.static_shared_bytes"] = l.static_shared;
  f["launch.dynamic_shared_bytes"] = l.dynamic_shared;
  f["launch.shared_bytes"] = d(uint64_t{l.static_shared} + l.dynamic_shared);
  f["launch.duration_ns"] = l.duration_ns;
  f["launch.passes"] = d(l.passes_executed);
  f["launch.bytes_snapshotted"] = d(l.bytes_snapshotted);
  f["launch.bytes_changed"] = d(l.bytes_changed);
  f["launch.bytes_restored"] = d(l.bytes_restored);
  f["launch.snapshot_ns"] = d(l.snapshot_ns);
  f["launch.restore_ns"] = d(l.restore_ns);
  if (const DbDevice* dev = db.device(l.app_pass, l.agent_id)) {
    f["device.sm_count"] = dev->sm_count;
    f["device.cc_major"] = dev->cc_major;
    f["device.cc_minor"] = dev->cc_minor;
    f["device.memory_bytes"] = d(dev->memory_bytes);
  }
  return f;
}

// Logical launches in order of first appearance (app_pass, then dispatch id).
std::vector<Logical> logical_launches(const Database& db) {
  std::vector<Logical> out;
  std::map<std::pair<std::string, uint64_t>, size_t> index;
  for (const DbLaunch& l : db.launches) {
    auto [it, inserted] = index.emplace(std::make_pair(l.kernel_name, l.dispatch_id), out.size());
    if (inserted) {
      Logical g;
      g.first = &l;
      g.fields = launch_fields(db, l);
      out.push_back(std::move(g));
    }
    Logical& g = out[it->second];
    for (const auto& [idx, value] : l.counters) g.counters.emplace(db.counter_names[idx], value);
  }
  return out;
}

// The means a subject's sections are computed from.
struct Values {
  std::unordered_map<std::string, double> counters, fields;
};

Values mean_of(const std::vector<const Logical*>& launches) {
  std::map<std::string, std::pair<double, uint64_t>> c, f;
  for (const Logical* l : launches) {
    for (const auto& [k, v] : l->counters) {
      auto& acc = c[k];
      acc.first += v;
      ++acc.second;
    }
    for (const auto& [k, v] : l->fields) {
      auto& acc = f[k];
      acc.first += v;
      ++acc.second;
    }
  }
  Values out;
  for (const auto& [k, acc] : c) out.counters[k] = acc.first / static_cast<double>(acc.second);
  for (const auto& [k, acc] : f) out.fields[k] = acc.first / static_cast<double>(acc.second);
  return out;
}

SectionResult compute(const Section& s, const Values& v) {
  SectionResult r;
  r.section = &s;
  std::unordered_map<std::string, std::optional<double>> scope;
  auto lookup = [&](std::string_view name) -> std::optional<double> {
    auto it = scope.find(std::string(name));
    if (it != scope.end()) return it->second;
    if (is_field_name(name)) {
      auto f = v.fields.find(std::string(name));
      if (f != v.fields.end()) return f->second;
    }
    return std::nullopt;
  };
  for (const auto& m : s.metrics) {
    std::optional<double> value;
    const auto& from = m.field ? v.fields : v.counters;
    auto it = from.find(m.name);
    if (it != from.end() && std::isfinite(it->second)) value = it->second;
    scope[m.name] = value;
    if (!m.alias.empty()) scope[m.alias] = value;
    r.values.push_back({m.name, m.label, m.unit, m.field ? "field" : "metric", value, std::nullopt});
  }
  for (const auto& d : s.derived) {
    auto value = d.expr.eval(lookup);
    scope[d.name] = value;
    r.values.push_back({d.name, d.label, d.unit, "derived", value, std::nullopt});
  }
  for (const auto& rule : s.rules) {
    auto when = rule.when.eval(lookup);
    if (when && *when != 0) {
      r.rules.push_back({rule.name, rule.severity, expand_placeholders(rule.advice, lookup)});
    }
  }
  return r;
}

struct Group {
  std::string kernel;
  std::optional<uint64_t> dispatch_id;
  size_t ordinal = 0;  // per launch: which launch of its kernel (0-based)
  std::vector<const Logical*> launches;
  double total_ns = 0;
};

bool kernel_matches(const std::string& filter, const std::optional<std::regex>& re,
                    const DbLaunch& l) {
  if (filter.empty()) return true;
  if (re) return std::regex_search(l.kernel_name, *re) || std::regex_search(l.mangled_name, *re);
  for (const auto& form : config::kernel_name_forms(l.kernel_name, l.mangled_name)) {
    if (form == filter) return true;
  }
  return false;
}

// Per kernel (sorted by time) or per launch (in launch order).
Result<std::vector<Group>> groups_of(const std::vector<Logical>& launches,
                                     const ReportOptions& o, bool for_baseline) {
  std::optional<std::regex> re;
  if (o.kernel.rfind("regex:", 0) == 0) {
    try {
      re = std::regex(o.kernel.substr(6));
    } catch (const std::regex_error& e) {
      return InvalidArgument(fmt::format("-k {}: bad regular expression ({})", o.kernel, e.what()));
    }
  }
  std::vector<Group> out;
  const bool per_launch = o.launch || o.every_launch;
  std::map<std::string, size_t> by_kernel;
  std::map<std::string, size_t> ordinals;
  for (const Logical& l : launches) {
    if (!kernel_matches(o.kernel, re, *l.first)) continue;
    const std::string& name = l.first->kernel_name;
    const double duration = l.fields.at("launch.duration_ns");
    if (per_launch) {
      size_t ordinal = ordinals[name]++;
      if (o.launch && !for_baseline && l.first->dispatch_id != *o.launch) continue;
      Group g;
      g.kernel = name;
      g.dispatch_id = l.first->dispatch_id;
      g.ordinal = ordinal;
      g.launches = {&l};
      g.total_ns = duration;
      out.push_back(std::move(g));
      continue;
    }
    auto [it, inserted] = by_kernel.emplace(name, out.size());
    if (inserted) {
      Group g;
      g.kernel = name;
      out.push_back(std::move(g));
    }
    out[it->second].launches.push_back(&l);
    out[it->second].total_ns += duration;
  }
  if (!per_launch) {
    std::stable_sort(out.begin(), out.end(), [](const Group& a, const Group& b) {
      if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
      return a.kernel < b.kernel;
    });
  }
  return out;
}

}  // namespace

std::optional<double> ValueRow::change_pct() const {
  if (!value || !baseline || *baseline == 0) return std::nullopt;
  return (*value - *baseline) / std::fabs(*baseline) * 100.0;
}

std::optional<double> SectionResult::get(std::string_view name) const {
  for (const auto& v : values) {
    if (v.name == name) return v.value;
  }
  if (section) {
    if (const SectionMetric* m = section->metric(name)) return get(m->name);
  }
  return std::nullopt;
}

Result<Report> build_report(const Database& db, const Database* baseline, const Catalog& catalog,
                            const ReportOptions& o) {
  Report report;
  report.database = db.path;
  if (baseline) report.baseline = baseline->path;

  // Which sections: those the run collected, or those --section names.
  const std::set<std::string> collected(db.counter_names.begin(), db.counter_names.end());
  auto data_there = [&](const Section& s) {
    return s.requires_data.empty() || (s.requires_data == "source_counters" && db.has_source_counters);
  };
  if (!o.sections.empty()) {
    ASSIGN_OR_RETURN(auto chosen, catalog.resolve("", o.sections));
    for (const Section* s : chosen) {
      if (!data_there(*s)) {
        report.notes.push_back(fmt::format("section {} needs {} data, which this database does "
                                           "not have; it is skipped",
                                           s->name, s->requires_data));
        continue;
      }
      report.shown.push_back(s);
    }
  } else {
    std::vector<const Section*> partial;
    for (const Section& s : catalog.sections()) {
      if (!data_there(s)) continue;
      size_t missing = 0;
      for (const auto& c : s.counters()) missing += collected.count(c) == 0 ? 1 : 0;
      if (missing == 0) {
        report.shown.push_back(&s);
      } else if (missing < s.counters().size()) {
        partial.push_back(&s);
      }
    }
    // A section partly there is a note only when the run collected one of its counters that no
    // section shown has (sections share counters such as gpu__time_duration.sum).
    std::set<std::string> shown_counters;
    for (const Section* s : report.shown) {
      for (const auto& c : s->counters()) shown_counters.insert(c);
    }
    for (const Section* s : partial) {
      bool own = false;
      std::string first_missing;
      size_t missing = 0;
      for (const auto& c : s->counters()) {
        if (collected.count(c) == 0) {
          if (first_missing.empty()) first_missing = c;
          ++missing;
        } else if (shown_counters.count(c) == 0) {
          own = true;
        }
      }
      if (!own) continue;
      report.notes.push_back(fmt::format(
          "section {} is incomplete: {} of its {} counters are not in this database (e.g. {}); "
          "--section {} shows it anyway",
          s->name, missing, s->counters().size(), first_missing, s->name));
    }
  }

  const std::vector<Logical> launches = logical_launches(db);
  double all_ns = 0;
  for (const Logical& l : launches) all_ns += l.fields.at("launch.duration_ns");
  ASSIGN_OR_RETURN(std::vector<Group> groups, groups_of(launches, o, false));
  if (groups.empty()) {
    std::set<std::string> names;
    for (const Logical& l : launches) names.insert(l.first->kernel_name);
    std::vector<std::string> list(names.begin(), names.end());
    if (list.size() > 5) list.resize(5);
    if (launches.empty()) return InvalidArgument(fmt::format("{} holds no launches", db.path));
    if (o.launch) {
      return InvalidArgument(
          fmt::format("no launch with dispatch id {}{} in {}; dispatch ids run from {} "
                      "to {}",
                      *o.launch, o.kernel.empty() ? "" : " of kernel " + o.kernel, db.path,
                      launches.front().first->dispatch_id, launches.back().first->dispatch_id));
    }
    return InvalidArgument(fmt::format("-k {} selects no kernel of {}; its kernels include {}",
                                       o.kernel, db.path, join_or(list)));
  }

  std::vector<Logical> base_launches;
  std::vector<Group> base_groups;
  if (baseline) {
    base_launches = logical_launches(*baseline);
    ASSIGN_OR_RETURN(base_groups, groups_of(base_launches, o, true));
  }
  for (const Group& g : groups) {
    Subject subject;
    subject.kernel = g.kernel;
    subject.dispatch_id = g.dispatch_id;
    subject.launches = g.launches.size();
    subject.total_ns = g.total_ns;
    subject.time_share_pct = all_ns > 0 ? g.total_ns / all_ns * 100.0 : 0;
    const Values values = mean_of(g.launches);
    const Group* base = nullptr;
    for (const Group& b : base_groups) {
      if (b.kernel == g.kernel && (!g.dispatch_id || b.ordinal == g.ordinal)) {
        base = &b;
        break;
      }
    }
    Values base_values;
    if (base) base_values = mean_of(base->launches);
    subject.has_baseline = base != nullptr;
    for (const Section* s : report.shown) {
      SectionResult r = compute(*s, values);
      if (base) {
        SectionResult b = compute(*s, base_values);
        for (size_t i = 0; i < r.values.size(); ++i) r.values[i].baseline = b.values[i].value;
      }
      subject.sections.push_back(std::move(r));
    }
    report.subjects.push_back(std::move(subject));
  }
  if (baseline) {
    size_t unmatched = 0;
    for (const auto& s : report.subjects) unmatched += s.has_baseline ? 0 : 1;
    if (unmatched > 0) {
      report.notes.push_back(fmt::format("{} of {} {} have no counterpart in the baseline {}",
                                         unmatched, report.subjects.size(),
                                         o.launch || o.every_launch ? "launches" : "kernels",
                                         baseline->path));
    }
  }
  return report;
}

}  // namespace kreplay::report
