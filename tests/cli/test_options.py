#!/usr/bin/env python3
"""Item 1: the options of the kreplay command, end to end on the host device.

Each test runs kreplay on kreplay-sample-app (10 launches: 6 scale_add on stream A, 4 sum_reduce on
stream B; host counters, 2 per pass) and checks the outputs with sqlite3 / csv / json.
"""

import json
import os
import re
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kreplay_e2e as e2e  # noqa: E402

# Grid x block of the sample app's kernels (samples/host_app/main.cpp).
THREADS = {"scale_add": 8 * 128, "sum_reduce": 16 * 256}
BLOCKS = {"scale_add": 8, "sum_reduce": 16}


def short(name):
    return name.split("(")[0]


class PmcGroups(e2e.KreplayTestCase):
    def test_two_groups_replay_every_launch_once_per_group(self):
        r = self.sample("--pmc", "threads_launched", "bytes_written", "--pmc", "launches",
                        "--replay-mode", "kernel", "-d", "out")
        db = self.db_of(r, os.path.join(self.tmp, "out"))
        run = e2e.rows(db, "SELECT * FROM run")
        self.assertEqual(len(run), 1)
        self.assertEqual(run[0]["replay_mode"], "kernel")
        self.assertEqual(json.loads(run[0]["counter_names"]),
                         ["threads_launched", "bytes_written", "launches"])

        dispatches = e2e.rows(db, "SELECT d.*, k.demangled_name FROM dispatches d JOIN kernels k "
                                  "USING (app_pass, kernel_id) ORDER BY dispatch_id")
        # one row per logical launch, in launch order
        self.assertEqual([short(d["demangled_name"]) for d in dispatches], e2e.SAMPLE_ORDER)
        for d in dispatches:
            self.assertEqual(d["outcome"], "replayed", d)
            self.assertEqual(d["passes_requested"], 2, d)
            self.assertEqual(d["passes_executed"], 2, d)
            self.assertGreater(d["bytes_snapshotted"], 0, d)
            self.assertEqual(d["app_pass"], 0, d)

        # passes: one row per executed pass, replay_pass 0..1
        for d in dispatches:
            passes = e2e.rows(db, "SELECT replay_pass, start_ns, end_ns FROM passes "
                                  "WHERE dispatch_id = ? ORDER BY replay_pass", (d["dispatch_id"],))
            self.assertEqual([p["replay_pass"] for p in passes], [0, 1], d)
            for p in passes:
                self.assertLessEqual(p["start_ns"], p["end_ns"])
            self.assertLessEqual(passes[0]["end_ns"], passes[1]["start_ns"],
                                 "pass 1 ran before pass 0 ended")

        # counters: pass 0 collected group 1, pass 1 collected group 2, with the values the kernel
        # really produced on every pass
        for d in dispatches:
            kernel = short(d["demangled_name"])
            got = {(c["replay_pass"], c["name"]): c["value"] for c in e2e.rows(
                db, "SELECT replay_pass, name, value FROM counters WHERE dispatch_id = ?",
                (d["dispatch_id"],))}
            self.assertEqual(sorted(got), [(0, "bytes_written"), (0, "threads_launched"),
                                           (1, "launches")], d)
            self.assertEqual(got[(0, "threads_launched")], THREADS[kernel])
            self.assertEqual(got[(1, "launches")], 1)
            self.assertGreater(got[(0, "bytes_written")], 0)

        t = e2e.tally(r)
        self.assertEqual(len(t), 1, str(r))
        self.assertEqual(t[0], {"launches": 10, "replayed": 10, "passes": 20, "declined": 0,
                                "declined_by_reason": "", "not_selected": 0})

    def test_one_group_is_not_replayed(self):
        r = self.sample("--pmc", "threads_launched", "blocks_launched")
        db = self.db_of(r)
        dispatches = e2e.rows(db, "SELECT outcome, passes_executed, bytes_snapshotted "
                                  "FROM dispatches")
        self.assertEqual(len(dispatches), 10)
        for d in dispatches:
            self.assertNotEqual(d["outcome"], "replayed", d)
            self.assertEqual(d["passes_executed"], 1, d)
            self.assertEqual(d["bytes_snapshotted"], 0, "a single pass needs no snapshot")
        passes = e2e.rows(db, "SELECT DISTINCT replay_pass FROM counters")
        self.assertEqual(passes, [{"replay_pass": 0}])
        self.assertEqual(e2e.rows(db, "SELECT count(*) AS n FROM counters")[0]["n"], 20)
        self.assertEqual(e2e.tally(r)[0]["replayed"], 0)

    def test_metrics_are_split_into_passes(self):
        # 3 metrics, 2 counters per pass on the host device: 2 passes, without --replay-mode
        r = self.sample("--metrics", "threads_launched,blocks_launched,ops")
        db = self.db_of(r)
        self.assertEqual(e2e.rows(db, "SELECT replay_mode FROM run")[0]["replay_mode"], "range")
        for d in e2e.rows(db, "SELECT dispatch_id, passes_executed FROM dispatches"):
            self.assertEqual(d["passes_executed"], 2)
            by_pass = {}
            for c in e2e.rows(db, "SELECT replay_pass, name FROM counters WHERE dispatch_id = ?",
                              (d["dispatch_id"],)):
                by_pass.setdefault(c["replay_pass"], set()).add(c["name"])
            self.assertEqual(by_pass, {0: {"threads_launched", "blocks_launched"}, 1: {"ops"}})

    def test_metrics_with_a_smaller_pass_take_more_passes(self):
        r = self.sample("--metrics", "threads_launched,blocks_launched,ops",
                        env={"KREPLAY_HOST_COUNTERS_PER_PASS": "1"})
        db = self.db_of(r)
        self.assertEqual({d["passes_executed"] for d in e2e.rows(
            db, "SELECT passes_executed FROM dispatches")}, {3})
        self.assertEqual(len(e2e.rows(db, "SELECT * FROM dispatches")), 10)

    def test_beta_flag_is_accepted(self):
        r = self.sample("--pmc", "threads_launched", "--pmc", "ops", "--replay-mode", "kernel",
                        "--kernel-replay-beta-enabled")
        db = self.db_of(r)
        self.assertEqual({d["passes_executed"] for d in e2e.rows(
            db, "SELECT passes_executed FROM dispatches")}, {2})


