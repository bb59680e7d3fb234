"""Helpers for the tests of `kreplay report`, `kreplay convert`, the HTML report, the sections
and the Python package (tests/report). They build on tests/cli/kreplay_e2e.py (where the binaries
are) and make results databases the way a user would: by running kreplay on the host-device test
applications, with the host-device sections of tests/report/sections.
"""

import os
import sqlite3
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
import kreplay_e2e as e2e  # noqa: E402,F401

SOURCE = os.path.normpath(os.path.join(HERE, "..", ".."))
TEST_SECTIONS = os.path.join(HERE, "sections")
SHARED_SECTIONS = os.path.join(SOURCE, "share", "kreplay", "sections")
OLD_DB_SQL = os.path.join(HERE, "testdata", "v1_kernel_replay.sql")
HOST_SET = ["--section-folder", TEST_SECTIONS, "--set", "host"]


def artifacts_dir():
    """Where tests keep files for people to look at (under the build tree)."""
    build = os.environ.get("KREPLAY_BUILD_DIR") or os.path.join(SOURCE, "build")
    path = os.path.join(build, "Testing", "artifacts")
    os.makedirs(path, exist_ok=True)
    return path


def old_database(directory):
    """The checked-in database of an older kreplay (schema version 1, no seq column)."""
    path = os.path.join(directory, "old_results.db")
    if os.path.exists(path):
        os.remove(path)
    con = sqlite3.connect(path)
    with open(OLD_DB_SQL) as f:
        con.executescript(f.read())
    con.close()
    return path


class ReportCase(e2e.KreplayTestCase):
    """A test that makes results databases with kreplay and reads them with kreplay report."""

    def profile(self, args, app_args=None, name="run", app=None):
        """kreplay ARGS -d <name> -o run -- APP APP_ARGS; returns the database path."""
        app = app or e2e.SAMPLE_APP
        r = self.kreplay_ok(*(list(args) + ["-d", name, "-o", "run", "--", app] +
                              [str(a) for a in (app_args or [])]))
        path = os.path.join(self.tmp, name, "run_results.db")
        if not os.path.exists(path):  # application replay: the merged database
            path = self.db_of(r, os.path.join(self.tmp, name))
        return path

    def kernel_db(self, name="kernel"):
        return self.profile(["--replay-mode", "kernel"] + HOST_SET, name=name)

    def range_db(self, name="range"):
        return self.profile(["--replay-mode", "range"] + HOST_SET,
                            ["--launches", 8, "--two-kernels", "--sync-every", 4], name=name,
                            app=e2e.TEST_APP)

    def application_db(self, name="app"):
        r = self.kreplay_ok("--pmc", "ops", "bytes_read", "--pmc", "bytes_written", "duration_ns",
                            "--pmc", "threads_launched", "blocks_launched", "--replay-mode",
                            "application", "-d", name, "--", e2e.SAMPLE_APP)
        merged = [p for p in e2e.find_files(os.path.join(self.tmp, name), "*_results.db")
                  if "/pass_" not in p]
        self.assertEqual(len(merged), 1, str(r))
        return merged[0]

    def report(self, *args, ok=True):
        r = self.kreplay("report", *args)
        if ok:
            self.assertEqual(r.rc, 0, str(r))
        return r
