#!/usr/bin/env python3
"""Runs that collect nothing say so ("Profile the part you care about", item 4).

- A kernel filter, an iteration range or a launch window that selected no launch of a run that
  made launches: one warning at exit names the filter, the launches and kernels the run saw and,
  for a name or regex, the closest kernel names (kernel and range replay alike). The tally line
  stays as it was.
- A service's pass position past the run's counter passes is refused in one line before any
  launch: by the command when the run has no counters, else by the tool at initialize (exit 2).
- Every counted pass lost its counters: one error, shown under -q too, with the usual cause and
  what to do; the exit status stays 0.

The sample app launches scale_add 6 times and sum_reduce 4 times; the CLI test app with
--two-kernels launches bump and mark twice each.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kreplay_e2e as e2e  # noqa: E402

NONE_SELECTED = " selected none of "


def none_selected(result):
    return [l for l in result.kreplay_lines if NONE_SELECTED in l]


class NothingSelected(e2e.KreplayTestCase):
    def check_said(self, result, expected_line, launches=10):
        """Exactly one warning, expected_line; the tally line as before (all not selected)."""
        lines = none_selected(result)
        self.assertEqual(lines, ["==KREPLAY== warning: " + expected_line], str(result))
        tally = e2e.tally(result)
        self.assertEqual(len(tally), 1, str(result))
        self.assertEqual((tally[0]["launches"], tally[0]["replayed"], tally[0]["not_selected"]),
                         (launches, 0, launches), str(result))

    def test_a_kernel_name_that_matches_nothing_names_the_closest(self):
        r = self.sample("--pmc", "ops", "-k", "nosuchkernel")
        self.check_said(r, "-k nosuchkernel selected none of 10 launches of 2 kernels; the closest "
                           "kernel names: scale_add, sum_reduce")
        # A typo: the kernel it meant comes first.
        r = self.sample("--pmc", "ops", "-k", "sum_reduse", "-d", "typo")
        self.check_said(r, "-k sum_reduse selected none of 10 launches of 2 kernels; the closest "
                           "kernel names: sum_reduce, scale_add")
        # Four launches of two kernels (the example).
        r = self.kreplay_ok("--pmc", "ops", "-k", "nosuchkernel", "-d", "four", "--",
                            e2e.TEST_APP, "--two-kernels")
        self.check_said(r, "-k nosuchkernel selected none of 4 launches of 2 kernels; the closest "
                           "kernel names: bump, mark", launches=4)

    def test_a_regex_that_matches_nothing(self):
        r = self.sample("--pmc", "ops", "--kernel-include-regex", "^sum_reduse")
        self.check_said(r, "--kernel-include-regex ^sum_reduse selected none of 10 launches of 2 "
                           "kernels; the closest kernel names: sum_reduce, scale_add")
        r = self.sample("--pmc", "ops", "-k", "regex:^scale_ad$", "-d", "k")
        self.check_said(r, "-k regex:^scale_ad$ selected none of 10 launches of 2 kernels; the "
                           "closest kernel names: scale_add, sum_reduce")
        # An exclude regex that excludes everything: no names (they are the ones it excluded).
        r = self.sample("--pmc", "ops", "--kernel-exclude-regex", ".", "-d", "x")
        self.check_said(r, "--kernel-exclude-regex . selected none of 10 launches of 2 kernels")

    def test_launch_skip_past_the_end(self):
        r = self.sample("--pmc", "ops", "--launch-skip", "1000")
        self.check_said(r, "--launch-skip 1000 selected none of 10 launches of 2 kernels")
        r = self.kreplay_ok("--pmc", "ops", "--launch-skip", "1000", "-d", "four", "--",
                            e2e.TEST_APP)
        self.check_said(r, "--launch-skip 1000 selected none of 4 launches of 1 kernel",
                        launches=4)

    def test_iteration_range_past_the_end(self):
        # scale_add has 6 launches, sum_reduce 4: the 7th of either never comes.
        r = self.sample("--pmc", "ops", "--kernel-iteration-range", "[7-9, 12]")
        self.check_said(r, "--kernel-iteration-range \"[7-9, 12]\" selected none of 10 launches "
                           "of 2 kernels")

    def test_range_replay_says_it_too(self):
        for i, (filters, line) in enumerate((
                (["-k", "nosuchkernel"],
                 "-k nosuchkernel selected none of 10 launches of 2 kernels; the closest kernel "
                 "names: scale_add, sum_reduce"),
                (["--launch-skip", "1000"],
                 "--launch-skip 1000 selected none of 10 launches of 2 kernels"),
                (["--kernel-iteration-range", "7"],
                 "--kernel-iteration-range 7 selected none of 10 launches of 2 kernels"))):
            d = "range{}".format(i)
            r = self.sample("--pmc", "ops", "--pmc", "launches", "--replay-mode", "range",
                            "-d", d, *filters)
            self.check_said(r, line)
            db = self.db_of(r, os.path.join(self.tmp, d))
            self.assertEqual(e2e.rows(db, "SELECT replay_mode FROM run")[0]["replay_mode"],
                             "range")

    def test_marker_filters_and_kernel_ids_say_it_too(self):
        # The sample app makes no NVTX or profiler calls.
        for i, (filters, line) in enumerate((
                (["--nvtx-include", "step/"],
                 "--nvtx-include step/ selected none of 10 launches of 2 kernels"),
                (["--nvtx-include", "train step/", "--nvtx-exclude", "warmup/"],
                 "--nvtx-include \"train step/\" and --nvtx-exclude warmup/ selected none of 10 "
                 "launches of 2 kernels"),
                (["--profile-from-start", "off"],
                 "--profile-from-start off (no launch came between cudaProfilerStart and "
                 "cudaProfilerStop) selected none of 10 launches of 2 kernels"),
                (["--kernel-id", "::scale_add:7"],
                 "--kernel-id ::scale_add:7 selected none of 10 launches of 2 kernels"))):
            for mode in ("kernel", "range"):
                r = self.sample("--pmc", "ops", "--pmc", "launches", "--replay-mode", mode,
                                "-d", "m{}{}".format(i, mode), *filters)
                self.check_said(r, line)

    def test_a_run_that_selects_launches_says_nothing_of_it(self):
        for i, filters in enumerate((["-k", "scale_add"], ["--launch-skip", "9"],
                                     ["--kernel-iteration-range", "6"],
                                     ["-k", "sum_reduce", "--replay-mode", "range"],
                                     [])):
            r = self.sample("--pmc", "ops", "--pmc", "launches", "-d", "sel{}".format(i),
                            *filters)
            self.assertEqual(none_selected(r), [], str(r))
            self.assertGreater(e2e.tally(r)[0]["replayed"], 0, str(r))
            self.assertEqual([l for l in r.kreplay_lines if "warning:" in l], [], str(r))


class PassPositionPastTheCounterPasses(e2e.KreplayTestCase):
    def check_refused(self, result, *needles):
        line = self.assert_one_line_error(result, *needles, rc=2)
        self.assertEqual(result.stdout, "", "the application must not run\n{}".format(result))
        self.assertEqual(e2e.find_files(self.tmp, "*_results.*"), [], str(result))
        return line

    def test_the_tool_refuses_a_position_past_the_devices_counter_passes(self):
        # One counter group is one pass on the host device: 1 is the largest position.
        r = self.kreplay("--pmc", "ops", "--pc-sampling", "--pc-sampling-pass-position", "99",
                         "--", e2e.SAMPLE_APP)
        self.check_refused(r, "--pc-sampling-pass-position 99 is past the counter passes",
                           "the run has 1 counter pass on this device",
                           "the largest position is 1")
        # Two groups: 2 fits, 3 does not; under -q the line still shows.
        r = self.kreplay("-q", "--pmc", "ops", "--pmc", "launches", "--timing-pass",
                         "--timing-pass-position", "3", "--", e2e.SAMPLE_APP)
        self.check_refused(r, "--timing-pass-position 3 is past the counter passes",
                           "the largest position is 2")
        self.assertEqual(len(r.kreplay_lines), 1, str(r))
        r = self.sample("--pmc", "ops", "--pmc", "launches", "--timing-pass",
                        "--timing-pass-position", "2")
        self.assertEqual(e2e.tally(r)[0]["passes"], 30, str(r))

    def test_the_command_refuses_a_position_in_a_run_without_counters(self):
        r = self.kreplay("--pc-sampling", "--pc-sampling-pass-position", "3", "--",
                         e2e.SAMPLE_APP)
        line = self.check_refused(r, "--pc-sampling-pass-position 3 is past the counter passes",
                                  "the run collects no counters", "the largest position is 0")
        self.assertTrue(line.endswith("; drop --pc-sampling-pass-position"), line)
        r = self.kreplay("--set", "none", "--source-counters", "--sass-metrics-pass-position",
                         "1", "--replay-mode", "range", "--", e2e.SAMPLE_APP)
        self.check_refused(r, "--sass-metrics-pass-position 1 is past the counter passes",
                           "the largest position is 0")


class EveryCounterPassLost(e2e.KreplayTestCase):
    FAIL_ALL = {"KREPLAY_HOST_FAIL_COUNTER_PASSES": "100000"}

    def lost_lines(self, result):
        return [l for l in result.kreplay_lines if "counted passes were lost" in l]

    def check_error(self, result, passes):
        self.assertEqual(result.rc, 0, "the exit status is as before\n{}".format(result))
        self.assertIn("sample-app: OK", result.stdout, str(result))
        lines = self.lost_lines(result)
        self.assertEqual(len(lines), 1, str(result))
        line = lines[0]
        self.assertTrue(line.startswith(
            "==KREPLAY== error: the counters of all {} counted passes were lost (".format(passes)),
            line)
        for needle in ("KREPLAY_HOST_FAIL_COUNTER_PASSES",  # the device's reason
                       "so this run has no counter values",
                       "another profiler holding the GPU's counters (ncu, or a DCGM or "
                       "nvidia-smi profiling session)",
                       "stop it and run again, or run without counters (--set none)"):
            self.assertIn(needle, line)
        return line

    def test_said_as_an_error_that_shows_under_quiet(self):
        r = self.kreplay("-q", "--pmc", "ops", "--", e2e.SAMPLE_APP, env=self.FAIL_ALL)
        self.check_error(r, 10)
        self.assertEqual(len(r.kreplay_lines), 1, "-q shows the error alone\n{}".format(r))

    def test_kernel_and_range_replay_with_the_tally_unchanged(self):
        for mode in ("kernel", "range"):
            r = self.kreplay("--pmc", "ops", "--pmc", "launches", "--replay-mode", mode,
                             "-d", mode, "--", e2e.SAMPLE_APP, env=self.FAIL_ALL)
            self.check_error(r, 20)
            tally = [l for l in r.kreplay_lines if " launches: " in l]
            self.assertEqual(len(tally), 1, str(r))
            self.assertTrue(tally[0].endswith("; the counters of 20 passes were lost "
                                              "(counter_status 'lost' in the passes table)"),
                            tally[0])

    def test_not_said_when_some_passes_kept_their_counters(self):
        r = self.sample("--pmc", "ops", env={"KREPLAY_HOST_FAIL_COUNTER_PASSES": "3"})
        self.assertEqual(self.lost_lines(r), [], str(r))
        self.assertEqual([l for l in r.kreplay_lines if " error:" in l], [], str(r))
        r = self.sample("--pmc", "ops", "-d", "none")
        self.assertEqual(self.lost_lines(r), [], str(r))


if __name__ == "__main__":
    e2e.main()
