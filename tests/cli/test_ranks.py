#!/usr/bin/env python3
"""Many ranks (issue 15, item 2): each rank of a job writes its own database.

The jobs are simulated the way launchers set up their processes: kreplay runs the host sample apps
with the launcher's variables set (torchrun's RANK and LOCAL_RANK, Open MPI's
OMPI_COMM_WORLD_RANK, MPICH's PMI_RANK, Slurm's SLURM_PROCID), once per rank.

- The run table (and the JSON run object) records the rank, the local rank, the host and the
  devices that ran launches; with a rank and no -o, the output is <host>/<rank>_results.db.
- --ranks 0,3 profiles those ranks only: the others run unprofiled, and one line in the whole job
  says so (from the lowest rank that is not profiled). --ranks x is one error line.
"""

import json
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kreplay_e2e as e2e  # noqa: E402

# Every variable kreplay reads a rank from, unset, so the test machine's own do not leak in.
RANK_VARS = ["KREPLAY_RANK", "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
             "PALS_RANKID", "FLUX_TASK_RANK", "RANK", "SLURM_PROCID", "MPI_RANK", "LOCAL_RANK",
             "OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
             "PALS_LOCAL_RANKID", "SLURM_LOCALID"]
PMC = ["--pmc", "ops", "threads_launched"]
HOST = socket.gethostname() or "localhost"


def env_of(**values):
    env = {v: None for v in RANK_VARS}
    env.update({k: str(v) for k, v in values.items()})
    return env


