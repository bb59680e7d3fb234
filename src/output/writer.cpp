#include "output/writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <filesystem>
#include <set>

#include "common/util.hpp"
#include "output/csv_writer.hpp"
#include "output/json_writer.hpp"
#include "output/perfetto_writer.hpp"
#include "output/sqlite_writer.hpp"
#include "output/summary_writer.hpp"

namespace kreplay::output {

Writer::~Writer() = default;

namespace {

/// Fans every call out to the selected writers. A writer whose call fails reports that error once
/// and is dropped; the others go on. Exceptions never leave (they become INTERNAL statuses).
class MultiWriter final : public Writer {
 public:
  void add(std::string name, std::unique_ptr<Writer> writer) {
    entries_.push_back({std::move(name), std::move(writer), false});
  }

  Status begin(const RunInfo& r) override {
    return each("begin", [&](Writer& w) { return w.begin(r); });
  }
  Status device(const DeviceRecord& r) override {
    return each("device", [&](Writer& w) { return w.device(r); });
  }
  Status kernel(const KernelRecord& r) override {
    return each("kernel", [&](Writer& w) { return w.kernel(r); });
  }
  Status dispatch(const DispatchRecord& r) override {
    return each("dispatch", [&](Writer& w) { return w.dispatch(r); });
  }
  Status pass(const PassRecord& r) override {
    return each("pass", [&](Writer& w) { return w.pass(r); });
  }
  Status counter(const CounterRecord& r) override {
    return each("counter", [&](Writer& w) { return w.counter(r); });
  }
  Status service_sample(const ServiceSampleRecord& r) override {
    return each("service_sample", [&](Writer& w) { return w.service_sample(r); });
  }
  Status allocation(const AllocationRecord& r) override {
    return each("allocation", [&](Writer& w) { return w.allocation(r); });
  }
  Status replay_phase(const ReplayPhaseRecord& r) override {
    return each("replay_phase", [&](Writer& w) { return w.replay_phase(r); });
  }
  Status flush() override {
    return each("flush", [&](Writer& w) { return w.flush(); });
  }
  Status finish(const RunSummary& s) override {
    return each("finish", [&](Writer& w) { return w.finish(s); });
  }

  /// The files of the writers that have not failed.
  std::vector<std::string> output_files() const override {
    std::vector<std::string> out;
    for (const auto& e : entries_) {
      if (e.failed) continue;
      try {
        for (auto& f : e.writer->output_files()) out.push_back(std::move(f));
      } catch (...) {  // bad_alloc: report fewer files rather than throw
      }
    }
    return out;
  }

 private:
  struct Entry {
    std::string name;
    std::unique_ptr<Writer> writer;
    bool failed;
  };

  template <typename F>
  Status each(const char* call, F&& f) {
    Status result;
    for (auto& e : entries_) {
      if (e.failed) continue;
      Status status;
      try {
        status = f(*e.writer);
      } catch (const std::exception& ex) {
        status =
            Error(KREPLAY_STATUS_ERROR_INTERNAL, fmt::format("{}() threw: {}", call, ex.what()));
      } catch (...) {
        status = Error(KREPLAY_STATUS_ERROR_INTERNAL, fmt::format("{}() threw", call));
      }
      if (!status.ok()) {
        e.failed = true;
        if (result.ok()) {
          result =
              Error(status.code(), fmt::format("{} output stopped: {}", e.name, status.message()));
        }
      }
    }
    return result;
  }

  std::vector<Entry> entries_;
};

std::string lower_trimmed(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

Result<std::unique_ptr<Writer>> build(const OutputConfig& config) {
  if (config.file_stem.empty() || config.file_stem.back() == '/') {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 fmt::format("output file name '{}' is empty or ends in '/'; give a file name "
                             "such as \"%hostname%/%pid%\"",
                             config.file_stem));
  }
  std::set<std::string> wanted;
  for (const auto& entry : config.formats) {
    // Accept "csv,json" as well as separate entries.
    size_t start = 0;
    while (start <= entry.size()) {
      size_t end = entry.find(',', start);
      if (end == std::string::npos) end = entry.size();
      std::string name = lower_trimmed(std::string_view(entry).substr(start, end - start));
      start = end + 1;
      if (name.empty()) continue;
      const auto& known = known_formats();
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        auto close = suggest(name, known, 1);
        return Error(
            KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
            fmt::format("unknown output format '{}'{}; choose from {}", name,
                        close.empty() ? "" : fmt::format(" (did you mean '{}'?)", close.front()),
                        join_or(known)));
      }
      wanted.insert(name);
    }
  }

  auto multi = std::make_unique<MultiWriter>();
  if (wanted.count("sqlite") != 0) {
    ASSIGN_OR_RETURN(auto w, SqliteWriter::create(output_path(config, "_results.db")));
    multi->add("sqlite", std::move(w));
  }
  if (wanted.count("csv") != 0) {
    ASSIGN_OR_RETURN(
        auto w,
        CsvWriter::create(
            output_path(config, "_counter_collection.csv"),
            output_path(config, "_counter_collection_wide.csv"),
            config.kernel_trace ? output_path(config, "_kernel_trace.csv") : std::string(),
            config.pass_services ? output_path(config, "_pass_services.csv") : std::string()));
    multi->add("csv", std::move(w));
  }
  if (wanted.count("json") != 0) {
    ASSIGN_OR_RETURN(auto w, JsonWriter::create(output_path(config, config.gzip_trace
                                                                        ? "_results.json.gz"
                                                                        : "_results.json"),
                                                config.gzip_trace));
    multi->add("json", std::move(w));
  }
  if (wanted.count("perfetto") != 0) {
    ASSIGN_OR_RETURN(auto w,
                     PerfettoWriter::create(
                         output_path(config, config.gzip_trace ? "_trace.json.gz" : "_trace.json"),
                         config.gzip_trace));
    multi->add("perfetto", std::move(w));
  }
  if (config.summary) multi->add("summary", std::make_unique<SummaryWriter>(config.summary_stream));
  return std::unique_ptr<Writer>(std::move(multi));
}

}  // namespace

const std::vector<std::string>& known_formats() {
  static const std::vector<std::string> kFormats = {"sqlite", "csv", "json", "perfetto"};
  return kFormats;
}

std::string output_path(const OutputConfig& config, const std::string& suffix) {
  if (config.directory.empty()) return config.file_stem + suffix;
  return (std::filesystem::path(config.directory) / (config.file_stem + suffix)).string();
}

Result<std::unique_ptr<Writer>> make_writer(const OutputConfig& config) {
  try {
    return build(config);
  } catch (const std::exception& e) {
    return Error(KREPLAY_STATUS_ERROR_INTERNAL,
                 fmt::format("cannot set up the output writers: {}", e.what()));
  }
}

}  // namespace kreplay::output
