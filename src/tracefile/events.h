/*
 * The numbers trace files carry that the merge side gives a meaning to:
 * the dwork runtime's event types and Paraver's states (docs/tracing.md).
 * The readers of trace files read files only, so they cannot include
 * dwork.h (the runtime's API) or dwork/trace.h (the tracer's); these are
 * the same numbers, constants only, and tests/merge/reader_test.c checks at
 * compile time that they equal DW_EV_* and DWT_STATE_*.  When the public
 * constants-only header (dwork/events.h) exists, this one includes it.
 */
#ifndef DW_TRACEFILE_EVENTS_H
#define DW_TRACEFILE_EVENTS_H

enum tf_event_type {
	TF_EV_FUNCTION = 71000001, /* remote function running: its id; 0 ends */
	TF_EV_CALL = 71000002,     /* a call issued: the function's id */
};

enum tf_state {
	TF_STATE_IDLE = 0,
	TF_STATE_RUNNING = 1,
	TF_STATE_NOT_CREATED = 2,
};

#endif
