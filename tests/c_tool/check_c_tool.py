#!/usr/bin/env python3
"""Run kreplay-sample-app with the C tool loaded and check the tool's summary line.

The tool checks every API answer itself and counts failures (errors=...). This script requires
errors=0, that the application still computed the right results (`sample-app: OK`, exit 0), that
nothing was written to stderr, and that the summary's counts follow from the launches the
application announced and the tool's plan (see c_tool.c):

    scale_add   3 passes (up to 4, continue stops after 3), continue asked 3x
    sum_reduce  2 passes (indefinite, continue stops after 2), continue asked 2x
    every pass  one counter record callback; dispatch tracing on every pass but the first
"""
import argparse
import os
import re
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--app", required=True)
    ap.add_argument("--tool", required=True)
    args = ap.parse_args()

    env = {k: v for k, v in os.environ.items() if not k.startswith("KREPLAY_")}
    env["KREPLAY_TOOL_LIBRARIES"] = args.tool
    env["KREPLAY_LOG_LEVEL"] = "warning"
    run = subprocess.run([args.app], env=env, capture_output=True, text=True, timeout=120)
    out = run.stdout
    failures = []

    def expect(cond, message):
        if not cond:
            failures.append(message)

    expect(run.returncode == 0, f"the application exited with {run.returncode}")
    expect(re.search(r"^sample-app: OK", out, re.M), "the application did not print 'sample-app: OK'")
    expect(run.stderr.strip() == "", f"unexpected stderr output:\n{run.stderr}")
    for line in out.splitlines():
        if "==KREPLAY-C-TOOL== FAILED" in line:
            failures.append(line)

    kernels = re.findall(r"^sample-app: launch \d+/\d+: (\w+) ", out, re.M)
    scale = kernels.count("scale_add")
    other = len(kernels) - scale
    expect(scale > 0 and other > 0, f"launches {kernels}: expected both kernels")
    passes = 3 * scale + 2 * other
    want = {
        "dispatches": len(kernels),
        "replayed": len(kernels),
        "passes": passes,
        "dispatch_exits": passes - len(kernels),
        "counter_records": passes,
        "continue_calls": passes,
        "errors": 0,
    }
    m = re.findall(r"^==KREPLAY-C-TOOL== summary: (.*)$", out, re.M)
    if len(m) != 1:
        failures.append(f"expected one summary line, found {len(m)}")
    else:
        got = {k: int(v) for k, v in (kv.split("=") for kv in m[0].split())}
        for key, value in want.items():
            expect(got.get(key) == value, f"{key} = {got.get(key)}, expected {value}")
        expect(got.get("api_checks", 0) > 500, f"only {got.get('api_checks')} API checks ran")

    if failures:
        print(out)
        print(run.stderr, file=sys.stderr)
        print(f"check_c_tool: {len(failures)} check(s) failed:")
        for f in failures:
            print(f"  - {f}")
        return 1
    print(f"check_c_tool: OK ({m[0]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
