// The output writers' one streaming interface (CONVENTIONS.md §8) and the factory that builds the
// writers a run asked for.
//
// Call order: begin() once, then records in the order records.hpp describes (device before
// anything naming it; per dispatch: kernel once, per pass its counters then its pass record, the
// dispatch record last; allocations and replay phases whenever they happen), flush() at any time,
// finish() once. No writer keeps more than the dispatches in flight, the kernels and the devices
// in memory.
//
// Threading: a Writer is not thread-safe. The caller serializes every call (one mutex around the
// writer, or a single writer thread).
//
// Errors: every call returns a Status and never throws. A failing writer inside the multiplexer is
// dropped after reporting its first error; the other formats go on.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/status.hpp"
#include "output/records.hpp"

namespace kreplay::output {

class Writer {
 public:
  virtual ~Writer();

  /// Run information; the first call. Writes headers.
  virtual Status begin(const RunInfo& run) = 0;
  virtual Status device(const DeviceRecord& record) = 0;
  virtual Status kernel(const KernelRecord& record) = 0;
  /// After the dispatch's last pass record.
  virtual Status dispatch(const DispatchRecord& record) = 0;
  /// After the counters of that pass.
  virtual Status pass(const PassRecord& record) = 0;
  virtual Status counter(const CounterRecord& record) = 0;
  /// A per-pass service's value, after its pass's counters. Only the SQLite writer keeps them
  /// (pc_samples, sass_metrics, pm_samples, sass); the other formats ignore them for now.
  virtual Status service_sample(const ServiceSampleRecord& record) {
    (void)record;
    return Status::Ok();
  }
  virtual Status allocation(const AllocationRecord& record) = 0;
  virtual Status replay_phase(const ReplayPhaseRecord& record) = 0;
  /// Make everything written so far durable and readable by another process: SQLite commits,
  /// CSV files are flushed, an uncompressed trace gets its closing brackets (overwritten by the
  /// next event). Called periodically and on the exit path; may be called any number of times.
  virtual Status flush() = 0;
  /// The last call: writes trailers, summary and views, closes files. Later calls fail.
  virtual Status finish(const RunSummary& summary) = 0;

  /// Paths of the files this writer produces (they exist from creation on).
  virtual std::vector<std::string> output_files() const { return {}; }
};

/// What to write and where.
struct OutputConfig {
  std::string directory;             ///< created with its parents; "" means the current directory
  std::string file_stem;             ///< may contain '/', e.g. "host/1234"; must not be empty
  std::vector<std::string> formats;  ///< any of sqlite, csv, json, perfetto (case-insensitive)
  bool summary = false;              ///< print the per-kernel table at finish
  FILE* summary_stream = stderr;     ///< where the summary goes; not closed by the writer
  bool gzip_trace = false;           ///< perfetto: write <stem>_trace.json.gz
  bool kernel_trace = false;         ///< csv: also write <stem>_kernel_trace.csv
  bool pass_services = false;        ///< csv: also write <stem>_pass_services.csv
};

/// The format names make_writer accepts.
const std::vector<std::string>& known_formats();

/// `<directory>/<file_stem><suffix>`, e.g. output_path(config, "_results.db").
std::string output_path(const OutputConfig& config, const std::string& suffix);

/// Build the writers @p config selects behind one multiplexer. Directories are created and every
/// output file is created (truncated) now, so an unwritable location fails here, before the
/// application runs.
/// Files: `<dir>/<stem>_results.db` (sqlite), `_counter_collection.csv`,
/// `_counter_collection_wide.csv` and, with kernel_trace, `_kernel_trace.csv` (csv),
/// `_results.json` (json), `_trace.json` or `_trace.json.gz` (perfetto).
/// @retval INVALID_ARGUMENT unknown format name or empty file_stem (message names it and the fix)
/// @retval ERROR a directory or file cannot be created (message names the path and the reason)
Result<std::unique_ptr<Writer>> make_writer(const OutputConfig& config);

/// Application replay: merge the `pass_N/..._results.db` databases of one run into @p output
/// (replaced if it exists). Every row keeps its app_pass; the counter views are rebuilt over the
/// union of the counters.
/// @retval INVALID_ARGUMENT no inputs, an input is missing or is @p output, two inputs hold the
///         same app_pass, or an input has another schema_version
/// @retval ERROR SQLite failed (the message names the file)
Status merge_sqlite(const std::vector<std::string>& inputs, const std::string& output);

/// `kreplay merge`: put the databases of the ranks of one job into @p output (replaced if it
/// exists), each row with its rank in a `rank` column that every table has and every key starts
/// with (the schema is schema.sql through rank_schema_sql()); the views join on it, and the rank
/// views of schema.sql (after "-- @rank-views") compare the ranks. An input's rank is its
/// run.rank, else the lowest rank no input has, in input order; @p ranks receives them. When some
/// inputs know their rank, an input that knows none and saw no launch (a launcher's own process,
/// as under `kreplay -- torchrun`) is left out and named in @p left_out.
/// @retval INVALID_ARGUMENT no inputs, an input is missing or is @p output, the inputs have
///         different schema versions or collected different counters (the first input is the
///         reference), two inputs are the same rank
/// @retval ERROR SQLite failed (the message names the file)
Status merge_ranks(const std::vector<std::string>& inputs, const std::string& output,
                   std::vector<int64_t>* ranks = nullptr,
                   std::vector<std::string>* left_out = nullptr);

/// schema.sql (or a view's SQL) for a database merged by rank: a rank column first in every table
/// and key, and every join and GROUP BY on app_pass also on rank.
std::string rank_schema_sql(const std::string& sql);

}  // namespace kreplay::output
