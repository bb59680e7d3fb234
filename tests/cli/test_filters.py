#!/usr/bin/env python3
"""Item 4: kernel filters decide at CONFIG, once per logical launch.

A launch no filter selects is not snapshotted and runs once: it leaves no dispatch, pass or counter
row (and, with --kernel-trace, a row with outcome not_requested, one pass and no snapshot), and the
tally line counts it as "not selected". Iteration ranges and the launch window count logical
launches, never replay passes: with 3 passes per launch, --kernel-iteration-range "[2-3]" selects
exactly the 2nd and 3rd launch of each kernel.

The sample app issues, in order (0-based position: kernel):
  0 scale_add, 1 sum_reduce, 2 scale_add, 3 scale_add, 4 sum_reduce, 5 scale_add, 6 sum_reduce,
  7 scale_add, 8 sum_reduce, 9 scale_add
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kreplay_e2e as e2e  # noqa: E402

THREE_GROUPS = ["--pmc", "threads_launched", "--pmc", "ops", "--pmc", "bytes_written"]


def positions(kernel, nth):
    """0-based launch positions of the nth (1-based) launches of kernel."""
    seen = [i for i, k in enumerate(e2e.SAMPLE_ORDER) if k == kernel]
    return [seen[n - 1] for n in nth]


class Filters(e2e.KreplayTestCase):
    def profile(self, *filters, groups=THREE_GROUPS, n_passes=None):
        """Run twice: plain, and with --kernel-trace (every launch gets a dispatch row, so the
        selected ones can be told by their launch position). Returns (selected positions, the
        plain run's database, the plain run)."""
        plain = self.sample(*(list(groups) + list(filters) + ["-d", "plain"]))
        traced = self.sample(*(list(groups) + list(filters) + ["-d", "traced", "--kernel-trace"]))
        db = self.db_of(plain, os.path.join(self.tmp, "plain"))
        tdb = self.db_of(traced, os.path.join(self.tmp, "traced"))
        if n_passes is None:
            n_passes = len([g for g in groups if g == "--pmc"])

        launches = e2e.rows(tdb, "SELECT d.*, k.demangled_name FROM dispatches d JOIN kernels k "
                                 "USING (app_pass, kernel_id) ORDER BY dispatch_id")
        self.assertEqual([k["demangled_name"].split("(")[0] for k in launches], e2e.SAMPLE_ORDER,
                         "with --kernel-trace every launch has a dispatch row, in launch order")
        selected = []
        for pos, d in enumerate(launches):
            if d["outcome"] == "replayed":
                selected.append(pos)
                self.assertEqual(d["passes_executed"], n_passes, d)
                self.assertGreater(d["bytes_snapshotted"], 0, d)
            else:
                # not selected: decided at CONFIG, so no snapshot, no replay, one execution
                self.assertEqual(d["outcome"], "not_requested", d)
                self.assertEqual(d["passes_executed"], 1, d)
                self.assertEqual(d["bytes_snapshotted"], 0, d)
                self.assertEqual(d["bytes_restored"], 0, d)
                self.assertEqual(e2e.rows(tdb, "SELECT * FROM counters WHERE dispatch_id = ?",
                                          (d["dispatch_id"],)), [])
                self.assertEqual(e2e.rows(tdb, "SELECT * FROM replay_phases WHERE dispatch_id = ?",
                                          (d["dispatch_id"],)), [])

        # The plain run: rows for the selected launches only.
        dispatches = e2e.rows(db, "SELECT d.*, k.demangled_name FROM dispatches d JOIN kernels k "
                                  "USING (app_pass, kernel_id) ORDER BY dispatch_id")
        self.assertEqual([d["demangled_name"].split("(")[0] for d in dispatches],
                         [e2e.SAMPLE_ORDER[p] for p in selected], str(plain))
        for d in dispatches:
            self.assertEqual(d["outcome"], "replayed")
            self.assertEqual(d["passes_executed"], n_passes)
        n_counter_dispatches = e2e.rows(db, "SELECT count(DISTINCT dispatch_id) AS n "
                                            "FROM counters")[0]["n"]
        self.assertEqual(n_counter_dispatches, len(selected))
        self.assertEqual(e2e.rows(db, "SELECT count(*) AS n FROM passes")[0]["n"],
                         len(selected) * n_passes)
        self.assertEqual(e2e.rows(db, "SELECT count(DISTINCT dispatch_id) AS n "
                                      "FROM replay_phases")[0]["n"], len(selected))

        for r in (plain, traced):
            t = e2e.tally(r)
            self.assertEqual(len(t), 1, str(r))
            self.assertEqual(t[0]["launches"], 10, str(r))
            self.assertEqual(t[0]["replayed"], len(selected), str(r))
            self.assertEqual(t[0]["not_selected"], 10 - len(selected), str(r))
            self.assertEqual(t[0]["passes"], len(selected) * n_passes + 10 - len(selected), str(r))
        run = e2e.rows(db, "SELECT launches, replayed, not_selected FROM run")[0]
        self.assertEqual(run, {"launches": 10, "replayed": len(selected),
                               "not_selected": 10 - len(selected)})
        return selected, db, plain

    def test_include_regex(self):
        selected, _, _ = self.profile("--kernel-include-regex", "scale")
        self.assertEqual(selected, positions("scale_add", range(1, 7)))

    def test_exclude_regex(self):
        selected, _, _ = self.profile("--kernel-exclude-regex", "^scale")
        self.assertEqual(selected, positions("sum_reduce", range(1, 5)))

    def test_include_then_exclude(self):
        selected, _, _ = self.profile("--kernel-include-regex", "_", "--kernel-exclude-regex",
                                      "reduce")
        self.assertEqual(selected, positions("scale_add", range(1, 7)))

    def test_kernel_name_exact(self):
        selected, _, _ = self.profile("-k", "sum_reduce")
        self.assertEqual(selected, positions("sum_reduce", range(1, 5)))

    def test_kernel_name_mangled(self):
        selected, _, _ = self.profile("--kernel-name", e2e.SCALE_ADD_MANGLED)
        self.assertEqual(selected, positions("scale_add", range(1, 7)))

    def test_kernel_name_is_exact_not_a_substring(self):
        selected, _, _ = self.profile("-k", "scale")
        self.assertEqual(selected, [])

    def test_kernel_name_regex(self):
        selected, _, _ = self.profile("-k", "regex:^sum_")
        self.assertEqual(selected, positions("sum_reduce", range(1, 5)))

    def test_iteration_range_counts_logical_launches_not_passes(self):
        # 3 passes per launch; [2-3] is each kernel's 2nd and 3rd launch, not passes 2 and 3
        selected, _, _ = self.profile("--kernel-iteration-range", "[2-3]")
        self.assertEqual(selected, sorted(positions("scale_add", [2, 3]) +
                                          positions("sum_reduce", [2, 3])))
        self.assertEqual(selected, [2, 3, 4, 6])

    def test_iteration_range_of_one_kernel(self):
        selected, _, _ = self.profile("-k", "scale_add", "--kernel-iteration-range", "[2-3]")
        self.assertEqual(selected, positions("scale_add", [2, 3]))

    def test_iteration_range_list(self):
        selected, _, _ = self.profile("--kernel-include-regex", "scale",
                                      "--kernel-iteration-range", "[1, 4-5]")
        self.assertEqual(selected, positions("scale_add", [1, 4, 5]))

    def test_launch_skip_and_count(self):
        selected, _, _ = self.profile("--launch-skip", "3", "--launch-count", "4")
        self.assertEqual(selected, [3, 4, 5, 6])

    def test_launch_window_after_name_filter(self):
        # ncu: skip and count run over the launches that pass the name filter
        selected, _, _ = self.profile("-k", "regex:scale", "--launch-skip", "1",
                                      "--launch-count", "2")
        self.assertEqual(selected, positions("scale_add", [2, 3]))

    def test_launch_count_alone(self):
        selected, _, _ = self.profile("--launch-count", "1")
        self.assertEqual(selected, [0])

    def test_filters_with_metrics(self):
        selected, db, _ = self.profile("--kernel-iteration-range", "4",
                                       groups=["--metrics", "threads_launched,ops,bytes_written"],
                                       n_passes=2)
        self.assertEqual(selected, sorted(positions("scale_add", [4]) +
                                          positions("sum_reduce", [4])))


if __name__ == "__main__":
    e2e.main()
