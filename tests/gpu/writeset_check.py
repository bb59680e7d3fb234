#!/usr/bin/env python3
"""Write-bounded snapshots on programs that hold most of the GPU: each must end exactly as it does
without kreplay, and kreplay should replay its launches (saving only what a launch writes).

  writeset_check.py <build-or-dist-dir> [--out DIR] [--programs kv_decode,device_heap,...]
                    [--modes kernel,range] [--variants tool,default,full] [--timeout S]
                    [--python PY]

Programs (tests/gpu/README.md):
  kv_decode      bin/kreplay_gpu_kv_decode: paged-KV decode loop, one cudaMalloc of 85% of free
  device_heap    bin/kreplay_gpu_device_heap: in-kernel new/delete/malloc/free across launches
  torch_bigpool  bin/kreplay_gpu_torch_bigpool.py: training while torch's allocator caches 62%
  jax_default    bin/kreplay_gpu_jax_train.py --prealloc-default: JAX's default 75% arena
(the Python programs from the build's bin/, else from tests/gpu/apps next to this script).

For every program: two native runs (the baseline: exit 0, one KREPLAY_RESULT line, the same digest
twice), then in each replay mode (kernel, range):
  tool     the suite's test tool at 3 passes (CUDA_INJECTION64_PATH=<dir>/lib/libkreplay_cuda.so,
           KREPLAY_TOOL_LIBRARIES=<dir>/lib/libkreplay_test_pass_tool.so, or
           libkreplay_test_range_tool.so in range mode, KREPLAY_TEST_PASSES=3);
  default  <dir>/bin/kreplay --replay-mode MODE -d <out>/<run> -o run_%pid% -- <program>;
  full     the same with --set full.
A run passes when the program exits 0 and prints the baseline's digest, and kreplay was there: the
tool printed its summary with errors=0 (tool), or kreplay printed its tally line (default, full).
Declines do not fail a run: they are reported, by reason (from the tool's
KREPLAY_TEST_TOOL_DECLINES line, or kreplay's tally
`N launches: R replayed (P passes), D declined (reason: n, ...), S not selected`).
For default and full, the results database(s) give: replayed launches, the share of the launches
after each kernel's first launch that were replayed, and over the replayed dispatches (kernel
mode) or ranges (range mode) the median and total of bytes_snapshotted and bytes_changed (the
latter where the column exists; said when it does not), and the snapshot_mode counts.
Range mode: ranges are read from a ranges table where the schema has one (a table whose name holds
"range" with a bytes_snapshotted column), else from the dispatch rows that carry a range's
snapshot (a range books its bytes on its first launch).

Prints a row per program and variant, a table at the end, then `N passed, M failed`. Logs of every
run: <out>/logs/<program>-<variant>.log; databases under <out>/db/. Exit 0 when every run passed,
1 when one failed, 77 when nothing ran (no GPU: nvidia-smi lists none, or every program exited 77),
2 on a usage error. A CUDA program exiting 77 while nvidia-smi lists a GPU is a failure; a Python
program exiting 77 (torch or jax missing) is a skip. Standard library only (Python 3.12).
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> how to run it: a CUDA binary in bin/, or a Python script (bin/kreplay_gpu_<script>, else
# apps/<script> beside this file) with arguments. "app" is the name on its KREPLAY_RESULT line.
# small_*: the small-footprint variant (bench/writeset_bench.py).
PROGRAMS = {
    "kv_decode": {"binary": "kreplay_gpu_kv_decode", "app": "kv_decode",
                  "small_env": {"KV_POOL_FRACTION": "0.02"}},
    "device_heap": {"binary": "kreplay_gpu_device_heap", "app": "device_heap"},
    "torch_bigpool": {"script": "torch_bigpool.py", "args": [], "app": "torch_bigpool",
                      "small_env": {"TORCH_BIGPOOL_FRACTION": "0"}},
    "jax_default": {"script": "jax_train.py", "args": ["--prealloc-default"], "app": "jax_default",
                    "small_args": [], "small_app": "jax_train"},
}
MODES = ("kernel", "range")
VARIANTS = ("tool", "default", "full")
# Variables that would put kreplay or the test tool into a run that must not have them.
INJECTION_VARS = ("CUDA_INJECTION64_PATH", "KREPLAY_TOOL_LIBRARIES", "KREPLAY_TEST_PASSES",
                  "KREPLAY_TEST_EARLY_EXIT", "KREPLAY_TEST_KERNEL_REGEX",
                  "KREPLAY_TEST_MAX_DISPATCHES")

TALLY = re.compile(r"==KREPLAY== (\d+) launches: (\d+) replayed \((\d+) passes\), (\d+) declined"
                   r"(?: \((.*?)\))?, (\d+) not selected")
RANGES = re.compile(r"==KREPLAY== (\d+) ranges held (\d+) launches(.*)$", re.M)
SNAPSHOTS = re.compile(r"==KREPLAY== (snapshots: .*)$", re.M)
TOOL = re.compile(r"KREPLAY_TEST_TOOL (replayed=.*)$", re.M)
TOOL_DECLINES = re.compile(r"KREPLAY_TEST_TOOL_DECLINES(.*)$", re.M)


# ---- running -------------------------------------------------------------------------------------

def base_env(build):
    """The environment of every run, as run_gpu_suite.sh sets it: the toolkit's libraries
    (runtime, cuBLAS, CUPTI) first, no injection variables. (The build's own binaries find
    lib/ through their $ORIGIN run paths.)"""
    del build
    env = {k: v for k, v in os.environ.items() if k not in INJECTION_VARS}
    libs = ["/usr/local/cuda/lib64", "/usr/local/cuda/extras/CUPTI/lib64"]
    if env.get("LD_LIBRARY_PATH"):
        libs.append(env["LD_LIBRARY_PATH"])
    env["LD_LIBRARY_PATH"] = ":".join(libs)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def program_command(name, build, python, small=False):
    """(argv, extra environment, app name on the result line, what is missing or None)."""
    p = PROGRAMS[name]
    env = dict(p.get("small_env", {})) if small else {}
    app = p.get("small_app", p["app"]) if small else p["app"]
    if "binary" in p:
        path = os.path.join(build, "bin", p["binary"])
        return [path], env, app, None if os.access(path, os.X_OK) else f"{path} is missing"
    path = os.path.join(build, "bin", "kreplay_gpu_" + p["script"])
    if not os.path.isfile(path):
        path = os.path.join(HERE, "apps", p["script"])
    args = p.get("small_args", p["args"]) if small else p["args"]
    return ([python, path, *args], env, app,
            None if os.path.isfile(path) else f"{p['script']} is missing")


def is_python(name):
    return "script" in PROGRAMS[name]


def kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run(cmd, env, log, timeout):
    """Run cmd in its own session; stdout and stderr apart, both kept in log. Returns a dict:
    status ('ok', 'rc=N', 'timeout', 'start failed'), rc, wall_s, stdout, stderr."""
    os.makedirs(os.path.dirname(log), exist_ok=True)
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                start_new_session=True)
    except OSError as e:
        with open(log, "w") as f:
            f.write(f"$ {' '.join(cmd)}\ncannot start: {e}\n")
        return {"status": "start failed", "rc": None, "wall_s": 0.0, "stdout": "",
                "stderr": str(e)}
    try:
        out, err = proc.communicate(timeout=timeout)
        status = "ok" if proc.returncode == 0 else f"rc={proc.returncode}"
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, err = proc.communicate()
        status = "timeout"
    except BaseException:  # this script stopped (SIGTERM, Ctrl-C): the run goes with it
        kill_group(proc)
        raise
    wall = time.monotonic() - t0
    out = out.decode(errors="replace")
    err = err.decode(errors="replace")
    with open(log, "w") as f:
        f.write(f"$ {' '.join(cmd)}\n# status {status}, {wall:.1f} s\n---- stdout\n{out}\n"
                f"---- stderr\n{err}")
    return {"status": status, "rc": proc.returncode, "wall_s": wall, "stdout": out, "stderr": err}


def digest_of(stdout, app):
    """The digest of the one `KREPLAY_RESULT <app> <hex>` line, or None (none, or several)."""
    found = re.findall(rf"^KREPLAY_RESULT {re.escape(app)} ([0-9a-f]{{16}})\s*$", stdout, re.M)
    return found[0] if len(found) == 1 else None


def app_info(stdout):
    m = re.findall(r"^KREPLAY_APP_INFO .*$", stdout, re.M)
    return m[-1] if m else ""


def parse_tally(stderr):
    """kreplay's tally at exit, summed over the processes that printed one, or None."""
    found = list(TALLY.finditer(stderr))
    if not found:
        return None
    t = {"launches": 0, "replayed": 0, "passes": 0, "declined": 0, "not_selected": 0,
         "by_reason": {}, "lines": [m.group(0) for m in found], "ranges": None,
         "snapshots": SNAPSHOTS.findall(stderr)}
    for m in found:
        for key, g in (("launches", 1), ("replayed", 2), ("passes", 3), ("declined", 4),
                       ("not_selected", 6)):
            t[key] += int(m.group(g))
        for part in (m.group(5) or "").split(","):
            if ":" in part:
                reason, n = part.rsplit(":", 1)
                reason = reason.strip()
                t["by_reason"][reason] = t["by_reason"].get(reason, 0) + int(n)
    r = list(RANGES.finditer(stderr))
    if r:
        t["ranges"] = sum(int(m.group(1)) for m in r)
        # What closed them (write_set: a launch whose own earlier range the range had not saved).
        closed = [re.search(r"closed by (.*)$", m.group(3)) for m in r]
        t["closed_by"] = "; ".join(c.group(1) for c in closed if c)
    return t


