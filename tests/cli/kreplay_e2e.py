"""Shared helpers for the end-to-end tests of the kreplay command (tests/cli).

The tests run the built (or installed) `kreplay` on host-device applications and read what it
leaves behind the way a user would: the SQLite file with sqlite3, the CSV files with csv, the JSON
and Perfetto files with json (and gzip). Standard library only.

Where the binaries are comes from the environment (ctest sets it; see CMakeLists.txt):

  KREPLAY               the kreplay command
  KREPLAY_SAMPLE_APP    build/bin/kreplay-sample-app (10 launches: 6 scale_add, 4 sum_reduce)
  KREPLAY_CLI_TEST_APP  build/bin/kreplay-cli-test-app (tests/cli/cli_test_app.cpp)
  KREPLAY_BUILD_DIR     the build tree (for the install test); the three above default to
                        $KREPLAY_BUILD_DIR/bin/...
  CMAKE_COMMAND         cmake (install test)

Run one file by hand:  KREPLAY_BUILD_DIR=/tmp/build python3 -B tests/cli/test_outputs.py -v
"""

import csv
import glob
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import unittest

TAG = "==KREPLAY=="

# The sample app's launches, in issue order (samples/host_app/main.cpp, kSteps).
SAMPLE_ORDER = ["scale_add", "sum_reduce", "scale_add", "scale_add", "sum_reduce",
                "scale_add", "sum_reduce", "scale_add", "sum_reduce", "scale_add"]
SAMPLE_LAUNCHES = len(SAMPLE_ORDER)
SCALE_ADD_MANGLED = "_Z9scale_addPfffj"
SUM_REDUCE_MANGLED = "_Z10sum_reducePKjPyj"
HOST_COUNTERS = ["threads_launched", "blocks_launched", "bytes_written", "bytes_read", "ops",
                 "launches", "duration_ns"]


def _build_dir():
    return os.environ.get("KREPLAY_BUILD_DIR", "")


def _binary(var, name):
    value = os.environ.get(var)
    if value:
        return value
    build = _build_dir()
    if build:
        return os.path.join(build, "bin", name)
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "..", "..", "build", "bin", name)


KREPLAY = _binary("KREPLAY", "kreplay")
SAMPLE_APP = _binary("KREPLAY_SAMPLE_APP", "kreplay-sample-app")
TEST_APP = _binary("KREPLAY_CLI_TEST_APP", "kreplay-cli-test-app")


class Result:
    """What one kreplay command did."""

    def __init__(self, args, rc, stdout, stderr, cwd):
        self.args = args
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.cwd = cwd

    @property
    def kreplay_lines(self):
        return [l for l in self.stderr.splitlines() if l.startswith(TAG)]

    def __str__(self):
        return "command: {}\nexit code: {}\n--- stdout ---\n{}--- stderr ---\n{}".format(
            " ".join(self.args), self.rc, self.stdout, self.stderr)


def run(args, cwd, env=None, timeout=180, kreplay=None):
    """Run `kreplay ARGS` in CWD; never raises on a non-zero exit."""
    full_env = dict(os.environ)
    # The tests pin what kreplay prints at its default level.
    for var in ("KREPLAY_LOG_LEVEL", "KREPLAY_TOOL_LIBRARIES", "KREPLAY_TOOL_CONFIG"):
        full_env.pop(var, None)
    for key, value in (env or {}).items():  # None removes a variable
        if value is None:
            full_env.pop(key, None)
        else:
            full_env[key] = value
    cmd = [kreplay or KREPLAY] + [str(a) for a in args]
    p = subprocess.run(cmd, cwd=cwd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout)
    return Result(cmd, p.returncode, p.stdout.decode("utf-8", "replace"),
                  p.stderr.decode("utf-8", "replace"), cwd)


def find_files(directory, pattern):
    return sorted(glob.glob(os.path.join(directory, "**", pattern), recursive=True))


def rows(db, sql, params=()):
    con = sqlite3.connect("file:{}?mode=ro".format(db), uri=True)
    try:
        con.row_factory = sqlite3.Row
        return [dict(r) for r in con.execute(sql, params).fetchall()]
    finally:
        con.close()


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def output_lines(result):
    """Paths named by the '==KREPLAY== output: PATH' lines, as given (relative to the cwd)."""
    out = []
    for line in result.kreplay_lines:
        m = re.match(r"^==KREPLAY== output: (.+)$", line)
        if m:
            path = m.group(1).strip()
            out.append(os.path.normpath(path if os.path.isabs(path) else
                                        os.path.join(result.cwd, path)))
    return out


