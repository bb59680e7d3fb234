#!/usr/bin/env python3
"""Run NVIDIA's cuda-samples natively and under kreplay; one line per sample and mode.

    scripts/cuda-samples.sh run <bin-dir> <dist-dir> <out-dir> [mode ...]

<bin-dir> is what `scripts/cuda-samples.sh build` made (executables, data files, test_args.json);
<dist-dir> a kreplay dist (scripts/make-gpu-dist.sh). Modes, in order (default: all four):

  native   the sample alone. A sample that exits 0 with no failure line (FAILED, Test failed,
           CUDA error at ...) is in the suite; the verdict lines it prints (Test passed, ... OK,
           Test Summary ...) are what the other modes must print too. Only samples that pass
           natively run in the other modes (with no native run in the same call, every sample
           does).
  pass3    under the GPU suite's pass tool at 3 passes (replay only, no counters)
  kernel   under `kreplay --metrics <10-pass set>` (kernel replay)
  range    the same with --replay-mode range

A sample passes a kreplay mode when it exits 0 with no failure line, does not crash, and prints
the native run's verdict lines. Each line says how many launches were replayed and declined; a
passing sample whose launches were all declined counts as "fully declined" (DECL). Per mode the
summary is `N passed, M failed, D fully declined`.

Environment: KREPLAY_SAMPLES_NATIVE_JSON (the native.json a native run wrote into its out-dir:
lets the other modes run without a native run in the same call), KREPLAY_SAMPLES_TIMEOUT (s,
default 120; a sample whose native run is long gets its native time times the mode's executions
per launch, plus 30 s, when that is more), KREPLAY_SAMPLES_FILTER (regex on the
sample name), KREPLAY_SAMPLES_LAUNCH_COUNT (launches profiled per sample in kernel/range mode,
kreplay's --launch-count, default 25: with the 10-pass set a launch costs about 0.2 s on the H200,
so 200 launches took 40 s a sample), KREPLAY_SAMPLES_REPLAY_COUNT (launches replayed per sample
under the pass tool, its KREPLAY_TEST_MAX_DISPATCHES, default 200, so that a sample with tens of
thousands of launches stays short),
KREPLAY_SAMPLES_JOBS (native and pass3 runs at a time, default 4; counter modes run one at a
time: the GPU has one set of counters).
"""
import concurrent.futures
import json
import os
import re
import signal
import subprocess
import sys
import time

# kreplay::cupti::kTenPassMetrics (16 metrics, 10 passes on GH100), as the GPU scripts share it.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "gpu",
                       "ten_pass_metrics.txt")) as _f:
    TEN = ",".join(line.strip() for line in _f if line.strip())

MODES = ["native", "pass3", "kernel", "range"]
# A verdict line: what a sample prints when its own check passes. The kreplay runs must print the
# same verdict lines as the native run.
VERDICT = re.compile(r"(Test passed|Test PASSED|PASSED|\bPASS\b|[Pp]assed|\bOK\b|[Ss]ucces|"
                     r"Result = PASS|Test Summary|[Cc]omplete)")
# A failure line (case matters: "Max absolute error: 1e-5" is a sample reporting its accuracy).
FAILURE = re.compile(r"(FAILED|\bFAIL\b|Test failed|[Ff]ailed!|Result = FAIL|CUDA error at|"
                     r"CUDA_ERROR_|cudaError)")
# Samples that need a display, a second GPU, special hardware or interaction: never run.
NEVER = re.compile(r"(GL|Vulkan|EGL|NvSci|Nvmedia|D3D|MPI|MultiGPU|P2P|p2p|multiDevice|"
                   r"streamOrderedAllocationIPC|simpleIPC|memMapIPCDrv|cudaOpenMP|"
                   r"conjugateGradientMultiDeviceCG|topologyQuery|systemWideAtomics|"
                   r"cuDLA|cuDLA|fluidsD3D|Mandelbrot|randomFog|volumeFiltering|"
                   r"simpleCUFFT_MGPU|simpleCUFFT_2d_MGPU|nbody|oceanFFT|smokeParticles|"
                   r"marchingCubes|particles|recursiveGaussian|bilateralFilter|boxFilter|"
                   r"imageDenoising|postProcessGL|SobelFilter|bicubicTexture|FunctionPointers)$")
