// The HTML report (render.hpp): one file, inline CSS, SVG and a little JavaScript; no network.
// Every chart is an <svg class="chart" data-chart="..."> with its width and height set, so a
// browser test can check that each one rendered (tests/report/test_html.py).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "output/text.hpp"
#include "report/render.hpp"

namespace kreplay::report {
namespace {

constexpr size_t kChartKernels = 12;     // kernels in the per-kernel charts
constexpr size_t kTimelineLaunches = 40;  // launches in the replay timeline
constexpr int kWidth = 960;
constexpr int kLabel = 330;  // left column for names

std::string esc(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string short_name(const std::string& name, size_t max = 46) {
  return output::truncate_name(name, max);
}

std::string num(double v) { return fmt::format("{:.2f}", v); }

// Bars and points; passes use shades of blue and green, so that they never look like the grey
// snapshots and orange restores beside them.
constexpr const char* kPalette[] = {"#3b6fb6", "#e07b39", "#5aa469", "#9b59b6", "#c0392b",
                                    "#16a085", "#d4ac0d", "#7f8c8d", "#2c3e50", "#e84393"};
constexpr const char* kPassColours[] = {"#2f5d9e", "#5aa469", "#6f9fd8", "#2e8b57", "#9fc3ee",
                                        "#7cc08e"};

std::string svg_open(const std::string& chart, int height, const std::string& label) {
  return fmt::format(
      "<svg class=\"chart\" data-chart=\"{}\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "role=\"img\" aria-label=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">\n",
      esc(chart), kWidth, height, kWidth, height, esc(label));
}

// A horizontal bar of @p fraction (0..1) of the plot width, at row @p y.
std::string bar(int y, double fraction, const char* colour, int height, const std::string& tip) {
  const double w = std::max(0.0, std::min(1.0, fraction)) * (kWidth - kLabel - 90);
  return fmt::format(
      "<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}</title>"
      "</rect>\n",
      kLabel, y, num(std::max(w, 1.0)), height, colour, esc(tip));
}

std::string text(int x, int y, const std::string& t, const char* cls = "", const char* anchor = "start") {
  return fmt::format("<text x=\"{}\" y=\"{}\" class=\"{}\" text-anchor=\"{}\">{}</text>\n", x, y,
                     cls, anchor, esc(t));
}

std::vector<const Subject*> top_subjects(const Report& r) {
  std::vector<const Subject*> out;
  for (const Subject& s : r.subjects) {
    if (out.size() >= kChartKernels) break;
    out.push_back(&s);
  }
  return out;
}

std::string time_shares(const Report& r) {
  auto subjects = top_subjects(r);
  const int row = 24;
  const int height = 30 + row * static_cast<int>(subjects.size());
  std::string out = "<section id=\"time\"><h2>Kernel time</h2>\n";
  out += fmt::format("<p>Share of all launches' kernel time{}.</p>\n",
                     r.subjects.size() > subjects.size()
                         ? fmt::format(" (the {} largest of {})", subjects.size(), r.subjects.size())
                         : "");
  out += svg_open("time-shares", height, "kernel time shares");
  int y = 10;
  for (const Subject* s : subjects) {
    std::string label = s->dispatch_id ? fmt::format("{} #{}", s->kernel, *s->dispatch_id) : s->kernel;
    out += text(kLabel - 8, y + 15, short_name(label), "label", "end");
    out += bar(y + 2, s->time_share_pct / 100.0, kPalette[0], row - 6,
               fmt::format("{}: {:.1f}% ({}, {} launches)", s->kernel, s->time_share_pct,
                           output::format_duration(s->total_ns), s->launches));
    out += text(kLabel + static_cast<int>(std::min(1.0, s->time_share_pct / 100.0) *
                                          (kWidth - kLabel - 90)) + 6,
                y + 15, fmt::format("{:.1f}%  {}", s->time_share_pct, output::format_duration(s->total_ns)),
                "value");
    y += row;
  }
  out += "</svg></section>\n";
  return out;
}

// Per-kernel bars of a section whose chart is "bars" (percentages).
std::string bars_chart(const Report& r, const Section& section, size_t index) {
  auto subjects = top_subjects(r);
  const auto& names = section.chart.values;
  const int row = 16;
  const bool base = !r.baseline.empty();
  const int per_value = base ? row + 6 : row;
  const int group = 22 + per_value * static_cast<int>(names.size());
  const int height = 16 + group * static_cast<int>(subjects.size()) + 20;
  std::string out = fmt::format("<section id=\"bars-{}\"><h2>{}</h2>\n", esc(section.name),
                                esc(section.title));
  out += fmt::format("<p>Percent of peak per kernel{}.</p>\n",
                     base ? "; the thin grey bar under each is the baseline" : "");
  out += svg_open("bars-" + section.name, height, section.title);
  // gridlines at 0, 25, 50, 75, 100%
  for (int p = 0; p <= 100; p += 25) {
    const int x = kLabel + p * (kWidth - kLabel - 90) / 100;
    out += fmt::format("<line class=\"grid\" x1=\"{}\" y1=\"8\" x2=\"{}\" y2=\"{}\"/>\n", x, x,
                       height - 18);
    out += text(x, height - 4, fmt::format("{}%", p), "axis", "middle");
  }
  int y = 10;
  for (const Subject* s : subjects) {
    const SectionResult* res = nullptr;
    for (const auto& sr : s->sections) {
      if (sr.section == &section) res = &sr;
    }
    out += text(8, y + 14, short_name(s->kernel, 110), "kernel");
    y += 22;
    for (size_t i = 0; i < names.size(); ++i) {
      const SectionMetric* m = section.metric(names[i]);
      std::string label = names[i];
      if (m) {
        label = m->label;
      } else {
        for (const auto& d : section.derived) {
          if (d.name == names[i]) label = d.label;
        }
      }
      std::optional<double> v = res ? res->get(names[i]) : std::nullopt;
      std::optional<double> b;
      if (res) {
        for (const auto& vr : res->values) {
          if (vr.name == (m ? m->name : names[i])) b = vr.baseline;
        }
      }
      out += text(kLabel - 8, y + 12, label, "label", "end");
      const char* colour = kPalette[(index + i) % 10];
      out += bar(y + 2, v.value_or(0) / 100.0, colour, row - 4,
                 fmt::format("{} — {}: {}%", s->kernel, label, format_value(v)));
      out += text(kLabel + static_cast<int>(std::min(1.0, std::max(0.0, v.value_or(0) / 100.0)) *
                                            (kWidth - kLabel - 90)) + 6,
                  y + 12, v ? format_value(v) + "%" : "n/a", "value");
      if (base) {
        out += fmt::format(
            "<rect class=\"baseline\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"4\"><title>baseline: "
            "{}%</title></rect>\n",
            kLabel, y + row, num(std::max(1.0, std::min(1.0, b.value_or(0) / 100.0) *
                                                   (kWidth - kLabel - 90))),
            format_value(b));
      }
      y += per_value;
    }
  }
  out += "</svg></section>\n";
  return out;
}

std::string roofline(const Report& r, const Section& section) {
  struct Point {
    std::string kernel;
    double x, y;
  };
  std::vector<Point> points;
  double peak_c = 0, peak_b = 0;
  for (const Subject& s : r.subjects) {
    for (const auto& sr : s.sections) {
      if (sr.section != &section) continue;
      auto x = sr.get(section.chart.x), y = sr.get(section.chart.y);
      auto pc = sr.get(section.chart.peak_compute), pb = sr.get(section.chart.peak_bandwidth);
      if (pc && *pc > 0) peak_c = std::max(peak_c, *pc);
      if (pb && *pb > 0) peak_b = std::max(peak_b, *pb);
      if (x && y && *x > 0 && *y > 0) points.push_back({s.kernel, *x, *y});
    }
  }
  if (points.empty() || peak_c <= 0 || peak_b <= 0) return "";
  const double ridge = peak_c / peak_b;
  double x_lo = ridge, x_hi = ridge, y_lo = peak_c, y_hi = peak_c;
  for (const auto& p : points) {
    x_lo = std::min(x_lo, p.x);
    x_hi = std::max(x_hi, p.x);
    y_lo = std::min(y_lo, p.y);
  }
  x_lo = std::pow(10, std::floor(std::log10(x_lo)) - 1);
  x_hi = std::pow(10, std::ceil(std::log10(x_hi)) + 1);
  y_lo = std::pow(10, std::floor(std::log10(std::min(y_lo, x_lo * peak_b))));
  y_hi = std::pow(10, std::ceil(std::log10(y_hi)) + 0.3);
  const int left = 90, top = 20, w = kWidth - left - 40, h = 380, height = h + top + 50;
  auto X = [&](double v) { return left + (std::log10(v) - std::log10(x_lo)) / (std::log10(x_hi) - std::log10(x_lo)) * w; };
  auto Y = [&](double v) { return top + h - (std::log10(v) - std::log10(y_lo)) / (std::log10(y_hi) - std::log10(y_lo)) * h; };
  std::string out = fmt::format("<section id=\"roofline-{}\"><h2>{}</h2>\n", esc(section.name),
                                esc(section.title));
  out += fmt::format("<p>Achieved performance against arithmetic intensity, log scales; roofs: "
                     "peak {} and peak bandwidth {} (ridge at {}).</p>\n",
                     esc(format_value(peak_c)), esc(format_value(peak_b)), esc(format_value(ridge)));
  out += svg_open("roofline-" + section.name, height, section.title);
  out += fmt::format("<rect class=\"plot\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", left,
                     top, w, h);
  for (double v = x_lo; v <= x_hi * 1.001; v *= 10) {
    out += fmt::format("<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n",
                       num(X(v)), top, top + h);
    out += text(static_cast<int>(X(v)), top + h + 16, fmt::format("{:g}", v), "axis", "middle");
  }
  for (double v = y_lo; v <= y_hi * 1.001; v *= 10) {
    out += fmt::format("<line class=\"grid\" x1=\"{1}\" y1=\"{0}\" x2=\"{2}\" y2=\"{0}\"/>\n",
                       num(Y(v)), left, left + w);
    out += text(left - 6, static_cast<int>(Y(v)) + 4, fmt::format("{:.0e}", v), "axis", "end");
  }
  // The roof: bandwidth up to the ridge, compute after it.
  out += fmt::format(
      "<polyline class=\"roof\" points=\"{},{} {},{} {},{}\"><title>roofs</title></polyline>\n",
      num(X(x_lo)), num(Y(std::max(y_lo, x_lo * peak_b))), num(X(ridge)), num(Y(peak_c)),
      num(X(x_hi)), num(Y(peak_c)));
  const SectionDerived* xd = nullptr;
  const SectionDerived* yd = nullptr;
  for (const auto& d : section.derived) {
    if (d.name == section.chart.x) xd = &d;
    if (d.name == section.chart.y) yd = &d;
  }
  out += text(left + w / 2, height - 8,
              xd ? fmt::format("{} ({})", xd->label, xd->unit) : section.chart.x, "axis", "middle");
  out += fmt::format("<text class=\"axis\" transform=\"translate(14,{}) rotate(-90)\" "
                     "text-anchor=\"middle\">{}</text>\n",
                     top + h / 2, esc(yd ? fmt::format("{} ({})", yd->label, yd->unit) : section.chart.y));
  for (size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    out += fmt::format(
        "<circle class=\"point\" cx=\"{}\" cy=\"{}\" r=\"6\" fill=\"{}\"><title>{}: {} at {}"
        "</title></circle>\n",
        num(X(p.x)), num(Y(p.y)), kPalette[i % 10], esc(p.kernel), esc(format_value(p.y)),
        esc(format_value(p.x)));
    if (i < 8) out += text(static_cast<int>(X(p.x)) + 9, static_cast<int>(Y(p.y)) + 4, short_name(p.kernel, 30), "value");
  }
  out += "</svg></section>\n";
  return out;
}

Result<std::string> timeline(const Database& db) {
  std::vector<DbPass> passes;
  std::vector<DbPhase> phases;
  RETURN_IF_ERROR(db.read_timeline(kTimelineLaunches, &passes, &phases));
  std::string out = "<section id=\"timeline\"><h2>Replay timeline</h2>\n";
  if (passes.empty()) {
    return out + "<p>No launch of this database has pass records.</p></section>\n";
  }
  struct Row {
    std::vector<const DbPass*> passes;
    std::vector<const DbPhase*> phases;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    std::string kernel;
  };
  std::map<std::pair<uint32_t, uint64_t>, Row> rows;
  std::vector<std::pair<uint32_t, uint64_t>> order;
  for (const auto& p : passes) {
    auto key = std::make_pair(p.app_pass, p.dispatch_id);
    if (rows.find(key) == rows.end()) order.push_back(key);
    Row& r = rows[key];
    r.passes.push_back(&p);
    r.lo = std::min(r.lo, p.start_ns);
    r.hi = std::max(r.hi, p.end_ns);
  }
  for (const auto& ph : phases) {
    auto it = rows.find({ph.app_pass, ph.dispatch_id});
    if (it == rows.end()) continue;
    it->second.phases.push_back(&ph);
    it->second.lo = std::min(it->second.lo, ph.start_ns);
    it->second.hi = std::max(it->second.hi, ph.end_ns);
  }
  for (const auto& l : db.launches) {
    auto it = rows.find({l.app_pass, l.dispatch_id});
    if (it != rows.end()) it->second.kernel = l.kernel_name;
  }
  std::sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
    return std::make_pair(a.first, rows[a].lo) < std::make_pair(b.first, rows[b].lo);
  });
  const int row = 20, plot = kWidth - kLabel - 110;
  const int height = 40 + row * static_cast<int>(order.size());
  out += fmt::format("<p>Each row is one launch ({} shown), scaled to its own replay window: "
                     "<span class=\"key snap\">snapshot</span> <span class=\"key pass\">pass 0</span> "
                     "<span class=\"key pass1\">pass 1</span> <span class=\"key pass2\">pass 2"
                     "</span> ... <span class=\"key restore\">restore</span>.</p>\n",
                     order.size());
  out += svg_open("timeline", height, "replay timeline");
  int y = 8;
  for (const auto& key : order) {
    const Row& r = rows[key];
    const double span = std::max<int64_t>(1, r.hi - r.lo);
    auto X = [&](int64_t t) { return kLabel + (t - r.lo) / span * plot; };
    out += text(kLabel - 8, y + 14, fmt::format("{} #{}", short_name(r.kernel, 36), key.second),
                "label", "end");
    for (const DbPhase* ph : r.phases) {
      out += fmt::format(
          "<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>{}{}: {}, {} "
          "bytes</title></rect>\n",
          ph->phase == "snapshot" ? "snap" : "restore", num(X(ph->start_ns)), y + 2,
          num(std::max(1.0, (ph->end_ns - ph->start_ns) / span * plot)), row - 6, esc(ph->phase),
          ph->phase == "restore" ? fmt::format(" after pass {}", ph->after_pass) : "",
          output::format_duration(static_cast<double>(ph->end_ns - ph->start_ns)), ph->bytes);
    }
    for (const DbPass* p : r.passes) {
      out += fmt::format(
          "<rect class=\"pass\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>"
          "pass {}: {}</title></rect>\n",
          num(X(p->start_ns)), y + 2, num(std::max(1.0, (p->end_ns - p->start_ns) / span * plot)),
          row - 6, kPassColours[p->replay_pass % 6], p->replay_pass,
          output::format_duration(static_cast<double>(p->end_ns - p->start_ns)));
    }
    out += text(kLabel + plot + 8, y + 14, output::format_duration(span), "value");
    y += row;
  }
  out += "</svg></section>\n";
  return out;
}

Result<std::string> hotspots(const Report& r, const Database& db) {
  if (!db.has_source_counters) return std::string();
  ASSIGN_OR_RETURN(auto rows, db.read_source_counters());
  std::map<uint64_t, std::string> names;
  for (const auto& l : db.launches) names[l.kernel_id] = l.kernel_name;
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.inst_executed > b.inst_executed; });
  if (rows.size() > 25) rows.resize(25);
  if (rows.empty()) return std::string();
  const double top = rows.front().inst_executed;
  const int row = 20;
  std::string out = "<section id=\"hotspots\"><h2>Source hot spots</h2>\n"
                    "<p>Instructions executed per source location (the 25 hottest).</p>\n";
  out += svg_open("hotspots", 16 + row * static_cast<int>(rows.size()), "source hot spots");
  int y = 8;
  for (const auto& h : rows) {
    out += text(kLabel - 8, y + 14, short_name(h.location + "  " + names[h.kernel_id], 50), "label", "end");
    out += bar(y + 2, top > 0 ? h.inst_executed / top : 0, kPalette[2], row - 6,
               fmt::format("{}: {} instructions", h.location, format_value(h.inst_executed)));
    y += row;
  }
  (void)r;
  out += "</svg></section>\n";
  return out;
}

