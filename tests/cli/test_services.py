#!/usr/bin/env python3
"""Per-pass services on the command line (issue 11, item 3), end to end on the host device:
--pc-sampling, --sass-metrics / --source-counters, --pm-sampling and --timing-pass each add a pass
of their own after the counter passes, the per-instruction ones profile each kernel's first
launch only unless a filter says otherwise, and bad input is one line naming the fix."""

import csv
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kreplay_e2e as e2e  # noqa: E402


class Services(e2e.KreplayTestCase):
    def test_each_service_gets_a_pass_of_its_own_after_the_counters(self):
        r = self.sample("--pmc", "ops", "--pc-sampling", "--pc-sampling-period", "5",
                        "--source-counters", "--timing-pass")
        notes = [l for l in r.kreplay_lines if "first launch only" in l]
        self.assertEqual(len(notes), 1, str(r))
        db = self.db_of(r)
        # First launch of each of the two kernels: counters, timing, PC sampling, SASS metrics.
        selected = e2e.rows(db, "SELECT dispatch_id, passes_executed FROM dispatches "
                                "WHERE outcome = 'replayed'")
        self.assertEqual([d["passes_executed"] for d in selected], [4, 4], str(r))
        counted = e2e.rows(db, "SELECT DISTINCT replay_pass FROM counters")
        self.assertEqual([c["replay_pass"] for c in counted], [0])
        lines = {l.split(": ")[0].replace(e2e.TAG, "").strip(): l for l in r.kreplay_lines
                 if " records from " in l}
        self.assertIn("pc_sampling", lines, str(r))
        self.assertIn("sass_metrics", lines, str(r))
        for name in ("pc_sampling", "sass_metrics"):
            self.assertRegex(lines[name], r": [1-9]\d* records from 2 passes$", str(r))
            self.assertNotIn("collected nothing", lines[name])

    def test_sqlite_tables_and_views(self):
        r = self.sample("--pc-sampling", "--pc-sampling-period", "5", "--source-counters",
                        "--pm-sampling", "pm__bytes_read,pm__ops", "--pm-sampling-interval", "500")
        db = self.db_of(r)
        replayed = e2e.rows(db, "SELECT d.dispatch_id, k.mangled_name FROM dispatches d JOIN "
                                "kernels k USING (app_pass, kernel_id) WHERE outcome = 'replayed' "
                                "ORDER BY d.dispatch_id")
        self.assertEqual([d["mangled_name"] for d in replayed],
                         [e2e.SCALE_ADD_MANGLED, e2e.SUM_REDUCE_MANGLED], str(r))
        # Each service on its own pass: PC sampling 0, SASS metrics 1, PM sampling 2.
        for table, want in (("pc_samples", 0), ("sass_metrics", 1), ("pm_samples", 2)):
            got = e2e.rows(db, "SELECT DISTINCT replay_pass FROM {}".format(table))
            self.assertEqual([g["replay_pass"] for g in got], [want], table)
        # scale_add's first launch: n = 1000 threads do one load, one store and count_ops(2)
        # (samples/host_app/main.cpp), so 4n + 1 thread-level executions with the atomic.
        first = replayed[0]["dispatch_id"]
        n = e2e.rows(db, "SELECT SUM(value) AS v FROM sass_metrics WHERE dispatch_id = ? AND "
                         "metric = 'smsp__sass_thread_inst_executed'", (first,))[0]["v"]
        self.assertEqual(n, 4 * 1000 + 1)
        # Every instruction a service named is in `sass`, with its source line in main.cpp.
        missing = e2e.rows(db, "SELECT COUNT(*) AS n FROM sass_metrics m LEFT JOIN sass s "
                               "USING (app_pass, agent_id, function, pc_offset) "
                               "WHERE s.instruction IS NULL")[0]["n"]
        self.assertEqual(missing, 0)
        lines = e2e.rows(db, "SELECT source_file, source_line, instruction FROM sass "
                             "WHERE function = ? ORDER BY pc_offset", (e2e.SCALE_ADD_MANGLED,))
        self.assertTrue(all(l["source_file"].endswith("host_app/main.cpp") for l in lines), lines)
        self.assertIn("FFMA", [l["instruction"] for l in lines])
        # The views sum per line and per kernel.
        by_kernel = e2e.rows(db, "SELECT value FROM sass_metrics_by_kernel WHERE kernel_id = "
                                 "(SELECT kernel_id FROM dispatches WHERE dispatch_id = ?) AND "
                                 "metric = 'smsp__sass_thread_inst_executed'", (first,))
        self.assertEqual([b["value"] for b in by_kernel], [4 * 1000 + 1])
        by_line = e2e.rows(db, "SELECT SUM(value) AS v FROM sass_metrics_by_line WHERE kernel_id = "
                               "(SELECT kernel_id FROM dispatches WHERE dispatch_id = ?) AND "
                               "metric = 'smsp__sass_thread_inst_executed'", (first,))
        self.assertEqual(by_line[0]["v"], 4 * 1000 + 1)
        samples = e2e.rows(db, "SELECT SUM(samples) AS n FROM pc_samples WHERE dispatch_id = ?",
                           (first,))[0]["n"]
        self.assertEqual(samples, (1000 * (8 + 4 + 2) + 16) // 32)
        self.assertEqual(e2e.rows(db, "SELECT SUM(samples) AS n FROM pc_samples_by_kernel "
                                      "WHERE kernel_id = (SELECT kernel_id FROM dispatches "
                                      "WHERE dispatch_id = ?)", (first,))[0]["n"], samples)
        # PM samples over time: every load of x plus the atomic's 4 bytes.
        pm = e2e.rows(db, "SELECT dispatch_id, timestamp_ns, value FROM pm_samples "
                          "WHERE metric = 'pm__bytes_read' ORDER BY dispatch_id, timestamp_ns")
        self.assertEqual(sum(p["value"] for p in pm if p["dispatch_id"] == first), 4 * 1000 + 4)
        self.assertGreater(len([p for p in pm if p["dispatch_id"] == first]), 1)

    def test_json_carries_the_same_records(self):
        r = self.sample("--pc-sampling", "--sass-metrics", "smsp__sass_inst_executed",
                        "--output-format", "sqlite,json")
        db = self.db_of(r)
        with open(self.one_file(self.tmp, "*_results.json", r)) as f:
            doc = json.load(f)
        got = doc["service_samples"]
        for service, table, column in (("pc_sampling", "pc_samples", "samples"),
                                       ("sass_metrics", "sass_metrics", "value")):
            mine = sorted((x["dispatch_id"], x["replay_pass"], x["pc_offset"], x["name"],
                           x["value"]) for x in got if x["service"] == service)
            name = "stall_reason" if service == "pc_sampling" else "metric"
            rows = sorted((x["dispatch_id"], x["replay_pass"], x["pc_offset"], x[name],
                           float(x[column])) for x in e2e.rows(db, "SELECT * FROM " + table))
            self.assertTrue(mine, service)
            self.assertEqual(mine, rows, service)
        for x in got:
            self.assertTrue(x["source_file"].endswith("host_app/main.cpp"), x)
            self.assertGreater(x["source_line"], 0, x)

    def test_perfetto_shows_pm_samples_as_counter_tracks(self):
        r = self.sample("--pm-sampling", "pm__bytes_read", "--pm-sampling-interval", "500",
                        "--output-format", "sqlite,perfetto")
        with open(self.one_file(self.tmp, "*_trace.json", r)) as f:
            trace = json.load(f)
        pm = [e for e in trace["traceEvents"] if e.get("name") == "PM pm__bytes_read"]
        self.assertTrue(pm, str(r))
        self.assertTrue(all(e["ph"] == "C" for e in pm))
        series = {k for e in pm for k in e["args"]}
        self.assertEqual(len(series), 2, series)  # one per kernel: scale_add and sum_reduce
        db = self.db_of(r)
        total = e2e.rows(db, "SELECT SUM(value) AS v FROM pm_samples")[0]["v"]
        self.assertEqual(sum(v for e in pm for v in e["args"].values()), total)

    def test_csv_has_a_file_of_its_own_only_with_services(self):
        r = self.sample("--pc-sampling", "--output-format", "sqlite,csv")
        with open(self.one_file(self.tmp, "*_pass_services.csv", r)) as f:
            rows = list(csv.DictReader(f))
        db = self.db_of(r)
        table = e2e.rows(db, "SELECT dispatch_id, replay_pass, pc_offset, stall_reason, samples "
                             "FROM pc_samples")
        self.assertTrue(rows)
        self.assertEqual(sorted((int(x["Dispatch_Id"]), int(x["Replay_Pass"]), int(x["Pc_Offset"]),
                                 x["Name"], float(x["Value"])) for x in rows),
                         sorted((t["dispatch_id"], t["replay_pass"], t["pc_offset"],
                                 t["stall_reason"], float(t["samples"])) for t in table))
        self.assertTrue(all(x["Service"] == "pc_sampling" for x in rows))
        self.assertTrue(all(x["Source_File"].endswith("host_app/main.cpp") for x in rows))
        plain = os.path.join(self.tmp, "plain")
        os.mkdir(plain)
        self.sample("--pmc", "ops", "--output-format", "csv", cwd=plain)
        self.assertEqual(e2e.find_files(plain, "*_pass_services.csv"), [])

    def test_input_file_jobs_select_services_where_they_sit(self):
        path = os.path.join(self.tmp, "jobs.yaml")
        with open(path, "w") as f:
            f.write("job_replay_mode: kernel\n"
                    "jobs:\n"
                    "  - pc_sampling: true\n"
                    "    pc_sampling_period: 5\n"
                    "  - pmc: [ops]\n"
                    "  - sass_metrics: [smsp__sass_thread_inst_executed]\n")
        r = self.sample("-i", path)
        db = self.db_of(r)
        for table, want in (("pc_samples", 0), ("counters", 1), ("sass_metrics", 2)):
            got = e2e.rows(db, "SELECT DISTINCT replay_pass FROM {}".format(table))
            self.assertEqual([g["replay_pass"] for g in got], [want], table)
        # Per-instruction services without a filter: each kernel's first launch, as on the
        # command line, said once.
        self.assertEqual(len([l for l in r.kreplay_lines if "first launch only" in l]), 1, str(r))
        self.assertEqual(e2e.rows(db, "SELECT COUNT(*) AS n FROM dispatches WHERE "
                                      "passes_executed = 3")[0]["n"], 2)
        # A job's own iteration range selects other launches: the first two of each kernel.
        with open(path, "a") as f:
            f.write("    kernel_iteration_range: \"[1-2]\"\n")
        r = self.sample("-i", path, "-d", "ranged")
        self.assertEqual([l for l in r.kreplay_lines if "first launch only" in l], [])
        db = self.db_of(r, os.path.join(self.tmp, "ranged"))
        self.assertEqual(e2e.rows(db, "SELECT COUNT(*) AS n FROM dispatches WHERE "
                                      "passes_executed = 3")[0]["n"], 4)
        r = self.kreplay("-i", path, "--pc-sampling", "--", e2e.SAMPLE_APP)
        self.assert_one_line_error(r, "--pc-sampling", "input file")

    def test_a_position_and_a_filter(self):
        r = self.sample("--pmc", "ops", "--pmc", "launches", "--pm-sampling", "pm__ops",
                        "--pm-sampling-pass-position", "1", "--kernel-include-regex", "scale_add",
                        "--launch-count", "2")
        self.assertEqual([l for l in r.kreplay_lines if "first launch only" in l], [])
        db = self.db_of(r)
        self.assertEqual([d["passes_executed"] for d in e2e.rows(
            db, "SELECT passes_executed FROM dispatches WHERE outcome = 'replayed'")], [3, 3])
        # The counter groups are on passes 0 and 2: PM sampling sits between them.
        passes = e2e.rows(db, "SELECT DISTINCT replay_pass FROM counters ORDER BY replay_pass")
        self.assertEqual([p["replay_pass"] for p in passes], [0, 2])
        pm = [l for l in r.kreplay_lines if l.replace(e2e.TAG, "").strip().startswith("pm_sampling:")]
        self.assertEqual(len(pm), 1, str(r))
        self.assertRegex(pm[0], r"records from 2 passes$")

    def test_one_service_alone_runs_once_per_launch(self):
        r = self.sample("--sass-metrics", "smsp__sass_inst_executed", "--kernel-iteration-range",
                        "1-2")
        db = self.db_of(r)
        self.assertEqual(e2e.rows(db, "SELECT COUNT(*) AS n FROM dispatches WHERE outcome = "
                                      "'replayed'")[0]["n"], 0)
        self.assertEqual(e2e.rows(db, "SELECT COUNT(*) AS n FROM counters")[0]["n"], 0)
        sass = [l for l in r.kreplay_lines if " records from " in l]
        self.assertEqual(len(sass), 1, str(r))
        self.assertRegex(sass[0], r"sass_metrics: [1-9]\d* records from 4 passes$")

    def test_range_replay_runs_each_service_launch_by_launch(self):
        # The same launches in kernel and in range replay: every service's values per dispatch
        # are the same, on the same passes (counters on the range's own pass 0, then PC sampling,
        # SASS metrics, PM sampling), and the run says it was range replay.
        args = ("--pmc", "ops", "--pc-sampling", "--pc-sampling-period", "5", "--source-counters",
                "--pm-sampling", "pm__ops", "--pm-sampling-interval", "500", "--launch-count", "4")
        got = {}
        for mode in ("kernel", "range"):
            r = self.sample(*args, "--replay-mode", mode, "-d", mode)
            db = self.db_of(r, os.path.join(r.cwd, mode))
            self.assertEqual(e2e.rows(db, "SELECT replay_mode FROM run")[0]["replay_mode"], mode)
            self.assertFalse([l for l in r.kreplay_lines if "not collected" in l], str(r))
            got[mode] = {
                t: [tuple(x.values()) for x in e2e.rows(db, q)]
                for t, q in (
                    ("pc", "SELECT dispatch_id, replay_pass, function, pc_offset, stall_reason, "
                           "samples FROM pc_samples ORDER BY 1, 2, 3, 4, 5"),
                    ("sass", "SELECT dispatch_id, replay_pass, function, pc_offset, metric, value "
                             "FROM sass_metrics ORDER BY 1, 2, 3, 4, 5"),
                    ("pm", "SELECT dispatch_id, replay_pass, metric, value FROM pm_samples "
                           "ORDER BY 1, 2, 3, 4"),
                    ("counters", "SELECT dispatch_id, replay_pass, value FROM counters "
                                 "ORDER BY 1, 2"))}
        for table in ("pc", "sass", "pm", "counters"):
            self.assertTrue(got["kernel"][table], table)
            self.assertEqual(got["range"][table], got["kernel"][table], table)
        self.assertEqual({row[1] for row in got["range"]["pc"]}, {1})
        self.assertEqual({row[1] for row in got["range"]["counters"]}, {0})

    def test_range_replay_times_the_first_pass_when_only_services_run(self):
        r = self.sample("--source-counters", "--replay-mode", "range", "--launch-count", "2")
        db = self.db_of(r)
        sass = e2e.rows(db, "SELECT DISTINCT replay_pass FROM sass_metrics")
        self.assertEqual([s["replay_pass"] for s in sass], [1], str(r))
        self.assertFalse([l for l in r.kreplay_lines if "not collected" in l], str(r))

    def test_lost_passes_are_said_once_and_counted(self):
        # Every PC-sampling pass lost when read (as CUDA PC sampling after counter passes): one
        # warning for the reason, not one per launch; the run's tally counts every lost pass and
        # the other services still collect.
        r = self.sample("--pmc", "ops", "--pc-sampling", "--source-counters",
                        "--kernel-include-regex", ".",
                        env={"KREPLAY_HOST_FAIL_SERVICE_PASSES": "pc_sampling"})
        lost = [l for l in r.kreplay_lines if "PC sampling could not be read" in l]
        self.assertEqual(len(lost), 1, str(r))
        self.assertIn("said once for this reason", lost[0])
        self.assertIn("KREPLAY_HOST_FAIL_SERVICE_PASSES", lost[0])
        db = self.db_of(r)
        replayed = e2e.rows(db, "SELECT COUNT(*) AS n FROM dispatches WHERE outcome = 'replayed'")
        n = replayed[0]["n"]
        self.assertGreater(n, 1, str(r))
        tally = [l for l in r.kreplay_lines if "pc_sampling:" in l and " records from " in l]
        self.assertEqual(len(tally), 1, str(r))
        self.assertRegex(tally[0], r"pc_sampling: 0 records from 0 passes; %d passes collected "
                                   r"nothing: the host device lost this pass" % n)
        self.assertEqual(e2e.rows(db, "SELECT COUNT(*) AS n FROM pc_samples")[0]["n"], 0)
        self.assertGreater(e2e.rows(db, "SELECT COUNT(*) AS n FROM sass_metrics")[0]["n"], 0)

    def test_summary_names_the_top_instructions(self):
        r = self.sample("--pc-sampling", "--source-counters", "--summary")
        top = [l for l in r.stderr.splitlines() if "Top instructions of " in l]
        scale = [l for l in top if "scale_add" in l]
        self.assertEqual(len(scale), 1, str(r))
        # scale_add (samples/host_app/main.cpp): the load on line 54 costs the most cycles, the
        # two counted operations on line 55 execute the most.
        self.assertRegex(scale[0], r"by PC samples: main\.cpp:54 LDG\.E\.32 \(\d+%\)")
        self.assertRegex(scale[0], r"by smsp__sass_inst_executed: main\.cpp:55 FFMA \(\d+%\)")

    def test_list_avail_lists_what_each_service_collects(self):
        r = self.kreplay_ok("--list-avail", "--chip", "HOSTDEV")
        lines = r.stdout.splitlines()
        for title in ("SASS metrics (--sass-metrics; * = --source-counters)",
                      "PM sampling metrics (--pm-sampling)",
                      "PC sampling stall reasons (--pc-sampling)"):
            self.assertTrue(any(l.startswith("# host device: ") and l.endswith(title)
                                for l in lines), r.stdout)
        names = {l.split()[0] for l in lines if l and not l.startswith("#")}
        for name in ("smsp__sass_inst_executed*", "pm__bytes_read", "long_scoreboard"):
            self.assertIn(name, names, r.stdout)

    def test_bad_input_is_one_line(self):
        r = self.kreplay("--pc-sampling-period", "7", "--", e2e.SAMPLE_APP)
        self.assert_one_line_error(r, "--pc-sampling-period", "add --pc-sampling")
        r = self.kreplay("--pmc", "ops", "--pc-sampling", "--replay-mode", "application", "--",
                         e2e.SAMPLE_APP)
        self.assert_one_line_error(r, "--pc-sampling", "use --replay-mode kernel or range")
        r = self.kreplay("--pmc", "ops", "--pc-sampling", "--pc-sampling-pass-position", "0",
                         "--replay-mode", "range", "--", e2e.SAMPLE_APP)
        self.assert_one_line_error(r, "--pc-sampling-pass-position 0", "position of 1 or more")
        # A metric the device does not have: the tool stops the application before it runs.
        r = self.kreplay("--sass-metrics", "smsp__sass_inst_executd", "--", e2e.SAMPLE_APP)
        self.assert_one_line_error(r, "smsp__sass_inst_executd", "did you mean")
        self.assertNotIn("sample-app: OK", r.stdout)


if __name__ == "__main__":
    unittest.main()
