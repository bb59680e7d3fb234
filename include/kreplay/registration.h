/**
 * @file registration.h
 * @brief How a tool is found, configured, initialized and finalized.
 *
 * A tool is any shared library (or the executable itself) that exports kreplay_configure with
 * default visibility. The SDK looks in the executable and in every library named in the
 * colon-separated environment variable KREPLAY_TOOL_LIBRARIES, calls each tool's kreplay_configure
 * once, then each returned initialize function. Services can be configured only inside initialize;
 * afterwards those calls return KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED. finalize runs once,
 * at process exit (or kreplay_finalize), in reverse order of initialization.
 *
 * @code
 * static int tool_init(kreplay_client_finalize_t fini, void* tool_data) {
 *   kreplay_context_id_t ctx;
 *   kreplay_create_context(&ctx);
 *   kreplay_configure_callback_tracing_service(ctx, KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY,
 *                                              NULL, 0, on_replay, NULL);
 *   kreplay_start_context(ctx);
 *   return 0;
 * }
 * kreplay_tool_configure_result_t* kreplay_configure(uint32_t version, const char* runtime,
 *                                                    uint32_t priority, kreplay_client_id_t* id) {
 *   static kreplay_tool_configure_result_t r = {sizeof(r), tool_init, tool_fini, NULL};
 *   id->name = "my-tool";
 *   return &r;
 * }
 * @endcode
 */
#ifndef KREPLAY_REGISTRATION_H_
#define KREPLAY_REGISTRATION_H_

#include "kreplay/fwd.h"

KREPLAY_EXTERN_C_BEGIN

/** @brief Handed to initialize: lets a tool finalize itself early. */
typedef void (*kreplay_client_finalize_t)(kreplay_client_id_t client_id);

/** @brief A tool's initialize: configure services here. Return 0 on success; non-zero unloads. */
typedef int (*kreplay_tool_initialize_t)(kreplay_client_finalize_t finalize_func, void* tool_data);

/** @brief A tool's finalize: flush outputs here. */
typedef void (*kreplay_tool_finalize_t)(void* tool_data);

/** @brief What kreplay_configure returns. */
typedef struct kreplay_tool_configure_result_t {
  uint64_t size;                         ///< sizeof this struct
  kreplay_tool_initialize_t initialize;  ///< may be NULL
  kreplay_tool_finalize_t finalize;      ///< may be NULL
  void* tool_data;                       ///< handed to both
} kreplay_tool_configure_result_t;

/**
 * @brief The symbol a tool exports.
 * @param version KREPLAY_VERSION of the SDK (major * 10000 + minor * 100 + patch)
 * @param runtime_version SDK version as text
 * @param priority order among loaded tools (0 first)
 * @param client_id the tool may set client_id->name
 * @return NULL to decline loading
 */
typedef kreplay_tool_configure_result_t* (*kreplay_configure_func_t)(
    uint32_t version, const char* runtime_version, uint32_t priority,
    kreplay_client_id_t* client_id);

/** The configure function a tool exports (visible even when the tool builds with
 * -fvisibility=hidden). */
__attribute__((visibility("default"))) kreplay_tool_configure_result_t* kreplay_configure(uint32_t version, const char* runtime_version,
                                                   uint32_t priority,
                                                   kreplay_client_id_t* client_id);

/**
 * @brief Register a configure function directly (a tool linked into the application, or a test).
 * Must be called before the SDK initializes; the tool then loads with the others.
 * @retval KREPLAY_STATUS_SUCCESS registered
 * @retval KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED the SDK already initialized
 * @retval KREPLAY_STATUS_ERROR_INVALID_ARGUMENT @p configure_func is NULL
 */
KREPLAY_API kreplay_status_t kreplay_force_configure(kreplay_configure_func_t configure_func);

/**
 * @brief Is the SDK initialized? @p status receives 1 once tools were loaded.
 */
KREPLAY_API kreplay_status_t kreplay_is_initialized(int* status);

/**
 * @brief Is the SDK finalized? @p status receives 1 once tools were finalized.
 */
KREPLAY_API kreplay_status_t kreplay_is_finalized(int* status);

KREPLAY_EXTERN_C_END

#endif  // KREPLAY_REGISTRATION_H_
