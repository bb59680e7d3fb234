#!/usr/bin/env python3
"""Run kreplay-sample-app under one sample tool and check what both printed.

    check_samples.py SAMPLE --app PATH --tool PATH [--env NAME=VALUE ...]

Every check first requires that the application still computed the right results (it prints
`sample-app: OK` and exits 0 only if every launch executed exactly once as far as its memory can
tell) and that nothing was written to stderr (no SDK warning, no tool error). Then it checks the
sample's own lines against what the sample promises, tying each dispatch to the launch the
application announced just before it ("sample-app: launch k/10: KERNEL ..."). Expected values
are derived from the launches the application printed, never copied from a previous run.

Exit status 0 when every check passed; otherwise each failed check is printed and the status is 1.
"""
import argparse
import os
import re
import subprocess
import sys

TAG = "==KREPLAY-SAMPLE== "
LAUNCH_RE = re.compile(
    r"^sample-app: launch (\d+)/(\d+): (\w+) on stream (\w), grid (\d+) x (\d+) threads \(n=(\d+)")
DISPATCH_RE = re.compile(r"\bdispatch (\d+)\b")


class Launch:
    def __init__(self, m):
        self.index = int(m.group(1))
        self.kernel = m.group(3)
        self.stream = m.group(4)
        self.grid = int(m.group(5))
        self.block = int(m.group(6))
        self.n = int(m.group(7))
        self.dispatch_id = None
        self.lines = []  # this dispatch's tool lines, tag and "dispatch N" removed


class Checker:
    def __init__(self, name, stdout, stderr, returncode):
        self.name = name
        self.failures = []
        self.lines = stdout.splitlines()
        self.stderr = stderr
        self.returncode = returncode
        self.launches = []
        self.by_id = {}
        self.tool_lines = [l for l in self.lines if l.startswith(TAG)]
        self._parse()

    def expect(self, cond, message):
        if not cond:
            self.failures.append(message)
        return cond

    def _parse(self):
        current = None
        for line in self.lines:
            m = LAUNCH_RE.match(line)
            if m:
                current = Launch(m)
                self.launches.append(current)
                continue
            if not line.startswith(TAG):
                continue
            d = DISPATCH_RE.search(line)
            if d is None:
                continue
            did = int(d.group(1))
            if did not in self.by_id:
                # A dispatch's first line comes right after the launch that caused it.
                if not self.expect(current is not None and current.dispatch_id is None,
                                   f"dispatch {did} appeared without a launch of its own: {line}"):
                    continue
                current.dispatch_id = did
                self.by_id[did] = current
            self.by_id[did].lines.append(line[d.end():].strip())

    def check_app(self):
        ok = [l for l in self.lines if l.startswith("sample-app: OK")]
        self.expect(self.returncode == 0, f"the application exited with {self.returncode}")
        self.expect(len(ok) == 1, "the application did not print 'sample-app: OK'")
        self.expect(self.stderr.strip() == "", f"unexpected stderr output:\n{self.stderr}")
        self.expect(len(self.launches) == 10, f"expected 10 launches, saw {len(self.launches)}")
        for launch in self.launches:
            self.expect(launch.dispatch_id is not None,
                        f"launch {launch.index} ({launch.kernel}) got no tool output")
        ids = [l.dispatch_id for l in self.launches if l.dispatch_id is not None]
        self.expect(len(set(ids)) == len(ids), f"dispatch ids repeat: {ids}")

    def summary(self, pattern):
        """The groups of the one tool line matching @p pattern, or None."""
        found = [m for m in (re.search(pattern, l) for l in self.tool_lines) if m]
        self.expect(len(found) == 1, f"expected one summary line matching '{pattern}', found {len(found)}")
        return found[0].groups() if len(found) == 1 else None


