#include "output/json_writer.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "output/text.hpp"

namespace kreplay::output {
namespace {

using ojson = nlohmann::ordered_json;

std::string dump(const ojson& value) {
  return value.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

std::string dim(const Dim3& d) {
  return fmt::format(R"({{"x":{},"y":{},"z":{}}})", d.x, d.y, d.z);
}

std::string part_path(const std::string& path, const char* section) {
  return fmt::format("{}.{}.part", path, section);
}

}  // namespace

Result<std::unique_ptr<JsonWriter>> JsonWriter::create(const std::string& path, bool gzip) {
  std::unique_ptr<JsonWriter> w(new JsonWriter());
  ASSIGN_OR_RETURN(w->out_, OutputFile::create(path, gzip));
  for (int s = 0; s < kCount; ++s) {
    ASSIGN_OR_RETURN(w->parts_[s], OutputFile::create(part_path(path, kSectionNames[s])));
    w->part_empty_[s] = true;
  }
  return w;
}

JsonWriter::~JsonWriter() = default;  // part files stay: they hold the records of an unfinished run

std::vector<std::string> JsonWriter::output_files() const {
  return {out_->path()};
}

Status JsonWriter::add(Section section, const std::string& json) {
  if (finished_) return Error(KREPLAY_STATUS_ERROR, "JSON writer: record after finish");
  Status status = parts_[section]->write(part_empty_[section] ? "\n" : ",\n");
  part_empty_[section] = false;
  RETURN_IF_ERROR(status);
  return parts_[section]->write(json);
}

Status JsonWriter::begin(const RunInfo& run) {
  ojson environment = ojson::object();
  for (const auto& [k, v] : run.environment) environment[k] = v;
  ojson options = ojson::object();
  for (const auto& [k, v] : run.options) options[k] = v;
  ojson info = {{"kreplay_version", run.kreplay_version},
                {"command", run.command},
                {"hostname", run.hostname},
                {"pid", run.pid},
                {"start_ns", run.start_ns},
                {"start_unix_ns", run.start_unix_ns},
                {"replay_mode", run.replay_mode},
                {"app_pass", run.app_pass},
                {"app_pass_count", run.app_pass_count},
                {"counter_names", run.counter_names},
                {"environment", environment},
                {"options", options},
                {"rank", run.rank ? ojson(*run.rank) : ojson(nullptr)},
                {"local_rank", run.local_rank ? ojson(*run.local_rank) : ojson(nullptr)}};
  return write_head(dump(info));
}

Status JsonWriter::write_head(const std::string& run_json) {
  if (begun_) return Error(KREPLAY_STATUS_ERROR, "JSON writer: begin called twice");
  begun_ = true;
  return out_->write(
      fmt::format("{{\n\"schema_version\": {},\n\"format\": \"kreplay results\",\n"
                  "\"run\": {}",
                  kSchemaVersion, run_json));
}

Status JsonWriter::device(const DeviceRecord& r) {
  JsonObject o;
  o.field("agent_id", r.agent_id).field("type", r.type).field("device_index", r.device_index);
  o.field("name", r.name).field("chip", r.chip).field("uuid", r.uuid);
  o.field("memory_bytes", r.memory_bytes).field("multiprocessor_count", r.multiprocessor_count);
  o.field("cc_major", r.cc_major).field("cc_minor", r.cc_minor);
  return add(kDevices, o.done());
}

Status JsonWriter::kernel(const KernelRecord& r) {
  JsonObject o;
  o.field("kernel_id", r.kernel_id).field("agent_id", r.agent_id);
  o.field("code_object_id", r.code_object_id).field("mangled_name", r.mangled_name);
  o.field("demangled_name", r.demangled_name);
  return add(kKernels, o.done());
}

Status JsonWriter::dispatch(const DispatchRecord& r) {
  JsonObject o;
  o.field("dispatch_id", r.dispatch_id).field("agent_id", r.agent_id);
  o.field("stream_id", r.stream_id).field("kernel_id", r.kernel_id);
  o.field("correlation_id", r.correlation_id).field("thread_id", r.thread_id);
  o.raw("grid", dim(r.grid)).raw("block", dim(r.block)).raw("cluster", dim(r.cluster));
  o.field("dynamic_shared_bytes", r.dynamic_shared_bytes);
  o.field("static_shared_bytes", r.static_shared_bytes).field("registers", r.registers);
  o.field("outcome", r.outcome).field("reason", r.reason);
  o.field("passes_requested", r.passes_requested).field("passes_executed", r.passes_executed);
  o.field("bytes_snapshotted", r.bytes_snapshotted).field("bytes_restored", r.bytes_restored);
  o.field("snapshot_ns", r.snapshot_ns).field("restore_ns", r.restore_ns);
  o.field("start_ns", r.start_ns).field("end_ns", r.end_ns).field("app_pass", r.app_pass);
  o.field("graph_id", r.graph_id).field("graph_node", r.graph_node);
  o.raw("divergence_checked", r.divergence_checked ? "true" : "false");
  o.field("diverged_passes", r.diverged_passes);
  o.field("bytes_changed", r.bytes_changed).field("snapshot_mode", r.snapshot_mode);
  return add(kDispatches, o.done());
}

Status JsonWriter::pass(const PassRecord& r) {
  JsonObject o;
  o.field("dispatch_id", r.dispatch_id).field("replay_pass", r.replay_pass);
  o.field("agent_id", r.agent_id).field("stream_id", r.stream_id);
  o.field("start_ns", r.start_ns).field("end_ns", r.end_ns).field("app_pass", r.app_pass);
  o.field("counter_status", r.counter_status);
  return add(kPasses, o.done());
}

Status JsonWriter::counter(const CounterRecord& r) {
  JsonObject o;
  o.field("dispatch_id", r.dispatch_id).field("replay_pass", r.replay_pass);
  o.field("agent_id", r.agent_id).field("kernel_id", r.kernel_id);
  o.field("name", r.name).field("value", r.value).field("app_pass", r.app_pass);
  return add(kCounters, o.done());
}

Status JsonWriter::service_sample(const ServiceSampleRecord& r) {
  JsonObject o;
  o.field("service", r.service).field("dispatch_id", r.dispatch_id);
  o.field("replay_pass", r.replay_pass).field("agent_id", r.agent_id);
  o.field("kernel_id", r.kernel_id).field("function", r.function);
  o.field("pc_offset", r.pc_offset).field("instruction", r.instruction);
  o.field("source_file", r.source_file).field("source_line", r.source_line);
  o.field("name", r.name).field("timestamp_ns", r.timestamp_ns).field("value", r.value);
  o.field("app_pass", r.app_pass);
  return add(kServiceSamples, o.done());
}

Status JsonWriter::allocation(const AllocationRecord& r) {
  JsonObject o;
  o.field("agent_id", r.agent_id).field("operation", r.operation).field("kind", r.kind);
  o.field("address", r.address).field("size", r.size).field("timestamp_ns", r.timestamp_ns);
  o.field("app_pass", r.app_pass);
  return add(kAllocations, o.done());
}

Status JsonWriter::replay_phase(const ReplayPhaseRecord& r) {
  JsonObject o;
  o.field("dispatch_id", r.dispatch_id).field("agent_id", r.agent_id);
  o.field("stream_id", r.stream_id).field("phase", r.phase).field("after_pass", r.after_pass);
  o.field("start_ns", r.start_ns).field("end_ns", r.end_ns).field("bytes", r.bytes);
  o.field("app_pass", r.app_pass);
  return add(kPhases, o.done());
}

Status JsonWriter::flush() {
  if (finished_) return Error(KREPLAY_STATUS_ERROR, "JSON writer: flush after finish");
  RETURN_IF_ERROR(out_->flush());
  for (auto& part : parts_) RETURN_IF_ERROR(part->flush());
  return Status::Ok();
}

Status JsonWriter::finish(const RunSummary& s) {
  if (finished_) return Error(KREPLAY_STATUS_ERROR, "JSON writer: finish called twice");
  if (!begun_) RETURN_IF_ERROR(write_head("null"));
  finished_ = true;
  for (int i = 0; i < kCount; ++i) {
    RETURN_IF_ERROR(parts_[i]->close());
    RETURN_IF_ERROR(out_->write(fmt::format(",\n\"{}\": [", kSectionNames[i])));
    RETURN_IF_ERROR(append_file(*out_, parts_[i]->path()));
    RETURN_IF_ERROR(out_->write(part_empty_[i] ? "]" : "\n]"));
  }
  ojson reasons = ojson::object();
  for (const auto& [k, v] : s.declined_by_reason) reasons[k] = v;
  ojson summary = {{"end_ns", s.end_ns},     {"exit_code", s.exit_code},
                   {"launches", s.launches}, {"replayed", s.replayed},
                   {"declined", s.declined}, {"not_selected", s.not_selected},
                   {"passes", s.passes},     {"declined_by_reason", reasons},
                   {"counter_passes_lost", s.counter_passes_lost},
                   {"devices_used", s.devices_used},
                   {"snapshot_device_peak_bytes", s.snapshot_device_peak_bytes},
                   {"snapshot_host_peak_bytes", s.snapshot_host_peak_bytes},
                   {"snapshot_storage_releases", s.snapshot_storage_releases}};
  RETURN_IF_ERROR(out_->write(fmt::format(",\n\"summary\": {}\n}}\n", dump(summary))));
  RETURN_IF_ERROR(out_->close());
  for (auto& part : parts_) {
    std::error_code ec;
    std::filesystem::remove(part->path(), ec);
  }
  return Status::Ok();
}

}  // namespace kreplay::output
