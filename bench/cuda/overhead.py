#!/usr/bin/env python3
"""kreplay's overhead on launches no tool replays, from the summary scripts/gpu-check.sh writes.

  python3 bench/cuda/overhead.py <summary.txt>

Reads the lines `overhead_{plain,cuptifloor,kreplay}_<kernel_us>_<round> t0=NS t1=NS launch_overhead ...`
(t0/t1: when the script started the process and saw it end; MAIN_NS/END_NS: main's entry and
return) and prints, per kernel duration, the medians of plain, CUPTI-floor (an injection that only
subscribes to CUPTI) and kreplay runs for: the launch
loop per launch, the time before main, CUDA's start-up in main (main's entry to the timed loop:
device count, allocation, 100 warm-up launches), main, after main, and the whole process; then what CUPTI alone and
kreplay add per launch and to the wall time, in percent.
"""
import re
import statistics
import sys

LINE = re.compile(r"^overhead_(plain|kreplay|cuptifloor)_(\d+)_(\d+) t0=(\d+) t1=(\d+) launch_overhead (.*)$")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: overhead.py <summary.txt>")
    runs = {}
    with open(sys.argv[1]) as f:
        for line in f:
            m = LINE.match(line.strip())
            if not m:
                continue
            kind, us, _, t0, t1, rest = m.groups()
            kv = dict(x.split("=", 1) for x in rest.split() if "=" in x)
            if "MAIN_NS" not in kv:
                continue
            t0, t1 = int(t0), int(t1)
            main_ns, end_ns = int(kv["MAIN_NS"]), int(kv["END_NS"])
            loop_ns = int(kv.get("LOOP_NS", main_ns))
            runs.setdefault((us, kind), []).append({
                "us_per_launch": float(kv["us_per_launch"]),
                "before_main_ms": (main_ns - t0) / 1e6,
                "main_ms": (end_ns - main_ns) / 1e6,
                "cuda_start_ms": (loop_ns - main_ns) / 1e6,
                "after_main_ms": (t1 - end_ns) / 1e6,
                "wall_ms": (t1 - t0) / 1e6,
            })
    if not runs:
        sys.exit(f"overhead.py: no overhead lines with MAIN_NS in {sys.argv[1]}")
    keys = ["us_per_launch", "before_main_ms", "cuda_start_ms", "main_ms", "after_main_ms", "wall_ms"]
    for us in sorted({u for u, _ in runs}, key=int):
        med = {}
        for kind in ("plain", "cuptifloor", "kreplay"):
            rs = runs.get((us, kind), [])
            if not rs:
                continue
            med[kind] = {k: statistics.median(r[k] for r in rs) for k in keys}
            print(f"overhead kernel_us={us} {kind} (median of {len(rs)}): " +
                  " ".join(f"{k}={med[kind][k]:.3f}" for k in keys))
        p = med.get("plain")
        for kind in ("cuptifloor", "kreplay"):
            k = med.get(kind)
            if p is None or k is None:
                continue
            print(f"overhead kernel_us={us} {kind} - plain: +{k['us_per_launch'] - p['us_per_launch']:.3f} us per launch, "
                  f"before main +{k['before_main_ms'] - p['before_main_ms']:.1f} ms, "
                  f"CUDA start-up in main +{k['cuda_start_ms'] - p['cuda_start_ms']:.1f} ms, "
                  f"after main +{k['after_main_ms'] - p['after_main_ms']:.1f} ms, "
                  f"wall +{k['wall_ms'] - p['wall_ms']:.1f} ms = "
                  f"{100.0 * (k['wall_ms'] - p['wall_ms']) / p['wall_ms']:+.1f} %")


if __name__ == "__main__":
    main()
