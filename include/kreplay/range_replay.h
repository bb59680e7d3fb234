/**
 * @file range_replay.h
 * @brief The RANGE_REPLAY callback domain: replay a range of consecutive launches as one unit.
 *
 * Starting and stopping a hardware-counter session costs far more than a short kernel, so
 * kreplay can replay a *range*: consecutive launches on one stream, recorded as the application
 * issues them (function, configuration, a copy of the argument bytes). The snapshot is taken
 * before the range's first launch; pass 0 is the application's own execution of the launches.
 * A range closes before any call through which the host could observe or change device memory
 * (synchronization, copies, memsets, allocation and free, event and stream queries, graph
 * launches, module loads, a launch on another stream) made by any thread, at a marker the user
 * chose, or at a launch-count limit (64 by default). When it closes, memory is restored to the
 * range's entry state and the recorded launches run again once per further pass; the last pass is
 * not restored; then the closing call proceeds and sees exactly the memory one execution gives.
 *
 * A tool subscribes with kreplay_configure_callback_tracing_service(ctx,
 * KREPLAY_CALLBACK_TRACING_RANGE_REPLAY, NULL, 0, cb, args). The domain has the shape of
 * KERNEL_REPLAY (kernel_replay.h), with the same pass-count table:
 *
 *  - CONFIG ENTER when a range opens (before its first launch): set `replay_pass_count` and
 *    optionally `replay_continue`, write `*user_data`. replay_pass_count is called once, with the
 *    range info (launch_count is 0 then: the launches are not known yet).
 *  - LAUNCH ENTER for every launch that joins the range, with its dispatch_info; the tool may set
 *    `launch_selected` to 0 (a kernel filter): the launch still runs in every pass, but a range
 *    whose launches are all unselected is not replayed.
 *  - PASS ENTER/EXIT around every pass (local context control legal during PASS ENTER); pass 0
 *    ENTER fires when the range opens, its EXIT when it closes.
 *  - CONFIG EXIT when the range has closed, with `outcome` (launches, passes, bytes, times).
 *
 * The snapshot holds every tracked allocation at the range's entry and cannot grow while the range
 * is open (allocations close ranges), so the snapshot-size limit applies when a range opens: a range
 * whose entry state is over it is declined (KREPLAY_DECLINE_REASON_SNAPSHOT_TOO_LARGE) and its
 * launches run once. A pass count of 1 still opens a range, with no snapshot: its launches share
 * one counter session and its outcome is "not requested" with one pass executed.
 *
 * Per-launch services (KERNEL_DISPATCH, dispatch counting) fire for every launch in every pass,
 * each carrying the launch's own dispatch id and the pass. When a RANGE_REPLAY subscriber is
 * active, KERNEL_REPLAY is not consulted.
 */
#ifndef KREPLAY_RANGE_REPLAY_H_
#define KREPLAY_RANGE_REPLAY_H_

#include "kreplay/callback_tracing.h"
#include "kreplay/fwd.h"
#include "kreplay/kernel_replay.h"

KREPLAY_EXTERN_C_BEGIN

/** @brief Operations of KREPLAY_CALLBACK_TRACING_RANGE_REPLAY. */
typedef enum kreplay_range_replay_operation_t {
  KREPLAY_RANGE_REPLAY_NONE = 0,
  KREPLAY_RANGE_REPLAY_CONFIG = 1,  ///< the range opened (ENTER) / closed (EXIT)
  KREPLAY_RANGE_REPLAY_PASS,        ///< begin (ENTER) and end (EXIT) of every pass
  KREPLAY_RANGE_REPLAY_LAUNCH,      ///< a launch joined the range (ENTER only)
  KREPLAY_RANGE_REPLAY_LAST,
} kreplay_range_replay_operation_t;

/** @brief Why a range closed. */
typedef enum kreplay_range_close_reason_t {
  KREPLAY_RANGE_CLOSE_NONE = 0,
  KREPLAY_RANGE_CLOSE_SYNCHRONIZE,   ///< a synchronization, event or stream query
  KREPLAY_RANGE_CLOSE_MEMORY,        ///< a copy, memset, allocation or free
  KREPLAY_RANGE_CLOSE_OTHER_STREAM,  ///< a launch on another stream
  KREPLAY_RANGE_CLOSE_OTHER_THREAD,  ///< a call from another thread
  KREPLAY_RANGE_CLOSE_MARKER,        ///< cudaProfilerStop / the end of the NVTX range
  KREPLAY_RANGE_CLOSE_LAUNCH_LIMIT,  ///< the range holds the maximum number of launches
  KREPLAY_RANGE_CLOSE_GRAPH,         ///< a graph launch or stream capture
  KREPLAY_RANGE_CLOSE_MODULE,        ///< a module load or unload
  KREPLAY_RANGE_CLOSE_EXIT,          ///< the process exits
  KREPLAY_RANGE_CLOSE_OTHER,         ///< any other API call that may observe memory
  KREPLAY_RANGE_CLOSE_SIGNAL,        ///< the process is ending on a signal
                                     ///< (kreplay_range_replay_close_open)
  /** A launch that opened a range before, whose write set learned there the range has not saved
   * (a write-bounded range, DESIGN.md §3): it opens a range of its own, predicted from that. */
  KREPLAY_RANGE_CLOSE_WRITE_SET,
  KREPLAY_RANGE_CLOSE_LAST,
} kreplay_range_close_reason_t;

