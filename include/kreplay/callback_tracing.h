/**
 * @file callback_tracing.h
 * @brief Callback tracing: synchronous callbacks on the thread that caused the event.
 */
#ifndef KREPLAY_CALLBACK_TRACING_H_
#define KREPLAY_CALLBACK_TRACING_H_

#include "kreplay/fwd.h"

KREPLAY_EXTERN_C_BEGIN

/**
 * @brief What a callback receives. `payload` points at the kind's payload struct (below), valid
 * only during the callback.
 */
typedef struct kreplay_callback_tracing_record_t {
  kreplay_context_id_t context_id;         ///< context whose service fired
  uint64_t thread_id;                      ///< OS thread id of the calling thread
  kreplay_correlation_id_t correlation_id; ///< same on every pass of a replayed dispatch
  kreplay_callback_tracing_kind_t kind;    ///< domain
  uint32_t operation;                      ///< the kind's operation enum
  kreplay_callback_phase_t phase;          ///< ENTER or EXIT
  void* payload;                           ///< kind-specific data
} kreplay_callback_tracing_record_t;

/**
 * @brief A callback tracing callback.
 * @param record what happened
 * @param user_data storage shared by the ENTER and EXIT of one event (for KERNEL_REPLAY: shared by
 *        the whole replay sequence of a dispatch, see kernel_replay.h)
 * @param callback_data the pointer given when the service was configured
 */
typedef void (*kreplay_callback_tracing_cb_t)(kreplay_callback_tracing_record_t record,
                                              kreplay_user_data_t* user_data,
                                              void* callback_data);

/** @brief Payload of KERNEL_DISPATCH / EXECUTE: one per executed pass. */
typedef struct kreplay_callback_tracing_kernel_dispatch_data_t {
  uint64_t size;                                ///< sizeof as filled
  kreplay_kernel_dispatch_info_t dispatch_info; ///< the logical dispatch
  uint64_t replay_pass;                         ///< 0-based pass index (0 when not replayed)
  kreplay_timestamp_t start_timestamp;          ///< EXIT only: when the pass started executing
  kreplay_timestamp_t end_timestamp;            ///< EXIT only: when the pass finished
} kreplay_callback_tracing_kernel_dispatch_data_t;

/** @brief Payload of CODE_OBJECT (LOAD and KERNEL_SYMBOL_REGISTER). */
typedef struct kreplay_callback_tracing_code_object_data_t {
  uint64_t size;                ///< sizeof as filled
  kreplay_agent_id_t agent_id;  ///< device the module is loaded on
  uint64_t code_object_id;      ///< module handle, unique in the process
  const char* module_name;      ///< file or embedded module name, may be ""
  uint64_t kernel_id;           ///< KERNEL_SYMBOL_REGISTER only
  const char* kernel_name;      ///< KERNEL_SYMBOL_REGISTER only: demangled
  const char* mangled_name;     ///< KERNEL_SYMBOL_REGISTER only: as in the binary
} kreplay_callback_tracing_code_object_data_t;

/** @brief Payload of MEMORY_ALLOCATION. */
typedef struct kreplay_callback_tracing_memory_allocation_data_t {
  uint64_t size;                ///< sizeof as filled
  kreplay_agent_id_t agent_id;  ///< owning device
  uint64_t address;             ///< device address
  uint64_t allocation_size;     ///< bytes
  kreplay_memory_kind_t memory_kind;
  kreplay_timestamp_t timestamp;
} kreplay_callback_tracing_memory_allocation_data_t;

/**
 * @brief Subscribe @p context_id to a callback tracing domain.
 *
 * @param context_id context that owns the subscription
 * @param kind domain
 * @param operations operations to receive; NULL (with count 0) means all
 * @param operations_count number of entries in @p operations
 * @param callback called for every event of the domain while the context is active
 * @param callback_args passed back to @p callback
 * @retval KREPLAY_STATUS_SUCCESS subscribed
 * @retval KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED called outside a tool's initialize
 * @retval KREPLAY_STATUS_ERROR_CONTEXT_NOT_FOUND no such context
 * @retval KREPLAY_STATUS_ERROR_KIND_NOT_FOUND unknown @p kind
 * @retval KREPLAY_STATUS_ERROR_OPERATION_NOT_FOUND an operation is not of @p kind
 * @retval KREPLAY_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED @p kind is KERNEL_REPLAY and another
 *         context of the process already subscribes to it, or the context already subscribes
 *         to @p kind
 * @retval KREPLAY_STATUS_ERROR_INVALID_ARGUMENT @p callback is NULL, or @p operations is NULL
 *         with a non-zero count
 */
KREPLAY_API kreplay_status_t kreplay_configure_callback_tracing_service(
    kreplay_context_id_t context_id, kreplay_callback_tracing_kind_t kind,
    const uint32_t* operations, size_t operations_count, kreplay_callback_tracing_cb_t callback,
    void* callback_args);

/**
 * @brief Name of a tracing kind ("KERNEL_REPLAY"), or of one of its operations ("CONFIG").
 * @retval KREPLAY_STATUS_SUCCESS @p name points at a static string
 * @retval KREPLAY_STATUS_ERROR_KIND_NOT_FOUND / _OPERATION_NOT_FOUND unknown value
 */
KREPLAY_API kreplay_status_t kreplay_query_callback_tracing_kind_name(
    kreplay_callback_tracing_kind_t kind, const char** name);
KREPLAY_API kreplay_status_t kreplay_query_callback_tracing_kind_operation_name(
    kreplay_callback_tracing_kind_t kind, uint32_t operation, const char** name);

KREPLAY_EXTERN_C_END

#endif  // KREPLAY_CALLBACK_TRACING_H_
