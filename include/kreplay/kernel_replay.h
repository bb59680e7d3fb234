/**
 * @file kernel_replay.h
 * @brief The KERNEL_REPLAY callback domain: replay one kernel launch several times.
 *
 * A tool subscribes with kreplay_configure_callback_tracing_service(ctx,
 * KREPLAY_CALLBACK_TRACING_KERNEL_REPLAY, NULL, 0, cb, args) during initialize and drives the loop
 * from its callbacks. For every logical launch the SDK:
 *
 *  1. reserves one dispatch id, used by CONFIG, by every pass and by a declined single run;
 *  2. fires CONFIG ENTER, where the tool may set `replay_pass_count`, `replay_continue` and write
 *     `*user_data`, and then calls `replay_pass_count(dispatch_info, user_data)` once:
 *
 *     | replay_pass_count | replay_continue | behaviour                                          |
 *     |-------------------|-----------------|----------------------------------------------------|
 *     | NULL              | ignored         | not replayed: runs once, no snapshot, no PASS      |
 *     | returns 1         | ignored         | not replayed                                       |
 *     | returns N > 1     | NULL            | exactly N passes                                   |
 *     | returns N > 1     | set             | up to N; continue may end early, never extend;     |
 *     |                   |                 | not asked after pass N-1                           |
 *     | returns 0         | set             | indefinite: continue asked after every pass;       |
 *     |                   |                 | total_passes reported as 0                         |
 *     | returns 0         | NULL            | rejected with a warning; not replayed              |
 *
 *  3. drains the device, snapshots tracked memory, then per pass: PASS ENTER (the tool may call
 *     replay_start_context / replay_stop_context), the launch, completion and delivery of every
 *     record of the pass, PASS EXIT, the continue decision, and a restore if another pass follows.
 *     The last executed pass is not restored: the application sees the memory its launch produced
 *     and observes exactly one completion.
 *  4. fires CONFIG EXIT with `outcome` set. A dispatch that is not replayed, or is declined, gets
 *     CONFIG EXIT before its single run; a replayed one after its last pass.
 *
 * Pass 0 is the application's own launch. All callbacks of one dispatch run synchronously on the
 * launching thread, so a tool may keep the current pass in thread-local storage between PASS ENTER
 * and EXIT and read it from its other services' callbacks.
 *
 * One `kreplay_user_data_t` lives for the whole sequence: the value written during CONFIG ENTER is
 * handed to replay_pass_count, to replay_continue and (as a copy) to every PASS callback. Keep
 * mutable per-dispatch state behind `user_data.ptr`.
 */
#ifndef KREPLAY_KERNEL_REPLAY_H_
#define KREPLAY_KERNEL_REPLAY_H_

#include "kreplay/callback_tracing.h"
#include "kreplay/fwd.h"

KREPLAY_EXTERN_C_BEGIN

/**
 * @brief Set by the tool in CONFIG ENTER; called once per dispatch after CONFIG ENTER returns.
 * @return number of passes: 0 = indefinite (needs replay_continue), 1 = no replay, N > 1 = up to N
 */
typedef uint64_t (*kreplay_kernel_replay_pass_count_cb_t)(
    kreplay_kernel_dispatch_info_t dispatch_info, kreplay_user_data_t user_data);

/**
 * @brief Set by the tool in CONFIG ENTER; asked after a pass (and after its PASS EXIT) whether
 * another pass follows. Never asked after the last pass of a fixed loop.
 * @param current_pass the pass that just ended (0-based)
 * @param total_passes the plan's pass count, 0 when indefinite
 * @return non-zero to run another pass, 0 to stop
 */
typedef int (*kreplay_kernel_replay_continue_cb_t)(kreplay_kernel_dispatch_info_t dispatch_info,
                                                   uint64_t current_pass, uint64_t total_passes,
                                                   kreplay_user_data_t user_data);

/**
 * @brief Local context control, handed to the tool in the PASS payload.
 *
 * Legal only during PASS ENTER, only for a context that was active when the loop began; the change
 * sticks for later passes of the same loop and is gone when the loop ends. Global context state is
 * never touched.
 * @retval KREPLAY_STATUS_SUCCESS the context is (un)masked for this and later passes
 * @retval KREPLAY_STATUS_ERROR_CONTEXT_ERROR called outside PASS ENTER
 * @retval KREPLAY_STATUS_ERROR_CONTEXT_NOT_STARTED the context was not active when the loop began
 * @retval KREPLAY_STATUS_ERROR_CONTEXT_NOT_FOUND no such context
 */
typedef kreplay_status_t (*kreplay_kernel_replay_context_cb_t)(kreplay_context_id_t context_id);

/** @brief Kind of a timed interval inside a replay window. */
typedef enum kreplay_replay_interval_kind_t {
  KREPLAY_REPLAY_INTERVAL_NONE = 0,
  KREPLAY_REPLAY_INTERVAL_SNAPSHOT,  ///< drain and snapshot before pass 0
  KREPLAY_REPLAY_INTERVAL_RESTORE,   ///< restore before the pass after `after_pass`
  KREPLAY_REPLAY_INTERVAL_LAST,
} kreplay_replay_interval_kind_t;