std::string details(const Report& r) {
  const bool base = !r.baseline.empty();
  std::string out = "<section id=\"details\"><h2>Sections per kernel</h2>\n"
                    "<p><input id=\"filter\" type=\"search\" placeholder=\"filter kernels\"> "
                    "<button id=\"expand\" type=\"button\">expand all</button></p>\n";
  bool first = true;
  for (const Subject& s : r.subjects) {
    std::string head = s.dispatch_id ? fmt::format("{} — launch {}", s.kernel, *s.dispatch_id)
                                     : fmt::format("{} — {} launches, {:.1f}% of kernel time",
                                                   s.kernel, s.launches, s.time_share_pct);
    out += fmt::format("<details class=\"kernel\" data-kernel=\"{}\"{}><summary>{}</summary>\n",
                       esc(s.kernel), first ? " open" : "", esc(head));
    first = false;
    for (const SectionResult& sr : s.sections) {
      out += fmt::format("<h3>{}</h3>\n<table><tr><th>Name</th><th>Unit</th><th>Value</th>{}</tr>\n",
                         esc(sr.section->title), base ? "<th>Baseline</th><th>Change</th>" : "");
      for (const ValueRow& v : sr.values) {
        out += fmt::format("<tr class=\"{}\"><td title=\"{}\">{}</td><td>{}</td><td>{}</td>", v.kind,
                           esc(v.name), esc(v.label), esc(v.unit), esc(format_value(v.value)));
        if (base) {
          auto c = v.change_pct();
          out += fmt::format("<td>{}</td><td>{}</td>", esc(format_value(v.baseline)),
                             c ? fmt::format("{:+.1f}%", *c) : "");
        }
        out += "</tr>\n";
      }
      out += "</table>\n";
      for (const RuleRow& rule : sr.rules) {
        out += fmt::format("<p class=\"rule {}\"><b>{}</b> {}</p>\n", esc(rule.severity),
                           rule.severity == "warning" ? "WARNING" : "INFO", esc(rule.advice));
      }
    }
    out += "</details>\n";
  }
  return out + "</section>\n";
}

