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

#include <stdint.h>

#include <dwork/error.h>

typedef struct rp_replay rp_replay;

/* A replay of nthreads threads; DW_OK or DW_ENOMEM. */
dw_err rp_new(size_t nthreads, rp_replay **out);

/* A burst of state on thread from start to end (ns).  DW_ENOMEM. */
dw_err rp_state(rp_replay *r, uint32_t thread, uint64_t start, uint64_t end,
                uint32_t state);

/* A message sent by thread from at send, received by thread to at recv
 * (the logical times).  DW_ENOMEM. */
dw_err rp_msg(rp_replay *r, uint32_t from, uint32_t to, uint64_t send,
              uint64_t recv);

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
 * The critical path of the replay rp_run made: the chain of bursts and
 * zero-time messages that ends last, followed back from its end through
 * each receive to whichever of its send and its receiver's readiness
 * came later.  ns of it in each function (sorted by id, *fns owned by
 * r), ns in no function, and the messages on it.
 */
typedef struct rp_path {
	const rp_fn *fns;
	size_t nfns;
	uint64_t other_ns, messages;
} rp_path;

dw_err rp_critical_path(rp_replay *r, rp_path *out);

/* True for the states that wait for something else (Idle, Waiting a
 * message, Blocked, ...): the ones a receive may end. */
int rp_is_wait(uint32_t state);

/* Frees r; NULL is ignored. */
void rp_free(rp_replay *r);

#endif