class ApplicationReplay(e2e.KreplayTestCase):
    def test_one_run_per_group_and_one_merged_database(self):
        r = self.kreplay("--pmc", "threads_launched", "--pmc", "ops", "--replay-mode",
                         "application", "-d", "out", "--", e2e.SAMPLE_APP)
        self.assertEqual(r.rc, 0, str(r))
        # the application ran twice, and checked itself both times
        self.assertEqual(r.stdout.count("sample-app: OK"), 2, str(r))
        out = os.path.join(self.tmp, "out")
        pass_dbs = [self.one_file(os.path.join(out, "pass_%d" % k), "*_results.db", r)
                    for k in (1, 2)]
        for k in (1, 2):
            self.assertTrue(os.path.isdir(os.path.join(out, "pass_%d" % k)), "pass_%d/" % k)
        merged = [p for p in e2e.find_files(out, "*_results.db") if "/pass_" not in p]
        self.assertEqual(len(merged), 1, "expected one merged database in out/: {}\n{}".format(
            merged, r))
        merged = merged[0]
        self.assertTrue(any(merged in line or os.path.relpath(merged, self.tmp) in line
                            for line in r.kreplay_lines if "one database" in line),
                        "no line names the merged database\n{}".format(r))

        run = e2e.rows(merged, "SELECT app_pass, app_pass_count, exit_code, replay_mode FROM run "
                               "ORDER BY app_pass")
        self.assertEqual([(x["app_pass"], x["app_pass_count"], x["exit_code"]) for x in run],
                         [(1, 2, 0), (2, 2, 0)])
        for table in ("devices", "kernels", "dispatches", "passes", "counters", "allocations"):
            passes = e2e.rows(merged, "SELECT app_pass, count(*) AS n FROM {} GROUP BY app_pass "
                                      "ORDER BY app_pass".format(table))
            self.assertEqual([p["app_pass"] for p in passes], [1, 2],
                             "{}: every row knows its app_pass".format(table))
        for app_pass, counter in ((1, "threads_launched"), (2, "ops")):
            names = e2e.rows(merged, "SELECT DISTINCT name, replay_pass FROM counters "
                                     "WHERE app_pass = ?", (app_pass,))
            self.assertEqual(names, [{"name": counter, "replay_pass": 0}])
            n = e2e.rows(merged, "SELECT count(*) AS n FROM dispatches WHERE app_pass = ?",
                         (app_pass,))[0]["n"]
            self.assertEqual(n, 10)
        # nothing is replayed in application replay
        self.assertEqual(e2e.rows(merged, "SELECT max(passes_executed) AS m FROM dispatches")[0]
                         ["m"], 1)
        # each pass_k database holds its own run only
        for k, db in enumerate(pass_dbs, start=1):
            self.assertEqual([x["app_pass"] for x in e2e.rows(db, "SELECT app_pass FROM run")], [k])
        self.assertEqual(len(e2e.tally(r)), 2, str(r))
        # the merged file's views span both runs: app_pass 1 has threads_launched, 2 has ops
        view = e2e.rows(merged, "SELECT app_pass, threads_launched, ops FROM dispatch_counters")
        self.assertEqual(len(view), 20)
        for row in view:
            self.assertEqual((row["threads_launched"] is None, row["ops"] is None),
                             (row["app_pass"] == 2, row["app_pass"] == 1), row)

    def merged_and_passes(self, r, top):
        dbs = e2e.find_files(top, "*_results.db")
        merged = [p for p in dbs if "/pass_" not in p]
        per_pass = [p for p in dbs if "/pass_" in p]
        self.assertEqual(len(merged), 1, "one merged database: {}\n{}".format(dbs, r))
        self.assertEqual(len(per_pass), 2, "one database per run: {}\n{}".format(dbs, r))
        self.assertEqual([x["app_pass"] for x in e2e.rows(merged[0], "SELECT app_pass FROM run "
                                                                     "ORDER BY app_pass")], [1, 2])
        return merged[0], per_pass

    def test_absolute_output_file(self):
        # An absolute -o ignores -d; each run must still get its own pass_k place, and the
        # merged database goes where a single run's would.
        base = os.path.join(self.tmp, "abs", "res")
        r = self.kreplay("--pmc", "threads_launched", "--pmc", "ops", "--replay-mode",
                         "application", "-o", base, "--", e2e.SAMPLE_APP)
        self.assertEqual(r.rc, 0, str(r))
        self.assertEqual([l for l in r.kreplay_lines if " error:" in l], [], str(r))
        self.assertFalse(any("exists" in l for l in r.kreplay_lines),
                         "the second run collided with the first\n{}".format(r))
        merged, _ = self.merged_and_passes(r, os.path.join(self.tmp, "abs"))
        self.assertEqual(merged, base + "_results.db")

    def test_ppid_in_the_directory(self):
        # %ppid% is kreplay's pid for the application: the merged database must land in the same
        # directory as pass_1/ and pass_2/
        r = self.kreplay("--pmc", "threads_launched", "--pmc", "ops", "--replay-mode",
                         "application", "-d", "out_%ppid%", "--", e2e.SAMPLE_APP)
        self.assertEqual(r.rc, 0, str(r))
        tops = [d for d in os.listdir(self.tmp) if d.startswith("out_")]
        self.assertEqual(len(tops), 1, "pass_k directories and the merged database are in "
                                       "different places: {}\n{}".format(tops, r))
        merged, _ = self.merged_and_passes(r, os.path.join(self.tmp, tops[0]))
        for k in (1, 2):
            self.assertTrue(os.path.isdir(os.path.join(self.tmp, tops[0], "pass_%d" % k)))


