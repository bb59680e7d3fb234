#!/usr/bin/env python3
"""Tool registration end to end: several tools in one process, a tool exported by the executable,
and bad KREPLAY_TOOL_LIBRARIES entries (the application still runs, each problem is one line)."""
import os, re, subprocess, sys

bindir, libdir = sys.argv[1], sys.argv[2]
failures = []

def run(exe, libs, extra_env=None):
    env = dict(os.environ, KREPLAY_TOOL_LIBRARIES=":".join(libs))
    env.pop("KREPLAY_TOOL_CONFIG", None)
    env.update(extra_env or {})
    p = subprocess.run([os.path.join(bindir, exe)], env=env, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr

def check(cond, what):
    if not cond:
        failures.append(what)

basic = os.path.join(libdir, "libkreplay_sample_basic.so")
trace = os.path.join(libdir, "libkreplay_test_trace_tool.so")
notool = os.path.join(libdir, "libkreplay_test_no_configure.so")

# 1. Two tools at once: basic replays every launch 3 times; the trace tool sees every pass.
rc, out, err = run("kreplay-sample-app", [basic, trace])
check(rc == 0 and "sample-app: OK" in out, f"two tools: app failed rc={rc}\n{out}\n{err}")
m = re.search(r"TRACE_TOOL enters=(\d+) exits=(\d+)", err)
check(m is not None, f"two tools: trace tool did not report\n{err}")
if m:
    check(int(m.group(1)) == 30 and int(m.group(2)) == 30,
          f"two tools: expected 30 executions (10 launches x 3 passes), got {m.groups()}")
check(out.count("pass 3/3 exit") == 10 or "3/3" in out, "two tools: basic sample did not replay")

# 2. The executable is a tool itself, together with a library tool.
rc, out, err = run("kreplay_test_exe_tool_app", [trace])
check(rc == 0, f"executable tool: rc={rc}\n{out}\n{err}")
check("EXE_TOOL value=5 replayed=5 pass_exits=10" in out, f"executable tool: {out}")
m = re.search(r"TRACE_TOOL enters=(\d+) exits=(\d+)", err)
check(m is not None and int(m.group(2)) == 10, f"executable tool + trace tool: {err}")

# 3. Bad entries: a missing file and a library without kreplay_configure. The app runs, the good
#    tool still loads, and each problem is one ==KREPLAY== line naming the library.
rc, out, err = run("kreplay-sample-app", ["/nonexistent/libnope.so", notool, trace])
check(rc == 0 and "sample-app: OK" in out, f"bad entries: app failed rc={rc}\n{err}")
check(re.search(r"==KREPLAY== error: cannot load tool library '/nonexistent/libnope.so'", err),
      f"bad entries: no line for the missing library\n{err}")
check(re.search(r"==KREPLAY== error: tool library '.*libkreplay_test_no_configure.so' does not export kreplay_configure", err),
      f"bad entries: no line for the library without kreplay_configure\n{err}")
check("TRACE_TOOL enters=10 exits=10" in err, f"bad entries: the good tool did not run\n{err}")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("tools_test: OK")
