#!/usr/bin/env python3
"""Profile the part you care about (issue 31 items 1-3, 6): NVTX selection, --profile-from-start
off and --kernel-id, end to end on the host device, whose runtime makes the NVTX and profiler
calls a CUDA application makes (kreplay-cli-test-app --mark K ACTION: a marker call before launch
K; K = N + 1 is after the last launch).

Every launch of the test app is bump(x), which is right at the end only if every replayed launch
had its memory restored between passes ("cli-test-app: OK"). Each check names the launches that
must be replayed (dispatch ids count from 1 in launch order) and reads the tally and the database.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kreplay_e2e as e2e  # noqa: E402

TWO_PASSES = ("--pmc", "ops", "--pmc", "bytes_read")
MODES = ("kernel", "range", "auto", "application")


def marks(*pairs):
    out = []
    for at, action in pairs:
        out += ["--mark", str(at), action]
    return out


class Markers(e2e.KreplayTestCase):
    def profile(self, options, app_args, mode="kernel", directory=None):
        directory = directory or "out-{}-{}".format(mode, len(os.listdir(self.tmp)))
        r = self.kreplay_ok(*TWO_PASSES, "--replay-mode", mode, "-d", directory, *options, "--",
                            e2e.TEST_APP, *app_args)
        self.assertIn("cli-test-app: OK", r.stdout, str(r))
        dbs = [p for p in e2e.find_files(os.path.join(self.tmp, directory), "*_results.db")
               if "pass_" not in p]  # application replay: the merged database
        self.assertEqual(len(dbs), 1, str(r))
        return r, dbs[0]

    def check_selected(self, options, app_args, launches, selected, modes=MODES):
        """In every mode: exactly `selected` (dispatch ids) kept and replayed, the others not."""
        for mode in modes:
            r, db = self.profile(options, app_args + ["--launches", str(launches)], mode)
            tallies = e2e.tally(r)
            for t in tallies:  # application replay: one tally per run
                self.assertEqual(t["launches"], launches, "{}: {}".format(mode, r))
                self.assertEqual(t["not_selected"], launches - len(selected), "{}: {}".format(mode, r))
                if mode != "application":
                    self.assertEqual(t["replayed"], len(selected), "{}: {}".format(mode, r))
            kept = sorted({row["dispatch_id"] for row in e2e.rows(
                db, "SELECT dispatch_id FROM dispatches")})
            self.assertEqual(kept, sorted(selected), "{}: {}".format(mode, r))
            if mode != "application":
                outcomes = {row["outcome"] for row in e2e.rows(db, "SELECT outcome FROM dispatches")}
                self.assertEqual(outcomes, {"replayed"} if selected else set(), mode)

    # ---- NVTX push/pop ----------------------------------------------------------------------

    def test_a_push_pop_range_in_every_mode(self):
        self.check_selected(["--nvtx-include", "step/"],
                            marks((3, "push:step"), (6, "pop")), 8, [3, 4, 5])

    def test_launch_skip_and_count_count_inside_the_selection(self):
        # Two steps: launches 2-4 and 6-8; skip the first selected launch, then take three.
        self.check_selected(
            ["--nvtx-include", "step/", "--launch-skip", "1", "--launch-count", "3"],
            marks((2, "push:step"), (5, "pop"), (6, "push:step"), (9, "pop")), 10, [3, 4, 6],
            modes=("kernel", "range", "application"))

    def test_nesting_wildcards_anchors_and_excludes(self):
        # launch: 1 -   2 train   3 train>step   4 train>step>fwd   5 train>x>step   6 train
        layout = marks((2, "push:train"), (3, "push:step"), (4, "push:fwd"), (5, "pop"),
                       (5, "pop"), (5, "push:x"), (5, "push:step"), (6, "pop"), (6, "pop"),
                       (7, "pop"))
        cases = (
            (["--nvtx-include", "train/step/"], [3, 4]),
            (["--nvtx-include", "train/*/step"], [3, 4, 5]),
            (["--nvtx-include", "train/+/step"], [5]),
            (["--nvtx-include", "step]"], [3, 5]),
            (["--nvtx-include", "[step/"], []),
            (["--nvtx-include", "train/", "--nvtx-exclude", "fwd/"], [2, 3, 5, 6]),
            (["--nvtx-exclude", "step/"], [1, 2, 6]),
            (["--nvtx-include", "regex:^(fwd|x)$/"], [4, 5]),
        )
        for options, selected in cases:
            with self.subTest(options=options):
                self.check_selected(options, layout, 6, selected, modes=("kernel", "range"))

    def test_domains_and_threads(self):
        # A range of domain "torch" selects only with "torch@"; a push on another thread is that
        # thread's own and selects none of the main thread's launches.
        layout = marks((2, "push:torch@step"), (4, "pop:torch"), (5, "thread-push:step"))
        self.check_selected(["--nvtx-include", "torch@step/"], layout, 6, [2, 3],
                            modes=("kernel", "range"))
        self.check_selected(["--nvtx-include", "step/"], layout, 6, [], modes=("kernel",))

    def test_another_threads_launch_stays_on_its_side_of_the_selection(self):
        # The main thread pushes step before its launch 2 and pops before 4; another thread
        # launches on the same stream just after the push (dispatch 2, outside: its own push/pop
        # stack is empty). In range replay another thread's work on a shared stream may join a
        # range, but an NVTX selection is per thread: the main thread's selected launches
        # (dispatches 3 and 4) must not join the other thread's range of one pass, or they would
        # not be replayed (seen on an H100 with PyTorch's autograd thread).
        layout = marks((2, "push:step"), (2, "thread-launch"), (4, "pop"))
        for mode in ("kernel", "range"):
            r, db = self.profile(["--nvtx-include", "step/"], layout + ["--launches", "5"], mode)
            (t,) = e2e.tally(r)
            self.assertEqual((t["launches"], t["replayed"], t["not_selected"]), (6, 2, 4),
                             "{}: {}".format(mode, r))
            rows = e2e.rows(db, "SELECT dispatch_id, outcome FROM dispatches ORDER BY dispatch_id")
            self.assertEqual([(row["dispatch_id"], row["outcome"]) for row in rows],
                             [(3, "replayed"), (4, "replayed")], mode)

    # ---- NVTX start/end -----------------------------------------------------------------------

    def test_start_end_ranges_are_the_processes(self):
        # epoch from launch 2 to 4 on the main thread; eval started by another thread before 5.
        layout = marks((2, "start:epoch"), (5, "end:epoch"), (5, "thread-start:eval"),
                       (3, "start:d@warm"), (4, "end:d@warm"))
        self.check_selected(["--nvtx-include", "epoch"], layout, 6, [2, 3, 4])
        self.check_selected(["--nvtx-include", "eval"], layout, 6, [5, 6], modes=("kernel", "range"))
        self.check_selected(["--nvtx-include", "d@warm"], layout, 6, [3], modes=("kernel", "range"))
        self.check_selected(["--nvtx-include", "d@warm", "--nvtx-include", "epoch"], layout, 6,
                            [2, 3, 4], modes=("kernel",))  # includes are alternatives
        self.assert_one_line_error(self.kreplay("--nvtx-include", "epoch,d@warm", "--",
                                                e2e.TEST_APP),
                                   "the domain applies to the whole expression", rc=2)
        self.check_selected(["--nvtx-include", "epoch", "--nvtx-exclude", "d@warm"], layout, 6,
                            [2, 4], modes=("kernel", "range"))

    # ---- profiler start/stop ------------------------------------------------------------------

    def test_profile_from_start_off_in_every_mode(self):
        self.check_selected(["--profile-from-start", "off"],
                            marks((3, "pstart"), (5, "pstop"), (7, "pstart")), 8, [3, 4, 7, 8])

    def test_profile_from_start_on_ignores_the_calls(self):
        self.check_selected(["--profile-from-start", "on"], marks((3, "pstop")), 4, [1, 2, 3, 4],
                            modes=("kernel",))

    def test_profile_from_start_and_nvtx_together(self):
        self.check_selected(["--profile-from-start", "off", "--nvtx-include", "step/"],
                            marks((2, "push:step"), (3, "pstart"), (5, "pop")), 6, [3, 4],
                            modes=("kernel", "range"))

    def test_range_markers_cuda_profiler_says_it_is_the_same_selection(self):
        r, db = self.profile(["--range-markers", "cuda-profiler"],
                             ["--launches", "6"] + marks((3, "pstart"), (5, "pstop")), "range")
        said = [l for l in r.kreplay_lines if "same selection as --profile-from-start off" in l]
        self.assertEqual(len(said), 1, str(r))
        self.assertEqual(e2e.tally(r)[0]["replayed"], 2, str(r))

    # ---- range replay: ranges close where the selection changes ---------------------------------

    def test_ranges_close_where_the_selection_changes(self):
        r, db = self.profile(["--nvtx-include", "step/"],
                             ["--launches", "9"] + marks((4, "push:step"), (7, "pop")), "range")
        line = [l for l in r.kreplay_lines if "ranges held" in l]
        self.assertEqual(len(line), 1, str(r))
        self.assertIn("closed by marker 2", line[0])
        # The selected range saved memory; the ranges outside it ran as one pass, saving nothing.
        snap = e2e.rows(db, "SELECT dispatch_id FROM dispatches WHERE bytes_snapshotted > 0")
        self.assertEqual([row["dispatch_id"] for row in snap], [4], str(r))
        self.assertEqual(e2e.tally(r)[0]["replayed"], 3, str(r))

    # ---- --kernel-id and --kernel-name-base ---------------------------------------------------

    def test_kernel_id(self):
        # --two-kernels: bump at odd launches, mark at even ones.
        for kid, selected in (("::bump:2", [3]), ("::mark:", [2, 4, 6]), ("0::regex:^ma:1", [2]),
                              ("1:::", []), (":::3", [5, 6])):
            with self.subTest(kernel_id=kid):
                self.check_selected(["--kernel-id", kid], ["--two-kernels"], 6, selected,
                                    modes=("kernel", "range"))

    def test_kernel_name_base(self):
        for options, selected in ((["-k", "bump"], [1, 3]),
                                  (["-k", "bump", "--kernel-name-base", "mangled"], []),
                                  (["-k", "_Z4bumpPjj", "--kernel-name-base", "mangled"], [1, 3]),
                                  (["-k", "regex:unsigned", "--kernel-name-base", "demangled"],
                                   [1, 2, 3, 4]),
                                  (["--kernel-id", "::_Z4markPjj:2", "--kernel-name-base",
                                    "mangled"], [4])):
            with self.subTest(options=options):
                self.check_selected(options, ["--two-kernels"], 4, selected, modes=("kernel",))

    # ---- input files ----------------------------------------------------------------------

    def test_input_file_keys(self):
        with open(os.path.join(self.tmp, "jobs.yaml"), "w") as f:
            f.write("jobs:\n  - pmc: [ops]\n  - pmc: [bytes_read]\n    nvtx_include:\n"
                    "      - step/\n    profile_from_start: off\n")
        # Job 2 only: an application run per job; the second selects launches 3 and 4.
        r = self.kreplay_ok("-i", "jobs.yaml", "-d", "jobs", "--", e2e.TEST_APP, "--launches",
                            "5", *marks((2, "push:step"), (3, "pstart"), (5, "pop")))
        tallies = e2e.tally(r)
        self.assertEqual([t["not_selected"] for t in tallies], [0, 3], str(r))
        with open(os.path.join(self.tmp, "bad.json"), "w") as f:
            f.write('{"jobs": [{"pmc": ["ops"], "nvtx_include": "a//b"}]}')
        r = self.kreplay("-i", "bad.json", "--", e2e.TEST_APP)
        self.assert_one_line_error(r, "nvtx_include", "empty", rc=2)

    # ---- bad input: one line, the problem and the fix -------------------------------------------

    def test_bad_input_is_one_line(self):
        for args, needles in (
                (["--nvtx-include", "a//b"], ["--nvtx-include \"a//b\"", "empty", "write it like"]),
                (["--nvtx-exclude", "regex:("], ["--nvtx-exclude", "not a valid regular expression"]),
                (["--nvtx-include", "D@"], ["no range after the domain"]),
                (["--kernel-id", "gemm"], ["--kernel-id \"gemm\"", "three ':'",
                                           "context:stream:name:invocation"]),
                (["--kernel-id", "x::gemm:1"], ["context \"x\" is not a number"]),
                (["--kernel-name-base", "short"], ["--kernel-name-base", "function, demangled or mangled"]),
                (["--profile-from-start", "maybe"], ["--profile-from-start", "on or off"])):
            with self.subTest(args=args):
                r = self.kreplay(*args, "--", e2e.TEST_APP)
                self.assert_one_line_error(r, *needles, rc=2)
                self.assertEqual(r.stdout, "", str(r))


if __name__ == "__main__":
    e2e.main()
