#!/usr/bin/env python3
"""Selection by markers on a GPU (issue 31 item 5): a PyTorch training loop profiled one step at a
time, the way Nsight Compute users do it, must replay exactly the selected launches and end
bit-identical to its plain run.

  nvtxsel_check.py <build-or-dist-dir> [--out DIR] [--modes kernel,range,auto] [--steps N]
                   [--timeout S] [--python PY]

The program is apps/torch_nvtx_steps.py (or the build's bin/kreplay_gpu_torch_nvtx_steps.py):
N steps (default 5), each torch.cuda.nvtx.range("step") (--mode nvtx) or, with --mode profiler,
torch.cuda.profiler.start()/stop() around step 3 only; between steps it runs work of its own
(a cumsum, read back) that no selection may take. Plain runs first (twice each mode: the digest
must repeat). Then, in each replay mode, under <dir>/bin/kreplay with its defaults (set basic):

  nvtx      --nvtx-include step/                    every launch of every step: L launches;
  window    --nvtx-include step/ --launch-skip K --launch-count K, K = L / N: the second step;
  startend  --nvtx-include step3: the start/end range around step 3, which holds every thread's
            launches (PyTorch's backward runs on its autograd thread, outside the main thread's
            push/pop ranges): at least L / N launches, W;
  profiler  --profile-from-start off (--mode profiler): step 3 only, W launches.

A run passes when the program exits 0 with the plain run's digest, the tally's replayed +
declined equals the launches the results database keeps (kreplay writes a row for a selected
launch only) and equals what the case selects, no kept launch is a cumsum/scan kernel (the work
outside the steps), L is a multiple of N, and L is the same in every mode. Prints a line per run,
then `N passed, M failed`. Exit 0 when all passed, 1 when one failed, 77 when nothing ran (no GPU
or no torch), 2 on a usage error. Logs: <out>/logs/; databases: <out>/db/.
"""
import argparse
import os
import sqlite3
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import writeset_check as ws  # noqa: E402  (run, base_env, parse_tally, digest_of, ...)

APP = "torch_nvtx_steps"


def script_path(build):
    path = os.path.join(build, "bin", "kreplay_gpu_torch_nvtx_steps.py")
    return path if os.path.isfile(path) else os.path.join(HERE, "apps", "torch_nvtx_steps.py")


