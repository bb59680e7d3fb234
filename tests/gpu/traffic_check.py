#!/usr/bin/env python3
"""DRAM traffic per launch: kreplay (kernel and range replay, --cache-control all, the default)
against ncu --cache-control all --clock-control none, on memory_traffic's kernels (issue: values
you can trust, item 2).

  traffic_check.py <dist-or-build-dir> <work-dir>

Prints one line per launch: dram__bytes_read.sum and dram__bytes_write.sum from kreplay's kernel
replay, its range replay, ncu, the bytes the kernel must move where that is known, and (shown,
not checked) kreplay's kernel replay with --cache-control none. Passes
when, in kernel replay and in range replay alike, every launch's reads and writes are within 2% of
ncu's (2% of the launch's whole DRAM traffic, so that a launch that writes little is not judged on
a few MiB of write-back noise), reads are within 1% of the known bytes and writes within the L2's
size below them (dirty lines still in the L2 when the kernel ends are not written during it, under
ncu either); and the application's digest under kreplay equals its plain run's. Range replay
flushes the caches before every launch of a pass (docs/counters.md, cache control), so a launch's
writes carry none of the previous launch's write-backs: a range launch whose writes exceed ncu's
by about the L2's dirty lines (~20 MiB after a streaming write) means that flush is missing, and
one whose values belong to its neighbour means a flush's counter range was not left out.
Exit 77 when there is no GPU or no ncu."""
import csv, os, re, shutil, sqlite3, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from metric_sets import TEN  # noqa: E402
DRAM = ["dram__bytes_read.sum", "dram__bytes_write.sum"]
MiB = 1 << 20
L2 = 60 * MiB  # H100/H200: 50 MB of L2, rounded up
# Bytes a kernel must move (read, write); None: not known in advance.
KNOWN = {"stream_read": (256 * MiB, None), "stream_write": (None, 256 * MiB),
         "inplace": (256 * MiB, 256 * MiB), "l2_resident": (16 * MiB, None)}

d, work = sys.argv[1], sys.argv[2]
app = os.path.join(d, "bin", "kreplay_gpu_memory_traffic")
kreplay = os.path.join(d, "bin", "kreplay")
os.makedirs(work, exist_ok=True)
env = dict(os.environ, LD_LIBRARY_PATH="/usr/local/cuda/lib64:" + os.environ.get("LD_LIBRARY_PATH", ""))
plain = subprocess.run([app], env=env, capture_output=True, text=True, timeout=300)
if plain.returncode == 77 or shutil.which("ncu") is None:
    print("SKIP: no GPU or no ncu"); sys.exit(77)
digest = lambda text: (re.findall(r"^KREPLAY_RESULT memory_traffic (\S+)", text, re.M) or [None])[-1]
want = digest(plain.stdout)
failures = []


def kreplay_run(name, mode, extra=()):
    out = os.path.join(work, name)
    p = subprocess.run([kreplay, "--replay-mode", mode, *extra, "--metrics", ",".join(TEN), "-d", out,
                        "-o", "run", "--", app], env=env, capture_output=True, text=True, timeout=900)
    if p.returncode != 0 or digest(p.stdout) != want:
        failures.append(f"{name}: exit {p.returncode}, digest {digest(p.stdout)} (plain {want})\n"
                        f"{p.stderr[-1500:]}")
    # CUPTI's ranges must be the launches' plus, in range replay, the flushes' between them.
    for line in p.stderr.splitlines():
        if "CUPTI reported" in line or "CUPTI dropped" in line:
            failures.append(f"{name}: {line.strip()}")
    rows = []
    try:
        db = sqlite3.connect(os.path.join(out, "run_results.db"))
        q = ("select d.dispatch_id, k.demangled_name, c.name, c.value from dispatches d "
             "join kernels k using (app_pass, kernel_id) left join counters c "
             "using (app_pass, dispatch_id) order by d.dispatch_id, c.replay_pass")
        by = {}
        for did, kernel, metric, value in db.execute(q):
            r = by.setdefault(did, {"kernel": kernel})
            if metric in DRAM and metric not in r:  # the first pass that collected it
                r[metric] = value
        rows = [by[k] for k in sorted(by)]
    except sqlite3.Error as e:
        failures.append(f"{name}: {e}")
    return rows


