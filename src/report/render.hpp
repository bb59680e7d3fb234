// `kreplay report` output formats: text (for people), CSV (one row per value or fired rule),
// JSON (the report's structure; python/kreplay/report.py returns the same) and HTML (one
// self-contained file with charts, html.cpp).
#pragma once

#include <string>

#include "report/database.hpp"
#include "report/model.hpp"

namespace kreplay::report {

std::string render_text(const Report& report, const Database& db);

/// Columns: Kernel, Dispatch_Id, Launches, Section, Kind (metric, field, derived, rule), Name,
/// Label, Unit, Value, Baseline, Change_Pct, Severity, Advice. Values at full precision.
std::string render_csv(const Report& report);

/// {"format": "kreplay report", "schema_version": 1, "database", "baseline", "runs", "notes",
///  "sections": [names shown], "subjects": [{"kernel", "dispatch_id", "launches", "total_ns",
///  "time_share_pct", "has_baseline", "sections": [{"name", "title", "values": [{"name",
///  "label", "unit", "kind", "value", "baseline", "change_pct"}], "rules": [{"name", "severity",
///  "advice"}]}]}]}. Missing values are null.
std::string render_json(const Report& report, const Database& db);

/// One HTML file that needs nothing else to open: kernel time shares, a bar chart per kernel for
/// each section with a bars chart, a roofline where the run has its metrics, the replay timeline
/// of the first launches, source hot spots when the database has per-instruction data, and the
/// section tables. Inline SVG and a little inline JavaScript; no network.
Result<std::string> render_html(const Report& report, const Database& db);

}  // namespace kreplay::report