class Ranks(e2e.KreplayTestCase):
    def rank_run(self, rank_env, *args, app=None):
        """kreplay ARGS -- the sample app (or APP) with the launcher variables RANK_ENV."""
        cmd = list(args) + ["--"] + (app or [e2e.SAMPLE_APP])
        return self.kreplay_ok(*cmd, env=env_of(**rank_env))

    def test_the_rank_comes_from_each_launcher(self):
        for var in ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"):
            with self.subTest(var=var):
                out = os.path.join(self.tmp, var)
                r = self.rank_run({var: 3}, *PMC, "-d", out)
                self.assertIn("sample-app: OK", r.stdout, str(r))
                db = os.path.join(out, HOST, "3_results.db")
                self.assertEqual(e2e.find_files(out, "*_results.db"), [db], str(r))
                self.assertIn(db, e2e.output_lines(r))
                run = e2e.rows(db, "SELECT rank, local_rank, hostname, devices_used FROM run")
                self.assertEqual(run, [{"rank": 3, "local_rank": None, "hostname": HOST,
                                        "devices_used": "[0]"}])

    def test_launchers_in_order_and_local_rank(self):
        # mpirun inside a Slurm allocation sets both: Open MPI's rank wins; torchrun in a Slurm job
        # numbers its workers with RANK (SLURM_PROCID numbers the torchrun).
        for env, rank in (({"OMPI_COMM_WORLD_RANK": 2, "SLURM_PROCID": 5}, 2),
                          ({"RANK": 1, "SLURM_PROCID": 0, "LOCAL_RANK": 1}, 1)):
            with self.subTest(env=env):
                out = os.path.join(self.tmp, str(rank))
                r = self.rank_run(env, "--set", "none", "-d", out)
                db = self.db_of(r, out)
                self.assertEqual(os.path.basename(db), "%d_results.db" % rank)
                got = e2e.rows(db, "SELECT rank, local_rank FROM run")[0]
                self.assertEqual(got, {"rank": rank, "local_rank": env.get("LOCAL_RANK")})

    def test_no_rank_and_a_given_name(self):
        r = self.rank_run({}, "--set", "none", "-d", "a")
        db = self.db_of(r, os.path.join(self.tmp, "a"))
        self.assertRegex(os.path.basename(db), r"^\d+_results\.db$")  # the pid, as before
        self.assertEqual(e2e.rows(db, "SELECT rank, local_rank FROM run"),
                         [{"rank": None, "local_rank": None}])
        # -o wins over the rank's default name; the rank is still recorded
        r = self.rank_run({"RANK": 4}, "--set", "none", "-d", "b", "-o", "job_%rank%")
        db = self.db_of(r, os.path.join(self.tmp, "b"))
        self.assertEqual(os.path.basename(db), "job_4_results.db")
        self.assertEqual(e2e.rows(db, "SELECT rank FROM run"), [{"rank": 4}])

    def test_json_and_the_device_of_a_rank(self):
        # rank 1 of a job whose ranks run on the device of their local rank
        env = {"RANK": 1, "LOCAL_RANK": 1, "KREPLAY_HOST_DEVICES": 2}
        r = self.rank_run(env, *PMC, "--output-format", "sqlite,json", "-d", "out",
                          app=[e2e.TEST_APP, "--device", "1"])
        self.assertIn("cli-test-app: OK", r.stdout, str(r))
        db = os.path.join(self.tmp, "out", HOST, "1_results.db")
        self.assertEqual(e2e.rows(db, "SELECT rank, local_rank, devices_used FROM run"),
                         [{"rank": 1, "local_rank": 1, "devices_used": "[1]"}])
        self.assertEqual(e2e.rows(db, "SELECT COUNT(*) AS n FROM devices")[0]["n"], 2)
        with open(os.path.join(self.tmp, "out", HOST, "1_results.json")) as f:
            doc = json.load(f)
        self.assertEqual((doc["run"]["rank"], doc["run"]["local_rank"]), (1, 1))
        self.assertEqual(doc["summary"]["devices_used"], [1])
        # convert writes the same JSON from the database
        self.kreplay_ok("convert", db, "--to", "json", "-d", "conv")
        with open(os.path.join(self.tmp, "conv", "1_results.json")) as f:
            self.assertEqual(json.load(f), doc)

    def test_only_chosen_ranks_are_profiled(self):
        lines = {}
        for rank in range(5):
            r = self.rank_run({"RANK": rank}, *PMC, "--ranks", "0,3", "-d", "out")
            self.assertIn("sample-app: OK", r.stdout, str(r))
            self.assertFalse([l for l in r.kreplay_lines if "without kreplay starting" in l], str(r))
            lines[rank] = [l for l in r.kreplay_lines if "--ranks" in l]
            if rank in (0, 3):
                self.assertEqual(len(e2e.tally(r)), 1, str(r))
        found = sorted(os.path.basename(p) for p in e2e.find_files(self.tmp, "*_results.db"))
        self.assertEqual(found, ["0_results.db", "3_results.db"])
        # one line for the job, from the lowest rank that is not profiled
        self.assertEqual(lines[1], ["==KREPLAY== --ranks 0,3: only ranks 0,3 are profiled; the "
                                    "other ranks run without profiling"])
        for rank in (0, 2, 3, 4):
            self.assertEqual(lines[rank], [], rank)
        # ranges, and a process without a rank is profiled (with a warning)
        r = self.rank_run({"RANK": 2}, "--set", "none", "--ranks", "1-2", "-d", "range")
        self.db_of(r, os.path.join(self.tmp, "range"))
        r = self.rank_run({}, "--set", "none", "--ranks", "0", "-d", "norank")
        self.db_of(r, os.path.join(self.tmp, "norank"))
        self.assertEqual(len([l for l in r.kreplay_lines if "has no rank" in l]), 1, str(r))

    def test_bad_ranks_are_one_error_line(self):
        for bad in ("x", "1,x", "3-1", "-2", ",", "1-"):
            with self.subTest(bad=bad):
                r = self.kreplay("--ranks=" + bad, "--", e2e.SAMPLE_APP, env=env_of())
                self.assert_one_line_error(r, "--ranks", rc=2)
                self.assertNotIn("sample-app", r.stdout)


if __name__ == "__main__":
    e2e.main()
