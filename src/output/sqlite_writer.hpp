// The SQLite writer (the default format): <dir>/<stem>_results.db, schema in
// share/kreplay/schema.sql (embedded at build time).
//
// Durability: journal_mode=WAL; rows are inserted with prepared statements inside a transaction
// that is committed every kCommitEvery records, in flush() and in finish(). A process killed
// after a flush() leaves a database (plus its -wal file) that holds everything up to that flush.
// finish() checkpoints and switches back to a rollback journal, so the finished result is the one
// .db file.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "output/writer.hpp"

namespace kreplay::output {

class SqliteWriter final : public Writer {
 public:
  /// Records per transaction before an automatic commit.
  static constexpr size_t kCommitEvery = 5000;

  /// Create @p path (replacing an existing database and its -wal/-shm files) with the schema.
  static Result<std::unique_ptr<SqliteWriter>> create(const std::string& path);
  ~SqliteWriter() override;  ///< commits what was written if finish() was never called

  Status begin(const RunInfo& run) override;
  Status device(const DeviceRecord& record) override;
  Status kernel(const KernelRecord& record) override;
  Status dispatch(const DispatchRecord& record) override;
  Status pass(const PassRecord& record) override;
  Status counter(const CounterRecord& record) override;
  Status service_sample(const ServiceSampleRecord& record) override;
  Status allocation(const AllocationRecord& record) override;
  Status replay_phase(const ReplayPhaseRecord& record) override;
  Status flush() override;
  Status finish(const RunSummary& summary) override;
  std::vector<std::string> output_files() const override;

  struct Impl;

 private:
  explicit SqliteWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// SQL that drops and recreates the views dispatch_counters and kernel_summary with one column
/// per name in @p counters (schema.sql describes them).
std::string counter_views_sql(const std::vector<std::string>& counters);

/// A deterministic text dump of a results database: the schema, then every table and view with
/// its rows ordered by all columns. For golden tests and for reading a database by eye.
Result<std::string> dump_sqlite(const std::string& path);

}  // namespace kreplay::output
