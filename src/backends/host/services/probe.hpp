// Probe: what the host device's per-pass services observe of one submission.
//
// The host device has no instruction set, so each call site of ThreadContext::load / store /
// atomic_add / count_ops in a kernel is one instruction (its source_location is the line info).
// Threads run one after another on the stream's worker, so the probe sees a deterministic
// sequence of executions, from which it derives, per instruction:
//  - thread-level executions (count_ops(n) executes its instruction n times) and warp-level
//    executions (a warp is 32 consecutive threads of a block; per warp, the instruction counts as
//    often as the thread that executed it most often) — SASS metrics;
//  - PC samples: a virtual clock advances by a fixed cost per execution (load 8 cycles, store 4,
//    atomic 16, one per op); every 2^period_log2 cycles the instruction the clock is in gets a
//    sample, its stall reason fixed by its kind — PC sampling;
//  - PM samples: every interval (1 cycle = 1 ns of virtual time) the running totals of bytes read
//    and written, ops and instructions — PM sampling.
// Equal work gives equal values on every pass and every run. Used by one worker thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <source_location>
#include <string>
#include <tuple>
#include <vector>

#include "backends/host/hostrt.hpp"
#include "device/service.hpp"

namespace kreplay::hostrt {

struct ProbeSite {
  std::string file;
  uint32_t line = 0, column = 0;
  ProbeOp op = ProbeOp::kOps;
  uint32_t bytes = 0;  ///< per access (0 for ops)
  uint64_t thread_executions = 0;
  uint64_t warp_executions = 0;
  uint64_t samples = 0;
  uint64_t pc_offset = 0;  ///< assigned by finish(): 16 bytes per site in source order
  // warp accounting while running
  uint64_t cur_warp = UINT64_MAX, cur_thread = UINT64_MAX, thread_count = 0, warp_max = 0;
};

/// Running totals at one PM sample point (time in virtual ns from the submission's start).
struct PmPoint {
  uint64_t time_ns = 0;
  uint64_t bytes_read = 0, bytes_written = 0, ops = 0, instructions = 0;
};

class Probe {
 public:
  Probe(uint32_t period_log2, uint64_t pm_interval_ns, device::ServiceSettings settings);

  /// One execution of the call site @p at by thread @p thread of warp @p warp.
  void on(ProbeOp op, uint32_t bytes, uint64_t n, const std::source_location& at, uint64_t warp,
          uint64_t thread);
  /// After the submission ran: close the warp counts, order the sites, take the last PM point.
  void finish();

  const std::vector<ProbeSite>& sites() const { return sites_; }
  const std::vector<PmPoint>& pm_points() const { return pm_; }
  const device::ServiceSettings& settings() const { return settings_; }

  /// The instruction text of a site ("LDG.E.32", "STG.E.64", "ATOMG.E.ADD.32", "FFMA").
  static std::string mnemonic(const ProbeSite& site);
  /// The stall reason PC samples of a site carry.
  static const char* stall_reason(ProbeOp op);
  static constexpr uint64_t kMaxPmPoints = 100000;

 private:
  void close_warp(ProbeSite& s);
  uint64_t period_;
  uint64_t interval_;
  device::ServiceSettings settings_;
  uint64_t clock_ = 0;
  uint64_t next_pm_ = 0;
  PmPoint totals_;
  std::vector<ProbeSite> sites_;
  std::map<std::tuple<const char*, uint32_t, uint32_t, int, uint32_t>, size_t> index_;
  std::vector<PmPoint> pm_;
};

}  // namespace kreplay::hostrt
