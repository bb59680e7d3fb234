"""`kreplay report` in Python: the same sections, derived values and rules, the same numbers.

The rules are those of src/report/model.hpp (read it for the details); this module follows
src/report/model.cpp step by step, down to the order in which values are summed, so that
`Results.report()` returns what `kreplay report --format json` prints (tests/report/test_python.py
compares the two on generated databases).
"""

import math
import re
import sqlite3

from .expr import expand_placeholders
from .sections import Catalog, default_section_folders, is_field_name

__all__ = ["build_report", "read_launches"]

_LAUNCH_SQL = (
    "WITH pass_time AS (SELECT app_pass, dispatch_id, AVG(end_ns - start_ns) AS avg_ns "
    "FROM passes GROUP BY app_pass, dispatch_id) "
    "SELECT d.app_pass, d.dispatch_id, d.agent_id, d.stream_id, d.kernel_id, "
    "d.grid_x, d.grid_y, d.grid_z, d.block_x, d.block_y, d.block_z, "
    "d.cluster_x, d.cluster_y, d.cluster_z, d.static_shared_bytes, d.dynamic_shared_bytes, "
    "d.registers, d.outcome, d.reason, d.passes_requested, d.passes_executed, "
    "d.bytes_snapshotted, d.bytes_restored, d.snapshot_ns, d.restore_ns, d.start_ns, d.end_ns, "
    "COALESCE(t.avg_ns, CAST(d.end_ns - d.start_ns AS REAL)) AS duration_ns, "
    "COALESCE(NULLIF(k.demangled_name, ''), NULLIF(k.mangled_name, ''), "
    "'kernel ' || d.kernel_id) AS kernel_name, COALESCE(k.mangled_name, '') AS mangled_name, "
    "%s "
    "FROM dispatches d "
    "LEFT JOIN kernels k ON k.app_pass = d.app_pass AND k.kernel_id = d.kernel_id "
    "LEFT JOIN pass_time t ON t.app_pass = d.app_pass AND t.dispatch_id = d.dispatch_id "
    "ORDER BY d.app_pass, d.dispatch_id")

# bytes_changed and snapshot_mode (write-bounded snapshots), or 0 and '' from databases older than
# them (the columns were added without a version change).
_LAUNCH_SNAPSHOT = "d.bytes_changed AS bytes_changed, d.snapshot_mode AS snapshot_mode"
_LAUNCH_SNAPSHOT_OLD = "0 AS bytes_changed, '' AS snapshot_mode"


def launch_sql(con):
    """The launch rows' query (report/database.cpp's) for the database open on `con`."""
    has_mode = any(r[1] == "snapshot_mode" for r in con.execute("PRAGMA table_info(dispatches)"))
    return _LAUNCH_SQL % (_LAUNCH_SNAPSHOT if has_mode else _LAUNCH_SNAPSHOT_OLD)


# The results schema versions this package reads: later versions only add columns (2: graph ids
# on dispatches, a counter status per pass) that the report does not need.
SCHEMA_VERSIONS = (1, 2, 3)


# In a database merged by rank (kreplay merge) ids repeat between ranks; the report reads it with
# every id made rank * RANK_ID_STRIDE + id, as `kreplay report` does (report/database.cpp).
RANK_ID_STRIDE = 1000000000
_RANK_TABLES = ("devices", "kernels", "dispatches", "passes", "counters", "replay_phases",
                "source_counters")
_RANK_IDS = ("dispatch_id", "kernel_id", "agent_id", "stream_id")


def _by_rank(con):
    return any(r[1] == "rank" for r in con.execute("PRAGMA table_info(dispatches)"))


def _connect(path, report=False):
    con = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    con.row_factory = sqlite3.Row
    version = con.execute("SELECT value FROM metadata WHERE key = 'schema_version'").fetchone()
    if version is None or int(version[0]) not in SCHEMA_VERSIONS:
        raise ValueError("%s has results schema version %s, this package reads versions %s"
                         % (path, version[0] if version else None, SCHEMA_VERSIONS))
    if report and _by_rank(con):
        for table in _RANK_TABLES:
            cols = [r[1] for r in con.execute("PRAGMA main.table_info(%s)" % table)]
            if not cols:
                continue
            select = ", ".join('rank * %d + "%s" AS "%s"' % (RANK_ID_STRIDE, c, c)
                               if c in _RANK_IDS else '"%s"' % c for c in cols)
            con.execute("CREATE TEMP VIEW %s AS SELECT %s FROM main.%s" % (table, select, table))
    return con


