#include "output/perfetto_writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/logging.hpp"
#include "output/text.hpp"

namespace kreplay::output {
namespace {

using ojson = nlohmann::ordered_json;

std::string dump(const ojson& value) {
  return value.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

std::string dim(const Dim3& d) {
  return fmt::format("[{},{},{}]", d.x, d.y, d.z);
}

std::string slice(std::string_view name, std::string_view category, uint64_t start, uint64_t end,
                  int pid, int tid, const std::string& args) {
  return fmt::format(
      R"({{"name":{},"cat":"{}","ph":"X","ts":{},"dur":{},"pid":{},"tid":{},"args":{}}})",
      json_string(name), category, format_us(start), format_us(end > start ? end - start : 0), pid,
      tid, args);
}

std::string metadata(const char* what, int pid, int tid, const ojson& args) {
  return fmt::format(R"({{"name":"{}","ph":"M","pid":{},"tid":{},"args":{}}})", what, pid, tid,
                     dump(args));
}

constexpr const char* kTrailer = "\n]}\n";

}  // namespace

Result<std::unique_ptr<PerfettoWriter>> PerfettoWriter::create(const std::string& path, bool gzip) {
  std::unique_ptr<PerfettoWriter> w(new PerfettoWriter());
  ASSIGN_OR_RETURN(w->out_, OutputFile::create(path, gzip));
  return w;
}

PerfettoWriter::~PerfettoWriter() {
  // Abandoned without finish(): close the trace properly (finish() ignores the summary).
  if (!finished_ && out_) (void)finish(RunSummary{});
}

std::vector<std::string> PerfettoWriter::output_files() const {
  return {out_->path()};
}

Status PerfettoWriter::write_head(const std::string& other_data) {
  if (begun_) return Error(KREPLAY_STATUS_ERROR, "perfetto writer: begin called twice");
  begun_ = true;
  return out_->write(fmt::format(
      "{{\"displayTimeUnit\":\"ns\",\n\"otherData\":{},\n\"traceEvents\":[", other_data));
}

Status PerfettoWriter::begin(const RunInfo& run) {
  ojson other = {{"schema_version", kSchemaVersion},
                 {"format", "kreplay trace"},
                 {"kreplay_version", run.kreplay_version},
                 {"command", run.command},
                 {"hostname", run.hostname},
                 {"pid", run.pid},
                 {"replay_mode", run.replay_mode},
                 {"app_pass", run.app_pass},
                 {"start_ns", run.start_ns},
                 {"start_unix_ns", run.start_unix_ns},
                 {"counter_names", run.counter_names}};
  return write_head(dump(other));
}

Status PerfettoWriter::event(const std::string& json) {
  if (finished_) return Error(KREPLAY_STATUS_ERROR, "perfetto writer: record after finish");
  if (!begun_) RETURN_IF_ERROR(write_head(dump(ojson{{"schema_version", kSchemaVersion}})));
  RETURN_IF_ERROR(out_->write(any_event_ ? ",\n" : "\n"));
  any_event_ = true;
  return out_->write(json);
}

Result<int> PerfettoWriter::pid_for(uint64_t agent_id) {
  auto it = pids_.find(agent_id);
  if (it != pids_.end()) return it->second;
  int pid = static_cast<int>(pids_.size()) + 1;
  pids_[agent_id] = pid;
  RETURN_IF_ERROR(
      event(metadata("process_name", pid, 0, {{"name", fmt::format("Agent {}", agent_id)}})));
  RETURN_IF_ERROR(event(metadata("process_sort_index", pid, 0, {{"sort_index", pid}})));
  return pid;
}

Result<int> PerfettoWriter::tid_for(uint64_t agent_id, uint64_t stream_id) {
  auto it = tids_.find({agent_id, stream_id});
  if (it != tids_.end()) return it->second;
  ASSIGN_OR_RETURN(int pid, pid_for(agent_id));
  int tid = ++streams_per_agent_[agent_id];
  tids_[{agent_id, stream_id}] = tid;
  RETURN_IF_ERROR(
      event(metadata("thread_name", pid, tid, {{"name", fmt::format("Stream {}", stream_id)}})));
  RETURN_IF_ERROR(event(metadata("thread_sort_index", pid, tid, {{"sort_index", tid}})));
  return tid;
}

Status PerfettoWriter::device(const DeviceRecord& r) {
  auto it = pids_.find(r.agent_id);
  const bool known = it != pids_.end();
  int pid = known ? it->second : static_cast<int>(pids_.size()) + 1;
  pids_[r.agent_id] = pid;
  std::string name =
      fmt::format("{} {}: {}", r.type == "cuda" ? "GPU" : "Device", r.device_index, r.name);
  RETURN_IF_ERROR(event(metadata("process_name", pid, 0, {{"name", name}})));
  if (!known) {
    RETURN_IF_ERROR(event(metadata("process_sort_index", pid, 0, {{"sort_index", pid}})));
  }
  return event(metadata("process_labels", pid, 0,
                        {{"labels", fmt::format("{} sm_{}{}, agent {}", r.chip, r.cc_major,
                                                r.cc_minor, r.agent_id)}}));
}

Status PerfettoWriter::kernel(const KernelRecord& r) {
  kernel_names_.add(r);
  return Status::Ok();
}

Status PerfettoWriter::counter(const CounterRecord& r) {
  pending_.add(r);
  return Status::Ok();
}

Status PerfettoWriter::service_sample(const ServiceSampleRecord& r) {
  if (r.service != "pm_sampling") return Status::Ok();
  ASSIGN_OR_RETURN(int pid, pid_for(r.agent_id));
  JsonObject args;
  args.field(kernel_names_(r.kernel_id), r.value);
  return event(fmt::format(R"j({{"name":{},"ph":"C","ts":{},"pid":{},"tid":0,"args":{}}})j",
                           json_string("PM " + r.name), format_us(r.timestamp_ns), pid,
                           args.done()));
}

Status PerfettoWriter::pass(const PassRecord& r) {
  pending_.add(r);
  return Status::Ok();
}

Status PerfettoWriter::dispatch(const DispatchRecord& r) {
  PendingDispatch pending = pending_.take(r.app_pass, r.dispatch_id);
  return write_passes(r, pending);
}

Status PerfettoWriter::write_passes(const DispatchRecord& d, const PendingDispatch& p) {
  const std::string name = kernel_names_(d.kernel_id);
  std::vector<PassRecord> passes = p.passes;
  std::stable_sort(passes.begin(), passes.end(),
                   [](const auto& a, const auto& b) { return a.replay_pass < b.replay_pass; });
  if (passes.empty()) {  // no pass records: the dispatch's own interval
    PassRecord only;
    only.dispatch_id = d.dispatch_id;
    only.agent_id = d.agent_id;
    only.stream_id = d.stream_id;
    only.start_ns = d.start_ns;
    only.end_ns = d.end_ns;
    only.app_pass = d.app_pass;
    passes.push_back(only);
  }
  for (const auto& pass : passes) {
    ASSIGN_OR_RETURN(int pid, pid_for(pass.agent_id));
    ASSIGN_OR_RETURN(int tid, tid_for(pass.agent_id, pass.stream_id));
    JsonObject args;
    args.field("dispatch_id", d.dispatch_id).field("replay_pass", pass.replay_pass);
    args.field("passes_executed", d.passes_executed).field("outcome", d.outcome);
    args.field("correlation_id", d.correlation_id).raw("grid", dim(d.grid));
    args.raw("block", dim(d.block)).raw("cluster", dim(d.cluster));
    if (!d.reason.empty()) args.field("reason", d.reason);
    if (d.app_pass != 0) args.field("app_pass", d.app_pass);
    if (d.graph_id != 0) args.field("graph_id", d.graph_id).field("graph_node", d.graph_node);
    if (d.divergence_checked) args.field("diverged_passes", d.diverged_passes);
    if (d.bytes_snapshotted != 0 || !d.snapshot_mode.empty()) {  // the window saved memory
      args.field("bytes_snapshotted", d.bytes_snapshotted).field("bytes_changed", d.bytes_changed);
      args.field("snapshot_mode", d.snapshot_mode);
    }
    if (!pass.counter_status.empty()) args.field("counter_status", pass.counter_status);
    JsonObject counters;
    for (const auto& c : p.counters) {
      if (c.replay_pass == pass.replay_pass) counters.field(c.name, c.value);
    }
    if (!counters.empty()) args.raw("counters", counters.done());
    std::string text = args.done();
    RETURN_IF_ERROR(event(slice(name, "kernel", pass.start_ns, pass.end_ns, pid, tid, text)));
  }
  return Status::Ok();
}

Status PerfettoWriter::replay_phase(const ReplayPhaseRecord& r) {
  ASSIGN_OR_RETURN(int pid, pid_for(r.agent_id));
  ASSIGN_OR_RETURN(int tid, tid_for(r.agent_id, r.stream_id));
  ojson args = {{"dispatch_id", r.dispatch_id}, {"bytes", r.bytes}};
  if (r.phase == "restore") args["after_pass"] = r.after_pass;
  if (r.app_pass != 0) args["app_pass"] = r.app_pass;
  return event(slice(r.phase, "replay", r.start_ns, r.end_ns, pid, tid, dump(args)));
}

Status PerfettoWriter::allocation(const AllocationRecord& r) {
  ASSIGN_OR_RETURN(int pid, pid_for(r.agent_id));
  uint64_t& total = tracked_bytes_[r.agent_id];
  auto key = std::make_pair(r.agent_id, r.address);
  if (r.operation == "free") {
    auto it = live_.find(key);
    uint64_t size = it != live_.end() ? it->second : r.size;
    if (it != live_.end()) live_.erase(it);
    total -= std::min(total, size);
  } else {
    auto [it, inserted] = live_.emplace(key, r.size);
    if (!inserted) {  // re-used address without a free we saw: replace
      total -= std::min(total, it->second);
      it->second = r.size;
    }
    total += r.size;
  }
  return event(fmt::format(
      R"j({{"name":"Tracked memory (bytes)","ph":"C","ts":{},"pid":{},"tid":0,"args":{{"bytes":{}}}}})j",
      format_us(r.timestamp_ns), pid, total));
}

Status PerfettoWriter::flush() {
  if (finished_) return Error(KREPLAY_STATUS_ERROR, "perfetto writer: flush after finish");
  if (!begun_) RETURN_IF_ERROR(write_head(dump(ojson{{"schema_version", kSchemaVersion}})));
  return out_->flush_with_trailer(kTrailer);
}

Status PerfettoWriter::finish(const RunSummary&) {
  if (finished_) return Error(KREPLAY_STATUS_ERROR, "perfetto writer: finish called twice");
  auto incomplete = pending_.take_incomplete();
  if (!incomplete.empty()) {
    KR_WARN(
        "{} dispatch(es) had no dispatch record at the end of the run; the trace shows their "
        "passes with outcome 'incomplete'",
        incomplete.size());
  }
  for (const auto& [d, p] : incomplete) RETURN_IF_ERROR(write_passes(d, p));
  if (!begun_) RETURN_IF_ERROR(write_head(dump(ojson{{"schema_version", kSchemaVersion}})));
  finished_ = true;
  RETURN_IF_ERROR(out_->write(kTrailer));
  return out_->close();
}

}  // namespace kreplay::output