class OutputOptions(e2e.KreplayTestCase):
    def test_every_format(self):
        r = self.sample("--pmc", "threads_launched", "--pmc", "ops",
                        "--output-format", "sqlite,csv,json,perfetto", "-d", "out", "-o", "res")
        out = os.path.join(self.tmp, "out")
        for name in ("res_results.db", "res_counter_collection.csv",
                     "res_counter_collection_wide.csv", "res_results.json", "res_trace.json"):
            path = os.path.join(out, name)
            self.assertTrue(os.path.isfile(path), "{} missing\n{}".format(name, r))
            self.assertGreater(os.path.getsize(path), 0, name)
        self.assertEqual(sorted(e2e.output_lines(r)), sorted(
            os.path.join(out, n) for n in os.listdir(out)), str(r))

    def test_repeated_output_format_flags_add_up(self):
        r = self.sample("--output-format", "csv", "--output-format", "json", "--pmc", "ops")
        self.one_file(self.tmp, "*_counter_collection.csv", r)
        self.one_file(self.tmp, "*_results.json", r)
        self.assertEqual(e2e.find_files(self.tmp, "*_results.db"), [])

    def test_default_names_are_hostname_slash_pid(self):
        r = self.sample("--pmc", "ops")
        db = self.db_of(r)
        pid = e2e.rows(db, "SELECT pid FROM run")[0]["pid"]
        self.assertEqual(db, os.path.join(self.tmp, socket.gethostname(),
                                          "{}_results.db".format(pid)))

    def test_templates_in_directory_and_file(self):
        env = {"KR_E2E_NAME": "named", "KR_E2E_SUB": "sub"}
        r = self.sample("--pmc", "ops", "-d", "out_%hostname%",
                        "-o", "%q{KR_E2E_NAME}/%env{KR_E2E_SUB}%_%pid%", env=env)
        db = self.db_of(r)
        pid = e2e.rows(db, "SELECT pid FROM run")[0]["pid"]
        self.assertNotEqual(pid, 0)
        expected = os.path.join(self.tmp, "out_" + socket.gethostname(), "named",
                                "sub_{}_results.db".format(pid))
        self.assertEqual(db, expected)
        self.assertIn(expected, e2e.output_lines(r))
        # %pid% is the application's pid, and the run records the hostname
        self.assertEqual(e2e.rows(db, "SELECT hostname FROM run")[0]["hostname"],
                         socket.gethostname())

    def test_short_templates_and_literal_percent(self):
        r = self.sample("--pmc", "ops", "-d", "o", "-o", "%h-%p-100%%")
        db = self.db_of(r)
        pid = e2e.rows(db, "SELECT pid FROM run")[0]["pid"]
        self.assertEqual(os.path.basename(db),
                         "{}-{}-100%_results.db".format(socket.gethostname(), pid))

    def test_kernel_trace(self):
        r = self.sample("--kernel-trace", "--pmc", "threads_launched", "--pmc", "ops",
                        "--output-format", "sqlite,csv")
        db = self.db_of(r)
        trace = e2e.read_csv(self.one_file(self.tmp, "*_kernel_trace.csv", r))
        self.assertEqual(len(trace), 20, "one row per executed pass")
        self.assertEqual(sorted(int(t["Replay_Pass"]) for t in trace), [0] * 10 + [1] * 10)
        self.assertEqual(len(e2e.rows(db, "SELECT * FROM passes")), 20)

    def test_kernel_trace_without_counters_records_every_launch(self):
        r = self.sample("--kernel-trace", "--output-format", "sqlite,csv")
        db = self.db_of(r)
        self.assertEqual(len(e2e.rows(db, "SELECT * FROM dispatches")), 10)
        self.assertEqual(len(e2e.rows(db, "SELECT * FROM passes")), 10)
        self.assertEqual(len(e2e.read_csv(self.one_file(self.tmp, "*_kernel_trace.csv", r))), 10)

    def test_no_kernel_trace_file_without_the_flag(self):
        r = self.sample("--pmc", "ops", "--output-format", "csv")
        self.assertEqual(e2e.find_files(self.tmp, "*_kernel_trace.csv"), [], str(r))


