"""kreplay report on a large database (issue 14, item 6): a benchmark, not a timed test.

Generates a results database with 1,000,000 counter rows (50,000 launches of 25 kernels, 20
counters each: the basic set's and some of Memory Workload Analysis', 2 passes, a snapshot and a
restore each), then times `kreplay report` in text, JSON and HTML. It prints the times and checks
only that the reports are right; CI's target is under 10 s each. KREPLAY_LARGE_ROWS changes the
size.
"""

import json
import os
import random
import sqlite3
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_e2e as rep  # noqa: E402
from report_e2e import e2e  # noqa: E402

ROWS = int(os.environ.get("KREPLAY_LARGE_ROWS", "1000000"))
KERNELS = 25
BASIC = [
    "gpu__time_duration.sum", "gpc__cycles_elapsed.max", "sm__cycles_active.avg",
    "sm__cycles_elapsed.avg.per_second", "dram__cycles_elapsed.avg.per_second",
    "smsp__issue_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_elapsed",
    "l1tex__t_sectors.avg.pct_of_peak_sustained_elapsed",
    "lts__t_sectors.avg.pct_of_peak_sustained_elapsed",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active", "sm__warps_active.avg.per_cycle_active"]
MORE = ["dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum",
        "lts__t_sector_hit_rate.pct", "l1tex__t_bytes.sum", "l1tex__t_sector_hit_rate.pct"]
COUNTERS = BASIC + MORE


def generate(path, rows):
    launches = rows // len(COUNTERS)
    if os.path.exists(path):
        os.remove(path)
    con = sqlite3.connect(path)
    with open(os.path.join(rep.SOURCE, "share", "kreplay", "schema.sql")) as f:
        con.executescript(f.read())
    con.execute("PRAGMA synchronous=OFF")
    con.execute("PRAGMA journal_mode=OFF")
    con.executemany("INSERT INTO metadata VALUES (?, ?)", [("schema_version", "1"),
                                                            ("format", "kreplay results")])
    con.execute("INSERT INTO run (app_pass, app_pass_count, kreplay_version, command, hostname, "
                "pid, replay_mode, counter_names, environment, options, start_ns, start_unix_ns, "
                "end_ns, exit_code, launches, replayed, declined, not_selected, passes, "
                "declined_by_reason) VALUES (0, 0, '0.1.0', '[\"./app\"]', 'bench', 1, 'kernel', "
                "?, '{}', '{}', 0, 0, ?, 0, ?, ?, 0, 0, ?, '{}')",
                (json.dumps(COUNTERS), launches * 10000, launches, launches, 2 * launches))
    con.execute("INSERT INTO devices VALUES (0, 1, 'cuda', 0, 'NVIDIA H200', 'GH100', 'GPU-0', "
                "150000000000, 132, 9, 0, 1)")
    con.executemany("INSERT INTO kernels VALUES (0, ?, 1, 1, ?, ?, ?)",
                    [(k, "_Z6kernel%di" % k, "kernel_%02d(int)" % k, 1 + k) for k in range(KERNELS)])
    rnd = random.Random(14)
    seq = 100
    dispatches, passes, counters, phases = [], [], [], []
    t = 1000
    for d in range(1, launches + 1):
        k = rnd.randrange(KERNELS)
        start = t
        phases.append((0, d, 1, 7, "snapshot", 0, start, start + 500, 1 << 20, seq))
        for p in range(2):
            s, e = start + 600 + p * 3000, start + 600 + p * 3000 + 2000 + 100 * k
            passes.append((0, d, p, 1, 7, s, e, seq + 1 + p))
        phases.append((0, d, 1, 7, "restore", 0, start + 2700, start + 3000, 4096, seq + 3))
        for i, name in enumerate(COUNTERS):
            counters.append((0, d, name, 1, rnd.uniform(0, 100), 1, k, seq + 4 + i))
        seq += 4 + len(COUNTERS)
        dispatches.append((0, d, 1, 7, k, d, 1, 132 * (1 + k % 4), 1, 1, 256, 1, 1, 1, 1, 1, 0,
                           1024 * (k % 3), 32 + 8 * (k % 5), "replayed", "", 2, 2, 1 << 20, 4096,
                           500, 300, start + 600, start + 5600 + 100 * k, 0, 0, 0, 0, 4096,
                           "full", seq))
        seq += 1
        t += 10000
    con.executemany("INSERT INTO dispatches VALUES (%s)" % ",".join("?" * 36), dispatches)
    con.executemany("INSERT INTO passes (app_pass, dispatch_id, replay_pass, agent_id, stream_id, "
                    "start_ns, end_ns, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", passes)
    con.executemany("INSERT INTO counters VALUES (?, ?, ?, ?, ?, ?, ?, ?)", counters)
    con.executemany("INSERT INTO replay_phases (app_pass, dispatch_id, agent_id, stream_id, "
                    "phase, after_pass, start_ns, end_ns, bytes, seq) VALUES "
                    "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", phases)
    con.commit()
    con.close()
    return launches, len(counters)


class Large(e2e.KreplayTestCase):
    def timed(self, *args):
        start = time.monotonic()
        p = subprocess.run([e2e.KREPLAY, "report"] + list(args), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=600)
        elapsed = time.monotonic() - start
        self.assertEqual(p.returncode, 0, p.stderr)
        return elapsed, p.stdout

    def test_report_on_a_million_counter_rows(self):
        db = os.path.join(self.tmp, "large_results.db")
        start = time.monotonic()
        launches, rows = generate(db, ROWS)
        made = time.monotonic() - start
        text_s, text = self.timed(db)
        json_s, out = self.timed(db, "--format", "json")
        html_s, _ = self.timed(db, "--format", "html", "-o", os.path.join(self.tmp, "large.html"))
        launch_s, _ = self.timed(db, "--launch", "all", "--format", "csv", "-o",
                                 os.path.join(self.tmp, "launches.csv"))
        doc = json.loads(out)
        self.assertEqual(len(doc["subjects"]), KERNELS)
        self.assertEqual(sum(s["launches"] for s in doc["subjects"]), launches)
        self.assertEqual(doc["sections"][:3], ["LaunchStats", "Occupancy", "SpeedOfLight"])
        self.assertIn("Section: GPU Speed Of Light Throughput", text)
        # sections that only share counters with those shown are no notes; one with counters of
        # its own collected and some missing is
        self.assertEqual([n.split(":")[0] for n in doc["notes"]],
                         ["section MemoryWorkloadAnalysis is incomplete"])
        print("\nbenchmark: %d counter rows, %d launches (generated in %.1f s): kreplay report "
              "text %.2f s, json %.2f s, html %.2f s, per launch csv %.2f s (target: < 10 s)"
              % (rows, launches, made, text_s, json_s, html_s, launch_s))


if __name__ == "__main__":
    e2e.main()
