#!/usr/bin/env python3
"""Item 5: the output formats, read the way users read them.

One run of kreplay-sample-app with two counter groups that share a counter (bytes_written is on
both passes), in every format, with the kernel trace:

  --pmc threads_launched bytes_written --pmc bytes_written ops --replay-mode kernel
  --output-format sqlite,csv,json,perfetto --kernel-trace -o res

- SQLite: the tables and views of share/kreplay/schema.sql, schema_version in metadata, mangled
  and demangled names, one dispatches row per logical launch, one passes row per pass, one
  counters row per value per pass (a counter on two passes has two rows, never summed).
- CSV: counter_collection.csv with Replay_Pass (so rows of a counter repeated across groups can
  be told apart), the wide file (one row per dispatch), the kernel trace (one row per pass).
- JSON: replay_pass on every pass-level record.
- Perfetto: valid JSON with traceEvents, a slice per pass, snapshot and restore slices.
- gzip: --output-gzip compresses the trace (and, as --help says, the JSON results).
- Snapshots: every format carries each dispatch's bytes_changed next to bytes_snapshotted and its
  snapshot_mode; the run table and the JSON summary the peak snapshot storage; the exit tally a
  snapshots line (kernel replay here; range replay books a range's on its first launch).
"""

import csv
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kreplay_e2e as e2e  # noqa: E402

GROUPS = ["--pmc", "threads_launched", "bytes_written", "--pmc", "bytes_written", "ops"]
EXPECTED_BY_PASS = {0: {"threads_launched", "bytes_written"}, 1: {"bytes_written", "ops"}}
DEMANGLED = {
    e2e.SCALE_ADD_MANGLED: "scale_add(float*, float, float, unsigned int)",
    e2e.SUM_REDUCE_MANGLED: "sum_reduce(unsigned int const*, unsigned long long*, unsigned int)",
}
GEOMETRY = {"scale_add": (8, 128), "sum_reduce": (16, 256)}  # grid x, block x


def short(name):
    return name.split("(")[0]


