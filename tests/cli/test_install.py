#!/usr/bin/env python3
"""Item 9: the installed kreplay works the same as the build tree's.

`cmake --install <build> --prefix <tmp>`, then run <tmp>/bin/kreplay on <tmp>/bin/kreplay-sample-app
with LD_LIBRARY_PATH unset: it must find its tool library in <tmp>/lib (not the build tree's),
write the outputs, and the share/kreplay files its messages point at must be installed. The
prefix is then moved: kreplay finds its files relative to itself, so it still works. With the
tool library missing, kreplay says so in one line.
"""

import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kreplay_e2e as e2e  # noqa: E402


class Installed(e2e.KreplayTestCase):
    def setUp(self):
        super().setUp()
        build = os.environ.get("KREPLAY_BUILD_DIR")
        if not build:
            self.fail("KREPLAY_BUILD_DIR is not set: the install test installs that build tree")
        cmake = os.environ.get("CMAKE_COMMAND") or shutil.which("cmake")
        self.assertTrue(cmake, "cmake not found (set CMAKE_COMMAND)")
        self.prefix = os.path.join(self.tmp, "prefix")
        p = subprocess.run([cmake, "--install", build, "--prefix", self.prefix],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout.decode(errors="replace"))
        self.env = {"LD_LIBRARY_PATH": None}

    def installed(self, prefix, *args, cwd=None):
        return self.kreplay(*args, kreplay=os.path.join(prefix, "bin", "kreplay"), env=self.env,
                            cwd=cwd)

    def check_run(self, prefix, out):
        app = os.path.join(prefix, "bin", "kreplay-sample-app")
        r = self.installed(prefix, "--pmc", "threads_launched", "bytes_written", "--pmc",
                           "launches", "--output-format", "sqlite,csv,json,perfetto",
                           "-d", out, "--", app)
        self.assertEqual(r.rc, 0, str(r))
        self.assertIn("sample-app: OK", r.stdout, str(r))
        self.assertEqual(e2e.tally(r)[0]["replayed"], 10, str(r))
        outputs = e2e.output_lines(r)
        self.assertEqual(len(outputs), 5, str(r))
        for path in outputs:
            self.assertTrue(os.path.isfile(path), path)
        db = self.one_file(out, "*_results.db", r)
        self.assertEqual(len(e2e.rows(db, "SELECT * FROM dispatches")), 10)
        self.assertEqual(e2e.rows(db, "SELECT count(*) AS n FROM counters")[0]["n"], 30)
        env = json.loads(e2e.rows(db, "SELECT environment FROM run")[0]["environment"])
        tool = env.get("KREPLAY_TOOL_LIBRARIES", "")
        self.assertEqual(tool, os.path.join(prefix, "lib", "libkreplay_tool.so"),
                         "the installed kreplay must inject the installed tool")
        return r

    def test_installed_layout(self):
        for rel in ("bin/kreplay", "bin/kreplay-sample-app", "lib/libkreplay_tool.so",
                    "share/kreplay/schema.sql", "share/kreplay/input-schema.json"):
            self.assertTrue(os.path.exists(os.path.join(self.prefix, rel)), rel)
        with open(os.path.join(self.prefix, "share", "kreplay", "input-schema.json")) as f:
            schema = json.load(f)
        self.assertIn("job_replay_mode", json.dumps(schema))
        # the test application is for the build tree only
        self.assertFalse(os.path.exists(os.path.join(self.prefix, "bin", "kreplay-cli-test-app")))

    def test_installed_kreplay_profiles_the_installed_app(self):
        self.check_run(self.prefix, os.path.join(self.tmp, "out"))
        r = self.installed(self.prefix, "--version")
        self.assertEqual(r.stdout, e2e.run(["--version"], self.tmp).stdout)
        r = self.installed(self.prefix, "--list-avail")
        self.assertEqual(r.rc, 0, str(r))
        for name in e2e.HOST_COUNTERS:
            self.assertIn(name, r.stdout)

    def test_installed_kreplay_reads_input_files(self):
        jobs = os.path.join(self.tmp, "jobs.yaml")
        with open(jobs, "w") as f:
            f.write("job_replay_mode: kernel\njobs:\n  - pmc: [ops]\n  - timing_pass: true\n")
        app = os.path.join(self.prefix, "bin", "kreplay-sample-app")
        r = self.installed(self.prefix, "-i", jobs, "-d", "o", "--", app, cwd=self.tmp)
        self.assertEqual(r.rc, 0, str(r))
        db = self.one_file(os.path.join(self.tmp, "o"), "*_results.db", r)
        self.assertEqual({d["passes_executed"] for d in e2e.rows(
            db, "SELECT passes_executed FROM dispatches")}, {2})

    def test_moved_prefix_still_works(self):
        moved = os.path.join(self.tmp, "elsewhere", "kreplay")
        os.makedirs(os.path.dirname(moved))
        shutil.move(self.prefix, moved)
        self.check_run(moved, os.path.join(self.tmp, "moved-out"))

    def test_missing_tool_library_is_one_clear_error(self):
        os.remove(os.path.join(self.prefix, "lib", "libkreplay_tool.so"))
        app = os.path.join(self.prefix, "bin", "kreplay-sample-app")
        r = self.installed(self.prefix, "--pmc", "ops", "--", app)
        self.assert_one_line_error(r, "libkreplay_tool.so", os.path.join(self.prefix, "lib"))
        self.assertEqual(r.stdout, "", "the application must not run without the tool")


if __name__ == "__main__":
    e2e.main()
