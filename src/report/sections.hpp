// Sections and sets as data: share/kreplay/sections/*.yaml (one section per file) and
// sets.yaml (named lists of sections), as Nsight Compute's --section / --set.
//
// A section file:
//
//   name: SpeedOfLight                 # what --section takes
//   title: GPU Speed Of Light Throughput
//   description: one line
//   order: 30                          # where reports put it (lower first)
//   requires: source_counters          # optional: a kind of data kreplay must collect beyond
//                                      # counters; the section is skipped while it is absent
//   metrics:                           # collected values, in display order
//     - {name: gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed, as: dram,
//        label: DRAM Throughput, unit: "%"}
//     - {name: launch.block_size, label: Block Size, unit: thread}   # a record field
//   derived:                           # computed from metrics and earlier derived values
//     - {name: memory, label: Memory Throughput, unit: "%", expr: "max(l1, l2, dram)"}
//   chart: {kind: bars, values: [memory, dram]}       # or roofline (x, y, peak_compute,
//                                                     # peak_bandwidth) or hotspots
//   rules:                             # advice when a condition holds
//     - {name: MemoryBound, severity: warning, when: "memory >= 60", advice: "... {memory}% ..."}
//
// Names under launch. and device. are record fields (kFieldNames), taken from the dispatches and
// devices tables; every other metric name is a counter the device collects. "as" gives a metric a
// short name for expressions; expressions (expr.hpp) may use a metric's name or alias, derived
// names and fields. Everything is checked at load: unknown keys, duplicate names, expressions that
// do not parse or name something the section does not define.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.hpp"
#include "report/expr.hpp"

namespace kreplay::report {

/// Record fields a section may name (values per launch, from the dispatch and device records).
const std::vector<std::string>& field_names();
/// True for launch.* / device.* names (in field_names() or not).
bool is_field_name(std::string_view name);

struct SectionMetric {
  std::string name;   ///< counter name, or a field name
  std::string alias;  ///< "as", or ""
  std::string label;
  std::string unit;
  bool field = false;  ///< a launch./device. record field, not a counter
};

struct SectionDerived {
  std::string name, label, unit;
  Expr expr;
};

struct SectionRule {
  std::string name;
  std::string severity;  ///< "info" or "warning"
  Expr when;
  std::string advice;  ///< with {NAME} placeholders
};

struct SectionChart {
  std::string kind;  ///< "", "bars", "roofline" or "hotspots"
  std::vector<std::string> values;  ///< bars: names (percentages)
  std::string x, y, peak_compute, peak_bandwidth;  ///< roofline: names
};

struct Section {
  std::string name, title, description;
  int order = 100;
  std::string requires_data;  ///< "" or "source_counters"
  std::vector<SectionMetric> metrics;
  std::vector<SectionDerived> derived;
  std::vector<SectionRule> rules;
  SectionChart chart;
  std::string file;  ///< where it was read from

  /// The counters it collects (metrics that are not fields), in order.
  std::vector<std::string> counters() const;
  /// False while it needs data kreplay does not collect (requires_data not available).
  bool collectable() const;
  /// The metric a name or alias refers to; nullptr for none.
  const SectionMetric* metric(std::string_view name_or_alias) const;
};

struct MetricSet {
  std::string name, description;
  std::vector<std::string> sections;
  std::string file;
};

/// Kinds of data beyond counters that this kreplay collects (for Section::requires_data).
/// Empty today: the per-instruction service (source_counters) does not exist yet.
const std::vector<std::string>& available_data_kinds();

class Catalog {
 public:
  /// Read every *.yaml of @p folders in order; a later folder's section or set replaces an
  /// earlier one of the same name. A folder that does not exist is an error naming it.
  static Result<Catalog> load(const std::vector<std::string>& folders);
  /// Parse one section file's text (tests); @p file names it in messages.
  static Result<Section> parse_section(std::string_view text, const std::string& file);

  const std::vector<Section>& sections() const { return sections_; }  ///< by order, then name
  const std::vector<MetricSet>& sets() const { return sets_; }
  const Section* section(std::string_view name) const;
  const MetricSet* set(std::string_view name) const;

  /// Resolve --set NAME (may be empty) and --section SPEC... (a name, or regex:EXPR matching
  /// names) into sections, in catalog order without duplicates. Errors name the unknown set or
  /// section with the closest name, or a regex that matches nothing.
  Result<std::vector<const Section*>> resolve(const std::string& set,
                                              const std::vector<std::string>& specs) const;

 private:
  std::vector<Section> sections_;
  std::vector<MetricSet> sets_;
};

/// The counters of @p sections, in order, without duplicates.
std::vector<std::string> counters_of(const std::vector<const Section*>& sections);

/// The default folder: <prefix>/share/kreplay/sections next to the running executable's bin/.
std::string default_sections_folder();

}  // namespace kreplay::report
