#!/usr/bin/env python3
"""Hardware counters on a GPU, through the kreplay command (issue: counters per replay pass).

  counters_check.py <dist-or-build-dir> <work-dir> [--ncu]

1. dram__bytes_read.sum of a kernel that streams N bytes (after an L2 flush) is within 5% of N.
2. smsp__inst_executed.sum (and the SASS instruction counts) of every launch are equal whether
   the launch was profiled alone with a 1-pass set or inside a 10-pass set.
3. With --range: the same launches under range replay (one range, every pass starting and
   stopping the profiler once for all of them) give counts within 1% of kernel replay's.
4. With --ncu: for 3 kernels and the 10-pass set, kreplay's counts (instructions, SASS loads,
   stores, FFMAs, DRAM bytes read of the streaming kernel) are within 1% of ncu --replay-mode
   kernel --cache-control none --clock-control none.
Exit 77 when there is no GPU; 0 when every check holds."""
import csv, os, sqlite3, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from metric_sets import TEN  # noqa: E402
COUNTS = ["smsp__inst_executed.sum", "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
          "smsp__sass_inst_executed_op_global_ld.sum", "smsp__sass_inst_executed_op_global_st.sum"]
READ_BYTES = 256 << 20

d, work = sys.argv[1], sys.argv[2]
use_ncu = "--ncu" in sys.argv
use_range = "--range" in sys.argv
app = os.path.join(d, "bin", "kreplay_gpu_stream_read")
kreplay = os.path.join(d, "bin", "kreplay")
os.makedirs(work, exist_ok=True)
env = dict(os.environ, LD_LIBRARY_PATH="/usr/local/cuda/lib64:" + os.environ.get("LD_LIBRARY_PATH", ""))
if subprocess.run([app], env=env, capture_output=True).returncode == 77:
    print("SKIP: no GPU"); sys.exit(77)
failures = []

def profile(name, args):
    out = os.path.join(work, name)
    p = subprocess.run([kreplay, *args, "-d", out, "-o", "run", "--", app], env=env,
                       capture_output=True, text=True, timeout=600)
    with open(out + ".stderr", "w") as f:
        f.write(p.stderr)
    if p.returncode != 0:
        failures.append(f"{name}: kreplay exited {p.returncode}\n{p.stderr[-2000:]}")
        return {}
    db = sqlite3.connect(os.path.join(out, "run_results.db"))
    rows = {}
    for did, kernel, name_, value in db.execute(
            "select c.dispatch_id, k.demangled_name, c.name, c.value from counters c "
            "join dispatches d using(app_pass, dispatch_id) join kernels k on k.kernel_id = d.kernel_id "
            "order by c.dispatch_id"):
        rows.setdefault(did, {"kernel": kernel})[name_] = value
    return rows

one = profile("one_pass", ["--pmc", "dram__bytes_read.sum", "smsp__inst_executed.sum",
                           "smsp__sass_inst_executed_op_global_ld.sum"])
ten = profile("ten_pass", ["--replay-mode", "kernel", "--metrics", ",".join(TEN)])
for did, r in one.items():
    if r["kernel"].startswith("read_sum"):
        v = r["dram__bytes_read.sum"]
        if abs(v - READ_BYTES) > 0.05 * READ_BYTES:
            failures.append(f"dispatch {did} read_sum: dram__bytes_read.sum {v:.0f}, expected {READ_BYTES} +-5%")
for did in one:
    for m in ["smsp__inst_executed.sum", "smsp__sass_inst_executed_op_global_ld.sum"]:
        a, b = one[did].get(m), ten.get(did, {}).get(m)
        if a is None or b is None or a != b:
            failures.append(f"dispatch {did} {one[did]['kernel'][:20]}: {m} 1-pass {a} vs 10-pass {b}")
print(f"one-pass dispatches {len(one)}, ten-pass dispatches {len(ten)}")

if use_range:
    rng = profile("ten_pass_range", ["--replay-mode", "range", "--metrics", ",".join(TEN)])
    if len(rng) != len(ten):
        failures.append(f"range replay profiled {len(rng)} launches, kernel replay {len(ten)}")
    for a_id, b_id in zip(sorted(ten), sorted(rng)):
        for m in COUNTS + ["dram__bytes_read.sum"]:
            a, b = ten[a_id].get(m), rng[b_id].get(m)
            if m == "dram__bytes_read.sum" and not ten[a_id]["kernel"].startswith("read_sum"):
                continue
            if a is None or b is None or abs(a - b) > 0.01 * max(abs(a), 1.0):
                failures.append(f"{ten[a_id]['kernel'][:20]} {m}: kernel replay {a}, range replay {b}")
    print(f"range replay dispatches {len(rng)}: counts within 1% of kernel replay"
          if not failures else "range replay: see failures")

if use_ncu:
    rep = os.path.join(work, "ncu_ten")
    subprocess.run(["ncu", "--replay-mode", "kernel", "--cache-control", "none", "--clock-control",
                    "none", "--metrics", ",".join(TEN), "-o", rep, "-f", app], env=env,
                   capture_output=True, timeout=900)
    p = subprocess.run(["ncu", "--import", rep + ".ncu-rep", "--csv", "--page", "raw",
                        "--print-units", "base"], capture_output=True, text=True)
    rows = list(csv.reader(p.stdout.splitlines()))
    hi = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
    hdr, data = rows[hi], rows[hi + 2:]
    col = {h: i for i, h in enumerate(hdr)}
    ids = sorted(ten)
    if len(data) != len(ids):
        failures.append(f"ncu profiled {len(data)} launches, kreplay {len(ids)}")
    for j, row in enumerate(data[:len(ids)]):
        k = ten[ids[j]]
        names = COUNTS + (["dram__bytes_read.sum"] if k["kernel"].startswith("read_sum") else [])
        for m in names:
            b = float(row[col[m]].replace(",", ""))
            a = k.get(m)
            if a is None or abs(a - b) > 0.01 * max(abs(b), 1.0):
                failures.append(f"launch {j} {k['kernel'][:20]} {m}: kreplay {a} ncu {b}")
        print(f"launch {j} {k['kernel'][:24]:24s} " +
              " ".join(f"{m.split('__')[1][:18]}={k.get(m):.0f}/{float(row[col[m]].replace(',', '')):.0f}" for m in COUNTS))

if failures:
    print("\n".join(failures)); sys.exit(1)
print("counters_check: OK")
