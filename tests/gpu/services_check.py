#!/usr/bin/env python3
"""The per-pass services on a GPU, through the kreplay command (issue 11 item 7).

  services_check.py <dist-or-build-dir> <work-dir>

On kreplay_gpu_services_kernels (tests/gpu/apps/services_kernels.cu, built with -lineinfo):
  pc_hot_loop        --pc-sampling: hot_ffma's loop line holds >= 90% of its PC samples, and its
                     sass rows name that line (HOT_LINE, printed by the app) and have instruction
                     text (nvdisasm's), FFMA among them;
  sass_vs_counters   --sass-metrics smsp__sass_inst_executed next to --pmc smsp__inst_executed.sum:
                     per launch, the sum over instructions equals the counter within 1%;
  pm_phases          --pm-sampling DRAM bytes and instructions on `phases`: samples with
                     instructions but little DRAM traffic (compute) come before the DRAM-bound ones
                     (streaming), mean DRAM of the first below 20% of the second's;
  counters_next      counters with PC sampling, SASS metrics and PM sampling on other passes of the
                     same launches equal a counters-only run within 1% (instructions; DRAM bytes
                     of the launches that read more than 64 MiB);
  pc_next_to_counters  in that run (PC sampling after the counter passes, the default order) and in
                     range replay with counters, every counted launch has PC samples, of its own
                     kernel only, and every service has records;
  digest             the application's result under every service equals its plain run's.
One line per check: "PASS <check>: ..." or "FAIL <check>: ...". Exit 77 when there is no GPU, 1
when a check fails. KREPLAY_PM_METRICS overrides the PM metrics (DRAM first, instructions second).
"""
import os, re, sqlite3, subprocess, sys

d, work = sys.argv[1], sys.argv[2]
app = os.path.join(d, "bin", "kreplay_gpu_services_kernels")
kreplay = os.path.join(d, "bin", "kreplay")
os.makedirs(work, exist_ok=True)
env = dict(os.environ, LD_LIBRARY_PATH="/usr/local/cuda/lib64:" + os.environ.get("LD_LIBRARY_PATH", ""))
plain = subprocess.run([app], env=env, capture_output=True, text=True, timeout=60)
if plain.returncode == 77:
    print("SKIP services_check: no GPU"); sys.exit(77)
m = re.search(r"^HOT_LINE (\d+)", plain.stdout, re.M)
hot_line = int(m.group(1)) if m else -1
digest = re.findall(r"^KREPLAY_RESULT .*$", plain.stdout, re.M)
PM = os.environ.get("KREPLAY_PM_METRICS", "dram__bytes_read.sum,smsp__inst_executed.sum").split(",")
failed = []


def verdict(name, ok, text):
    print(f"{'PASS' if ok else 'FAIL'} {name}: {text}", flush=True)
    if not ok:
        failed.append(name)


def profile(name, args):
    """Run the app under kreplay; the results database (None when kreplay failed) and stdout."""
    out = os.path.join(work, name)
    try:
        p = subprocess.run([kreplay, *args, "-d", out, "-o", "run", "--", app], env=env,
                           capture_output=True, text=True, timeout=100)
    except subprocess.TimeoutExpired:
        return None, f"kreplay {' '.join(args)} ran past 100 s"
    with open(os.path.join(work, name + ".log"), "w") as f:
        f.write(p.stdout + "\n---- stderr\n" + p.stderr)
    if p.returncode != 0:
        return None, f"kreplay exited {p.returncode}: {p.stderr.strip().splitlines()[-1:] or ''}"
    return sqlite3.connect(os.path.join(out, "run_results.db")), p.stdout


def kernel_of(db):
    return {did: k for did, k in db.execute(
        "select d.dispatch_id, k.demangled_name from dispatches d join kernels k "
        "on k.app_pass = d.app_pass and k.kernel_id = d.kernel_id")}


def warnings(name):
    try:
        text = open(os.path.join(work, name + ".log")).read()
    except OSError:
        return ""
    lines = [l for l in text.splitlines()
             if "==KREPLAY==" in l and ("not collected" in l or "could not be read" in l or "failed" in l)]
    return " | ".join(lines[:2])


