/**
 * @file services.h
 * @brief Per-pass services: PC sampling, SASS (per-instruction) metrics and PM sampling.
 *
 * Each service is configured on a context during a tool's initialize, with a settings struct of
 * its own and the one record callback type below. A configured service collects on every executed
 * pass of every dispatch on which its context takes part: the context is active and, inside a
 * replay loop, not stopped by replay_stop_context for the pass (kernel_replay.h). So a tool that
 * puts PC sampling on one context, SASS metrics on a second and counters on a third, and switches
 * them per pass in PASS ENTER, gets each service only on its passes. Unlike rocprofiler-sdk's PC
 * sampling, every service here obeys the local context calls.
 *
 * One pass runs one kind of instrumentation: counters, PC sampling, SASS metrics and PM sampling
 * disturb each other (CUPTI does not mix its profiling APIs). When more than one of them would
 * collect on the same pass (counters count when a counting callback picked a config), none of
 * them collects on that pass: each is told so in its record callback, with no records and status
 * KREPLAY_STATUS_ERROR_SERVICE_CONFLICT, and the run goes on. Dispatch tracing (timing) shares any
 * pass.
 *
 * Records of one pass are delivered after the pass completed and before its PASS EXIT, on the
 * launching thread, like counter records. Every record names its dispatch, pass, agent and
 * kernel.
 */
#ifndef KREPLAY_SERVICES_H_
#define KREPLAY_SERVICES_H_

#include "kreplay/fwd.h"

KREPLAY_EXTERN_C_BEGIN

/** @brief The per-pass services (counters and dispatch tracing have their own calls). */
typedef enum kreplay_pass_service_kind_t {
  KREPLAY_PASS_SERVICE_NONE = 0,
  KREPLAY_PASS_SERVICE_PC_SAMPLING,   ///< warp-state samples per instruction (stall reasons)
  KREPLAY_PASS_SERVICE_SASS_METRICS,  ///< exact per-instruction counts (code patching)
  KREPLAY_PASS_SERVICE_PM_SAMPLING,   ///< counters sampled at intervals during the kernel
  KREPLAY_PASS_SERVICE_LAST,
} kreplay_pass_service_kind_t;

/** @brief Settings of PC sampling. */
typedef struct kreplay_pc_sampling_config_t {
  uint64_t size;         ///< sizeof the caller's struct
  uint32_t period_log2;  ///< sample every 2^period_log2 cycles, 5..31 (CUPTI's range); 0 = 10
} kreplay_pc_sampling_config_t;

/** Size of the first version of kreplay_pc_sampling_config_t. */
#define KREPLAY_PC_SAMPLING_CONFIG_V1_SIZE \
  KREPLAY_STRUCT_SIZE(kreplay_pc_sampling_config_t, period_log2)

/** @brief Settings of SASS metrics. */
typedef struct kreplay_sass_metrics_config_t {
  uint64_t size;               ///< sizeof the caller's struct
  const char* const* metrics;  ///< metric names (see kreplay_iterate_pass_service_metrics)
  size_t metric_count;         ///< 0: the agent's default per-instruction set (SourceCounters)
} kreplay_sass_metrics_config_t;

/** Size of the first version of kreplay_sass_metrics_config_t. */
#define KREPLAY_SASS_METRICS_CONFIG_V1_SIZE \
  KREPLAY_STRUCT_SIZE(kreplay_sass_metrics_config_t, metric_count)

/** @brief Settings of PM sampling. */
typedef struct kreplay_pm_sampling_config_t {
  uint64_t size;               ///< sizeof the caller's struct
  const char* const* metrics;  ///< metric names (see kreplay_iterate_pass_service_metrics)
  size_t metric_count;         ///< at least 1
  uint64_t interval_ns;        ///< time between samples; 0 = 1000 ns
} kreplay_pm_sampling_config_t;

/** Size of the first version of kreplay_pm_sampling_config_t. */
#define KREPLAY_PM_SAMPLING_CONFIG_V1_SIZE \
  KREPLAY_STRUCT_SIZE(kreplay_pm_sampling_config_t, interval_ns)

