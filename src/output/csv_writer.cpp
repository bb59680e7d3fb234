#include "output/csv_writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "common/logging.hpp"
#include "output/text.hpp"

namespace kreplay::output {
namespace {

/// One CSV record under construction.
class Row {
 public:
  Row& text(std::string_view value) { return raw(csv_field(value)); }
  template <typename T>
  Row& num(T value) {
    return raw(fmt::format("{}", value));
  }
  Row& real(double value) { return raw(format_double(value)); }
  Row& empty() { return raw(""); }
  Row& raw(std::string_view field) {
    if (!first_) line_ += ',';
    first_ = false;
    line_ += field;
    return *this;
  }
  std::string done() { return std::move(line_) + "\n"; }

 private:
  std::string line_;
  bool first_ = true;
};

template <size_t N>
std::string header_line(const std::array<const char*, N>& columns,
                        const std::vector<std::string>& extra = {}) {
  Row row;
  for (const char* c : columns) row.text(c);
  for (const auto& c : extra) row.text(c);
  return row.done();
}

uint64_t volume(const Dim3& d) {
  return static_cast<uint64_t>(d.x) * static_cast<uint64_t>(d.y) * static_cast<uint64_t>(d.z);
}

}  // namespace

Result<std::unique_ptr<CsvWriter>> CsvWriter::create(const std::string& long_path,
                                                     const std::string& wide_path,
                                                     const std::string& trace_path,
                                                     const std::string& services_path) {
  std::unique_ptr<CsvWriter> w(new CsvWriter());
  ASSIGN_OR_RETURN(w->long_, OutputFile::create(long_path));
  ASSIGN_OR_RETURN(w->wide_, OutputFile::create(wide_path));
  if (!trace_path.empty()) {
    ASSIGN_OR_RETURN(w->trace_, OutputFile::create(trace_path));
  }
  if (!services_path.empty()) {
    ASSIGN_OR_RETURN(w->services_, OutputFile::create(services_path));
  }
  return w;
}

std::vector<std::string> CsvWriter::output_files() const {
  std::vector<std::string> out = {long_->path(), wide_->path()};
  if (trace_) out.push_back(trace_->path());
  if (services_) out.push_back(services_->path());
  return out;
}

Status CsvWriter::write_headers() {
  if (headers_written_) return Status::Ok();
  headers_written_ = true;
  RETURN_IF_ERROR(long_->write(header_line(kLongColumns)));
  RETURN_IF_ERROR(wide_->write(header_line(kWideColumns, counters_)));
  header_counters_ = counters_.size();
  if (trace_) RETURN_IF_ERROR(trace_->write(header_line(kTraceColumns)));
  if (services_) RETURN_IF_ERROR(services_->write(header_line(kServiceColumns)));
  return Status::Ok();
}

Status CsvWriter::begin(const RunInfo& run) {
  pid_ = run.pid;
  for (const auto& name : run.counter_names) {
    if (counter_set_.insert(name).second) counters_.push_back(name);
  }
  return write_headers();
}

Status CsvWriter::device(const DeviceRecord&) {
  return Status::Ok();
}

Status CsvWriter::kernel(const KernelRecord& record) {
  kernel_names_.add(record);
  return Status::Ok();
}

Status CsvWriter::counter(const CounterRecord& record) {
  pending_.add(record);
  return Status::Ok();
}

Status CsvWriter::pass(const PassRecord& record) {
  pending_.add(record);
  return Status::Ok();
}

Status CsvWriter::dispatch(const DispatchRecord& record) {
  if (finished_) return Error(KREPLAY_STATUS_ERROR, "CSV writer: dispatch after finish");
  PendingDispatch pending = pending_.take(record.app_pass, record.dispatch_id);
  return write_rows(record, pending);
}

Status CsvWriter::write_rows(const DispatchRecord& d, const PendingDispatch& p) {
  RETURN_IF_ERROR(write_headers());
  const std::string name = kernel_names_(d.kernel_id);

  // Long layout: one row per counter value, in pass order.
  std::vector<const CounterRecord*> counters;
  for (const auto& c : p.counters) counters.push_back(&c);
  std::stable_sort(counters.begin(), counters.end(),
                   [](const auto* a, const auto* b) { return a->replay_pass < b->replay_pass; });
  std::string out;
  for (const CounterRecord* c : counters) {
    const PassRecord* pass = find_pass(p, c->replay_pass);
    Row row;
    row.num(d.correlation_id).num(d.dispatch_id).num(d.agent_id).num(d.stream_id).num(pid_);
    row.num(d.thread_id).num(volume(d.grid)).num(d.grid.x).num(d.grid.y).num(d.grid.z);
    row.num(c->kernel_id != 0 ? c->kernel_id : d.kernel_id).text(name);
    row.num(volume(d.block)).num(d.block.x).num(d.block.y).num(d.block.z);
    row.num(d.static_shared_bytes).num(d.dynamic_shared_bytes).num(d.registers);
    row.text(c->name).real(c->value);
    row.num(pass != nullptr ? pass->start_ns : d.start_ns);
    row.num(pass != nullptr ? pass->end_ns : d.end_ns);
    row.num(c->replay_pass).num(c->app_pass);
    out += row.done();
  }
  RETURN_IF_ERROR(long_->write(out));

  // Wide layout: one row per dispatch.
  auto first = first_pass_values(p);
  for (const auto& c : p.counters) {
    if (counter_set_.insert(c.name).second) {
      counters_.push_back(c.name);
      KR_WARN_ONCE("csv-unlisted-counter:" + c.name,
                   "counter '{}' was not in the run's counter list; the wide CSV gets a column "
                   "for it at the end of the run",
                   c.name);
    }
  }
  Row row;
  row.num(d.correlation_id).num(d.dispatch_id).num(d.agent_id).num(d.stream_id).num(pid_);
  row.num(d.thread_id).num(d.kernel_id).text(name);
  row.num(d.grid.x).num(d.grid.y).num(d.grid.z).num(d.block.x).num(d.block.y).num(d.block.z);
  row.num(d.cluster.x).num(d.cluster.y).num(d.cluster.z);
  row.num(d.static_shared_bytes).num(d.dynamic_shared_bytes).num(d.registers);
  row.text(d.outcome).text(d.reason).num(d.passes_requested).num(d.passes_executed);
  row.num(d.bytes_snapshotted).num(d.bytes_restored).num(d.snapshot_ns).num(d.restore_ns);
  row.num(d.start_ns).num(d.end_ns).real(dispatch_duration_ns(d, p)).num(d.app_pass);
  uint64_t lost = 0;
  for (const auto& pass : p.passes) lost += pass.counter_status == "lost" ? 1 : 0;
  row.num(d.graph_id).num(d.graph_node).num(lost);
  if (const double spread = pass_spread_pct(p); std::isnan(spread)) {
    row.empty();
  } else {
    row.real(spread);
  }
  if (d.divergence_checked) {
    row.num(d.diverged_passes);
  } else {
    row.empty();
  }
  row.num(d.bytes_changed).text(d.snapshot_mode);
  for (const auto& counter : counters_) {
    auto it = first.find(counter);
    if (it != first.end()) {
      row.real(it->second->value);
    } else {
      row.empty();
    }
  }
  RETURN_IF_ERROR(wide_->write(row.done()));

  // Kernel trace: one row per executed pass.
  if (trace_) {
    std::vector<PassRecord> passes = p.passes;
    std::stable_sort(passes.begin(), passes.end(),
                     [](const auto& a, const auto& b) { return a.replay_pass < b.replay_pass; });
    if (passes.empty()) {
      PassRecord only;
      only.dispatch_id = d.dispatch_id;
      only.agent_id = d.agent_id;
      only.stream_id = d.stream_id;
      only.start_ns = d.start_ns;
      only.end_ns = d.end_ns;
      only.app_pass = d.app_pass;
      passes.push_back(only);
    }
    out.clear();
    for (const auto& pass : passes) {
      Row t;
      t.text("KERNEL_DISPATCH").num(pass.agent_id).num(pass.stream_id).num(pid_).num(d.thread_id);
      t.num(d.dispatch_id).num(d.kernel_id).text(name).num(d.correlation_id);
      t.num(pass.start_ns).num(pass.end_ns).num(pass.replay_pass).num(d.passes_executed);
      t.text(d.outcome).num(d.static_shared_bytes).num(d.dynamic_shared_bytes).num(d.registers);
      t.num(d.block.x).num(d.block.y).num(d.block.z).num(d.grid.x).num(d.grid.y).num(d.grid.z);
      t.num(d.cluster.x).num(d.cluster.y).num(d.cluster.z).num(pass.app_pass);
      t.text(pass.counter_status);
      out += t.done();
    }
    RETURN_IF_ERROR(trace_->write(out));
  }
  return Status::Ok();
}

Status CsvWriter::allocation(const AllocationRecord&) {
  return Status::Ok();
}

Status CsvWriter::service_sample(const ServiceSampleRecord& r) {
  if (!services_) return Status::Ok();
  RETURN_IF_ERROR(write_headers());
  Row row;
  row.text(r.service).num(r.dispatch_id).num(r.replay_pass).num(r.agent_id).num(r.kernel_id);
  row.text(r.function).num(r.pc_offset).text(r.instruction).text(r.source_file);
  row.num(r.source_line).text(r.name).num(r.timestamp_ns).real(r.value).num(r.app_pass);
  return services_->write(row.done());
}

Status CsvWriter::replay_phase(const ReplayPhaseRecord&) {
  return Status::Ok();
}

Status CsvWriter::flush() {
  if (finished_) return Error(KREPLAY_STATUS_ERROR, "CSV writer: flush after finish");
  RETURN_IF_ERROR(write_headers());
  RETURN_IF_ERROR(long_->flush());
  RETURN_IF_ERROR(wide_->flush());
  if (trace_) RETURN_IF_ERROR(trace_->flush());
  if (services_) RETURN_IF_ERROR(services_->flush());
  return Status::Ok();
}

Status CsvWriter::finish(const RunSummary&) {
  if (finished_) return Error(KREPLAY_STATUS_ERROR, "CSV writer: finish called twice");
  RETURN_IF_ERROR(write_headers());
  auto incomplete = pending_.take_incomplete();
  if (!incomplete.empty()) {
    KR_WARN(
        "{} dispatch(es) had no dispatch record at the end of the run; their CSV rows say "
        "Outcome 'incomplete'",
        incomplete.size());
  }
  for (const auto& [d, p] : incomplete) RETURN_IF_ERROR(write_rows(d, p));
  finished_ = true;
  RETURN_IF_ERROR(long_->close());
  RETURN_IF_ERROR(wide_->close());
  if (trace_) RETURN_IF_ERROR(trace_->close());
  if (services_) RETURN_IF_ERROR(services_->close());
  if (counters_.size() != header_counters_) {
    RETURN_IF_ERROR(rewrite_csv_header(wide_->path(), header_line(kWideColumns, counters_),
                                       kWideColumns.size() + counters_.size()));
  }
  return Status::Ok();
}

Status rewrite_csv_header(const std::string& path, const std::string& header, size_t fields) {
  const std::string temp = path + ".tmp";
  FILE* in = std::fopen(path.c_str(), "rb");
  if (in == nullptr) {
    return Error(KREPLAY_STATUS_ERROR,
                 fmt::format("cannot reopen '{}': {}", path, std::strerror(errno)));
  }
  auto out = OutputFile::create(temp);
  if (!out.ok()) {
    std::fclose(in);
    return out.status();
  }
  Status status = (*out)->write(header);
  std::string record;
  size_t count = 1;
  bool quoted = false;
  bool first_record = true;
  int ch;
  while (status.ok() && (ch = std::getc(in)) != EOF) {
    if (ch == '"') {
      quoted = !quoted;  // a doubled quote toggles twice
    } else if (!quoted && ch == ',') {
      ++count;
    } else if (!quoted && ch == '\n') {
      if (!first_record) {
        record.append(count < fields ? fields - count : 0, ',');
        record += '\n';
        status = (*out)->write(record);
      }
      first_record = false;
      record.clear();
      count = 1;
      continue;
    }
    record += static_cast<char>(ch);
  }
  if (status.ok() && std::ferror(in)) {
    status = Error(KREPLAY_STATUS_ERROR, fmt::format("cannot read '{}'", path));
  }
  std::fclose(in);
  if (status.ok()) status = (*out)->close();
  if (status.ok()) {
    std::error_code ec;
    std::filesystem::rename(temp, path, ec);
    if (ec) {
      status =
          Error(KREPLAY_STATUS_ERROR, fmt::format("cannot replace '{}': {}", path, ec.message()));
    }
  }
  return status;
}

}  // namespace kreplay::output