TALLY = re.compile(r"==KREPLAY== (\d+) launches: (\d+) replayed \((\d+) passes\), (\d+) declined"
                   r"(?: \(([^)]*)\))?, (\d+) not selected")
TOOL = re.compile(r"KREPLAY_TEST_TOOL replayed=(\d+) declined=(\d+) not_requested=(\d+) "
                  r"passes=(\d+) errors=(\d+)")
TOOL_DECLINES = re.compile(r"KREPLAY_TEST_TOOL_DECLINES ?(.*)$", re.M)


def samples(bin_dir, args_config):
    out = []
    for name in sorted(os.listdir(bin_dir)):
        path = os.path.join(bin_dir, name)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)) or "." in name:
            continue
        cfg = args_config.get(name, {})
        if cfg.get("skip") or NEVER.search(name):
            continue
        flt = os.environ.get("KREPLAY_SAMPLES_FILTER")
        if flt and not re.search(flt, name):
            continue
        args = cfg.get("args")
        if args is None and cfg.get("runs"):
            args = cfg["runs"][0].get("args", [])  # the first of several listed runs
        out.append((name, [str(a) for a in (args or [])]))
    return out


def command(mode, name, args, bin_dir, dist, out_dir):
    exe = os.path.join(bin_dir, name)
    env = dict(os.environ)
    lib = os.path.join(dist, "lib")
    env["LD_LIBRARY_PATH"] = f"/usr/local/cuda/lib64:{lib}:" + env.get("LD_LIBRARY_PATH", "")
    for v in ("CUDA_INJECTION64_PATH", "KREPLAY_TOOL_LIBRARIES", "KREPLAY_TEST_PASSES"):
        env.pop(v, None)
    if mode == "native":
        return [exe] + args, env
    if mode == "pass3":
        env["CUDA_INJECTION64_PATH"] = os.path.join(lib, "libkreplay_cuda.so")
        env["KREPLAY_TOOL_LIBRARIES"] = os.path.join(lib, "libkreplay_test_pass_tool.so")
        env["KREPLAY_TEST_PASSES"] = "3"
        # As many launches replayed as the counter modes profile: a sample with tens of thousands
        # of launches (cuSolverRf) stays short.
        env["KREPLAY_TEST_MAX_DISPATCHES"] = os.environ.get("KREPLAY_SAMPLES_REPLAY_COUNT", "200")
        return [exe] + args, env
    kreplay = os.path.join(dist, "bin", "kreplay")
    count = os.environ.get("KREPLAY_SAMPLES_LAUNCH_COUNT", "25")
    cmd = [kreplay, "--metrics", TEN, "--launch-count", count, "-d", os.path.join(out_dir, mode, name),
           "-o", "run"]
    # Named either way: the default (auto) would pick kernel replay here only because of
    # --launch-count.
    cmd += ["--replay-mode", "range" if mode == "range" else "kernel"]
    return cmd + ["--", exe] + args, env


# The samples running now (each in a session of its own), stopped with the runner when the runner
# itself is stopped (an outer timeout, Ctrl-C): else they would outlive it and hold the GPU.
LIVE = set()


def stop_live_and_exit(sig, _frame):
    for pid in list(LIVE):
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    sys.exit(128 + sig)