# (a) PC sampling on the hot loop
db, out = profile("pc", ["--pc-sampling", "--kernel-include-regex", "hot_ffma"])
if db is None:
    verdict("pc_hot_loop", False, out)
else:
    total = db.execute("select coalesce(sum(samples), 0) from pc_samples where function like '%hot_ffma%'").fetchone()[0]
    loop_pcs = {pc for (pc,) in db.execute(
        "select pc_offset from sass where function like '%hot_ffma%' and source_line = ?", (hot_line,))}
    in_loop = sum(n for pc, n in db.execute(
        "select pc_offset, sum(samples) from pc_samples where function like '%hot_ffma%' group by pc_offset")
        if pc in loop_pcs)
    files = {f for (f,) in db.execute("select distinct source_file from sass where function like '%hot_ffma%'")}
    loop_text = [t for (t,) in db.execute(
        "select instruction from sass where function like '%hot_ffma%' and source_line = ?", (hot_line,))]
    ffma = [t for t in loop_text if t.startswith("FFMA")]
    share = in_loop / total if total else 0.0
    verdict("pc_hot_loop", total > 0 and share >= 0.9 and loop_pcs and ffma and all(loop_text),
            f"{total} samples, {100 * share:.1f}% on the loop's line {hot_line} (>= 90%), "
            f"{len(loop_pcs)} sass rows name it ({len(ffma)} FFMA, {sum(1 for t in loop_text if t)} with "
            f"text, e.g. {ffma[:1]}), files {sorted(files)[:2]} {warnings('pc')}")

# (b) SASS instruction counts against the counter of the same launch
db, out = profile("sass", ["--pmc", "smsp__inst_executed.sum", "--sass-metrics", "smsp__sass_inst_executed",
                           "--kernel-include-regex", "."])
if db is None:
    verdict("sass_vs_counters", False, out)
else:
    names = kernel_of(db)
    sass = dict(db.execute("select dispatch_id, sum(value) from sass_metrics "
                           "where metric = 'smsp__sass_inst_executed' group by dispatch_id"))
    ctr = dict(db.execute("select dispatch_id, value from counters where name = 'smsp__inst_executed.sum'"))
    both = sorted(set(sass) & set(ctr))
    bad = [f"{names.get(i, i)} #{i}: sass {sass[i]:.0f} counter {ctr[i]:.0f}" for i in both
           if abs(sass[i] - ctr[i]) > 0.01 * max(ctr[i], 1.0)]
    verdict("sass_vs_counters", len(both) >= 3 and not bad,
            f"{len(both)} launches with both ({len(sass)} with SASS, {len(ctr)} with counters), "
            f"{len(bad)} off by more than 1%: {'; '.join(bad[:3])} {warnings('sass')}")

# (c) PM sampling: DRAM low (compute phase), then high (streaming phase)
db, out = profile("pm", ["--pm-sampling", ",".join(PM), "--pm-sampling-interval", "20000",
                         "--kernel-include-regex", "phases"])
if db is None:
    verdict("pm_phases", False, out)
else:
    first = db.execute("select min(p.dispatch_id) from pm_samples p join kernels k "
                       "on k.app_pass = p.app_pass and k.kernel_id = p.kernel_id "
                       "where k.demangled_name like 'phases%'").fetchone()[0]
    series = {}
    for metric, t, v in db.execute("select metric, timestamp_ns, value from pm_samples where dispatch_id = ? "
                                   "order by timestamp_ns", (first,)):
        series.setdefault(t, {})[metric] = v or 0.0
    times = sorted(series)
    dram = [series[t].get(PM[0], 0.0) for t in times]
    inst = [series[t].get(PM[1], 0.0) if len(PM) > 1 else 1.0 for t in times]
    if not dram or max(dram) <= 0:
        verdict("pm_phases", False, f"{len(times)} samples, no DRAM traffic seen {warnings('pm')}")
    else:
        hi = [i for i, v in enumerate(dram) if v > 0.5 * max(dram)]
        compute = [i for i in range(hi[0]) if inst[i] > 0.3 * max(inst)]
        mean = lambda idx, s: sum(s[i] for i in idx) / len(idx) if idx else 0.0
        low, high = mean(compute, dram), mean(hi, dram)
        verdict("pm_phases", len(compute) >= 3 and len(hi) >= 3 and low < 0.2 * high,
                f"{len(times)} samples of {PM}: {len(compute)} compute-phase samples (DRAM mean {low:.3g}) "
                f"before {len(hi)} streaming ones (DRAM mean {high:.3g})")

