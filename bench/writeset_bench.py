#!/usr/bin/env python3
"""Write-bounded snapshots, measured: programs that hold most of the GPU, under kreplay, under ncu,
and in their small-footprint variants under kreplay, side by side.

  writeset_bench.py <build-or-dist-dir> [--out DIR] [--programs kv_decode,device_heap,...]
                    [--timeout S] [--ncu-timeout S] [--ncu ncu] [--python PY] [--no-ncu]
                    [--no-warmup]

The programs are those of tests/gpu/writeset_check.py (kv_decode, device_heap, torch_bigpool,
jax_default). For each, one run each of:
  native   the program alone (after one unmeasured native run, unless --no-warmup);
  kreplay  <dir>/bin/kreplay -d <out>/db/<program>-kreplay -o run_%pid% -- <program>: kreplay's
           defaults (the set basic, --replay-mode auto: range replay);
  ncu      ncu --metrics <the counters of the kreplay run's database (run.counter_names)>
           --replay-mode kernel --cache-control all -f -o <out>/ncu/<program> <program>, limited to
           --ncu-timeout seconds (default 600; its process group is killed then); the kernels it
           finished are counted from its `==PROF== Profiling "name" ... N passes` lines. Without
           the kreplay run's counters (it failed), or when ncu rejects them, --set basic;
  small    the small-footprint variant under kreplay's defaults: kv_decode with
           KV_POOL_FRACTION=0.02, torch_bigpool with TORCH_BIGPOOL_FRACTION=0, jax_train without
           --prealloc-default (its result line is jax_train's); device_heap has none (it is
           small): the same program again.
Printed per program: native wall time, kreplay's, the small variant's under kreplay, their ratio
(kreplay / small: what holding most of the GPU costs), ncu's wall time and the kernels it
finished, and from kreplay's databases the bytes saved (bytes_snapshotted) and changed
(bytes_changed, where the column exists) per replayed launch or range: median and total; then
kreplay's tally lines. Every run's digest must equal the native run's (the small variant's too:
the fraction does not change the result); a run that prints another digest is a correctness
failure, printed as `!!! CORRECTNESS FAILURE` and makes the script exit 1 (an ncu run that ran
out of time is not one). Logs in <out>/logs, everything in <out>/writeset_bench.json. Nothing here
asserts anything about time.
"""
import argparse
import json
import os
import re
import shutil
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "gpu"))

import writeset_check as wc  # noqa: E402

NCU_DONE = re.compile(r'^==PROF== Profiling "([^"]*)".*?(\d+) pass', re.M)
NCU_STARTED = re.compile(r'^==PROF== Profiling "', re.M)


