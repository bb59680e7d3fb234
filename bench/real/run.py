#!/usr/bin/env python3
"""The real-program benchmark (bench/real/README.md): every program natively, under kreplay in
kernel replay, under kreplay --replay-mode range, and under ncu --replay-mode kernel, all with the
16-metric set TEN of tests/gpu/metric_sets.py (10 passes on GH100), one run each, in one go.

  run.py --bin DIR --kreplay PATH/kreplay [--ncu ncu] [--programs a,b] [--out DIR] [--timeout S]
         [--python python3] [--no-warmup]

--bin holds the CUDA programs (bin/real_<name> of a build or a dist); the Python programs run from
this folder. Each program first runs once natively unmeasured (--no-warmup leaves it out: file
caches, Python's bytecode, the driver's first start), then once in each mode, timed from the start
of the command to its exit (time.monotonic). Every run must print the native run's
`RESULT <name> PASS digest=<hex>`; a run that prints another digest, FAIL, or nothing is a
correctness failure, reported loudly, and makes run.py exit 1. A run that fails or times out is
reported and the others go on.

Printed per program and in total: wall time of each mode, the profiling overhead (wall minus
native) of each, kernel/ncu and range/ncu of the overheads (targets: <= 0.5 and <= 0.15), and the
CUPTI floor of kernel and range replay: the time kreplay spent inside CUPTI's calls made for every
profiled collection and pass (CounterDataImageInitialize, SetConfig, Start, Stop, DecodeData),
from what KREPLAY_PRINT_COSTS=1 prints at exit. floor/ncu is the best ratio that program could
reach if everything but those calls cost nothing. Then per program the ranges of range replay:
launches per range (issue 30's target: at least 8 for Thrust, CUB and PyTorch training) and what
closed them, from kreplay's range tally line; and range/ncu in total against its target (0.15). Also kreplay's tally of each run (launches,
replayed, declined and why) and the number of launches ncu profiled. Everything is also written to
<out>/real.json; logs of every run are in <out>/logs.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "gpu"))

from metric_sets import TEN  # noqa: E402

# name -> command, with {bin} and {python} filled in; the Python programs sit next to run.py.
PROGRAMS = {
    "cublas_inplace": ["{bin}/real_cublas_inplace"],
    "thrust_sort_scan": ["{bin}/real_thrust_sort_scan"],
    "cub_async": ["{bin}/real_cub_async"],
    "streams4": ["{bin}/real_streams4"],
    "compaction": ["{bin}/real_compaction"],
    "torch_train": ["{python}", os.path.join(HERE, "torch_train.py")],
    "triton_kernels": ["{python}", os.path.join(HERE, "triton_kernels.py")],
}
MODES = ["native", "kernel", "range", "ncu"]
# CUPTI calls kreplay makes for every profiled collection and pass (the per-launch floor), by
# their names in the `==KREPLAY== cost` lines (src/backends/cuda/interceptor.cpp print_costs).
PER_PASS_CALLS = ["counter_data_init", "set_config", "start", "stop", "decode"]

RESULT = re.compile(r"^RESULT (\S+) (PASS|FAIL)(?: digest=([0-9a-fA-F]+))?(.*)$", re.M)
TALLY = re.compile(r"==KREPLAY== (\d+) launches: (\d+) replayed \((\d+) passes\), (\d+) declined"
                   r"(?: \((.*?)\))?, (\d+) not selected")
COST = re.compile(r"==KREPLAY== cost (\S+)\s+calls=(\d+)\s+total_ms=([\d.]+)\s+mean_ms=([\d.]+)"
                  r"\s+max_ms=([\d.]+)")
STARTUP = re.compile(r"==KREPLAY== startup (.*)$", re.M)
# The tool's range tally (tool/profiler_range.cpp RangeTally::line): ranges, launches, and what
# closed them ("closed by memory 2, ... (at cuMemFree_v2 1, ...)").
RANGES = re.compile(r"==KREPLAY== (\d+) ranges held (\d+) launches \(.*?\)(.*)$", re.M)
# Issue 30's target: at most one range per 8 launches for these programs.
RANGE_TARGET_PROGRAMS = ("thrust_sort_scan", "cub_async", "torch_train")
RANGE_TARGET_LAUNCHES_PER_RANGE = 8
NCU_PROFILED = re.compile(r"^==PROF== Profiling \"", re.M)


def kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_one(cmd, env, log_base, timeout):
    """Run cmd with its stdout and stderr in log_base.{out,err}; returns (status, rc, wall_s,
    stdout, stderr). status is ok, rc=N or timeout; a timed-out run's process group is killed."""
    with open(log_base + ".out", "wb") as out, open(log_base + ".err", "wb") as err:
        t0 = time.monotonic()
        try:
            p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, start_new_session=True)
        except OSError as e:
            err.write(f"cannot start {cmd[0]}: {e}\n".encode())
            return "rc=start", None, None, "", str(e)
        try:
            rc = p.wait(timeout=timeout)
            status = "ok" if rc == 0 else f"rc={rc}"
        except subprocess.TimeoutExpired:
            kill_group(p)
            rc = p.wait()
            status = "timeout"
        except BaseException:  # run.py itself stopped (SIGTERM, Ctrl-C): the run goes with it
            kill_group(p)
            raise
        wall = time.monotonic() - t0
    with open(log_base + ".out", errors="replace") as f:
        stdout = f.read()
    with open(log_base + ".err", errors="replace") as f:
        stderr = f.read()
    return status, rc, wall, stdout, stderr


