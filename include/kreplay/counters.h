/**
 * @file counters.h
 * @brief Hardware counters: listing, configs, and the dispatch counting service.
 */
#ifndef KREPLAY_COUNTERS_H_
#define KREPLAY_COUNTERS_H_

#include "kreplay/fwd.h"

KREPLAY_EXTERN_C_BEGIN

/** @brief One counter an agent can collect. Strings live until the process ends. */
typedef struct kreplay_counter_info_t {
  uint64_t size;                            ///< [in] caller's sizeof; [out] bytes filled
  kreplay_counter_id_t id;                  ///< handle for records and queries
  kreplay_agent_id_t agent_id;              ///< agent the counter belongs to
  const char* name;                         ///< e.g. "smsp__inst_executed.sum"
  const char* description;                  ///< one sentence
  const char* unit;                         ///< e.g. "bytes", "inst", "%"
  kreplay_counter_value_type_t value_type;  ///< count, ratio or throughput
} kreplay_counter_info_t;

/** Size of the first version of kreplay_counter_info_t. */
#define KREPLAY_COUNTER_INFO_V1_SIZE KREPLAY_STRUCT_SIZE(kreplay_counter_info_t, value_type)

/**
 * @brief Receives an agent's counters.
 * @return KREPLAY_STATUS_SUCCESS to continue (the value is otherwise ignored)
 */
typedef kreplay_status_t (*kreplay_agent_counters_cb_t)(kreplay_agent_id_t agent_id,
                                                        const kreplay_counter_info_t* counters,
                                                        size_t count, void* user_data);

/**
 * @brief List the counters of @p agent_id; @p callback is called once with all of them.
 * @retval KREPLAY_STATUS_SUCCESS listed
 * @retval KREPLAY_STATUS_ERROR_AGENT_NOT_FOUND no such agent
 * @retval KREPLAY_STATUS_ERROR_NOT_AVAILABLE counters are not available on the agent
 *         (see kreplay_get_last_error_message for why)
 */
KREPLAY_API kreplay_status_t kreplay_iterate_agent_counters(kreplay_agent_id_t agent_id,
                                                            kreplay_agent_counters_cb_t callback,
                                                            void* user_data);

/**
 * @brief Describe one counter.
 * @retval KREPLAY_STATUS_SUCCESS filled
 * @retval KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND no such counter
 * @retval KREPLAY_STATUS_ERROR_INCOMPATIBLE_ABI info->size too small
 */
KREPLAY_API kreplay_status_t kreplay_query_counter_info(kreplay_counter_id_t counter_id,
                                                        kreplay_counter_info_t* info);

/**
 * @brief Build a counter config for @p agent_id from counter names.
 *
 * @retval KREPLAY_STATUS_SUCCESS @p config_id holds the new config
 * @retval KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND a name is unknown; kreplay_get_last_error_message
 *         names it and suggests close names
 * @retval KREPLAY_STATUS_ERROR_EXCEEDS_HW_LIMIT the set cannot be collected on the agent (on the
 *         host device: more counters than one pass holds); the message names the group
 * @retval KREPLAY_STATUS_ERROR_AGENT_NOT_FOUND no such agent
 * @retval KREPLAY_STATUS_ERROR_INVALID_ARGUMENT NULL pointers or @p count is 0
 */
KREPLAY_API kreplay_status_t kreplay_create_counter_config(kreplay_agent_id_t agent_id,
                                                           const char* const* counter_names,
                                                           size_t count,
                                                           kreplay_counter_config_id_t* config_id);

/** @brief What a counter config holds. */
typedef struct kreplay_counter_config_info_t {
  uint64_t size;                ///< [in] caller's sizeof; [out] bytes filled
  kreplay_agent_id_t agent_id;  ///< agent the config is for
  uint64_t counter_count;       ///< counters in the config
  uint64_t pass_count;          ///< hardware passes the backend needs to collect all of them
} kreplay_counter_config_info_t;

/**
 * @brief Describe a counter config.
 * @retval KREPLAY_STATUS_SUCCESS filled
 * @retval KREPLAY_STATUS_ERROR_CONFIG_NOT_FOUND no such config
 * @retval KREPLAY_STATUS_ERROR_INCOMPATIBLE_ABI info->size too small
 */
KREPLAY_API kreplay_status_t kreplay_query_counter_config(kreplay_counter_config_id_t config_id,
                                                          kreplay_counter_config_info_t* info);

/** @brief Data handed to both counting callbacks. */
typedef struct kreplay_dispatch_counting_data_t {
  uint64_t size;                                 ///< sizeof as filled
  kreplay_kernel_dispatch_info_t dispatch_info;  ///< the logical dispatch
  kreplay_correlation_id_t correlation_id;       ///< same on every pass
  uint64_t replay_pass;                          ///< pass about to run (0 when not replayed)
  kreplay_timestamp_t start_timestamp;  ///< record callback only: when the pass executed
  kreplay_timestamp_t end_timestamp;    ///< record callback only
  /** Record callback only: SUCCESS, or why the counters of this pass were lost (the counter
   *  service failed, even after starting over on a fresh profiler object); the callback then
   *  gets no records. */
  kreplay_status_t status;
  const char* status_message;           ///< record callback only: "" or what failed
} kreplay_dispatch_counting_data_t;

/**
 * @brief Called before every executed pass of every dispatch while the context is active (and not
 * locally stopped for the pass). The tool picks the counters of this pass by setting @p config;
 * leaving it at handle 0 collects nothing. @p user_data reaches the record callback of this pass.
 */
typedef void (*kreplay_dispatch_counting_cb_t)(const kreplay_dispatch_counting_data_t* data,
                                               kreplay_counter_config_id_t* config,
                                               kreplay_user_data_t* user_data,
                                               void* callback_args);

/** @brief One counter value of one pass of one dispatch. */
typedef struct kreplay_counter_record_t {
  uint64_t size;                    ///< sizeof as filled
  uint64_t dispatch_id;             ///< the logical dispatch
  uint64_t replay_pass;             ///< pass the value was collected on
  kreplay_agent_id_t agent_id;      ///< device
  kreplay_counter_id_t counter_id;  ///< see kreplay_query_counter_info
  double value;                     ///< the value
} kreplay_counter_record_t;

/**
 * @brief Called once per pass that collected counters, after the pass completed and before its
 * PASS EXIT, with every value of the pass (none yet on the earlier passes of a set that needs
 * several). Also called, with no records and data->status set, for a pass whose counters were
 * lost: the run goes on, and the tool can say so in its outputs.
 */
typedef void (*kreplay_counter_record_cb_t)(const kreplay_dispatch_counting_data_t* data,
                                            const kreplay_counter_record_t* records,
                                            size_t record_count, kreplay_user_data_t user_data,
                                            void* callback_args);

/**
 * @brief Collect counters per dispatch in @p context_id.
 * @retval KREPLAY_STATUS_SUCCESS configured
 * @retval KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED called outside a tool's initialize
 * @retval KREPLAY_STATUS_ERROR_CONTEXT_NOT_FOUND no such context
 * @retval KREPLAY_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED the context already counts
 * @retval KREPLAY_STATUS_ERROR_INVALID_ARGUMENT a callback is NULL
 */
KREPLAY_API kreplay_status_t kreplay_configure_dispatch_counting_service(
    kreplay_context_id_t context_id, kreplay_dispatch_counting_cb_t dispatch_callback,
    void* dispatch_callback_args, kreplay_counter_record_cb_t record_callback,
    void* record_callback_args);

KREPLAY_EXTERN_C_END

#endif  // KREPLAY_COUNTERS_H_
