#!/usr/bin/env python3
"""Range replay from the command line (--replay-mode range, --range-markers, input files).

The application is kreplay-cli-test-app with --two-kernels: odd launches are bump(x), even ones
mark(y); both are not idempotent, so the app's own check ("cli-test-app: OK") fails unless every
range was restored between its passes. --read-every S copies a value back every S launches, which
closes a range; --sync-every S synchronizes the stream, which leaves it open;
--profiler A B and --nvtx NAME A B put markers around launches A..B.

- Every launch of a range gets its own counter values, equal to kernel-by-kernel replay's.
- A range is snapshotted once and restored once per further pass.
- Kernel filters apply: unselected launches produce no records; a range with no selected launch
  is not replayed (no snapshot).
- With markers only the launches inside them are profiled; the tally still counts every launch.
- A range of one pass runs without a snapshot and still gives every launch its counters.
- A range stays open across synchronizations that let the host observe nothing (and closes at
  each with KREPLAY_RANGE_SYNC=close); the tally says how many launches each range held.
- Input files accept replay_mode: range and range_markers.
- Bad range options are one clear line.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kreplay_e2e as e2e  # noqa: E402

APP_OK = "cli-test-app: OK"


class RangeCase(e2e.KreplayTestCase):
    def app(self, *args):
        return [e2e.TEST_APP, "--two-kernels"] + [str(a) for a in args]

    def run_app(self, kreplay_args, app_args, directory="out", env=None):
        r = self.kreplay_ok(*(list(kreplay_args) + ["-d", directory, "-o", "run", "--"] +
                              self.app(*app_args)), env=env)
        self.assertIn(APP_OK, r.stdout, "the application's check failed\n{}".format(r))
        return r, os.path.join(self.tmp, directory, "run_results.db")

    def dispatches(self, db):
        return e2e.rows(db, "SELECT d.dispatch_id, d.correlation_id, d.outcome, d.reason, "
                            "d.passes_executed, d.bytes_snapshotted, k.demangled_name AS kernel_name "
                            "FROM dispatches d JOIN kernels k USING (app_pass, kernel_id) "
                            "ORDER BY d.dispatch_id")

    def counters(self, db):
        return {(c["dispatch_id"], c["replay_pass"], c["name"]): c["value"]
                for c in e2e.rows(db, "SELECT dispatch_id, replay_pass, name, value FROM counters")}

    def phases(self, db):
        return e2e.rows(db, "SELECT dispatch_id, phase, after_pass, bytes FROM replay_phases "
                            "ORDER BY start_ns")

    def short(self, name):
        return name.split("(")[0]


class RangeCounters(RangeCase):
    def test_each_launch_has_the_values_kernel_replay_gives(self):
        groups = ["--pmc", "ops", "--pmc", "threads_launched", "--pmc", "bytes_written"]
        rr, range_db = self.run_app(["--replay-mode", "range"] + groups,
                                    ["--launches", 8, "--read-every", 4], "range")
        rk, kernel_db = self.run_app(["--replay-mode", "kernel"] + groups,
                                     ["--launches", 8, "--read-every", 4], "kernel")
        ranged, kerneled = self.counters(range_db), self.counters(kernel_db)
        self.assertEqual(len(ranged), 8 * 3, str(rr))
        self.assertEqual(ranged, kerneled, "range and kernel replay differ\n{}\n{}".format(rr, rk))
        # The two kernels do different work: the values are per launch, not the range's total.
        self.assertEqual(ranged[(1, 0, "ops")], 512)
        self.assertEqual(ranged[(2, 0, "ops")], 1024)
        d = self.dispatches(range_db)
        self.assertEqual([x["dispatch_id"] for x in d], list(range(1, 9)))
        self.assertTrue(all(x["outcome"] == "replayed" and x["passes_executed"] == 3 for x in d))
        self.assertEqual([self.short(x["kernel_name"]) for x in d], ["bump", "mark"] * 4)
        # Every launch keeps its own correlation id.
        self.assertEqual(len({x["correlation_id"] for x in d}), 8)
        self.assertNotIn(0, {x["correlation_id"] for x in d})
        self.assertEqual(e2e.tally(rr), [{"launches": 8, "replayed": 8, "passes": 24,
                                          "declined": 0, "declined_by_reason": "",
                                          "not_selected": 0}])

    def test_a_range_open_when_the_application_exits_is_replayed_at_exit(self):
        # The application returns from main with its last launch not waited for: the range is
        # closed by the tool's exit handler, after the main thread's thread_locals are destroyed
        # (glibc runs those first). Closing it there wrote into freed per-thread lists (the
        # sanitizer tree reported a heap-use-after-free; two cuda-samples aborted on an H100).
        r, db = self.run_app(["--replay-mode", "range", "--pmc", "ops", "--pmc", "threads_launched"],
                             ["--launches", 6, "--exit-with-launch"])
        self.assertNotIn("AddressSanitizer", r.stderr, str(r))
        self.assertIn("exit 1", r.stderr, str(r))
        self.assertEqual(e2e.tally(r), [{"launches": 7, "replayed": 7, "passes": 14,
                                         "declined": 0, "declined_by_reason": "",
                                         "not_selected": 0}], str(r))
        d = self.dispatches(db)
        self.assertEqual(len(d), 7)
        self.assertTrue(all(x["outcome"] == "replayed" for x in d), str(d))
        self.assertEqual(len(self.counters(db)), 7 * 2, str(r))

    def test_a_range_that_cannot_be_snapshotted_declines_its_launches_as_kernel_replay_does(self):
        # From launch 4 on the device holds memory kreplay does not track: those launches are
        # declined (UNTRACKED_MEMORY) and run once, counted with the first group, and the tally
        # says so, in range replay as in kernel replay (they were tallied as not selected).
        groups = ["--pmc", "ops", "--pmc", "threads_launched"]
        app = ["--launches", 6, "--untracked-from", 4]
        rr, range_db = self.run_app(["--replay-mode", "range"] + groups, app, "range")
        rk, kernel_db = self.run_app(["--replay-mode", "kernel"] + groups, app, "kernel")
        want = [{"launches": 6, "replayed": 3, "passes": 3 * 2 + 3, "declined": 3,
                 "declined_by_reason": "untracked_memory: 3", "not_selected": 0}]
        self.assertEqual(e2e.tally(rk), want, str(rk))
        self.assertEqual(e2e.tally(rr), want, str(rr))
        outcomes = [(x["dispatch_id"], x["outcome"], x["reason"], x["passes_executed"])
                    for x in self.dispatches(range_db)]
        self.assertEqual(outcomes, [(x["dispatch_id"], x["outcome"], x["reason"],
                                     x["passes_executed"]) for x in self.dispatches(kernel_db)])
        self.assertEqual(outcomes[3:], [(i, "declined", "untracked_memory", 1) for i in (4, 5, 6)])
        self.assertEqual(self.counters(range_db), self.counters(kernel_db), str(rr))

    def test_a_range_is_snapshotted_once_and_restored_per_further_pass(self):
        r, db = self.run_app(["--replay-mode", "range", "--pmc", "ops", "--pmc", "threads_launched",
                              "--pmc", "bytes_read"], ["--launches", 8, "--read-every", 4])
        ph = self.phases(db)
        self.assertEqual([p["phase"] for p in ph], ["snapshot", "restore", "restore"] * 2, str(r))
        # Booked on each range's first launch.
        self.assertEqual({p["dispatch_id"] for p in ph}, {1, 5})
        self.assertTrue(all(p["bytes"] > 0 for p in ph if p["phase"] == "snapshot"))

    def test_more_launches_than_the_range_limit_still_check_out(self):
        r, db = self.run_app(["--replay-mode", "range", "--pmc", "ops", "--pmc", "threads_launched"],
                             ["--launches", 70])
        self.assertEqual(len(self.dispatches(db)), 70, str(r))
        # 64 launches at most per range: two ranges, two snapshots.
        self.assertEqual(sum(p["phase"] == "snapshot" for p in self.phases(db)), 2, str(r))

    def test_one_pass_range_has_counters_and_no_snapshot(self):
        r, db = self.run_app(["--replay-mode", "range", "--pmc", "ops"],
                             ["--launches", 6, "--read-every", 3])
        d = self.dispatches(db)
        self.assertEqual(len(d), 6, str(r))
        self.assertTrue(all(x["outcome"] == "not_requested" and x["passes_executed"] == 1 and
                            x["bytes_snapshotted"] == 0 for x in d), d)
        c = self.counters(db)
        self.assertEqual(sorted(c), [(i, 0, "ops") for i in range(1, 7)])
        self.assertEqual([c[(i, 0, "ops")] for i in range(1, 7)], [512, 1024] * 3)
        self.assertEqual(self.phases(db), [])
        self.assertEqual(e2e.tally(r)[0]["replayed"], 0)


class RangeAcrossSynchronizations(RangeCase):
    GROUPS = ["--replay-mode", "range", "--pmc", "ops", "--pmc", "threads_launched"]

    def range_line(self, r):
        lines = [l for l in r.kreplay_lines if " ranges held " in l]
        self.assertEqual(len(lines), 1, str(r))
        return lines[0]

    def test_a_synchronization_leaves_the_range_open(self):
        # Synchronized after launches 2, 4, 6, 8 and once more before the app reads x back: one
        # range, one snapshot, every launch restored and replayed (the app's check passes).
        r, db = self.run_app(self.GROUPS, ["--launches", 8, "--sync-every", 2])
        self.assertEqual([p["phase"] for p in self.phases(db)], ["snapshot", "restore"], str(r))
        self.assertTrue(all(x["outcome"] == "replayed" for x in self.dispatches(db)))
        line = self.range_line(r)
        self.assertIn("1 ranges held 8 launches (8.0 per range, largest 8; 1 launch: 0, 2-7: 0, "
                      "8-63: 1, 64+: 0)", line)
        self.assertIn("1 stayed open across 5 synchronizations", line)
        self.assertIn("closed by memory 1 (at hostrt::memcpy 1)", line)

    def test_memsets_stay_inside_the_range_and_are_counted(self):
        # A memset on the app's stream after launches 2, 4, 6, 8: one range holds every launch and
        # the four memsets, every pass submits them again, and the app ends as one execution
        # leaves it (its check covers the memset buffer); the tally line counts them.
        r, db = self.run_app(self.GROUPS, ["--launches", 8, "--memset-every", 2])
        self.assertIn("cli-test-app: OK", r.stdout, r.stderr)
        self.assertEqual([p["phase"] for p in self.phases(db)], ["snapshot", "restore"], str(r))
        self.assertTrue(all(x["outcome"] == "replayed" for x in self.dispatches(db)))
        line = self.range_line(r)
        self.assertIn("1 ranges held 8 launches", line)
        self.assertIn("4 memory calls stayed inside 1 range", line)
        # With the memory calls closing ranges (KREPLAY_RANGE_MEMORY=close): one range per memset.
        r, db = self.run_app(self.GROUPS, ["--launches", 8, "--memset-every", 2],
                             env={"KREPLAY_RANGE_MEMORY": "close"})
        self.assertIn("cli-test-app: OK", r.stdout, r.stderr)
        line = self.range_line(r)
        self.assertIn("4 ranges held 8 launches", line)
        self.assertNotIn("memory calls stayed", line)

    def test_copies_to_the_host_stay_inside_the_range_with_KREPLAY_RANGE_HOST_READS_join(self):
        # x[0] read back on the app's stream after launches 2, 4, 6, 8, each value checked by the
        # app: by default each read closes the range; with join one range holds all 8 launches
        # and the 4 reads, which run once (the app's own pass) and read what that pass wrote.
        app = ["--launches", 8, "--read-async-every", 2]
        r, db = self.run_app(self.GROUPS, app)
        line = self.range_line(r)
        self.assertIn("4 ranges held 8 launches", line)
        self.assertIn("closed by memory 4 (at hostrt::memcpy_async 4)", line)
        r, db = self.run_app(self.GROUPS, app, directory="join",
                             env={"KREPLAY_RANGE_HOST_READS": "join"})
        line = self.range_line(r)
        self.assertIn("1 ranges held 8 launches", line)
        self.assertIn("4 memory calls stayed inside 1 range", line)
        d = self.dispatches(db)
        self.assertEqual(len(d), 8)
        self.assertTrue(all(x["outcome"] == "replayed" and x["passes_executed"] == 2 for x in d))
        r, db = self.run_app(self.GROUPS, ["--launches", 2, "--read-async-every", 1],
                             directory="bad", env={"KREPLAY_RANGE_HOST_READS": "sometimes"})
        warnings = [l for l in r.kreplay_lines if "KREPLAY_RANGE_HOST_READS" in l]
        self.assertEqual(len(warnings), 1, str(r))
        self.assertIn("2 ranges held 2 launches", self.range_line(r))

    def test_KREPLAY_RANGE_SYNC_close_closes_a_range_at_every_synchronization(self):
        r, db = self.run_app(self.GROUPS, ["--launches", 8, "--sync-every", 2],
                             env={"KREPLAY_RANGE_SYNC": "close"})
        self.assertEqual([p["dispatch_id"] for p in self.phases(db) if p["phase"] == "snapshot"],
                         [1, 3, 5, 7], str(r))
        line = self.range_line(r)
        self.assertIn("4 ranges held 8 launches", line)
        self.assertNotIn("stayed open", line)
        self.assertIn("closed by synchronize 4 (at hostrt::stream_synchronize 4)", line)

    def test_a_bad_KREPLAY_RANGE_SYNC_is_one_line_and_the_default_holds(self):
        r, db = self.run_app(self.GROUPS, ["--launches", 4, "--sync-every", 2],
                             env={"KREPLAY_RANGE_SYNC": "sometimes"})
        warnings = [l for l in r.kreplay_lines if "KREPLAY_RANGE_SYNC" in l]
        self.assertEqual(len(warnings), 1, str(r))
        self.assertIn("use span", warnings[0])
        self.assertIn("1 ranges held 4 launches", self.range_line(r))


class AutoMode(RangeCase):
    GROUPS = ["--pmc", "ops", "--pmc", "threads_launched"]
    APP = ["--launches", 8, "--read-every", 4, "--sync-every", 1]

    def mode(self, db):
        return e2e.rows(db, "SELECT replay_mode FROM run")[0]["replay_mode"]

    def test_auto_replays_ranges_with_the_values_kernel_replay_gives(self):
        ra, auto_db = self.run_app(["--replay-mode", "auto"] + self.GROUPS, self.APP, "auto")
        rk, kernel_db = self.run_app(["--replay-mode", "kernel"] + self.GROUPS, self.APP, "kernel")
        self.assertEqual(self.mode(auto_db), "range", str(ra))
        self.assertEqual(self.mode(kernel_db), "kernel", str(rk))
        self.assertEqual(self.counters(auto_db), self.counters(kernel_db))
        self.assertEqual(len(self.counters(auto_db)), 16)
        # Two ranges of four launches each (a copy every 4 launches; the syncs keep them open).
        self.assertEqual([p["dispatch_id"] for p in self.phases(auto_db) if p["phase"] == "snapshot"],
                         [1, 5], str(ra))
        self.assertEqual(e2e.tally(ra), e2e.tally(rk))

    def test_auto_with_a_kernel_filter_is_kernel_replay(self):
        r, db = self.run_app(["--replay-mode", "auto", "-k", "mark"] + self.GROUPS, self.APP)
        self.assertEqual(self.mode(db), "kernel", str(r))
        self.assertEqual([x["dispatch_id"] for x in self.dispatches(db)], [2, 4, 6, 8])
        self.assertFalse([l for l in r.kreplay_lines if " ranges held " in l], str(r))


class RangeFilters(RangeCase):
    def test_unselected_launches_run_in_the_passes_but_leave_no_records(self):
        r, db = self.run_app(["--replay-mode", "range", "--pmc", "ops", "--pmc", "threads_launched",
                              "--kernel-include-regex", "mark"],
                             ["--launches", 8, "--read-every", 4])
        d = self.dispatches(db)
        self.assertEqual([x["dispatch_id"] for x in d], [2, 4, 6, 8], str(r))
        self.assertEqual({self.short(x["kernel_name"]) for x in d}, {"mark"})
        c = self.counters(db)
        self.assertEqual({k[0] for k in c}, {2, 4, 6, 8})
        self.assertEqual(len(c), 8)  # two passes, one counter each
        # The ranges start with an unselected bump: their snapshot is booked on the first kept
        # launch.
        self.assertEqual([(p["dispatch_id"], p["phase"]) for p in self.phases(db)],
                         [(2, "snapshot"), (2, "restore"), (6, "snapshot"), (6, "restore")])
        self.assertEqual(e2e.tally(r), [{"launches": 8, "replayed": 4, "passes": 16,
                                         "declined": 0, "declined_by_reason": "",
                                         "not_selected": 4}])

    def test_a_range_with_no_selected_launch_is_not_replayed(self):
        # One launch per range: the bump ranges select nothing and take no snapshot.
        r, db = self.run_app(["--replay-mode", "range", "--pmc", "ops", "--pmc", "threads_launched",
                              "--kernel-include-regex", "mark"],
                             ["--launches", 8, "--read-every", 1])
        snapshots = [p for p in self.phases(db) if p["phase"] == "snapshot"]
        self.assertEqual([p["dispatch_id"] for p in snapshots], [2, 4, 6, 8], str(r))
        t = e2e.tally(r)[0]
        self.assertEqual((t["replayed"], t["not_selected"]), (4, 4), str(r))

    def test_iteration_range_counts_logical_launches(self):
        r, db = self.run_app(["--replay-mode", "range", "--pmc", "ops", "--pmc", "threads_launched",
                              "-k", "mark", "--kernel-iteration-range", "[2-3]"],
                             ["--launches", 8, "--read-every", 4])
        self.assertEqual([x["dispatch_id"] for x in self.dispatches(db)], [4, 6], str(r))


class RangeMarkers(RangeCase):
    def test_cuda_profiler_markers_bound_the_profiled_launches(self):
        r, db = self.run_app(["--replay-mode", "range", "--range-markers", "cuda-profiler",
                              "--pmc", "ops", "--pmc", "threads_launched"],
                             ["--launches", 8, "--profiler", 3, 6])
        d = self.dispatches(db)
        self.assertEqual([x["dispatch_id"] for x in d], [3, 4, 5, 6], str(r))
        self.assertTrue(all(x["outcome"] == "replayed" for x in d))
        self.assertEqual(sum(p["phase"] == "snapshot" for p in self.phases(db)), 1)
        self.assertEqual(e2e.tally(r), [{"launches": 8, "replayed": 4, "passes": 12,
                                         "declined": 0, "declined_by_reason": "",
                                         "not_selected": 4}])

    def test_nvtx_markers_by_name(self):
        r, db = self.run_app(["--replay-mode", "range", "--range-markers", "nvtx:step",
                              "--pmc", "ops", "--pmc", "threads_launched"],
                             ["--launches", 8, "--nvtx", "step", 2, 4])
        self.assertEqual([x["dispatch_id"] for x in self.dispatches(db)], [2, 3, 4], str(r))
        c = self.counters(db)
        self.assertEqual(c[(2, 0, "ops")], 1024)
        self.assertEqual(c[(3, 0, "ops")], 512)

    def test_other_nvtx_names_profile_nothing(self):
        r, db = self.run_app(["--replay-mode", "range", "--range-markers", "nvtx:other",
                              "--pmc", "ops", "--pmc", "threads_launched"],
                             ["--launches", 4, "--nvtx", "step", 1, 4])
        self.assertEqual(self.dispatches(db), [], str(r))
        self.assertEqual(e2e.tally(r)[0]["not_selected"], 4)


class RangeInputFiles(RangeCase):
    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_json_jobs_as_passes_with_nvtx_markers(self):
        path = self.write("range.json", json.dumps({
            "job_replay_mode": "kernel",
            "jobs": [{"pmc": ["ops"], "replay_mode": "range", "range_markers": "nvtx:step"},
                     {"pmc": ["threads_launched"]}]}))
        r, db = self.run_app(["-i", path], ["--launches", 8, "--nvtx", "step", 2, 4])
        self.assertEqual([x["dispatch_id"] for x in self.dispatches(db)], [2, 3, 4], str(r))
        self.assertEqual(sorted({(k[1], k[2]) for k in self.counters(db)}),
                         [(0, "ops"), (1, "threads_launched")])

    def test_yaml_job_with_profiler_markers(self):
        path = self.write("range.yaml", "jobs:\n  - pmc: [ops, threads_launched]\n"
                                        "    replay_mode: range\n"
                                        "    range_markers: cuda-profiler\n")
        r, db = self.run_app(["-i", path], ["--launches", 8, "--profiler", 3, 5])
        self.assertEqual([x["dispatch_id"] for x in self.dispatches(db)], [3, 4, 5], str(r))


class RangeBadInput(RangeCase):
    def test_unknown_marker_kind(self):
        r = self.kreplay("--replay-mode", "range", "--range-markers", "nvtxx:step", "--pmc", "ops",
                         "--", *self.app())
        self.assert_one_line_error(r, "--range-markers")
        self.assertEqual(r.stdout, "")

    def test_nvtx_marker_without_a_name(self):
        r = self.kreplay("--replay-mode", "range", "--range-markers", "nvtx:", "--pmc", "ops",
                         "--", *self.app())
        self.assert_one_line_error(r, "--range-markers")

    def test_markers_without_range_mode(self):
        r = self.kreplay("--range-markers", "cuda-profiler", "--pmc", "ops", "--", *self.app())
        self.assert_one_line_error(r, "--replay-mode range")

    def test_markers_in_a_file_without_range_mode(self):
        path = os.path.join(self.tmp, "bad.yaml")
        with open(path, "w") as f:
            f.write("jobs:\n  - pmc: [ops]\n    range_markers: cuda-profiler\n")
        r = self.kreplay("-i", path, "--", *self.app())
        self.assert_one_line_error(r, "range_markers")


if __name__ == "__main__":
    e2e.main()