def parse_kreplay(stderr):
    tally = {"launches": 0, "replayed": 0, "passes": 0, "declined": 0, "not_selected": 0,
             "declined_why": [], "lines": []}
    for m in TALLY.finditer(stderr):
        for key, g in (("launches", 1), ("replayed", 2), ("passes", 3), ("declined", 4),
                       ("not_selected", 6)):
            tally[key] += int(m.group(g))
        if m.group(5):
            tally["declined_why"].append(m.group(5))
        tally["lines"].append(m.group(0))
    costs = {}
    for m in COST.finditer(stderr):
        c = costs.setdefault(m.group(1), {"calls": 0, "total_ms": 0.0, "max_ms": 0.0})
        c["calls"] += int(m.group(2))
        c["total_ms"] += float(m.group(3))
        c["max_ms"] = max(c["max_ms"], float(m.group(5)))
    startup = [dict(kv.split("=", 1) for kv in m.group(1).split() if "=" in kv)
               for m in STARTUP.finditer(stderr)]
    # What kreplay said besides its tally and costs: warnings, errors, declines (the last few).
    said = [ln for ln in stderr.splitlines() if ln.startswith("==KREPLAY==")
            and not COST.search(ln) and not TALLY.search(ln) and "startup " not in ln
            and "cost reenables" not in ln and "output:" not in ln]
    ranges = {"ranges": 0, "launches": 0, "closed_by": []}
    for m in RANGES.finditer(stderr):
        ranges["ranges"] += int(m.group(1))
        ranges["launches"] += int(m.group(2))
        closed = re.search(r"closed by (.*)$", m.group(3))
        if closed:
            ranges["closed_by"].append(closed.group(1))
    floor_ms = sum(costs[k]["total_ms"] for k in PER_PASS_CALLS if k in costs)
    return {"tally": tally, "costs": costs, "startup": startup, "said": said[-5:], "ranges": ranges,
            "floor_s": floor_ms / 1e3 if costs else None,
            "cupti_all_s": sum(c["total_ms"] for c in costs.values()) / 1e3 if costs else None}


def fmt(v, width=8, digits=2):
    return f"{v:{width}.{digits}f}" if isinstance(v, (int, float)) else f"{'-':>{width}}"