class Summary(e2e.KreplayTestCase):
    def test_summary_table_per_kernel_on_stderr(self):
        r = self.sample("--summary", "--pmc", "threads_launched", "--pmc", "ops")
        self.assertNotIn("Kernel summary", r.stdout)
        lines = r.kreplay_lines
        head = [i for i, l in enumerate(lines) if "Kernel summary:" in l]
        self.assertEqual(len(head), 1, str(r))
        self.assertIn("2 kernel(s), 10 launch(es)", lines[head[0]])
        def cells(line):  # columns are separated by two blanks or more
            return re.split(r"\s{2,}", line[len(e2e.TAG):].strip())

        header = cells(lines[head[0] + 1])
        self.assertEqual(header[:8], ["Time(%)", "Total", "Avg", "Min", "Max", "Launches",
                                      "Passes", "Spread"])
        self.assertEqual(header[8:10], ["threads_launched", "ops"])
        self.assertEqual(header[-1], "Kernel")
        table = {}
        for line in lines[head[0] + 2:head[0] + 4]:
            row = cells(line)
            self.assertEqual(len(row), len(header), line)
            table[short(row[-1])] = row
        self.assertEqual(sorted(table), ["scale_add", "sum_reduce"], str(r))
        self.assertEqual(table["scale_add"][5:7], ["6", "12"])   # launches, passes
        self.assertEqual(table["sum_reduce"][5:7], ["4", "8"])
        for k in table:  # two timed passes a launch: the largest spread of their durations
            self.assertRegex(table[k][7], r"^\d+\.\d%$")
        self.assertEqual(table["scale_add"][8], str(THREADS["scale_add"]))
        self.assertEqual(table["sum_reduce"][8], str(THREADS["sum_reduce"]))
        self.assertEqual(table["scale_add"][9], "2000")  # 2 operations per element, n = 1000
        shares = [float(table[k][0].rstrip("%")) for k in table]
        self.assertAlmostEqual(sum(shares), 100.0, delta=0.2)
        totals = [l for l in lines if "Totals:" in l]
        self.assertEqual(len(totals), 1, str(r))
        self.assertIn("10 launches, 10 replayed, 0 declined, 0 not selected, 20 passes, "
                      "exit code 0", totals[0])

    def test_summary_without_counters_times_the_kernels(self):
        # no counters: the summary (and the database) still hold each launch's time
        r = self.sample("--summary")
        rows = [l for l in r.kreplay_lines if re.search(r"\s(scale_add|sum_reduce)\(", l)]
        self.assertEqual(len(rows), 2, str(r))
        for line in rows:
            total = re.split(r"\s{2,}", line[len(e2e.TAG):].strip())[1]
            self.assertNotEqual(total, "0 ns", "a kernel that ran took time\n{}".format(r))
        for d in e2e.rows(self.db_of(r), "SELECT start_ns, end_ns FROM dispatches"):
            self.assertGreater(d["start_ns"], 0, d)
            self.assertLess(d["start_ns"], d["end_ns"], d)

    def test_no_summary_without_the_flag(self):
        r = self.sample("--pmc", "ops")
        self.assertFalse(any("Kernel summary" in l for l in r.kreplay_lines), str(r))


