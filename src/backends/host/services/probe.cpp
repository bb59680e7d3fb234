#include "backends/host/services/probe.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace kreplay::hostrt {
namespace {

uint64_t cost(ProbeOp op, uint64_t n) {
  switch (op) {
    case ProbeOp::kLoad:
      return 8 * n;
    case ProbeOp::kStore:
      return 4 * n;
    case ProbeOp::kAtomic:
      return 16 * n;
    case ProbeOp::kOps:
      return n;
  }
  return n;
}

}  // namespace

Probe::Probe(uint32_t period_log2, uint64_t pm_interval_ns, device::ServiceSettings settings)
    : period_(period_log2 >= 63 ? UINT64_MAX : (uint64_t{1} << period_log2)),
      interval_(std::max<uint64_t>(1, pm_interval_ns)),
      settings_(std::move(settings)),
      next_pm_(interval_) {}

void Probe::close_warp(ProbeSite& s) {
  s.warp_executions += s.warp_max;
  s.warp_max = 0;
  s.thread_count = 0;
}

void Probe::on(ProbeOp op, uint32_t bytes, uint64_t n, const std::source_location& at,
               uint64_t warp, uint64_t thread) {
  auto key = std::make_tuple(at.file_name(), at.line(), at.column(), static_cast<int>(op), bytes);
  auto [it, inserted] = index_.try_emplace(key, sites_.size());
  if (inserted) {
    ProbeSite site;
    site.file = at.file_name();
    site.line = at.line();
    site.column = at.column();
    site.op = op;
    site.bytes = bytes;
    sites_.push_back(std::move(site));
  }
  ProbeSite& s = sites_[it->second];
  if (s.cur_warp != warp) {
    close_warp(s);
    s.cur_warp = warp;
  }
  if (s.cur_thread != thread) {
    s.cur_thread = thread;
    s.thread_count = 0;
  }
  s.thread_count += n;
  s.warp_max = std::max(s.warp_max, s.thread_count);
  s.thread_executions += n;

  const uint64_t before = clock_;
  clock_ += cost(op, n);
  if (period_ != UINT64_MAX) s.samples += clock_ / period_ - before / period_;

  totals_.instructions += n;
  if (op == ProbeOp::kLoad || op == ProbeOp::kAtomic) totals_.bytes_read += uint64_t{bytes} * n;
  if (op == ProbeOp::kStore || op == ProbeOp::kAtomic) totals_.bytes_written += uint64_t{bytes} * n;
  if (op == ProbeOp::kOps) totals_.ops += n;
  while (clock_ >= next_pm_ && pm_.size() < kMaxPmPoints) {
    PmPoint p = totals_;
    p.time_ns = next_pm_;
    pm_.push_back(p);
    next_pm_ += interval_;
  }
  if (clock_ >= next_pm_) next_pm_ = (clock_ / interval_ + 1) * interval_;  // capped: skip ahead
}

void Probe::finish() {
  for (auto& s : sites_) close_warp(s);
  std::sort(sites_.begin(), sites_.end(), [](const ProbeSite& a, const ProbeSite& b) {
    return std::tie(a.file, a.line, a.column, a.op, a.bytes) <
           std::tie(b.file, b.line, b.column, b.op, b.bytes);
  });
  for (size_t i = 0; i < sites_.size(); ++i) sites_[i].pc_offset = 16 * i;
  index_.clear();
  if ((pm_.empty() || pm_.back().time_ns < clock_) && pm_.size() < kMaxPmPoints) {
    PmPoint p = totals_;
    p.time_ns = clock_;
    pm_.push_back(p);
  }
}

std::string Probe::mnemonic(const ProbeSite& site) {
  const unsigned bits = site.bytes * 8;
  switch (site.op) {
    case ProbeOp::kLoad:
      return fmt::format("LDG.E.{}", bits);
    case ProbeOp::kStore:
      return fmt::format("STG.E.{}", bits);
    case ProbeOp::kAtomic:
      return fmt::format("ATOMG.E.ADD.{}", bits);
    case ProbeOp::kOps:
      return "FFMA";
  }
  return "NOP";
}

const char* Probe::stall_reason(ProbeOp op) {
  switch (op) {
    case ProbeOp::kLoad:
      return "long_scoreboard";
    case ProbeOp::kStore:
      return "lg_throttle";
    case ProbeOp::kAtomic:
      return "membar";
    case ProbeOp::kOps:
      return "selected";
  }
  return "selected";
}

void ThreadContext::note(ProbeOp op, uint32_t bytes, uint64_t n, const Where& at) {
  const uint64_t per_block = uint64_t{block_dim.x} * block_dim.y * block_dim.z;
  const uint64_t in_block =
      (uint64_t{thread_idx.z} * block_dim.y + thread_idx.y) * block_dim.x + thread_idx.x;
  const uint64_t block =
      (uint64_t{block_idx.z} * grid_dim.y + block_idx.y) * grid_dim.x + block_idx.x;
  const uint64_t warps_per_block = (per_block + 31) / 32;
  probe_->on(op, bytes, n, at, block * warps_per_block + in_block / 32,
             block * per_block + in_block);
}

}  // namespace kreplay::hostrt
