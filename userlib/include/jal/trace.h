/* libjal's host-side trace (API 1.3): a Chrome JSON trace (the format jal-emu --trace
 * writes; Perfetto's UI and chrome://tracing open it) of this process's libjal calls, one
 * span per call on its thread's track: device, context, memory, queue and signal calls,
 * submissions (jal_queue_copy, jal_queue_dispatch, ...) and waits (jal_signal_wait,
 * category "wait", with whether the condition was met).
 *
 * Clock: the host's CLOCK_MONOTONIC, in microseconds from when the trace started; the
 * trace's first event, the global instant "clock origin", holds that start as
 * args.monotonic_us. jal-emu's trace has the same event for its wall-clock processes, so
 * the two line up: shift one by the difference of their origins (jal-run --trace merges
 * them so). The chip's modelled time is another clock altogether (docs/emulator.md).
 *
 * Setting JAL_TRACE=FILE in the environment starts a trace into FILE at the first libjal
 * call; it is completed (the JSON array closed) by jal_trace_stop or at process exit. */
#ifndef JAL_TRACE_H
#define JAL_TRACE_H

#include <jal/jal.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Starts writing the trace to `path` (created or truncated), ending a trace already
 * running. Fails with INVALID_FIELD (and the reason) if the file cannot be written. */
JAL_API jal_status_t jal_trace_start(const char* path);
/* Completes and closes the trace; OK if none was running. */
JAL_API jal_status_t jal_trace_stop(void);

#ifdef __cplusplus
}
#endif

#endif