def read_launches(con):
    """The launch rows (as model.cpp reads them), each with 'counters': the value of the lowest
    replay_pass per counter name (NULL values left out) and 'device'."""
    launches = [dict(r) for r in con.execute(launch_sql(con))]
    index = {(l["app_pass"], l["dispatch_id"]): l for l in launches}
    for l in launches:
        l["counters"] = {}
    devices = [dict(r) for r in con.execute(
        "SELECT app_pass, agent_id, multiprocessor_count, cc_major, cc_minor, memory_bytes "
        "FROM devices ORDER BY app_pass, agent_id")]
    for l in launches:
        l["device"] = next((d for d in devices if d["app_pass"] == l["app_pass"]
                            and d["agent_id"] == l["agent_id"]),
                           next((d for d in devices if d["agent_id"] == l["agent_id"]), None))
    last_key, last_name, launch = None, None, None
    for app_pass, dispatch_id, name, value in con.execute(
            "SELECT app_pass, dispatch_id, name, value FROM counters "
            "ORDER BY app_pass, dispatch_id, name, replay_pass"):
        key = (app_pass, dispatch_id)
        if key != last_key:
            launch = index.get(key)
            last_key, last_name = key, None
        elif name == last_name:
            continue
        last_name = name
        if launch is not None and value is not None:
            launch["counters"][name] = float(value)
    return launches


def _fields(l):
    grid = l["grid_x"] * l["grid_y"] * l["grid_z"]
    block = l["block_x"] * l["block_y"] * l["block_z"]
    f = {
        "launch.grid_x": float(l["grid_x"]), "launch.grid_y": float(l["grid_y"]),
        "launch.grid_z": float(l["grid_z"]), "launch.grid_size": float(grid),
        "launch.block_x": float(l["block_x"]), "launch.block_y": float(l["block_y"]),
        "launch.block_z": float(l["block_z"]), "launch.block_size": float(block),
        "launch.threads": float(grid * block),
        "launch.cluster_size": float(l["cluster_x"] * l["cluster_y"] * l["cluster_z"]),
        "launch.registers_per_thread": float(l["registers"]),
        "launch.static_shared_bytes": float(l["static_shared_bytes"]),
        "launch.dynamic_shared_bytes": float(l["dynamic_shared_bytes"]),
        "launch.shared_bytes": float(l["static_shared_bytes"] + l["dynamic_shared_bytes"]),
        "launch.duration_ns": float(l["duration_ns"]),
        "launch.passes": float(l["passes_executed"]),
        "launch.bytes_snapshotted": float(l["bytes_snapshotted"]),
        "launch.bytes_changed": float(l["bytes_changed"]),
        "launch.bytes_restored": float(l["bytes_restored"]),
        "launch.snapshot_ns": float(l["snapshot_ns"]),
        "launch.restore_ns": float(l["restore_ns"]),
    }
    d = l["device"]
    if d is not None:
        f["device.sm_count"] = float(d["multiprocessor_count"])
        f["device.cc_major"] = float(d["cc_major"])
        f["device.cc_minor"] = float(d["cc_minor"])
        f["device.memory_bytes"] = float(d["memory_bytes"])
    return f


def _logical(launches):
    out, index = [], {}
    for l in launches:
        key = (l["kernel_name"], l["dispatch_id"])
        if key not in index:
            index[key] = len(out)
            out.append({"first": l, "fields": _fields(l), "counters": {}})
        g = out[index[key]]
        for name, value in l["counters"].items():
            g["counters"].setdefault(name, value)
    return out


def _mean(launches):
    c, f = {}, {}
    for l in launches:
        for k, v in l["counters"].items():
            acc = c.setdefault(k, [0.0, 0])
            acc[0] += v
            acc[1] += 1
        for k, v in l["fields"].items():
            acc = f.setdefault(k, [0.0, 0])
            acc[0] += v
            acc[1] += 1
    return ({k: s / n for k, (s, n) in c.items()}, {k: s / n for k, (s, n) in f.items()})


