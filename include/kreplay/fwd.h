/**
 * @file fwd.h
 * @brief Basic types, enumerations and handles of the kreplay C API.
 *
 * Everything under include/kreplay/ compiles as C11. Enumerations start with a `_NONE = 0` value
 * (status codes with `_SUCCESS = 0`) and end with a `_LAST` sentinel; values are only appended.
 * Structs that cross the boundary start with `uint64_t size` and only grow at the end.
 */
#ifndef KREPLAY_FWD_H_
#define KREPLAY_FWD_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define KREPLAY_EXTERN_C_BEGIN extern "C" {
#define KREPLAY_EXTERN_C_END }
#else
#define KREPLAY_EXTERN_C_BEGIN
#define KREPLAY_EXTERN_C_END
#endif

#if defined(KREPLAY_BUILDING_SDK)
#define KREPLAY_API __attribute__((visibility("default")))
#else
#define KREPLAY_API
#endif

/** Size of a struct up to and including @p member (the CUPTI way of versioning structs). */
#define KREPLAY_STRUCT_SIZE(type, member) \
  (offsetof(type, member) + sizeof(((type*)0)->member)) /* NOLINT */

KREPLAY_EXTERN_C_BEGIN

/** @brief Status returned by every function of the C API. */
typedef enum kreplay_status_t {
  KREPLAY_STATUS_SUCCESS = 0,                  ///< the call did what it says
  KREPLAY_STATUS_ERROR,                        ///< unspecified failure
  KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,       ///< an argument is NULL, out of range or malformed
  KREPLAY_STATUS_ERROR_CONTEXT_NOT_FOUND,      ///< the context id names no context
  KREPLAY_STATUS_ERROR_CONTEXT_ERROR,          ///< context control outside the window that allows it
  KREPLAY_STATUS_ERROR_CONTEXT_NOT_STARTED,    ///< the context was not active when the replay began
  KREPLAY_STATUS_ERROR_CONTEXT_INVALID,        ///< the context's configuration cannot be started
  KREPLAY_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED,  ///< a service that allows one subscriber has one
  KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED,   ///< services are configured only during initialize
  KREPLAY_STATUS_ERROR_KIND_NOT_FOUND,         ///< unknown callback tracing kind
  KREPLAY_STATUS_ERROR_OPERATION_NOT_FOUND,    ///< unknown operation of a tracing kind
  KREPLAY_STATUS_ERROR_AGENT_NOT_FOUND,        ///< the agent id or index names no agent
  KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND,      ///< a counter name or id is unknown on the agent
  KREPLAY_STATUS_ERROR_EXCEEDS_HW_LIMIT,       ///< a counter group does not fit the hardware
  KREPLAY_STATUS_ERROR_CONFIG_NOT_FOUND,       ///< the counter config id names no config
  KREPLAY_STATUS_ERROR_INCOMPATIBLE_ABI,       ///< a struct's size is smaller than its first version
  KREPLAY_STATUS_ERROR_NOT_AVAILABLE,          ///< the feature is not available on this agent/backend
  KREPLAY_STATUS_ERROR_NOT_INITIALIZED,        ///< the SDK is not initialized yet
  KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES,       ///< memory or another resource ran out
  KREPLAY_STATUS_ERROR_INTERNAL,               ///< a bug in kreplay; an exception was caught
  KREPLAY_STATUS_ERROR_DEVICE_FAULT,           ///< the work failed on the device (a memory fault,
                                               ///< a device-side assert): nothing more runs there
  KREPLAY_STATUS_ERROR_SERVICE_CONFLICT,       ///< services that cannot share a pass met on one
                                               ///< pass; none of them collected on it
  KREPLAY_STATUS_LAST,
} kreplay_status_t;

