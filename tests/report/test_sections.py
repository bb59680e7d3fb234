"""Every metric a section names is a GH100 metric (issue 14, item 1).

Each counter of share/kreplay/sections/*.yaml must be listed by `kreplay --list-avail --chip
GH100` (its base name) and accepted by `kreplay --pmc-check --chip GH100` (the full name, with
its rollup and submetric), so a typo in a section file fails here. Where kreplay is built without
CUPTI the base names are checked against testdata/gh100_metrics.txt.gz (the same list, saved)
and the suffixes against the forms Nsight Compute metric names take. Also: the sets name real
sections, basic stays cheap (at most 2 passes on GH100) and the checker itself catches a typo.
"""

import glob
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_e2e as rep  # noqa: E402
from report_e2e import e2e  # noqa: E402

SNAPSHOT = os.path.join(rep.HERE, "testdata", "gh100_metrics.txt.gz")
ROLLUPS = {"sum", "avg", "min", "max"}
SUBMETRICS = {"per_second", "per_cycle_elapsed", "per_cycle_active", "pct_of_peak_sustained_elapsed",
              "pct_of_peak_sustained_active", "peak_sustained", "pct", "ratio", "max_rate"}


def metric_names(path):
    """The metric names of a section file, without a YAML library (a bare Debian python3 has
    none): the name of each list item under the top-level key metrics."""
    names, key = [], None
    with open(path) as f:
        for line in f:
            top = re.match(r"^([A-Za-z_]+):", line)
            if top:
                key = top.group(1)
                continue
            m = re.match(r"^\s*- \{?\s*name:\s*([^,}\s]+)", line)
            if key == "metrics" and m:
                names.append(m.group(1).strip("\"'"))
    return names


def section_counters(folder):
    """(file, metric name) of every counter in the section files of @p folder."""
    out = []
    for path in sorted(glob.glob(os.path.join(folder, "*.yaml"))):
        if os.path.basename(path) == "sets.yaml":
            continue
        for name in metric_names(path):
            if not name.startswith(("launch.", "device.")):
                out.append((os.path.basename(path), name))
    return out


def live_list():
    """Base names from the built kreplay, or None when it has no CUPTI."""
    p = subprocess.run([e2e.KREPLAY, "--list-avail", "--chip", "GH100"], capture_output=True,
                       text=True, timeout=120)
    if p.returncode != 0:
        return None
    # The base metrics are the first section; the per-pass services' lists follow, each under a
    # '#' header of its own.
    names, section = set(), 0
    for l in p.stdout.splitlines():
        if l.startswith("#"):
            section += 1
        elif l and section == 1:
            names.add(l.split()[0])
    return names


def snapshot_list():
    with gzip.open(SNAPSHOT, "rt") as f:
        return {l.strip() for l in f if l.strip() and not l.startswith("#")}


def problems(counters, base_names):
    """The counters whose name is not a GH100 metric, with why."""
    bad = []
    for file, name in counters:
        parts = name.split(".")
        if parts[0] not in base_names:
            bad.append("%s: %s: no GH100 metric %s" % (file, name, parts[0]))
        elif len(parts) < 2 or len(parts) > 3 or (
                parts[1] not in ROLLUPS and parts[1] not in ("pct", "ratio")) or (
                len(parts) == 3 and parts[2] not in SUBMETRICS):
            bad.append("%s: %s: not BASE.rollup[.submetric]" % (file, name))
    return bad


class Sections(unittest.TestCase):
    def test_every_section_metric_is_a_gh100_metric(self):
        counters = section_counters(rep.SHARED_SECTIONS)
        self.assertGreater(len(counters), 50)
        live = live_list()
        names = live if live is not None else snapshot_list()
        self.assertEqual(problems(counters, names), [])
        if live is None:
            print("kreplay has no CUPTI: checked against %s" % SNAPSHOT)
            return
        # the saved list is the live one (regenerate it when CUPTI's list changes)
        self.assertEqual(snapshot_list(), live)
        # full names: --pmc-check accepts each section's counters (0 fits, 1 needs passes)
        by_file = {}
        for file, name in counters:
            by_file.setdefault(file, []).append(name)
        for file, names_of_file in sorted(by_file.items()):
            p = subprocess.run([e2e.KREPLAY, "--chip", "GH100", "--pmc-check"] + names_of_file,
                               capture_output=True, text=True, timeout=120)
            self.assertIn(p.returncode, (0, 1), "%s: %s" % (file, p.stdout + p.stderr))

    def test_the_check_catches_a_typo(self):
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder, True)
        shutil.copy(os.path.join(rep.SHARED_SECTIONS, "SpeedOfLight.yaml"), folder)
        path = os.path.join(folder, "SpeedOfLight.yaml")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("gpu__dram_throughput.avg", "gpu__dram_througput.avg")
                        .replace("sm__cycles_active.avg", "sm__cycles_active.mean"))
        bad = problems(section_counters(folder), live_list() or snapshot_list())
        self.assertEqual(len(bad), 2, bad)
        self.assertIn("no GH100 metric gpu__dram_througput", bad[0] + bad[1])
        self.assertIn("sm__cycles_active.mean: not BASE.rollup", bad[0] + bad[1])

    def test_sets_resolve_and_basic_is_cheap(self):
        p = subprocess.run([e2e.KREPLAY, "--list-sets", "--chip", "GH100"], capture_output=True,
                           text=True, timeout=120)
        if p.returncode != 0:  # no CUPTI: one line says so, and the sets still list without --chip
            self.assertIn("built without CUDA", p.stderr)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            p = subprocess.run([e2e.KREPLAY, "--list-sets"], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            return
        m = re.search(r"(?m)^basic .*\((\d+) counters, (\d+) pass(?:es)? on GH100\)$", p.stdout)
        self.assertTrue(m, p.stdout)
        self.assertLessEqual(int(m.group(2)), 2, "basic should stay cheap: " + m.group(0))
        for name in ("detailed", "full"):
            self.assertRegex(p.stdout, r"(?m)^%s .* passes on GH100\)$" % name)


if __name__ == "__main__":
    unittest.main(verbosity=2)