class AllFormats(e2e.KreplayTestCase):
    """One run, read through every format."""

    @classmethod
    def setUpClass(cls):
        import shutil
        import tempfile
        cls.dir = tempfile.mkdtemp(prefix="kreplay-cli-outputs-")
        # Kernel replay: a snapshot and a restore per dispatch (range replay's records: test_range).
        cls.run_result = e2e.run(GROUPS + ["--replay-mode", "kernel",
                                           "--output-format", "sqlite,csv,json,perfetto",
                                           "--kernel-trace", "-d", "out", "-o", "res", "--",
                                           e2e.SAMPLE_APP], cls.dir)
        cls.out = os.path.join(cls.dir, "out")
        cls.cleanup = lambda: shutil.rmtree(cls.dir, True)

    @classmethod
    def tearDownClass(cls):
        cls.cleanup()

    def setUp(self):
        super().setUp()
        r = self.run_result
        self.assertEqual(r.rc, 0, str(r))
        self.assertIn("sample-app: OK", r.stdout, str(r))
        self.db = os.path.join(self.out, "res_results.db")

    def path(self, suffix):
        p = os.path.join(self.out, "res" + suffix)
        self.assertTrue(os.path.isfile(p), "{} missing\n{}".format(p, self.run_result))
        return p

    # -- SQLite ---------------------------------------------------------------------------------

    def test_sqlite_tables_views_and_schema_version(self):
        objects = e2e.rows(self.db, "SELECT type, name FROM sqlite_master")
        tables = {o["name"] for o in objects if o["type"] == "table"}
        views = {o["name"] for o in objects if o["type"] == "view"}
        for t in ("metadata", "run", "devices", "kernels", "dispatches", "passes", "counters",
                  "allocations", "replay_phases"):
            self.assertIn(t, tables)
        for v in ("dispatch_counters", "kernel_summary", "counter_collection"):
            self.assertIn(v, views)
        meta = {m["key"]: m["value"] for m in e2e.rows(self.db, "SELECT * FROM metadata")}
        self.assertEqual(meta.get("schema_version"), "3", meta)
        self.assertEqual(e2e.rows(self.db, "PRAGMA integrity_check")[0]["integrity_check"], "ok")

    def test_sqlite_run_and_device(self):
        run = e2e.rows(self.db, "SELECT * FROM run")
        self.assertEqual(len(run), 1)
        run = run[0]
        self.assertEqual(json.loads(run["command"]), [e2e.SAMPLE_APP])
        self.assertEqual(run["exit_code"], 0)
        self.assertIsNotNone(run["end_ns"], "a finished run has end_ns")
        self.assertEqual((run["launches"], run["replayed"], run["declined"], run["not_selected"],
                          run["passes"]), (10, 10, 0, 0, 20))
        self.assertEqual(json.loads(run["counter_names"]),
                         ["threads_launched", "bytes_written", "ops"])
        devices = e2e.rows(self.db, "SELECT * FROM devices")
        self.assertEqual(len(devices), 1)
        self.assertEqual(devices[0]["type"], "host")

    def test_sqlite_kernels_have_mangled_and_demangled_names(self):
        kernels = e2e.rows(self.db, "SELECT mangled_name, demangled_name FROM kernels")
        self.assertEqual({k["mangled_name"]: k["demangled_name"] for k in kernels}, DEMANGLED)

    def test_sqlite_one_dispatch_row_per_launch(self):
        dispatches = e2e.rows(self.db, "SELECT d.*, k.demangled_name FROM dispatches d "
                                       "JOIN kernels k USING (app_pass, kernel_id) "
                                       "ORDER BY dispatch_id")
        self.assertEqual([short(d["demangled_name"]) for d in dispatches], e2e.SAMPLE_ORDER)
        streams = {}
        for d in dispatches:
            kernel = short(d["demangled_name"])
            self.assertEqual((d["grid_x"], d["block_x"]), GEOMETRY[kernel])
            self.assertEqual((d["grid_y"], d["grid_z"], d["block_y"], d["block_z"]), (1, 1, 1, 1))
            self.assertEqual((d["outcome"], d["passes_executed"]), ("replayed", 2))
            self.assertLess(d["start_ns"], d["end_ns"])
            streams.setdefault(kernel, set()).add(d["stream_id"])
        # scale_add runs on stream A, sum_reduce on stream B
        self.assertEqual(len(streams["scale_add"]), 1)
        self.assertEqual(len(streams["sum_reduce"]), 1)
        self.assertNotEqual(streams["scale_add"], streams["sum_reduce"])

    def test_sqlite_correlation_ids_identify_launches(self):
        ids = [d["correlation_id"] for d in e2e.rows(self.db, "SELECT correlation_id FROM "
                                                              "dispatches")]
        self.assertEqual(len(set(ids)), 10, "every launch has its own correlation id: {}".format(
            ids))
        self.assertNotIn(0, ids)

    def test_sqlite_a_counter_on_two_passes_has_a_row_per_pass(self):
        for d in e2e.rows(self.db, "SELECT dispatch_id FROM dispatches"):
            values = e2e.rows(self.db, "SELECT replay_pass, name, value FROM counters WHERE "
                                       "dispatch_id = ? ORDER BY replay_pass, name",
                              (d["dispatch_id"],))
            by_pass = {}
            for v in values:
                by_pass.setdefault(v["replay_pass"], set()).add(v["name"])
            self.assertEqual(by_pass, EXPECTED_BY_PASS)
            written = [v["value"] for v in values if v["name"] == "bytes_written"]
            # replay restored memory: the kernel did the same work on both passes
            self.assertEqual(len(written), 2)
            self.assertEqual(written[0], written[1])
            passes = e2e.rows(self.db, "SELECT replay_pass FROM passes WHERE dispatch_id = ? "
                                       "ORDER BY replay_pass", (d["dispatch_id"],))
            self.assertEqual([p["replay_pass"] for p in passes], [0, 1])

    def test_sqlite_views(self):
        dc = e2e.rows(self.db, "SELECT * FROM dispatch_counters ORDER BY dispatch_id")
        self.assertEqual(len(dc), 10)
        for row in dc:
            for name in ("threads_launched", "bytes_written", "ops"):
                self.assertIn(name, row)
                # the value of the lowest pass that collected it
                expected = e2e.rows(self.db, "SELECT value FROM counters WHERE dispatch_id = ? "
                                             "AND name = ? ORDER BY replay_pass LIMIT 1",
                                    (row["dispatch_id"], name))[0]["value"]
                self.assertEqual(row[name], expected)
            self.assertEqual(row["passes_executed"], 2)
            self.assertGreater(row["duration_ns"], 0)
        ks = {short(k["kernel_name"]): k for k in e2e.rows(self.db, "SELECT * FROM kernel_summary")}
        self.assertEqual(sorted(ks), ["scale_add", "sum_reduce"])
        self.assertEqual((ks["scale_add"]["launches"], ks["scale_add"]["passes"]), (6, 12))
        self.assertEqual((ks["sum_reduce"]["launches"], ks["sum_reduce"]["passes"]), (4, 8))
        self.assertEqual(ks["scale_add"]["threads_launched"], 1024)
        cc = e2e.rows(self.db, "SELECT * FROM counter_collection")
        self.assertEqual(len(cc), 40)
        self.assertEqual({short(c["kernel_name"]) for c in cc}, {"scale_add", "sum_reduce"})
        self.assertTrue(all(c["start_ns"] is not None for c in cc))

    def test_sqlite_allocations_and_replay_phases(self):
        allocs = e2e.rows(self.db, "SELECT * FROM allocations ORDER BY id")
        sizes = sorted(a["size"] for a in allocs if a["operation"] == "alloc" and
                       a["kind"] == "device")
        self.assertEqual(sizes, [8, 4000, 16384])  # total, x, data
        self.assertEqual(sorted(a["size"] for a in allocs if a["operation"] == "free"),
                         [8, 4000, 16384])
        self.assertIn("module_global", {a["kind"] for a in allocs})
        for d in e2e.rows(self.db, "SELECT dispatch_id, bytes_snapshotted FROM dispatches"):
            phases = e2e.rows(self.db, "SELECT phase, after_pass, bytes FROM replay_phases WHERE "
                                       "dispatch_id = ? ORDER BY id", (d["dispatch_id"],))
            # snapshot before pass 0, restore after pass 0; the last pass is not restored
            self.assertEqual([(p["phase"], p["after_pass"]) for p in phases],
                             [("snapshot", 0), ("restore", 0)])
            self.assertEqual(phases[0]["bytes"], d["bytes_snapshotted"])

    # -- CSV ------------------------------------------------------------------------------------

    def test_csv_counter_collection_has_replay_pass(self):
        long_rows = e2e.read_csv(self.path("_counter_collection.csv"))
        self.assertEqual(len(long_rows), 40)
        for col in ("Dispatch_Id", "Kernel_Name", "Counter_Name", "Counter_Value", "Replay_Pass",
                    "App_Pass", "Grid_Size", "Block_Size", "Start_Timestamp", "End_Timestamp"):
            self.assertIn(col, long_rows[0])
        from_csv = sorted((int(r["Dispatch_Id"]), int(r["Replay_Pass"]), r["Counter_Name"],
                           float(r["Counter_Value"])) for r in long_rows)
        from_db = sorted((c["dispatch_id"], c["replay_pass"], c["name"], c["value"])
                         for c in e2e.rows(self.db, "SELECT * FROM counters"))
        self.assertEqual(from_csv, from_db)
        self.assertEqual({r["Kernel_Name"] for r in long_rows}, set(DEMANGLED.values()))
        # bytes_written is on both passes: Replay_Pass tells its rows apart
        for r in long_rows:
            if r["Counter_Name"] == "bytes_written":
                self.assertIn(r["Replay_Pass"], ("0", "1"))
        self.assertEqual({r["App_Pass"] for r in long_rows}, {"0"})

    def test_csv_wide_one_row_per_dispatch(self):
        wide = e2e.read_csv(self.path("_counter_collection_wide.csv"))
        self.assertEqual(len(wide), 10)
        for row in wide:
            for name in ("threads_launched", "bytes_written", "ops"):
                self.assertNotEqual(row[name], "", row)
            self.assertEqual(row["Passes_Executed"], "2")
            self.assertEqual(row["Outcome"], "replayed")
        self.assertEqual(sorted(int(r["Dispatch_Id"]) for r in wide),
                         sorted(d["dispatch_id"] for d in e2e.rows(self.db, "SELECT dispatch_id "
                                                                            "FROM dispatches")))

    def test_csv_kernel_trace_one_row_per_pass(self):
        trace = e2e.read_csv(self.path("_kernel_trace.csv"))
        self.assertEqual(len(trace), 20)
        per_dispatch = {}
        for t in trace:
            per_dispatch.setdefault(t["Dispatch_Id"], []).append(int(t["Replay_Pass"]))
            self.assertLessEqual(int(t["Start_Timestamp"]), int(t["End_Timestamp"]))
        self.assertEqual(len(per_dispatch), 10)
        for passes in per_dispatch.values():
            self.assertEqual(sorted(passes), [0, 1])

    # -- JSON -----------------------------------------------------------------------------------

    def test_json_records_carry_replay_pass(self):
        with open(self.path("_results.json")) as f:
            doc = json.load(f)
        self.assertEqual(doc["schema_version"], 3)
        for section in ("devices", "kernels", "dispatches", "passes", "counters", "allocations",
                        "replay_phases"):
            self.assertIn(section, doc)
        self.assertEqual(len(doc["dispatches"]), 10)
        self.assertEqual(len(doc["passes"]), 20)
        self.assertEqual(len(doc["counters"]), 40)
        for record in doc["passes"] + doc["counters"]:
            self.assertIn("replay_pass", record)
            self.assertIn(record["replay_pass"], (0, 1))
        for c in doc["counters"]:
            self.assertIn(c["name"], EXPECTED_BY_PASS[c["replay_pass"]])
        self.assertEqual({(k["mangled_name"], k["demangled_name"]) for k in doc["kernels"]},
                         set(DEMANGLED.items()))
        self.assertEqual(doc["summary"]["launches"], 10)
        self.assertEqual(doc["summary"]["replayed"], 10)
        self.assertEqual(e2e.find_files(self.out, "*.part"), [], "no part files left over")

    # -- Perfetto -------------------------------------------------------------------------------

    def check_trace(self, doc):
        self.assertIn("traceEvents", doc)
        events = doc["traceEvents"]
        kernel = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
        self.assertEqual(len(kernel), 20, "one slice per executed pass")
        seen = sorted((e["args"]["dispatch_id"], e["args"]["replay_pass"]) for e in kernel)
        dispatch_ids = sorted(d["dispatch_id"] for d in e2e.rows(self.db, "SELECT dispatch_id "
                                                                          "FROM dispatches"))
        self.assertEqual(seen, sorted((d, p) for d in dispatch_ids for p in (0, 1)))
        for e in kernel:
            self.assertIn(short(e["name"]), ("scale_add", "sum_reduce"))
            self.assertGreaterEqual(e["dur"], 0)
            self.assertEqual(set(e["args"]["counters"]), EXPECTED_BY_PASS[e["args"]["replay_pass"]])
        replay = [e for e in events if e.get("ph") == "X" and e.get("cat") == "replay"]
        self.assertEqual(sorted(e["name"] for e in replay), ["restore"] * 10 + ["snapshot"] * 10)
        self.assertEqual(doc["otherData"]["schema_version"], 3)

    def test_perfetto_trace(self):
        with open(self.path("_trace.json")) as f:
            self.check_trace(json.load(f))

    # -- Snapshots (write-bounded snapshots, outputs) -------------------------------------------

    def test_snapshot_columns_in_every_format_and_peak_storage(self):
        columns = {c["name"] for c in e2e.rows(self.db, "SELECT name FROM "
                                                        "pragma_table_info('dispatches')")}
        self.assertTrue({"bytes_snapshotted", "bytes_changed", "snapshot_mode"} <= columns,
                        columns)
        dispatches = e2e.rows(self.db, "SELECT dispatch_id, outcome, bytes_snapshotted, "
                                       "bytes_changed, snapshot_mode FROM dispatches")
        self.assertEqual(len(dispatches), 10)
        by_id = {}
        for d in dispatches:
            # every launch of the sample app writes memory, and its footprint is small: the whole
            # of it is saved, of which its own pass changed a part
            self.assertEqual(d["outcome"], "replayed", d)
            self.assertGreater(d["bytes_changed"], 0, d)
            self.assertLessEqual(d["bytes_changed"], d["bytes_snapshotted"], d)
            self.assertEqual(d["snapshot_mode"], "full", d)
            by_id[d["dispatch_id"]] = d
        run = e2e.rows(self.db, "SELECT * FROM run")[0]
        for key in ("snapshot_device_peak_bytes", "snapshot_host_peak_bytes",
                    "snapshot_storage_releases"):
            self.assertIn(key, run)
            self.assertIsNotNone(run[key], key)
        largest = max(d["bytes_snapshotted"] for d in dispatches)
        self.assertGreaterEqual(run["snapshot_device_peak_bytes"] +
                                run["snapshot_host_peak_bytes"], largest, run)
        self.assertEqual(run["snapshot_storage_releases"], 0, run)

        # CSV (wide), JSON, Perfetto: the same numbers
        wide = e2e.read_csv(self.path("_counter_collection_wide.csv"))
        for row in wide:
            d = by_id[int(row["Dispatch_Id"])]
            self.assertEqual((int(row["Bytes_Snapshotted"]), int(row["Bytes_Changed"]),
                              row["Snapshot_Mode"]),
                             (d["bytes_snapshotted"], d["bytes_changed"], "full"), row)
        with open(self.path("_results.json")) as f:
            doc = json.load(f)
        for j in doc["dispatches"]:
            d = by_id[j["dispatch_id"]]
            self.assertEqual((j["bytes_snapshotted"], j["bytes_changed"], j["snapshot_mode"]),
                             (d["bytes_snapshotted"], d["bytes_changed"], "full"), j)
        for key in ("snapshot_device_peak_bytes", "snapshot_host_peak_bytes",
                    "snapshot_storage_releases"):
            self.assertEqual(doc["summary"][key], run[key], key)
        with open(self.path("_trace.json")) as f:
            trace = json.load(f)
        kernel = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
        for e in kernel:
            d = by_id[e["args"]["dispatch_id"]]
            self.assertEqual((e["args"]["bytes_snapshotted"], e["args"]["bytes_changed"],
                              e["args"]["snapshot_mode"]),
                             (d["bytes_snapshotted"], d["bytes_changed"], "full"), e)

        # the exit tally: one snapshots line, after the launches line
        lines = self.run_result.kreplay_lines
        snap = [l for l in lines if l.startswith("==KREPLAY== snapshots: ")]
        self.assertEqual(len(snap), 1, str(self.run_result))
        self.assertRegex(snap[0], r"^==KREPLAY== snapshots: \S+ \S+ saved for \S+ \S+ changed "
                                  r"\(0 write-set, 10 full\); peak storage \S+ \S+ device, "
                                  r"\S+ \S+ host$")
        tally = [i for i, l in enumerate(lines) if e2e.TALLY_RE.match(l)]
        self.assertLess(tally[0], lines.index(snap[0]))


