/**
 * @file context.h
 * @brief Contexts: a set of services a tool starts and stops together.
 *
 * A tool creates contexts and configures services on them during its initialize function. It may
 * start and stop them at any time afterwards. Replay passes can mask contexts locally (see
 * kernel_replay.h) without changing the global state these functions manage.
 */
#ifndef KREPLAY_CONTEXT_H_
#define KREPLAY_CONTEXT_H_

#include "kreplay/fwd.h"

KREPLAY_EXTERN_C_BEGIN

/**
 * @brief Create a context.
 * @param [out] context_id receives the new context's id
 * @retval KREPLAY_STATUS_SUCCESS the context exists and is stopped
 * @retval KREPLAY_STATUS_ERROR_INVALID_ARGUMENT @p context_id is NULL
 * @retval KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED called outside a tool's initialize
 */
KREPLAY_API kreplay_status_t kreplay_create_context(kreplay_context_id_t* context_id);

/**
 * @brief Start a context: its services begin to deliver.
 * @retval KREPLAY_STATUS_SUCCESS started (also when it was already active)
 * @retval KREPLAY_STATUS_ERROR_CONTEXT_NOT_FOUND no such context
 */
KREPLAY_API kreplay_status_t kreplay_start_context(kreplay_context_id_t context_id);

/**
 * @brief Stop a context: its services stop delivering.
 * @retval KREPLAY_STATUS_SUCCESS stopped (also when it was not active)
 * @retval KREPLAY_STATUS_ERROR_CONTEXT_NOT_FOUND no such context
 */
KREPLAY_API kreplay_status_t kreplay_stop_context(kreplay_context_id_t context_id);

/**
 * @brief Is the context globally active?
 * @param [out] status receives 1 when active, 0 otherwise
 * @retval KREPLAY_STATUS_SUCCESS answered
 * @retval KREPLAY_STATUS_ERROR_CONTEXT_NOT_FOUND no such context
 * @retval KREPLAY_STATUS_ERROR_INVALID_ARGUMENT @p status is NULL
 */
KREPLAY_API kreplay_status_t kreplay_context_is_active(kreplay_context_id_t context_id,
                                                       int* status);

/**
 * @brief Does the id name a context that could be started?
 * @param [out] status receives 1 when valid, 0 otherwise
 * @retval KREPLAY_STATUS_SUCCESS answered (an unknown id answers 0)
 * @retval KREPLAY_STATUS_ERROR_INVALID_ARGUMENT @p status is NULL
 */
KREPLAY_API kreplay_status_t kreplay_context_is_valid(kreplay_context_id_t context_id,
                                                      int* status);

KREPLAY_EXTERN_C_END

#endif  // KREPLAY_CONTEXT_H_