def run(mode, name, args, bin_dir, dist, out_dir, timeout):
    cmd, env = command(mode, name, args, bin_dir, dist, out_dir)
    log_dir = os.path.join(out_dir, "logs")
    os.makedirs(log_dir, exist_ok=True)
    t0 = time.time()
    # A session of its own, so that a timeout stops the sample too, not only kreplay: a sample left
    # running would hold the GPU's counters for every later run.
    # In the sample's own folder when it has one (its data files; collect says why).
    own = os.path.join(bin_dir, "_own", name)
    p = subprocess.Popen(cmd, cwd=own if os.path.isdir(own) else bin_dir, env=env,
                         stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    LIVE.add(p.pid)
    try:
        out, _ = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
        for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                break
            try:
                p.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        out, _ = p.communicate()
    LIVE.discard(p.pid)
    text = (out or b"").decode("utf-8", "replace")
    secs = time.time() - t0
    with open(os.path.join(log_dir, f"{name}.{mode}.log"), "w") as f:
        f.write(text)
    return rc, text, secs


def app_lines(text):
    """The sample's own output (kreplay's tagged lines and the pass tool's lines left out)."""
    return [l for l in text.splitlines()
            if not l.startswith("==KREPLAY==") and not l.startswith("KREPLAY_TEST_TOOL")]


def verdicts(text):
    return sorted({l.strip() for l in app_lines(text) if VERDICT.search(l)})


NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def masked(lines):
    """Verdict lines with their numbers masked: a verdict that prints a time or a rate ("CUDA Link
    Completed in 43.4ms") is the same verdict in every run."""
    return sorted({NUMBER.sub("#", l) for l in lines})


def crash_summary(text):
    """'crash' and where: the first frame of kreplay's backtrace inside kreplay (else the first
    after libc's signal frame), and the last kreplay warning or error before it, so that a summary
    line says what happened even where the per-sample logs are not kept."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if "crashed; backtrace" in l)
    frames = []
    for l in lines[start + 1:]:
        if not l.startswith("==KREPLAY==   "):
            break
        frames.append(l[len("==KREPLAY=="):].strip())
    frame = next((f for f in frames if "libkreplay" in f), frames[1] if len(frames) > 1 else "")
    frame = frame.rsplit("/", 1)[-1][:90]
    said = [l for l in lines[:start] if l.startswith("==KREPLAY== warning") or
            l.startswith("==KREPLAY== error")]
    out = "crash" + (f" in {frame}" if frame else "")
    if said:
        out += f" after: {said[-1][len('==KREPLAY== '):][:90]}"
    return out


def judge(mode, rc, text, native_verdicts):
    """(ok, detail, replayed, declined) for one run."""
    why = []
    if rc != 0:
        why.append(f"exit {rc}" if rc != "timeout" else "timed out")
    fail = next((l for l in app_lines(text) if FAILURE.search(l)), None)
    if fail is not None:
        why.append(f"failure line: {fail.strip()[:80]}")
    if "crashed; backtrace" in text:
        why.append(crash_summary(text))
    if native_verdicts is not None and rc == 0:
        got = masked(verdicts(text))
        want = masked(native_verdicts)
        if got != want:
            missing = [v for v in want if v not in got]
            why.append(f"verdict differs from the native run (missing: {missing[:2]})")
    replayed = declined = None
    detail = ""
    if mode == "pass3":
        m = TOOL.search(text)
        if m:
            replayed, declined, errors = int(m.group(1)), int(m.group(2)), int(m.group(5))
            detail = f"replayed={replayed} declined={declined}"
            d = TOOL_DECLINES.search(text)
            if d and d.group(1).strip():
                detail += f" ({d.group(1).strip()})"
            if errors:
                why.append(f"tool errors={errors}")
        elif rc == 0:
            detail = "no tool line (no kernel launched?)"
    elif mode in ("kernel", "range"):
        m = TALLY.search(text)
        if m:
            replayed, declined = int(m.group(2)), int(m.group(4))
            detail = f"launches={m.group(1)} replayed={replayed} declined={declined}"
            if m.group(5):
                detail += f" ({m.group(5)})"
        elif rc == 0:
            detail = "no tally"
    errs = [l for l in text.splitlines() if l.startswith("==KREPLAY== error") or "internal error" in l]
    if errs:
        detail += f" | {errs[0][:100]}"
    return not why, "; ".join(why + ([detail] if detail else [])), replayed, declined


# Executions of a profiled launch in each mode (the 10-pass set: 10 on GH100), for limit().
PASSES = {"native": 1, "pass3": 3, "kernel": 10, "range": 10}


def limit(base, mode, native_secs):
    """A sample's time limit in @p mode: the base limit, or, for a sample whose own run is long (a
    5 s kernel, as in simpleAttributes, runs 10 times under the 10-pass set), its native time
    times the mode's executions plus a margin."""
    if native_secs is None:
        return base
    return max(base, native_secs * (PASSES[mode] + 2) + 30)


def pack_list(bin_dir):
    """The files `run` needs, relative to bin_dir (one per line)."""
    args_path = os.path.join(bin_dir, "test_args.json")
    args_config = json.load(open(args_path)) if os.path.exists(args_path) else {}
    names = [n for n, _ in samples(bin_dir, args_config)]
    files = set(names) | {"test_args.json"}
    manifest = os.path.join(bin_dir, "data-manifest.txt")
    wanted = set(names)
    if os.path.exists(manifest):
        for line in open(manifest):
            parts = line.split()
            if len(parts) == 2 and parts[0] in wanted:
                # The sample's own copy (run starts it in its _own folder); the flat one only
                # from an older collect.
                own = os.path.join("_own", parts[0], parts[1])
                files.add(own if os.path.exists(os.path.join(bin_dir, own)) else parts[1])
    for f in os.listdir(bin_dir):
        if f.endswith((".fatbin", ".ptx", ".cubin")):
            files.add(f)
    return sorted(f for f in files if os.path.exists(os.path.join(bin_dir, f)))


