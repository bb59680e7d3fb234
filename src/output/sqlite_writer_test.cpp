// The SQLite writer beyond the golden: which pass a one-row-per-dispatch view shows, keys that
// keep every pass, durability of flush() across a kill, and merge_sqlite for application replay.
#include "output/sqlite_writer.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "output/test_records.hpp"
#include "output/test_util.hpp"

namespace kreplay::output {
namespace {

using testing::play_repeated;
using testing::TempDir;

/// Rows of @p sql as text ("NULL" for NULL), columns joined by '|'.
std::vector<std::string> query(const std::string& path, const std::string& sql) {
  std::vector<std::string> rows;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "open " << path << ": " << sqlite3_errmsg(db);
    sqlite3_close(db);
    return rows;
  }
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
    sqlite3_close(db);
    return rows;
  }
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    std::string row;
    for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
      const unsigned char* text = sqlite3_column_text(stmt, i);
      if (i > 0) row += '|';
      row += text != nullptr ? reinterpret_cast<const char*>(text) : "NULL";
    }
    rows.push_back(row);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return rows;
}

std::unique_ptr<Writer> sqlite_writer(const std::string& path) {
  auto w = SqliteWriter::create(path);
  EXPECT_TRUE(w.ok()) << w.status().message();
  return w.ok() ? std::unique_ptr<Writer>(std::move(w).value()) : nullptr;
}

TEST(SqliteWriterTest, ViewsShowTheLowestPassThatCollectedACounter) {
  TempDir dir;
  const std::string db = dir / "r_results.db";
  auto w = sqlite_writer(db);
  ASSERT_TRUE(w);
  Status s = play_repeated(*w);
  ASSERT_TRUE(s.ok()) << s.message();
  // A: passes 1 and 2 (pass 1 wins even though pass 2 arrived first); B: pass 2 only;
  // C: passes 0 and 1.
  EXPECT_EQ(query(db,
                  "SELECT dispatch_id, A, B, C, duration_ns FROM dispatch_counters "
                  "ORDER BY dispatch_id"),
            (std::vector<std::string>{"1|11.0|22.0|5.0|11.0", "2|111.0|122.0|105.0|11.0"}));
  // Every pass keeps its row: nothing summed, nothing dropped.
  EXPECT_EQ(query(db,
                  "SELECT replay_pass, value FROM counters WHERE dispatch_id = 1 AND "
                  "name = 'A' ORDER BY replay_pass"),
            (std::vector<std::string>{"1|11.0", "2|12.0"}));
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM counters"), (std::vector<std::string>{"10"}));
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM passes"), (std::vector<std::string>{"6"}));
  EXPECT_EQ(query(db,
                  "SELECT kernel_name, launches, passes, total_ns, avg_ns, A, B, C "
                  "FROM kernel_summary"),
            (std::vector<std::string>{"k()|2|6|22.0|11.0|61.0|72.0|55.0"}));
  EXPECT_EQ(query(db, "SELECT value FROM metadata WHERE key = 'schema_version'"),
            (std::vector<std::string>{std::to_string(kSchemaVersion)}));
}

TEST(SqliteWriterTest, DuplicateCounterKeyIsAnErrorNamingTheRecord) {
  TempDir dir;
  auto w = sqlite_writer(dir / "d_results.db");
  ASSERT_TRUE(w);
  ASSERT_TRUE(w->begin(testing::fixture_run()).ok());
  CounterRecord c;
  c.dispatch_id = 5;
  c.replay_pass = 1;
  c.name = "X";
  ASSERT_TRUE(w->counter(c).ok());
  c.replay_pass = 2;
  ASSERT_TRUE(w->counter(c).ok());  // same counter, another pass: a new row
  Status dup = w->counter(c);
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.message().find("counter 'X' of dispatch 5 pass 2"), std::string::npos)
      << dup.message();
  EXPECT_NE(dup.message().find("UNIQUE"), std::string::npos) << dup.message();
}