class ReplayMemory(e2e.KreplayTestCase):
    def snapshotted(self, mode):
        r = self.sample("--pmc", "threads_launched", "--pmc", "ops", "--replay-memory", mode,
                        "--replay-mode", "kernel", "-d", mode)
        db = self.db_of(r, os.path.join(self.tmp, mode))
        opts = json.loads(e2e.rows(db, "SELECT options FROM run")[0]["options"])
        self.assertEqual(opts.get("replay_memory"), mode)
        return {d["dispatch_id"]: (d["demangled_name"], d["bytes_snapshotted"], d["outcome"])
                for d in e2e.rows(db, "SELECT d.dispatch_id, d.bytes_snapshotted, d.outcome, "
                                      "k.demangled_name FROM dispatches d JOIN kernels k "
                                      "USING (app_pass, kernel_id) ORDER BY dispatch_id")}

    def test_args_snapshots_less_than_all(self):
        every = list(self.snapshotted("all").values())
        args = list(self.snapshotted("args").values())
        self.assertEqual(len(every), 10)
        self.assertEqual(len(args), 10)
        for (name_a, all_bytes, out_a), (name_b, args_bytes, out_b) in zip(every, args):
            self.assertEqual(name_a, name_b)
            self.assertEqual((out_a, out_b), ("replayed", "replayed"))
            self.assertGreater(args_bytes, 0, name_b)
            self.assertLess(args_bytes, all_bytes, "{}: args {} >= all {}".format(
                name_b, args_bytes, all_bytes))