def _compute(section, values):
    counters, fields = values
    scope = {}

    def lookup(name):
        if name in scope:
            return scope[name]
        if is_field_name(name):
            return fields.get(name)
        return None

    rows, rules = [], []
    for m in section.metrics:
        v = (fields if m.field else counters).get(m.name)
        if v is not None and not math.isfinite(v):
            v = None
        scope[m.name] = v
        if m.alias:
            scope[m.alias] = v
        rows.append({"name": m.name, "label": m.label, "unit": m.unit,
                     "kind": "field" if m.field else "metric", "value": v})
    for d in section.derived:
        v = d.expr.eval(lookup)
        scope[d.name] = v
        rows.append({"name": d.name, "label": d.label, "unit": d.unit, "kind": "derived",
                     "value": v})
    for r in section.rules:
        w = r.when.eval(lookup)
        if w is not None and w != 0:
            rules.append({"name": r.name, "severity": r.severity,
                          "advice": expand_placeholders(r.advice, lookup)})
    return rows, rules


def _function_name(demangled):
    name = demangled.strip(" ")
    if name.endswith(")"):
        open_at = _matching_open(name, len(name) - 1, "(", ")")
        if open_at is not None and open_at > 0:
            name = name[:open_at].strip(" ")
    depth, start = 0, 0
    for i, c in enumerate(name):
        if c in "<([{":
            depth += 1
        if c in ">)]}" and depth > 0:
            depth -= 1
        if depth == 0 and c == " ":
            start = i + 1
    fn = name[start:]
    return fn or name


def _matching_open(s, end, open_c, close_c):
    depth = 0
    for i in range(end, -1, -1):
        if s[i] == close_c:
            depth += 1
        if s[i] == open_c:
            depth -= 1
            if depth == 0:
                return i
    return None


def _without_templates(name):
    name = name.strip(" ")
    if not name.endswith(">"):
        return name
    open_at = _matching_open(name, len(name) - 1, "<", ">")
    if open_at is None or open_at == 0:
        return name
    return name[:open_at].strip(" ")


def _without_scope(name):
    depth, start = 0, 0
    for i, c in enumerate(name):
        if c in "<([{":
            depth += 1
        if c in ">)]}" and depth > 0:
            depth -= 1
        if depth == 0 and c == ":" and i + 1 < len(name) and name[i + 1] == ":":
            start = i + 2
    return name[start:]


def _name_forms(demangled, mangled):
    fn = _function_name(demangled)
    bare = _without_templates(fn)
    forms = []
    for form in (mangled, demangled, fn, bare, _without_scope(bare)):
        if form and form not in forms:
            forms.append(form)
    return forms


def _groups(logical, kernel, launch, every_launch, for_baseline):
    regex = re.compile(kernel[6:]) if kernel and kernel.startswith("regex:") else None
    per_launch = launch is not None or every_launch
    out, by_kernel, ordinals = [], {}, {}
    for l in logical:
        first = l["first"]
        if kernel:
            if regex is not None:
                if not (regex.search(first["kernel_name"]) or regex.search(first["mangled_name"])):
                    continue
            elif kernel not in _name_forms(first["kernel_name"], first["mangled_name"]):
                continue
        name = first["kernel_name"]
        duration = l["fields"]["launch.duration_ns"]
        if per_launch:
            ordinal = ordinals.get(name, 0)
            ordinals[name] = ordinal + 1
            if launch is not None and not for_baseline and first["dispatch_id"] != launch:
                continue
            out.append({"kernel": name, "dispatch_id": first["dispatch_id"], "ordinal": ordinal,
                        "launches": [l], "total_ns": duration})
            continue
        if name not in by_kernel:
            by_kernel[name] = len(out)
            out.append({"kernel": name, "dispatch_id": None, "ordinal": 0, "launches": [],
                        "total_ns": 0.0})
        g = out[by_kernel[name]]
        g["launches"].append(l)
        g["total_ns"] += duration
    if not per_launch:
        out.sort(key=lambda g: (-g["total_ns"], g["kernel"]))
    return out


def _change(value, baseline):
    if value is None or baseline is None or baseline == 0:
        return None
    return (value - baseline) / abs(baseline) * 100.0


