/*
 * The numbers trace files carry that the merge side gives a meaning to:
 * the dwork runtime's event types and Paraver's states (docs/tracing.md).
 * The readers of trace files read files only, so they cannot include
 * dwork.h (the runtime's API) or dwork/trace.h (the tracer's); these are
 * the same numbers, constants only, and tests/merge/reader_test.c checks at
 * compile time that they equal DW_EV_* and DWT_STATE_*; they are taken
 * from the public constants-only header, dwork/events.h.
 */
#ifndef DW_TRACEFILE_EVENTS_H
#define DW_TRACEFILE_EVENTS_H

#include <dwork/events.h>

enum tf_event_type {
	TF_EV_FUNCTION = DW_EV_FUNCTION, /* remote function running: its id */
	TF_EV_CALL = DW_EV_CALL,         /* a call issued: the function's id */
};

enum tf_state {
	TF_STATE_IDLE = DWT_STATE_IDLE,
	TF_STATE_RUNNING = DWT_STATE_RUNNING,
	TF_STATE_NOT_CREATED = DWT_STATE_NOT_CREATED,
};

#endif
