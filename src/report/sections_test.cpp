// The shipped sections and sets load and resolve; section files with mistakes are refused with
// a message that names the file, the line and the fix. (tests/report/test_sections.py checks
// every counter name against kreplay --list-avail --chip GH100.)
#include "report/sections.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace kreplay::report {
namespace {

Catalog shipped() {
  auto c = Catalog::load({KREPLAY_SECTIONS_DIR});
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? std::move(c).value() : Catalog{};
}

std::vector<std::string> names_of(const std::vector<const Section*>& sections) {
  std::vector<std::string> out;
  for (const Section* s : sections) out.push_back(s->name);
  return out;
}

TEST(Sections, ShippedSectionsAndSetsLoad) {
  Catalog c = shipped();
  for (const char* name : {"LaunchStats", "Occupancy", "SpeedOfLight", "MemoryWorkloadAnalysis",
                           "ComputeWorkloadAnalysis", "WarpStateStats", "SchedulerStats",
                           "SourceCounters", "RooflineChart", "ThroughputBreakdown"}) {
    const Section* s = c.section(name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_FALSE(s->title.empty());
  }
  for (const char* name : {"basic", "detailed", "full", "none"}) EXPECT_NE(c.set(name), nullptr);
  auto basic = c.resolve("basic", {});
  ASSERT_TRUE(basic.ok());
  EXPECT_EQ(names_of(*basic), (std::vector<std::string>{"LaunchStats", "Occupancy", "SpeedOfLight"}));
  auto none = c.resolve("none", {});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  // Every set is a superset of the one before it.
  auto detailed = c.resolve("detailed", {});
  auto full = c.resolve("full", {});
  ASSERT_TRUE(detailed.ok() && full.ok());
  for (const Section* s : *basic) EXPECT_NE(std::find(detailed->begin(), detailed->end(), s), detailed->end());
  for (const Section* s : *detailed) EXPECT_NE(std::find(full->begin(), full->end(), s), full->end());
  // LaunchStats costs no counter; the source section waits for data kreplay does not collect.
  EXPECT_TRUE(c.section("LaunchStats")->counters().empty());
  EXPECT_EQ(c.section("SourceCounters")->requires_data, "source_counters");
}

TEST(Sections, EverySectionHasRulesWithAdviceAndValidCharts) {
  Catalog c = shipped();
  for (const Section& s : c.sections()) {
    if (s.name != "RooflineChart") {
      EXPECT_FALSE(s.rules.empty()) << s.name;
    }
    for (const auto& r : s.rules) EXPECT_FALSE(r.advice.empty()) << s.name << "." << r.name;
    for (const auto& m : s.metrics) {
      EXPECT_FALSE(m.label.empty()) << m.name;
      // Counter names look like Nsight Compute metric names: unit__counter.rollup[.submetric].
      if (!m.field) {
        EXPECT_NE(m.name.find("__"), std::string::npos) << m.name;
      }
    }
  }
}

TEST(Sections, ResolveSectionsByNameAndRegexInCatalogOrder) {
  Catalog c = shipped();
  auto r = c.resolve("", {"SpeedOfLight", "regex:^Launch", "SpeedOfLight"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(names_of(*r), (std::vector<std::string>{"LaunchStats", "SpeedOfLight"}));
  auto both = c.resolve("basic", {"regex:Workload"});
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->size(), 5u);
  EXPECT_EQ(counters_of({c.section("SpeedOfLight"), c.section("SpeedOfLight")}).size(),
            c.section("SpeedOfLight")->counters().size());
}

TEST(Sections, UnknownNamesSuggestTheClosest) {
  Catalog c = shipped();
  auto s = c.resolve("", {"SpeedOfLite"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("did you mean SpeedOfLight?"), std::string::npos)
      << s.status().message();
  auto set = c.resolve("basc", {});
  ASSERT_FALSE(set.ok());
  EXPECT_NE(set.status().message().find("did you mean basic?"), std::string::npos);
  auto re = c.resolve("", {"regex:^Nothing"});
  ASSERT_FALSE(re.ok());
  EXPECT_NE(re.status().message().find("matches no section"), std::string::npos);
  auto bad = c.resolve("", {"regex:(("});
  ASSERT_FALSE(bad.ok());
}

TEST(Sections, LaterFoldersAddSectionsAndSets) {
  auto c = Catalog::load({KREPLAY_SECTIONS_DIR, KREPLAY_TEST_SECTIONS_DIR});
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_NE(c->set("host"), nullptr);
  ASSERT_NE(c->set("basic"), nullptr);
  auto host = c->resolve("host", {});
  ASSERT_TRUE(host.ok());
  EXPECT_EQ(counters_of(*host), (std::vector<std::string>{"duration_ns", "ops", "bytes_read",
                                                          "bytes_written", "threads_launched",
                                                          "blocks_launched"}));
  auto missing = Catalog::load({"/nonexistent/sections"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/sections does not exist"),
            std::string::npos);
}

struct BadCase {
  const char* yaml;
  const char* message;
};

TEST(Sections, MistakesAreRefusedWithFileLineAndFix) {
  const BadCase cases[] = {
      {"name: A\ntitle: T\nmetrics: [{name: x__y.sum, label: X}]\nbogus: 1\n",
       "a.yaml:4:1: unknown key \"bogus\" in a section"},
      {"title: T\nmetrics: [{name: x__y.sum, label: X}]\n", "\"name\" is missing"},
      {"name: A\ntitle: T\nmetrics: [{name: x__y.sum, lable: X}]\n", "did you mean label?"},
      {"name: A\ntitle: T\nmetrics: [{name: x__y.sum, as: x, label: X}]\n"
       "derived: [{name: d, label: D, expr: \"x + y\"}]\n",
       "uses \"y\", which section A does not define"},
      {"name: A\ntitle: T\nmetrics: [{name: x__y.sum, as: x, label: X}]\n"
       "derived: [{name: d, label: D, expr: \"x +\"}]\n",
       "a.yaml:4:37: derived d: expression \"x +\": a value is missing"},
      {"name: A\ntitle: T\nmetrics: [{name: x__y.sum, as: x, label: X}]\n"
       "rules: [{name: R, when: \"x > 1\", advice: \"{z}\"}]\n",
       "advice names {z}"},
      {"name: A\ntitle: T\nmetrics: [{name: x__y.sum, as: x, label: X}]\n"
       "rules: [{name: R, severity: fatal, when: \"x > 1\", advice: a}]\n",
       "use info or warning"},
      {"name: A\ntitle: T\nmetrics: [{name: launch.blocksize, label: X}]\n",
       "unknown record field \"launch.blocksize\" (did you mean launch.block_size?)"},
      {"name: A\ntitle: T\nmetrics: [{name: x__y.sum, label: X}, {name: x__y.sum, label: Y}]\n",
       "defined twice"},
      {"name: A\ntitle: T\nmetrics: [{name: x__y.sum, as: x, label: X}]\nchart: {kind: pie}\n",
       "use bars, roofline or hotspots"},
      {"name: A\ntitle: T\nmetrics: [{name: x__y.sum, as: x, label: X}]\n"
       "chart: {kind: bars, values: [x, w]}\n",
       "the chart names \"w\""},
      {"name: A\ntitle: T\nrequires: sass\nmetrics: [{name: x__y.sum, label: X}]\n",
       "use source_counters"},
      {"name: A\ntitle: [T\n", "fix the YAML syntax"},
  };
  for (const auto& c : cases) {
    auto s = Catalog::parse_section(c.yaml, "a.yaml");
    ASSERT_FALSE(s.ok()) << c.yaml;
    EXPECT_NE(s.status().message().find(c.message), std::string::npos)
        << "message: " << s.status().message() << "\nexpected: " << c.message;
  }
}

TEST(Sections, ParsesAGoodSection) {
  auto s = Catalog::parse_section(
      "name: A\ntitle: T\norder: 5\nmetrics:\n  - {name: x__y.sum, as: x, label: X, unit: \"%\"}\n"
      "  - {name: launch.block_size, label: B}\n"
      "derived:\n  - {name: d, label: D, expr: \"x * launch.block_size\"}\n"
      "rules:\n  - name: R\n    when: d > 1\n    advice: >-\n      d is\n      {d}\n",
      "a.yaml");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->order, 5);
  EXPECT_EQ(s->counters(), (std::vector<std::string>{"x__y.sum"}));
  EXPECT_TRUE(s->metrics[1].field);
  EXPECT_EQ(s->metric("x"), &s->metrics[0]);
  EXPECT_EQ(s->rules[0].advice, "d is {d}");
  EXPECT_EQ(s->rules[0].severity, "warning");
}

}  // namespace
}  // namespace kreplay::report
