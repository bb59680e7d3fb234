"""Options read as people write them (issue 14, item 7).

A list option takes values until the next word that is one of kreplay's options, wherever it
stands, and no option ever takes another option as its value: `kreplay --pmc-check --chip GH100
A B` says that --pmc-check has no counters before --chip, not "unknown counter '--chip'". The
test walks every option that takes values (from --help), each followed by an option.
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kreplay_e2e as e2e  # noqa: E402


def valued_options(help_text):
    """(names, metavar) of the options --help lists with a value."""
    out = []
    for line in help_text.splitlines():
        m = re.match(r"^  ((?:-\w,)?--[\w-]+) (\S+)", line)
        if m:
            out.append(m.group(1).split(","))
    return out


class OptionLists(e2e.KreplayTestCase):
    def test_the_issue_example(self):
        r = self.kreplay("--pmc-check", "--chip", "GH100", "A", "B")
        line = self.assert_one_line_error(r, "--pmc-check needs its values before --chip",
                                          "kreplay --pmc-check A B --chip GH100", rc=2)
        self.assertNotIn("unknown counter", line)

    def test_every_option_with_a_value_followed_by_an_option(self):
        text = self.kreplay_ok("--help").stdout
        options = valued_options(text)
        names = [n for names in options for n in names]
        for must in ("--pmc", "--pmc-check", "--metrics", "--section", "--set", "--chip",
                     "--output-format", "-k", "-o", "-d", "-i", "--section-folder",
                     "--replay-mode", "--launch-count", "--nvtx-include", "--nvtx-exclude",
                     "--profile-from-start", "--kernel-id", "--kernel-name-base"):
            self.assertIn(must, names, "not found in --help")
        for names in options:
            for name in names:
                for after in (["--kernel-trace"], ["-S"], ["--chip", "GH100"], ["--pmc", "ops"],
                              ["--output-format=csv"]):
                    if after[0] == name:
                        continue
                    r = self.kreplay(name, *after, "--", e2e.SAMPLE_APP)
                    self.assert_one_line_error(
                        r, "%s needs " % name, "before %s" % after[0].split("=")[0], rc=2)

    def test_a_list_ends_at_the_next_option_wherever_it_stands(self):
        # counters after another option's value do not rejoin the list
        r = self.kreplay("--pmc-check", "ops", "--chip", "HOSTDEV", "launches")
        self.assert_one_line_error(r, 'unexpected argument "launches"',
                                   "--chip ends the list of --pmc-check", rc=2)
        # written in one place, the same list works
        r = self.kreplay_ok("--pmc-check", "ops", "launches", "--chip", "HOSTDEV")
        self.assertIn("fit one pass", r.stdout + r.stderr)
        # a list, then options, then the application: every launch profiled with both groups
        r = self.kreplay_ok("--pmc", "ops", "launches", "--kernel-trace", "--pmc", "bytes_read",
                            "-d", "out", "--", e2e.SAMPLE_APP)
        db = self.db_of(r)
        names = {x["name"] for x in e2e.rows(db, "SELECT DISTINCT name FROM counters")}
        self.assertEqual(names, {"ops", "launches", "bytes_read"})

    def test_nvtx_include_is_a_list_of_whole_expressions(self):
        # Repeated, or several values before the next option; an expression is never split at
        # its commas.
        app = [e2e.TEST_APP, "--mark", "2", "push:eval", "--mark", "3", "pop"]
        for i, args in enumerate((["--nvtx-include", "step/", "--nvtx-include", "eval/"],
                                  ["--nvtx-include", "step/", "eval/"])):
            r = self.kreplay_ok("--pmc", "ops", *args, "-d", "out{}".format(i), "--", *app)
            self.assertIn("3 not selected", r.stderr, str(r))
        r = self.kreplay_ok("--pmc", "ops", "--nvtx-include", "a,b", "-d", "comma", "--",
                            e2e.TEST_APP, "--mark", "1", "start:a", "--mark", "2", "start:b")
        self.assertIn("1 not selected", r.stderr, str(r))

    def test_values_written_with_equals_are_values(self):
        r = self.kreplay_ok("--kernel-name=-odd", "--pmc=ops", "-d", "out", "--", e2e.SAMPLE_APP)
        self.assertIn("10 not selected", r.stderr)


if __name__ == "__main__":
    e2e.main()