kern = kreplay_run("kernel", "kernel")
rng = kreplay_run("range", "range")
# Not checked, shown: what --cache-control none changes (docs/counters.md's example).
none = kreplay_run("kernel_none", "kernel", ["--cache-control", "none"])
rep = os.path.join(work, "ncu_traffic")
subprocess.run(["ncu", "--replay-mode", "kernel", "--cache-control", "all", "--clock-control", "none",
                "--metrics", ",".join(DRAM), "-o", rep, "-f", app], env=env, capture_output=True,
               timeout=900)
p = subprocess.run(["ncu", "--import", rep + ".ncu-rep", "--csv", "--page", "raw", "--print-units",
                    "base"], capture_output=True, text=True)
table = list(csv.reader(p.stdout.splitlines()))
try:
    hi = next(i for i, r in enumerate(table) if r and r[0] == "ID")
except StopIteration:
    print("traffic_check: ncu gave no report\n" + p.stderr[-1000:]); sys.exit(1)
hdr, data = table[hi], table[hi + 2:]
col = {h: i for i, h in enumerate(hdr)}
ncu = [{"kernel": r[col["Kernel Name"]],
        **{m: float(r[col[m]].replace(",", "")) for m in DRAM}} for r in data]
if not (len(kern) == len(rng) == len(ncu)):
    failures.append(f"launches: kreplay kernel {len(kern)}, range {len(rng)}, ncu {len(ncu)}")


def within(a, b, tol):
    return a is not None and b is not None and abs(a - b) <= tol


print(f"{'launch':>6} {'kernel':24} {'metric':6} {'kernel':>12} {'range':>12} {'ncu':>12} {'known':>12}"
      f" {'none':>12}")
for j in range(min(len(kern), len(rng), len(ncu))):
    name = kern[j]["kernel"].split("(")[0].split("<")[0].replace("void ", "")
    short = next((k for k in KNOWN if name.endswith(k)), None)
    traffic = ncu[j][DRAM[0]] + ncu[j][DRAM[1]]  # the launch's DRAM bytes, read and written
    for m, label in zip(DRAM, ("read", "write")):
        a, b, n = kern[j].get(m), rng[j].get(m), ncu[j][m]
        known = KNOWN[short][DRAM.index(m)] if short else None
        fmt = lambda v: "-" if v is None else f"{v / MiB:.2f}M"
        c = none[j].get(m) if j < len(none) else None
        print(f"{j:>6} {name[:24]:24} {label:6} {fmt(a):>12} {fmt(b):>12} {fmt(n):>12} {fmt(known):>12}"
              f" {fmt(c):>12}")
        reads = m == DRAM[0]
        for mode, v in (("kernel", a), ("range", b)):
            tol = 0.02 * max(traffic, MiB)
            if not within(v, n, tol):
                failures.append(f"launch {j} {name} {m}: kreplay {mode} {v} vs ncu {n} "
                                f"(more than {tol / MiB:.1f} MiB apart)")
            if known is not None and reads and not within(v, known, 0.01 * known):
                failures.append(f"launch {j} {name} {m}: kreplay {mode} {v} vs known {known} (> 1%)")
            if known is not None and not reads and not (known - L2 <= (v or 0) <= 1.01 * known):
                failures.append(f"launch {j} {name} {m}: kreplay {mode} {v} vs known {known} "
                                f"(not within the L2's size below it)")
if failures:
    print("\n".join(failures)); print("traffic_check: FAILED"); sys.exit(1)
print("traffic_check: OK")