def parse_tool(stderr):
    """The test tool's summary (replayed, declined, not_requested, passes, errors, by_reason)."""
    lines = TOOL.findall(stderr)
    if len(lines) != 1:
        return None, f"{len(lines)} KREPLAY_TEST_TOOL summary lines"
    t = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", lines[0])}
    t["by_reason"] = {}
    d = TOOL_DECLINES.findall(stderr)
    if d:
        t["by_reason"] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", d[-1])}
    return t, None


def gpu_listed():
    """True/False from nvidia-smi -L; None without nvidia-smi."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "GPU " in p.stdout


# ---- the results databases -----------------------------------------------------------------------

def find_dbs(folder):
    return sorted(glob.glob(os.path.join(folder, "**", "*_results.db"), recursive=True))


def columns(con, table):
    return [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]


def counter_names(paths):
    """The counters the run collected (run.counter_names, else the counters table), in order."""
    names = []
    for p in paths:
        try:
            con = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
            for (text,) in con.execute("SELECT counter_names FROM run"):
                for n in json.loads(text or "[]"):
                    if n not in names:
                        names.append(n)
            if not names:
                for (n,) in con.execute("SELECT DISTINCT name FROM counters ORDER BY name"):
                    if n not in names:
                        names.append(n)
            con.close()
        except (sqlite3.Error, json.JSONDecodeError):
            continue
    return names


def db_stats(paths, mode):
    """What the databases of one kreplay run say about replay and snapshots (see the module doc)."""
    s = {"dbs": len(paths), "dispatches": 0, "replayed": 0, "declined": {}, "after_first": 0,
         "after_first_replayed": 0, "unit": "range" if mode == "range" else "dispatch",
         "units": 0, "saved": [], "changed": [], "has_changed": None, "has_mode": None,
         "modes": {}, "notes": [], "device_peak": None, "host_peak": None}
    for path in paths:
        try:
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            dcols = columns(con, "dispatches")
            if not dcols:
                s["notes"].append(f"{os.path.basename(path)}: no dispatches table")
                continue
            has_changed = "bytes_changed" in dcols
            has_mode = "snapshot_mode" in dcols
            # A column counts as there when every database has it.
            s["has_changed"] = has_changed and s["has_changed"] is not False
            s["has_mode"] = has_mode and s["has_mode"] is not False
            changed_col = "d.bytes_changed" if has_changed else "NULL"
            mode_col = "d.snapshot_mode" if has_mode else "NULL"
            rows = con.execute(
                "SELECT d.dispatch_id, COALESCE(NULLIF(k.demangled_name, ''),"
                " NULLIF(k.mangled_name, ''), 'kernel ' || d.kernel_id), d.outcome, d.reason,"
                f" d.bytes_snapshotted, d.bytes_restored, d.snapshot_ns, {changed_col}, {mode_col}"
                " FROM dispatches d LEFT JOIN kernels k ON k.app_pass = d.app_pass"
                " AND k.kernel_id = d.kernel_id ORDER BY d.app_pass, d.dispatch_id").fetchall()
            seen = set()
            units = []
            for did, kernel, outcome, reason, saved, restored, snap_ns, changed, smode in rows:
                s["dispatches"] += 1
                if outcome == "replayed":
                    s["replayed"] += 1
                elif outcome == "declined":
                    key = reason or "?"
                    s["declined"][key] = s["declined"].get(key, 0) + 1
                if kernel in seen:
                    s["after_first"] += 1
                    s["after_first_replayed"] += outcome == "replayed"
                seen.add(kernel)
                if outcome != "replayed":
                    continue
                # Range mode: a range books its snapshot (bytes, snapshot_mode) on its first
                # kept launch; the other launches of the range carry zeros and ''.
                if (mode != "range" or smode or (saved or 0) > 0 or (restored or 0) > 0
                        or (snap_ns or 0) > 0):
                    units.append((saved, changed, smode))
            if mode == "range":
                # A ranges table, where the schema has one, replaces the dispatch rows.
                tables = [r[0] for r in con.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'")]
                for t in tables:
                    tcols = columns(con, t)
                    if "range" in t.lower() and "bytes_snapshotted" in tcols:
                        where = " WHERE outcome = 'replayed'" if "outcome" in tcols else ""
                        sel = ", ".join(["bytes_snapshotted",
                                         "bytes_changed" if "bytes_changed" in tcols else "NULL",
                                         "snapshot_mode" if "snapshot_mode" in tcols else "NULL"])
                        units = con.execute(f'SELECT {sel} FROM "{t}"{where}').fetchall()
                        s["has_changed"] = "bytes_changed" in tcols
                        s["has_mode"] = "snapshot_mode" in tcols
                        s["notes"].append(f"ranges from table {t}")
                        break
                else:
                    s["notes"].append("ranges: the replayed dispatch rows that carry a range's "
                                      "snapshot (no ranges table)")
            rcols = columns(con, "run")
            for col, key in (("snapshot_device_peak_bytes", "device_peak"),
                             ("snapshot_host_peak_bytes", "host_peak")):
                if col in rcols:
                    for (v,) in con.execute(f"SELECT {col} FROM run"):
                        if v is not None:
                            s[key] = (s[key] or 0) + int(v)
            for saved, changed, smode in units:
                s["units"] += 1
                s["saved"].append(int(saved or 0))
                if changed is not None:
                    s["changed"].append(int(changed))
                if smode is not None:
                    key = str(smode) or "none"
                    s["modes"][key] = s["modes"].get(key, 0) + 1
            con.close()
        except sqlite3.Error as e:
            s["notes"].append(f"{os.path.basename(path)}: {e}")
    return s


def fmt_bytes(n):
    if n is None:
        return "-"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.1f}{unit}"
    return f"{int(n)}B"


def median(values):
    return statistics.median(values) if values else None


def describe_db(s):
    """One line of a db_stats() result."""
    if s["dbs"] == 0:
        return "no results database"
    share = (f"{100.0 * s['after_first_replayed'] / s['after_first']:.1f}%"
             if s["after_first"] else "-")
    text = (f"db: {s['replayed']}/{s['dispatches']} dispatches replayed, after each kernel's "
            f"first launch {s['after_first_replayed']}/{s['after_first']} ({share}); "
            f"{s['units']} replayed {s['unit']}{'es' if s['unit'] == 'dispatch' else 's'}: "
            f"saved median {fmt_bytes(median(s['saved']))} "
            f"total {fmt_bytes(sum(s['saved']))}")
    if s["has_changed"]:
        text += (f", changed median {fmt_bytes(median(s['changed']))} "
                 f"total {fmt_bytes(sum(s['changed']))}")
    else:
        text += ", bytes_changed: no such column yet"
    if s["has_mode"]:
        text += ", snapshot_mode " + (" ".join(f"{k}={v}" for k, v in sorted(s["modes"].items()))
                                      or "-")
    else:
        text += ", snapshot_mode: no such column yet"
    if s["device_peak"] is not None or s["host_peak"] is not None:
        text += (f", snapshot storage peak device {fmt_bytes(s['device_peak'])} host "
                 f"{fmt_bytes(s['host_peak'])}")
    if s["declined"]:
        text += ", declined " + ", ".join(f"{k}: {v}" for k, v in sorted(s["declined"].items()))
    if s["notes"]:
        text += " [" + "; ".join(s["notes"]) + "]"
    return text


# ---- the check -----------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", help="build (or dist) folder with bin/ and lib/")
    ap.add_argument("--out", help="folder for logs and databases (default <build>/writeset-check)")
    ap.add_argument("--programs", default=",".join(PROGRAMS),
                    help="comma list (default: %(default)s)")
    ap.add_argument("--modes", default=",".join(MODES), help="comma list (default: %(default)s)")
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help="comma list of tool, default, full (default: %(default)s)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per run (default 600)")
    ap.add_argument("--python", default=sys.executable, help="Python for the .py programs")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    programs = [p for p in a.programs.split(",") if p]
    modes = [m for m in a.modes.split(",") if m]
    variants = [v for v in a.variants.split(",") if v]
    for what, got, known in (("programs", programs, PROGRAMS), ("modes", modes, MODES),
                             ("variants", variants, VARIANTS)):
        bad = [x for x in got if x not in known]
        if bad or not got:
            ap.error(f"--{what}: unknown {bad or 'empty list'}; known: {', '.join(known)}")
    if not os.path.isdir(a.build):
        ap.error(f"build folder '{a.build}' does not exist")
    build = os.path.abspath(a.build)
    out = os.path.abspath(a.out or os.path.join(build, "writeset-check"))
    logs = os.path.join(out, "logs")
    os.makedirs(logs, exist_ok=True)

    gpu = gpu_listed()
    if gpu is False:
        print("SKIP: nvidia-smi lists no GPU", file=sys.stderr)
        return 77
    env0 = base_env(build)
    injection = os.path.join(build, "lib", "libkreplay_cuda.so")
    tools = {"kernel": os.path.join(build, "lib", "libkreplay_test_pass_tool.so"),
             "range": os.path.join(build, "lib", "libkreplay_test_range_tool.so")}
    kreplay = os.path.join(build, "bin", "kreplay")
    for path in [injection, kreplay] + [tools[m] for m in modes]:
        if not os.path.exists(path):
            print(f"warning: {path} is missing: the runs that need it will fail", file=sys.stderr)
    print(f"writeset_check: build {build}, out {out}, programs {','.join(programs)}, modes "
          f"{','.join(modes)}, variants {','.join(variants)}, timeout {a.timeout:.0f} s",
          flush=True)

    rows, results = [], {}
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}

    def record(program, variant, verdict, secs, detail):
        row = f"{program:<14} {variant:<16} {verdict:<4} {secs:>7}  {detail}"
        rows.append(row)
        counts[verdict] += 1
        print(row, flush=True)

    for name in programs:
        cmd, extra, app, missing = program_command(name, build, a.python)
        res = results.setdefault(name, {"runs": {}})
        if missing:
            record(name, "baseline", "FAIL", "-", missing + " (not built or not configured?)")
            continue
        env = dict(env0, **extra)
        base = run(cmd, env, os.path.join(logs, f"{name}-baseline.log"), a.timeout)
        secs = f"{base['wall_s']:.1f}s"
        if base["rc"] == 77:
            skip = re.findall(r"^SKIP:.*$", base["stderr"], re.M)
            if is_python(name) or gpu is None:
                record(name, "baseline", "SKIP", secs, f"exit 77: {skip[0] if skip else 'no GPU'}")
            else:
                record(name, "baseline", "FAIL", secs, "exit 77 (no GPU) although nvidia-smi "
                       "lists one")
            continue
        want = digest_of(base["stdout"], app)
        if base["status"] != "ok" or want is None:
            record(name, "baseline", "FAIL", secs, f"{base['status']}, digest {want}; "
                   f"{last_words(base)}")
            continue
        record(name, "baseline", "PASS", secs, f"{want} {app_info(base['stdout'])}")
        again = run(cmd, env, os.path.join(logs, f"{name}-baseline-repeat.log"), a.timeout)
        got = digest_of(again["stdout"], app)
        if again["status"] != "ok" or got != want:
            record(name, "baseline-repeat", "FAIL", f"{again['wall_s']:.1f}s",
                   f"{again['status']}, digest {got} != {want}: the program is not deterministic "
                   f"and cannot judge kreplay; {last_words(again)}")
            continue
        record(name, "baseline-repeat", "PASS", f"{again['wall_s']:.1f}s", got)
        res["baseline"] = want

        for mode in modes:
            for variant in variants:
                label = f"{mode}/{'tool3' if variant == 'tool' else variant}"
                log = os.path.join(logs, f"{name}-{mode}-{variant}.log")
                dbdir = os.path.join(out, "db", f"{name}-{mode}-{variant}")
                if variant == "tool":
                    venv = dict(env, CUDA_INJECTION64_PATH=injection,
                                KREPLAY_TOOL_LIBRARIES=tools[mode], KREPLAY_TEST_PASSES="3")
                    r = run(cmd, venv, log, a.timeout)
                else:
                    shutil.rmtree(dbdir, ignore_errors=True)
                    kcmd = [kreplay, "--replay-mode", mode]
                    if variant == "full":
                        kcmd += ["--set", "full"]
                    kcmd += ["-d", dbdir, "-o", "run_%pid%", "--", *cmd]
                    r = run(kcmd, env, log, a.timeout)
                got = digest_of(r["stdout"], app)
                why, detail = [], []
                if r["status"] != "ok":
                    why.append(r["status"] if r["status"] != "timeout"
                               else f"timed out after {a.timeout:.0f} s")
                if got is None:
                    why.append("no result line")
                elif got != want:
                    why.append(f"DIGEST {got} != baseline {want}")
                entry = {"status": r["status"], "wall_s": r["wall_s"], "digest": got}
                if variant == "tool":
                    t, problem = parse_tool(r["stderr"])
                    entry["tool"] = t
                    if t is None:
                        why.append(f"{problem} (tool not loaded or not finalized)")
                    else:
                        if t.get("errors", 1) != 0:
                            why.append(f"tool errors={t.get('errors')} (KREPLAY_TEST_TOOL_ERROR "
                                       "lines in the log)")
                        launches = sum(t.get(k, 0) for k in ("replayed", "declined",
                                                              "not_requested"))
                        unit = "ranges" if mode == "range" else "launches"
                        detail.append(f"{launches} {unit}: {t.get('replayed')} replayed "
                                      f"({t.get('passes')} passes), {t.get('declined')} declined"
                                      + (" (" + ", ".join(f"{k}: {v}" for k, v in
                                                          sorted(t["by_reason"].items())) + ")"
                                         if t["by_reason"] else "")
                                      + f", {t.get('not_requested')} not requested")
                else:
                    t = parse_tally(r["stderr"])
                    entry["tally"] = t
                    if t is None:
                        why.append("no ==KREPLAY== tally line (kreplay not injected?)")
                    else:
                        detail.append("; ".join(line.replace("==KREPLAY== ", "")
                                                for line in t["lines"] + t["snapshots"])
                                      + (f"; {t['ranges']} ranges" if t["ranges"] else "")
                                      + (f", closed by {t['closed_by']}"
                                         if t.get("closed_by") else ""))
                    dbs = find_dbs(dbdir)
                    st = db_stats(dbs, mode)
                    entry["db"] = st
                    detail.append(describe_db(st))
                if why:
                    detail.insert(0, "; ".join(why))
                    if r["status"] != "ok":
                        detail.append(last_words(r))
                res["runs"][label] = entry
                record(name, label, "FAIL" if why else "PASS", f"{r['wall_s']:.1f}s",
                       " | ".join(detail))

    print()
    print(f"{'program':<14} {'variant':<16} {'res':<4} {'time':>7}  detail")
    for row in rows:
        print(row)
    print()
    with open(os.path.join(out, "writeset_check.json"), "w") as f:
        json.dump(results, f, indent=1, default=str)
    if counts["SKIP"]:
        print(f"{counts['SKIP']} skipped (exit 77)")
    print(f"{counts['PASS']} passed, {counts['FAIL']} failed")
    if counts["FAIL"]:
        print(f"logs: {logs}", file=sys.stderr)
        return 1
    return 0 if counts["PASS"] else 77


def last_words(r):
    """The last line of a failed run's stderr, to say why without opening the log."""
    lines = [ln for ln in r["stderr"].strip().splitlines() if ln.strip()]
    return f"stderr: {lines[-1][:300]}" if lines else "no stderr"


if __name__ == "__main__":
    sys.exit(main())