/** @brief What a record callback is told of the pass its records come from. */
typedef struct kreplay_pass_service_data_t {
  uint64_t size;                                 ///< sizeof as filled
  kreplay_pass_service_kind_t kind;              ///< the service
  kreplay_kernel_dispatch_info_t dispatch_info;  ///< the logical dispatch (agent, kernel, ...)
  kreplay_correlation_id_t correlation_id;       ///< same on every pass
  uint64_t replay_pass;                          ///< the pass (0 when not replayed)
  kreplay_timestamp_t start_timestamp;           ///< when the pass executed (0: it did not)
  kreplay_timestamp_t end_timestamp;
  /** SUCCESS, or why this pass collected nothing: SERVICE_CONFLICT (another service was on the
   *  same pass), or the backend's failure. Records are then absent. */
  kreplay_status_t status;
  const char* status_message;  ///< "" or what went wrong
} kreplay_pass_service_data_t;

/**
 * @brief One value of a per-pass service. Which fields are meaningful depends on the kind:
 *
 * | kind         | pc_offset, instruction, source | name          | timestamp | value          |
 * |--------------|--------------------------------|---------------|-----------|----------------|
 * | PC_SAMPLING  | the sampled instruction        | stall reason  | 0         | samples        |
 * | SASS_METRICS | the counted instruction        | metric        | 0         | count          |
 * | PM_SAMPLING  | 0, "", ""                      | metric        | sample end| value in sample|
 *
 * Strings stay valid until the record callback returns.
 */
typedef struct kreplay_pass_service_record_t {
  uint64_t size;                     ///< sizeof as filled
  kreplay_pass_service_kind_t kind;  ///< the service that produced it
  uint64_t dispatch_id;              ///< the logical dispatch
  uint64_t replay_pass;              ///< the pass it was collected on
  kreplay_agent_id_t agent_id;       ///< the device
  uint64_t kernel_id;                ///< the kernel symbol (see CODE_OBJECT)
  const char* function;              ///< mangled name of the function holding the instruction
  uint64_t pc_offset;                ///< instruction's offset in the function
  const char* instruction;           ///< its text ("LDG.E.32", ...) or ""
  const char* source_file;           ///< from the module's line info, or ""
  uint32_t source_line;              ///< 0 when unknown
  const char* name;                  ///< stall reason or metric name
  kreplay_timestamp_t timestamp;     ///< PM sampling: end of the sample's interval
  double value;                      ///< samples, count or value
} kreplay_pass_service_record_t;

/**
 * @brief Asked before every pass on which the service's context takes part (data->status and the
 * timestamps are zero): return non-zero to collect on this pass, 0 to sit it out (no collection,
 * no record callback, and the service does not count for SERVICE_CONFLICT). A tool uses it where
 * local context control cannot reach, e.g. a launch that is not replayed or is declined runs once
 * with every active context. NULL: collect on every such pass.
 */
typedef int (*kreplay_pass_service_dispatch_cb_t)(const kreplay_pass_service_data_t* data,
                                                  void* callback_args);

/**
 * @brief Receives the records of one pass of one dispatch from one service (none, with
 * data->status set, when the pass collected nothing).
 */
typedef void (*kreplay_pass_service_record_cb_t)(const kreplay_pass_service_data_t* data,
                                                 const kreplay_pass_service_record_t* records,
                                                 size_t record_count, void* callback_args);

/**
 * @brief Run PC sampling on the passes where @p context_id takes part.
 * @retval KREPLAY_STATUS_SUCCESS configured
 * @retval KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED called outside a tool's initialize
 * @retval KREPLAY_STATUS_ERROR_CONTEXT_NOT_FOUND no such context
 * @retval KREPLAY_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED the context already runs PC sampling
 * @retval KREPLAY_STATUS_ERROR_INCOMPATIBLE_ABI config->size too small
 * @retval KREPLAY_STATUS_ERROR_INVALID_ARGUMENT NULL config or record callback, period out of
 *         range
 * @retval KREPLAY_STATUS_ERROR_NOT_AVAILABLE an agent cannot sample PCs (CUDA devices in this
 *         build); kreplay_get_last_error_message names it
 */
KREPLAY_API kreplay_status_t kreplay_configure_pc_sampling_service(
    kreplay_context_id_t context_id, const kreplay_pc_sampling_config_t* config,
    kreplay_pass_service_dispatch_cb_t dispatch_callback, void* dispatch_callback_args,
    kreplay_pass_service_record_cb_t record_callback, void* record_callback_args);