def main(argv):
    if argv[:1] == ["--pack-list"] and len(argv) == 2:
        print("\n".join(pack_list(argv[1])))
        return 0
    if len(argv) < 3:
        print(__doc__)
        return 2
    bin_dir, dist, out_dir = (os.path.abspath(a) for a in argv[:3])
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop_live_and_exit)
    modes = argv[3:] or MODES
    for m in modes:
        if m not in MODES:
            print(f"unknown mode '{m}' (modes: {' '.join(MODES)})")
            return 2
    os.makedirs(out_dir, exist_ok=True)
    args_path = os.path.join(bin_dir, "test_args.json")
    args_config = json.load(open(args_path)) if os.path.exists(args_path) else {}
    todo = samples(bin_dir, args_config)
    timeout = float(os.environ.get("KREPLAY_SAMPLES_TIMEOUT", "120"))
    jobs = int(os.environ.get("KREPLAY_SAMPLES_JOBS", "4"))
    summary = {}
    results = {}
    native_verdicts = {}
    native_secs = {}
    # A native run of an earlier call (native.json, written below): which samples passed and the
    # verdict lines they printed, so the other modes can run in a call of their own; and, beside
    # it, how long each took (native-seconds.json; older runs wrote none).
    earlier = os.environ.get("KREPLAY_SAMPLES_NATIVE_JSON")
    if earlier and "native" not in modes:
        for name, verdict_lines in json.load(open(earlier)).items():
            native_verdicts[name] = verdict_lines
            results[(name, "native")] = (True, "")
        secs_path = os.path.join(os.path.dirname(os.path.abspath(earlier)), "native-seconds.json")
        if os.path.exists(secs_path):
            native_secs = json.load(open(secs_path))
        modes_have_native = True
    else:
        modes_have_native = "native" in modes
    for mode in modes:
        if mode != "native" and modes_have_native:
            todo_mode = [(n, a) for n, a in todo if results.get((n, "native"), (False,))[0]]
        else:
            todo_mode = todo
        par = jobs if mode in ("native", "pass3") else 1
        passed = failed = full_decline = 0
        with concurrent.futures.ThreadPoolExecutor(max_workers=par) as pool:
            futs = {pool.submit(run, mode, n, a, bin_dir, dist, out_dir,
                                limit(timeout, mode, native_secs.get(n))): n for n, a in todo_mode}
            for f in concurrent.futures.as_completed(futs):
                name = futs[f]
                rc, text, secs = f.result()
                native = native_verdicts.get(name) if mode != "native" else None
                ok, detail, replayed, declined = judge(mode, rc, text, native)
                if mode == "native" and ok:
                    native_secs[name] = round(secs, 2)
                    native_verdicts[name] = verdicts(text)
                    if not native_verdicts[name]:
                        detail = "no verdict line: the exit status is the check"
                status = "PASS" if ok else "FAIL"
                if ok and mode != "native" and replayed == 0 and declined:
                    full_decline += 1
                    status = "DECL"
                results[(name, mode)] = (ok, detail)
                print(f"{name:<40} {mode:<7} {status:<4} {secs:7.1f}s  {detail}", flush=True)
                if ok:
                    passed += 1
                else:
                    failed += 1
        summary[mode] = (passed, failed, full_decline, len(todo_mode))
        if mode == "native":
            with open(os.path.join(out_dir, "native.json"), "w") as f:
                json.dump(native_verdicts, f, indent=1, sort_keys=True)
            with open(os.path.join(out_dir, "native-seconds.json"), "w") as f:
                json.dump(native_secs, f, indent=1, sort_keys=True)
    print()
    for mode in modes:
        p, f, d, n = summary[mode]
        print(f"cuda-samples {mode}: {p} passed, {f} failed, {d} fully declined (of {n} run)")
    return 0 if all(s[1] == 0 for m, s in summary.items() if m != "native") else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
