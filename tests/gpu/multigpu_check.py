#!/usr/bin/env python3
"""Many GPUs and many ranks on real GPUs, through the kreplay command (issue 15 item 4).

  multigpu_check.py <dist-or-build-dir> <work-dir>

  two_gpu_replay   kreplay_gpu_two_gpu_peer (one thread per GPU, kernels on both, peer copies,
                   a kernel reading the other GPU's buffer) under 3 passes (counters CUPTI
                   collects in two, and a timing pass): its result equals the plain run's, launches are replayed
                   on both devices, the peer-reading kernel is declined peer_memory, and the two
                   devices' replay windows overlap in time (the dispatches' and replay phases'
                   timestamps);
  ddp_outer        kreplay --metrics <10-pass set> -- torchrun --nproc-per-node 2 ddp_train.py:
                   every rank's weights equal the plain run's, each rank's database has its rank,
                   collective kernels declined, the others replayed;
  ddp_inner        torchrun --no-python --nproc-per-node 2 kreplay --metrics <set> -- python3
                   ddp_train.py: the same;
  merge            kreplay merge of ddp_outer's rank databases: one database, both ranks.

With one GPU the same programs run on it (two_gpu_peer with both threads on device 0, DDP with
one rank), which checks the programs and this script; the claims that need two GPUs (devices,
overlap, two ranks) then say SKIP and the script exits 77 when nothing failed.
Prints PASS/FAIL/SKIP <check>: <detail> lines; exit 1 if any failed.
"""
import glob
import json
import os
import shutil
import sqlite3
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
APPS = os.path.join(HERE, "apps")
with open(os.path.join(HERE, "ten_pass_metrics.txt")) as f:  # kreplay::cupti::kTenPassMetrics
    TEN = ",".join(line.strip() for line in f if line.strip())

if len(sys.argv) != 3:
    sys.exit("usage: multigpu_check.py <dist-or-build-dir> <work-dir>")
dist = os.path.abspath(sys.argv[1])
work = os.path.abspath(sys.argv[2])
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
K = os.path.join(dist, "bin", "kreplay")
TWO = os.path.join(dist, "bin", "kreplay_gpu_two_gpu_peer")

try:
    gpus = len([l for l in subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True,
                                          timeout=60).stdout.splitlines() if l.startswith("GPU ")])
except (OSError, subprocess.TimeoutExpired):
    gpus = 0
if gpus == 0:
    print("SKIP multigpu: no GPU (nvidia-smi -L lists none)")
    sys.exit(77)
two = gpus >= 2
ranks = 2 if two else 1
env = dict(os.environ)
env["LD_LIBRARY_PATH"] = "/usr/local/cuda/lib64:" + os.path.join(dist, "lib") + ":" + env.get("LD_LIBRARY_PATH", "")
env["PYTHONPATH"] = APPS + ":" + env.get("PYTHONPATH", "")
if not two:
    env["KREPLAY_TWO_GPU_ONE_DEVICE"] = "1"
for v in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
    env.pop(v, None)

failed = False


def verdict(name, ok, detail):
    global failed
    failed |= not ok
    print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)


def skip(name, detail):
    print(f"SKIP {name}: {detail}", flush=True)


def run(name, argv, limit=300, extra=None):
    e = dict(env)
    e.update(extra or {})
    with open(os.path.join(work, name + ".log"), "w") as log:
        try:
            p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env=e, timeout=limit, cwd=work)
            out, rc = p.stdout, p.returncode
        except subprocess.TimeoutExpired as t:
            out, rc = (t.stdout or b"").decode() if isinstance(t.stdout, bytes) else (t.stdout or ""), 124
        log.write(out)
    return rc, out


def results(out):
    """{app: digest} of the KREPLAY_RESULT lines."""
    d = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "KREPLAY_RESULT":
            d[parts[1]] = parts[2]
    return d


def tail(out, n=3):
    return " | ".join(out.strip().splitlines()[-n:])[:600]


def overlaps(windows):
    """Pairs of windows (agent, start, end) on different agents that overlap in time."""
    n = 0
    by = sorted(windows, key=lambda w: w[1])
    for i, (a, s, e) in enumerate(by):
        for b, s2, e2 in by[i + 1:]:
            if s2 >= e:
                break
            n += a != b
    return n


# (a) one process, two GPUs
rc, out = run("two_gpu_plain", [TWO])
plain = results(out).get("two_gpu_peer")
if rc != 0 or not plain:
    verdict("two_gpu_replay", False, f"plain run rc={rc}: {tail(out)}")
