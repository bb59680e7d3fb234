#include "output/summary_writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/util.hpp"
#include "output/text.hpp"

namespace kreplay::output {

namespace {
constexpr const char* kTag = "==KREPLAY== ";
}  // namespace

void SnapshotTally::add(uint64_t snapshotted, uint64_t changed, std::string_view mode) {
  bytes_saved += snapshotted;
  bytes_changed += changed;
  if (mode == "full") ++full;
  if (mode == "write_set") ++write_set;
}

std::string SnapshotTally::line(const RunSummary& s) const {
  if (bytes_saved == 0) return {};
  std::string out = fmt::format("{} saved for {} changed", format_bytes(bytes_saved),
                                format_bytes(bytes_changed));
  if (full + write_set > 0) out += fmt::format(" ({} write-set, {} full)", write_set, full);
  std::string storage;
  if (s.snapshot_device_peak_bytes + s.snapshot_host_peak_bytes > 0) {
    storage =
        fmt::format("peak storage {} device, {} host", format_bytes(s.snapshot_device_peak_bytes),
                    format_bytes(s.snapshot_host_peak_bytes));
  }
  if (s.snapshot_storage_releases > 0) {
    storage += fmt::format("{}given back to the application {} time{}",
                           storage.empty() ? "storage " : ", ", s.snapshot_storage_releases,
                           s.snapshot_storage_releases == 1 ? "" : "s");
  }
  if (!storage.empty()) out += "; " + storage;
  return out;
}

Status SummaryWriter::begin(const RunInfo& run) {
  for (const auto& name : run.counter_names) {
    if (counter_set_.insert(name).second) counter_order_.push_back(name);
  }
  return Status::Ok();
}

Status SummaryWriter::device(const DeviceRecord&) {
  return Status::Ok();
}

Status SummaryWriter::kernel(const KernelRecord& r) {
  kernel_names_.add(r);
  return Status::Ok();
}

Status SummaryWriter::counter(const CounterRecord& r) {
  if (counter_set_.insert(r.name).second) counter_order_.push_back(r.name);
  pending_.add(r);
  return Status::Ok();
}

Status SummaryWriter::pass(const PassRecord& r) {
  pending_.add(r);
  return Status::Ok();
}

Status SummaryWriter::dispatch(const DispatchRecord& r) {
  account(r, pending_.take(r.app_pass, r.dispatch_id));
  return Status::Ok();
}

void SummaryWriter::account(const DispatchRecord& d, const PendingDispatch& p) {
  KernelStats& k = stats_[d.kernel_id];
  double ns = dispatch_duration_ns(d, p);
  k.min_ns = k.launches == 0 ? ns : std::min(k.min_ns, ns);
  k.max_ns = k.launches == 0 ? ns : std::max(k.max_ns, ns);
  k.launches += 1;
  k.passes += d.passes_executed;
  k.total_ns += ns;
  for (const auto& [name, record] : first_pass_values(p)) {
    Average& a = k.counters[name];
    a.sum += record->value;
    a.count += 1;
  }
  if (const double spread = pass_spread_pct(p); !std::isnan(spread)) {
    ++k.spread_launches;
    k.spread_flagged += spread > kPassSpreadFlagPct ? 1 : 0;
    k.max_spread_pct = std::max(k.max_spread_pct, spread);
  }
  k.diverged += d.diverged_passes > 0 ? 1 : 0;
  snapshots_.add(d.bytes_snapshotted, d.bytes_changed, d.snapshot_mode);
  // A count collected on several passes (a counter in several groups) must be equal on each.
  // (Values that differ were collected on two passes or more.)
  std::map<std::string, std::pair<double, double>> range;  // name -> (min, max)
  for (const auto& c : p.counters) {
    if (!is_count_counter(c.name) || std::isnan(c.value)) continue;
    auto [it, fresh] = range.try_emplace(c.name, c.value, c.value);
    if (!fresh)
      it->second = {std::min(it->second.first, c.value), std::max(it->second.second, c.value)};
  }
  for (const auto& [name, mm] : range) {
    if (mm.second == mm.first) continue;
    const double base = std::max(std::abs(mm.first), std::abs(mm.second));
    const double pct = base > 0 ? 100.0 * (mm.second - mm.first) / base : 0.0;
    auto& dis = k.counts_differ[name];
    ++dis.launches;
    dis.max_pct = std::max(dis.max_pct, pct);
  }
}

std::string SummaryWriter::render_trust() const {
  std::string uneven, differ, diverged;
  uint64_t n_uneven = 0, n_diverged = 0;
  for (const auto& [id, k] : stats_) {
    const std::string name = truncate_name(kernel_names_(id), kNameWidth);
    if (k.spread_flagged > 0) {
      n_uneven += k.spread_flagged;
      uneven += fmt::format("{}{} ({} of {}, up to {:.0f}%)", uneven.empty() ? "" : "; ", name,
                            k.spread_flagged, k.spread_launches, k.max_spread_pct);
    }
    for (const auto& [counter, dis] : k.counts_differ) {
      differ += fmt::format("{}{} in {} ({} launch(es), up to {:.2g}%)", differ.empty() ? "" : "; ",
                            counter, name, dis.launches, dis.max_pct);
    }
    if (k.diverged > 0) {
      n_diverged += k.diverged;
      diverged += fmt::format("{}{} ({} of {})", diverged.empty() ? "" : "; ", name, k.diverged,
                              k.launches);
    }
  }
  std::string out;
  if (!uneven.empty()) {
    out += fmt::format(
        "{}Uneven passes: {} launch(es) whose pass durations differ by more than "
        "{:.0f}%: {} (the database's pass_spread view has each launch)\n",
        kTag, n_uneven, kPassSpreadFlagPct, uneven);
  }
  if (!differ.empty()) {
    out += fmt::format(
        "{}Counts that differ between the passes of one launch (a counter in "
        "several groups): {} (the database's counter_pass_values view)\n",
        kTag, differ);
  }
  if (!diverged.empty()) {
    out += fmt::format(
        "{}Diverged: {} launch(es) whose passes left different memory, so their "
        "passes did not measure the same work: {}\n",
        kTag, n_diverged, diverged);
  }
  return out;
}

Status SummaryWriter::allocation(const AllocationRecord&) {
  return Status::Ok();
}

Status SummaryWriter::replay_phase(const ReplayPhaseRecord&) {
  return Status::Ok();
}

Status SummaryWriter::flush() {
  return Status::Ok();
}

std::string SummaryWriter::render(const RunSummary& s) const {
  struct Line {
    const KernelStats* stats;
    std::string name;
  };
  std::vector<Line> lines;
  double all_ns = 0;
  uint64_t launches = 0;
  for (const auto& [id, stats] : stats_) {
    lines.push_back({&stats, kernel_names_(id)});
    all_ns += stats.total_ns;
    launches += stats.launches;
  }
  std::sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) {
    if (a.stats->total_ns != b.stats->total_ns) return a.stats->total_ns > b.stats->total_ns;
    return a.name < b.name;
  });

  std::string out;
  if (lines.empty()) {
    out += fmt::format("{}Kernel summary: no kernel dispatches were recorded\n", kTag);
  } else {
    out += fmt::format(
        "{}Kernel summary: {} kernel(s), {} launch(es). Time of a launch: mean of its passes. "
        "Counters: a launch's value (first pass that collected it), averaged over the launches "
        "that have it.\n",
        kTag, lines.size(), launches);
    // Cells: the fixed columns, then the counters, then the name (left-aligned, unpadded).
    std::vector<std::string> header = {"Time(%)", "Total",    "Avg",    "Min",
                                       "Max",     "Launches", "Passes", "Spread"};
    for (const auto& c : counter_order_) header.push_back(c);
    std::vector<std::vector<std::string>> cells;
    for (const auto& line : lines) {
      const KernelStats& k = *line.stats;
      double share = all_ns > 0 ? 100.0 * k.total_ns / all_ns : 0.0;
      std::vector<std::string> row = {
          fmt::format("{:.1f}%", share),
          format_duration(k.total_ns),
          format_duration(k.total_ns / static_cast<double>(k.launches)),
          format_duration(k.min_ns),
          format_duration(k.max_ns),
          std::to_string(k.launches),
          std::to_string(k.passes),
          k.max_spread_pct < 0 ? std::string("-") : fmt::format("{:.1f}%", k.max_spread_pct)};
      for (const auto& c : counter_order_) {
        auto it = k.counters.find(c);
        row.push_back(it != k.counters.end() && it->second.count > 0
                          ? format_count(it->second.sum / static_cast<double>(it->second.count))
                          : "-");
      }
      cells.push_back(std::move(row));
    }
    std::vector<size_t> width(header.size());
    for (size_t i = 0; i < header.size(); ++i) {
      width[i] = header[i].size();
      for (const auto& row : cells) width[i] = std::max(width[i], row[i].size());
    }
    auto emit = [&](const std::vector<std::string>& row, const std::string& name) {
      out += kTag;
      for (size_t i = 0; i < row.size(); ++i) {
        out += fmt::format("{:>{}}  ", row[i], width[i]);
      }
      out += name;
      out += '\n';
    };
    emit(header, "Kernel");
    for (size_t i = 0; i < lines.size(); ++i) {
      emit(cells[i], truncate_name(lines[i].name, kNameWidth));
    }
  }
  out += render_trust();
  out += render_instructions();
  std::string reasons;
  for (const auto& [reason, count] : s.declined_by_reason) {
    reasons += fmt::format("{}{}: {}", reasons.empty() ? " (" : ", ", reason, count);
  }
  if (!reasons.empty()) reasons += ")";
  std::string lost = s.counter_passes_lost == 0
                         ? ""
                         : fmt::format(", {} counter passes lost", s.counter_passes_lost);
  if (std::string line = snapshots_.line(s); !line.empty())
    out += fmt::format("{}Snapshots: {}\n", kTag, line);
  out += fmt::format(
      "{}Totals: {} launches, {} replayed, {} declined{}, {} not selected, {} passes{}, exit code "
      "{}\n",
      kTag, s.launches, s.replayed, s.declined, reasons, s.not_selected, s.passes, lost,
      s.exit_code);
  return out;
}