/** @brief Phase of a callback: before (ENTER) or after (EXIT) the operation. */
typedef enum kreplay_callback_phase_t {
  KREPLAY_CALLBACK_PHASE_NONE = 0,
  KREPLAY_CALLBACK_PHASE_ENTER,
  KREPLAY_CALLBACK_PHASE_EXIT,
  KREPLAY_CALLBACK_PHASE_LAST,
} kreplay_callback_phase_t;

/** @brief Domains of the callback tracing service. */
typedef enum kreplay_callback_tracing_kind_t {
  KREPLAY_CALLBACK_TRACING_NONE = 0,
  KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH,    ///< ENTER/EXIT around every executed pass
  KREPLAY_CALLBACK_TRACING_CODE_OBJECT,        ///< module loads and kernel symbol registration
  KREPLAY_CALLBACK_TRACING_MEMORY_ALLOCATION,  ///< device memory allocation and free
  KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY,      ///< the replay loop: CONFIG and PASS
  KREPLAY_CALLBACK_TRACING_RANGE_REPLAY,       ///< ranges of launches replayed as one unit
  KREPLAY_CALLBACK_TRACING_MARKER,             ///< NVTX ranges and profiler start/stop (markers.h)
  KREPLAY_CALLBACK_TRACING_LAST,
} kreplay_callback_tracing_kind_t;

/** @brief Operations of KREPLAY_CALLBACK_TRACING_KERNEL_DISPATCH. */
typedef enum kreplay_kernel_dispatch_operation_t {
  KREPLAY_KERNEL_DISPATCH_NONE = 0,
  KREPLAY_KERNEL_DISPATCH_EXECUTE,  ///< one execution of a dispatch (one pass)
  KREPLAY_KERNEL_DISPATCH_LAST,
} kreplay_kernel_dispatch_operation_t;

/** @brief Operations of KREPLAY_CALLBACK_TRACING_CODE_OBJECT. */
typedef enum kreplay_code_object_operation_t {
  KREPLAY_CODE_OBJECT_NONE = 0,
  KREPLAY_CODE_OBJECT_LOAD,                    ///< a module was loaded (ENTER) / unloaded (EXIT)
  KREPLAY_CODE_OBJECT_KERNEL_SYMBOL_REGISTER,  ///< a kernel became known (ENTER) / went away (EXIT)
  KREPLAY_CODE_OBJECT_LAST,
} kreplay_code_object_operation_t;

/** @brief Operations of KREPLAY_CALLBACK_TRACING_MEMORY_ALLOCATION. */
typedef enum kreplay_memory_allocation_operation_t {
  KREPLAY_MEMORY_ALLOCATION_NONE = 0,
  KREPLAY_MEMORY_ALLOCATION_ALLOCATE,  ///< memory became tracked
  KREPLAY_MEMORY_ALLOCATION_FREE,      ///< memory is about to go away
  KREPLAY_MEMORY_ALLOCATION_LAST,
} kreplay_memory_allocation_operation_t;

/** @brief Operations of KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY. */
typedef enum kreplay_kernel_replay_operation_t {
  KREPLAY_KERNEL_REPLAY_NONE = 0,
  KREPLAY_KERNEL_REPLAY_CONFIG = 1,  ///< pass-count / loop configuration, once per dispatch
  KREPLAY_KERNEL_REPLAY_PASS,        ///< begin (ENTER) and end (EXIT) of every executed pass
  KREPLAY_KERNEL_REPLAY_SNAPSHOT,    ///< reserved: never delivered yet
  KREPLAY_KERNEL_REPLAY_RESTORE,     ///< reserved: never delivered yet
  KREPLAY_KERNEL_REPLAY_LAST,
} kreplay_kernel_replay_operation_t;

