// make_writer: format names, paths, clear errors, and the multiplexer's error isolation.
#include "output/writer.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "output/summary_writer.hpp"
#include "output/test_records.hpp"
#include "output/test_util.hpp"

namespace kreplay::output {
namespace {

using testing::TempDir;

TEST(WriterTest, UnwritableDirectoryIsOneClearLine) {
  TempDir dir;
  // A regular file where a directory should be: fails for root too.
  std::ofstream(dir / "file") << "x";
  OutputConfig c;
  c.directory = dir / "file/out";
  c.file_stem = "host/1";
  for (const char* format : {"sqlite", "csv", "json", "perfetto"}) {
    c.formats = {format};
    auto w = make_writer(c);
    ASSERT_FALSE(w.ok()) << format;
    const std::string& m = w.status().message();
    EXPECT_NE(m.find(dir / "file/out"), std::string::npos) << m;
    EXPECT_NE(m.find("writable"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

TEST(WriterTest, UnknownFormatNamesTheFormatAndTheChoices) {
  TempDir dir;
  OutputConfig c;
  c.directory = dir.path();
  c.file_stem = "x";
  c.formats = {"csv", "sqlit"};
  auto w = make_writer(c);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(w.status().message(),
            "unknown output format 'sqlit' (did you mean 'sqlite'?); choose from sqlite, csv, "
            "json or perfetto");
  c.formats = {"xml"};
  EXPECT_EQ(make_writer(c).status().message(),
            "unknown output format 'xml'; choose from sqlite, csv, json or perfetto");
}

TEST(WriterTest, EmptyStemIsRejected) {
  OutputConfig c;
  c.formats = {"csv"};
  auto w = make_writer(c);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
}

TEST(WriterTest, OutputPathJoinsDirectoryAndStem) {
  OutputConfig c;
  c.directory = "/out";
  c.file_stem = "host/12";
  EXPECT_EQ(output_path(c, "_results.db"), "/out/host/12_results.db");
  c.directory = "";
  EXPECT_EQ(output_path(c, "_trace.json"), "host/12_trace.json");
}

TEST(WriterTest, NoFormatsAndNoSummaryWritesNothing) {
  TempDir dir;
  OutputConfig c;
  c.directory = dir / "empty";
  c.file_stem = "x";
  auto w = make_writer(c);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_TRUE((*w)->output_files().empty());
  EXPECT_TRUE(testing::play_fixture(**w).ok());
}

TEST(WriterTest, AFailingFormatIsDroppedAndTheOthersGoOn) {
  TempDir dir;
  OutputConfig c;
  c.directory = dir.path();
  c.file_stem = "f";
  c.formats = {"csv", "perfetto"};
  // The trace goes to a full disk.
  std::filesystem::create_symlink("/dev/full", dir / "f_trace.json");
  auto w = make_writer(c);
  ASSERT_TRUE(w.ok()) << w.status().message();
  Status s = testing::play_fixture(**w, /*finish=*/false);  // the trace fails on the way
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("perfetto output stopped"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("No space left on device"), std::string::npos) << s.message();
  // The CSV writer went on and finishes cleanly; the failed format is not listed.
  EXPECT_TRUE((*w)->finish(testing::fixture_summary()).ok());
  EXPECT_EQ((*w)->output_files(),
            (std::vector<std::string>{dir / "f_counter_collection.csv",
                                      dir / "f_counter_collection_wide.csv"}));
  EXPECT_EQ(testing::parse_csv(testing::read_file(dir / "f_counter_collection.csv")).size(), 11u);
}

TEST(WriterTest, AnUnfinishedTraceStaysCompleteWhenTheWriterGoesAway) {
  TempDir dir;
  OutputConfig c;
  c.directory = dir.path();
  c.file_stem = "u";
  c.formats = {"perfetto"};
  {
    auto w = make_writer(c);
    ASSERT_TRUE(w.ok()) << w.status().message();
    ASSERT_TRUE(testing::play_fixture(**w, /*finish=*/false).ok());  // ends with flush()
    AllocationRecord late;
    late.agent_id = 1;
    late.operation = "alloc";
    late.kind = "device";
    late.address = 0x1000;
    late.size = 64;
    late.timestamp_ns = 2000000000;
    ASSERT_TRUE((*w)->allocation(late).ok());
  }
  auto doc = nlohmann::json::parse(testing::read_file(dir / "u_trace.json"), nullptr, false);
  ASSERT_FALSE(doc.is_discarded());
  EXPECT_EQ(doc["traceEvents"].back()["ts"], 2000000.0);
}

TEST(WriterTest, CallsAfterFinishFail) {
  TempDir dir;
  for (const char* format : {"sqlite", "csv", "json", "perfetto"}) {
    OutputConfig c;
    c.directory = dir.path();
    c.file_stem = format;
    c.formats = {format};
    auto w = make_writer(c);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->begin(testing::fixture_run()).ok()) << format;
    ASSERT_TRUE((*w)->finish(RunSummary{}).ok()) << format;
    EXPECT_FALSE((*w)->finish(RunSummary{}).ok()) << format;
  }
}

// The summary's trust lines: a count (not a duration or a cycle count) that differs between the
// passes of one launch is named; equal counts and differing cycles are not; a launch whose passes
// diverged is counted.
TEST(WriterTest, SummaryNamesCountsThatDifferBetweenPassesAndDivergedLaunches) {
  TempDir dir;
  const std::string path = dir / "summary.txt";
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  {
    SummaryWriter w(f);
    ASSERT_TRUE(w.begin(testing::fixture_run()).ok());
    KernelRecord k;
    k.kernel_id = 5;
    k.demangled_name = "scatter(int*)";
    ASSERT_TRUE(w.kernel(k).ok());
    auto counter = [&](uint64_t pass, const char* name, double value) {
      CounterRecord c;
      c.dispatch_id = 9;
      c.replay_pass = pass;
      c.kernel_id = 5;
      c.name = name;
      c.value = value;
      ASSERT_TRUE(w.counter(c).ok());
    };
    counter(0, "smsp__inst_executed.sum", 1000);
    counter(1, "smsp__inst_executed.sum", 1000);  // equal: fine
    counter(0, "dram__bytes_read.sum", 4000);
    counter(1, "dram__bytes_read.sum", 4100);  // a count that differs
    counter(0, "sm__cycles_elapsed.max", 50);
    counter(1, "sm__cycles_elapsed.max", 70);  // cycles may differ
    for (uint64_t p = 0; p < 2; ++p) {
      PassRecord r;
      r.dispatch_id = 9;
      r.replay_pass = p;
      r.start_ns = 1000 * (p + 1);
      r.end_ns = r.start_ns + 500;  // equal durations: not uneven
      ASSERT_TRUE(w.pass(r).ok());
    }
    DispatchRecord d;
    d.dispatch_id = 9;
    d.kernel_id = 5;
    d.passes_executed = 2;
    d.divergence_checked = true;
    d.diverged_passes = 1;
    ASSERT_TRUE(w.dispatch(d).ok());
    ASSERT_TRUE(w.finish(testing::fixture_summary()).ok());
  }
  std::fclose(f);
  const std::string out = testing::read_file(path);
  EXPECT_NE(out.find("Counts that differ between the passes of one launch (a counter in several "
                     "groups): dram__bytes_read.sum in scatter(int*) (1 launch(es), up to 2.4%)"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("smsp__inst_executed.sum in"), std::string::npos) << out;
  EXPECT_EQ(out.find("sm__cycles_elapsed.max in"), std::string::npos) << out;
  EXPECT_EQ(out.find("Uneven passes"), std::string::npos) << out;
  EXPECT_NE(out.find("Diverged: 1 launch(es) whose passes left different memory"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("  0.0%  "), std::string::npos) << out;  // the Spread column
}

// The snapshots line (summary and exit tally alike): totals of bytes saved and found changed,
// windows per mode, and the run's peak storage; nothing when nothing was saved.
TEST(WriterTest, SnapshotTallyLineTotalsWindowsAndStorage) {
  RunSummary none;
  SnapshotTally t;
  EXPECT_EQ(t.line(none), "");
  t.add(0, 0, "");  // a declined window saved nothing
  EXPECT_EQ(t.line(none), "");
  t.add(1073741824, 536870912, "write_set");
  t.add(209715200, 100663296, "full");
  t.add(1024, 0, "write_set");
  EXPECT_EQ(t.bytes_saved, 1283458048u);
  EXPECT_EQ(t.bytes_changed, 637534208u);
  EXPECT_EQ(t.line(none), "1.2 GiB saved for 608.0 MiB changed (2 write-set, 1 full)");
  RunSummary s;
  s.snapshot_device_peak_bytes = 268435456;
  EXPECT_EQ(t.line(s),
            "1.2 GiB saved for 608.0 MiB changed (2 write-set, 1 full); peak storage 256.0 MiB "
            "device, 0 B host");
  s.snapshot_storage_releases = 2;
  EXPECT_NE(t.line(s).find("0 B host, given back to the application 2 times"), std::string::npos)
      << t.line(s);
  s.snapshot_device_peak_bytes = 0;
  EXPECT_NE(t.line(s).find("; storage given back to the application 2 times"), std::string::npos)
      << t.line(s);
  // Records of an SDK that did not name the mode: bytes only.
  SnapshotTally old;
  old.add(4096, 0, "");
  EXPECT_EQ(old.line(none), "4.0 KiB saved for 0 B changed");
}

// The summary prints the snapshots line from the dispatch records (before the totals), and none
// for a run that saved nothing.
TEST(WriterTest, SummarySnapshotsLineComesFromTheDispatchRecords) {
  auto render = [](bool saved) {
    SummaryWriter w(nullptr);
    EXPECT_TRUE(w.begin(testing::fixture_run()).ok());
    DispatchRecord d;
    d.dispatch_id = 1;
    d.kernel_id = 1;
    d.passes_executed = 2;
    if (saved) {
      d.bytes_snapshotted = 2097152;
      d.bytes_changed = 65536;
      d.snapshot_mode = "write_set";
    }
    EXPECT_TRUE(w.dispatch(d).ok());
    RunSummary s;
    s.snapshot_device_peak_bytes = saved ? 2097152 : 0;
    return w.render(s);
  };
  const std::string with = render(true);
  const size_t line = with.find(
      "==KREPLAY== Snapshots: 2.0 MiB saved for 64.0 KiB changed "
      "(1 write-set, 0 full); peak storage 2.0 MiB device, 0 B host\n");
  EXPECT_NE(line, std::string::npos) << with;
  EXPECT_LT(line, with.find("==KREPLAY== Totals:")) << with;
  EXPECT_EQ(render(false).find("Snapshots:"), std::string::npos) << render(false);
}

}  // namespace
}  // namespace kreplay::output
