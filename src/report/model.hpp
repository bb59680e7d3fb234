// What `kreplay report` computes from a results database: per kernel (or per launch) the
// sections the run collected, their values with units, the derived values, and the rules that
// fired, optionally beside a baseline database. python/kreplay/report.py computes the same
// numbers from the same rules (tests/report/test_python.py compares them):
//
//  - A logical launch is a dispatch id of one kernel; under application replay its rows from
//    every app_pass are one launch (counters of the lowest app_pass first, fields from it).
//  - Per kernel (grouped by kernel name): each counter is the mean over the launches that have it,
//    each field (launch.*, device.*) the mean over all launches, summed in launch order; derived
//    values and rules are computed from those means. total_ns sums launch.duration_ns.
//  - Kernels are ordered by total_ns (largest first), then by name.
//  - A section is shown when its data is there (requires) and the database has every counter it
//    names, or when --section names it. A section with some of its counters missing is a note,
//    when the database has one of its counters that no section shown has.
//  - A rule fires when its condition is available and not 0.
//  - change_pct = (value - baseline) / |baseline| * 100, when both exist and baseline != 0. The
//    baseline subject is the kernel of the same name (per launch: the same name and ordinal).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report/database.hpp"
#include "report/sections.hpp"

namespace kreplay::report {

struct ReportOptions {
  std::vector<std::string> sections;  ///< --section: names or regex:EXPR; empty = as collected
  std::string kernel;                 ///< -k: a name (demangled or mangled) or regex:EXPR
  std::optional<uint64_t> launch;     ///< --launch N: one launch (its dispatch id)
  bool every_launch = false;          ///< --launch all: every launch
};

struct ValueRow {
  std::string name, label, unit;
  std::string kind;  ///< "metric", "field" or "derived"
  std::optional<double> value, baseline;
  std::optional<double> change_pct() const;
};

struct RuleRow {
  std::string name, severity, advice;
};

struct SectionResult {
  const Section* section = nullptr;
  std::vector<ValueRow> values;  ///< metrics and fields in file order, then derived values
  std::vector<RuleRow> rules;    ///< the rules that fired
  /// The value of a metric alias/name, derived name or field, as computed for this subject.
  std::optional<double> get(std::string_view name) const;
};

struct Subject {
  std::string kernel;
  std::optional<uint64_t> dispatch_id;  ///< per launch
  uint64_t launches = 0;
  double total_ns = 0;
  double time_share_pct = 0;  ///< of the whole database's kernel time
  bool has_baseline = false;
  std::vector<SectionResult> sections;
};

struct Report {
  std::string database, baseline;
  std::vector<std::string> notes;
  std::vector<Subject> subjects;
  std::vector<const Section*> shown;  ///< the sections shown, in catalog order
};

/// Compute the report. @p baseline may be nullptr. Errors: a --section that names nothing, -k or
/// --launch that select no launch (the message lists what there is).
Result<Report> build_report(const Database& db, const Database* baseline, const Catalog& catalog,
                            const ReportOptions& options);

}  // namespace kreplay::report