def pass_lines(launch, regex):
    """(pass, total, ...) tuples of the launch's lines that match @p regex, in order."""
    out = []
    for line in launch.lines:
        m = re.search(regex, line)
        if m:
            out.append(tuple(int(g) if g and g.isdigit() else g for g in m.groups()))
    return out


# ---- one function per sample -------------------------------------------------------------------

def check_basic(c, env):
    passes = 3
    total_pass_lines = 0
    for l in c.launches:
        seen = pass_lines(l, r"^([A-Za-z_]\w*)\(.*\) pass (\d+)/(\d+) (enter|exit)")
        total_pass_lines += len(seen)
        want = [(l.kernel, p, passes, phase) for p in range(1, passes + 1) for phase in ("enter", "exit")]
        c.expect(seen == want, f"dispatch {l.dispatch_id} ({l.kernel}): pass lines {seen}, expected {want}")
        times = pass_lines(l, r"exit \(kernel ([\d.]+) us\)")
        c.expect(len(times) == passes and all(float(t[0]) > 0 for t in times),
                 f"dispatch {l.dispatch_id}: expected a kernel time > 0 on each of {passes} exits, got {times}")
        done = pass_lines(l, r"^replayed: (\d+) passes")
        c.expect(done == [(passes,)], f"dispatch {l.dispatch_id}: outcome line {done}, expected 3 passes")
    c.expect(total_pass_lines == 2 * passes * len(c.launches), f"{total_pass_lines} pass lines")
    s = c.summary(r"basic: (\d+) dispatches, (\d+) replayed, (\d+) passes")
    c.expect(s == ("10", "10", "30"), f"summary {s}, expected 10 dispatches, 10 replayed, 30 passes")


def check_user_data(c, env):
    for l in c.launches:
        plan = pass_lines(l, r"state (0x[0-9a-f]+) planned (\d+) passes")
        if not c.expect(len(plan) == 1, f"dispatch {l.dispatch_id}: expected one plan line, got {plan}"):
            continue
        state, planned = plan[0]
        want_planned = 2 if l.grid < 16 else 4  # the sample's rule: small grids 2 passes, else 4
        c.expect(planned == want_planned, f"dispatch {l.dispatch_id}: planned {planned}, expected {want_planned}")
        seen = pass_lines(l, r"^pass (\d+)/(\d+) state (0x[0-9a-f]+) (enter|exit)")
        want = [(p, want_planned, state, ph) for p in range(1, want_planned + 1) for ph in ("enter", "exit")]
        c.expect(seen == want, f"dispatch {l.dispatch_id}: pass lines {seen}, expected {want}")
        done = pass_lines(l, r"^done: state (0x[0-9a-f]+) planned (\d+), pass_count asked (\d+)x, "
                             r"passes seen (\d+), outcome (\d+) passes executed, pass times(( [\d.]+)*) us; freed")
        if c.expect(len(done) == 1, f"dispatch {l.dispatch_id}: expected one 'done' line, got {done}"):
            d = done[0]
            c.expect(d[:5] == (state, want_planned, 1, want_planned, want_planned),
                     f"dispatch {l.dispatch_id}: done line {d[:5]}: expected the same state, "
                     f"pass_count asked once and {want_planned} passes seen and executed")
            c.expect(len(d[5].split()) == want_planned, f"dispatch {l.dispatch_id}: pass times '{d[5]}'")
    s = c.summary(r"summary: (\d+) states allocated, (\d+) freed")
    c.expect(s == ("10", "10"), f"summary {s}: expected 10 states allocated and 10 freed")


