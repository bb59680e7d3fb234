#include "report/listing.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace kreplay::report {
namespace {

std::vector<const Section*> collected(const Catalog& c, const std::vector<std::string>& names) {
  std::vector<const Section*> out;
  for (const auto& n : names) {
    const Section* s = c.section(n);
    if (s && s->collectable()) out.push_back(s);
  }
  return out;
}

std::string cost(const std::vector<std::string>& counters, const std::string& chip,
                 const PassCounter& passes) {
  std::string out = fmt::format("{} counter{}", counters.size(), counters.size() == 1 ? "" : "s");
  if (!chip.empty() && passes) {
    if (counters.empty()) return out + fmt::format(", no pass on {}", chip);
    if (auto n = passes(counters)) out += fmt::format(", {} pass{} on {}", *n, *n == 1 ? "" : "es", chip);
  }
  return out;
}

}  // namespace

std::string list_sets(const Catalog& c, const std::string& chip, const PassCounter& passes) {
  std::string out = "# sets of sections: kreplay --set NAME (without counters named: basic)\n";
  size_t width = 4;
  for (const auto& s : c.sets()) width = std::max(width, s.name.size());
  for (const auto& s : c.sets()) {
    auto sections = collected(c, s.sections);
    out += fmt::format("{:<{}}  {} ({})\n", s.name, width, s.description,
                       cost(counters_of(sections), chip, passes));
    std::string names;
    for (const auto& n : s.sections) {
      const Section* sec = c.section(n);
      names += fmt::format("{}{}{}", names.empty() ? "" : ", ", n,
                           sec && !sec->collectable() ? " (needs " + sec->requires_data + ")" : "");
    }
    out += fmt::format("{:<{}}  sections: {}\n", "", width, names.empty() ? "none" : names);
  }
  return out;
}

std::string list_sections(const Catalog& c, const std::string& chip, const PassCounter& passes) {
  std::string out = "# sections: kreplay --section NAME (or regex:EXPR); kreplay report shows them\n";
  for (const auto& s : c.sections()) {
    std::vector<std::string> in_sets;
    for (const auto& set : c.sets()) {
      if (std::find(set.sections.begin(), set.sections.end(), s.name) != set.sections.end())
        in_sets.push_back(set.name);
    }
    out += fmt::format("\n{}: {} ({}; sets: {})\n", s.name, s.title,
                       cost(s.counters(), chip, passes),
                       in_sets.empty() ? "none" : fmt::format("{}", fmt::join(in_sets, ", ")));
    if (!s.description.empty()) out += fmt::format("  {}\n", s.description);
    if (!s.requires_data.empty()) {
      out += fmt::format("  needs {} data, which this kreplay does not collect yet: skipped\n",
                         s.requires_data);
    }
    for (const auto& m : s.metrics) {
      out += fmt::format("  {:<32} {}{}\n", m.label, m.name, m.unit.empty() ? "" : " [" + m.unit + "]");
    }
    for (const auto& d : s.derived) {
      out += fmt::format("  {:<32} = {}{}\n", d.label, d.expr.text(),
                         d.unit.empty() ? "" : " [" + d.unit + "]");
    }
    for (const auto& r : s.rules) {
      out += fmt::format("  rule {} ({}): when {}\n", r.name, r.severity, r.when.text());
    }
  }
  return out;
}

}  // namespace kreplay::report