Status SummaryWriter::service_sample(const ServiceSampleRecord& r) {
  const bool pc = r.service == "pc_sampling";
  if (!pc && r.service != "sass_metrics") return Status::Ok();
  if (!pc) {
    if (sass_metric_.empty() || (r.name == "smsp__sass_inst_executed" && sass_metric_ != r.name))
      sass_metric_ = r.name;
    if (r.name != sass_metric_) return Status::Ok();
  }
  Instruction& in = instructions_[r.kernel_id][{r.function, r.pc_offset}];
  if (in.text.empty()) {
    const auto slash = r.source_file.rfind('/');
    const std::string file =
        slash == std::string::npos ? r.source_file : r.source_file.substr(slash + 1);
    in.text =
        file.empty() ? r.instruction : fmt::format("{}:{} {}", file, r.source_line, r.instruction);
  }
  (pc ? in.samples : in.sass) += r.value;
  return Status::Ok();
}

std::string SummaryWriter::render_instructions() const {
  std::string out;
  for (const auto& [kernel, by_pc] : instructions_) {
    std::vector<const Instruction*> all;
    for (const auto& [key, in] : by_pc) all.push_back(&in);
    auto top = [&](double Instruction::*field, const char* what) {
      double total = 0;
      for (const auto* in : all) total += in->*field;
      if (total <= 0) return std::string();
      std::vector<const Instruction*> sorted = all;
      std::stable_sort(sorted.begin(), sorted.end(),
                       [&](const auto* a, const auto* b) { return a->*field > b->*field; });
      std::string text = fmt::format(" by {}:", what);
      for (size_t i = 0; i < sorted.size() && i < kTopInstructions; ++i) {
        if (sorted[i]->*field <= 0) break;
        text += fmt::format("{} {} ({:.0f}%)", i ? "," : "", sorted[i]->text,
                            100.0 * (sorted[i]->*field) / total);
      }
      return text;
    };
    const std::string pc = top(&Instruction::samples, "PC samples");
    const std::string sass = top(&Instruction::sass, sass_metric_.c_str());
    out += fmt::format("{}Top instructions of {}:{}{}{}\n", kTag,
                       truncate_name(kernel_names_(kernel), kNameWidth), pc,
                       !pc.empty() && !sass.empty() ? ";" : "", sass);
  }
  return out;
}

Status SummaryWriter::finish(const RunSummary& s) {
  if (finished_) return Error(KREPLAY_STATUS_ERROR, "summary writer: finish called twice");
  finished_ = true;
  for (const auto& [d, p] : pending_.take_incomplete()) account(d, p);
  std::string text = render(s);
  if (stream_ == nullptr) return Status::Ok();
  if (std::fwrite(text.data(), 1, text.size(), stream_) != text.size() ||
      std::fflush(stream_) != 0) {
    return Error(KREPLAY_STATUS_ERROR, "cannot write the summary to its stream");
  }
  return Status::Ok();
}

}  // namespace kreplay::output