def kept_launches(folder):
    """(dispatch rows, kernel names) of every results database under folder."""
    rows, names = 0, set()
    for db in ws.find_dbs(folder):
        con = sqlite3.connect(db)
        try:
            for (name,) in con.execute(
                    "SELECT COALESCE(k.demangled_name, '') FROM dispatches d "
                    "LEFT JOIN kernels k ON k.kernel_id = d.kernel_id AND k.app_pass = d.app_pass"):
                rows += 1
                names.add(name)
        finally:
            con.close()
    return rows, names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--out", default="nvtxsel-work")
    ap.add_argument("--modes", default="kernel,range,auto")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--python", default=sys.executable)
    a = ap.parse_args()
    kreplay = os.path.join(a.build, "bin", "kreplay")
    if not os.access(kreplay, os.X_OK):
        print(f"usage: {kreplay} is missing", file=sys.stderr)
        return 2
    env = ws.base_env(a.build)
    script = script_path(a.build)
    logs = os.path.join(a.out, "logs")
    app = lambda mode: [a.python, script, "--mode", mode, "--steps", str(a.steps)]  # noqa: E731

    # Plain runs.
    digests = {}
    for mode in ("nvtx", "profiler"):
        seen = []
        for k in range(2):
            r = ws.run(app(mode), env, os.path.join(logs, f"plain-{mode}-{k}.log"), a.timeout)
            if r["rc"] == 77 or (r["rc"] != 0 and ws.gpu_listed() is False):
                print(f"SKIP: plain run exited {r['rc']} (no GPU or no torch)")
                return 77
            seen.append(ws.digest_of(r["stdout"], APP) if r["status"] == "ok" else None)
        if seen[0] is None or seen[0] != seen[1]:
            print(f"FAIL plain {mode}: digests {seen} (the program is not deterministic, or failed)")
            return 1
        digests[mode] = seen[0]
        print(f"plain {mode}: digest {seen[0]}")

    passed = failed = 0
    per_mode_launches = {}
    whole_step = {}  # mode -> launches of step 3 on every thread (the startend case)
    for mode in a.modes.split(","):
        cases = [("nvtx", "nvtx", ["--nvtx-include", "step/"]),
                 ("startend", "nvtx", ["--nvtx-include", "step3"]),
                 ("profiler", "profiler", ["--profile-from-start", "off"])]
        for case, app_mode, options in cases + [("window", "nvtx", None)]:
            if options is None:
                steps_launches = per_mode_launches.get(mode)
                if not steps_launches:
                    print(f"FAIL {mode} window: no launch count from the nvtx case")
                    failed += 1
                    continue
                k = steps_launches // a.steps
                options = ["--nvtx-include", "step/", "--launch-skip", str(k), "--launch-count",
                           str(k)]
            folder = os.path.join(a.out, "db", f"{mode}-{case}")
            cmd = [kreplay, "--replay-mode", mode, *options, "-d", folder, "-o", "run_%pid%",
                   "--", *app(app_mode)]
            r = ws.run(cmd, env, os.path.join(logs, f"{mode}-{case}.log"), a.timeout)
            problems = []
            if r["status"] != "ok":
                problems.append(f"status {r['status']}")
            digest = ws.digest_of(r["stdout"], APP)
            if digest != digests[app_mode]:
                problems.append(f"digest {digest} != plain {digests[app_mode]}")
            t = ws.parse_tally(r["stderr"])
            rows, names = kept_launches(folder)
            if t is None:
                problems.append("no tally line")
            elif t["replayed"] + t["declined"] != rows:
                problems.append(f"tally replayed {t['replayed']} + declined {t['declined']} != "
                                f"{rows} launches in the database")
            leaked = sorted(n for n in names if "cumsum" in n.lower() or "scan" in n.lower())
            if leaked:
                problems.append(f"launches outside the steps were selected: {leaked[:3]}")
            if case == "nvtx":
                per_mode_launches[mode] = rows
                if rows == 0 or rows % a.steps != 0:
                    problems.append(f"{rows} launches selected, not a multiple of {a.steps} steps")
            elif case == "startend":
                # Every thread's launches of step 3: at least the main thread's (push/pop is per
                # thread, so the nvtx case counts those alone).
                whole_step[mode] = rows
                if rows < per_mode_launches.get(mode, 0) // a.steps or rows == 0:
                    problems.append(f"{rows} launches selected, fewer than the main thread's "
                                    f"{per_mode_launches.get(mode, 0) // a.steps} of one step")
            elif case == "profiler":
                want = whole_step.get(mode)
                if rows != want:
                    problems.append(f"{rows} launches selected, expected step 3's {want} (the "
                                    "start/end range step3, every thread)")
            else:
                want = per_mode_launches.get(mode, 0) // a.steps
                if rows != want:
                    problems.append(f"{rows} launches selected, expected one step's {want}")
            if t is not None and t["replayed"] == 0 and rows > 0:
                problems.append("nothing was replayed")
            line = (f"{mode:6} {case:8} kept {rows:4} launches; "
                    + (t["lines"][0].replace("==KREPLAY== ", "") if t else "no tally"))
            if problems:
                failed += 1
                print(f"FAIL {line}: {'; '.join(problems)} (log {logs}/{mode}-{case}.log)")
            else:
                passed += 1
                print(f"ok   {line}")
    counts = set(per_mode_launches.values())
    if len(counts) > 1:
        failed += 1
        print(f"FAIL the modes selected different step launches: {per_mode_launches}")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