def ratio(a, b):
    return a / b if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b > 0 else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="folder of the real_<name> programs")
    ap.add_argument("--kreplay", required=True, help="the kreplay command")
    ap.add_argument("--ncu", default="ncu", help="the ncu command (default: ncu)")
    ap.add_argument("--programs", default=",".join(PROGRAMS),
                    help="comma list of programs (default: all: %(default)s)")
    ap.add_argument("--out", default="real-bench-out", help="folder for real.json and the logs")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per run (default 300)")
    ap.add_argument("--python", default=sys.executable, help="Python for the .py programs")
    ap.add_argument("--no-warmup", action="store_true", help="no unmeasured native run first")
    ap.add_argument("--skip-kernel", action="store_true",
                    help="no kernel-replay run (range replay against ncu only, when GPU time is "
                         "short); the kernel columns stay empty")
    a = ap.parse_args()
    # A limit on run.py (timeout(1) in scripts/gpu-check.sh) sends SIGTERM: end the current run's
    # process group too (each run has its own session), not only run.py.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    names = [n for n in a.programs.split(",") if n]
    unknown = [n for n in names if n not in PROGRAMS]
    if unknown:
        ap.error(f"unknown programs {unknown}; known: {', '.join(PROGRAMS)}")
    logs = os.path.join(a.out, "logs")
    os.makedirs(logs, exist_ok=True)
    metrics = ",".join(TEN)
    ncu = shutil.which(a.ncu)
    kreplay = os.path.abspath(a.kreplay)
    print(f"real: {len(names)} programs, metrics TEN ({len(TEN)}), timeout {a.timeout:.0f} s, "
          f"kreplay {kreplay}, ncu {ncu or 'MISSING'}", flush=True)

    results, failures = {}, []
    run_modes = [m for m in MODES if not (a.skip_kernel and m == "kernel")]
    for name in names:
        prog = [p.format(bin=os.path.abspath(a.bin), python=a.python) for p in PROGRAMS[name]]
        commands = {
            "native": prog,
            "kernel": [kreplay, "--replay-mode", "kernel", "--metrics", metrics,
                       "-d", os.path.join(a.out, "kreplay", f"{name}_kernel"), "-o", "run_%pid%",
                       "--", *prog],
            "range": [kreplay, "--replay-mode", "range", "--metrics", metrics,
                      "-d", os.path.join(a.out, "kreplay", f"{name}_range"), "-o", "run_%pid%",
                      "--", *prog],
            "ncu": [ncu or a.ncu, "--replay-mode", "kernel", "--cache-control", "all",
                    "--clock-control", "none", "--metrics", metrics, *prog],
        }
        r = {"command": prog, "modes": {}}
        results[name] = r
        if not a.no_warmup:
            rc = run_one(prog, os.environ, os.path.join(logs, f"{name}_warmup"), a.timeout)[1]
            if rc == 77:
                print(f"{name}: SKIP (exit 77: no GPU or a framework missing; "
                      f"{logs}/{name}_warmup.err)", flush=True)
                r["skipped"] = True
                continue
        want = None
        for mode in run_modes:
            if mode == "ncu" and ncu is None:
                r["modes"][mode] = {"status": "no ncu"}
                continue
            env = dict(os.environ)
            if mode in ("kernel", "range"):
                env["KREPLAY_PRINT_COSTS"] = "1"
            status, rc, wall, out, err = run_one(commands[mode], env,
                                                 os.path.join(logs, f"{name}_{mode}"), a.timeout)
            found = list(RESULT.finditer(out))
            m = found[-1] if found else None
            got = {"verdict": m.group(2) if m else None, "digest": m.group(3) if m else None}
            res = {"status": status, "rc": rc, "wall_s": wall, **got}
            if mode in ("kernel", "range"):
                res.update(parse_kreplay(err))
            if mode == "ncu":
                res["ncu_profiled"] = len(NCU_PROFILED.findall(out + err))
                res["ncu_errors"] = [ln for ln in (out + err).splitlines()
                                     if ln.startswith("==ERROR==")][-3:]
            if mode == "native":
                if rc == 77:
                    print(f"{name}: SKIP (exit 77)", flush=True)
                    r["skipped"] = True
                    break
                if status != "ok" or got["verdict"] != "PASS" or not got["digest"]:
                    failures.append(f"{name} native: {status}, result {got['verdict']}")
                want = got["digest"]
            elif status != "ok" or got["verdict"] != "PASS" or got["digest"] != want:
                what = (f"{status}, RESULT {got['verdict']} digest={got['digest']}, "
                        f"native digest={want}")
                failures.append(f"{name} {mode}: {what}")
                if status == "ok" or got["verdict"] is not None:
                    print(f"!!! CORRECTNESS FAILURE: {name} under {mode}: {what} "
                          f"({logs}/{name}_{mode}.out)", flush=True)
            r["modes"][mode] = res
            note = (f"{name} {mode}: {status} {fmt(wall, 0, 3)} s "
                    f"RESULT {got['verdict']} {got['digest']}")
            if mode in ("kernel", "range"):
                note += "".join(f"\n    {ln}" for ln in res["tally"]["lines"] + res["said"])
                if res["floor_s"] is not None:
                    note += (f"\n    CUPTI per-pass calls {res['floor_s']:.3f} s, all CUPTI calls "
                             f"{res['cupti_all_s']:.3f} s")
            if mode == "ncu":
                note += f" profiled {res['ncu_profiled']} launches"
                note += "".join(f"\n    {ln}" for ln in res["ncu_errors"])
            print(note, flush=True)
        if r.get("skipped"):
            continue
        # Wall and overhead of the runs that succeeded (None for the others).
        walls = {md: r["modes"].get(md, {}).get("wall_s")
                 if r["modes"].get(md, {}).get("status") == "ok" else None for md in MODES}
        native = walls["native"]
        r["wall_s"] = walls
        r["overhead_s"] = {md: walls[md] - native if None not in (walls[md], native) else None
                           for md in ("kernel", "range", "ncu")}
        # Launches: kreplay's tally of a run that succeeded, else what ncu profiled.
        ok = {md: v for md, v in r["modes"].items() if v.get("status") == "ok"}
        r["launches"] = next((ok[md]["tally"]["launches"] for md in ("kernel", "range")
                              if md in ok and ok[md]["tally"]["launches"]),
                             ok.get("ncu", {}).get("ncu_profiled"))

    # The table; TOTAL sums the programs whose four runs all succeeded.
    cols = ("program", "launch", "native", "kernel", "range", "ncu", "ovh_k", "ovh_r", "ovh_ncu",
            "k/ncu", "r/ncu", "floor_k", "floor_r", "fk/ncu", "fr/ncu")
    print()
    print("real: wall s per mode, overhead s (wall - native), overhead ratios against ncu, and the "
          "CUPTI floor s (kreplay's time in CUPTI's per-pass calls) and its ratio against ncu's "
          "overhead. Targets: k/ncu <= 0.5, r/ncu <= 0.15 (issue 30; moonshot 0.1)")
    print(f"{cols[0]:<17}{cols[1]:>7}" + "".join(f"{c:>9}" for c in cols[2:]))
    total = {k: 0.0 for k in ("native", "kernel", "range", "ncu", "ovh_k", "ovh_r", "ovh_ncu",
                              "floor_k", "floor_r")}
    total["launches"] = 0
    counted = []
    for name in names:
        r = results[name]
        if r.get("skipped"):
            print(f"{name:<17}{'SKIP':>7}")
            continue
        w, o = r["wall_s"], r["overhead_s"]
        fk = r["modes"].get("kernel", {}).get("floor_s")
        fr = r["modes"].get("range", {}).get("floor_s")
        row = {"ratio_kernel_ncu": ratio(o["kernel"], o["ncu"]),
               "ratio_range_ncu": ratio(o["range"], o["ncu"]),
               "floor_kernel_s": fk, "floor_range_s": fr,
               "ratio_floor_kernel_ncu": ratio(fk, o["ncu"]),
               "ratio_floor_range_ncu": ratio(fr, o["ncu"])}
        r.update(row)
        print(f"{name:<17}{r['launches'] if r['launches'] is not None else '-':>7}"
              + "".join(fmt(w[md], 9) for md in MODES)
              + "".join(fmt(o[md], 9) for md in ("kernel", "range", "ncu"))
              + fmt(row["ratio_kernel_ncu"], 9, 3) + fmt(row["ratio_range_ncu"], 9, 3)
              + fmt(fk, 9) + fmt(fr, 9)
              + fmt(row["ratio_floor_kernel_ncu"], 9, 3) + fmt(row["ratio_floor_range_ncu"], 9, 3))
        if all(w[md] is not None for md in run_modes):
            counted.append(name)
            for md in run_modes:
                total[md] += w[md]
            total["ovh_k"] += o["kernel"] or 0.0
            total["ovh_r"] += o["range"]
            total["ovh_ncu"] += o["ncu"]
            total["floor_k"] += fk or 0.0
            total["floor_r"] += fr or 0.0
            total["launches"] += r["launches"] or 0
    if a.skip_kernel:
        total["kernel"] = total["ovh_k"] = total["floor_k"] = None
    total["ratio_kernel_ncu"] = (ratio(total["ovh_k"], total["ovh_ncu"])
                                 if counted and not a.skip_kernel else None)
    total["ratio_range_ncu"] = ratio(total["ovh_r"], total["ovh_ncu"]) if counted else None
    total["ratio_floor_kernel_ncu"] = (ratio(total["floor_k"], total["ovh_ncu"])
                                       if counted and not a.skip_kernel else None)
    total["ratio_floor_range_ncu"] = ratio(total["floor_r"], total["ovh_ncu"]) if counted else None
    total["programs"] = counted
    if counted:
        print(f"{'TOTAL':<17}{total['launches']:>7}"
              + "".join(fmt(total[k], 9) for k in ("native", "kernel", "range", "ncu", "ovh_k",
                                                    "ovh_r", "ovh_ncu"))
              + fmt(total["ratio_kernel_ncu"], 9, 3) + fmt(total["ratio_range_ncu"], 9, 3)
              + fmt(total["floor_k"], 9) + fmt(total["floor_r"], 9)
              + fmt(total["ratio_floor_kernel_ncu"], 9, 3)
              + fmt(total["ratio_floor_range_ncu"], 9, 3))
        left = [n for n in names if n not in counted and not results[n].get("skipped")]
        if left:
            print(f"TOTAL leaves out {', '.join(left)}: not every run of theirs succeeded")
    else:
        print("TOTAL: no program had all four runs succeed")
    if counted and total.get("ratio_range_ncu") is not None:
        print(f"range/ncu overhead in total: {total['ratio_range_ncu']:.3f} (target <= 0.15, "
              f"moonshot 0.1)")
    # Ranges per launch in range replay, and what closed them.
    print()
    print("real: ranges in range replay (launches per range; target >= "
          f"{RANGE_TARGET_LAUNCHES_PER_RANGE} for {', '.join(RANGE_TARGET_PROGRAMS)})")
    for name in names:
        rr = results[name].get("modes", {}).get("range", {})
        g = rr.get("ranges")
        if not g or not g["ranges"]:
            print(f"{name:<17} no range tally")
            continue
        per = g["launches"] / g["ranges"]
        verdict = ""
        if name in RANGE_TARGET_PROGRAMS:
            verdict = " meets" if per >= RANGE_TARGET_LAUNCHES_PER_RANGE else " MISSES"
            verdict += " the target"
        print(f"{name:<17} {g['ranges']} ranges for {g['launches']} launches "
              f"({per:.1f} per range){verdict}; closed by {'; '.join(g['closed_by']) or '-'}")
    for f in failures:
        print(f"real FAILURE: {f}")
    with open(os.path.join(a.out, "real.json"), "w") as f:
        json.dump({"metrics": TEN, "timeout_s": a.timeout, "warmup": not a.no_warmup,
                   "per_pass_calls": PER_PASS_CALLS, "programs": results, "total": total,
                   "failures": failures}, f, indent=1)
    print(f"real: {len(failures)} failures; {os.path.join(a.out, 'real.json')}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