/**
 * @brief Run SASS metrics on the passes where @p context_id takes part.
 * @retval KREPLAY_STATUS_SUCCESS configured
 * @retval KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED called outside a tool's initialize
 * @retval KREPLAY_STATUS_ERROR_CONTEXT_NOT_FOUND no such context
 * @retval KREPLAY_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED the context already runs SASS metrics
 * @retval KREPLAY_STATUS_ERROR_INCOMPATIBLE_ABI config->size too small
 * @retval KREPLAY_STATUS_ERROR_INVALID_ARGUMENT NULL config, record callback or metric name
 * @retval KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND a metric is unknown; the message names it and
 *         suggests close names
 * @retval KREPLAY_STATUS_ERROR_NOT_AVAILABLE an agent cannot collect SASS metrics
 */
KREPLAY_API kreplay_status_t kreplay_configure_sass_metrics_service(
    kreplay_context_id_t context_id, const kreplay_sass_metrics_config_t* config,
    kreplay_pass_service_dispatch_cb_t dispatch_callback, void* dispatch_callback_args,
    kreplay_pass_service_record_cb_t record_callback, void* record_callback_args);

/**
 * @brief Run PM sampling on the passes where @p context_id takes part.
 * @retval KREPLAY_STATUS_SUCCESS configured
 * @retval KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED called outside a tool's initialize
 * @retval KREPLAY_STATUS_ERROR_CONTEXT_NOT_FOUND no such context
 * @retval KREPLAY_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED the context already runs PM sampling
 * @retval KREPLAY_STATUS_ERROR_INCOMPATIBLE_ABI config->size too small
 * @retval KREPLAY_STATUS_ERROR_INVALID_ARGUMENT NULL config or record callback, no metric
 * @retval KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND a metric is unknown
 * @retval KREPLAY_STATUS_ERROR_NOT_AVAILABLE an agent cannot PM-sample
 */
KREPLAY_API kreplay_status_t kreplay_configure_pm_sampling_service(
    kreplay_context_id_t context_id, const kreplay_pm_sampling_config_t* config,
    kreplay_pass_service_dispatch_cb_t dispatch_callback, void* dispatch_callback_args,
    kreplay_pass_service_record_cb_t record_callback, void* record_callback_args);

/** @brief One metric (or, for PC sampling, stall reason) a service can collect. Strings live
 * until the process ends. */
typedef struct kreplay_pass_service_metric_t {
  uint64_t size;            ///< sizeof as filled
  const char* name;         ///< e.g. "smsp__sass_inst_executed"
  const char* description;  ///< one sentence
  int in_default_set;       ///< SASS metrics: collected when no metric is named
} kreplay_pass_service_metric_t;

/**
 * @brief Receives what a service of an agent can collect.
 * @return KREPLAY_STATUS_SUCCESS (the value is otherwise ignored)
 */
typedef kreplay_status_t (*kreplay_pass_service_metrics_cb_t)(
    kreplay_agent_id_t agent_id, kreplay_pass_service_kind_t kind,
    const kreplay_pass_service_metric_t* metrics, size_t count, void* user_data);

/**
 * @brief List what @p kind collects on @p agent_id; @p callback is called once with all of it.
 * @retval KREPLAY_STATUS_SUCCESS listed
 * @retval KREPLAY_STATUS_ERROR_AGENT_NOT_FOUND no such agent
 * @retval KREPLAY_STATUS_ERROR_INVALID_ARGUMENT NULL callback or an unknown kind
 * @retval KREPLAY_STATUS_ERROR_NOT_AVAILABLE the agent has no such service
 */
KREPLAY_API kreplay_status_t
kreplay_iterate_pass_service_metrics(kreplay_agent_id_t agent_id, kreplay_pass_service_kind_t kind,
                                     kreplay_pass_service_metrics_cb_t callback, void* user_data);

/** @brief Lower-case name of a service ("pc_sampling", "sass_metrics", "pm_sampling"); NULL if
 * unknown. */
KREPLAY_API const char* kreplay_get_pass_service_name(kreplay_pass_service_kind_t kind);

KREPLAY_EXTERN_C_END

#endif  // KREPLAY_SERVICES_H_
