"""The kreplay Python package (issue 14, item 4), tested with pandas from PyPI.

A virtual environment in the build tree (<build>/python-venv, made once and reused) gets
`pip install ./python[pandas]` (a copy of python/ and share/kreplay/sections, so the source tree
stays clean); this file then runs itself inside it. Checked: the package's own unit tests, the
same numbers as `kreplay report --format json` on databases of kernel, range and application
replay, per launch, with a baseline and on an older database; the DataFrames; and that report()
works without pandas. Skips (77) only when no virtual environment or no PyPI can be had.
"""

import json
import math
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_e2e as rep  # noqa: E402
from report_e2e import e2e  # noqa: E402

INSIDE = "KREPLAY_PYTHON_TEST_INSIDE_VENV"


def venv_dir():
    build = os.environ.get("KREPLAY_BUILD_DIR") or os.path.join(rep.SOURCE, "build")
    return os.path.join(build, "python-venv")


def setup_venv():
    """The venv's python with pandas and this checkout's package installed; None to skip."""
    venv = venv_dir()
    py = os.path.join(venv, "bin", "python")
    marker = os.path.join(venv, ".kreplay-deps")
    quiet = dict(stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if not os.path.exists(marker):
        shutil.rmtree(venv, ignore_errors=True)
        p = subprocess.run([sys.executable, "-m", "venv", venv], **quiet)
        if p.returncode != 0:
            print("SKIP: cannot make a virtual environment (python3-venv?):\n" + p.stdout)
            return None
        p = subprocess.run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                            "pandas", "PyYAML", "setuptools>=61", "wheel"], **quiet)
        if p.returncode != 0:
            print("SKIP: cannot install pandas from PyPI:\n" + p.stdout[-3000:])
            return None
        open(marker, "w").close()
    # This checkout's package, from a copy laid out as the repository is.
    stage = os.path.join(venv, "src")
    shutil.rmtree(stage, ignore_errors=True)
    shutil.copytree(os.path.join(rep.SOURCE, "python"), os.path.join(stage, "python"),
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    shutil.copytree(rep.SHARED_SECTIONS, os.path.join(stage, "share", "kreplay", "sections"))
    p = subprocess.run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        "--no-deps", "--no-build-isolation", "--force-reinstall",
                        os.path.join(stage, "python") + "[pandas]"], **quiet)
    if p.returncode != 0:
        raise SystemExit("pip install ./python failed:\n" + p.stdout)
    return py


def assert_same(test, a, b, path="report"):
    """Equal structures; numbers equal to 1e-12 relative (they come out bit for bit here)."""
    if isinstance(a, dict):
        test.assertEqual(sorted(a), sorted(b), path)
        for k in a:
            assert_same(test, a[k], b[k], path + "." + k)
    elif isinstance(a, list):
        test.assertEqual(len(a), len(b), path)
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(test, x, y, "%s[%d]" % (path, i))
    elif isinstance(a, float) or isinstance(b, float):
        test.assertTrue(a is not None and b is not None and
                        math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12), "%s: %r vs %r"
                        % (path, a, b))
    else:
        test.assertEqual(a, b, path)


class SameNumbersAsKreplayReport(rep.ReportCase):
    def compare(self, db, *args, **kw):
        import kreplay
        out = json.loads(self.report(db, "--section-folder", rep.TEST_SECTIONS, "--format",
                                     "json", *args).stdout)
        mine = kreplay.load(db).report(section_folders=[rep.TEST_SECTIONS], **kw)
        assert_same(self, out, mine)
        return mine

    def test_kernel_range_and_application_replay(self):
        kernel = self.kernel_db()
        report = self.compare(kernel)
        self.assertEqual(len(report["subjects"]), 2)
        self.assertTrue(any(s["rules"] for subject in report["subjects"]
                            for s in subject["sections"]))
        self.compare(kernel, "--launch", "all", launch="all")
        self.compare(kernel, "--launch", "5", launch=5)
        self.compare(kernel, "-k", "regex:sum", kernel="regex:sum")
        self.compare(kernel, "-k", "scale_add", kernel="scale_add")
        self.compare(kernel, "--section", "HostCounts", sections=["HostCounts"])
        self.compare(self.range_db(), "--launch", "all", launch="all")
        self.compare(self.range_db("range2"))
        self.compare(self.application_db())
        self.compare(rep.old_database(self.tmp))

    def test_baseline(self):
        new, old = self.kernel_db("new"), self.kernel_db("old")
        report = self.compare(new, "--baseline", old, baseline=old)
        values = [v for s in report["subjects"] for sec in s["sections"] for v in sec["values"]]
        self.assertTrue(all(v["baseline"] is not None for v in values if v["value"] is not None))
        self.compare(new, "--baseline", old, "--launch", "all", baseline=old, launch="all")

    def test_the_default_set_on_the_host_device(self):
        import kreplay
        db = self.profile([], name="default")
        out = json.loads(self.report(db, "--format", "json").stdout)
        assert_same(self, out, kreplay.load(db).report())