class CacheAndClockControl(e2e.KreplayTestCase):
    # Issue 12: --cache-control all (default) | none reaches the run's metadata in the database
    # and the JSON results, with clock_control none; --clock-control accepts none only.
    def options_of(self, *args, subdir):
        r = self.sample("--pmc", "threads_launched", "--pmc", "ops", "--output-format", "sqlite",
                        "--output-format", "json", "-d", subdir, *args)
        out = os.path.join(self.tmp, subdir)
        db = json.loads(e2e.rows(self.db_of(r, out), "SELECT options FROM run")[0]["options"])
        with open(self.one_file(out, "*_results.json", r)) as f:
            doc = json.load(f)
        self.assertEqual(doc["run"]["options"], db)
        return db

    def test_metadata_records_both(self):
        default = self.options_of(subdir="default")
        self.assertEqual((default.get("cache_control"), default.get("clock_control")),
                         ("all", "none"))
        none = self.options_of("--cache-control", "none", "--clock-control", "none",
                               subdir="none")
        self.assertEqual((none.get("cache_control"), none.get("clock_control")), ("none", "none"))

    def test_check_divergence_is_recorded_and_quiet_for_deterministic_kernels(self):
        off = self.options_of(subdir="off")
        self.assertEqual(off.get("check_divergence"), "false")
        r = self.sample("--pmc", "threads_launched", "--pmc", "ops", "--check-divergence",
                        "-d", "on")
        db = self.db_of(r, os.path.join(self.tmp, "on"))
        on = json.loads(e2e.rows(db, "SELECT options FROM run")[0]["options"])
        self.assertEqual(on.get("check_divergence"), "true")
        # the sample application's kernels are deterministic: no launch is said to diverge
        self.assertFalse(any("left different memory" in l for l in r.kreplay_lines), str(r))

    def test_a_diverging_launch_is_flagged_in_every_output_and_the_summary(self):
        # stamp(z) writes a number that grows with each execution: its two passes differ
        r = self.kreplay_ok("--pmc", "threads_launched", "--pmc", "ops", "--check-divergence",
                            "--summary", "--output-format", "sqlite,csv,json", "-d", "div",
                            "--", e2e.TEST_APP, "--launches", "3", "--stamp")
        self.assertIn("cli-test-app: OK", r.stdout, str(r))
        out = os.path.join(self.tmp, "div")
        db = self.db_of(r, out)
        diverged = e2e.rows(db, "SELECT kernel_name, passes_executed, diverged_passes "
                                "FROM diverged_dispatches")
        self.assertEqual([(d["kernel_name"], d["passes_executed"], d["diverged_passes"])
                          for d in diverged], [("stamp(unsigned int*)", 2, 1)] * 3, str(r))
        checked = e2e.rows(db, "SELECT COUNT(*) AS n FROM dispatches WHERE divergence_checked = 1")
        self.assertEqual(checked[0]["n"], 6)  # bump and stamp, 3 each
        wide = e2e.read_csv(self.one_file(out, "*_counter_collection_wide.csv", r))
        by_kernel = {}
        for row in wide:
            by_kernel.setdefault(row["Kernel_Name"], set()).add(row["Diverged_Passes"])
        self.assertEqual(by_kernel, {"stamp(unsigned int*)": {"1"},
                                     "bump(unsigned int*, unsigned int)": {"0"}}, str(wide))
        with open(self.one_file(out, "*_results.json", r)) as f:
            doc = json.load(f)
        flags = sorted((d["divergence_checked"], d["diverged_passes"]) for d in doc["dispatches"])
        self.assertEqual(flags, [(True, 0)] * 3 + [(True, 1)] * 3)
        line = [l for l in r.kreplay_lines if "Diverged:" in l]
        self.assertEqual(len(line), 1, str(r))
        self.assertIn("3 launch(es) whose passes left different memory", line[0])
        self.assertIn("stamp(unsigned int*) (3 of 3)", line[0])

    def test_clock_control_other_than_none_is_refused_in_one_line(self):
        r = self.kreplay("--clock-control", "base", "--", e2e.SAMPLE_APP)
        self.assert_one_line_error(r, "--clock-control", "never changes clocks on a shared GPU")

    def test_unknown_cache_control_is_refused(self):
        r = self.kreplay("--cache-control", "some", "--", e2e.SAMPLE_APP)
        self.assert_one_line_error(r, "--cache-control", "all or none")


