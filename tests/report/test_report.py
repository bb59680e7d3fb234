"""kreplay report (issue 14, items 1 and 2).

1. With no counters named, kreplay collects the set basic and says so on one line.
2. kreplay report RUN.db: per kernel (or per launch, -k), the sections the run collected with
   units, derived values and the rules that fired; --baseline; text, csv and json; databases of
   kernel, range and application replay and of an older kreplay of the same schema version.
"""

import csv
import io
import json
import os
import re
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_e2e as rep  # noqa: E402
from report_e2e import e2e  # noqa: E402

SCALE = "scale_add(float*, float, float, unsigned int)"
SUM = "sum_reduce(unsigned int const*, unsigned long long*, unsigned int)"


def section(subject, name):
    return next(s for s in subject["sections"] if s["name"] == name)


def value(subject, section_name, name):
    return next(v for v in section(subject, section_name)["values"] if v["name"] == name)["value"]


class DefaultSet(rep.ReportCase):
    def test_no_counters_named_collects_basic_and_says_so_once(self):
        r = self.kreplay_ok("-d", "d", "-o", "run", "--", e2e.SAMPLE_APP)
        notes = [l for l in r.kreplay_lines if "no counters named" in l]
        self.assertEqual(len(notes), 1, str(r))
        self.assertRegex(notes[0], r"^==KREPLAY== no counters named: collecting set basic "
                                   r"\(LaunchStats, Occupancy and SpeedOfLight, \d+ counters\)")
        self.assert_all_tagged(r, "sample-app: ")
        # the host device has none of the GH100 metrics: no error, no replay, launch records
        self.assertFalse([l for l in r.kreplay_lines if "error" in l or
                          ("warning" in l and "has no %pid%" not in l)], str(r))
        db = os.path.join(self.tmp, "d", "run_results.db")
        self.assertEqual(e2e.rows(db, "SELECT count(*) AS n FROM dispatches")[0]["n"], 10)
        self.assertEqual(e2e.rows(db, "SELECT count(*) AS n FROM counters")[0]["n"], 0)
        out = json.loads(self.report(db, "--format", "json").stdout)
        self.assertEqual(out["sections"], ["LaunchStats"])

    def test_set_none_and_named_counters_take_no_default(self):
        for args in (["--set", "none"], ["--pmc", "ops"]):
            r = self.kreplay_ok(*(args + ["--", e2e.SAMPLE_APP]))
            self.assertFalse([l for l in r.kreplay_lines if "no counters named" in l], str(r))

    def test_list_sets_and_sections(self):
        r = self.kreplay_ok("--list-sets")
        for name in ("basic", "detailed", "full", "none"):
            self.assertRegex(r.stdout, r"(?m)^%s " % name)
        r = self.kreplay_ok("--list-sections", "--section-folder", rep.TEST_SECTIONS)
        for name in ("LaunchStats", "Occupancy", "SpeedOfLight", "MemoryWorkloadAnalysis",
                     "ComputeWorkloadAnalysis", "WarpStateStats", "SchedulerStats",
                     "SourceCounters", "HostSpeedOfLight"):
            self.assertRegex(r.stdout, r"(?m)^%s: " % name)
        self.assertIn("needs source_counters data", r.stdout)