# (d) counters next to the services against counters alone; and the digest
COUNTERS = ["--pmc", "smsp__inst_executed.sum", "dram__bytes_read.sum", "--kernel-include-regex", "."]
alone, out_a = profile("counters_alone", COUNTERS)
mixed, out_m = profile("counters_mixed", COUNTERS + ["--pc-sampling", "--sass-metrics", "smsp__sass_inst_executed",
                                                     "--pm-sampling", PM[0]])
if alone is None or mixed is None:
    verdict("counters_next", False, out_a if alone is None else out_m)
else:
    names = kernel_of(alone)
    get = lambda db: {(i, n): v for i, n, v in db.execute("select dispatch_id, name, value from counters")}
    a, b = get(alone), get(mixed)
    bad, compared = [], 0
    for key, va in a.items():
        if key[1] == "dram__bytes_read.sum" and va < (64 << 20):
            continue
        vb = b.get(key)
        compared += 1
        if vb is None or abs(va - vb) > 0.01 * max(abs(va), 1.0):
            bad.append(f"{names.get(key[0], key[0])} #{key[0]} {key[1]}: alone {va:.0f} with services {vb}")
    verdict("counters_next", compared >= 6 and not bad,
            f"{compared} values compared, {len(bad)} off by more than 1%: {'; '.join(bad[:3])} {warnings('counters_mixed')}")
    got = re.findall(r"^KREPLAY_RESULT .*$", out_m, re.M)
    verdict("digest", bool(digest) and got == digest, f"plain {digest} under every service {got}")

# (e) PC sampling after the counter passes: every counted launch sampled, kernel and range replay
ranged, out_r = profile("pc_range", ["--pmc", "smsp__inst_executed.sum", "--pc-sampling", "--replay-mode", "range",
                                     "--kernel-include-regex", "."])
if mixed is None or ranged is None:
    verdict("pc_next_to_counters", False, out_m if mixed is None else out_r)
else:
    notes, ok = [], True
    for label, db, log in (("kernel", mixed, "counters_mixed"), ("range", ranged, "pc_range")):
        counted = {i for (i,) in db.execute("select distinct dispatch_id from counters")}
        sampled = dict(db.execute("select dispatch_id, sum(samples) from pc_samples group by dispatch_id"))
        missing = sorted(i for i in counted if sampled.get(i, 0) <= 0)
        # A dispatch's samples name its own kernel only (none carried over from another pass)
        strays = db.execute("select count(distinct p.dispatch_id) from pc_samples p join dispatches d "
                            "on d.dispatch_id = p.dispatch_id join kernels k on k.app_pass = d.app_pass "
                            "and k.kernel_id = d.kernel_id where p.function != k.mangled_name").fetchone()[0]
        missing += ["stray"] * strays
        rows = {t: db.execute(f"select count(*) from {t}").fetchone()[0]
                for t in ("sass_metrics", "pm_samples")} if label == "kernel" else {}
        ok = ok and len(counted) >= 6 and not missing and all(rows.values())
        notes.append(f"{label}: {len(counted)} counted launches, {len(counted) - len(missing)} with PC samples "
                     f"({sum(sampled.values())} samples){''.join(f', {t} {n} rows' for t, n in rows.items())} "
                     f"{warnings(log)}")
    verdict("pc_next_to_counters", ok, "; ".join(notes))

sys.exit(1 if failed else 0)