class RangeSnapshots(e2e.KreplayTestCase):
    """Range replay: a range's snapshot numbers are booked on its first kept launch, as
    bytes_snapshotted is; its other launches say nothing was saved for them."""

    def test_a_ranges_snapshot_is_on_its_first_launch(self):
        r = self.sample("--pmc", "threads_launched", "--pmc", "ops", "--replay-mode", "range",
                        "--output-format", "sqlite,csv", "-d", "out", "-o", "rng")
        db = os.path.join(self.tmp, "out", "rng_results.db")
        dispatches = e2e.rows(db, "SELECT dispatch_id, bytes_snapshotted, bytes_changed, "
                                  "snapshot_mode FROM dispatches ORDER BY dispatch_id")
        self.assertEqual(len(dispatches), 10)
        saved = [d for d in dispatches if d["bytes_snapshotted"] > 0]
        self.assertGreater(len(saved), 0, dispatches)
        for d in dispatches:
            if d["bytes_snapshotted"] > 0:
                self.assertGreater(d["bytes_changed"], 0, d)
                self.assertLessEqual(d["bytes_changed"], d["bytes_snapshotted"], d)
                self.assertEqual(d["snapshot_mode"], "full", d)
            else:  # a later launch of a range
                self.assertEqual((d["bytes_changed"], d["snapshot_mode"]), (0, ""), d)
        wide = {int(row["Dispatch_Id"]): row for row in e2e.read_csv(
            os.path.join(self.tmp, "out", "rng_counter_collection_wide.csv"))}
        for d in dispatches:
            row = wide[d["dispatch_id"]]
            self.assertEqual((int(row["Bytes_Changed"]), row["Snapshot_Mode"]),
                             (d["bytes_changed"], d["snapshot_mode"]), row)
        snap = [l for l in r.kreplay_lines if l.startswith("==KREPLAY== snapshots: ")]
        self.assertEqual(len(snap), 1, str(r))
        # one window per range that saved memory
        self.assertIn("(0 write-set, %d full)" % len(saved), snap[0])


