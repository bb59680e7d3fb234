#!/usr/bin/env python3
"""The peer-suite runner (scripts/cuda_samples_run.py) on fake samples and a fake kreplay: a
verdict that prints a time is the same verdict in every run, a sample whose own run is long gets a
longer limit in the counter modes, and the per-mode summary counts passes, failures and samples
fully declined."""

import json
import os
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "..", "..", "scripts")
sys.path.insert(0, SCRIPTS)
import cuda_samples_run as runner  # noqa: E402


def write_exe(path, body):
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + textwrap.dedent(body))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


class Judge(unittest.TestCase):
    def test_a_verdict_with_a_time_in_it_matches_across_runs(self):
        native = runner.verdicts("CUDA Link Completed in 12.5ms. Linker Output:\nTest passed\n")
        ok, why, _, _ = runner.judge("pass3", 0, "CUDA Link Completed in -43.427055ms. Linker "
                                     "Output:\nTest passed\nKREPLAY_TEST_TOOL replayed=1 declined=0 "
                                     "not_requested=0 passes=3 errors=0\n", native)
        self.assertTrue(ok, why)
        ok, why, _, _ = runner.judge("pass3", 0, "Test passed\n", native)
        self.assertFalse(ok)
        self.assertIn("verdict differs", why)

    def test_failure_lines_and_timeouts_fail(self):
        self.assertFalse(runner.judge("kernel", 0, "Test FAILED\n", [])[0])
        self.assertIn("timed out", runner.judge("kernel", "timeout", "", None)[1])

    def test_a_crash_says_where(self):
        text = ("==KREPLAY== warning: range 3 pass 1: counters not collected\n"
                "==KREPLAY== the application crashed; backtrace:\n"
                "==KREPLAY==   /lib/x86_64-linux-gnu/libc.so.6(+0x45330)[0x7f]\n"
                "==KREPLAY==   /usr/local/nvidia/lib64/libcuda.so.1(+0x4b84d6)[0x7f]\n"
                "==KREPLAY==   /d/lib/libkreplay_cuda.so(_ZN7kreplay4cuda10CudaLaunch8relaunchEv+0x170)"
                "[0x7f]\n==KREPLAY== 30 launches: 28 replayed (280 passes), 0 declined, "
                "0 not selected\n")
        ok, why, _, _ = runner.judge("range", -11, text, None)
        self.assertFalse(ok)
        self.assertIn("crash in libkreplay_cuda.so(_ZN7kreplay4cuda10CudaLaunch8relaunchEv", why)
        self.assertIn("after: warning: range 3 pass 1", why)

    def test_long_samples_get_a_longer_limit(self):
        self.assertEqual(runner.limit(60, "kernel", None), 60)
        self.assertEqual(runner.limit(60, "kernel", 1.0), 60)
        self.assertGreater(runner.limit(60, "kernel", 5.8), 5.8 * 10)
        self.assertGreater(runner.limit(60, "range", 5.8), 5.8 * 10)
        self.assertGreater(runner.limit(60, "pass3", 20.0), 20.0 * 3)


class EndToEnd(unittest.TestCase):
    def test_modes_in_two_calls_with_a_fake_kreplay(self):
        with tempfile.TemporaryDirectory() as tmp:
            bins, dist, out = (os.path.join(tmp, d) for d in ("bin", "dist", "out"))
            os.makedirs(bins)
            os.makedirs(os.path.join(dist, "bin"))
            os.makedirs(os.path.join(dist, "lib"))
            with open(os.path.join(bins, "test_args.json"), "w") as f:
                json.dump({}, f)
            write_exe(os.path.join(bins, "goodSample"), 'echo "Done in $$ ms"; echo "Test passed"\n')
            write_exe(os.path.join(bins, "badSample"), 'echo "Test failed!"; exit 1\n')
            write_exe(os.path.join(bins, "heapSample"), 'echo "Test passed"\n')
            # A sample that reads its own kernel.cu, which shares its name with another sample's
            # (the flat copy): it runs in its _own folder.
            write_exe(os.path.join(bins, "ownSample"),
                      'grep -q mine ./kernel.cu && echo "Test passed" || echo "Test failed!"\n')
            with open(os.path.join(bins, "kernel.cu"), "w") as f:
                f.write("other\n")
            os.makedirs(os.path.join(bins, "_own", "ownSample"))
            with open(os.path.join(bins, "_own", "ownSample", "kernel.cu"), "w") as f:
                f.write("mine\n")
            with open(os.path.join(bins, "data-manifest.txt"), "w") as f:
                f.write("ownSample kernel.cu\nbadSample kernel.cu\n")
            # The fake kreplay runs the application and prints the tally kreplay prints.
            write_exe(os.path.join(dist, "bin", "kreplay"), """\
                while [ "$1" != "--" ]; do shift; done; shift
                case "$1" in
                  *heapSample) echo "==KREPLAY== 2 launches: 0 replayed (0 passes), 2 declined (device_heap: 2), 0 not selected" ;;
                  *) echo "==KREPLAY== 3 launches: 3 replayed (30 passes), 0 declined, 0 not selected" ;;
                esac
                exec "$@"
                """)
            run = lambda *modes, env=None: subprocess.run(
                [sys.executable, os.path.join(SCRIPTS, "cuda_samples_run.py"), bins, dist, out,
                 *modes], capture_output=True, text=True, env={**os.environ, **(env or {})})
            first = run("native")
            self.assertIn("cuda-samples native: 3 passed, 1 failed, 0 fully declined (of 4 run)",
                          first.stdout, first.stdout + first.stderr)
            secs = json.load(open(os.path.join(out, "native-seconds.json")))
            self.assertEqual(sorted(secs), ["goodSample", "heapSample", "ownSample"])
            second = run("kernel", env={"KREPLAY_SAMPLES_NATIVE_JSON":
                                        os.path.join(out, "native.json")})
            self.assertEqual(second.returncode, 0, second.stdout + second.stderr)
            self.assertIn("cuda-samples kernel: 3 passed, 0 failed, 1 fully declined (of 3 run)",
                          second.stdout)
            self.assertRegex(second.stdout, r"heapSample +kernel +DECL")
            # What pack takes: each packed sample's own files, not those of samples left out.
            packed = runner.pack_list(bins)
            self.assertIn(os.path.join("_own", "ownSample", "kernel.cu"), packed)
            self.assertIn("kernel.cu", packed)  # badSample's, which has no folder of its own


if __name__ == "__main__":
    unittest.main()
