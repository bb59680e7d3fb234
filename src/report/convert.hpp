// `kreplay convert RUN.db --to csv|json|perfetto`: the other output formats, written after the
// fact from a results database. The rows are read back into the writers' records
// (output/records.hpp) and replayed through the same writers the run uses (output/writer.hpp), in
// the order the run produced them (the seq column), so the files are byte for byte those the run
// would have written with --output-format. Two things a database cannot give back: the exit
// status the tool knew (the JSON summary gets the application's real one, which the kreplay
// command recorded), and the flush points of a gzip stream (compressed bytes differ, the content
// does not). Databases written before the seq column existed are converted in table order, with
// a note that record order may differ from the run's.
#pragma once

#include <string>
#include <vector>

#include "common/status.hpp"

namespace kreplay::report {

struct ConvertOptions {
  std::string database;
  std::vector<std::string> formats;  ///< csv, json, perfetto
  std::string directory;  ///< "" = the database's folder
  std::string stem;       ///< "" = the database's name without _results.db
  bool kernel_trace = false;  ///< csv: also <stem>_kernel_trace.csv (as --kernel-trace)
  bool gzip = false;          ///< json and perfetto gzip-compressed (as --output-gzip)
};

struct ConvertResult {
  std::vector<std::string> files;
  std::vector<std::string> notes;
};

/// A database of application replay (several runs) is written as one set of files per run, in
/// <directory>/pass_<k>/, as the run wrote them.
Result<ConvertResult> convert_database(const ConvertOptions& options);

}  // namespace kreplay::report
