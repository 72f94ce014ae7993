/*
 * The trace replayed on an ideal network (docs/tracing.md, "The POP
 * tree"): every message transfers in zero time and every dependency is
 * kept.  A receive completes when both its send and its receiver are
 * ready; a wait that ends with a receive shrinks to that point; every
 * other burst keeps its duration (as Dimemas keeps non-MPI bursts), and
 * each change moves the rest of the thread, and the messages it sends
 * later, earlier or later.
 *
 * Fed the clock-corrected states and messages stats sees (stats.c), so
 * its memory grows with the number of state and message records.
 */
#ifndef DW_MERGE_REPLAY_H
#define DW_MERGE_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include <dwork/error.h>
#include <dwork/events.h>

typedef struct rp_replay rp_replay;

/* A replay of nthreads threads; DW_OK or DW_ENOMEM. */
dw_err rp_new(size_t nthreads, rp_replay **out);

/* Thread belongs to process (task) task: a wait no receive ends is
 * tied first to a receive on another thread of its own process
 * (wake.c).  Unset, every thread is a process of its own. */
void rp_thread_task(rp_replay *r, uint32_t thread, uint32_t task);

/* A burst of state on thread from start to end (ns).  DW_ENOMEM. */
dw_err rp_state(rp_replay *r, uint32_t thread, uint64_t start, uint64_t end,
                uint32_t state);

/* A message sent by thread from at send, received by thread to at recv
 * (the logical times), with its tag (the runtime's RTR_TAG kinds: 0 a
 * call, 1 and 3 a result, 5 an object's answer, as a channel's take
 * gets; anything else for other traces).  DW_ENOMEM. */
dw_err rp_msg(rp_replay *r, uint32_t from, uint32_t to, uint64_t send,
              uint64_t recv, uint32_t tag);

/*
 * Replays everything given: *ideal is the elapsed time on the ideal
 * network, from time 0 to the latest end, on any thread, of a burst that
 * is not a wait (or of a receive).  DW_OK or DW_ENOMEM.
 */
dw_err rp_run(rp_replay *r, uint64_t *ideal);

/* A run of function func (a DW_EV_FUNCTION value) on thread from start
 * to end, for the critical path.  DW_ENOMEM. */
dw_err rp_func(rp_replay *r, uint32_t thread, uint64_t start, uint64_t end,
               uint64_t func);

/* Time of one function on the critical path. */
typedef struct rp_fn {
	uint64_t func, ns;
} rp_fn;

/*
 * The critical path of the replay rp_run made (critpath.c): the chain
 * of busy bursts (every state that is not a wait: the user's work and
 * the runtime's) and zero-time messages that ends at the replay's end,
 * followed back from there along a thread; at a receive to whichever of
 * its send and its receiver's readiness came later; at a wait no
 * message ends, to the busy burst on any thread that ended last before
 * it.  No wait is on it.  ns of it in each function (sorted by id, *fns
 * owned by r), ns in no function, its length and the messages on it.
 */
/* One piece of the path on one thread, in original time. */
typedef struct rp_seg {
	uint32_t thread;
	uint64_t start, end;
} rp_seg;

typedef struct rp_path {
	const rp_fn *fns;
	size_t nfns;
	uint64_t other_ns, messages;
	uint64_t length_ns; /* the busy time on it: <= T_ideal */
	const rp_seg *segs; /* from the end back; owned by r */
	size_t nsegs;
} rp_path;

/* The path of the last rp_run (DW_EINVAL after rp_faster).  DW_ENOMEM. */
dw_err rp_critical_path(rp_replay *r, rp_path *out);

/*
 * What-if: the replay again with every run of func k times faster (its
 * Running time inside each run divided by k, the time saved taken off
 * at the run's end), on the ideal network; *ideal is its elapsed time.
 * Call it after rp_critical_path.  DW_OK, DW_EINVAL (k < 1) or
 * DW_ENOMEM.
 */
dw_err rp_faster(rp_replay *r, uint64_t func, double k, uint64_t *ideal);

/* ---- Wait causes (waits.c) ---------------------------------------- */

/* What a waiting interval waited for (docs/tracing.md, "Wait causes"). */
enum rp_cause {
	RP_CAUSE_MASTER,   /* an executor idle until its caller sent work */
	RP_CAUSE_WORK,     /* a caller waiting on a result being computed */
	RP_CAUSE_NETWORK,  /* a message sent, not yet received */
	RP_CAUSE_PRODUCER, /* an object's answer (a channel take) not sent */
	RP_CAUSE_SENDER,   /* another message not yet sent (other traces) */
	RP_CAUSE_NONE,     /* no message ends it */
	RP_NCAUSES
};

/* The key of a cause in the outputs: "master", "work", ... */
const char *rp_cause_key(enum rp_cause c);

/* Wait time of one thread in the waits for one function's messages (0:
 * no function), by cause. */
typedef struct rp_wait {
	uint32_t thread;
	uint64_t func;
	uint64_t ns[RP_NCAUSES];
} rp_wait;

/*
 * The causes of every wait of the threads whose counted[thread] is
 * non-zero, from the original trace (call after rp_run, before
 * rp_faster): *out (caller frees) holds *n entries, one per thread and
 * function that waited.  A wait with no receive on its own thread is
 * cut by those of proxy[thread] (the thread that takes in its messages,
 * as a process's I/O thread takes in pmap results; UINT32_MAX or a NULL
 * proxy: none).  DW_OK, DW_EINVAL or DW_ENOMEM.
 */
dw_err rp_waits(const rp_replay *r, const unsigned char *counted,
                const uint32_t *proxy, rp_wait **out, size_t *n);

/* True for the states that wait for something else (Idle, Waiting a
 * message, Blocked, Scheduling and Fork/Join, ...): the ones a receive
 * may end. */
int rp_is_wait(uint32_t state);

/* Frees r; NULL is ignored. */
void rp_free(rp_replay *r);

#endif
