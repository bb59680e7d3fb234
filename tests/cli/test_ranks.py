#!/usr/bin/env python3
"""Many GPUs and many ranks (issue 15, items 2 and 3, and item 1 end to end): each rank of a job
writes its own database, and `kreplay merge` puts them into one.

The jobs are simulated the way launchers set up their processes: kreplay runs the host sample apps
with the launcher's variables set (torchrun's RANK and LOCAL_RANK, Open MPI's
OMPI_COMM_WORLD_RANK, MPICH's PMI_RANK, Slurm's SLURM_PROCID), once per rank.

- The run table (and the JSON run object) records the rank, the local rank, the host and the
  devices that ran launches; with a rank and no -o, the output is <host>/<rank>_results.db.
- --ranks 0,3 profiles those ranks only: the others run unprofiled, and one line in the whole job
  says so (from the lowest rank that is not profiled). --ranks x is one error line.
- A kernel over another device's memory (kreplay-cli-test-app --peer) is declined peer_memory.
- kreplay merge DIR|FILES -o all.db: a rank column on every table, views that compare the ranks,
  refusals (other schema version, other metric set, one rank twice) in one line each, and
  kreplay report reads the merged database.
"""

import json
import os
import shutil
import socket
import sqlite3
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
            self.assertFalse([l for l in r.kreplay_lines if "without kreplay starting" in l],
                             str(r))
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


class PeerMemory(e2e.KreplayTestCase):
    """Item 1 end to end: a kernel on one device over another device's buffer runs once, declined
    peer_memory, in kernel and range replay, and the application's result is right."""

    GROUPS = ["--pmc", "ops", "--pmc", "threads_launched"]  # two passes: replayed

    def test_peer_launches_are_declined(self):
        for mode in ("kernel", "range"):
            with self.subTest(mode=mode):
                r = self.kreplay_ok("--replay-mode", mode, *self.GROUPS, "-d", mode, "--",
                                    e2e.TEST_APP, "--peer",
                                    env=env_of(KREPLAY_HOST_DEVICES=2))
                self.assertIn("cli-test-app: OK", r.stdout, str(r))
                self.assertEqual(e2e.tally(r)[0]["declined_by_reason"], "peer_memory: 4", str(r))
                self.assertEqual(len([l for l in r.kreplay_lines if "peer memory" in l]), 1,
                                 str(r))
                db = self.db_of(r, os.path.join(self.tmp, mode))
                self.assertEqual(e2e.rows(db, "SELECT outcome, reason, passes_executed, COUNT(*) "
                                          "AS n FROM dispatches GROUP BY 1, 2, 3"),
                                 [{"outcome": "declined", "reason": "peer_memory",
                                   "passes_executed": 1, "n": 4}])
        # on its own device the same program is replayed
        r = self.kreplay_ok("--replay-mode", "kernel", *self.GROUPS, "-d", "own", "--", e2e.TEST_APP,
                            env=env_of(KREPLAY_HOST_DEVICES=2))
        self.assertEqual(e2e.tally(r)[0]["replayed"], 4, str(r))


