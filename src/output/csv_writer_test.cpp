// The CSV writer beyond the golden: quoting round-trips, the wide file's pick of repeated
// counters, headers with zero records, and the wide header rewrite for unlisted counters.
#include "output/csv_writer.hpp"

#include <gtest/gtest.h>

#include "output/test_records.hpp"
#include "output/test_util.hpp"
#include "output/text.hpp"

namespace kreplay::output {
namespace {

using testing::parse_csv;
using testing::read_file;
using testing::TempDir;

std::unique_ptr<Writer> csv_writer(const TempDir& dir, bool trace = true) {
  auto w = CsvWriter::create(dir / "l.csv", dir / "w.csv", trace ? dir / "t.csv" : "");
  EXPECT_TRUE(w.ok()) << w.status().message();
  return w.ok() ? std::unique_ptr<Writer>(std::move(w).value()) : nullptr;
}

/// Column @p name of every data record.
std::vector<std::string> column(const std::vector<std::vector<std::string>>& rows,
                                const std::string& name) {
  std::vector<std::string> out;
  auto it = std::find(rows.at(0).begin(), rows.at(0).end(), name);
  EXPECT_NE(it, rows.at(0).end()) << name;
  if (it == rows.at(0).end()) return out;
  size_t index = static_cast<size_t>(it - rows.at(0).begin());
  for (size_t i = 1; i < rows.size(); ++i) out.push_back(rows[i].at(index));
  return out;
}

TEST(CsvTest, FieldQuotingRoundTrips) {
  const std::vector<std::string> fields = {
      "",       "plain", "a,b",    "say \"hi\"",           "\"",           ",", "line\nbreak",
      "cr\rlf", " lead", "trail ", testing::kTemplateName, "void k<'c'>()"};
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) line += ',';
    line += csv_field(fields[i]);
  }
  line += "\n";
  auto rows = parse_csv(line + line);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], fields);
  EXPECT_EQ(rows[1], fields);
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("a\"b"), "\"a\"\"b\"");
}

TEST(CsvTest, TemplatedKernelNamesSurviveEveryFile) {
  TempDir dir;
  auto w = csv_writer(dir);
  ASSERT_TRUE(w);
  Status s = testing::play_fixture(*w);
  ASSERT_TRUE(s.ok()) << s.message();
  for (const char* file : {"l.csv", "w.csv", "t.csv"}) {
    auto rows = parse_csv(read_file(dir / file));
    ASSERT_GT(rows.size(), 1u) << file;
    for (const auto& row : rows) EXPECT_EQ(row.size(), rows[0].size()) << file;
    auto names = column(rows, "Kernel_Name");
    EXPECT_NE(std::find(names.begin(), names.end(), testing::kTemplateName), names.end()) << file;
  }
  // Long file: one row per counter value per pass, Replay_Pass kept.
  auto rows = parse_csv(read_file(dir / "l.csv"));
  EXPECT_EQ(rows.size(), 11u);
  EXPECT_EQ(rows[0].size(), CsvWriter::kLongColumns.size());
  EXPECT_EQ(column(rows, "Replay_Pass"),
            (std::vector<std::string>{"0", "0", "1", "1", "2", "0", "0", "0", "1", "1"}));
  // Kernel trace: one row per executed pass.
  EXPECT_EQ(parse_csv(read_file(dir / "t.csv")).size(), 8u);
}

TEST(CsvTest, WideRowShowsTheLowestPassThatCollectedACounter) {
  TempDir dir;
  auto w = csv_writer(dir);
  ASSERT_TRUE(w);
  Status s = testing::play_repeated(*w);
  ASSERT_TRUE(s.ok()) << s.message();
  auto rows = parse_csv(read_file(dir / "w.csv"));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(column(rows, "A"), (std::vector<std::string>{"11", "111"}));
  EXPECT_EQ(column(rows, "B"), (std::vector<std::string>{"22", "122"}));
  EXPECT_EQ(column(rows, "C"), (std::vector<std::string>{"5", "105"}));
  EXPECT_EQ(column(rows, "Duration_Ns"), (std::vector<std::string>{"11", "11"}));
  // The long file keeps every pass.
  auto long_rows = parse_csv(read_file(dir / "l.csv"));
  EXPECT_EQ(long_rows.size(), 11u);
}

TEST(CsvTest, HeadersAreWrittenWithZeroRecords) {
  TempDir dir;
  {
    auto w = csv_writer(dir);
    ASSERT_TRUE(w);
    ASSERT_TRUE(w->begin(testing::fixture_run()).ok());
    ASSERT_TRUE(w->finish(RunSummary{}).ok());
  }
  auto wide = parse_csv(read_file(dir / "w.csv"));
  ASSERT_EQ(wide.size(), 1u);
  EXPECT_EQ(wide[0].size(), CsvWriter::kWideColumns.size() + 3);  // + the run's counters
  EXPECT_EQ(wide[0].back(), "smsp__inst_executed.sum");
  EXPECT_EQ(parse_csv(read_file(dir / "l.csv")).size(), 1u);
  EXPECT_EQ(parse_csv(read_file(dir / "t.csv")).size(), 1u);

  // Even when begin() never came.
  TempDir other;
  {
    auto w = csv_writer(other, false);
    ASSERT_TRUE(w);
    ASSERT_TRUE(w->finish(RunSummary{}).ok());
  }
  EXPECT_EQ(parse_csv(read_file(other / "l.csv")).at(0).size(), CsvWriter::kLongColumns.size());
  EXPECT_FALSE(std::filesystem::exists(other / "t.csv"));
}

TEST(CsvTest, UnlistedCounterGetsAWideColumnAtFinish) {
  TempDir dir;
  auto w = csv_writer(dir);
  ASSERT_TRUE(w);
  ASSERT_TRUE(testing::play_fixture(*w).ok());
  auto rows = parse_csv(read_file(dir / "w.csv"));
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0].back(), "l1tex__t_bytes.sum");
  EXPECT_EQ(column(rows, "l1tex__t_bytes.sum"), (std::vector<std::string>{"", "", "", "65536"}));
  EXPECT_FALSE(std::filesystem::exists(dir / "w.csv.tmp"));
}

TEST(CsvTest, DispatchesWithoutADispatchRecordAreWrittenAtFinish) {
  TempDir dir;
  auto w = csv_writer(dir);
  ASSERT_TRUE(w);
  ASSERT_TRUE(w->begin(testing::fixture_run()).ok());
  CounterRecord c;
  c.dispatch_id = 8;
  c.kernel_id = 1;
  c.name = "sm__cycles_elapsed.sum";
  c.value = 3;
  ASSERT_TRUE(w->counter(c).ok());
  PassRecord p;
  p.dispatch_id = 8;
  p.start_ns = 5;
  p.end_ns = 9;
  ASSERT_TRUE(w->pass(p).ok());
  ASSERT_TRUE(w->finish(RunSummary{}).ok());
  auto rows = parse_csv(read_file(dir / "w.csv"));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(column(rows, "Outcome"), (std::vector<std::string>{"incomplete"}));
  EXPECT_EQ(column(rows, "sm__cycles_elapsed.sum"), (std::vector<std::string>{"3"}));
}

}  // namespace
}  // namespace kreplay::output