/** @brief What became of a dispatch that reached the replay engine. */
typedef enum kreplay_replay_outcome_t {
  KREPLAY_REPLAY_OUTCOME_NONE = 0,
  KREPLAY_REPLAY_OUTCOME_NOT_REQUESTED,  ///< the tool asked for no replay (NULL count, 1 pass)
  KREPLAY_REPLAY_OUTCOME_REPLAYED,       ///< the pass loop ran
  KREPLAY_REPLAY_OUTCOME_DECLINED,       ///< replay was asked for but could not be done safely
  KREPLAY_REPLAY_OUTCOME_LAST,
} kreplay_replay_outcome_t;

/** @brief Why a dispatch was declined (or why the loop ended before its plan). */
typedef enum kreplay_decline_reason_t {
  KREPLAY_DECLINE_REASON_NONE = 0,
  KREPLAY_DECLINE_REASON_INVALID_PLAN,        ///< pass count 0 without a continue callback
  KREPLAY_DECLINE_REASON_SNAPSHOT_TOO_LARGE,  ///< neither device nor pinned host storage fits
  KREPLAY_DECLINE_REASON_DRAIN_TIMEOUT,       ///< earlier work on the device did not finish
  KREPLAY_DECLINE_REASON_REENTRANT_LAUNCH,    ///< launched from inside a replay window
  KREPLAY_DECLINE_REASON_STREAM_CAPTURE,      ///< the stream is being captured into a graph
  KREPLAY_DECLINE_REASON_GRAPH_LAUNCH,        ///< kernels launched as part of a graph
  KREPLAY_DECLINE_REASON_UNTRACKED_MEMORY,    ///< memory the launch may write is not tracked
  KREPLAY_DECLINE_REASON_SNAPSHOT_FAILED,     ///< a copy into snapshot storage failed
  KREPLAY_DECLINE_REASON_LAUNCH_FAILED,       ///< the launch failed, or its kernel failed on the
                                              ///< device (a fault, an assert); no further passes
  KREPLAY_DECLINE_REASON_PASS_TIMEOUT,        ///< a pass did not complete in time
  KREPLAY_DECLINE_REASON_NOTHING_SELECTED,    ///< range: no launch of the range was selected
  KREPLAY_DECLINE_REASON_COLLECTIVE,          ///< a collective communication kernel (NCCL/RCCL):
                                              ///< its peers would not take part in extra passes
  KREPLAY_DECLINE_REASON_DEVICE_HEAP,         ///< the kernel's module uses the device-side heap
                                              ///< (malloc/free/new/delete in device code), which
                                              ///< cannot be saved and restored
  KREPLAY_DECLINE_REASON_GRAPH_HOST_NODE,     ///< a graph with a host-function node: its host
                                              ///< code would run once per pass
  KREPLAY_DECLINE_REASON_GRAPH_DEVICE_LAUNCH, ///< a graph made for launches from the device
  KREPLAY_DECLINE_REASON_GRAPH_MEMORY,        ///< a graph with memory nodes, as a whole (a
                                              ///< second launch would fail or free twice), or,
                                              ///< node by node, one that frees memory it did
                                              ///< not allocate
  KREPLAY_DECLINE_REASON_WAITS_FOR_HOST,      ///< the kernel reads mapped host memory and did not
                                              ///< finish while its thread was held: it may be
                                              ///< waiting for the host (or earlier work is)
  KREPLAY_DECLINE_REASON_PEER_MEMORY,         ///< an argument points into memory of another
                                              ///< device (peer memory), which the launch's
                                              ///< device cannot save and restore
  KREPLAY_DECLINE_REASON_WRITE_SET_UNKNOWN,   ///< write-bounded snapshot: what the launch (or
                                              ///< range) writes was not known, or it wrote
                                              ///< outside what was saved; it ran once (its own
                                              ///< pass) and taught kreplay its write set
  KREPLAY_DECLINE_REASON_LAST,
} kreplay_decline_reason_t;

