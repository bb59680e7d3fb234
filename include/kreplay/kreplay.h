/**
 * @file kreplay.h
 * @brief Umbrella header of the kreplay C API, with versions and status names.
 */
#ifndef KREPLAY_KREPLAY_H_
#define KREPLAY_KREPLAY_H_

#include "kreplay/agent.h"
#include "kreplay/callback_tracing.h"
#include "kreplay/context.h"
#include "kreplay/counters.h"
#include "kreplay/fwd.h"
#include "kreplay/kernel_replay.h"
#include "kreplay/markers.h"
#include "kreplay/range_replay.h"
#include "kreplay/registration.h"
#include "kreplay/services.h"

#define KREPLAY_VERSION_MAJOR 0
#define KREPLAY_VERSION_MINOR 1
#define KREPLAY_VERSION_PATCH 0
#define KREPLAY_VERSION \
  (KREPLAY_VERSION_MAJOR * 10000 + KREPLAY_VERSION_MINOR * 100 + KREPLAY_VERSION_PATCH)
#define KREPLAY_VERSION_STRING "0.1.0"

KREPLAY_EXTERN_C_BEGIN

/** @brief Enumerator name of a status ("KREPLAY_STATUS_ERROR_CONTEXT_ERROR"); NULL if unknown. */
KREPLAY_API const char* kreplay_get_status_name(kreplay_status_t status);

/** @brief One-sentence description of a status; NULL if unknown. */
KREPLAY_API const char* kreplay_get_status_string(kreplay_status_t status);

/**
 * @brief Details of the last failed call on this thread (which counter, which file), or "".
 * The string stays valid until the next API call on the thread.
 */
KREPLAY_API const char* kreplay_get_last_error_message(void);

/** @brief Lower-case name of a replay outcome ("replayed", "declined", "not_requested"); NULL if
 * unknown. */
KREPLAY_API const char* kreplay_get_replay_outcome_name(kreplay_replay_outcome_t outcome);

/** @brief Lower-case name of a decline reason ("snapshot_too_large", ...; "" for NONE); NULL if
 * unknown. */
KREPLAY_API const char* kreplay_get_decline_reason_name(kreplay_decline_reason_t reason);

/** @brief SDK version: @p major, @p minor, @p patch may each be NULL. */
KREPLAY_API kreplay_status_t kreplay_get_version(uint32_t* major, uint32_t* minor,
                                                 uint32_t* patch);

/** @brief Current time in the SDK's timestamp domain (nanoseconds). */
KREPLAY_API kreplay_status_t kreplay_get_timestamp(kreplay_timestamp_t* timestamp);

KREPLAY_EXTERN_C_END

#endif  // KREPLAY_KREPLAY_H_