def check_early_exit(c, env):
    stop = int(env.get("KREPLAY_SAMPLE_STOP_AFTER", "3"))
    maximum = 8
    executed = min(stop, maximum)
    for l in c.launches:
        exits = pass_lines(l, r"pass (\d+)/(\d+) exit")
        c.expect(exits == [(p, maximum) for p in range(1, executed + 1)],
                 f"dispatch {l.dispatch_id}: pass exits {exits}, expected 1..{executed} of {maximum}")
        asked = pass_lines(l, r"^continue after pass (\d+)/(\d+)\? (yes|no, stop)")
        # Asked after every pass but the last of the plan; "no" ends the loop.
        want = [(p, maximum, "yes") for p in range(1, min(executed, maximum - 1) + 1)]
        if executed < maximum:
            want[-1] = (executed, maximum, "no, stop")
        c.expect(asked == want, f"dispatch {l.dispatch_id}: continue decisions {asked}, expected {want}")
        done = pass_lines(l, r"^done: (\d+) of up to (\d+) passes")
        c.expect(done == [(executed, maximum)], f"dispatch {l.dispatch_id}: done line {done}")
    s = c.summary(r"summary: (\d+) dispatches, (\d+) passes")
    c.expect(s == ("10", str(10 * executed)), f"summary {s}: expected 10 dispatches, {10 * executed} passes")


def check_indefinite(c, env):
    tolerance = int(env.get("KREPLAY_SAMPLE_TOLERANCE_PCT", "5"))
    bound = int(env.get("KREPLAY_SAMPLE_MAX_PASSES", "20"))

    def stable(window):
        return len(window) == 3 and (max(window) - min(window)) * 100 <= tolerance * min(window)

    stable_count = bounded_count = total = 0
    for l in c.launches:
        timed = pass_lines(l, r"pass (\d+): kernel (\d+) ns")
        durations = [ns for _, ns in timed]
        passes = len(timed)
        total += passes
        c.expect([p for p, _ in timed] == list(range(1, passes + 1)),
                 f"dispatch {l.dispatch_id}: timed passes {[p for p, _ in timed]} are not 1..{passes}")
        c.expect(1 <= passes <= bound, f"dispatch {l.dispatch_id}: {passes} passes, bound {bound}")
        stop = pass_lines(l, r"^stop after pass (\d+): (stable|bound)")
        done = pass_lines(l, r"^done: (\d+) passes, total_passes reported (\d+)")
        c.expect(done == [(passes, 0)], f"dispatch {l.dispatch_id}: done line {done}, expected {passes} passes, 0")
        if not c.expect(len(stop) == 1 and stop[0][0] == passes,
                        f"dispatch {l.dispatch_id}: stop lines {stop}, expected one after pass {passes}"):
            continue
        # The loop must end at the first pass whose last 3 durations agree, or at the bound.
        first_stable = next((k for k in range(3, passes + 1) if stable(durations[k - 3:k])), None)
        if stop[0][1] == "stable":
            stable_count += 1
            c.expect(first_stable == passes,
                     f"dispatch {l.dispatch_id}: stopped 'stable' after pass {passes} but durations "
                     f"{durations} are first stable at {first_stable}")
        else:
            bounded_count += 1
            c.expect(passes == bound and first_stable is None,
                     f"dispatch {l.dispatch_id}: stopped at the bound after {passes} passes "
                     f"(bound {bound}) with durations {durations}")
    s = c.summary(r"summary: (\d+) dispatches, (\d+) passes; (\d+) stopped stable, (\d+) at the bound")
    want = ("10", str(total), str(stable_count), str(bounded_count))
    c.expect(s == want, f"summary {s}, expected {want}")
    if "KREPLAY_SAMPLE_EXPECT" in env:  # the test says which path every dispatch must take
        path = env["KREPLAY_SAMPLE_EXPECT"]
        c.expect((stable_count if path == "stable" else bounded_count) == 10,
                 f"expected every dispatch to stop '{path}': {stable_count} stable, {bounded_count} bound")


