// Golden files: the fixture (test_records.hpp) written in every format must match
// src/output/testdata/ byte for byte. Pins the file names, columns, field names, quoting and
// number formats users read. KREPLAY_UPDATE_GOLDEN=1 regenerates.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "output/sqlite_writer.hpp"
#include "output/test_records.hpp"
#include "output/test_util.hpp"
#include "output/writer.hpp"

namespace kreplay::output {
namespace {

using testing::expect_golden;
using testing::play_fixture;
using testing::read_file;
using testing::TempDir;

OutputConfig config_for(const TempDir& dir, std::vector<std::string> formats) {
  OutputConfig c;
  c.directory = dir.path();
  c.file_stem = "node01/4242";
  c.formats = std::move(formats);
  return c;
}

std::unique_ptr<Writer> make(const OutputConfig& config) {
  auto w = make_writer(config);
  EXPECT_TRUE(w.ok()) << w.status().message();
  return w.ok() ? std::move(w).value() : nullptr;
}

TEST(GoldenTest, Sqlite) {
  TempDir dir;
  auto w = make(config_for(dir, {"sqlite"}));
  ASSERT_TRUE(w);
  Status s = play_fixture(*w);
  ASSERT_TRUE(s.ok()) << s.message();
  // finish() leaves one file: no -wal/-shm next to it.
  EXPECT_FALSE(std::filesystem::exists(dir / "node01/4242_results.db-wal"));
  auto dump = dump_sqlite(dir / "node01/4242_results.db");
  ASSERT_TRUE(dump.ok()) << dump.status().message();
  expect_golden("results.db.txt", *dump);
}

TEST(GoldenTest, Csv) {
  TempDir dir;
  OutputConfig c = config_for(dir, {"csv"});
  c.kernel_trace = true;
  auto w = make(c);
  ASSERT_TRUE(w);
  Status s = play_fixture(*w);
  ASSERT_TRUE(s.ok()) << s.message();
  expect_golden("counter_collection.csv", read_file(dir / "node01/4242_counter_collection.csv"));
  expect_golden("counter_collection_wide.csv",
                read_file(dir / "node01/4242_counter_collection_wide.csv"));
  expect_golden("kernel_trace.csv", read_file(dir / "node01/4242_kernel_trace.csv"));
}

TEST(GoldenTest, Json) {
  TempDir dir;
  auto w = make(config_for(dir, {"json"}));
  ASSERT_TRUE(w);
  Status s = play_fixture(*w);
  ASSERT_TRUE(s.ok()) << s.message();
  std::string text = read_file(dir / "node01/4242_results.json");
  expect_golden("results.json", text);
  // The part files are spliced in and removed.
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().string().find(".part"), std::string::npos) << entry.path();
  }
  // One valid document; every pass-level record names its pass.
  auto doc = nlohmann::json::parse(text);
  EXPECT_EQ(doc["schema_version"], kSchemaVersion);
  EXPECT_EQ(doc["counters"].size(), 10u);
  EXPECT_EQ(doc["passes"].size(), 7u);
  for (const char* section : {"counters", "passes"}) {
    for (const auto& record : doc[section]) EXPECT_TRUE(record.contains("replay_pass")) << record;
  }
  EXPECT_EQ(doc["kernels"][1]["demangled_name"], testing::kTemplateName);
}

TEST(GoldenTest, Perfetto) {
  TempDir dir;
  auto w = make(config_for(dir, {"perfetto"}));
  ASSERT_TRUE(w);
  Status s = play_fixture(*w);
  ASSERT_TRUE(s.ok()) << s.message();
  std::string text = read_file(dir / "node01/4242_trace.json");
  expect_golden("trace.json", text);
  auto doc = nlohmann::json::parse(text);
  EXPECT_EQ(doc["otherData"]["schema_version"], kSchemaVersion);
  int kernel_slices = 0, replay_slices = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "kernel") {
      ++kernel_slices;
      EXPECT_TRUE(e["args"].contains("replay_pass"));
    }
    if (e["ph"] == "X" && e["cat"] == "replay") ++replay_slices;
  }
  EXPECT_EQ(kernel_slices, 7);  // one per executed pass
  EXPECT_EQ(replay_slices, 5);  // 2 snapshots, 3 restores
}

TEST(GoldenTest, PerfettoGzipHoldsTheSameTrace) {
  TempDir dir;
  OutputConfig c = config_for(dir, {"perfetto"});
  c.gzip_trace = true;
  auto w = make(c);
  ASSERT_TRUE(w);
  Status s = play_fixture(*w);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_FALSE(std::filesystem::exists(dir / "node01/4242_trace.json"));
  std::string text = testing::read_gzip(dir / "node01/4242_trace.json.gz");
  EXPECT_EQ(text, read_file(std::string(KREPLAY_OUTPUT_TESTDATA) + "/trace.json"));
}

TEST(GoldenTest, Summary) {
  TempDir dir;
  FILE* stream = std::tmpfile();
  ASSERT_NE(stream, nullptr);
  OutputConfig c = config_for(dir, {});
  c.summary = true;
  c.summary_stream = stream;
  auto w = make(c);
  ASSERT_TRUE(w);
  Status s = play_fixture(*w);
  ASSERT_TRUE(s.ok()) << s.message();
  std::rewind(stream);
  std::string text;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, stream)) > 0) text.append(buffer, n);
  std::fclose(stream);
  expect_golden("summary.txt", text);
}

TEST(GoldenTest, AllFormatsTogetherListTheirFiles) {
  TempDir dir;
  OutputConfig c = config_for(dir, {"sqlite", "CSV", "json,perfetto"});
  auto w = make(c);
  ASSERT_TRUE(w);
  const std::string stem = dir / "node01/4242";
  std::vector<std::string> expected = {stem + "_results.db", stem + "_counter_collection.csv",
                                       stem + "_counter_collection_wide.csv",
                                       stem + "_results.json", stem + "_trace.json"};
  EXPECT_EQ(w->output_files(), expected);
  Status s = play_fixture(*w);
  ASSERT_TRUE(s.ok()) << s.message();
  // The same bytes as each format alone.
  EXPECT_EQ(read_file(stem + "_trace.json"),
            read_file(std::string(KREPLAY_OUTPUT_TESTDATA) + "/trace.json"));
  EXPECT_EQ(read_file(stem + "_results.json"),
            read_file(std::string(KREPLAY_OUTPUT_TESTDATA) + "/results.json"));
}

}  // namespace
}  // namespace kreplay::output
