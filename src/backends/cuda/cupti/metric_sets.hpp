// Metric sets pinned for tests and benchmarks. No CUPTI headers: include it from anywhere.
#pragma once

#include <array>
#include <string>
#include <vector>

namespace kreplay::cupti {

/// Sixteen ordinary "speed of light" metrics that CUPTI 13.0 schedules in **10 passes** on GH100
/// (H100/H200), offline from the chip name; config image 21,344 bytes. It is the same shape as the
/// 16-metric "MIX" set measured on the H200 (reference/notes-h200-measurements.md: 10 passes with
/// CUPTI, 11 under ncu). Time, cycles, instructions, DRAM traffic, SOL throughputs, hit rates,
/// occupancy and three SASS-patched instruction counts. Single-metric pass counts (offline):
/// sm__throughput 8, gpu__compute_memory_throughput 5, l1tex__throughput 5, lts__throughput 4,
/// lts__t_sector_hit_rate 2, every other one 1. Used by profiler_host_test (pass count), by
/// range_profiler_gpu_test (exactly this many Start/Stop passes, no NaN) and by benchmarks.
inline constexpr std::array<const char*, 16> kTenPassMetrics = {
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.max",
    "smsp__inst_executed.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__t_sector_hit_rate.pct",
    "lts__t_sector_hit_rate.pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_inst_executed_op_global_ld.sum",
    "smsp__sass_inst_executed_op_global_st.sum",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
};

/// The pass count CUPTI 13.0 gives kTenPassMetrics on GH100.
inline constexpr size_t kTenPassMetricsPassesGH100 = 10;

/// Twenty-eight SM-side metrics -- instructions per pipe and the share of warps in each stall
/// reason (ncu's instruction and warp-state statistics) -- that CUPTI 13.0 also schedules in
/// **10 passes** on GH100, offline from the chip name. Unlike kTenPassMetrics, none of its passes
/// programs the memory system (DRAM, L2), whose passes cost 13-52 ms each to start on the H200
/// (bench/cuda/pass_cost.cu): the second 10-pass set of the kreplay-vs-ncu benchmark.
inline constexpr std::array<const char*, 28> kTenPassSmMetrics = {
    "sm__inst_executed_pipe_alu.sum",
    "sm__inst_executed_pipe_fma.sum",
    "sm__inst_executed_pipe_lsu.sum",
    "sm__inst_executed_pipe_xu.sum",
    "sm__inst_executed_pipe_fp64.sum",
    "sm__inst_executed_pipe_tensor.sum",
    "sm__inst_executed_pipe_uniform.sum",
    "sm__inst_executed_pipe_cbu.sum",
    "sm__inst_executed_pipe_adu.sum",
    "sm__inst_executed_pipe_tex.sum",
    "smsp__warp_issue_stalled_barrier_per_warp_active.pct",
    "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct",
    "smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct",
    "smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct",
    "smsp__warp_issue_stalled_wait_per_warp_active.pct",
    "smsp__warp_issue_stalled_not_selected_per_warp_active.pct",
    "smsp__warp_issue_stalled_selected_per_warp_active.pct",
    "smsp__warp_issue_stalled_lg_throttle_per_warp_active.pct",
    "smsp__warp_issue_stalled_mio_throttle_per_warp_active.pct",
    "smsp__warp_issue_stalled_no_instruction_per_warp_active.pct",
    "smsp__warp_issue_stalled_branch_resolving_per_warp_active.pct",
    "smsp__warp_issue_stalled_dispatch_stall_per_warp_active.pct",
    "smsp__warp_issue_stalled_drain_per_warp_active.pct",
    "smsp__warp_issue_stalled_imc_miss_per_warp_active.pct",
    "smsp__warp_issue_stalled_membar_per_warp_active.pct",
    "smsp__warp_issue_stalled_misc_per_warp_active.pct",
    "smsp__warp_issue_stalled_sleeping_per_warp_active.pct",
    "smsp__warp_issue_stalled_tex_throttle_per_warp_active.pct",
};

/// Two SM counters that CUPTI 13.0 schedules in **one pass** on GH100, offline from the chip name
/// (profiler_host_test and legacy_host_test pin it): the 1-pass case of the per-pass cost
/// benchmarks (bench/cuda/profiler_api_cost.cu). smsp__inst_executed.sum is deterministic for a
/// fixed launch, so two collection methods can be checked to agree on it.
inline constexpr std::array<const char*, 2> kOnePassSmMetrics = {
    "smsp__inst_executed.sum",
    "sm__cycles_elapsed.max",
};

/// kTenPassMetrics as the std::string list the wrappers take.
inline std::vector<std::string> ten_pass_metrics() {
  return {kTenPassMetrics.begin(), kTenPassMetrics.end()};
}

/// kTenPassSmMetrics as a std::string list.
inline std::vector<std::string> ten_pass_sm_metrics() {
  return {kTenPassSmMetrics.begin(), kTenPassSmMetrics.end()};
}

/// kOnePassSmMetrics as a std::string list.
inline std::vector<std::string> one_pass_sm_metrics() {
  return {kOnePassSmMetrics.begin(), kOnePassSmMetrics.end()};
}

}  // namespace kreplay::cupti