def fmt_s(v):
    return f"{v:.2f}" if isinstance(v, (int, float)) else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", help="build (or dist) folder with bin/ and lib/")
    ap.add_argument("--out", help="folder for logs, databases and the JSON "
                    "(default <build>/writeset-bench)")
    ap.add_argument("--programs", default=",".join(wc.PROGRAMS),
                    help="comma list (default: %(default)s)")
    ap.add_argument("--timeout", type=float, default=600,
                    help="seconds per native or kreplay run (default 600)")
    ap.add_argument("--ncu-timeout", type=float, default=600,
                    help="seconds for each ncu run (default 600)")
    ap.add_argument("--ncu", default="ncu", help="the ncu command (default: ncu on PATH, else "
                    "/usr/local/cuda/bin/ncu)")
    ap.add_argument("--python", default=sys.executable, help="Python for the .py programs")
    ap.add_argument("--no-ncu", action="store_true", help="leave ncu out")
    ap.add_argument("--no-warmup", action="store_true", help="no unmeasured native run first")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    names = [n for n in a.programs.split(",") if n]
    unknown = [n for n in names if n not in wc.PROGRAMS]
    if unknown or not names:
        ap.error(f"unknown programs {unknown}; known: {', '.join(wc.PROGRAMS)}")
    if not os.path.isdir(a.build):
        ap.error(f"build folder '{a.build}' does not exist")
    build = os.path.abspath(a.build)
    out = os.path.abspath(a.out or os.path.join(build, "writeset-bench"))
    logs = os.path.join(out, "logs")
    os.makedirs(logs, exist_ok=True)
    os.makedirs(os.path.join(out, "ncu"), exist_ok=True)
    kreplay = os.path.join(build, "bin", "kreplay")
    ncu = None
    if not a.no_ncu:
        ncu = shutil.which(a.ncu) or (shutil.which("/usr/local/cuda/bin/ncu")
                                      if a.ncu == "ncu" else None)
    env0 = wc.base_env(build)
    print(f"writeset_bench: build {build}, out {out}, kreplay {kreplay}, ncu "
          f"{ncu or ('left out' if a.no_ncu else 'MISSING')}, timeout {a.timeout:.0f} s, ncu "
          f"timeout {a.ncu_timeout:.0f} s", flush=True)
    if wc.gpu_listed() is False:
        print("SKIP: nvidia-smi lists no GPU", file=sys.stderr)
        return 77

    results, failures = {}, []
    for name in names:
        cmd, extra, app, missing = wc.program_command(name, build, a.python)
        scmd, sextra, sapp, _ = wc.program_command(name, build, a.python, small=True)
        r = results.setdefault(name, {"command": cmd, "runs": {}})
        if missing:
            print(f"{name}: FAIL: {missing}", flush=True)
            failures.append(f"{name}: {missing}")
            r["skipped"] = missing
            continue
        env = dict(env0, **extra)
        if not a.no_warmup:
            w = wc.run(cmd, env, os.path.join(logs, f"{name}-warmup.log"), a.timeout)
            if w["rc"] == 77:
                print(f"{name}: SKIP (exit 77: no GPU or its framework is missing; "
                      f"{logs}/{name}-warmup.log)", flush=True)
                r["skipped"] = "exit 77"
                continue

        def one(kind, argv, run_env, app_name, timeout):
            res = wc.run(argv, run_env, os.path.join(logs, f"{name}-{kind}.log"), timeout)
            res["digest"] = wc.digest_of(res["stdout"], app_name)
            res["app_info"] = wc.app_info(res["stdout"])
            return res

        native = one("native", cmd, env, app, a.timeout)
        if native["rc"] == 77:
            print(f"{name}: SKIP (exit 77)", flush=True)
            r["skipped"] = "exit 77"
            continue
        want = native["digest"]
        if native["status"] != "ok" or want is None:
            failures.append(f"{name} native: {native['status']}, digest {want}")
        runs = {"native": native}

        kdir = os.path.join(out, "db", f"{name}-kreplay")
        sdir = os.path.join(out, "db", f"{name}-small")
        for d in (kdir, sdir):
            shutil.rmtree(d, ignore_errors=True)
        runs["kreplay"] = one("kreplay", [kreplay, "-d", kdir, "-o", "run_%pid%", "--", *cmd],
                              env, app, a.timeout)
        kdbs = wc.find_dbs(kdir)
        metrics = [m for m in wc.counter_names(kdbs) if "__" in m]
        runs["small"] = one("small", [kreplay, "-d", sdir, "-o", "run_%pid%", "--", *scmd],
                            dict(env0, **sextra), sapp, a.timeout)
        sdbs = wc.find_dbs(sdir)

        if ncu:
            report = os.path.join(out, "ncu", name)
            base = [ncu, "--replay-mode", "kernel", "--cache-control", "all", "-f", "-o", report]
            chosen = ["--metrics", ",".join(metrics)] if metrics else ["--set", "basic"]
            res = one("ncu", base + chosen + cmd, env, app, a.ncu_timeout)
            text = res["stdout"] + res["stderr"]
            if metrics and res["status"] != "ok" and re.search(
                    r"==ERROR==.*(metric|Metric)", text):
                # ncu did not take kreplay's counter names: its own basic set instead.
                res = one("ncu-basic", base + ["--set", "basic"] + cmd, env, app, a.ncu_timeout)
                res["note"] = "ncu refused kreplay's counter names; --set basic"
                text = res["stdout"] + res["stderr"]
                chosen = ["--set", "basic"]
            res["metrics"] = chosen
            res["finished"] = len(NCU_DONE.findall(text))
            res["started"] = len(NCU_STARTED.findall(text))
            res["errors"] = [ln for ln in text.splitlines() if ln.startswith("==ERROR==")][-3:]
            runs["ncu"] = res
        else:
            runs["ncu"] = {"status": "left out" if a.no_ncu else "no ncu"}

        # Correctness: every finished run prints the native digest. jax_default's small variant
        # is another program (jax_train: no preallocation) that computes the same: a different
        # digest there is noted, not a failure of kreplay's.
        for kind in ("kreplay", "small", "ncu"):
            res = runs[kind]
            if "digest" not in res:
                continue
            if res["status"] == "timeout" and kind == "ncu":
                continue
            if kind == "small" and sapp != app and res["status"] == "ok" and res["digest"]:
                if res["digest"] != want:
                    r["note"] = (f"the small variant ({sapp}) printed {res['digest']}, "
                                 f"{app} natively {want}")
                    print(f"    note: {r['note']}", flush=True)
                continue
            if res["digest"] != want:
                what = (f"{res['status']}, digest {res['digest']}, native {want}")
                failures.append(f"{name} {kind}: {what}")
                if res["digest"] is not None:
                    print(f"!!! CORRECTNESS FAILURE: {name} under {kind}: {what} "
                          f"({logs}/{name}-{kind}.log)", flush=True)

        r["runs"] = {k: {kk: vv for kk, vv in v.items() if kk not in ("stdout", "stderr")}
                     for k, v in runs.items()}
        for kind, dbs in (("kreplay", kdbs), ("small", sdbs)):
            res = runs[kind]
            mode = replay_mode_of(dbs)  # auto: range replay, or kernel replay where needed
            res["tally"] = wc.parse_tally(res["stderr"])
            res["db"] = wc.db_stats(dbs, "kernel" if mode == "kernel" else "range")
            r["runs"][kind]["tally"] = res["tally"]
            r["runs"][kind]["db"] = res["db"]
            r["runs"][kind]["replay_mode"] = mode
        r["metrics"] = metrics
        k, s = runs["kreplay"], runs["small"]
        r["ratio_kreplay_small"] = (k["wall_s"] / s["wall_s"]
                                    if k["status"] == "ok" and s["status"] == "ok"
                                    and s["wall_s"] > 0 else None)
        print(f"{name}: native {native['status']} {fmt_s(native['wall_s'])} s {want}; kreplay "
              f"{k['status']} {fmt_s(k['wall_s'])} s {k['digest']}; small {s['status']} "
              f"{fmt_s(s['wall_s'])} s {s['digest']}; ncu {runs['ncu'].get('status')} "
              f"{fmt_s(runs['ncu'].get('wall_s'))} s, {runs['ncu'].get('finished', '-')} kernels "
              "finished", flush=True)
        for kind in ("kreplay", "small"):
            t = runs[kind]["tally"]
            for line in (t["lines"] + t["snapshots"] if t else ["no tally line"]):
                print(f"    {kind}: {line}")
            print(f"    {kind}: {wc.describe_db(runs[kind]['db'])}")
        for line in runs["ncu"].get("errors", []):
            print(f"    ncu: {line}")
        if runs["ncu"].get("note"):
            print(f"    ncu: {runs['ncu']['note']}")

    # The table, side by side.
    print()
    print("writeset_bench: wall s; k/small = kreplay / small-footprint kreplay; ncu_done = "
          "kernels ncu finished (of those it started); saved and changed bytes per replayed "
          "launch or range (median / total) from kreplay's databases")
    head = (f"{'program':<14}{'native':>8}{'kreplay':>9}{'small':>8}{'k/small':>8}{'ncu':>8}"
            f"{'ncu_done':>10}{'launch':>8}{'replay':>8}  {'saved med/total':<20}"
            f"{'changed med/total':<20}{'small saved med/total':<22}")
    print(head)
    for name in names:
        r = results[name]
        if r.get("skipped"):
            print(f"{name:<14}SKIP ({r['skipped']})")
            continue
        runs = r["runs"]

        def ok(kind):
            return runs[kind].get("wall_s") if runs[kind].get("status") == "ok" else None

        ncu_run = runs["ncu"]
        ncu_wall = ncu_run.get("wall_s")
        ncu_txt = (f"{ncu_wall:.1f}" + ("*" if ncu_run.get("status") == "timeout" else "")
                   if isinstance(ncu_wall, (int, float)) else "-")
        done = (f"{ncu_run['finished']}/{ncu_run['started']}" if "finished" in ncu_run else "-")
        kt, kdb, sdb = runs["kreplay"]["tally"], runs["kreplay"]["db"], runs["small"]["db"]

        def pair(values):
            if not values:
                return "-"
            return f"{wc.fmt_bytes(wc.median(values))}/{wc.fmt_bytes(sum(values))}"

        changed = pair(kdb["changed"]) if kdb["has_changed"] else "no column"
        print(f"{name:<14}{fmt_s(ok('native')):>8}{fmt_s(ok('kreplay')):>9}"
              f"{fmt_s(ok('small')):>8}{fmt_s(r['ratio_kreplay_small']):>8}{ncu_txt:>8}"
              f"{done:>10}{(kt['launches'] if kt else '-'):>8}{(kt['replayed'] if kt else '-'):>8}"
              f"  {pair(kdb['saved']):<20}{changed:<20}{pair(sdb['saved']):<22}")
    print("(* ncu ran out of its time limit)")
    with open(os.path.join(out, "writeset_bench.json"), "w") as f:
        json.dump({"timeout_s": a.timeout, "ncu_timeout_s": a.ncu_timeout, "ncu": ncu,
                   "programs": results, "failures": failures}, f, indent=1, default=str)
    for f_ in failures:
        print(f"writeset_bench FAILURE: {f_}")
    print(f"writeset_bench: {len(failures)} failures; {os.path.join(out, 'writeset_bench.json')}")
    return 1 if failures else 0


def replay_mode_of(dbs):
    """run.replay_mode of the first database (auto resolves to kernel or range), or None."""
    import sqlite3
    for p in dbs:
        try:
            con = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
            row = con.execute("SELECT replay_mode FROM run LIMIT 1").fetchone()
            con.close()
            if row:
                return row[0]
        except sqlite3.Error:
            continue
    return None


if __name__ == "__main__":
    sys.exit(main())