class Discovery(e2e.KreplayTestCase):
    def test_list_avail_without_a_gpu_lists_host_counters(self):
        r = self.kreplay_ok("--list-avail")
        listed = {}
        for line in r.stdout.splitlines():
            if line.startswith("# host device: "):
                break  # the per-pass services' metrics follow (test_services.py checks them)
            if line.startswith("#") or not line.strip():
                continue
            parts = line.split(None, 2)
            self.assertEqual(len(parts), 3, "name, unit, description: {!r}".format(line))
            listed[parts[0]] = parts[2]
        self.assertEqual(sorted(listed), sorted(e2e.HOST_COUNTERS), r.stdout)
        for name, description in listed.items():
            self.assertGreater(len(description.split()), 1, "{} has no description".format(name))
        self.assertIn("2 per pass", r.stdout)

    def test_list_avail_chip_hostdev(self):
        r = self.kreplay_ok("--list-avail", "--chip", "HOSTDEV")
        for name in e2e.HOST_COUNTERS:
            self.assertRegex(r.stdout, r"(?m)^{}\s".format(name))

    def test_list_avail_chip_gh100_offline(self):
        r = self.kreplay("--list-avail", "--chip", "GH100")
        if r.rc != 0 and "built without CUDA" in r.stderr:
            self.skipTest("this kreplay was built without CUDA: " + r.stderr.strip())
        self.assertEqual(r.rc, 0, str(r))
        self.assertRegex(r.stdout, r"(?m)^sm__cycles_elapsed\s", "GH100 metrics not listed")
        self.assertRegex(r.stdout, r"(?m)^dram__bytes_read\s")
        self.assertGreater(len(r.stdout.splitlines()), 100)
        # The per-pass services: SASS metrics from the chip name (default set starred), PM
        # sampling's metrics, and one line for the stall reasons, which need a GPU.
        self.assertRegex(r.stdout, r"(?m)^# chip GH100: \d+ SASS metrics")
        self.assertRegex(r.stdout, r"(?m)^smsp__sass_inst_executed\*\s")
        self.assertRegex(r.stdout, r"(?m)^# PM sampling metrics \(--pm-sampling\)")
        self.assertRegex(r.stdout, r"(?m)^# (chip GH100: \d+ )?PC sampling stall reasons")

    def test_pmc_check_fits(self):
        r = self.kreplay("--pmc-check", "threads_launched", "bytes_written")
        self.assertEqual(r.rc, 0, str(r))
        self.assertIn("fit one pass", r.stdout + r.stderr)

    def test_pmc_check_too_many_says_how_many_passes(self):
        r = self.kreplay("--pmc-check", "threads_launched", "bytes_written", "ops")
        self.assertNotEqual(r.rc, 0, str(r))
        self.assertLess(r.rc, 128, str(r))
        self.assertRegex(r.stdout + r.stderr, r"need 2 passes", str(r))
        r = self.kreplay("--pmc-check", "threads_launched,bytes_written,ops,launches,bytes_read")
        self.assertNotEqual(r.rc, 0, str(r))
        self.assertRegex(r.stdout + r.stderr, r"need 3 passes", str(r))

    def test_pmc_check_unknown_counter(self):
        r = self.kreplay("--pmc-check", "threads_lanched")
        self.assert_one_line_error(r, "threads_lanched", "threads_launched")


