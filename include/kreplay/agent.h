/**
 * @file agent.h
 * @brief Agents: the devices kernels run on.
 */
#ifndef KREPLAY_AGENT_H_
#define KREPLAY_AGENT_H_

#include "kreplay/fwd.h"

KREPLAY_EXTERN_C_BEGIN

/**
 * @brief One device. Version 1 ends at `counters_per_pass`; later fields are appended.
 *
 * Callers set `size` to the size of the struct they know; the SDK fills at most that much.
 */
typedef struct kreplay_agent_t {
  uint64_t size;                ///< [in] sizeof the caller's struct; [out] bytes filled
  kreplay_agent_id_t id;        ///< handle used everywhere else in the API
  kreplay_agent_type_t type;    ///< host device or CUDA GPU
  uint32_t device_index;        ///< ordinal among agents of its type
  const char* name;             ///< marketing name, e.g. "NVIDIA H200"
  const char* chip_name;        ///< chip, e.g. "GH100"; counters are per chip
  uint64_t memory_bytes;        ///< total device memory
  uint32_t multiprocessor_count;  ///< SMs (or 1 on the host device)
  uint32_t compute_capability_major;
  uint32_t compute_capability_minor;
  uint32_t counters_per_pass;  ///< hardware counters one pass can hold (0 = scheduled by backend)
  char uuid[40];               ///< device UUID as text ("GPU-..."), NUL-terminated
} kreplay_agent_t;

/** Size of the first version of kreplay_agent_t. */
#define KREPLAY_AGENT_V1_SIZE KREPLAY_STRUCT_SIZE(kreplay_agent_t, uuid)

/**
 * @brief Number of agents in the process.
 * @retval KREPLAY_STATUS_SUCCESS @p count was written
 * @retval KREPLAY_STATUS_ERROR_INVALID_ARGUMENT @p count is NULL
 */
KREPLAY_API kreplay_status_t kreplay_get_agent_count(size_t* count);

/**
 * @brief Describe agent number @p index (0 ≤ index < count).
 * @param [in,out] agent caller sets agent->size; the SDK fills up to that size
 * @retval KREPLAY_STATUS_SUCCESS filled
 * @retval KREPLAY_STATUS_ERROR_AGENT_NOT_FOUND @p index out of range
 * @retval KREPLAY_STATUS_ERROR_INCOMPATIBLE_ABI agent->size < KREPLAY_AGENT_V1_SIZE
 * @retval KREPLAY_STATUS_ERROR_INVALID_ARGUMENT @p agent is NULL
 */
KREPLAY_API kreplay_status_t kreplay_query_agent(size_t index, kreplay_agent_t* agent);

/**
 * @brief Describe the agent with id @p agent_id.
 * @retval KREPLAY_STATUS_SUCCESS filled
 * @retval KREPLAY_STATUS_ERROR_AGENT_NOT_FOUND no such agent
 * @retval KREPLAY_STATUS_ERROR_INCOMPATIBLE_ABI agent->size < KREPLAY_AGENT_V1_SIZE
 */
KREPLAY_API kreplay_status_t kreplay_query_agent_by_id(kreplay_agent_id_t agent_id,
                                                       kreplay_agent_t* agent);

KREPLAY_EXTERN_C_END

#endif  // KREPLAY_AGENT_H_