class Merge(e2e.KreplayTestCase):
    def job(self, ranks, *args, out="job"):
        """One run of the sample app per rank, into OUT/<host>/<rank>_results.db."""
        for rank in ranks:
            self.kreplay_ok(*(list(args) + ["-d", out, "--", e2e.SAMPLE_APP]),
                            env=env_of(RANK=rank))
        return os.path.join(self.tmp, out)

    def test_merge_leaves_out_the_launchers_process(self):
        # kreplay -- torchrun ...: torchrun itself is profiled too, knows no rank and launches
        # nothing; its database sits next to the ranks' and is left out, said in one line.
        job = self.job([0, 1], *PMC)
        r = self.kreplay_ok(*PMC, "-d", "job", "--", e2e.TEST_APP, "--launches", "0",
                            env=env_of())
        launcher = [f for f in e2e.find_files(job, "*_results.db")
                    if not os.path.basename(f).startswith(("0_", "1_"))]
        self.assertEqual(len(launcher), 1, str(r))
        r = self.kreplay_ok("merge", job, "-o", "all.db")
        self.assertIn("==KREPLAY== 2 ranks in one database: all.db", r.kreplay_lines)
        self.assertIn("==KREPLAY== left out 1 database(s) with no rank and no launch (the "
                      "launcher's own process, e.g. torchrun's): " + launcher[0], r.kreplay_lines)
        merged = os.path.join(self.tmp, "all.db")
        self.assertEqual(e2e.rows(merged, "SELECT rank FROM run ORDER BY rank"),
                         [{"rank": 0}, {"rank": 1}])
        # without ranks a database with no launch is merged as before (the next free rank)
        alone = os.path.join(self.tmp, "alone")
        os.makedirs(alone)
        shutil.copy(launcher[0], alone)
        self.kreplay_ok("merge", alone, "-o", "alone.db")
        self.assertEqual(e2e.rows(os.path.join(self.tmp, "alone.db"), "SELECT rank FROM run"),
                         [{"rank": 0}])

    def test_merge_the_ranks_of_a_job(self):
        job = self.job([0, 1, 2], *PMC)
        r = self.kreplay_ok("merge", job, "-o", "all.db")
        merged = os.path.join(self.tmp, "all.db")
        self.assertEqual(os.path.isfile(merged), True, str(r))
        self.assertIn("==KREPLAY== 3 ranks in one database: all.db", r.kreplay_lines)
        con = sqlite3.connect(merged)
        # every table and every view but kernel_rank_balance (one row per kernel over the ranks)
        tables = [t for (t,) in con.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT IN "
            "('metadata', 'kernel_rank_balance') AND name NOT LIKE 'sqlite_%'")]
        self.assertGreater(len(tables), 20)
        for t in tables:
            cols = [c[1] for c in con.execute("SELECT * FROM pragma_table_info(?)", (t,))]
            self.assertIn("rank", cols, t)
            # keys start with the rank (pk: the column's position in the primary key)
            key = sorted((c[5], c[1]) for c in con.execute("PRAGMA table_info(%s)" % t) if c[5])
            if any(n == "app_pass" for _, n in key):
                self.assertEqual(key[0][1], "rank", (t, key))
        self.assertEqual(con.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = "
                                     "'run_by_rank'").fetchone()[0], 1)
        con.close()
        # every row of every rank, with its rank
        for rank in range(3):
            one = os.path.join(job, HOST, "%d_results.db" % rank)
            for table in ("dispatches", "passes", "counters", "kernels", "devices",
                          "replay_phases"):
                n = e2e.rows(one, "SELECT COUNT(*) AS n FROM %s" % table)[0]["n"]
                m = e2e.rows(merged, "SELECT COUNT(*) AS n FROM %s WHERE rank = ?" % table,
                             (rank,))[0]["n"]
                self.assertEqual(m, n, (table, rank))
        self.assertEqual(e2e.rows(merged, "SELECT rank FROM run ORDER BY rank"),
                         [{"rank": 0}, {"rank": 1}, {"rank": 2}])
        # the views join on the rank: one row per launch of each rank, not 3 x 3
        self.assertEqual(e2e.rows(merged, "SELECT COUNT(*) AS n FROM dispatch_counters")[0]["n"],
                         3 * e2e.SAMPLE_LAUNCHES)
        self.assertEqual(e2e.rows(merged, "SELECT rank, launches FROM kernel_summary WHERE "
                                  "kernel_id = (SELECT kernel_id FROM kernels WHERE mangled_name "
                                  "= ? LIMIT 1) ORDER BY rank", (e2e.SCALE_ADD_MANGLED,)),
                         [{"rank": r, "launches": 6} for r in range(3)])
        # views that compare the ranks
        by_rank = e2e.rows(merged, "SELECT kernel_name, rank, launches, total_ns FROM "
                           "kernel_time_by_rank ORDER BY kernel_name, rank")
        self.assertEqual([(b["kernel_name"].split("(")[0], b["rank"], b["launches"])
                          for b in by_rank],
                         [("scale_add", r, 6) for r in range(3)] +
                         [("sum_reduce", r, 4) for r in range(3)])
        balance = e2e.rows(merged, "SELECT kernel_name, ranks, launches, imbalance_pct FROM "
                           "kernel_rank_balance ORDER BY kernel_name")
        self.assertEqual([(b["ranks"], b["launches"]) for b in balance], [(3, 18), (3, 12)])
        self.assertTrue(all(0 <= b["imbalance_pct"] <= 100 for b in balance), balance)
        ops = e2e.rows(merged, "SELECT rank, launches, mean_value FROM counter_by_rank WHERE "
                       "counter_name = 'ops' AND kernel_name LIKE 'scale_add%' ORDER BY rank")
        self.assertEqual([(o["rank"], o["launches"]) for o in ops], [(0, 6), (1, 6), (2, 6)])
        self.assertEqual(len({o["mean_value"] for o in ops}), 1, ops)  # the same work everywhere

        # kreplay report reads it: every rank's launches, one kernel over the ranks
        r = self.kreplay_ok("report", merged)
        self.assertTrue(r.stdout.startswith("kreplay report: %s (application replay, 3 ranks, "
                                            "30 launches" % merged), r.stdout)
        self.assertRegex(r.stdout, r"scale_add\(.*\): 18 launches")
        self.assertRegex(r.stdout, r"sum_reduce\(.*\): 12 launches")
        doc = json.loads(self.kreplay_ok("report", merged, "--format", "json").stdout)
        self.assertEqual([run["rank"] for run in doc["runs"]], [0, 1, 2])
        # and so does the Python package, to the same numbers
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                        "python"))
        import kreplay  # noqa: E402
        self.assertEqual(kreplay.load(merged).report(), doc)
        # files can be named one by one too
        files = e2e.find_files(job, "*_results.db")
        self.kreplay_ok("merge", *files, "-o", "two.db")
        self.assertEqual(e2e.rows(os.path.join(self.tmp, "two.db"),
                                  "SELECT COUNT(*) AS n FROM run")[0]["n"], 3)

    def test_merge_refuses_what_does_not_belong_together(self):
        job = self.job([0, 1], *PMC)
        db0 = os.path.join(job, HOST, "0_results.db")
        db1 = os.path.join(job, HOST, "1_results.db")
        # another metric set
        other = self.job([2], "--pmc", "ops", out="other")
        r = self.kreplay("merge", db0, db1, os.path.join(other, HOST, "2_results.db"), "-o",
                         "x.db")
        self.assert_one_line_error(r, "different metrics", "threads_launched", rc=2)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "x.db")))
        # another schema version
        old = os.path.join(self.tmp, "old_results.db")
        shutil.copy(db1, old)
        con = sqlite3.connect(old)
        con.execute("UPDATE metadata SET value = '2' WHERE key = 'schema_version'")
        con.execute("UPDATE run SET rank = 5")
        con.commit()
        con.close()
        r = self.kreplay("merge", db0, old, "-o", "x.db")
        self.assert_one_line_error(r, "schema version 2", rc=2)
        # one rank twice
        r = self.kreplay("merge", db0, db0, "-o", "x.db")
        self.assert_one_line_error(r, "both rank 0", rc=2)
        # a merged database again
        self.kreplay_ok("merge", db0, db1, "-o", "m.db")
        r = self.kreplay("merge", "m.db", db0, "-o", "x.db")
        self.assert_one_line_error(r, "merged database already", rc=2)
        # nothing to merge
        os.makedirs(os.path.join(self.tmp, "empty"))
        r = self.kreplay("merge", "empty", "-o", "x.db")
        self.assert_one_line_error(r, "no *_results.db", rc=2)
        r = self.kreplay("merge", "-o", "x.db")
        self.assert_one_line_error(r, "kreplay merge DIR|FILES", rc=2)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "x.db")))

    def test_databases_without_a_rank_take_the_free_ranks(self):
        # processes run without a launcher: their ranks are those no input has, in input order
        self.kreplay_ok("--set", "none", "-d", "a", "-o", "p", "--", e2e.SAMPLE_APP,
                        env=env_of())
        self.kreplay_ok("--set", "none", "-d", "b", "-o", "p", "--", e2e.SAMPLE_APP,
                        env=env_of(RANK=0))
        r = self.kreplay_ok("merge", os.path.join("a", "p_results.db"),
                            os.path.join("b", "p_results.db"), "-o", "m.db")
        self.assertEqual(e2e.rows(os.path.join(self.tmp, "m.db"),
                                  "SELECT rank, COUNT(*) AS n FROM dispatches GROUP BY rank"),
                         [{"rank": 0, "n": e2e.SAMPLE_LAUNCHES},
                          {"rank": 1, "n": e2e.SAMPLE_LAUNCHES}], str(r))
        meta = e2e.rows(os.path.join(self.tmp, "m.db"),
                        "SELECT value FROM metadata WHERE key = 'merged_ranks'")[0]["value"]
        self.assertEqual(json.loads(meta), {"0": "b/p_results.db", "1": "a/p_results.db"})


if __name__ == "__main__":
    e2e.main()