/** @brief Snapshot scope: which tracked memory a replay saves and restores. */
typedef enum kreplay_snapshot_scope_t {
  KREPLAY_SNAPSHOT_SCOPE_NONE = 0,
  KREPLAY_SNAPSHOT_SCOPE_ALL,   ///< every tracked region of the dispatch's device (default)
  KREPLAY_SNAPSHOT_SCOPE_ARGS,  ///< regions the launch's argument bytes point into
  KREPLAY_SNAPSHOT_SCOPE_LAST,
} kreplay_snapshot_scope_t;

/** @brief How a replay window saves memory (ncu saves all; kreplay can save what a launch writes).
 */
typedef enum kreplay_snapshot_mode_t {
  KREPLAY_SNAPSHOT_MODE_NONE = 0,  ///< settings: keep the current; outcomes: nothing was saved
  /** Settings only: the full snapshot where it fits in device memory, else a write-bounded one
   *  where the write set is known, else the full one where it fits in host memory (up to a
   *  bound), else the launch runs once and its write set is learned (WRITE_SET_UNKNOWN). */
  KREPLAY_SNAPSHOT_MODE_AUTO,
  KREPLAY_SNAPSHOT_MODE_FULL,       ///< every tracked region of the scope is saved
  /** Only the chunks the launch is predicted to write are saved; digests of all tracked memory
   *  before and after its own pass prove that it wrote nothing else (else WRITE_SET_UNKNOWN). */
  KREPLAY_SNAPSHOT_MODE_WRITE_SET,
  KREPLAY_SNAPSHOT_MODE_LAST,
} kreplay_snapshot_mode_t;

/** @brief Kind of agent (device) a dispatch runs on. */
typedef enum kreplay_agent_type_t {
  KREPLAY_AGENT_TYPE_NONE = 0,
  KREPLAY_AGENT_TYPE_HOST_DEVICE,  ///< the GPU-free host device (tests, CI)
  KREPLAY_AGENT_TYPE_CUDA_GPU,     ///< an NVIDIA GPU driven through CUDA and CUPTI
  KREPLAY_AGENT_TYPE_LAST,
} kreplay_agent_type_t;

/** @brief Kind of tracked memory. */
typedef enum kreplay_memory_kind_t {
  KREPLAY_MEMORY_KIND_NONE = 0,
  KREPLAY_MEMORY_KIND_DEVICE,         ///< plain device allocation
  KREPLAY_MEMORY_KIND_POOL,           ///< stream-ordered pool allocation
  KREPLAY_MEMORY_KIND_VIRTUAL,        ///< physical allocation mapped through VMM
  KREPLAY_MEMORY_KIND_MANAGED,        ///< managed (unified) memory
  KREPLAY_MEMORY_KIND_HOST_MAPPED,    ///< pinned host memory mapped into the device
  KREPLAY_MEMORY_KIND_MODULE_GLOBAL,  ///< module-scope variable
  KREPLAY_MEMORY_KIND_LAST,
} kreplay_memory_kind_t;

/** @brief Data type of a counter's value. */
typedef enum kreplay_counter_value_type_t {
  KREPLAY_COUNTER_VALUE_TYPE_NONE = 0,
  KREPLAY_COUNTER_VALUE_TYPE_COUNT,       ///< an event count (sum over the launch)
  KREPLAY_COUNTER_VALUE_TYPE_RATIO,       ///< a ratio or percentage
  KREPLAY_COUNTER_VALUE_TYPE_THROUGHPUT,  ///< a fraction of a peak rate
  KREPLAY_COUNTER_VALUE_TYPE_LAST,
} kreplay_counter_value_type_t;

/** @brief Opaque handle of a context. Handle 0 is never valid. */
typedef struct kreplay_context_id_t {
  uint64_t handle;
} kreplay_context_id_t;

/** @brief Opaque handle of an agent (device). */
typedef struct kreplay_agent_id_t {
  uint64_t handle;
} kreplay_agent_id_t;

/** @brief Opaque handle of a stream. */
typedef struct kreplay_stream_id_t {
  uint64_t handle;
} kreplay_stream_id_t;

