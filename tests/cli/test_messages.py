#!/usr/bin/env python3
"""Items 6 and 7: what the user sees.

6. Every line kreplay prints starts with ==KREPLAY== (the application's lines are its own); at
   exit a tally line (replayed, declined by reason, not selected) and "output:" lines naming
   files that exist; on a terminal one progress line, updated in place, for runs longer than
   1 s, and none when stderr is a file or pipe.
7. Bad input: one clear line that names the problem, a non-zero exit, no crash, and the
   application never started.
"""

import os
import pty
import re
import struct
import subprocess
import sys
import termios
import fcntl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kreplay_e2e as e2e  # noqa: E402

PROGRESS_RE = re.compile(r"^==KREPLAY== (\d+\.\d) s: (\d+) launches, (\d+) replayed, (\d+) passes, "
                         r"(\d+) declined, (\d+) not selected$")


class WhatTheUserSees(e2e.KreplayTestCase):
    def test_every_line_is_tagged(self):
        for i, args in enumerate((
                ["--pmc", "threads_launched", "--pmc", "ops"],
                ["--summary", "--kernel-trace", "--output-format", "sqlite,csv,json,perfetto",
                 "-k", "regex:scale", "--pmc", "ops", "--pmc", "launches"],
                ["--metrics", "ops,launches,threads_launched", "-o", "fixed_name"],
                ["--pmc", "ops", "--pmc", "launches", "--replay-mode", "application"])):
            r = self.sample(*(args + ["-d", "run%d" % i]))
            self.assertGreater(len(r.kreplay_lines), 1, str(r))
            self.assert_all_tagged(r, "sample-app: ")

    def test_every_line_is_tagged_on_declines_and_death(self):
        r = self.kreplay("--pmc", "ops", "--pmc", "launches", "--summary", "--", e2e.TEST_APP,
                         "--launches", "3", "--untracked-from", "2", "--die", "term",
                         "--after", "3")
        self.assertEqual(r.rc, 143, str(r))
        self.assert_all_tagged(r, "cli-test-app: ")

    def test_tally_line_counts_replayed_declined_and_not_selected(self):
        # 6 launches: 1 not selected (launch skip), 2 replayed, 3 declined (untracked memory)
        r = self.kreplay_ok("--pmc", "ops", "--pmc", "threads_launched", "--launch-skip", "1",
                            "--", e2e.TEST_APP, "--launches", "6", "--untracked-from", "4")
        t = e2e.tally(r)
        self.assertEqual(len(t), 1, str(r))
        self.assertEqual(t[0], {"launches": 6, "replayed": 2, "passes": 2 * 2 + 3 + 1,
                                "declined": 3, "declined_by_reason": "untracked_memory: 3",
                                "not_selected": 1})
        db = self.db_of(r)
        self.assertEqual(e2e.rows(db, "SELECT launches, replayed, declined, not_selected, "
                                      "declined_by_reason FROM run")[0],
                         {"launches": 6, "replayed": 2, "declined": 3, "not_selected": 1,
                          "declined_by_reason": '{"untracked_memory":3}'})
        declined = e2e.rows(db, "SELECT outcome, reason, passes_executed FROM dispatches "
                                "WHERE outcome = 'declined'")
        self.assertEqual(declined, [{"outcome": "declined", "reason": "untracked_memory",
                                     "passes_executed": 1}] * 3)
        # a declined launch ran once and collected the first pass's group
        for d in e2e.rows(db, "SELECT dispatch_id FROM dispatches WHERE outcome = 'declined'"):
            self.assertEqual(e2e.rows(db, "SELECT replay_pass, name FROM counters WHERE "
                                          "dispatch_id = ?", (d["dispatch_id"],)),
                             [{"replay_pass": 0, "name": "ops"}])
            self.assertEqual(len(e2e.rows(db, "SELECT * FROM passes WHERE dispatch_id = ?",
                                          (d["dispatch_id"],))), 1)
        # the tally is the last thing but its snapshots line (the 2 replayed launches saved
        # memory) and the output lines, and it comes once
        lines = r.kreplay_lines
        i = [k for k, l in enumerate(lines) if e2e.TALLY_RE.match(l)][0]
        self.assertRegex(lines[i + 1], r"^==KREPLAY== snapshots: .* \(0 write-set, 2 full\)")
        self.assertTrue(all(l.startswith("==KREPLAY== output: ") for l in lines[i + 2:]), lines)

    def test_output_lines_name_files_that_exist(self):
        r = self.sample("--pmc", "ops", "--output-format", "sqlite,csv,json,perfetto",
                        "--kernel-trace", "-d", "o")
        outputs = e2e.output_lines(r)
        self.assertEqual(len(outputs), 6, str(r))
        for path in outputs:
            self.assertTrue(os.path.isfile(path), "{} does not exist\n{}".format(path, r))
        self.assertEqual(sorted(outputs), sorted(
            os.path.normpath(p) for p in e2e.find_files(os.path.join(self.tmp, "o"), "*.*")))

    def test_no_progress_when_stderr_is_not_a_terminal(self):
        # 5 launches x 2 passes x 0.5 s: about 5 s, and stderr is a pipe: no progress at all
        r = self.kreplay_ok("--pmc", "ops", "--pmc", "threads_launched", "--",
                            e2e.TEST_APP, "--launches", "5", "--sleep-ms", "500")
        self.assertIn("cli-test-app: OK", r.stdout)
        self.assertEqual([l for l in r.kreplay_lines if PROGRESS_RE.match(l)], [], str(r))
        self.assertNotIn("\r", r.stderr)
        self.assertNotIn("\x1b[K", r.stderr)
        self.assertEqual(len(e2e.tally(r)), 1, str(r))

    def run_on_terminal(self, *args, columns=200):
        """kreplay ARGS with stderr on a pseudo-terminal; returns (rc, stdout, terminal text)."""
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        env = dict(os.environ)
        for var in ("KREPLAY_LOG_LEVEL", "KREPLAY_TOOL_LIBRARIES", "KREPLAY_TOOL_CONFIG"):
            env.pop(var, None)
        p = subprocess.Popen([e2e.KREPLAY] + list(args), cwd=self.tmp, env=env,
                             stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        out = p.stdout.read().decode()
        rc = p.wait(timeout=120)
        os.close(master)
        return rc, out, b"".join(chunks).decode("utf-8", "replace")

    def test_progress_line_on_a_terminal_is_updated_in_place(self):
        rc, out, term = self.run_on_terminal("--pmc", "ops", "--pmc", "threads_launched", "--",
                                             e2e.TEST_APP, "--launches", "5", "--sleep-ms", "500")
        self.assertEqual(rc, 0, term)
        self.assertIn("cli-test-app: OK", out)
        drawn = re.findall(r"\r(==KREPLAY== (\d+\.\d) s: (\d+) launches, (\d+) replayed, "
                           r"(\d+) passes, (\d+) declined, (\d+) not selected)\x1b\[K", term)
        self.assertGreaterEqual(len(drawn), 3, repr(term))  # every 0.2 s after the first second
        previous = None
        for _, seconds, launches, replayed, passes, _, _ in drawn:
            seconds, launches, passes = float(seconds), int(launches), int(passes)
            self.assertGreaterEqual(seconds, 1.0)
            self.assertLessEqual(launches, 5)
            self.assertLessEqual(int(replayed), launches)
            if previous:
                self.assertGreaterEqual(seconds, previous[0])
                self.assertGreaterEqual(passes, previous[1])
            previous = (seconds, passes)
        # never a line of its own: no newline between a drawn line and the next redraw
        self.assertNotRegex(term, r"\x1b\[K\r?\n")
        # the line is taken off before the tally, which starts a clean line
        self.assertRegex(term, r"\r\x1b\[K==KREPLAY== 5 launches: 5 replayed \(10 passes\)")
        self.assertIn("==KREPLAY== output: ", term)

    def test_progress_line_fits_the_terminal(self):
        rc, _, term = self.run_on_terminal("--pmc", "ops", "--", e2e.TEST_APP, "--launches", "2",
                                           "--sleep-ms", "900", columns=40)
        self.assertEqual(rc, 0, term)
        drawn = re.findall(r"\r(==KREPLAY== [^\r\x1b]*)\x1b\[K", term)
        self.assertTrue(drawn, repr(term))
        self.assertTrue(all(len(d) <= 39 for d in drawn), drawn)

    def test_quiet_on_a_terminal_shows_no_progress(self):
        rc, _, term = self.run_on_terminal("-q", "--pmc", "ops", "--", e2e.TEST_APP,
                                           "--launches", "2", "--sleep-ms", "900")
        self.assertEqual(rc, 0, term)
        self.assertNotIn("==KREPLAY==", term)

    def test_no_progress_lines_for_a_short_run(self):
        r = self.sample("--pmc", "ops", "--pmc", "launches")
        self.assertEqual([l for l in r.kreplay_lines if PROGRESS_RE.match(l)], [], str(r))

    def test_quiet_long_run_has_no_progress(self):
        r = self.kreplay_ok("-q", "--pmc", "ops", "--", e2e.TEST_APP, "--launches", "3",
                            "--sleep-ms", "900")
        self.assertEqual(r.kreplay_lines, [], str(r))


class BadInput(e2e.KreplayTestCase):
    def check(self, args, *needles, rc=None, app=True):
        full = list(args) + (["--", e2e.SAMPLE_APP] if app else [])
        r = self.kreplay(*full)
        line = self.assert_one_line_error(r, *needles, rc=rc)
        self.assertNotIn("sample-app:", r.stdout, "the application must not run\n{}".format(r))
        self.assertEqual(e2e.find_files(self.tmp, "*_results.db"), [], str(r))
        return line

    def test_unknown_option_suggests_the_closest(self):
        self.check(["--pmcc", "ops"], "unknown option --pmcc", "did you mean --pmc?")
        self.check(["--kernel-include-regx", "a"], "--kernel-include-regx",
                   "did you mean --kernel-include-regex?")
        self.check(["--output-dir", "x"], "--output-dir", "did you mean --output-directory?")

    def test_unknown_counter_suggests_a_close_name(self):
        r = self.kreplay("--pmc", "threads_lanched", "--", e2e.SAMPLE_APP)
        self.assertEqual(r.rc, 2, str(r))
        errors = [l for l in r.stderr.splitlines() if l.startswith("==KREPLAY== error:")]
        # One line, naming the counter and the close one (the tool checks counters inside the
        # application process, where the device is known, and stops it there with status 2).
        self.assertEqual(len(errors), 1, str(r))
        self.assertIn("threads_lanched", errors[0])
        self.assertIn("did you mean threads_launched", errors[0])
        # Nothing was collected, so no (empty) results file is left behind.
        self.assertEqual(e2e.find_files(self.tmp, "*_results.*"), [], str(r))
        self.assertNotIn("sample-app:", r.stdout, "no launch ran\n{}".format(r))
        for bad in ("Traceback", "terminate called", "Segmentation fault", "core dumped"):
            self.assertNotIn(bad, r.stderr)

    def test_unknown_metric_and_pmc_check_counter(self):
        self.check(["--pmc-check", "bytes_writen"], "bytes_writen", "bytes_written", app=False)
        r = self.kreplay("--metrics", "ops,launchez", "--", e2e.SAMPLE_APP)
        self.assertEqual(r.rc, 2, str(r))
        self.assertIn("launchez", r.stderr)
        self.assertIn("launches", r.stderr)

    def test_input_file_that_does_not_parse_json(self):
        path = os.path.join(self.tmp, "bad.json")
        with open(path, "w") as f:
            f.write('{\n  "jobs": [\n    {"pmc": ["ops"],}\n  ]\n}\n')
        self.check(["-i", path], "bad.json:3:21:", "JSON")

    def test_input_file_that_does_not_parse_yaml(self):
        path = os.path.join(self.tmp, "bad.yaml")
        with open(path, "w") as f:
            f.write("jobs:\n  - pmc: [ops\n  - pmc: launches\n")
        self.check(["-i", path], re.compile(r"bad\.yaml:[23]:\d+: "), "YAML")

    def test_input_file_with_a_bad_value(self):
        path = os.path.join(self.tmp, "value.yaml")
        with open(path, "w") as f:
            f.write("jobs:\n  - pmc: [ops]\n    launch_skip: many\n")
        self.check(["-i", path], "value.yaml:3:5:", "jobs[0].launch_skip", "integer")

    def test_bad_regex(self):
        self.check(["--kernel-include-regex", "(abc"], "--kernel-include-regex", "(abc",
                   "missing )")
        self.check(["--kernel-exclude-regex", "a**"], "--kernel-exclude-regex", "a**")
        self.check(["-k", "regex:[z-a]"], "[z-a]")

    def test_bad_iteration_range(self):
        self.check(["--kernel-iteration-range", "[3-1]"], "--kernel-iteration-range", "[3-1]",
                   "reversed")
        self.check(["--kernel-iteration-range", "[2-"], "--kernel-iteration-range", "[2-")
        self.check(["--kernel-iteration-range", "0"], "--kernel-iteration-range")

    def test_bad_values(self):
        self.check(["--replay-mode", "kernal", "--pmc", "ops"], "--replay-mode", "kernal",
                   "did you mean kernel?")
        self.check(["--output-format", "jsn"], "--output-format", "jsn", "did you mean json?")
        self.check(["--launch-skip", "abc"], "--launch-skip", "abc")
        self.check(["--launch-count", "0"], "--launch-count", "at least 1")
        self.check(["--replay-memory", "some"], "--replay-memory", "some")
        self.check(["-o", "%foo%"], "%foo%", "unknown token")
        self.check(["--replay-mode", "kernel", "--set", "none"], "--replay-mode kernel", "--pmc")
        self.check(["--pmc", "ops", "--pmc", "launches", "--replay-mode", "application",
                    "--metrics", "ops"], "--metrics", "application")

    def test_option_given_twice(self):
        self.check(["-d", "a", "-d", "b"], "more than once")

    def test_missing_application(self):
        self.check(["--pmc", "ops"], "no application to profile", app=False)
        self.check(["--pmc", "ops", "--"], "no application to profile", app=False)

    def test_application_swallowed_by_a_list_option(self):
        self.check(["--pmc", "ops", e2e.SAMPLE_APP], "looks like a path", app=False)

    def test_application_that_does_not_exist(self):
        missing = os.path.join(self.tmp, "no-such-app")
        r = self.kreplay("--pmc", "ops", "--", missing)
        line = self.assert_one_line_error(r, missing, "No such file", rc=127)
        self.assertIn("cannot run", line)
        r = self.kreplay("--", "no-such-app-on-the-path-kreplay")
        self.assert_one_line_error(r, "no-such-app-on-the-path-kreplay", rc=127)

    def test_application_that_uses_no_gpu(self):
        # It runs and exits 0, but kreplay never got in: say so instead of ending in silence.
        r = self.kreplay("--pmc", "ops", "--", "/bin/true")
        self.assertEqual(r.rc, 0, str(r))
        lines = [l for l in r.stderr.splitlines() if l.startswith("==KREPLAY==")]
        self.assertEqual(len(lines), 1, str(r))
        self.assertTrue(lines[0].startswith("==KREPLAY== warning: '/bin/true' finished without kreplay"), lines[0])
        self.assertIn("nothing was collected", lines[0])
        self.assertEqual(e2e.find_files(self.tmp, "*_results.*"), [], str(r))
        # An application that does use the (host) device gets no such warning.
        r = self.kreplay("--pmc", "ops", "--", e2e.SAMPLE_APP)
        self.assertEqual(r.rc, 0, str(r))
        self.assertNotIn("nothing was collected", r.stderr)

    def test_application_that_is_not_executable(self):
        path = os.path.join(self.tmp, "data.txt")
        with open(path, "w") as f:
            f.write("not a program\n")
        r = self.kreplay("--", path)
        self.assert_one_line_error(r, path, "Permission denied")

    def test_unset_variable_in_an_output_name(self):
        os.environ.pop("KREPLAY_E2E_SURELY_UNSET", None)
        r = self.kreplay("-o", "%q{KREPLAY_E2E_SURELY_UNSET}_%p", "--", e2e.SAMPLE_APP)
        self.assertEqual(r.rc, 2, str(r))
        errors = [l for l in r.stderr.splitlines() if l.startswith("==KREPLAY== error:")]
        self.assertIn("KREPLAY_E2E_SURELY_UNSET", errors[0])
        self.assertIn("not set", errors[0])
        self.assertNotIn("sample-app: launch", r.stdout)


if __name__ == "__main__":
    e2e.main()
