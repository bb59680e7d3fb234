#!/usr/bin/env python3
"""Item 8: an application that exits non-zero, or is killed by a signal, still leaves complete,
readable outputs, and kreplay exits with the application's code (128 + signal when killed).

kreplay-cli-test-app runs N launches of one kernel; with --die SIG --after K it waits for launch K
to complete and dies by SIG (a real invalid write for segv, abort(), raise(SIGTERM)).
"""

import csv
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kreplay_e2e as e2e  # noqa: E402

FORMATS = ["--output-format", "sqlite,csv,json,perfetto"]
GROUPS = ["--pmc", "threads_launched", "--pmc", "ops"]


class AppDeath(e2e.KreplayTestCase):
    def check_outputs(self, r, launches_done, exit_code):
        """Every format is complete and readable and holds the launches that completed."""
        db = self.db_of(r)
        self.assertEqual(e2e.rows(db, "PRAGMA integrity_check")[0]["integrity_check"], "ok")
        run = e2e.rows(db, "SELECT * FROM run")[0]
        self.assertEqual(run["exit_code"], exit_code)
        self.assertGreaterEqual(run["launches"], launches_done)
        dispatches = e2e.rows(db, "SELECT * FROM dispatches ORDER BY dispatch_id")
        self.assertGreaterEqual(len(dispatches), launches_done, str(r))
        for d in dispatches[:launches_done]:
            self.assertEqual((d["outcome"], d["passes_executed"]), ("replayed", 2), d)
            got = {(c["replay_pass"], c["name"]): c["value"] for c in e2e.rows(
                db, "SELECT * FROM counters WHERE dispatch_id = ?", (d["dispatch_id"],))}
            self.assertEqual(got, {(0, "threads_launched"): 512, (1, "ops"): 512}, d)

        base = db[:-len("_results.db")]
        with open(base + "_results.json") as f:
            doc = json.load(f)
        self.assertGreaterEqual(len(doc["dispatches"]), launches_done)
        self.assertGreaterEqual(len(doc["counters"]), 2 * launches_done)
        with open(base + "_trace.json") as f:
            trace = json.load(f)
        kernel = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
        self.assertGreaterEqual(len(kernel), 2 * launches_done)
        with open(base + "_counter_collection.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        self.assertGreaterEqual(len(rows), 2 * launches_done)
        self.assertEqual(e2e.find_files(self.tmp, "*.part"), [], "no part files left over")
        for path in e2e.output_lines(r):
            self.assertTrue(os.path.isfile(path), path)
        self.assertEqual(len(e2e.output_lines(r)), 5, str(r))
        self.assertEqual(len(e2e.tally(r)), 1, str(r))
        return db

    def test_non_zero_exit_code(self):
        r = self.kreplay(*(GROUPS + FORMATS + ["--", e2e.TEST_APP, "--exit-code", "3"]))
        self.assertEqual(r.rc, 3, str(r))
        self.assertIn("cli-test-app: OK", r.stdout)
        self.assertFalse(any(" error:" in l for l in r.kreplay_lines), str(r))
        self.check_outputs(r, 4, 3)

    def test_exit_code_of_the_last_application_run(self):
        r = self.kreplay("--pmc", "ops", "--pmc", "launches", "--replay-mode", "application",
                         "--", e2e.TEST_APP, "--exit-code", "5")
        self.assertEqual(r.rc, 5, str(r))
        self.assertEqual(r.stdout.count("cli-test-app: OK"), 2)
        merged = [p for p in e2e.find_files(self.tmp, "*_results.db") if "/pass_" not in p]
        self.assertEqual(len(merged), 1, str(r))
        self.assertEqual([x["exit_code"] for x in e2e.rows(merged[0], "SELECT exit_code FROM run "
                                                                      "ORDER BY app_pass")], [5, 5])

    def killed(self, how, sig, after):
        # In the sanitizer build, ASan's own SIGSEGV handler is the one the tool chains to, and it
        # exits 1: let the signal kill the application as it does outside ASan.
        env = {"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":handle_segv=0"}
        r = self.kreplay(*(GROUPS + FORMATS + ["--", e2e.TEST_APP, "--launches", "4", "--die", how,
                                               "--after", str(after)]), env=env)
        self.assertEqual(r.rc, 128 + sig, str(r))
        self.assertIn("cli-test-app: dying by " + how, r.stdout)
        notes = [l for l in r.kreplay_lines if "killed by signal {}".format(sig) in l]
        self.assertEqual(len(notes), 1, str(r))
        self.assert_all_tagged(r, "cli-test-app: ")
        # A crash (not a request to stop) prints where it happened, every frame tagged.
        crashed = [l for l in r.kreplay_lines if "the application crashed; backtrace" in l]
        self.assertEqual(len(crashed), 1 if sig in (signal.SIGSEGV, signal.SIGABRT) else 0, str(r))
        if crashed:
            self.assertTrue(any("cli-test-app" in l for l in r.kreplay_lines if l.startswith(
                "==KREPLAY==   ")), str(r))
        self.check_outputs(r, after, 128 + sig)
        # The default (auto) replays the launches as one range, open across the application's
        # synchronizations when the signal came: the tool closed it first, so its launches have
        # every pass's values (check_outputs).
        self.assertTrue(any("closed by signal 1" in l for l in r.kreplay_lines), str(r))

    def test_kernel_replay_keeps_the_launches_before_the_signal(self):
        env = {"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":handle_segv=0"}
        r = self.kreplay(*(GROUPS + FORMATS + ["--replay-mode", "kernel", "--", e2e.TEST_APP,
                                               "--launches", "4", "--die", "segv", "--after",
                                               "2"]), env=env)
        self.assertEqual(r.rc, 128 + signal.SIGSEGV, str(r))
        self.assertFalse(any("ranges held" in l for l in r.kreplay_lines), str(r))
        self.check_outputs(r, 2, 128 + signal.SIGSEGV)

    def test_sigterm(self):
        self.killed("term", signal.SIGTERM, 2)

    def test_sigsegv(self):
        self.killed("segv", signal.SIGSEGV, 2)

    def test_abort(self):
        self.killed("abort", signal.SIGABRT, 3)

    def test_sigkill_keeps_what_was_flushed(self):
        # SIGKILL reaches no handler. The writers flush every 2 s, so what was collected before
        # the last flush is readable (the run lasts about 3 s), and kreplay records the exit code.
        # Kernel replay: each launch's values exist once it returns. (In range replay, the open
        # range's launches have no values yet when the process is killed.)
        r = self.kreplay(*(GROUPS + ["--replay-mode", "kernel", "--output-format", "sqlite,csv,perfetto", "--", e2e.TEST_APP,
                                     "--launches", "5", "--sleep-ms", "400", "--die", "kill",
                                     "--after", "4"]))
        self.assertEqual(r.rc, 128 + signal.SIGKILL, str(r))
        self.assertEqual(len([l for l in r.kreplay_lines if "killed by signal 9" in l]), 1, str(r))
        db = self.db_of(r)
        self.assertEqual(e2e.rows(db, "PRAGMA integrity_check")[0]["integrity_check"], "ok")
        run = e2e.rows(db, "SELECT exit_code, end_ns FROM run")[0]
        self.assertEqual(run, {"exit_code": 137, "end_ns": None}, "a killed run has no end_ns")
        dispatches = e2e.rows(db, "SELECT dispatch_id FROM dispatches")
        self.assertGreaterEqual(len(dispatches), 1, "launches before the flush are kept")
        for d in dispatches:
            self.assertEqual(len(e2e.rows(db, "SELECT * FROM counters WHERE dispatch_id = ?",
                                          (d["dispatch_id"],))), 2)
        with open(db[:-len("_results.db")] + "_trace.json") as f:
            trace = json.load(f)
        self.assertGreaterEqual(len([e for e in trace["traceEvents"]
                                     if e.get("cat") == "kernel"]), 2 * len(dispatches))

    def interrupt(self, args, sig, out):
        """Start kreplay ARGS -- slow app, send SIG to kreplay once a database exists."""
        env = dict(os.environ)
        env.pop("KREPLAY_LOG_LEVEL", None)
        p = subprocess.Popen([e2e.KREPLAY] + args + ["--", e2e.TEST_APP, "--launches", "40",
                                                     "--sleep-ms", "100"],
                             cwd=self.tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            # wait until the database exists and a launch or two have run
            deadline = time.time() + 30
            while time.time() < deadline and not e2e.find_files(out, "*_results.db"):
                time.sleep(0.05)
            time.sleep(0.8)
            p.send_signal(sig)
            stdout, stderr = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        return e2e.Result(p.args, p.returncode, stdout.decode(), stderr.decode(), self.tmp)

    def test_ctrl_c_stops_application_replay(self):
        # Ctrl-C in run 1 of 2 stops kreplay: run 2 does not start, and kreplay exits 130
        out = os.path.join(self.tmp, "out")
        r = self.interrupt(["--pmc", "ops", "--pmc", "launches", "--replay-mode", "application",
                            "-d", out], signal.SIGINT, out)
        self.assertEqual(r.rc, 128 + signal.SIGINT, str(r))
        self.assertNotIn("cli-test-app: OK", r.stdout, "a run went on after Ctrl-C\n{}".format(r))
        self.assertFalse(any("run 2 of 2" in l for l in r.kreplay_lines), str(r))
        self.assertFalse(os.path.exists(os.path.join(out, "pass_2")), str(r))
        db = self.one_file(os.path.join(out, "pass_1"), "*_results.db", r)
        self.assertEqual(e2e.rows(db, "SELECT exit_code FROM run")[0]["exit_code"], 130)

    def test_signal_sent_to_kreplay_reaches_the_application(self):
        # Ctrl-C or a job scheduler's SIGTERM goes to kreplay; it passes it on, the application's
        # tool closes the outputs, and kreplay exits 128 + signal.
        for sig in (signal.SIGTERM, signal.SIGINT):
            out = os.path.join(self.tmp, "sig%d" % sig)
            r = self.interrupt(GROUPS + FORMATS + ["-d", out], sig, out)
            self.assertEqual(r.rc, 128 + sig, str(r))
            self.assertNotIn("cli-test-app: OK", r.stdout, "the application was not stopped")
            db = self.one_file(out, "*_results.db", r)
            self.assertEqual(e2e.rows(db, "PRAGMA integrity_check")[0]["integrity_check"], "ok")
            run = e2e.rows(db, "SELECT exit_code, launches FROM run")[0]
            self.assertEqual(run["exit_code"], 128 + sig)
            self.assertIsNotNone(run["launches"], "the tool did not close the run\n{}".format(r))
            self.assertGreaterEqual(run["launches"], 1)
            # Kernel replay replays each launch before the next is made; range replay (the
            # default) records launches as they are made, so all 40 may have been.
            self.assertLessEqual(run["launches"], 40)
            with open(db[:-len("_results.db")] + "_results.json") as f:
                json.load(f)
            with open(db[:-len("_results.db")] + "_trace.json") as f:
                json.load(f)
            self.assertEqual(len(e2e.tally(r)), 1, str(r))

    def test_an_application_that_will_not_stop_is_killed_after_the_grace_period(self):
        # It ignores SIGTERM and sleeps: kreplay passes the signal on, waits KREPLAY_STOP_GRACE_MS,
        # says so in one line and kills it, so that kreplay (and a job scheduler's timeout) does
        # not wait for ever and no process is left holding the device.
        env = dict(os.environ, KREPLAY_STOP_GRACE_MS="700")
        env.pop("KREPLAY_LOG_LEVEL", None)
        out = os.path.join(self.tmp, "hang")
        p = subprocess.Popen([e2e.KREPLAY] + GROUPS + ["-d", out, "--", e2e.TEST_APP,
                                                       "--hang-after", "2"],
                             cwd=self.tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            deadline = time.time() + 30
            while time.time() < deadline and not e2e.find_files(out, "*_results.db"):
                time.sleep(0.05)
            time.sleep(0.5)
            t0 = time.time()
            p.send_signal(signal.SIGTERM)
            stdout, stderr = p.communicate(timeout=60)
            waited = time.time() - t0
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        r = e2e.Result(p.args, p.returncode, stdout.decode(), stderr.decode(), self.tmp)
        self.assertIn("cli-test-app: hanging", r.stdout, str(r))
        self.assertEqual(r.rc, 128 + signal.SIGTERM, str(r))  # kreplay was stopped by SIGTERM
        self.assertEqual(len([l for l in r.kreplay_lines if "killed by signal 9" in l]), 1, str(r))
        notes = [l for l in r.kreplay_lines if "did not stop within 700 ms of signal 15" in l]
        self.assertEqual(len(notes), 1, str(r))
        self.assertLess(waited, 20, str(r))
        db = self.one_file(out, "*_results.db", r)
        self.assertEqual(e2e.rows(db, "PRAGMA integrity_check")[0]["integrity_check"], "ok")


if __name__ == "__main__":
    e2e.main()