/** @brief Opaque handle of a counter on an agent. */
typedef struct kreplay_counter_id_t {
  uint64_t handle;
} kreplay_counter_id_t;

/** @brief Opaque handle of a counter configuration (a set of counters on one agent). */
typedef struct kreplay_counter_config_id_t {
  uint64_t handle;
} kreplay_counter_config_id_t;

/** @brief Identifies a tool loaded into the process. */
typedef struct kreplay_client_id_t {
  const char* name;  ///< set by the tool during kreplay_configure; may stay NULL
  uint32_t handle;   ///< assigned by the SDK
} kreplay_client_id_t;

/** @brief A tool's per-callback storage. */
typedef union kreplay_user_data_t {
  uint64_t value;
  void* ptr;
} kreplay_user_data_t;

/** @brief Three-dimensional size (grid in blocks, block in threads, cluster in blocks). */
typedef struct kreplay_dim3_t {
  uint32_t x;
  uint32_t y;
  uint32_t z;
} kreplay_dim3_t;

/** @brief Correlation ids of an API call; equal on every pass of a replayed dispatch. */
typedef struct kreplay_correlation_id_t {
  uint64_t internal;             ///< assigned by the SDK, unique per logical API call
  kreplay_user_data_t external;  ///< reserved for tool-provided correlation
} kreplay_correlation_id_t;

/** @brief Timestamp in nanoseconds (CLOCK_MONOTONIC on the host device). */
typedef uint64_t kreplay_timestamp_t;

/**
 * @brief What the SDK knows about one logical kernel dispatch.
 *
 * The same dispatch_id is reserved before CONFIG and carried by every pass and by a declined
 * single run. Name strings stay valid until the process ends.
 */
typedef struct kreplay_kernel_dispatch_info_t {
  uint64_t size;                  ///< sizeof this struct as the SDK filled it
  kreplay_agent_id_t agent_id;    ///< device the launch runs on
  kreplay_stream_id_t stream_id;  ///< stream (queue) of the launch
  uint64_t dispatch_id;           ///< one per logical launch, never 0
  uint64_t kernel_id;             ///< the kernel symbol (see CODE_OBJECT)
  const char* kernel_name;        ///< demangled name
  const char* mangled_name;       ///< name as in the binary
  kreplay_dim3_t grid_size;       ///< blocks per grid
  kreplay_dim3_t block_size;      ///< threads per block
  kreplay_dim3_t cluster_size;    ///< blocks per cluster ({1,1,1} or {0,0,0} when none)
  uint32_t dynamic_shared_memory_bytes;  ///< shared memory requested at launch
  uint32_t static_shared_memory_bytes;   ///< shared memory the kernel declares
  uint32_t registers_per_thread;         ///< registers the kernel uses
  uint32_t flags;                        ///< KREPLAY_DISPATCH_FLAG_* bits
} kreplay_kernel_dispatch_info_t;

/** Bits of kreplay_kernel_dispatch_info_t::flags. */
#define KREPLAY_DISPATCH_FLAG_COOPERATIVE 0x1u  ///< cooperative launch
#define KREPLAY_DISPATCH_FLAG_GRAPH 0x2u        ///< launched by a graph
#define KREPLAY_DISPATCH_FLAG_CAPTURED 0x4u     ///< issued into a stream under capture
#define KREPLAY_DISPATCH_FLAG_COLLECTIVE 0x8u   ///< a collective communication kernel (NCCL/RCCL)
#define KREPLAY_DISPATCH_FLAG_DEVICE_HEAP 0x10u ///< the kernel's module uses the device-side heap
/** The dispatch stands for a whole graph launch (--graph-profiling graph, or a graph whose kernel
 *  nodes cannot be counted one by one); its kernel_name describes the graph. */
#define KREPLAY_DISPATCH_FLAG_GRAPH_WHOLE 0x20u

KREPLAY_EXTERN_C_END

#endif  // KREPLAY_FWD_H_
