// What CUPTI's per-instruction services can collect, for `--list-avail` and the CUDA backend's
// services (backends/cuda/services/): the SASS metrics of a chip and the PC-sampling stall
// reasons of a context.
//
// SASS metrics are listed from a chip name with no GPU once CUPTI's profiler is initialized
// (sass_metrics() initializes the host API for the chip first: cuptiSassMetricsGetNumOfMetrics
// answers CUPTI_ERROR_NOT_INITIALIZED before, seen with CUPTI 13.0 on the build machine). Stall
// reasons are a property of a context: they need a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.hpp"

typedef struct CUctx_st* CUcontext;

namespace kreplay::cupti {

struct SassMetricInfo {
  uint64_t id = 0;  ///< CUPTI's metric id (what SetConfig and the flushed records carry)
  std::string name;
  std::string description;
};

/// The default per-instruction set (--source-counters), as ncu's SourceCounters: executions,
/// thread executions, global memory instructions (requests) and the sectors they touched. Names a
/// chip lacks are left out of its default. The "_ideal" sector metrics are not in it: third-party
/// reports (unverified here) say CUPTI replays the kernel for them before sm_120, which would run
/// a kernel twice inside one kreplay pass.
inline constexpr const char* kSassDefaultSet[] = {
    "smsp__sass_inst_executed",
    "smsp__sass_thread_inst_executed",
    "smsp__sass_thread_inst_executed_pred_on",
    "smsp__sass_inst_executed_op_global",
    "smsp__sass_inst_executed_op_global_ld",
    "smsp__sass_inst_executed_op_global_st",
    "smsp__sass_inst_executed_op_global_red",
    "smsp__sass_inst_executed_op_global_atom",
    "smsp__sass_sectors_mem_global",
};
bool in_sass_default_set(const std::string& name);

/// Every SASS metric of @p chip ("GH100"), sorted by name. NOT_AVAILABLE (with CUPTI's reason)
/// where CUPTI cannot list them.
Result<std::vector<SassMetricInfo>> sass_metrics(const std::string& chip);

struct StallReason {
  uint32_t index = 0;  ///< CUPTI's stall-reason index (what the samples carry)
  std::string name;    ///< "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle"
};

/// The PC-sampling stall reasons of @p ctx (cuptiPCSamplingGetNumStallReasons /
/// GetStallReasons). CUPTI may need PC sampling enabled on the context first; the caller does it.
Result<std::vector<StallReason>> pc_stall_reasons(CUcontext ctx);

/// The stall reasons of CUDA device @p ordinal, on its primary context (retained and released
/// here, PC sampling enabled and disabled around the query): for `--list-avail` on a GPU machine.
Result<std::vector<StallReason>> pc_stall_reasons_of_device(int ordinal);

}  // namespace kreplay::cupti