class DataFrames(rep.ReportCase):
    def test_tables(self):
        import kreplay
        import pandas as pd
        db = self.kernel_db()
        run = kreplay.load(db)
        launches = run.launches()
        self.assertIsInstance(launches, pd.DataFrame)
        self.assertEqual(len(launches), 10)
        for column in ("dispatch_id", "kernel_name", "grid_x", "block_x", "outcome",
                       "passes_executed", "duration_ns"):
            self.assertIn(column, launches)
        self.assertEqual([k.split("(")[0] for k in launches.sort_values("dispatch_id")
                          ["kernel_name"]], e2e.SAMPLE_ORDER)
        long = run.counters()
        n = e2e.rows(db, "SELECT count(*) AS n FROM counters")[0]["n"]
        self.assertEqual(len(long), n)
        self.assertEqual(set(long["name"]), {"duration_ns", "ops", "bytes_read", "bytes_written",
                                             "threads_launched", "blocks_launched"})
        wide = run.counters(wide=True)
        self.assertEqual(len(wide), 10)
        self.assertIn("ops", wide)
        self.assertEqual(list(wide.sort_values("dispatch_id")["threads_launched"])[:2],
                         [1024.0, 4096.0])
        self.assertEqual(len(run.passes()), e2e.rows(db, "SELECT count(*) AS n FROM passes")[0]["n"])
        phases = run.replay_phases()
        self.assertEqual(set(phases["phase"]), {"snapshot", "restore"})
        kernels = run.kernels()
        self.assertEqual(sorted(kernels["launches"]), [4, 6])
        self.assertEqual(run.run()["replay_mode"][0], "kernel")
        self.assertIsInstance(run.run()["counter_names"][0], list)
        self.assertEqual(len(run.devices()), 1)
        frame = run.report_frame(section_folders=[rep.TEST_SECTIONS])
        self.assertEqual(set(frame["section"]), {"LaunchStats", "HostSpeedOfLight",
                                                 "HostRoofline", "HostCounts"})
        self.assertTrue(run.rules(section_folders=[rep.TEST_SECTIONS]))
        self.assertEqual(run.sql("SELECT count(*) AS n FROM dispatches")["n"][0], 10)
        self.assertEqual(run.metadata()["schema_version"], "3")

    def test_report_works_without_pandas(self):
        db = self.kernel_db()
        code = ("import sys, json; sys.modules['pandas'] = None; import kreplay; "
                "r = kreplay.load(sys.argv[1]); rep = r.report(); print(len(rep['subjects']))\n"
                "try:\n    r.launches()\nexcept ImportError as e:\n    print('ImportError', e)\n")
        p = subprocess.run([sys.executable, "-c", code, db], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(lines[0], "2")
        self.assertIn("pip install 'kreplay[pandas]'", lines[1])

    def test_the_installed_package_carries_the_sections(self):
        import kreplay.sections
        folders = kreplay.sections.default_section_folders()
        self.assertTrue(os.path.exists(os.path.join(folders[0], "SpeedOfLight.yaml")), folders)


def main_inside():
    env_cases = os.path.join(rep.HERE, "testdata", "expr_cases.json")
    os.environ["KREPLAY_EXPR_CASES"] = env_cases
    # the sections kreplay report reads (the build tree's copy of share/kreplay/sections)
    os.environ.pop("KREPLAY_SECTIONS_DIR", None)
    sys.path.insert(0, os.path.join(rep.SOURCE, "python", "tests"))
    import test_expr  # noqa: E402
    loader = unittest.defaultTestLoader
    suite = unittest.TestSuite([loader.loadTestsFromModule(test_expr),
                                loader.loadTestsFromTestCase(SameNumbersAsKreplayReport),
                                loader.loadTestsFromTestCase(DataFrames)])
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    if os.environ.get(INSIDE):
        main_inside()
    py = setup_venv()
    if py is None:
        sys.exit(77)
    env = dict(os.environ, **{INSIDE: "1"})
    sys.exit(subprocess.run([py, os.path.abspath(__file__)], env=env).returncode)