/** @brief One timed snapshot or restore of a replay window (for timelines). */
typedef struct kreplay_replay_interval_t {
  kreplay_replay_interval_kind_t kind;
  uint64_t after_pass;             ///< RESTORE: the pass it follows
  kreplay_timestamp_t start_timestamp;
  kreplay_timestamp_t end_timestamp;
  uint64_t bytes;                  ///< bytes copied
} kreplay_replay_interval_t;

/** @brief What became of one dispatch: delivered in CONFIG EXIT. */
typedef struct kreplay_replay_outcome_record_t {
  uint64_t size;                       ///< sizeof as filled
  uint64_t dispatch_id;                ///< the logical dispatch
  kreplay_agent_id_t agent_id;         ///< its device
  kreplay_replay_outcome_t outcome;    ///< not requested, replayed or declined
  kreplay_decline_reason_t reason;     ///< why declined (or why a loop stopped early by failure)
  uint64_t passes_requested;           ///< plan's pass count (0 = indefinite)
  uint64_t passes_executed;            ///< passes that ran, the application's own included
  uint64_t bytes_snapshotted;          ///< bytes copied into snapshot storage
  uint64_t bytes_restored;             ///< bytes copied back, summed over all restores
  uint64_t regions;                    ///< tracked regions in the snapshot
  uint64_t device_storage_bytes;       ///< snapshot bytes kept in device memory
  uint64_t host_storage_bytes;         ///< snapshot bytes kept in pinned host memory
  kreplay_snapshot_scope_t scope;      ///< ALL or ARGS
  uint64_t snapshot_ns;                ///< time spent draining and snapshotting
  uint64_t restore_ns;                 ///< time spent restoring, summed
  const kreplay_replay_interval_t* intervals;  ///< snapshot and restores, in order
  uint64_t interval_count;             ///< entries in intervals
  /** --check-divergence: passes after the first whose tracked memory, when the pass ended,
   *  differed from what the first pass left (float atomics in another order, a race, a kernel
   *  that reads a clock): its passes did not measure the same work. 0 when they all agreed or
   *  when the check was off (divergence_checked says which). */
  uint64_t diverged_passes;
  int divergence_checked;  ///< non-zero: every executed pass's memory was compared
  /** Bytes of the chunks the application's own pass changed, as the digests found them (0 when
   *  nothing was measured); with bytes_snapshotted it says how close the save came to the writes. */
  uint64_t bytes_changed;
  /** FULL or WRITE_SET: how the window saved memory; NONE when nothing was saved. */
  kreplay_snapshot_mode_t snapshot_mode;
} kreplay_replay_outcome_record_t;

/**
 * @brief Payload of KERNEL_REPLAY. One flat struct for both operations.
 *
 * During CONFIG the pass fields are zero; during PASS the config callback pointers are NULL and
 * must not be set.
 */
typedef struct kreplay_callback_tracing_kernel_replay_data_t {
  uint64_t size;                                 ///< sizeof as filled
  kreplay_kernel_dispatch_info_t dispatch_info;  ///< always set by the SDK

  /* [CONFIG ENTER] set by the tool */
  kreplay_kernel_replay_pass_count_cb_t replay_pass_count;
  kreplay_kernel_replay_continue_cb_t replay_continue;

  /* [PASS] read-only, set by the SDK */
  uint64_t current_pass;  ///< 0-based
  uint64_t total_passes;  ///< 0 for an indefinite loop

  /* [PASS ENTER] set by the SDK; the tool may call them */
  kreplay_kernel_replay_context_cb_t replay_start_context;
  kreplay_kernel_replay_context_cb_t replay_stop_context;

  /* [CONFIG EXIT] set by the SDK */
  const kreplay_replay_outcome_record_t* outcome;

  /* [PASS EXIT] set by the SDK: when the pass executed (0 when it did not complete) */
  kreplay_timestamp_t start_timestamp;
  kreplay_timestamp_t end_timestamp;

  /* [always] set by the SDK for a dispatch a CUDA graph launched (flag GRAPH): the executable
   * graph (the same over its launches; 0 for an ordinary launch) and, for a kernel node run
   * node by node, the node's place in the graph's order (0 for a whole-graph dispatch). */
  uint64_t graph_id;
  uint64_t graph_node;
} kreplay_callback_tracing_kernel_replay_data_t;

/** @brief How a CUDA graph launch is seen by the replay domains (ncu's --graph-profiling). */
typedef enum kreplay_graph_profiling_t {
  KREPLAY_GRAPH_PROFILING_NONE = 0,  ///< keep the current setting (NODE unless set otherwise)
  /** Every kernel node is a dispatch of its own: after the application's own graph launch the
   *  graph's entry state is restored and its nodes run again one at a time, each kernel node
   *  replayed like an ordinary launch (graphs whose nodes cannot run one at a time -- conditional,
   *  memory, semaphore nodes -- are one dispatch, as with GRAPH). */
  KREPLAY_GRAPH_PROFILING_NODE,
  /** A graph launch is one dispatch (flags GRAPH and GRAPH_WHOLE) whose passes launch the graph
   *  again; counters cover the whole graph. */
  KREPLAY_GRAPH_PROFILING_GRAPH,
  KREPLAY_GRAPH_PROFILING_LAST,
} kreplay_graph_profiling_t;