TEST(SqliteWriterTest, FlushMakesRowsVisibleToAnotherConnection) {
  TempDir dir;
  const std::string db = dir / "f_results.db";
  auto w = sqlite_writer(db);
  ASSERT_TRUE(w);
  ASSERT_TRUE(w->begin(testing::fixture_run()).ok());
  PassRecord p;
  p.dispatch_id = 1;
  p.end_ns = 10;
  ASSERT_TRUE(w->pass(p).ok());
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM passes"), (std::vector<std::string>{"0"}));
  ASSERT_TRUE(w->flush().ok());
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM passes"), (std::vector<std::string>{"1"}));
  ASSERT_TRUE(w->finish(testing::fixture_summary()).ok());
  EXPECT_FALSE(w->flush().ok());  // the writer is done
}

TEST(SqliteWriterTest, CommitsEveryNRecordsWithoutFlush) {
  TempDir dir;
  const std::string db = dir / "n_results.db";
  auto w = sqlite_writer(db);
  ASSERT_TRUE(w);
  ASSERT_TRUE(w->begin(testing::fixture_run()).ok());
  for (uint64_t i = 0; i < SqliteWriter::kCommitEvery + 10; ++i) {
    AllocationRecord a;
    a.operation = "alloc";
    a.kind = "device";
    a.address = i;
    ASSERT_TRUE(w->allocation(a).ok());
  }
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM allocations"),
            (std::vector<std::string>{std::to_string(SqliteWriter::kCommitEvery)}));
}

