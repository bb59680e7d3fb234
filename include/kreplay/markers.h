/**
 * @file markers.h
 * @brief The MARKER callback domain: the application's NVTX ranges and profiler start/stop.
 *
 * A tool subscribes with kreplay_configure_callback_tracing_service(ctx,
 * KREPLAY_CALLBACK_TRACING_MARKER, ops, n, cb, args) and receives, on the thread that made the
 * call, one ENTER record per event, before the application's next launch:
 *
 *  - RANGE_PUSH / RANGE_POP: nvtxRangePush* / nvtxRangePop and their domain forms; the stack is the
 *    calling thread's (NVTX defines push/pop ranges per thread, per domain).
 *  - RANGE_START / RANGE_END: nvtxRangeStart* / nvtxRangeEnd and their domain forms; the range is
 *    the process's (it may end on another thread), named by `range_id`.
 *  - PROFILER_START / PROFILER_STOP: cudaProfilerStart / cuProfilerStart and their Stop.
 *
 * A backend delivers the events only when some context subscribes to the domain (on CUDA the
 * NVTX events need NVTX_INJECTION64_PATH to name kreplay's CUDA library; the kreplay command sets
 * it). The tool keeps its own NVTX state from them (rocprofiler-sdk's MARKER_CORE_API domain
 * plays the same role for ROCTx).
 */
#ifndef KREPLAY_MARKERS_H_
#define KREPLAY_MARKERS_H_

#include "kreplay/callback_tracing.h"
#include "kreplay/fwd.h"

KREPLAY_EXTERN_C_BEGIN

/** @brief Operations of KREPLAY_CALLBACK_TRACING_MARKER. */
typedef enum kreplay_marker_operation_t {
  KREPLAY_MARKER_NONE = 0,
  KREPLAY_MARKER_RANGE_PUSH,      ///< a push/pop range opened on the calling thread
  KREPLAY_MARKER_RANGE_POP,       ///< the calling thread's innermost push/pop range closed
  KREPLAY_MARKER_RANGE_START,     ///< a start/end range opened (process-wide)
  KREPLAY_MARKER_RANGE_END,       ///< a start/end range closed (process-wide)
  KREPLAY_MARKER_PROFILER_START,  ///< cudaProfilerStart / cuProfilerStart
  KREPLAY_MARKER_PROFILER_STOP,   ///< cudaProfilerStop / cuProfilerStop
  KREPLAY_MARKER_LAST,
} kreplay_marker_operation_t;

/** @brief Payload of MARKER. Strings are valid only during the callback. */
typedef struct kreplay_callback_tracing_marker_data_t {
  uint64_t size;        ///< sizeof as filled
  const char* message;  ///< PUSH, START: the range's name ("" when it has none); NULL otherwise
  const char* domain;   ///< the NVTX domain's name; "" for NVTX's default domain (and for
                        ///< PROFILER_*); for POP and END the domain of the range that closed
  uint64_t range_id;    ///< START, END: the range's id (nvtxRangeId_t); 0 otherwise
} kreplay_callback_tracing_marker_data_t;

/**
 * @brief Close every open range (range replay) at this point, with close reason
 * KREPLAY_RANGE_CLOSE_MARKER: its remaining passes run and its records are delivered, as at a
 * marker of kreplay_range_replay_options_t. For a tool whose launch selection changes at a marker
 * (an NVTX filter, profiler start/stop), so that no range holds launches of both sides. Call it
 * from a MARKER callback, or wherever the application could make a device call.
 * @retval KREPLAY_STATUS_SUCCESS closed, or no range was open, or range replay is not in use
 * @retval KREPLAY_STATUS_ERROR_NOT_AVAILABLE called from inside kreplay's own replay (a replay
 *         or range callback); nothing was closed
 */
KREPLAY_API kreplay_status_t kreplay_range_replay_close_at_marker(void);

KREPLAY_EXTERN_C_END

#endif  // KREPLAY_MARKERS_H_
