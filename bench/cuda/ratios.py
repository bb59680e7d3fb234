#!/usr/bin/env python3
"""Ratios of the kreplay-vs-ncu benchmarks, from the summary scripts/gpu-check.sh writes.

  python3 bench/cuda/ratios.py <summary.txt>

Reads the lines `NAME [t0=NS] replay_app KEY=VALUE ...` that the `ncu` and `rangebench` sections
note (NAME is bench_{plain,kreplay,ncu}_<round> or rb_{plain,range,kernel,ncu}) and prints:
  ncu:        per round, kreplay/ncu for the time to the first profiled launch (FIRST_LAUNCH_NS
              minus the command's own start t0), for the loop's time per launch, and for the
              loop's time per launch after its first launch (steady_per_launch_ms);
  rangebench: range/ncu and range/kernel for the steady-state time per launch (the loop after its
              first window) and for the whole loop's time per launch.
"""
import re
import sys

LINE = re.compile(r"^(\S+) (?:t0=(\d+) )?replay_app (.*)$")


def parse(path):
    runs = {}
    last_name = None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            m = LINE.match(line)
            if m is None:
                # ncu prints its own line first: the replay_app line then follows on its own.
                first = line.split(" ", 1)[0]
                if line.startswith("replay_app ") and last_name:
                    m = re.match(r"^replay_app (.*)$", line)
                    runs[last_name].update(dict(kv.split("=", 1) for kv in m.group(1).split() if "=" in kv))
                elif re.match(r"^(bench|rb)_\w+$", first):
                    last_name = first
                    t0 = re.search(r" t0=(\d+)", line)
                    runs.setdefault(first, {})
                    if t0:
                        runs[first]["t0"] = t0.group(1)
                continue
            name, t0, rest = m.groups()
            last_name = name
            vals = runs.setdefault(name, {})
            if t0:
                vals["t0"] = t0
            vals.update(dict(kv.split("=", 1) for kv in rest.split() if "=" in kv))
    return runs


def ratio(a, b):
    return f"{a / b:.3f}" if b else "n/a"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: ratios.py <summary.txt>")
    runs = parse(sys.argv[1])
    # bench_<plain|kreplay|ncu>_<round>: the round is everything after the second underscore
    rounds = sorted({n.split("_", 2)[2] for n in runs if n.startswith("bench_") and n.count("_") >= 2})
    for r in rounds:
        k, n = runs.get(f"bench_kreplay_{r}"), runs.get(f"bench_ncu_{r}")
        if not k or not n or "t0" not in k or "t0" not in n:
            continue
        ks = (int(k["FIRST_LAUNCH_NS"]) - int(k["t0"])) / 1e6
        ns = (int(n["FIRST_LAUNCH_NS"]) - int(n["t0"])) / 1e6
        kp, np_ = float(k["per_launch_ms"]), float(n["per_launch_ms"])
        line = (f"ncu round {r}: start-up kreplay {ks:.1f} ms ncu {ns:.1f} ms ratio {ratio(ks, ns)}; "
                f"per kernel kreplay {kp:.2f} ms ncu {np_:.2f} ms ratio {ratio(kp, np_)}")
        if "steady_per_launch_ms" in k and "steady_per_launch_ms" in n:
            # The loop after its first launch: what each later kernel costs, without the one-time
            # set-up both profilers do at their first profiled launch.
            ksd, nsd = float(k["steady_per_launch_ms"]), float(n["steady_per_launch_ms"])
            line += f"; after the first kernel kreplay {ksd:.2f} ms ncu {nsd:.2f} ms ratio {ratio(ksd, nsd)}"
        print(line)
    rr, rk, rn = runs.get("rb_range"), runs.get("rb_kernel"), runs.get("rb_ncu")
    if rr and rk and rn:
        for key in ("steady_per_launch_ms", "per_launch_ms"):
            if key not in rr or key not in rk or key not in rn:
                continue
            a, b, c = float(rr[key]), float(rk[key]), float(rn[key])
            print(f"rangebench {key}: range {a:.2f} kernel {b:.2f} ncu {c:.2f} ms; "
                  f"range/ncu {ratio(a, c)} range/kernel {ratio(a, b)}")
    if not rounds and not rr:
        sys.exit(f"ratios.py: no benchmark lines in {sys.argv[1]}: run gpu-check.sh's ncu or rangebench section")


if __name__ == "__main__":
    main()
