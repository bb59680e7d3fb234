#!/usr/bin/env python3
"""Items 2 and 3: input files (-i, JSON and YAML).

- job_replay_mode: application (the default): every job is a run of its own, in pass_k/.
- job_replay_mode: kernel: the jobs are the passes of ONE run, in job order; pass k collects job
  k's counters; a timing_pass job is a pass with counters stopped (no counter rows).
- Each rejection is one line that says what is wrong (and where), with a non-zero exit, before
  the application starts.
- Counter group rotation (pmc_groups + pmc_group_interval): successive launches collect
  different groups, nothing is replayed.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kreplay_e2e as e2e  # noqa: E402


def short(name):
    return name.split("(")[0]


class InputFileCase(e2e.KreplayTestCase):
    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def counters_by_pass(self, db, dispatch_id, app_pass=0):
        out = {}
        for c in e2e.rows(db, "SELECT replay_pass, name FROM counters WHERE dispatch_id = ? AND "
                              "app_pass = ?", (dispatch_id, app_pass)):
            out.setdefault(c["replay_pass"], set()).add(c["name"])
        return out

    def rejected(self, name, text, *needles, extra=()):
        path = self.write(name, text)
        r = self.kreplay(*(list(extra) + ["-i", path, "--", e2e.SAMPLE_APP]))
        line = self.assert_one_line_error(r, name, *needles)
        self.assertEqual(r.stdout, "", "the application must not start\n{}".format(r))
        self.assertEqual(e2e.find_files(self.tmp, "*_results.db"), [])
        return line


class ApplicationModeJobs(InputFileCase):
    def check_two_runs(self, r):
        self.assertEqual(r.rc, 0, str(r))
        self.assertEqual(r.stdout.count("sample-app: OK"), 2, "each job is a run\n{}".format(r))
        out = os.path.join(self.tmp, "out")
        for k in (1, 2):
            self.one_file(os.path.join(out, "pass_%d" % k), "*_results.db", r)
        merged = [p for p in e2e.find_files(out, "*_results.db") if "/pass_" not in p]
        self.assertEqual(len(merged), 1, str(r))
        db = merged[0]
        # job 1: threads_launched on every launch; job 2: ops on scale_add only
        d1 = e2e.rows(db, "SELECT dispatch_id FROM dispatches WHERE app_pass = 1")
        self.assertEqual(len(d1), 10)
        self.assertEqual(e2e.rows(db, "SELECT DISTINCT name FROM counters WHERE app_pass = 1"),
                         [{"name": "threads_launched"}])
        d2 = e2e.rows(db, "SELECT k.demangled_name FROM dispatches d JOIN kernels k "
                          "USING (app_pass, kernel_id) WHERE d.app_pass = 2")
        self.assertEqual([short(d["demangled_name"]) for d in d2], ["scale_add"] * 6)
        self.assertEqual(e2e.rows(db, "SELECT DISTINCT name FROM counters WHERE app_pass = 2"),
                         [{"name": "ops"}])
        labels = [l for l in r.kreplay_lines if "run 1 of 2" in l or "run 2 of 2" in l]
        self.assertEqual(len(labels), 2, str(r))
        return db

    def test_json_jobs_are_separate_runs(self):
        path = self.write("jobs.json", json.dumps({"jobs": [
            {"pmc": ["threads_launched"]},
            {"pmc": ["ops"], "kernel_include_regex": "scale"}]}))
        self.check_two_runs(self.kreplay("-i", path, "-d", "out", "--", e2e.SAMPLE_APP))

    def test_yaml_jobs_are_separate_runs(self):
        path = self.write("jobs.yaml", "jobs:\n"
                                       "  - pmc: [threads_launched]\n"
                                       "  - pmc: ops\n"
                                       "    kernel_include_regex: scale\n"
                                       "    output_directory: out\n")
        # the second job sets output_directory; the first takes it from -d: both say "out"
        self.check_two_runs(self.kreplay("-i", path, "-d", "out", "--", e2e.SAMPLE_APP))

    def test_timing_job_is_a_run_that_times_every_launch(self):
        # plan.hpp: in application mode a timing_pass job is a run of its own (rocprofv3 dropped
        # it); its launches run once with counters stopped, and their time is what it collects
        path = self.write("timing.yaml", "jobs:\n  - pmc: [ops]\n  - timing_pass: true\n")
        r = self.kreplay("-i", path, "-d", "out", "--", e2e.SAMPLE_APP)
        self.assertEqual(r.rc, 0, str(r))
        self.assertEqual(r.stdout.count("sample-app: OK"), 2, str(r))
        db = [p for p in e2e.find_files(self.tmp, "*_results.db") if "/pass_" not in p][0]
        self.assertEqual(e2e.rows(db, "SELECT count(*) AS n FROM counters WHERE app_pass = 2")
                         [0]["n"], 0, "the timing run collects no counters")
        timed = e2e.rows(db, "SELECT dispatch_id, start_ns, end_ns FROM dispatches WHERE "
                             "app_pass = 2")
        self.assertEqual(len(timed), 10)
        for d in timed:
            self.assertGreater(d["start_ns"], 0, "a timing run must time its launches: {}"
                               .format(d))
            self.assertLess(d["start_ns"], d["end_ns"], d)
        self.assertEqual(e2e.rows(db, "SELECT count(*) AS n FROM passes WHERE app_pass = 2")
                         [0]["n"], 10, "one pass row per launch of the timing run")

    def test_job_with_two_groups_is_replayed_in_its_run(self):
        path = self.write("jobs.yml", "jobs:\n"
                                      "  - pmc: [threads_launched]\n"
                                      "    name: plain\n")
        r = self.kreplay("-i", path, "--pmc", "threads_launched", "--", e2e.SAMPLE_APP)
        self.assertEqual(r.rc, 0, str(r))
        path = self.write("jobs2.yml", "jobs:\n  - kernel_include_regex: sum\n")
        r = self.kreplay("-i", path, "--pmc", "threads_launched", "--pmc", "ops", "-d", "two",
                         "--", e2e.SAMPLE_APP)
        self.assertEqual(r.rc, 0, str(r))
        db = self.db_of(r, os.path.join(self.tmp, "two"))
        ds = e2e.rows(db, "SELECT passes_executed FROM dispatches")
        self.assertEqual([d["passes_executed"] for d in ds], [2] * 4)

    def test_job_conflicting_with_the_command_line(self):
        line = self.rejected("jobs.yaml", "jobs:\n  - pmc: [ops]\n    output_directory: here\n",
                             "output_directory", "here", "there", extra=["-d", "there"])
        self.assertIn("jobs.yaml:3:5", line)


class KernelModeJobs(InputFileCase):
    def check_folded(self, r, expected_by_pass):
        self.assertEqual(r.rc, 0, str(r))
        self.assertEqual(r.stdout.count("sample-app: OK"), 1, "one run\n{}".format(r))
        self.assertEqual([p for p in e2e.find_files(self.tmp, "*") if "/pass_" in p], [],
                         "job_replay_mode: kernel writes no pass_k directories")
        db = self.db_of(r)
        self.assertEqual(len(e2e.rows(db, "SELECT * FROM run")), 1)
        self.assertEqual(e2e.rows(db, "SELECT replay_mode FROM run")[0]["replay_mode"], "kernel")
        dispatches = e2e.rows(db, "SELECT * FROM dispatches ORDER BY dispatch_id")
        self.assertEqual(len(dispatches), 10)
        n = len(expected_by_pass)
        for d in dispatches:
            self.assertEqual(d["outcome"], "replayed", d)
            self.assertEqual(d["passes_executed"], n, d)
            got = self.counters_by_pass(db, d["dispatch_id"])
            self.assertEqual(got, {k: v for k, v in expected_by_pass.items() if v}, d)
            passes = e2e.rows(db, "SELECT replay_pass FROM passes WHERE dispatch_id = ? "
                                  "ORDER BY replay_pass", (d["dispatch_id"],))
            self.assertEqual([p["replay_pass"] for p in passes], list(range(n)))
        self.assertEqual(e2e.tally(r)[0]["replayed"], 10)
        return db

    def test_yaml_jobs_fold_into_passes_with_a_timing_pass(self):
        path = self.write("passes.yaml",
                          "job_replay_mode: kernel\n"
                          "jobs:\n"
                          "  - pmc: [threads_launched, bytes_written]\n"
                          "    kernel_replay_beta_enabled: true\n"
                          "  - timing_pass: true\n"
                          "  - pmc: [ops]\n")
        r = self.kreplay("-i", path, "--", e2e.SAMPLE_APP)
        db = self.check_folded(r, {0: {"threads_launched", "bytes_written"}, 1: set(),
                                   2: {"ops"}})
        # the timing pass ran (it has a pass row) and collected nothing
        self.assertEqual(e2e.rows(db, "SELECT count(*) AS n FROM counters WHERE replay_pass = 1")
                         [0]["n"], 0)
        self.assertEqual(e2e.rows(db, "SELECT count(*) AS n FROM passes WHERE replay_pass = 1")
                         [0]["n"], 10)

    def test_json_jobs_fold_into_passes(self):
        path = self.write("passes.json", json.dumps({
            "job_replay_mode": "kernel",
            "jobs": [{"pmc": ["launches"]}, {"pmc": ["threads_launched", "blocks_launched"]},
                     {"pmc": "ops", "summary": True}]}))
        r = self.kreplay("-i", path, "--", e2e.SAMPLE_APP)
        self.check_folded(r, {0: {"launches"}, 1: {"threads_launched", "blocks_launched"},
                              2: {"ops"}})
        # a run option on one job applies to the whole run
        self.assertTrue(any("Kernel summary" in l for l in r.kreplay_lines), str(r))

    def test_timing_pass_first(self):
        path = self.write("t.yaml", "job_replay_mode: kernel\njobs:\n"
                                    "  - timing_pass: true\n  - pmc: [ops]\n")
        r = self.kreplay("-i", path, "--", e2e.SAMPLE_APP)
        self.check_folded(r, {0: set(), 1: {"ops"}})

    def test_run_options_with_the_jobs(self):
        path = self.write("t.yaml", "job_replay_mode: kernel\njobs:\n"
                                    "  - pmc: [ops]\n    kernel_include_regex: sum\n"
                                    "  - pmc: [threads_launched]\n    kernel_include_regex: sum\n")
        r = self.kreplay("-i", path, "--", e2e.SAMPLE_APP)
        self.assertEqual(r.rc, 0, str(r))
        db = self.db_of(r)
        self.assertEqual(len(e2e.rows(db, "SELECT * FROM dispatches")), 4)

    # -- rejections: one line each, naming the problem and where it is --

    def test_reject_job_with_both_services(self):
        line = self.rejected("both.yaml", "job_replay_mode: kernel\njobs:\n"
                                          "  - pmc: [ops]\n    timing_pass: true\n",
                             "jobs[0]", "both pmc and timing_pass")
        self.assertIn("both.yaml:3:", line)

    def test_reject_job_with_neither_service(self):
        self.rejected("neither.yaml", "job_replay_mode: kernel\njobs:\n"
                                      "  - pmc: [ops]\n  - kernel_include_regex: x\n",
                      "jobs[1]", "collects nothing")

    def test_reject_second_timing_job(self):
        self.rejected("timing2.yaml", "job_replay_mode: kernel\njobs:\n  - pmc: [ops]\n"
                                      "  - timing_pass: true\n  - timing_pass: true\n",
                      "jobs[2]", "second timing job")

    def test_reject_pmc_groups_in_kernel_mode(self):
        self.rejected("groups.yaml", "job_replay_mode: kernel\njobs:\n"
                                     "  - pmc_groups: [[ops], [launches]]\n",
                      "pmc_groups", "cannot be a replay pass")

    def test_reject_timing_option_on_counter_job(self):
        self.rejected("flush.yaml", "job_replay_mode: kernel\njobs:\n"
                                    "  - pmc: [ops]\n    timing_pass_flush_cache: true\n",
                      "timing_pass_flush_cache", "counter job")

    def test_reject_no_counter_job(self):
        self.rejected("nopmc.json", json.dumps({"job_replay_mode": "kernel",
                                                "jobs": [{"timing_pass": True}]}),
                      "needs at least one job with pmc")

    def test_reject_replay_mode_application(self):
        self.rejected("app.yaml", "job_replay_mode: kernel\njobs:\n"
                                  "  - pmc: [ops]\n    replay_mode: application\n",
                      "replay_mode: application", "contradicts job_replay_mode: kernel")

    def test_reject_pmc_on_the_command_line(self):
        self.rejected("cli.yaml", "job_replay_mode: kernel\njobs:\n  - pmc: [ops]\n",
                      "--pmc", extra=["--pmc", "launches"])

    def test_reject_metrics_in_a_job(self):
        self.rejected("metrics.yaml", "job_replay_mode: kernel\njobs:\n  - pmc: [ops]\n"
                                      "  - metrics: [launches]\n",
                      "jobs[1].metrics", "metrics cannot be a pass")

    def test_reject_jobs_that_disagree_on_a_run_option(self):
        self.rejected("disagree.yaml", "job_replay_mode: kernel\njobs:\n"
                                       "  - pmc: [ops]\n    kernel_include_regex: scale\n"
                                       "  - pmc: [launches]\n    kernel_include_regex: sum\n",
                      "jobs disagree on kernel_include_regex", "scale", "sum")

    def test_reject_unknown_job_replay_mode(self):
        self.rejected("mode.yaml", "job_replay_mode: kernal\njobs:\n  - pmc: [ops]\n",
                      "job_replay_mode", "kernal", "kernel")

    def test_reject_unknown_key_with_suggestion(self):
        line = self.rejected("key.json", '{\n  "jobs": [\n'
                                         '    {"pmc": ["ops"], "kernel_include_regx": "a"}\n'
                                         '  ]\n}\n',
                             "kernel_include_regx", "did you mean kernel_include_regex")
        self.assertIn("key.json:3:", line)

    def test_reject_empty_jobs(self):
        self.rejected("empty.yaml", "jobs: []\n", "jobs", "empty")

    def test_reject_missing_input_file(self):
        r = self.kreplay("-i", os.path.join(self.tmp, "nope.yaml"), "--", e2e.SAMPLE_APP)
        self.assert_one_line_error(r, "nope.yaml", "No such file")
        self.assertEqual(r.stdout, "")


class Rotation(InputFileCase):
    def test_groups_rotate_across_launches_without_replay(self):
        path = self.write("rotate.yaml", "jobs:\n"
                                         "  - pmc_groups: [[threads_launched], [ops, launches]]\n"
                                         "    pmc_group_interval: 2\n")
        r = self.kreplay("-i", path, "--", e2e.SAMPLE_APP)
        self.assertEqual(r.rc, 0, str(r))
        self.assertIn("sample-app: OK", r.stdout)
        db = self.db_of(r)
        dispatches = e2e.rows(db, "SELECT * FROM dispatches ORDER BY dispatch_id")
        self.assertEqual(len(dispatches), 10)
        groups = [{"threads_launched"}, {"ops", "launches"}]
        for n, d in enumerate(dispatches, start=1):
            self.assertEqual(d["passes_executed"], 1, "rotation replays nothing")
            self.assertNotEqual(d["outcome"], "replayed")
            self.assertEqual(d["bytes_snapshotted"], 0)
            expected = groups[((n - 1) // 2) % 2]
            self.assertEqual(self.counters_by_pass(db, d["dispatch_id"]), {0: expected},
                             "launch {} should collect {}".format(n, expected))
        t = e2e.tally(r)[0]
        self.assertEqual((t["launches"], t["replayed"], t["passes"]), (10, 0, 10))

    def test_rotation_interval_defaults_to_one(self):
        path = self.write("rotate.json", json.dumps(
            {"jobs": [{"pmc_groups": [["threads_launched"], ["ops"], ["launches"]]}]}))
        r = self.kreplay("-i", path, "--", e2e.SAMPLE_APP)
        self.assertEqual(r.rc, 0, str(r))
        db = self.db_of(r)
        names = [self.counters_by_pass(db, d["dispatch_id"])[0] for d in e2e.rows(
            db, "SELECT dispatch_id FROM dispatches ORDER BY dispatch_id")]
        cycle = [{"threads_launched"}, {"ops"}, {"launches"}]
        self.assertEqual(names, [cycle[i % 3] for i in range(10)])

    def test_rotation_with_pmc_is_rejected(self):
        self.rejected("rot.yaml", "jobs:\n  - pmc_groups: [[ops]]\n", "pmc_groups", "--pmc",
                      extra=["--pmc", "launches"])

    def test_interval_without_groups_is_rejected(self):
        self.rejected("rot2.yaml", "jobs:\n  - pmc: [ops]\n    pmc_group_interval: 3\n",
                      "pmc_group_interval needs pmc_groups")


if __name__ == "__main__":
    e2e.main()
