#!/usr/bin/env python3
"""Ranges across synchronizations and event-ordered streams on a GPU (issue 13 item 3).

  range_span_check.py <dist-or-build-dir> <work-dir>

Runs tests/gpu/apps/event_streams.cu (6 rounds of 3 updates with a stream synchronize between
them, a hand-over to a second stream and back through events, a device synchronize; 30 launches,
one copy back at the end) plainly, then under `kreplay --metrics <10-pass set>` in kernel replay,
in range replay, and in range replay with KREPLAY_RANGE_SYNC=close, and checks:
1. every run prints the plain run's digest (the app also checks itself against the CPU);
2. range replay holds every launch in one range that stayed open across the synchronizations and
   spanned the two streams (the tally line), and KREPLAY_RANGE_SYNC=close makes more ranges;
3. every launch's counts (instructions, SASS loads and stores) in both range runs are within 1%
   of kernel replay's.
Prints each run's wall time. Exit 77 without a GPU, 0 when every check holds."""
import os, re, sqlite3, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from metric_sets import TEN  # noqa: E402

COUNTS = ["smsp__inst_executed.sum", "smsp__sass_inst_executed_op_global_ld.sum",
          "smsp__sass_inst_executed_op_global_st.sum"]
d, work = sys.argv[1], sys.argv[2]
app = os.path.join(d, "bin", "kreplay_gpu_event_streams")
kreplay = os.path.join(d, "bin", "kreplay")
os.makedirs(work, exist_ok=True)
env = dict(os.environ, LD_LIBRARY_PATH="/usr/local/cuda/lib64:" + os.environ.get("LD_LIBRARY_PATH", ""))
failures = []


def digest(text):
    m = re.findall(r"^KREPLAY_RESULT event_streams ([0-9a-f]{16})$", text, re.M)
    return m[-1] if m else None


t0 = time.monotonic()
plain = subprocess.run([app], env=env, capture_output=True, text=True)
if plain.returncode == 77:
    print("SKIP: no GPU")
    sys.exit(77)
print(f"plain: rc={plain.returncode} {time.monotonic() - t0:.2f} s digest={digest(plain.stdout)}")
if plain.returncode != 0 or digest(plain.stdout) is None:
    print("FAIL: the plain run failed\n" + plain.stderr[-2000:])
    sys.exit(1)


def profile(name, args, extra_env=None):
    out = os.path.join(work, name)
    t = time.monotonic()
    p = subprocess.run([kreplay, "--metrics", ",".join(TEN), *args, "-d", out, "-o", "run", "--", app],
                       env=dict(env, **(extra_env or {})), capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - t
    lines = [l for l in p.stderr.splitlines() if l.startswith("==KREPLAY==")]
    tally = [l for l in lines if " ranges held " in l]
    print(f"{name}: rc={p.returncode} {wall:.2f} s digest={digest(p.stdout)}")
    for l in lines:
        if " launches: " in l or " ranges held " in l:
            print(f"  {l}")
    if p.returncode != 0 or digest(p.stdout) != digest(plain.stdout):
        failures.append(f"{name}: rc={p.returncode}, digest {digest(p.stdout)} (plain "
                        f"{digest(plain.stdout)})\n{p.stderr[-1500:]}")
        return {}, tally
    db = sqlite3.connect(os.path.join(out, "run_results.db"))
    rows = {}
    for did, name_, value in db.execute("select dispatch_id, name, value from counters"):
        rows.setdefault(did, {})[name_] = value
    return rows, tally


kernel, _ = profile("kernel", ["--replay-mode", "kernel"])
span, span_tally = profile("range", ["--replay-mode", "range"])
close, close_tally = profile("range_sync_close", ["--replay-mode", "range"], {"KREPLAY_RANGE_SYNC": "close"})

m = re.search(r"(\d+) ranges held (\d+) launches", span_tally[0]) if span_tally else None
if not m or m.group(1) != "1" or "stayed open across" not in span_tally[0] or \
        "spanned streams ordered by events" not in span_tally[0]:
    failures.append(f"range: expected one range over both streams across synchronizations: {span_tally}")
mc = re.search(r"(\d+) ranges held", close_tally[0]) if close_tally else None
if not mc or int(mc.group(1)) <= 1:
    failures.append(f"range_sync_close: expected more than one range: {close_tally}")

for label, rows in (("range", span), ("range_sync_close", close)):
    if len(rows) != len(kernel) or not rows:
        failures.append(f"{label}: {len(rows)} dispatches with counters, kernel replay {len(kernel)}")
        continue
    off = []
    for did, kv in kernel.items():
        for c in COUNTS:
            a, b = kv.get(c), rows.get(did, {}).get(c)
            if a is None or b is None or abs(a - b) > 0.01 * max(abs(a), 1):
                off.append(f"dispatch {did} {c}: kernel {a}, {label} {b}")
    print(f"{label}: {len(rows)} dispatches x {len(COUNTS)} counts, {len(off)} off by more than 1% of kernel replay")
    failures += off[:10]

for f in failures:
    print("FAIL:", f)
print("range_span_check:", "FAILED" if failures else "OK")
sys.exit(1 if failures else 0)