TEST(SqliteWriterTest, KilledAfterFlushLeavesReadableOutputs) {
  TempDir dir;
  OutputConfig c;
  c.directory = dir.path();
  c.file_stem = "k/1";
  c.formats = {"sqlite", "csv", "perfetto"};
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto w = make_writer(c);
    if (!w.ok()) _exit(2);
    // play_fixture ends with flush() when it does not finish.
    if (!testing::play_fixture(**w, /*finish=*/false).ok()) _exit(3);
    raise(SIGKILL);
    _exit(4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exit " << WEXITSTATUS(status);
  ASSERT_EQ(WTERMSIG(status), SIGKILL);

  const std::string db = dir / "k/1_results.db";
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM dispatches"), (std::vector<std::string>{"4"}));
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM counters"), (std::vector<std::string>{"10"}));
  EXPECT_EQ(query(db, "SELECT end_ns FROM run"), (std::vector<std::string>{"NULL"}));
  // flush() refreshed the views for the counter that was not in the run's list.
  EXPECT_EQ(query(db,
                  "SELECT dispatch_id, \"l1tex__t_bytes.sum\" FROM dispatch_counters "
                  "WHERE dispatch_id = 4"),
            (std::vector<std::string>{"4|65536.0"}));

  // The uncompressed trace is a complete document up to the flush.
  auto trace = nlohmann::json::parse(testing::read_file(dir / "k/1_trace.json"), nullptr, false);
  ASSERT_FALSE(trace.is_discarded());
  EXPECT_GT(trace["traceEvents"].size(), 7u);
  // CSV rows are there.
  auto rows = testing::parse_csv(testing::read_file(dir / "k/1_counter_collection.csv"));
  EXPECT_EQ(rows.size(), 11u);
}

// Application replay: two runs of the app, each collecting a group, each writing its database.
TEST(SqliteWriterTest, MergeKeepsEveryAppPass) {
  TempDir dir;
  const std::string p1 = dir / "pass_1/h/1_results.db";
  const std::string p2 = dir / "pass_2/h/1_results.db";
  {
    auto w = sqlite_writer(p1);
    ASSERT_TRUE(w);
    ASSERT_TRUE(play_repeated(*w, 1, {"A", "B"}).ok());
  }
  {
    auto w = sqlite_writer(p2);
    ASSERT_TRUE(w);
    ASSERT_TRUE(play_repeated(*w, 2, {"C"}).ok());
  }
  const std::string merged = dir / "h/1_results.db";
  Status s = merge_sqlite({p1, p2}, merged);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(query(merged, "SELECT app_pass, counter_names FROM run ORDER BY app_pass"),
            (std::vector<std::string>{"1|[\"A\",\"B\"]", "2|[\"C\"]"}));
  EXPECT_EQ(query(merged, "SELECT app_pass, COUNT(*) FROM dispatches GROUP BY app_pass"),
            (std::vector<std::string>{"1|2", "2|2"}));
  EXPECT_EQ(query(merged, "SELECT app_pass, COUNT(*) FROM passes GROUP BY app_pass"),
            (std::vector<std::string>{"1|6", "2|6"}));
  EXPECT_EQ(query(merged, "SELECT app_pass, name, COUNT(*) FROM counters GROUP BY app_pass, name"),
            (std::vector<std::string>{"1|A|4", "1|B|2", "2|C|4"}));
  EXPECT_EQ(query(merged,
                  "SELECT app_pass, dispatch_id, A, B, C FROM dispatch_counters "
                  "ORDER BY app_pass, dispatch_id"),
            (std::vector<std::string>{"1|1|11.0|22.0|NULL", "1|2|111.0|122.0|NULL",
                                      "2|1|NULL|NULL|5.0", "2|2|NULL|NULL|105.0"}));
  EXPECT_EQ(query(merged, "SELECT app_pass, launches, A, C FROM kernel_summary ORDER BY app_pass"),
            (std::vector<std::string>{"1|2|61.0|NULL", "2|2|NULL|55.0"}));
  EXPECT_EQ(query(merged, "SELECT value FROM metadata WHERE key = 'merged_from'"),
            (std::vector<std::string>{nlohmann::json({p1, p2}).dump()}));
}

// The write-bounded snapshot columns (dispatches.bytes_changed and snapshot_mode, the run's
// snapshot storage) came without a version change: a database written before them merges with
// one that has them, its rows read the columns' defaults.
TEST(SqliteWriterTest, MergeTakesDatabasesWrittenBeforeTheSnapshotColumns) {
  TempDir dir;
  const std::string p1 = dir / "pass_1/h/1_results.db";
  const std::string p2 = dir / "pass_2/h/1_results.db";
  {
    auto w = sqlite_writer(p1);
    ASSERT_TRUE(w);
    ASSERT_TRUE(play_repeated(*w, 1, {"A"}).ok());
  }
  {
    auto w = sqlite_writer(p2);
    ASSERT_TRUE(w);
    ASSERT_TRUE(play_repeated(*w, 2, {"C"}).ok());
  }
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(p1.c_str(), &db), SQLITE_OK);
    for (const char* sql :
         {"ALTER TABLE dispatches DROP COLUMN bytes_changed",
          "ALTER TABLE dispatches DROP COLUMN snapshot_mode",
          // (SQLite cannot drop the run table's last column, which a comment follows.)
          "ALTER TABLE run RENAME TO run_new",
          "CREATE TABLE run AS SELECT app_pass, app_pass_count, kreplay_version, command, "
          "hostname, pid, replay_mode, counter_names, environment, options, start_ns, "
          "start_unix_ns, end_ns, exit_code, launches, replayed, declined, not_selected, passes, "
          "declined_by_reason, counter_passes_lost, rank, local_rank, devices_used FROM run_new",
          "DROP TABLE run_new", "UPDATE dispatches SET bytes_snapshotted = 4096"}) {
      char* error = nullptr;
      EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, &error), SQLITE_OK) << sql << ": " << error;
      sqlite3_free(error);
    }
    sqlite3_close(db);
  }
  const std::string merged = dir / "h/1_results.db";
  Status s = merge_sqlite({p1, p2}, merged);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(
      query(merged,
            "SELECT app_pass, dispatch_id, bytes_snapshotted, bytes_changed, "
            "quote(snapshot_mode) FROM dispatches ORDER BY app_pass, dispatch_id"),
      (std::vector<std::string>{"1|1|4096|0|''", "1|2|4096|0|''", "2|1|0|0|''", "2|2|0|0|''"}));
  // fixture_summary's storage for the run that has the columns, NULL for the other.
  EXPECT_EQ(query(merged,
                  "SELECT app_pass, snapshot_device_peak_bytes, snapshot_host_peak_bytes, "
                  "snapshot_storage_releases FROM run ORDER BY app_pass"),
            (std::vector<std::string>{"1|NULL|NULL|NULL", "2|8388864|1048576|1"}));
}

