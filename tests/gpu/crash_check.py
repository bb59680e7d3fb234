#!/usr/bin/env python3
"""An application that dies by a signal with a range open (issue 13 item 5), on the GPU.

  crash_check.py <dist-or-build-dir> <work-dir>

die_after HOW 6 makes 6 synchronized launches (one range under the default replay mode, open
across the synchronizations) and dies by SIGTERM, SIGSEGV or abort. Under
kreplay --metrics <16-metric set> (the default mode, auto = range replay) each run must exit
128 + signal, say the range closed by signal, and leave a database whose 6 dispatches are
replayed with every metric of the set; the same with --replay-mode kernel.
Exit 77 when there is no GPU; 0 when every check holds."""
import os, signal, sqlite3, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from metric_sets import TEN  # noqa: E402

d, work = sys.argv[1], sys.argv[2]
app = os.path.join(d, "bin", "kreplay_gpu_die_after")
kreplay = os.path.join(d, "bin", "kreplay")
os.makedirs(work, exist_ok=True)
env = dict(os.environ, LD_LIBRARY_PATH="/usr/local/cuda/lib64:" + os.environ.get("LD_LIBRARY_PATH", ""))
if subprocess.run([app, "term", "0"], env=env, capture_output=True).returncode == 77:
    print("SKIP: no GPU"); sys.exit(77)
failures = []
for how, sig in (("term", signal.SIGTERM), ("segv", signal.SIGSEGV), ("abort", signal.SIGABRT)):
    for mode in ("default", "kernel"):
        name = f"{how}_{mode}"
        out = os.path.join(work, name)
        extra = [] if mode == "default" else ["--replay-mode", "kernel"]
        p = subprocess.run([kreplay, *extra, "--metrics", ",".join(TEN), "-d", out, "-o", "run",
                            "--", app, how, "6"], env=env, capture_output=True, text=True,
                           timeout=300)
        with open(out + ".log", "w") as f:
            f.write(p.stdout + p.stderr)
        problems = []
        if p.returncode != 128 + sig:
            problems.append(f"exit {p.returncode}, want {128 + sig}")
        closed = "closed by signal 1" in p.stderr
        if mode == "default" and not closed:
            problems.append("no 'closed by signal' in the tally")
        try:
            db = sqlite3.connect(os.path.join(out, "run_results.db"))
            rows = db.execute("select dispatch_id, outcome, "
                              "(select count(distinct name) from counters c where c.dispatch_id = d.dispatch_id) "
                              "from dispatches d order by dispatch_id").fetchall()
            mode_row = db.execute("select replay_mode from run").fetchone()[0]
        except Exception as e:  # noqa: BLE001
            rows, mode_row = [], f"no database ({e})"
            problems.append(str(e))
        full = [r for r in rows if r[1] == "replayed" and r[2] == len(TEN)]
        if len(full) != 6:
            problems.append(f"{len(full)} of {len(rows)} dispatches replayed with all {len(TEN)} metrics: {rows}")
        print(f"crash {name}: replay_mode={mode_row} rc={p.returncode} dispatches={len(rows)} "
              f"with_all_metrics={len(full)} closed_by_signal={closed} "
              f"{'OK' if not problems else 'FAILED: ' + '; '.join(problems)}")
        failures += [f"{name}: {x}" for x in problems]
print("crash_check:", "OK" if not failures else f"FAILED ({len(failures)})")
sys.exit(1 if failures else 0)