/** @brief What is known about a range. */
typedef struct kreplay_range_info_t {
  uint64_t size;                  ///< sizeof as filled
  uint64_t range_id;              ///< one per range, never 0
  kreplay_agent_id_t agent_id;    ///< device
  kreplay_stream_id_t stream_id;  ///< the stream of the range's first launch (later launches
                                  ///< use other streams of the device only when events order
                                  ///< them after every earlier launch of the range)
  uint64_t launch_count;          ///< launches recorded so far (0 at CONFIG ENTER)
  uint64_t first_dispatch_id;     ///< dispatch id of the first launch (0 before it)
} kreplay_range_info_t;

/** @brief As kreplay_kernel_replay_pass_count_cb_t, for a range. */
typedef uint64_t (*kreplay_range_replay_pass_count_cb_t)(kreplay_range_info_t range,
                                                         kreplay_user_data_t user_data);

/** @brief As kreplay_kernel_replay_continue_cb_t, for a range. */
typedef int (*kreplay_range_replay_continue_cb_t)(kreplay_range_info_t range, uint64_t current_pass,
                                                  uint64_t total_passes,
                                                  kreplay_user_data_t user_data);

/** @brief What became of one range: delivered in CONFIG EXIT. */
typedef struct kreplay_range_outcome_record_t {
  uint64_t size;                      ///< sizeof as filled
  uint64_t range_id;
  kreplay_agent_id_t agent_id;
  kreplay_replay_outcome_t outcome;   ///< replayed, declined or not requested
  kreplay_decline_reason_t reason;    ///< why declined (or why the loop ended by failure)
  kreplay_range_close_reason_t close_reason;
  uint64_t launches;                  ///< launches in the range
  uint64_t selected_launches;         ///< launches the tool kept selected
  uint64_t passes_requested;          ///< 0 = indefinite
  uint64_t passes_executed;
  uint64_t bytes_snapshotted;
  uint64_t bytes_restored;            ///< summed over restores
  uint64_t snapshot_ns;
  uint64_t restore_ns;
  const kreplay_replay_interval_t* intervals;  ///< snapshot and restores, in order
  uint64_t interval_count;
  const uint64_t* dispatch_ids;       ///< the launches' dispatch ids, in order
  uint64_t synchronizations_spanned;  ///< synchronizations the range stayed open across
  uint64_t streams;                   ///< streams the range's launches used (1 or more)
  /** The API function whose call closed the range (e.g. "cuMemFree_v2"), NULL when the close
   * was not a call (launch limit, another stream or thread, exit) or the backend did not say. */
  const char* close_call;
  /** Bytes of the chunks the range's own pass changed (0 when nothing was measured). */
  uint64_t bytes_changed;
  /** FULL or WRITE_SET: how the range's entry state was saved; NONE when nothing was saved. */
  kreplay_snapshot_mode_t snapshot_mode;
  /** Memory calls that joined the range instead of closing it: memsets and copies into device
   * memory (submitted again on every later pass), allocations (saved at the call) and frees
   * deferred to the range's end. */
  uint64_t memory_calls;
} kreplay_range_outcome_record_t;