class Report(rep.ReportCase):
    def test_kernel_replay_per_kernel_text(self):
        db = self.kernel_db()
        r = self.report(db, "--section-folder", rep.TEST_SECTIONS)
        out = r.stdout
        self.assertTrue(out.startswith("kreplay report: %s (kernel replay, 10 launches" % db), out)
        # kernels by time, each with its launches and share
        self.assertRegex(out, re.escape(SCALE) + r": 6 launches, .* in total \(\d+\.\d% of kernel")
        self.assertRegex(out, re.escape(SUM) + r": 4 launches")
        for title in ("Launch Statistics", "Host Device Speed Of Light", "Host Device Roofline",
                      "Host Device Launch Counts"):
            self.assertEqual(out.count("  Section: %s\n" % title), 2, title)
        # units, derived values and rules
        self.assertRegex(out, r"\n    Grid Size +block +8\n")
        self.assertRegex(out, r"\n    Threads Per Block +thread +128\n")
        self.assertRegex(out, r"\n    INFO +the counter and the launch record agree: 1024 threads")
        self.assertNotIn("negative operations", out)  # a rule that does not fire
        self.assertEqual(r.stderr, "")

    def test_json_values_are_the_means_of_the_launches(self):
        db = self.kernel_db()
        out = json.loads(self.report(db, "--section-folder", rep.TEST_SECTIONS, "--format",
                                     "json").stdout)
        self.assertEqual(out["format"], "kreplay report")
        self.assertEqual(out["sections"], ["LaunchStats", "HostSpeedOfLight", "HostRoofline",
                                           "HostCounts"])
        by_kernel = {s["kernel"]: s for s in out["subjects"]}
        self.assertEqual(set(by_kernel), {SCALE, SUM})
        scale = by_kernel[SCALE]
        self.assertEqual(scale["launches"], 6)
        ops = e2e.rows(db, "SELECT c.value FROM counters c JOIN dispatches d USING (app_pass, "
                           "dispatch_id) JOIN kernels k USING (app_pass, kernel_id) "
                           "WHERE c.name = 'ops' AND k.demangled_name = ?", (SCALE,))
        self.assertEqual(len(ops), 6)
        self.assertAlmostEqual(value(scale, "HostSpeedOfLight", "ops"),
                               sum(o["value"] for o in ops) / 6)
        read = value(scale, "HostSpeedOfLight", "bytes_read")
        written = value(scale, "HostSpeedOfLight", "bytes_written")
        self.assertAlmostEqual(value(scale, "HostSpeedOfLight", "bytes_per_op"),
                               (read + written) / value(scale, "HostSpeedOfLight", "ops"))
        self.assertEqual(value(scale, "LaunchStats", "launch.block_size"), 128)
        units = {v["name"]: v["unit"] for v in section(scale, "HostSpeedOfLight")["values"]}
        self.assertEqual(units["compute"], "%")
        fired = [r["name"] for r in section(scale, "HostSpeedOfLight")["rules"]]
        self.assertIn("HostMoreBytesThanOps", fired)
        self.assertNotIn("HostNeverFires", fired)
        shares = sum(s["time_share_pct"] for s in out["subjects"])
        self.assertAlmostEqual(shares, 100.0)

    def test_per_launch_and_kernel_filter(self):
        db = self.kernel_db()
        out = json.loads(self.report(db, "--section-folder", rep.TEST_SECTIONS, "--launch", "2",
                                     "--format", "json").stdout)
        self.assertEqual([(s["kernel"], s["dispatch_id"]) for s in out["subjects"]], [(SUM, 2)])
        ops = e2e.rows(db, "SELECT value FROM counters WHERE dispatch_id = 2 AND name = 'ops'")
        self.assertEqual(value(out["subjects"][0], "HostSpeedOfLight", "ops"), ops[0]["value"])
        every = json.loads(self.report(db, "--launch", "all", "-k", "sum_reduce", "--format",
                                       "json").stdout)
        self.assertEqual([s["dispatch_id"] for s in every["subjects"]], [2, 5, 7, 9])
        regex = json.loads(self.report(db, "-k", "regex:^scale", "--format", "json").stdout)
        self.assertEqual([s["kernel"] for s in regex["subjects"]], [SCALE])
        mangled = json.loads(self.report(db, "-k", e2e.SCALE_ADD_MANGLED, "--format",
                                         "json").stdout)
        self.assertEqual([s["kernel"] for s in mangled["subjects"]], [SCALE])

    def test_csv(self):
        db = self.kernel_db()
        rows = list(csv.DictReader(io.StringIO(
            self.report(db, "--section-folder", rep.TEST_SECTIONS, "--format", "csv").stdout)))
        self.assertEqual(list(rows[0]), ["Kernel", "Dispatch_Id", "Launches", "Section", "Kind",
                                         "Name", "Label", "Unit", "Value", "Baseline",
                                         "Change_Pct", "Severity", "Advice"])
        kinds = {r["Kind"] for r in rows}
        self.assertEqual(kinds, {"field", "metric", "derived", "rule"})
        rule = next(r for r in rows if r["Kind"] == "rule" and r["Name"] == "HostCountsAgree")
        self.assertEqual(rule["Severity"], "info")
        self.assertRegex(rule["Advice"], r"^the counter and the launch record agree: \d+ threads$")
        ops = [r for r in rows if r["Name"] == "ops" and r["Section"] == "HostSpeedOfLight"]
        self.assertEqual(len(ops), 2)
        self.assertGreater(float(ops[0]["Value"]), 0)

    def test_baseline_shows_each_value_beside_the_other_with_the_change(self):
        new = self.kernel_db("new")
        old = self.profile(["--section-folder", rep.TEST_SECTIONS, "--section", "HostCounts"],
                           name="old")
        out = json.loads(self.report(new, "--baseline", old, "--section-folder", rep.TEST_SECTIONS,
                                     "--section", "HostCounts", "--section", "LaunchStats",
                                     "--format", "json").stdout)
        self.assertEqual(out["baseline"], old)
        for s in out["subjects"]:
            self.assertTrue(s["has_baseline"])
            for sec in s["sections"]:
                for v in sec["values"]:
                    if v["name"] == "launch.duration_ns":
                        self.assertIsNotNone(v["baseline"])
                        self.assertAlmostEqual(
                            v["change_pct"], (v["value"] - v["baseline"]) / v["baseline"] * 100)
                    elif v["name"] == "threads_launched":
                        self.assertEqual(v["value"], v["baseline"])
                        self.assertEqual(v["change_pct"], 0)
        text = self.report(new, "--baseline", old, "--section-folder", rep.TEST_SECTIONS,
                           "--section", "HostCounts").stdout
        self.assertIn("baseline: %s\n" % old, text)
        self.assertRegex(text, r"Name +Unit +Value +Baseline +Change\n")
        self.assertRegex(text, r"\n    Threads Launched +thread +1024 +1024 +\+0\.0%\n")
        # the baseline lacks the ops counter: the value is there, the baseline n/a, no change
        wide = self.report(new, "--baseline", old, "--section-folder", rep.TEST_SECTIONS).stdout
        self.assertRegex(wide, r"\n    Operations +op +2000 +n/a +\n")

    def test_range_and_application_replay(self):
        rng = json.loads(self.report(self.range_db(), "--section-folder", rep.TEST_SECTIONS,
                                     "--format", "json").stdout)
        self.assertEqual(rng["runs"][0]["replay_mode"], "range")
        kernels = {s["kernel"].split("(")[0]: s for s in rng["subjects"]}
        self.assertEqual(set(kernels), {"bump", "mark"})
        self.assertEqual(kernels["bump"]["launches"], 4)
        self.assertEqual(value(kernels["bump"], "HostSpeedOfLight", "ops"), 512)
        self.assertEqual(value(kernels["mark"], "HostSpeedOfLight", "ops"), 1024)

        app = self.application_db()
        out = json.loads(self.report(app, "--section-folder", rep.TEST_SECTIONS, "--format",
                                     "json").stdout)
        self.assertEqual([r["app_pass"] for r in out["runs"]], [1, 2, 3])
        # each launch's counters come from three runs; it is one launch, not three
        by_kernel = {s["kernel"]: s for s in out["subjects"]}
        self.assertEqual(by_kernel[SCALE]["launches"], 6)
        self.assertEqual(value(by_kernel[SCALE], "HostCounts", "threads_launched"), 1024)
        self.assertEqual(value(by_kernel[SCALE], "HostSpeedOfLight", "ops"), 2000)
        self.assertIn("HostSpeedOfLight", out["sections"])
        text = self.report(app, "--section-folder", rep.TEST_SECTIONS).stdout
        self.assertIn("(application replay, 3 runs, ", text)

    def test_a_database_of_an_older_kreplay(self):
        old = rep.old_database(self.tmp)
        self.assertFalse(any(r["name"] == "seq" for r in e2e.rows(
            old, "SELECT name FROM pragma_table_info('counters')")))
        out = json.loads(self.report(old, "--section-folder", rep.TEST_SECTIONS, "--format",
                                     "json").stdout)
        self.assertEqual(out["sections"], ["LaunchStats", "HostSpeedOfLight", "HostRoofline",
                                           "HostCounts"])
        by_kernel = {s["kernel"]: s for s in out["subjects"]}
        self.assertEqual(by_kernel[SCALE]["launches"], 6)
        self.assertEqual(value(by_kernel[SCALE], "HostCounts", "threads_launched"), 1024)
        for fmt in ("text", "csv", "html"):
            self.report(old, "--section-folder", rep.TEST_SECTIONS, "--format", fmt, "-o",
                        os.path.join(self.tmp, "old." + fmt))

    def test_incomplete_and_skipped_sections_are_notes(self):
        db = self.profile(["--pmc", "ops", "duration_ns"], name="part")
        out = json.loads(self.report(db, "--section-folder", rep.TEST_SECTIONS, "--format",
                                     "json").stdout)
        self.assertEqual(out["sections"], ["LaunchStats"])
        self.assertTrue(any(n.startswith("section HostSpeedOfLight is incomplete: 2 of its 4")
                            for n in out["notes"]), out["notes"])
        forced = json.loads(self.report(db, "--section-folder", rep.TEST_SECTIONS, "--section",
                                        "HostSpeedOfLight", "--section", "SourceCounters",
                                        "--format", "json").stdout)
        self.assertEqual(forced["sections"], ["HostSpeedOfLight"])
        subject = forced["subjects"][0]
        self.assertIsNone(value(subject, "HostSpeedOfLight", "bytes_read"))
        self.assertIsNotNone(value(subject, "HostSpeedOfLight", "compute"))
        self.assertIsNone(value(subject, "HostSpeedOfLight", "memory"))
        self.assertTrue(any("section SourceCounters needs source_counters data" in n
                            for n in forced["notes"]), forced["notes"])

    def test_html_goes_to_a_file_next_to_the_database(self):
        db = self.kernel_db()
        r = self.report(db, "--format", "html")
        path = db[:-len("_results.db")] + "_report.html"
        self.assertEqual(r.kreplay_lines, ["==KREPLAY== report: %s" % path])
        with open(path) as f:
            self.assertTrue(f.read().startswith("<!DOCTYPE html>"))
        self.assertEqual(r.stdout, "")
        r = self.report(db, "--format", "html", "-o", "-")
        self.assertTrue(r.stdout.startswith("<!DOCTYPE html>"))

    def test_bad_input_is_one_line(self):
        db = self.kernel_db()
        bogus = os.path.join(self.tmp, "bogus.db")
        sqlite3.connect(bogus).execute("CREATE TABLE t (x)").connection.close()
        for args, needles in (
                ([os.path.join(self.tmp, "missing.db")], ["no such file"]),
                ([bogus], ["is not a kreplay results database"]),
                ([db, "--format", "pdf"], ["--format pdf: use text, csv, json or html"]),
                ([db, "--section", "SpeedOfLite"], ["did you mean SpeedOfLight?"]),
                ([db, "--launch", "99"], ["no launch with dispatch id 99", "from 1 to 10"]),
                ([db, "--launch", "x"], ["--launch x: give a dispatch id"]),
                ([db, "-k", "nothing"], ["-k nothing selects no kernel"]),
                ([db, "--baseline", bogus], ["--baseline: ", "is not a kreplay results"]),
                ([db, "--section-folder", "/no/such/dir"], ["section folder /no/such/dir does "
                                                            "not exist"]),
                ([], ["kreplay report needs a results database"]),
                ([db, "--bogus"], ["--bogus", "kreplay report --help"]),
                ([db, "--section", "--format", "json"], ["--section needs a value before "
                                                         "--format"]),
                ([db, "--baseline", "-k", "x"], ["--baseline needs a value before -k"]),
                ([db, "-o", "--format=csv"], ["-o needs a value before --format"])):
            r = self.kreplay("report", *args)
            self.assertEqual(r.rc, 2, str(r))
            self.assert_one_line_error(r, *needles)
        help_text = self.kreplay_ok("report", "--help").stdout
        for option in ("--baseline", "--format", "--launch", "-k", "--section", "-o"):
            self.assertIn(option, help_text)


if __name__ == "__main__":
    e2e.main()
