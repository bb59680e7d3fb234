"""The HTML report in a browser (issue 14, item 3).

`kreplay report --format html` writes one self-contained file. It is opened in headless Chromium
(Debian's chromium, installed by scripts/deps.sh) with a checker script added: no script errors,
every chart there (kernel time shares, the per-kernel bars, the roofline, the replay timeline)
with a non-zero size; hot spots only when the database has per-instruction data. A screenshot is
kept in <build>/Testing/artifacts/. The test skips (exit 77) only when there is no Chromium.
"""

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_e2e as rep  # noqa: E402
from report_e2e import e2e  # noqa: E402


def find_chromium():
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


CHROMIUM = find_chromium()

# Runs first (in <head>): collects every script error.
CATCH = ("<script>window.__krErrors=[];window.addEventListener('error',function(e){"
         "window.__krErrors.push(String(e.message||e));});</script>")
# Runs last: what is on the page, as JSON in <pre id="kr-check">.
CHECK = """<script>
(function () {
  var charts = [];
  var svgs = document.querySelectorAll('svg.chart');
  for (var i = 0; i < svgs.length; i++) {
    var r = svgs[i].getBoundingClientRect();
    var drawn = svgs[i].querySelectorAll('rect,circle,polyline,line,text').length;
    charts.push({name: svgs[i].getAttribute('data-chart'), width: r.width, height: r.height,
                 shapes: drawn});
  }
  var pre = document.createElement('pre');
  pre.id = 'kr-check';
  pre.textContent = JSON.stringify({errors: window.__krErrors, charts: charts,
      tables: document.querySelectorAll('table').length,
      external: document.querySelectorAll('[src], link[href]').length});
  document.body.appendChild(pre);
})();
</script>"""


class Html(rep.ReportCase):
    def browser(self, html_path, *flags):
        profile = tempfile.mkdtemp(prefix="kreplay-chromium-")
        self.addCleanup(shutil.rmtree, profile, True)
        cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--no-first-run", "--user-data-dir=" + profile] + list(flags) + [
               "file://" + os.path.abspath(html_path)]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        return p.stdout

    def check_page(self, html_path):
        with open(html_path) as f:
            page = f.read()
        probe = html_path + ".check.html"
        with open(probe, "w") as f:
            f.write(page.replace("<head>", "<head>" + CATCH, 1).replace("</body>", CHECK + "</body>"))
        dom = self.browser(probe, "--dump-dom", "--window-size=1100,2000")
        m = re.search(r'<pre id="kr-check">(.*?)</pre>', dom, re.S)
        self.assertTrue(m, dom[-2000:])
        return page, json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&")
                                .replace("&lt;", "<").replace("&gt;", ">"))

    def assert_charts(self, result, expected):
        self.assertEqual(result["errors"], [])
        names = [c["name"] for c in result["charts"]]
        self.assertEqual(sorted(names), sorted(expected))
        for c in result["charts"]:
            self.assertGreater(c["width"], 0, c)
            self.assertGreater(c["height"], 0, c)
            self.assertGreater(c["shapes"], 2, c)

    def test_every_chart_renders_without_script_errors(self):
        db = self.kernel_db()
        base = self.profile(rep.HOST_SET, name="base")
        out = os.path.join(self.tmp, "report.html")
        self.report(db, "--section-folder", rep.TEST_SECTIONS, "--baseline", base, "--format",
                    "html", "-o", out)
        page, result = self.check_page(out)
        # self-contained: nothing fetched (the only URL is SVG's namespace name)
        self.assertEqual(result["external"], 0)
        self.assertEqual(re.findall(r"https?://(?!www\.w3\.org/2000/svg)", page), [])
        self.assert_charts(result, ["time-shares", "bars-HostSpeedOfLight",
                                    "roofline-HostRoofline", "timeline"])
        self.assertGreaterEqual(result["tables"], 8)
        # the timeline shows passes, snapshots and restores of the replayed launches
        timeline = page[page.index('data-chart="timeline"'):]
        timeline = timeline[:timeline.index("</svg>")]
        self.assertIn('class="snap"', timeline)
        self.assertIn('class="restore"', timeline)
        self.assertGreaterEqual(timeline.count('class="pass"'), 10 * 3)
        shot = os.path.join(rep.artifacts_dir(), "report_html.png")
        if os.path.exists(shot):
            os.remove(shot)
        self.browser(out, "--screenshot=" + shot, "--window-size=1100,3200",
                     "--hide-scrollbars")
        self.assertGreater(os.path.getsize(shot), 10000)
        print("screenshot: " + shot)

    def test_the_checker_sees_script_errors_and_empty_charts(self):
        bad = os.path.join(self.tmp, "bad.html")
        with open(bad, "w") as f:
            f.write("<!DOCTYPE html><html><head></head><body><svg class=\"chart\" "
                    "data-chart=\"empty\" width=\"0\" height=\"0\"></svg>"
                    "<script>undefinedFunction();</script></body></html>")
        _, result = self.check_page(bad)
        self.assertEqual(len(result["errors"]), 1, result)
        self.assertIn("undefinedFunction", result["errors"][0])
        self.assertEqual(result["charts"], [{"name": "empty", "width": 0, "height": 0,
                                             "shapes": 0}])

    def test_hot_spots_only_with_per_instruction_data(self):
        db = self.kernel_db()
        out = os.path.join(self.tmp, "plain.html")
        self.report(db, "--section-folder", rep.TEST_SECTIONS, "--format", "html", "-o", out)
        with open(out) as f:
            self.assertNotIn("hotspots", f.read())
        # A database with a source_counters table (what the per-instruction service will write).
        con = sqlite3.connect(db)
        con.execute("CREATE TABLE source_counters (app_pass INTEGER, dispatch_id INTEGER, "
                    "kernel_id INTEGER, location TEXT, inst_executed REAL)")
        con.executemany("INSERT INTO source_counters VALUES (0, ?, ?, ?, ?)",
                        [(1, 1, "scale_add.cu:%d" % line, 100.0 * line) for line in range(10, 20)]
                        + [(2, 2, "sum_reduce.cu:%d" % line, 50.0 * line) for line in range(5, 9)])
        con.commit()
        con.close()
        out = os.path.join(self.tmp, "hot.html")
        self.report(db, "--section-folder", rep.TEST_SECTIONS, "--format", "html", "-o", out)
        _, result = self.check_page(out)
        self.assert_charts(result, ["time-shares", "bars-HostSpeedOfLight",
                                    "roofline-HostRoofline", "timeline", "hotspots"])

    def test_range_application_and_older_databases_render(self):
        for db in (self.range_db(), self.application_db(), rep.old_database(self.tmp)):
            out = db + ".html"
            self.report(db, "--section-folder", rep.TEST_SECTIONS, "--format", "html", "-o", out)
            _, result = self.check_page(out)
            self.assert_charts(result, ["time-shares", "bars-HostSpeedOfLight",
                                        "roofline-HostRoofline", "timeline"])


if __name__ == "__main__":
    if CHROMIUM is None:
        print("SKIP: no chromium (scripts/deps.sh installs Debian's chromium)")
        sys.exit(77)
    e2e.main()