TEST(SqliteWriterTest, MergeRefusesTheSameAppPassTwice) {
  TempDir dir;
  const std::string p1 = dir / "a_results.db";
  const std::string p1b = dir / "b_results.db";
  for (const auto& path : {p1, p1b}) {
    auto w = sqlite_writer(path);
    ASSERT_TRUE(w);
    ASSERT_TRUE(play_repeated(*w, 1, {"A"}).ok());
  }
  const std::string merged = dir / "m_results.db";
  Status s = merge_sqlite({p1, p1b}, merged);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(s.message().find("app_pass 1"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(p1b), std::string::npos) << s.message();
  EXPECT_FALSE(std::filesystem::exists(merged));

  Status missing = merge_sqlite({dir / "nope.db"}, merged);
  EXPECT_EQ(missing.code(), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(missing.message().find("nope.db"), std::string::npos);
  EXPECT_FALSE(merge_sqlite({}, merged).ok());
  EXPECT_FALSE(merge_sqlite({p1}, p1).ok());  // into itself

  // A file that is not a results database.
  const std::string junk = dir / "junk.db";
  std::ofstream(junk) << "not sqlite";
  Status bad = merge_sqlite({junk}, merged);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("junk.db"), std::string::npos) << bad.message();
}

TEST(SqliteWriterTest, CounterViewSqlQuotesNames) {
  // Quotes in a counter name must not break the view.
  TempDir dir;
  const std::string db = dir / "q_results.db";
  auto w = sqlite_writer(db);
  ASSERT_TRUE(w);
  Status s = play_repeated(*w, 0, {"A", "it's \"odd\"", "duration_ns"});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM dispatch_counters"), (std::vector<std::string>{"2"}));
  // A counter named like a fixed column gets a suffix instead of shadowing it.
  EXPECT_EQ(query(db,
                  "SELECT name FROM pragma_table_info('dispatch_counters') "
                  "WHERE name LIKE 'duration_ns%' OR name LIKE 'it%' ORDER BY cid"),
            (std::vector<std::string>{"duration_ns", "it's \"odd\"", "duration_ns#2"}));
}

// Trusting a replay from the database: the spread of each launch's pass durations (flagged over
// 10%), per kernel, a counter's values over the passes that collected it, and diverged launches.
TEST(SqliteWriterTest, TrustViewsShowPassSpreadCounterValuesAndDivergence) {
  TempDir dir;
  const std::string db = dir / "t_results.db";
  auto w = sqlite_writer(db);
  ASSERT_TRUE(w);
  Status s = testing::play_fixture(*w);
  ASSERT_TRUE(s.ok()) << s.message();
  // Dispatch 1: passes of 1500, 1600 and 1400 ns; dispatch 4: 700 and 800 ns; 2 and 3: one pass.
  EXPECT_EQ(query(db,
                  "SELECT dispatch_id, passes, min_ns, max_ns, printf('%.2f', spread_pct), "
                  "flagged FROM pass_spread ORDER BY dispatch_id"),
            (std::vector<std::string>{"1|3|1400|1600|14.29|1", "4|2|700|800|14.29|1"}));
  EXPECT_EQ(query(db,
                  "SELECT kernel_id, launches, flagged_launches FROM kernel_pass_spread "
                  "ORDER BY kernel_id"),
            (std::vector<std::string>{"1|1|1", "3|1|1"}));
  EXPECT_EQ(query(db,
                  "SELECT dispatch_id, counter_name, passes, min_value, max_value FROM "
                  "counter_pass_values"),
            (std::vector<std::string>{"1|sm__cycles_elapsed.sum|3|1000.0|1020.0"}));
  EXPECT_EQ(query(db,
                  "SELECT dispatch_id, kernel_name, passes_executed, diverged_passes FROM "
                  "diverged_dispatches"),
            (std::vector<std::string>{"1|vecAdd(float const*, float const*, float*, int)|3|1"}));
  EXPECT_EQ(query(db, "SELECT dispatch_id, divergence_checked FROM dispatches ORDER BY 1"),
            (std::vector<std::string>{"1|1", "2|0", "3|0", "4|1"}));
}

}  // namespace
}  // namespace kreplay::output
