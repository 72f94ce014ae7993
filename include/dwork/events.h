/*
 * dwork's trace vocabulary: the event types and values the runtime
 * records and the state numbers every thread is in.  Constants only, no
 * functions and no library: the runtime writes these records, the merge
 * and the tools read them, and a program or a binding may test them
 * without linking anything.  dwork/dwork.h and dwork/trace.h include
 * this header.  docs/tracing.md explains each record.
 *
 * Threads and blocking: nothing here runs; it is safe everywhere.
 */
#ifndef DWORK_EVENTS_H
#define DWORK_EVENTS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Paraver's standard state numbers (a thread's state stack, dwt_state_push;
 * stock Paraver configurations know them). */
enum dwt_state {
	DWT_STATE_IDLE = 0,
	DWT_STATE_RUNNING = 1,
	DWT_STATE_NOT_CREATED = 2,
	DWT_STATE_WAITING_MESSAGE = 3,
	DWT_STATE_BLOCKING_SEND = 4,
	DWT_STATE_SYNCHRONIZATION = 5,
	DWT_STATE_TEST_PROBE = 6,
	DWT_STATE_SCHEDULING = 7,
	DWT_STATE_WAIT_ALL = 8,
	DWT_STATE_BLOCKED = 9,
	DWT_STATE_IMMEDIATE_SEND = 10,
	DWT_STATE_IMMEDIATE_RECEIVE = 11,
	DWT_STATE_IO = 12,
	DWT_STATE_GROUP_COMMUNICATION = 13,
	DWT_STATE_TRACING_DISABLED = 14,
	DWT_STATE_OTHERS = 15,
	DWT_STATE_SEND_RECEIVE = 16,
	DWT_STATE_OVERHEAD = 24,
	DWT_STATE_STARTUP_LATENCY = 26,
};

/*
 * Event types of the runtime: one range, 71000001..71000999.  The
 * values of DW_EV_FUNCTION and DW_EV_CALL are function ids
 * (dw_function_id: a 32-bit hash of the registered name).
 */
enum dw_trace_type {
	DW_EV_FUNCTION = 71000001, /* remote function running: its id; 0 ends */
	DW_EV_CALL = 71000002,     /* a call issued: the function's id */
	DW_EV_MSG_SENT = 71000003, /* a frame sent: its type */
	DW_EV_MSG_RECV = 71000004, /* a frame received: its type */
	DW_EV_BYTES = 71000005,    /* payload bytes of that frame */
	DW_EV_WORKER_JOIN = 71000006,  /* a worker joined: its id */
	DW_EV_WORKER_LEAVE = 71000007, /* a worker left: its id */
	DW_EV_REGION = 71000008, /* master: a region entered: its number (1,
	                          * 2, ... in order of first use); 0 left */
};

/* Event types of channels, pools, pmap and the other work parts. */
enum dw_trace_type_work {
	DW_EV_CHANNEL = 71000010,    /* a channel operation: enum dw_chan_op;
	                                0 when it returns */
	DW_EV_POOL = 71000011,       /* a pool lent this worker id; 0 back */
	DW_EV_PMAP = 71000012,       /* pmap: items in the batch sent; 0 at
	                                the end */
	DW_EV_PMAP_RETRY = 71000013, /* pmap: items sent again after their
	                                worker died */
	DW_EV_PMAP_ITEM = 71000014,  /* a pmap item running: index + 1; 0 */
	DW_EV_PEER = 71000015,       /* a worker-to-worker link opened: the
	                                other worker's id */
	DW_EV_BATCH = 71000016,      /* the carrier of user functions running
	                                here: enum dw_batch_kind; 0 ends */
};

/* What carried the user functions a process runs (DW_EV_BATCH): their
 * own runs carry their names as DW_EV_FUNCTION inside it. */
enum dw_batch_kind {
	DW_BATCH_PMAP = 1,       /* a batch of dw_pmap items */
	DW_BATCH_FOR = 2,        /* a range of dw_distributed_for */
	DW_BATCH_EVERYWHERE = 3, /* dw_everywhere */
	DW_BATCH_SPAWN = 4,      /* dw_spawn */
};

/* Values of DW_EV_CHANNEL. */
enum dw_chan_op {
	DW_CHAN_PUT = 1,
	DW_CHAN_TAKE,
	DW_CHAN_FETCH,
	DW_CHAN_WAIT,
	DW_CHAN_READY,
	DW_CHAN_CLOSE,
};

#ifdef __cplusplus
}
#endif
#endif