class GeneralOptions(e2e.KreplayTestCase):
    def test_version(self):
        r = self.kreplay_ok("--version")
        self.assertRegex(r.stdout.strip(), r"^kreplay \d+\.\d+\.\d+")
        self.assertEqual(r.stderr, "")

    def test_help(self):
        r = self.kreplay_ok("--help")
        self.assertIn("Usage: kreplay [OPTIONS] -- APP [ARGS...]", r.stdout)
        for flag in ("--pmc", "--metrics", "--replay-mode", "--replay-memory",
                     "--kernel-replay-beta-enabled", "--kernel-include-regex",
                     "--kernel-exclude-regex", "--kernel-name", "--kernel-iteration-range",
                     "--launch-skip", "--launch-count", "--output-directory", "--output-file",
                     "--output-format", "--kernel-trace", "--summary", "--input", "--list-avail",
                     "--pmc-check", "--chip", "--log-level", "--quiet", "--version", "--help"):
            self.assertIn(flag, r.stdout)
        for line in r.stdout.splitlines():
            self.assertLessEqual(len(line), 100, "help line over 100 columns: {!r}".format(line))
        self.assertEqual(self.kreplay_ok("-h").stdout, r.stdout)

    def test_quiet_prints_nothing_but_writes_outputs(self):
        r = self.sample("-q", "--pmc", "threads_launched", "--pmc", "ops")
        self.assertEqual(r.kreplay_lines, [], str(r))
        self.assertEqual(len(e2e.rows(self.db_of(r), "SELECT * FROM dispatches")), 10)

    def test_log_level_error_hides_the_tally(self):
        r = self.sample("--log-level", "error", "--pmc", "ops")
        self.assertEqual(r.kreplay_lines, [], str(r))

    def test_log_level_debug_reaches_the_tool(self):
        # launches 2.. are declined (untracked memory); the engine explains each at debug level
        args = ["--pmc", "ops", "--pmc", "threads_launched", "--replay-mode", "kernel", "--",
                e2e.TEST_APP, "--launches", "3",
                "--untracked-from", "2"]
        default = self.kreplay_ok(*(["-d", "a"] + args))
        debug = self.kreplay_ok(*(["--log-level", "debug", "-d", "b"] + args))
        declined = re.compile(r"^==KREPLAY== .*dispatch \d+ declined")
        self.assertEqual([l for l in default.kreplay_lines if declined.match(l)], [], str(default))
        self.assertEqual(len([l for l in debug.kreplay_lines if declined.match(l)]), 2, str(debug))
        self.assertEqual(len(e2e.tally(debug)), 1, str(debug))
        self.assertEqual(json.loads(e2e.rows(self.db_of(debug, os.path.join(self.tmp, "b")),
                                             "SELECT environment FROM run")[0]["environment"])
                         .get("KREPLAY_LOG_LEVEL"), "debug")

    def test_log_level_bad_value(self):
        r = self.kreplay("--log-level", "loud", "--", e2e.SAMPLE_APP)
        self.assert_one_line_error(r, "--log-level", "loud", "warning")
        self.assertEqual(r.stdout, "", "the application must not run")

    def test_quiet_and_log_level_together(self):
        r = self.kreplay("-q", "--log-level", "info", "--", e2e.SAMPLE_APP)
        self.assert_one_line_error(r, "--quiet", "--log-level")


if __name__ == "__main__":
    e2e.main()