constexpr const char* kStyle = R"(
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1000px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 4px;border-bottom:1px solid #ddd}
h3{font-size:14px;margin:14px 0 4px}p{margin:4px 0 8px}.meta{color:#555}
svg.chart{display:block;background:#fcfcfc;border:1px solid #eee}
svg text{font:12px system-ui,sans-serif;fill:#333}svg text.kernel{font-weight:600}
svg text.axis{fill:#666;font-size:11px}line.grid{stroke:#e3e3e3}
rect.plot{fill:none;stroke:#ccc}rect.baseline{fill:#999}
polyline.roof{fill:none;stroke:#c0392b;stroke-width:2}circle.point{stroke:#fff;stroke-width:1.5}
rect.snap{fill:#888}rect.restore{fill:#e07b39}
.key{padding:0 6px;color:#fff;border-radius:3px}.key.snap{background:#888}
.key.pass{background:#2f5d9e}.key.pass1{background:#5aa469}.key.pass2{background:#6f9fd8}
.key.restore{background:#e07b39}
table{border-collapse:collapse;margin:4px 0}td,th{padding:2px 10px;border-bottom:1px solid #eee;
text-align:left}td:nth-child(n+3){text-align:right;font-variant-numeric:tabular-nums}
tr.derived td:first-child{font-style:italic}
.rule{padding:4px 8px;border-left:4px solid #3b6fb6;background:#f3f6fb}
.rule.warning{border-color:#e07b39;background:#fdf3ec}
details.kernel{margin:6px 0;padding:4px 8px;border:1px solid #e5e5e5}
summary{cursor:pointer;font-weight:600}nav a{margin-right:12px}
)";

constexpr const char* kScript = R"(
(function () {
  var filter = document.getElementById('filter');
  var kernels = document.querySelectorAll('details.kernel');
  if (filter) {
    filter.addEventListener('input', function () {
      var q = filter.value.toLowerCase();
      for (var i = 0; i < kernels.length; i++) {
        var k = kernels[i].getAttribute('data-kernel').toLowerCase();
        kernels[i].style.display = k.indexOf(q) >= 0 ? '' : 'none';
      }
    });
  }
  var expand = document.getElementById('expand');
  if (expand) {
    expand.addEventListener('click', function () {
      var open = expand.textContent === 'expand all';
      for (var i = 0; i < kernels.length; i++) kernels[i].open = open;
      expand.textContent = open ? 'collapse all' : 'expand all';
    });
  }
  document.body.setAttribute('data-charts', String(document.querySelectorAll('svg.chart').length));
})();
)";

}  // namespace

Result<std::string> render_html(const Report& r, const Database& db) {
  std::string charts = time_shares(r);
  std::string nav = "<a href=\"#time\">kernel time</a>";
  for (size_t i = 0; i < r.shown.size(); ++i) {
    const Section& s = *r.shown[i];
    if (s.chart.kind == "bars") {
      charts += bars_chart(r, s, i);
      nav += fmt::format("<a href=\"#bars-{0}\">{0}</a>", esc(s.name));
    } else if (s.chart.kind == "roofline") {
      std::string chart = roofline(r, s);
      if (!chart.empty()) nav += fmt::format("<a href=\"#roofline-{}\">roofline</a>", esc(s.name));
      charts += chart;
    }
  }
  ASSIGN_OR_RETURN(std::string tl, timeline(db));
  charts += tl;
  nav += "<a href=\"#timeline\">replay timeline</a>";
  ASSIGN_OR_RETURN(std::string hot, hotspots(r, db));
  if (!hot.empty()) nav += "<a href=\"#hotspots\">hot spots</a>";
  charts += hot;
  nav += "<a href=\"#details\">sections</a>";

  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  out += fmt::format("<title>kreplay report: {}</title>\n<style>{}</style></head>\n<body>\n",
                     esc(r.database), kStyle);
  out += fmt::format("<h1>kreplay report</h1>\n<p class=\"meta\">{}{}</p>\n", esc(r.database),
                     r.baseline.empty() ? "" : " — baseline " + esc(r.baseline));
  for (const auto& n : r.notes) out += fmt::format("<p class=\"meta\">note: {}</p>\n", esc(n));
  out += "<nav>" + nav + "</nav>\n" + charts + details(r);
  out += fmt::format("<script>{}</script>\n</body></html>\n", kScript);
  return out;
}

}  // namespace kreplay::report
