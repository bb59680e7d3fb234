"""kreplay convert RUN.db --to csv|json|perfetto (issue 14, item 5).

Golden tests: a run writes every format itself; convert writes them again from its database; the
files must be byte for byte the same (kernel, range and application replay, the kernel trace,
declined launches, several threads). Databases of an older kreplay convert too, with a note.
"""

import filecmp
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_e2e as rep  # noqa: E402
from report_e2e import e2e  # noqa: E402

ALL = "sqlite,csv,json,perfetto"


class Convert(rep.ReportCase):
    def run_all_formats(self, args, app_args=None, app=None, name="direct"):
        app = app or e2e.SAMPLE_APP
        r = self.kreplay_ok(*(list(args) + ["--output-format", ALL, "-d", name, "-o", "run_%p",
                                            "--", app] + [str(a) for a in (app_args or [])]))
        return r, os.path.join(self.tmp, name)

    def assert_same_files(self, direct, converted, expect):
        names = sorted(f for f in os.listdir(direct) if not f.endswith(".db"))
        self.assertEqual(sorted(names), sorted(expect(names)), names)
        for f in names:
            a, b = os.path.join(direct, f), os.path.join(converted, f)
            self.assertTrue(os.path.exists(b), "convert did not write %s" % f)
            if not filecmp.cmp(a, b, shallow=False):
                with open(a) as x, open(b) as y:
                    la, lb = x.read().splitlines(), y.read().splitlines()
                first = next((i for i, (p, q) in enumerate(zip(la, lb)) if p != q),
                             min(len(la), len(lb)))
                self.fail("%s differs at line %d:\nrun:     %s\nconvert: %s" % (
                    f, first + 1, la[first] if first < len(la) else "<end>",
                    lb[first] if first < len(lb) else "<end>"))

    def convert(self, db, *args):
        r = self.kreplay("convert", db, *args)
        self.assertEqual(r.rc, 0, str(r))
        return r

    def check(self, args, app_args=None, app=None, kernel_trace=False, services=False):
        r, direct = self.run_all_formats(args, app_args, app)
        db = self.db_of(r, direct)
        out = os.path.join(self.tmp, "converted")
        extra = ["--kernel-trace"] if kernel_trace else []
        c = self.convert(db, "--to", "csv,json,perfetto", "-d", out, *extra)
        outputs = [l for l in c.kreplay_lines if l.startswith("==KREPLAY== output: ")]
        self.assertEqual(len(outputs), 4 + kernel_trace + services, str(c))
        stem = os.path.basename(db)[:-len("_results.db")]
        suffixes = ["_counter_collection.csv", "_counter_collection_wide.csv", "_results.json",
                    "_trace.json"] + (["_kernel_trace.csv"] if kernel_trace else []) + (
                    ["_pass_services.csv"] if services else [])
        self.assert_same_files(direct, out, lambda _: [stem + s for s in suffixes])
        return db, out

    def test_kernel_replay_with_kernel_trace(self):
        self.check(["--kernel-trace", "--pmc", "ops", "bytes_read", "--pmc", "threads_launched"],
                   kernel_trace=True)

    def test_metrics_and_sections_split_into_passes(self):
        self.check(["--metrics", "ops,bytes_read,bytes_written"] + rep.HOST_SET)

    def test_range_replay(self):
        self.check(["--replay-mode", "range", "--pmc", "ops", "--pmc", "threads_launched"],
                   ["--launches", 8, "--two-kernels", "--sync-every", 3], app=e2e.TEST_APP)

    def test_declined_launches_and_filters(self):
        self.check(["--kernel-trace", "--pmc", "ops", "--pmc", "launches", "--launch-skip", "1"],
                   ["--launches", 6, "--untracked-from", 3], app=e2e.TEST_APP, kernel_trace=True)

    def test_per_pass_services(self):
        # PC samples, SASS counts and PM samples come back from their tables (with the sass
        # table's instructions and source lines) into the JSON, the trace and _pass_services.csv
        db, out = self.check(["--pmc", "ops", "--pc-sampling", "--pc-sampling-period", "5",
                              "--source-counters", "--pm-sampling", "pm__bytes_read,pm__ops"],
                             services=True)
        with open(next(os.path.join(out, f) for f in os.listdir(out)
                       if f.endswith("_results.json"))) as f:
            doc = json.load(f)
        kinds = {s["service"] for s in doc["service_samples"]}
        self.assertEqual(kinds, {"pc_sampling", "sass_metrics", "pm_sampling"})

    def test_default_set_without_counters(self):
        self.check([])

    def test_application_replay_writes_each_runs_files(self):
        r = self.kreplay_ok("--pmc", "ops", "--pmc", "threads_launched", "--replay-mode",
                            "application", "--output-format", ALL, "-d", "direct", "-o",
                            "run_%p", "--", e2e.SAMPLE_APP)
        merged = [p for p in e2e.find_files(os.path.join(self.tmp, "direct"), "*_results.db")
                  if "/pass_" not in p][0]
        out = os.path.join(self.tmp, "converted")
        self.convert(merged, "--to", "csv,json,perfetto", "-d", out)
        for k in (1, 2):
            direct = os.path.join(self.tmp, "direct", "pass_%d" % k)
            stem = os.path.basename(self.one_file(direct, "*_results.db", r))[:-len("_results.db")]
            # the merged database names its files after the first run, as the run itself did
            merged_stem = os.path.basename(merged)[:-len("_results.db")]
            conv = os.path.join(out, "pass_%d" % k)
            for suffix in ("_counter_collection.csv", "_counter_collection_wide.csv",
                           "_results.json", "_trace.json"):
                self.assertTrue(filecmp.cmp(os.path.join(direct, stem + suffix),
                                            os.path.join(conv, merged_stem + suffix),
                                            shallow=False), "pass_%d %s" % (k, suffix))

    def test_default_names_sit_next_to_the_database(self):
        r, direct = self.run_all_formats(["--pmc", "ops"], name="here")
        db = self.db_of(r, direct)
        moved = os.path.join(self.tmp, "copy")
        os.makedirs(moved)
        copy = os.path.join(moved, "mine_results.db")
        with open(db, "rb") as a, open(copy, "wb") as b:
            b.write(a.read())
        c = self.convert(copy, "--to", "json")
        self.assertEqual([l for l in c.kreplay_lines if "output:" in l],
                         ["==KREPLAY== output: %s" % os.path.join(moved, "mine_results.json")])
        stem = os.path.basename(db)[:-len("_results.db")]
        self.assertTrue(filecmp.cmp(os.path.join(direct, stem + "_results.json"),
                                    os.path.join(moved, "mine_results.json"), shallow=False))
        gz = self.convert(copy, "--to", "perfetto", "--output-gzip", "-o", "zipped")
        self.assertIn("zipped_trace.json.gz", gz.stderr)
        import gzip
        with gzip.open(os.path.join(moved, "zipped_trace.json.gz"), "rb") as z, \
                open(os.path.join(direct, stem + "_trace.json"), "rb") as plain:
            self.assertEqual(z.read(), plain.read())

    def test_an_older_database_converts_in_table_order_with_a_note(self):
        old = rep.old_database(self.tmp)
        out = os.path.join(self.tmp, "old_out")
        c = self.convert(old, "--to", "csv,json,perfetto", "-d", out)
        self.assertTrue(any("did not record the order of its rows" in l for l in c.kreplay_lines),
                        str(c))
        with open(os.path.join(out, "old_results.json")) as f:
            doc = json.load(f)
        self.assertEqual(len(doc["dispatches"]), 10)
        self.assertEqual(len(doc["counters"]), 10 * 6)
        rows = e2e.read_csv(os.path.join(out, "old_counter_collection.csv"))
        self.assertEqual(len(rows), 60)
        wide = e2e.read_csv(os.path.join(out, "old_counter_collection_wide.csv"))
        self.assertEqual(len(wide), 10)
        self.assertEqual(list(wide[0])[-6:], ["ops", "bytes_read", "bytes_written",
                                              "threads_launched", "duration_ns",
                                              "blocks_launched"])

    def test_bad_input_is_one_line(self):
        r, direct = self.run_all_formats(["--pmc", "ops"])
        db = self.db_of(r, direct)
        for args, needles in (
                ([db], ["convert needs --to FORMAT"]),
                ([db, "--to", "sqlite"], ["--to sqlite", "the database is the sqlite output"]),
                ([db, "--to", "xml"], ["--to xml: convert writes csv, json or perfetto"]),
                ([os.path.join(self.tmp, "nope.db"), "--to", "csv"], ["no such file"]),
                ([], ["kreplay convert needs a results database"]),
                ([db, "--to", "-d", "x"], ["--to needs a value before -d"])):
            c = self.kreplay("convert", *args)
            self.assertEqual(c.rc, 2, str(c))
            self.assert_one_line_error(c, *needles)


if __name__ == "__main__":
    e2e.main()