def check_opt_out(c, env):
    pattern = env.get("KREPLAY_SAMPLE_KERNEL", "")
    selected = 0
    for l in c.launches:
        chosen = pattern != "" and pattern in l.kernel
        passes = pass_lines(l, r"^pass (\d+)/(\d+)$")
        outcome = pass_lines(l, r"^outcome: ([a-z ]+), (\d+) pass")
        if chosen:
            selected += 1
            c.expect(any(" selected: 2 passes" in x for x in l.lines), f"dispatch {l.dispatch_id} not selected")
            c.expect(passes == [(1, 2), (2, 2)], f"dispatch {l.dispatch_id} ({l.kernel}): passes {passes}")
            c.expect(outcome == [("replayed", 2)], f"dispatch {l.dispatch_id}: outcome {outcome}")
        else:
            c.expect(any("skipped: replay_pass_count left NULL" in x for x in l.lines),
                     f"dispatch {l.dispatch_id} ({l.kernel}) not skipped")
            c.expect(passes == [], f"dispatch {l.dispatch_id} ({l.kernel}) was replayed: {passes}")
            c.expect(outcome == [("not requested", 1)], f"dispatch {l.dispatch_id}: outcome {outcome}")
    s = c.summary(r"summary: (\d+) dispatches selected, (\d+) skipped")
    c.expect(s == (str(selected), str(10 - selected)), f"summary {s}, expected {selected} selected")
    if pattern:
        c.expect(selected > 0, f"no launch matches '{pattern}': the test is misconfigured")


def check_counters_then_timing(c, env):
    per_pass = int(env.get("KREPLAY_HOST_COUNTERS_PER_PASS", "2"))
    wanted = ["threads_launched", "bytes_written", "launches", "ops"]
    groups = [wanted[i:i + per_pass] for i in range(0, len(wanted), per_pass)]
    passes = len(groups) + 1
    for l in c.launches:
        # What the application's kernels do (see samples/host_app/main.cpp).
        if l.kernel == "scale_add":
            bytes_written = 4 * l.n + 4  # every x[i], plus the launch counter
            ops = 2 * l.n
        else:
            bytes_written = 8 * l.grid + 4  # one 8-byte atomic per block, plus the launch counter
            ops = l.n
        expect = {"threads_launched": l.grid * l.block, "bytes_written": bytes_written,
                  "launches": 1, "ops": ops}
        header = pass_lines(l, r"grid (\d+)x1x1 block (\d+)x1x1: (\d+) passes")
        c.expect(header == [(l.grid, l.block, passes)],
                 f"dispatch {l.dispatch_id}: header {header}, expected grid {l.grid} block {l.block} {passes} passes")
        counted = pass_lines(l, r"^pass (\d+)/(\d+) counters:(.*)$")
        c.expect([(p, t) for p, t, _ in counted] == [(p, passes) for p in range(1, passes)],
                 f"dispatch {l.dispatch_id}: counters on passes {[p for p, _, _ in counted]}, expected 1..{passes - 1}")
        for p, _, text in counted:
            values = dict(kv.split("=") for kv in text.split())
            group = groups[p - 1] if p - 1 < len(groups) else []
            c.expect(list(values) == group, f"dispatch {l.dispatch_id} pass {p}: counters {list(values)}, expected {group}")
            for name, v in values.items():
                c.expect(float(v) == expect.get(name), f"dispatch {l.dispatch_id} ({l.kernel}) pass {p}: "
                                                       f"{name} = {v}, expected {expect.get(name)}")
        timing = pass_lines(l, r"^pass (\d+)/(\d+) timing: (\d+) ns")
        c.expect(len(timing) == 1 and timing[0][:2] == (passes, passes) and timing[0][2] > 0,
                 f"dispatch {l.dispatch_id}: timing lines {timing}, expected one on the last pass {passes}")
    c.expect(not any(" error: " in x for x in c.tool_lines), "the tool reported an error")