class Gzip(e2e.KreplayTestCase):
    def test_gzip_trace(self):
        r = self.sample(*(GROUPS + ["--output-format", "perfetto,sqlite", "--output-gzip",
                                    "-o", "g_%p"]))
        path = self.one_file(self.tmp, "g_*_trace.json.gz", r)
        self.assertEqual(e2e.find_files(self.tmp, "*_trace.json"), [])
        with gzip.open(path, "rt") as f:
            doc = json.load(f)
        kernel = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
        self.assertEqual(len(kernel), 20)
        self.assertIn(path, e2e.output_lines(r))

    def test_gzip_json_results(self):
        # --help and the input schema: "--output-gzip: compress the json and perfetto outputs"
        r = self.sample(*(GROUPS + ["--output-format", "json", "--output-gzip", "-o", "g_%p"]))
        found = e2e.find_files(self.tmp, "g_*_results.json*")
        self.assertEqual([os.path.basename(p).split("_results")[1] for p in found],
                         [".json.gz"], "--output-gzip should compress the JSON results\n{}"
                         .format(r))
        with gzip.open(found[0], "rt") as f:
            doc = json.load(f)
        self.assertEqual(len(doc["counters"]), 40)

    def test_no_gzip_without_the_flag(self):
        r = self.sample("--pmc", "ops", "--output-format", "perfetto,json")
        self.assertEqual(e2e.find_files(self.tmp, "*.gz"), [], str(r))
        with open(self.one_file(self.tmp, "*_trace.json", r)) as f:
            json.load(f)


