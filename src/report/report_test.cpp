// Pins convert (a database replayed through the writers gives their files byte for byte, NaN,
// out-of-order passes, a counter outside counter_names and two devices included) and the report
// model on the output tests' fixture records (src/output/test_records.hpp): per-kernel means,
// derived values, rules, baselines, per launch, and the database checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "output/test_records.hpp"
#include "output/test_util.hpp"
#include "output/writer.hpp"
#include "report/convert.hpp"
#include "report/database.hpp"
#include "report/model.hpp"
#include "report/render.hpp"
#include "report/sections.hpp"

namespace kreplay::report {
namespace {

using output::testing::read_file;
using output::testing::TempDir;

const char* kSuffixes[] = {"_counter_collection.csv", "_counter_collection_wide.csv",
                           "_kernel_trace.csv", "_results.json", "_trace.json"};

// Write all formats from the records, then convert the database and compare every file.
template <typename Play>
void expect_convert_matches(Play play) {
  TempDir dir;
  output::OutputConfig config;
  config.directory = dir / "direct";
  config.file_stem = "run";
  config.formats = {"sqlite", "csv", "json", "perfetto"};
  config.kernel_trace = true;
  auto writer = output::make_writer(config);
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  ASSERT_TRUE(play(**writer).ok());
  writer->reset();
  ConvertOptions o;
  o.database = dir / "direct/run_results.db";
  o.formats = {"csv", "json", "perfetto"};
  o.directory = dir / "converted";
  o.kernel_trace = true;
  auto r = convert_database(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->files.size(), 5u);
  EXPECT_TRUE(r->notes.empty());
  for (const char* suffix : kSuffixes) {
    std::string a = read_file(dir / (std::string("direct/run") + suffix));
    std::string b = read_file(dir / (std::string("converted/run") + suffix));
    EXPECT_FALSE(a.empty()) << suffix;
    EXPECT_EQ(a, b) << suffix;
  }
}

TEST(Convert, FixtureIsByteIdentical) {
  expect_convert_matches([](output::Writer& w) { return output::testing::play_fixture(w); });
}

TEST(Convert, PassesArrivingOutOfOrderAndNaN) {
  expect_convert_matches([](output::Writer& w) { return output::testing::play_repeated(w); });
  expect_convert_matches([](output::Writer& w) -> Status {
    output::RunInfo run = output::testing::fixture_run();
    run.counter_names = {"x"};
    RETURN_IF_ERROR(w.begin(run));
    output::CounterRecord c;
    c.dispatch_id = 1;
    c.name = "x";
    c.value = std::numeric_limits<double>::quiet_NaN();
    RETURN_IF_ERROR(w.counter(c));
    output::DispatchRecord d;
    d.dispatch_id = 1;
    d.outcome = "replayed";
    RETURN_IF_ERROR(w.dispatch(d));
    // a dispatch whose record never comes: written as incomplete at finish
    c.dispatch_id = 2;
    c.value = 3;
    RETURN_IF_ERROR(w.counter(c));
    return w.finish(output::testing::fixture_summary());
  });
}

TEST(Convert, RefusesWhatItCannotConvert) {
  TempDir dir;
  ConvertOptions o;
  o.database = dir / "missing.db";
  o.formats = {"csv"};
  auto r = convert_database(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no such file"), std::string::npos);
  o.formats = {"sqlite"};
  std::ofstream(dir / "empty.db") << "";
  o.database = dir / "empty.db";
  r = convert_database(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("the database is the sqlite output"), std::string::npos);
}

class Model : public ::testing::Test {
 protected:
  void SetUp() override {
    output::OutputConfig config;
    config.directory = dir_.path();
    config.file_stem = "run";
    config.formats = {"sqlite"};
    auto writer = output::make_writer(config);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE(output::testing::play_fixture(**writer).ok());
    writer->reset();
    std::filesystem::create_directories(dir_ / "sections");
    std::ofstream(dir_ / "sections/Cycles.yaml")
        << "name: Cycles\ntitle: Cycles and bytes\norder: 5\nmetrics:\n"
           "  - {name: sm__cycles_elapsed.sum, as: cycles, label: Cycles, unit: cycle}\n"
           "  - {name: dram__bytes_read.sum, as: bytes, label: Bytes, unit: byte}\n"
           "  - {name: launch.grid_size, label: Grid, unit: block}\n"
           "derived:\n  - {name: per_block, label: Cycles per block, expr: cycles / launch.grid_size}\n"
           "rules:\n  - {name: Many, when: cycles > 500, advice: \"{cycles} cycles\"}\n"
           "  - {name: Never, when: cycles < 0, advice: never}\n";
    auto catalog = Catalog::load({dir_ / "sections"});
    ASSERT_TRUE(catalog.ok()) << catalog.status().message();
    catalog_ = std::move(catalog).value();
    auto db = Database::open(dir_ / "run_results.db");
    ASSERT_TRUE(db.ok()) << db.status().message();
    db_ = std::move(db).value();
  }

  const Subject& subject(const Report& r, std::string_view kernel_prefix) {
    for (const auto& s : r.subjects) {
      if (s.kernel.rfind(kernel_prefix, 0) == 0) return s;
    }
    ADD_FAILURE() << "no subject " << kernel_prefix;
    return r.subjects.front();
  }

  TempDir dir_;
  Catalog catalog_;
  Database db_;
};

TEST_F(Model, DatabaseReadsLaunchesWithTheirFirstPassCounters) {
  EXPECT_TRUE(db_.has_seq);
  ASSERT_EQ(db_.launches.size(), 4u);
  const DbLaunch& first = db_.launches[0];
  EXPECT_EQ(first.kernel_name, "vecAdd(float const*, float const*, float*, int)");
  EXPECT_DOUBLE_EQ(first.duration_ns, (1500.0 + 1600.0 + 1400.0) / 3);
  ASSERT_EQ(first.counters.size(), 3u);
  for (const auto& [index, value] : first.counters) {
    if (db_.counter_names[index] == "sm__cycles_elapsed.sum") {
      EXPECT_EQ(value, 1000);  // pass 0
    }
  }
  EXPECT_EQ(db_.device(0, 2)->sm_count, 132u);
}

TEST_F(Model, PerKernelMeansDerivedValuesAndRules) {
  auto r = build_report(db_, nullptr, catalog_, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->shown.size(), 1u);  // every counter of Cycles is in the database
  ASSERT_EQ(r->subjects.size(), 3u);
  // by time: the template (100 us) first
  EXPECT_EQ(r->subjects[0].kernel, output::testing::kTemplateName);
  const Subject& vec = subject(*r, "vecAdd");
  EXPECT_EQ(vec.launches, 2u);
  const SectionResult& s = vec.sections.at(0);
  EXPECT_EQ(*s.get("cycles"), 1000);                 // only dispatch 1 has it
  EXPECT_EQ(*s.get("launch.grid_size"), 6144);       // (4096 + 8192) / 2
  EXPECT_DOUBLE_EQ(*s.get("per_block"), 1000.0 / 6144);
  ASSERT_EQ(s.rules.size(), 1u);
  EXPECT_EQ(s.rules[0].advice, "1000 cycles");
  const Subject& init = subject(*r, "initKernel");
  EXPECT_EQ(*init.sections[0].get("cycles"), 300);
  EXPECT_TRUE(init.sections[0].rules.empty());
  double shares = 0;
  for (const auto& x : r->subjects) shares += x.time_share_pct;
  EXPECT_NEAR(shares, 100, 1e-9);
}

TEST_F(Model, PerLaunchKernelFilterAndBaseline) {
  ReportOptions o;
  o.launch = 3;
  auto one = build_report(db_, nullptr, catalog_, o);
  ASSERT_TRUE(one.ok()) << one.status().message();
  ASSERT_EQ(one->subjects.size(), 1u);
  EXPECT_EQ(one->subjects[0].dispatch_id, 3u);
  EXPECT_FALSE(one->subjects[0].sections[0].get("cycles").has_value());
  EXPECT_TRUE(one->subjects[0].sections[0].rules.empty());  // unavailable: does not fire

  ReportOptions k;
  k.kernel = "vecAdd";
  auto base = build_report(db_, &db_, catalog_, k);
  ASSERT_TRUE(base.ok());
  ASSERT_EQ(base->subjects.size(), 1u);
  EXPECT_TRUE(base->subjects[0].has_baseline);
  for (const auto& v : base->subjects[0].sections[0].values) {
    EXPECT_EQ(v.value, v.baseline) << v.name;
    if (v.value && *v.value != 0) {
      EXPECT_EQ(*v.change_pct(), 0) << v.name;
    }
  }
  k.kernel = "regex:^init";
  EXPECT_EQ(build_report(db_, nullptr, catalog_, k)->subjects.size(), 1u);
  k.kernel = "nothing";
  auto none = build_report(db_, nullptr, catalog_, k);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("selects no kernel"), std::string::npos);
  o.launch = 99;
  EXPECT_FALSE(build_report(db_, nullptr, catalog_, o).ok());
}

TEST_F(Model, RenderedFormats) {
  auto r = build_report(db_, nullptr, catalog_, {});
  ASSERT_TRUE(r.ok());
  std::string text = render_text(*r, db_);
  EXPECT_NE(text.find("  Section: Cycles and bytes\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    WARNING  1000 cycles\n"), std::string::npos) << text;
  std::string csv = render_csv(*r);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "Kernel,Dispatch_Id,Launches,Section,Kind,Name,Label,Unit,Value,Baseline,Change_Pct,"
            "Severity,Advice");
  EXPECT_NE(csv.find(",Cycles,rule,Many,,,,,,warning,1000 cycles\n"), std::string::npos) << csv;
  auto json = nlohmann::json::parse(render_json(*r, db_));
  EXPECT_EQ(json["subjects"].size(), 3u);
  auto html = render_html(*r, db_);
  ASSERT_TRUE(html.ok());
  EXPECT_NE(html->find("data-chart=\"timeline\""), std::string::npos);
  EXPECT_EQ(html->find("hotspots"), std::string::npos);
}

// Write-bounded snapshots: each launch's bytes_changed and snapshot_mode, and the field
// launch.bytes_changed next to launch.bytes_snapshotted; a database written before the columns
// reads 0 and "".
TEST_F(Model, LaunchesCarryBytesChangedAndTheSnapshotMode) {
  ASSERT_EQ(db_.launches.size(), 4u);
  EXPECT_EQ(db_.launches[0].bytes_changed, 4194304u);
  EXPECT_EQ(db_.launches[0].snapshot_mode, "full");
  EXPECT_EQ(db_.launches[1].bytes_changed, 0u);
  EXPECT_EQ(db_.launches[1].snapshot_mode, "");
  EXPECT_EQ(db_.launches[3].bytes_changed, 1048576u);
  EXPECT_EQ(db_.launches[3].snapshot_mode, "write_set");
  const auto& fields = field_names();
  const auto at = [&](const char* name) {
    return std::find(fields.begin(), fields.end(), name) - fields.begin();
  };
  ASSERT_LT(at("launch.bytes_changed"), static_cast<std::ptrdiff_t>(fields.size()));
  EXPECT_EQ(at("launch.bytes_changed"), at("launch.bytes_snapshotted") + 1);
  std::filesystem::create_directories(dir_ / "snap");
  std::ofstream(dir_ / "snap/Snapshot.yaml")
      << "name: Snapshot\ntitle: Snapshot\nmetrics:\n"
         "  - {name: launch.bytes_snapshotted, as: saved, label: Saved, unit: byte}\n"
         "  - {name: launch.bytes_changed, as: changed, label: Changed, unit: byte}\n";
  auto catalog = Catalog::load({dir_ / "snap"});
  ASSERT_TRUE(catalog.ok()) << catalog.status().message();
  ReportOptions o;
  o.launch = 1;
  auto r = build_report(db_, nullptr, *catalog, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->subjects.size(), 1u);
  EXPECT_EQ(*r->subjects[0].sections.at(0).get("saved"), 8388864);
  EXPECT_EQ(*r->subjects[0].sections.at(0).get("changed"), 4194304);

  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "run_results.db").c_str(), &h), SQLITE_OK);
  for (const char* sql : {"ALTER TABLE dispatches DROP COLUMN bytes_changed",
                          "ALTER TABLE dispatches DROP COLUMN snapshot_mode"}) {
    EXPECT_EQ(sqlite3_exec(h, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sql;
  }
  sqlite3_close(h);
  auto old = Database::open(dir_ / "run_results.db");
  ASSERT_TRUE(old.ok()) << old.status().message();
  ASSERT_EQ(old->launches.size(), 4u);
  EXPECT_EQ(old->launches[0].bytes_snapshotted, 8388864u);
  EXPECT_EQ(old->launches[0].bytes_changed, 0u);
  EXPECT_EQ(old->launches[0].snapshot_mode, "");
}

TEST_F(Model, AnotherSchemaVersionIsRefusedWithTheVersionsItReads) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "run_results.db").c_str(), &h), SQLITE_OK);
  sqlite3_exec(h, "UPDATE metadata SET value = '99' WHERE key = 'schema_version'", nullptr,
               nullptr, nullptr);
  sqlite3_close(h);
  auto db = Database::open(dir_ / "run_results.db");
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.status().message().find("has results schema version 99, this kreplay reads "
                                       "versions 1 to"),
            std::string::npos)
      << db.status().message();
  ConvertOptions o;
  o.database = dir_ / "run_results.db";
  o.formats = {"csv"};
  EXPECT_FALSE(convert_database(o).ok());
}

TEST(Database, RefusesWhatIsNotAResultsDatabase) {
  TempDir dir;
  auto missing = Database::open(dir / "no.db");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no such file"), std::string::npos);
  std::ofstream(dir / "text.db") << "hello";
  EXPECT_FALSE(Database::open(dir / "text.db").ok());
}

}  // namespace
}  // namespace kreplay::report
