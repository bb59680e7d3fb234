"""A results database as DataFrames (pandas), or as plain rows without pandas."""

import json
import os
import sqlite3

from . import report as _report

__all__ = ["Results", "load"]


def _pandas():
    try:
        import pandas
    except ImportError as e:  # pragma: no cover - exercised by the no-pandas test
        raise ImportError("this needs pandas: pip install 'kreplay[pandas]' (or pip install "
                          "pandas); report() and rows() work without it") from e
    return pandas


class Results:
    """One kreplay results database (<host>/<pid>_results.db), opened read-only.

    Tables (share/kreplay/schema.sql): launches() is `dispatches` with the kernel name and the
    launch's duration_ns (mean pass duration, as the dispatch_counters view), counters() the long
    table (wide=True: one column per counter, the lowest replay_pass's value), passes(),
    replay_phases(), kernels(), devices(), run() (JSON columns decoded) and metadata().
    """

    def __init__(self, path):
        if not os.path.isfile(path):
            raise FileNotFoundError("%s: no such results database" % path)
        self.path = path
        self._con = _report._connect(path)

    def close(self):
        self._con.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- plain rows ---------------------------------------------------------------------------

    def rows(self, sql, params=()):
        """Rows of any query, as dicts."""
        return [dict(r) for r in self._con.execute(sql, params)]

    def metadata(self):
        return {r["key"]: r["value"] for r in self.rows("SELECT key, value FROM metadata")}

    # -- DataFrames ---------------------------------------------------------------------------

    def sql(self, sql, params=()):
        """Any query as a DataFrame."""
        return _pandas().read_sql_query(sql, self._con, params=params)

    def launches(self):
        df = self.sql(_report.launch_sql(self._con))
        return df

    def passes(self):
        return self.sql("SELECT p.*, p.end_ns - p.start_ns AS duration_ns FROM passes p "
                        "ORDER BY app_pass, dispatch_id, replay_pass")

    def counters(self, wide=False):
        if wide:
            return self.counters_wide()
        return self.sql(
            "SELECT c.app_pass, c.dispatch_id, c.replay_pass, c.agent_id, c.kernel_id, "
            "COALESCE(NULLIF(k.demangled_name, ''), NULLIF(k.mangled_name, ''), "
            "'kernel ' || c.kernel_id) AS kernel_name, c.name, c.value "
            "FROM counters c LEFT JOIN kernels k ON k.app_pass = c.app_pass AND "
            "k.kernel_id = c.kernel_id ORDER BY c.app_pass, c.dispatch_id, c.name, c.replay_pass")

    def counters_wide(self):
        """One row per launch, one column per counter: the lowest replay_pass's value."""
        pd = _pandas()
        long = self.sql("SELECT app_pass, dispatch_id, name, value FROM counters "
                        "ORDER BY app_pass, dispatch_id, name, replay_pass")
        first = long.drop_duplicates(["app_pass", "dispatch_id", "name"], keep="first")
        wide = first.pivot(index=["app_pass", "dispatch_id"], columns="name", values="value")
        wide.columns.name = None
        launches = self.launches()[["app_pass", "dispatch_id", "kernel_name", "outcome",
                                    "duration_ns"]]
        return launches.merge(wide.reset_index(), on=["app_pass", "dispatch_id"], how="left")

    def replay_phases(self):
        return self.sql("SELECT *, end_ns - start_ns AS duration_ns FROM replay_phases ORDER BY id")

    def kernels(self):
        """The kernels table with each kernel's launches and total time."""
        return self.sql(
            "WITH l AS (" + _report.launch_sql(self._con) + ") "
            "SELECT k.app_pass, k.kernel_id, k.agent_id, k.code_object_id, k.mangled_name, "
            "k.demangled_name, COUNT(l.dispatch_id) AS launches, SUM(l.duration_ns) AS total_ns "
            "FROM kernels k LEFT JOIN l ON l.app_pass = k.app_pass AND l.kernel_id = k.kernel_id "
            "GROUP BY k.app_pass, k.kernel_id ORDER BY k.app_pass, k.kernel_id")

    def devices(self):
        return self.sql("SELECT * FROM devices ORDER BY app_pass, agent_id")

    def run(self):
        df = self.sql("SELECT * FROM run ORDER BY app_pass")
        for column in ("command", "counter_names", "environment", "options",
                       "declined_by_reason"):
            if column in df:
                df[column] = df[column].map(lambda t: json.loads(t) if isinstance(t, str) else t)
        return df

    # -- the report ---------------------------------------------------------------------------

    def report(self, baseline=None, sections=None, kernel="", launch=None, section_folders=None):
        """What `kreplay report --format json` prints, as a dict (no pandas needed)."""
        return _report.build_report(self.path, baseline=baseline, sections=sections,
                                    kernel=kernel, launch=launch,
                                    section_folders=section_folders)

    def report_frame(self, **kw):
        """The report's values, one row per kernel (or launch), section and value."""
        rows = []
        for s in self.report(**kw)["subjects"]:
            for sec in s["sections"]:
                for v in sec["values"]:
                    rows.append(dict(kernel=s["kernel"], dispatch_id=s["dispatch_id"],
                                     section=sec["name"], **v))
        return _pandas().DataFrame(rows)

    def rules(self, **kw):
        """The rules that fired: (kernel, dispatch_id, section, name, severity, advice) dicts."""
        out = []
        for s in self.report(**kw)["subjects"]:
            for sec in s["sections"]:
                for r in sec["rules"]:
                    out.append(dict(kernel=s["kernel"], dispatch_id=s["dispatch_id"],
                                    section=sec["name"], **r))
        return out


def load(path):
    """Open a results database: kreplay.load("host/1234_results.db")."""
    return Results(path)