class LostCounters(e2e.KreplayTestCase):
    """A counter pass that fails (KREPLAY_HOST_FAIL_COUNTER_PASSES makes the host device fail like
    CUPTI can): the run goes on, and every output and the tally say which pass lost its values."""

    def test_a_lost_pass_is_marked_everywhere(self):
        r = self.kreplay(*(GROUPS + ["--output-format", "sqlite,csv,json", "--kernel-trace",
                                     "-d", "out", "-o", "lost", "--", e2e.SAMPLE_APP]),
                         env={"KREPLAY_HOST_FAIL_COUNTER_PASSES": "1"})
        self.assertEqual(r.rc, 0, str(r))
        self.assertIn("sample-app: OK", r.stdout, str(r))
        tally = [l for l in r.kreplay_lines if " launches: " in l]
        self.assertEqual(len(tally), 1, str(r))
        self.assertIn("the counters of 1 passes were lost", tally[0])
        db = os.path.join(self.tmp, "out", "lost_results.db")
        statuses = e2e.rows(db, "SELECT counter_status, COUNT(*) AS n FROM passes "
                                "GROUP BY counter_status")
        self.assertEqual({s["counter_status"]: s["n"] for s in statuses}, {"lost": 1, "ok": 19})
        lost = e2e.rows(db, "SELECT dispatch_id, replay_pass FROM passes "
                            "WHERE counter_status = 'lost'")[0]
        self.assertEqual(e2e.rows(db, "SELECT COUNT(*) AS n FROM counters WHERE dispatch_id = ? "
                                      "AND replay_pass = ?", (lost["dispatch_id"],
                                                              lost["replay_pass"]))[0]["n"], 0)
        self.assertEqual(e2e.rows(db, "SELECT counter_passes_lost FROM run")[0]
                         ["counter_passes_lost"], 1)
        with open(os.path.join(self.tmp, "out", "lost_results.json")) as f:
            doc = json.load(f)
        self.assertEqual(sum(1 for p in doc["passes"] if p["counter_status"] == "lost"), 1)
        self.assertEqual(doc["summary"]["counter_passes_lost"], 1)
        with open(os.path.join(self.tmp, "out", "lost_counter_collection_wide.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(sum(int(row["Counter_Passes_Lost"]) for row in rows), 1)


if __name__ == "__main__":
    e2e.main()
