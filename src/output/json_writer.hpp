// The JSON writer: <stem>_results.json, one document:
//
//   {"schema_version":1, "format":"kreplay results", "run":{...},
//    "devices":[...], "kernels":[...], "dispatches":[...], "passes":[...], "counters":[...],
//    "allocations":[...], "replay_phases":[...], "service_samples":[...], "summary":{...}}
//
// service_samples: one record per value of a per-pass service (PC sampling, SASS metrics, PM
// sampling), with "service", the instruction ("function", "pc_offset", "instruction",
// "source_file", "source_line"), "name" (stall reason or metric), "timestamp_ns" and "value".
//
// One record per line, fields named as in records.hpp; every pass-level record (passes,
// counters) carries "replay_pass", restore phases "after_pass"; launch dimensions are
// {"x","y","z"} objects. NaN counter values are null.
//
// Streaming: the head is written at begin(); each section streams into its own part file next to
// the output (<stem>_results.json.<section>.part) and finish() splices them in and removes them.
// Until finish() the document is incomplete; after a kill the part files hold the records.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "output/output_file.hpp"
#include "output/writer.hpp"

namespace kreplay::output {

class JsonWriter final : public Writer {
 public:
  static Result<std::unique_ptr<JsonWriter>> create(const std::string& path, bool gzip = false);
  ~JsonWriter() override;

  Status begin(const RunInfo& run) override;
  Status device(const DeviceRecord& record) override;
  Status kernel(const KernelRecord& record) override;
  Status dispatch(const DispatchRecord& record) override;
  Status pass(const PassRecord& record) override;
  Status counter(const CounterRecord& record) override;
  Status allocation(const AllocationRecord& record) override;
  Status replay_phase(const ReplayPhaseRecord& record) override;
  Status service_sample(const ServiceSampleRecord& record) override;
  Status flush() override;
  Status finish(const RunSummary& summary) override;
  std::vector<std::string> output_files() const override;

 private:
  enum Section {
    kDevices,
    kKernels,
    kDispatches,
    kPasses,
    kCounters,
    kAllocations,
    kPhases,
    kServiceSamples,
    kCount
  };
  static constexpr std::array<const char*, kCount> kSectionNames = {
      "devices",  "kernels",     "dispatches",    "passes",
      "counters", "allocations", "replay_phases", "service_samples"};

  JsonWriter() = default;
  Status add(Section section, const std::string& json);
  Status write_head(const std::string& run_json);

  std::unique_ptr<OutputFile> out_;
  std::array<std::unique_ptr<OutputFile>, kCount> parts_;
  std::array<bool, kCount> part_empty_{};
  bool begun_ = false;
  bool finished_ = false;
};

}  // namespace kreplay::output