TALLY_RE = re.compile(
    r"^==KREPLAY== (\d+) launches: (\d+) replayed \((\d+) passes\), "
    r"(\d+) declined(?: \(([^)]*)\))?, "
    r"(\d+) not selected$")


def tally(result):
    """The tally lines at exit, as dicts (one per application run)."""
    out = []
    for line in result.kreplay_lines:
        m = TALLY_RE.match(line)
        if m:
            out.append({"launches": int(m.group(1)), "replayed": int(m.group(2)),
                        "passes": int(m.group(3)), "declined": int(m.group(4)),
                        "declined_by_reason": m.group(5) or "", "not_selected": int(m.group(6))})
    return out


class KreplayTestCase(unittest.TestCase):
    """A test with its own scratch directory (the cwd of every kreplay it runs)."""

    maxDiff = None

    def setUp(self):
        for path, what in ((KREPLAY, "kreplay"), (SAMPLE_APP, "kreplay-sample-app")):
            if not os.path.isfile(path):
                self.fail("{} not found at {}; set KREPLAY_BUILD_DIR".format(what, path))
        self.tmp = tempfile.mkdtemp(prefix="kreplay-cli-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    # -- running --------------------------------------------------------------------------------

    def kreplay(self, *args, env=None, cwd=None, timeout=180, kreplay=None):
        return run(list(args), cwd or self.tmp, env=env, timeout=timeout, kreplay=kreplay)

    def kreplay_ok(self, *args, **kw):
        r = self.kreplay(*args, **kw)
        self.assertEqual(r.rc, 0, "kreplay failed\n{}".format(r))
        return r

    def sample(self, *args, **kw):
        """kreplay ARGS -- kreplay-sample-app, expected to succeed with the app's self-check OK."""
        r = self.kreplay_ok(*(list(args) + ["--", SAMPLE_APP]), **kw)
        self.assertIn("sample-app: OK", r.stdout,
                      "the application's self-check failed\n{}".format(r))
        return r

    # -- outputs --------------------------------------------------------------------------------

    def one_file(self, directory, pattern, result=None):
        found = find_files(directory, pattern)
        self.assertEqual(len(found), 1, "expected one {} under {}, found {}\n{}".format(
            pattern, directory, found, result or ""))
        return found[0]

    def db_of(self, result, directory=None):
        return self.one_file(directory or result.cwd, "*_results.db", result)

    # -- messages -------------------------------------------------------------------------------

    def assert_one_line_error(self, result, *needles, rc=None):
        """Non-zero exit, exactly one '==KREPLAY== error:' line naming every needle, no crash."""
        self.assertNotEqual(result.rc, 0, "expected a failure\n{}".format(result))
        if rc is not None:
            self.assertEqual(result.rc, rc, str(result))
        self.assertGreater(result.rc, 0, "kreplay died by a signal\n{}".format(result))
        self.assertLess(result.rc, 128, "kreplay crashed\n{}".format(result))
        for bad in ("Traceback", "terminate called", "Segmentation fault", "Aborted",
                    "what():", "core dumped"):
            self.assertNotIn(bad, result.stderr + result.stdout, str(result))
        errors = [l for l in result.stderr.splitlines() if l.startswith(TAG + " error:")]
        self.assertEqual(len(errors), 1, "expected one error line\n{}".format(result))
        nontagged = [l for l in result.stderr.splitlines() if l and not l.startswith(TAG)]
        self.assertEqual(nontagged, [], "untagged lines on stderr\n{}".format(result))
        for needle in needles:
            if hasattr(needle, "search"):
                self.assertRegex(errors[0], needle, str(result))
            else:
                self.assertIn(needle, errors[0], str(result))
        return errors[0]

    def assert_all_tagged(self, result, app_prefix):
        """kreplay's lines start with ==KREPLAY==; everything else is the application's."""
        for stream, text in (("stderr", result.stderr), ("stdout", result.stdout)):
            for line in text.splitlines():
                if not line:
                    continue
                self.assertTrue(line.startswith(TAG) or line.startswith(app_prefix),
                                "{} line is neither kreplay's (==KREPLAY==) nor the app's: {!r}\n{}"
                                .format(stream, line, result))
        # kreplay writes to stderr only: the app's stdout carries none of its lines
        self.assertFalse(any(l.startswith(TAG) for l in result.stdout.splitlines()),
                         "kreplay printed on stdout\n{}".format(result))


def main():
    unittest.main(verbosity=2)


if __name__ == "__main__":
    sys.exit("import this module from a test file")