/** @brief What the caches hold when a counted pass starts (ncu's --cache-control). */
typedef enum kreplay_cache_control_t {
  KREPLAY_CACHE_CONTROL_NONE = 0,  ///< keep the current setting (FLUSH_ALL unless set otherwise)
  /** Before every counted pass, after the restore and before the pass's services start, the
   *  device's caches are written back and invalidated: every pass starts cold, and the restore's
   *  own writes are not evicted (and counted) during the pass. In range replay also before
   *  every launch of a replayed range's pass after the first, once the launch before it
   *  completed: each launch starts cold, as in kernel replay. The default, as in ncu. */
  KREPLAY_CACHE_CONTROL_FLUSH_ALL,
  /** The caches are left as the previous work (the restore, for passes > 0) left them. */
  KREPLAY_CACHE_CONTROL_FLUSH_NONE,
  KREPLAY_CACHE_CONTROL_LAST,
} kreplay_cache_control_t;

/** @brief Process-wide replay settings (set during initialize). */
typedef struct kreplay_kernel_replay_options_t {
  uint64_t size;                           ///< sizeof the caller's struct
  kreplay_snapshot_scope_t snapshot_scope; ///< ALL (default) or ARGS; NONE keeps the current
  uint64_t max_snapshot_bytes;  ///< decline above this many bytes; 0 = storage capacity only
  uint64_t drain_timeout_ms;    ///< decline if earlier work does not finish; 0 = default (60 s)
  int verify_restore;           ///< non-zero: find changed chunks after every pass, not only
                                ///< after the first (slower; for kernels whose writes vary)
  kreplay_graph_profiling_t graph_profiling;  ///< NONE keeps the current (KREPLAY_GRAPH_PROFILING)
  kreplay_cache_control_t cache_control;      ///< NONE keeps the current (KREPLAY_CACHE_CONTROL)
  /** non-zero: after every pass, digest the tracked memory and compare it with the first pass's
   *  (kreplay_replay_outcome_record_t::diverged_passes); KREPLAY_CHECK_DIVERGENCE=1 sets it. */
  int check_divergence;
  /** AUTO (default), FULL or WRITE_SET; NONE keeps the current (KREPLAY_SNAPSHOT=auto|full|
   *  write-set sets the default). */
  kreplay_snapshot_mode_t snapshot_mode;
} kreplay_kernel_replay_options_t;

/**
 * @brief Change replay settings. The environment (KREPLAY_REPLAY_MEMORY=all|args,
 * KREPLAY_GRAPH_PROFILING=node|graph, KREPLAY_CACHE_CONTROL=all|none) sets the defaults; this
 * call overrides them.
 * @retval KREPLAY_STATUS_SUCCESS applied
 * @retval KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED called outside a tool's initialize
 * @retval KREPLAY_STATUS_ERROR_INCOMPATIBLE_ABI options->size too small
 * @retval KREPLAY_STATUS_ERROR_INVALID_ARGUMENT NULL or an out-of-range enum
 * A caller built before graph_profiling (or cache_control) existed passes a smaller size; the
 * fields it lacks then keep their current values.
 */
KREPLAY_API kreplay_status_t kreplay_configure_kernel_replay_options(
    const kreplay_kernel_replay_options_t* options);

/** @brief Snapshot storage kreplay holds on one agent (device memory and pinned host memory). */
typedef struct kreplay_replay_storage_t {
  uint64_t size;               ///< sizeof as filled
  uint64_t device_bytes;       ///< device memory held now for snapshots
  uint64_t host_bytes;         ///< pinned host memory held now for snapshots
  uint64_t device_bytes_peak;  ///< the most device memory held at once
  uint64_t host_bytes_peak;    ///< the most pinned host memory held at once
  /** Times the storage was given back because the application needed the memory (an
   *  allocation that would otherwise have failed). */
  uint64_t releases;
} kreplay_replay_storage_t;

/**
 * @brief What snapshot storage kreplay holds on @p agent_id, now and at its peak.
 * @retval KREPLAY_STATUS_SUCCESS filled
 * @retval KREPLAY_STATUS_ERROR_INVALID_ARGUMENT storage is NULL or its size too small
 * @retval KREPLAY_STATUS_ERROR_AGENT_NOT_FOUND no such agent
 */
KREPLAY_API kreplay_status_t kreplay_query_replay_storage(kreplay_agent_id_t agent_id,
                                                          kreplay_replay_storage_t* storage);

KREPLAY_EXTERN_C_END

#endif  // KREPLAY_KERNEL_REPLAY_H_