else:
    d = os.path.join(work, "two_gpu")
    # On GH100 these three counters take CUPTI two passes; with the timing pass, 3.
    rc, out = run("two_gpu_kreplay", [K, "--pmc", "smsp__inst_executed.sum", "dram__bytes_read.sum",
                                      "lts__t_sector_hit_rate.pct", "--timing-pass", "-d", d, "-o", "two",
                                      "--", TWO])
    got = results(out).get("two_gpu_peer")
    db = os.path.join(d, "two_results.db")
    if rc != 0 or not os.path.exists(db):
        verdict("two_gpu_replay", False, f"rc={rc}: {tail(out)}")
    else:
        c = sqlite3.connect(db)
        rows = c.execute("select d.agent_id, d.outcome, d.reason, d.passes_executed, d.start_ns, d.end_ns, "
                         "k.mangled_name, d.dispatch_id from dispatches d "
                         "join kernels k using (app_pass, kernel_id)").fetchall()
        replayed = [r for r in rows if r[1] == "replayed"]
        agents = sorted({r[0] for r in replayed})
        passes = sorted({r[3] for r in replayed})
        peer = [r for r in rows if "peer_sum" in r[6]]
        # A launch's window: from its snapshot to its last restore (replay_phases), or its passes.
        phases = {i: (s, e) for i, s, e in c.execute(
            "select dispatch_id, min(start_ns), max(end_ns) from replay_phases group by dispatch_id")}
        win = []
        for a, _, _, _, s, e, _, i in replayed:
            ps, pe = phases.get(i, (s, e))
            win.append((a, min(ps, s), max(pe, e)))
        devices = c.execute("select devices_used from run").fetchone()[0]
        c.close()
        same = got == plain
        detail = (f"result {'equal' if same else 'DIFFERS'} ({got} vs plain {plain}); {len(replayed)} of "
                  f"{len(rows)} launches replayed on agents {agents}, passes {passes}, devices_used {devices}; "
                  f"peer_sum: {[(r[0], r[1], r[2]) for r in peer]}; overlapping windows across devices: "
                  f"{overlaps(win)}")
        ok = same and replayed and passes == [3]
        if two:
            ok = ok and len(agents) == 2 and overlaps(win) > 0
            if "peer access enabled" in out:
                ok = ok and len(peer) == 2 and all(r[1] == "declined" and r[2] == "peer_memory" for r in peer)
            verdict("two_gpu_replay", bool(ok), detail)
        else:
            verdict("two_gpu_replay_one_device", bool(ok), detail)
            skip("two_gpu_replay", "one GPU: both devices, peer access and overlapping windows need two")


# (b) DDP under torchrun, both ways
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks),
            "--master-port", "29544"]
DDP = os.path.join(APPS, "ddp_train.py")


def rank_dbs(d):
    out = {}
    for f in glob.glob(os.path.join(d, "**", "*.db"), recursive=True):
        try:
            c = sqlite3.connect(f)
            r = c.execute("select rank, replayed, declined, declined_by_reason, devices_used from run").fetchone()
            c.close()
        except sqlite3.Error:
            continue
        if r and r[0] is not None:
            out[r[0]] = (f, r)
    return out


def ddp_check(name, out, rc, d, plain):
    got = {k: v for k, v in results(out).items() if k.startswith("ddp_rank")}
    dbs = rank_dbs(d)
    same = got == plain
    coll = {r: json.loads(row[3] or "{}").get("collective", 0) for r, (_, row) in dbs.items()}
    rep = {r: row[1] for r, (_, row) in dbs.items()}
    # One rank's all_reduce launches no NCCL kernel: collectives are asked for with two ranks.
    ok = (rc == 0 and same and sorted(dbs) == list(range(ranks)) and all(rep[r] > 0 for r in dbs)
          and (not two or all(coll[r] > 0 for r in dbs)))
    verdict(name if two else name + "_one_rank", ok,
            f"rc={rc}; weights {'equal' if same else 'DIFFER'} ({got} vs plain {plain}); rank databases "
            f"{sorted(dbs)}; replayed {rep}; collective declined {coll}" + ("" if ok else f"; {tail(out)}"))
    if not two:
        skip(name, "one GPU: two ranks need two")
    return dbs


rc, out = run("ddp_plain", TORCHRUN + [DDP], 300)
ddp_plain = {k: v for k, v in results(out).items() if k.startswith("ddp_rank")}
if rc == 77 or "SKIP" in out and not ddp_plain:
    skip("ddp", tail(out))
elif rc != 0 or len(ddp_plain) != ranks:
    verdict("ddp_outer", False, f"plain run rc={rc}: {tail(out)}")
else:
    outer = os.path.join(work, "ddp_outer")
    rc, out = run("ddp_outer", [K, "--metrics", TEN, "-d", outer, "--"] + TORCHRUN + [DDP], 500)
    dbs = ddp_check("ddp_outer", out, rc, outer, ddp_plain)
    inner = os.path.join(work, "ddp_inner")
    rc, out = run("ddp_inner", TORCHRUN[:3] + ["--no-python"] + TORCHRUN[3:] +
                  [K, "--metrics", TEN, "-d", inner, "--", sys.executable, DDP], 500)
    ddp_check("ddp_inner", out, rc, inner, ddp_plain)
    if dbs:
        merged = os.path.join(work, "all.db")
        rc, out = run("merge", [K, "merge", outer, "-o", merged], 120)
        try:
            c = sqlite3.connect(merged)
            mranks = [r for (r,) in c.execute("select rank from run order by rank")]
            by_rank = c.execute("select count(*) from kernel_time_by_rank").fetchone()[0]
            c.close()
        except sqlite3.Error as e:
            mranks, by_rank = [], f"error {e}"
        verdict("merge" if two else "merge_one_rank", rc == 0 and mranks == list(range(ranks)),
                f"rc={rc}; ranks {mranks}; kernel_time_by_rank rows {by_rank}; {tail(out, 1)}")

sys.exit(1 if failed else (0 if two else 77))