def build_report(path, baseline=None, sections=None, kernel="", launch=None,
                 section_folders=None):
    """The report of the database at @p path, as `kreplay report --format json` prints it.

    launch: a dispatch id, "all", or None (per kernel). sections: names or "regex:EXPR" (None:
    every section the run collected). section_folders: added after kreplay's own folder.
    """
    folders = default_section_folders() + list(section_folders or [])
    catalog = Catalog(folders)
    every_launch = launch == "all"
    launch_id = None if launch in (None, "all") else int(launch)
    con = _connect(path, report=True)
    try:
        launches = read_launches(con)
        collected = {r[0] for r in con.execute("SELECT DISTINCT name FROM counters")}
        has_source = bool(con.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'source_counters'").fetchone()) and bool(
            con.execute("SELECT 1 FROM source_counters LIMIT 1").fetchone())
        by_rank = _by_rank(con)
        runs = [dict(r) for r in con.execute(
            "SELECT app_pass, replay_mode, kreplay_version, hostname, pid, launches, exit_code%s "
            "FROM run ORDER BY %sapp_pass" % ((", rank", "rank, ") if by_rank else ("", "")))]
    finally:
        con.close()

    def data_there(s):
        return not s.requires or (s.requires == "source_counters" and has_source)

    notes, shown = [], []
    if sections:
        for s in catalog.resolve("", sections):
            if not data_there(s):
                notes.append("section %s needs %s data, which this database does not have; it is "
                             "skipped" % (s.name, s.requires))
                continue
            shown.append(s)
    else:
        partial = []
        for s in catalog.sections:
            if not data_there(s):
                continue
            missing = [c for c in s.counters() if c not in collected]
            if not missing:
                shown.append(s)
            elif len(missing) < len(s.counters()):
                partial.append(s)
        shown_counters = {c for s in shown for c in s.counters()}
        for s in partial:
            missing = [c for c in s.counters() if c not in collected]
            if not any(c in collected and c not in shown_counters for c in s.counters()):
                continue
            notes.append("section %s is incomplete: %d of its %d counters are not in this "
                         "database (e.g. %s); --section %s shows it anyway"
                         % (s.name, len(missing), len(s.counters()), missing[0], s.name))

    logical = _logical(launches)
    all_ns = 0.0
    for l in logical:
        all_ns += l["fields"]["launch.duration_ns"]
    groups = _groups(logical, kernel, launch_id, every_launch, False)
    if not groups:
        raise ValueError("no launch matches (kernel=%r, launch=%r) in %s" % (kernel, launch, path))
    base_groups = []
    if baseline:
        bcon = _connect(baseline, report=True)
        try:
            base_groups = _groups(_logical(read_launches(bcon)), kernel, launch_id, every_launch,
                                  True)
        finally:
            bcon.close()

    subjects = []
    for g in groups:
        values = _mean(g["launches"])
        base = next((b for b in base_groups if b["kernel"] == g["kernel"]
                     and (g["dispatch_id"] is None or b["ordinal"] == g["ordinal"])), None)
        base_values = _mean(base["launches"]) if base else None
        out_sections = []
        for s in shown:
            rows, rules = _compute(s, values)
            brows = _compute(s, base_values)[0] if base else None
            for i, row in enumerate(rows):
                row["baseline"] = brows[i]["value"] if brows else None
                row["change_pct"] = _change(row["value"], row["baseline"])
            out_sections.append({"name": s.name, "title": s.title, "values": rows,
                                 "rules": rules})
        subjects.append({"kernel": g["kernel"], "dispatch_id": g["dispatch_id"],
                         "launches": len(g["launches"]), "total_ns": g["total_ns"],
                         "time_share_pct": g["total_ns"] / all_ns * 100.0 if all_ns > 0 else 0,
                         "has_baseline": base is not None, "sections": out_sections})
    if baseline:
        unmatched = sum(1 for s in subjects if not s["has_baseline"])
        if unmatched:
            notes.append("%d of %d %s have no counterpart in the baseline %s"
                         % (unmatched, len(subjects),
                            "launches" if (launch is not None) else "kernels", baseline))
    return {"format": "kreplay report", "schema_version": 1, "database": path,
            "baseline": baseline, "runs": runs, "notes": notes,
            "sections": [s.name for s in shown], "subjects": subjects}