/** @brief Payload of RANGE_REPLAY. One flat struct for every operation. */
typedef struct kreplay_callback_tracing_range_replay_data_t {
  uint64_t size;              ///< sizeof as filled
  kreplay_range_info_t range; ///< always set

  /* [CONFIG ENTER] set by the tool */
  kreplay_range_replay_pass_count_cb_t replay_pass_count;
  kreplay_range_replay_continue_cb_t replay_continue;

  /* [PASS] read-only */
  uint64_t current_pass;
  uint64_t total_passes;  ///< 0 for an indefinite loop

  /* [PASS ENTER] callable by the tool */
  kreplay_kernel_replay_context_cb_t replay_start_context;
  kreplay_kernel_replay_context_cb_t replay_stop_context;

  /* [CONFIG EXIT] */
  const kreplay_range_outcome_record_t* outcome;

  /* [LAUNCH ENTER] the launch; the tool may clear launch_selected */
  kreplay_kernel_dispatch_info_t dispatch_info;
  int launch_selected;

  /* [PASS EXIT] when the pass executed: first launch start to last launch end */
  kreplay_timestamp_t start_timestamp;
  kreplay_timestamp_t end_timestamp;

  /* [LAUNCH ENTER] a launch a CUDA graph made: the executable graph and the kernel node's place
   * in the graph's order (as in kreplay_callback_tracing_kernel_replay_data_t); 0 otherwise */
  uint64_t graph_id;
  uint64_t graph_node;

  /* [CONFIG ENTER] set by the tool: nonzero keeps the range to the thread that opened it, so that
   * a launch or memory call of another thread closes it (KREPLAY_RANGE_CLOSE_OTHER_THREAD). By
   * default other threads' work on a stream all threads share joins the range; a tool whose
   * selection depends on the calling thread (NVTX ranges are per thread) sets this so that no
   * range holds launches of both sides of a selection. */
  int thread_bound;
} kreplay_callback_tracing_range_replay_data_t;

/** @brief What a synchronization does to an open range. */
typedef enum kreplay_range_sync_t {
  KREPLAY_RANGE_SYNC_DEFAULT = 0,  ///< as KREPLAY_RANGE_SYNC says; span when it is not set
  /** The range stays open when its launches can have written no memory the host reads without a
   * CUDA call: no launch of the range points into managed or mapped host memory and the device
   * holds no managed memory. Otherwise it closes. */
  KREPLAY_RANGE_SYNC_SPAN,
  KREPLAY_RANGE_SYNC_CLOSE,  ///< every synchronization closes the range
  KREPLAY_RANGE_SYNC_LAST,
} kreplay_range_sync_t;

/** @brief Process-wide range settings (set during initialize). */
typedef struct kreplay_range_replay_options_t {
  uint64_t size;             ///< sizeof the caller's struct
  uint64_t max_launches;     ///< close a range at this many launches; 0 = default (64)
  const char* marker;        ///< NULL/"" = automatic ranges; "cuda-profiler"; "nvtx:NAME"
  /** What a synchronization (stream, event or device synchronize, a stream or event query) does
   * to an open range; KREPLAY_RANGE_SYNC_DEFAULT leaves the setting as KREPLAY_RANGE_SYNC made it
   * (span unless it says close). */
  kreplay_range_sync_t synchronize;
} kreplay_range_replay_options_t;

/**
 * @brief Change range settings. Defaults come from KREPLAY_RANGE_MAX_LAUNCHES,
 * KREPLAY_RANGE_MARKERS and KREPLAY_RANGE_SYNC (span | close); this call overrides them. A struct
 * that ends before `synchronize` leaves that setting as it was.
 * @retval KREPLAY_STATUS_SUCCESS applied
 * @retval KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED called outside a tool's initialize
 * @retval KREPLAY_STATUS_ERROR_INCOMPATIBLE_ABI options->size too small
 * @retval KREPLAY_STATUS_ERROR_INVALID_ARGUMENT NULL, a marker not of the forms above, or a
 * `synchronize` that is not a kreplay_range_sync_t
 */
KREPLAY_API kreplay_status_t kreplay_configure_range_replay_options(
    const kreplay_range_replay_options_t* options);

/**
 * @brief Close every open range now: its remaining passes run and its records are delivered, as
 * when the process exits normally (close reason KREPLAY_RANGE_CLOSE_SIGNAL). For a tool that ends
 * the process itself, typically from the handler of a fatal signal, so that the launches of an
 * open range keep their values. It makes device calls, so it refuses (closes nothing) on a thread
 * that is inside a device API call of the application (on CUDA: a driver call, which may hold
 * the driver's locks) or inside kreplay's own replay (one of its callbacks).
 * @param timeout_ms how long to wait for a range another thread is busy with
 * @param open_launches may be NULL; receives the number of launches the open ranges held
 * @retval KREPLAY_STATUS_SUCCESS every open range was closed, or none was open
 * @retval KREPLAY_STATUS_ERROR_NOT_AVAILABLE the calling thread is inside a device API call or
 * inside kreplay's replay; nothing was closed
 * @retval KREPLAY_STATUS_ERROR a range stayed busy for @p timeout_ms and was left open
 */
KREPLAY_API kreplay_status_t kreplay_range_replay_close_open(uint64_t timeout_ms,
                                                             uint64_t* open_launches);

/** @brief Lower-case name of a close reason ("synchronize", "memory", ...); NULL if unknown. */
KREPLAY_API const char* kreplay_get_range_close_reason_name(kreplay_range_close_reason_t reason);

KREPLAY_EXTERN_C_END

#endif  // KREPLAY_RANGE_REPLAY_H_