def check_services_per_pass(c, env):
    period = 32  # 2^5 cycles, as the sample configures PC sampling
    for l in c.launches:
        # What the host device derives from the kernels (samples/host_app/main.cpp; the probe of
        # src/backends/host/services/probe.hpp: load 8 cycles, store 4, atomic 16, one per op).
        if l.kernel == "scale_add":
            ops, insts, sites = 2 * l.n, 4 * l.n + 1, 4
            cycles = l.n * (8 + 4 + 2) + 16
            pc_top, sass_top = "main.cpp:54 LDG.E.32 long_scoreboard", "main.cpp:55 FFMA"
        else:
            ops, insts, sites = l.n, 2 * l.n + l.grid + 1, 4
            cycles = l.n * (8 + 1) + (l.grid + 1) * 16
            pc_top, sass_top = "main.cpp:72 LDG.E.32 long_scoreboard", "main.cpp:72 LDG.E.32"
        header = pass_lines(l, r": (\d+) passes$")
        c.expect(header == [(3,)], f"dispatch {l.dispatch_id}: header {header}, expected 3 passes")
        counters = pass_lines(l, r"^pass (\d+)/3 counters: threads_launched=(\d+) ops=(\d+)$")
        c.expect(counters == [(1, l.grid * l.block, ops)],
                 f"dispatch {l.dispatch_id} ({l.kernel}): counters {counters}, expected pass 1 "
                 f"with {l.grid * l.block} threads and {ops} ops")
        pc = pass_lines(l, r"^pass (\d+)/3 pc_sampling: samples=(\d+) instructions=(\d+) top=(.*)$")
        # Instructions too short to meet a sample point get none, so at most `sites` have samples.
        c.expect(len(pc) == 1 and pc[0][:2] == (2, cycles // period) and 2 <= pc[0][2] <= sites
                 and pc[0][3] == pc_top,
                 f"dispatch {l.dispatch_id} ({l.kernel}): pc sampling {pc}, expected pass 2 with "
                 f"{cycles // period} samples over at most {sites} instructions, top {pc_top}")
        sass = pass_lines(l, r"^pass (\d+)/3 sass_metrics: thread_inst_executed=(\d+) "
                             r"instructions=(\d+) top=(.*)$")
        c.expect(sass == [(3, insts, sites, sass_top)],
                 f"dispatch {l.dispatch_id} ({l.kernel}): sass metrics {sass}, expected pass 3 "
                 f"with {insts} executions over {sites} instructions, top {sass_top}")
        refused = [x for x in l.lines if "not collected" in x]
        c.expect(not refused, f"dispatch {l.dispatch_id}: services refused: {refused}")


CHECKS = {
    "basic": check_basic,
    "user_data": check_user_data,
    "early_exit": check_early_exit,
    "indefinite": check_indefinite,
    "opt_out": check_opt_out,
    "counters_then_timing": check_counters_then_timing,
    "services_per_pass": check_services_per_pass,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sample", choices=sorted(CHECKS))
    ap.add_argument("--app", required=True)
    ap.add_argument("--tool", required=True)
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for the run")
    args = ap.parse_args()

    extra = dict(kv.split("=", 1) for kv in args.env)
    env = dict(os.environ)
    for name in list(env):  # a clean slate: only what this test sets
        if name.startswith("KREPLAY_"):
            del env[name]
    env.update(extra)
    env["KREPLAY_TOOL_LIBRARIES"] = args.tool
    env["KREPLAY_LOG_LEVEL"] = "warning"
    try:
        run = subprocess.run([args.app], env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as e:
        print(f"check_samples: {args.sample}: the application did not finish in 120 s\n{e.stdout}")
        return 1

    c = Checker(args.sample, run.stdout, run.stderr, run.returncode)
    c.check_app()
    CHECKS[args.sample](c, extra)
    if c.failures:
        print(run.stdout)
        print(run.stderr, file=sys.stderr)
        print(f"check_samples: {args.sample}: {len(c.failures)} check(s) failed:")
        for f in c.failures:
            print(f"  - {f}")
        return 1
    print(f"check_samples: {args.sample}: OK ({len(c.launches)} launches, {len(c.tool_lines)} tool lines checked)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
