/*
 * The runtime's tracing: deploying the tracer on every process, the
 * runtime's own states, events and communications, clock measurements,
 * gathering of trace files, and the merge at the end (docs/tracing.md).
 * It uses the tracer's public API only.
 */
#ifndef DW_RUNTIME_RTRACE_H
#define DW_RUNTIME_RTRACE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include <dwork/dwork.h>
#include <dwork/trace.h>

#include "runtime/live.h"

struct conn;
struct worker;

extern int rtr_on; /* this process traces for the runtime */

#define RTR_CONFIG_MAX 8192u /* CONFIG payload limit */

/* Master: reads the switch (opts->trace, else DWORK_TRACE) and starts
 * tracing as task 0.  Returns DW_OK (also when off) or DW_EINVAL. */
int rtr_master_init(const dw_options *opts);
/* Master: the CONFIG payload for worker id; returns its length. */
size_t rtr_config_payload(unsigned char *p, int id);
/* Master: ends tracing, then merges the directory into <dir>/trace.* with
 * the dwork tool and prints its summary. */
void rtr_master_finish(void);

/* Worker: applies CONFIG (starts tracing as task id - 1 when asked).
 * Returns 0, or -1 with the reason. */
int rtr_worker_config(const unsigned char *p, size_t len, int id, char *why,
                      size_t whylen);
/* Worker, leaving: ends tracing and, when its files are not on the
 * master's filesystem, sends them over the link. */
void rtr_worker_exit(struct conn *master);

/* A runtime thread: its name and base state. */
void rtr_thread_start(const char *name, uint32_t base_state);
/* A runtime thread started by another says it has its trace thread id
 * (after rtr_thread_start); its creator waits for that, so that every
 * process numbers its threads alike: main, I/O, executors in order. */
void rtr_thread_started(void);
void rtr_thread_wait_started(void);
/* A master user thread entering a dwork call: Running is its base. */
extern ACCT_TLS int rtr_user_based; /* this thread has its base state */
void rtr_user_thread_slow(void);
static inline void
rtr_user_thread(void)
{
	if (__builtin_expect(!rtr_user_based, 0))
		rtr_user_thread_slow();
}

/*
 * The states the runtime pushes on a thread, mirrored per thread so that
 * a wait knows what the thread is already in (wait.c).  An entry with
 * RTR_SCOPE set was pushed by a blocking call's wait scope.
 */
#define RTR_STACK 32
#define RTR_SCOPE 0x80000000u
extern ACCT_TLS uint32_t rtr_stack[RTR_STACK];
extern ACCT_TLS int rtr_depth;

/* An entry whose state the tracer was given (it is popped there too);
 * the mirror is kept while tracing or accounting (live.h) is on.  Each
 * entry also keeps its state's accounting class (RTR_CLASS), so that a
 * pop finds the class it returns to without working it out again. */
#define RTR_TRACED      0x40000000u
#define RTR_CLASS_SHIFT 27
#define RTR_CLASS       (7u << RTR_CLASS_SHIFT)
#define RTR_STATE       0x07ffffffu
#define RTR_TRACKING    (rtr_on | acct_on)

/* What accounting learns from an event (rtr_event). */
static inline void
rtr_acct_event(uint32_t type, uint64_t value)
{
	if (type == DW_EV_FUNCTION)
		acct_function((uint32_t)value);
	else if (type == DW_EV_CALL)
		acct_issued((uint32_t)value);
}

#define RTR_INLINE static inline __attribute__((always_inline))

/* At a change of class the accounting reads the TSC (acct_switch_fast
 * keeps it as the slot's since): the record there takes that read
 * instead of making its own (one rdtsc, ~13 ns on this VM). */
#if defined(__x86_64__) || defined(__i386__)
#define RTR_SHARES_TSC(cls)                                                    \
	((cls) != acct_cls_now && acct_cls_now != ACCT_CLS_UNKNOWN)
#else
#define RTR_SHARES_TSC(cls) 0
#endif

/* The mirror's push and pop inline at every state change: with tracing
 * off (accounting alone) a few loads and stores and the class switch;
 * with it on the same, plus the tracer's record.  Inline so that a
 * constant state's entry and class are constants at the call site. */
RTR_INLINE void
rtr_push_traced(uint32_t entry, uint32_t type, uint32_t value)
{
	uint32_t cls = acct_class_of(entry & RTR_STATE);
	int d = rtr_depth;
	if (d < RTR_STACK)
		rtr_stack[d] = entry | cls << RTR_CLASS_SHIFT | RTR_TRACED;
	rtr_depth = d + 1;
	if (acct_on) {
		if (type)
			rtr_acct_event(type, value);
		if (RTR_SHARES_TSC(cls)) {
			acct_switch(cls);
			dwt_state_push_event_tsc(
			    acct_me->since, entry & RTR_STATE, type, value);
			return;
		}
		acct_switch(cls);
	}
	dwt_state_push_event(entry & RTR_STATE, type, value);
}

/* Pushes entry with an event at the same time (type 0: none), in one
 * trace record. */
RTR_INLINE void
rtr_push_ev(uint32_t entry, uint32_t type, uint32_t value)
{
	if (__builtin_expect(!rtr_on, 1)) {
		if (!acct_on)
			return;
		uint32_t cls = acct_class_of(entry & RTR_STATE);
		int d = rtr_depth;
		if (d < RTR_STACK)
			rtr_stack[d] = entry | cls << RTR_CLASS_SHIFT;
		rtr_depth = d + 1;
		if (type)
			rtr_acct_event(type, value);
		acct_switch(cls);
		return;
	}
	rtr_push_traced(entry, type, value);
}

RTR_INLINE void
rtr_push_as(uint32_t entry)
{
	rtr_push_ev(entry, 0, 0);
}

RTR_INLINE void
rtr_push(uint32_t state)
{
	rtr_push_as(state);
}

/* Tracing's pop: the mirror and the accounting as with accounting
 * alone, and the record (a pop when the tracer was given the entry, else
 * the event alone).  An empty mirror (more pops than pushes) pops in the
 * tracer too. */
RTR_INLINE void
rtr_pop_traced(uint32_t type, uint64_t value)
{
	int d = rtr_depth;
	uint32_t e =
	    (unsigned)(d - 1) < RTR_STACK ? rtr_stack[d - 1] : RTR_TRACED;
	if (d > 0)
		rtr_depth = --d;
	if (acct_on) {
		if (type)
			rtr_acct_event(type, value);
		uint32_t cls = (unsigned)(d - 1) < RTR_STACK
		                   ? rtr_stack[d - 1] >> RTR_CLASS_SHIFT & 7u
		                   : ACCT_NCLASS;
		if ((e & RTR_TRACED) && RTR_SHARES_TSC(cls)) {
			acct_switch(cls);
			dwt_state_pop_event_tsc(acct_me->since, type, value);
			return;
		}
		acct_switch(cls);
	}
	if (e & RTR_TRACED)
		dwt_state_pop_event(type, value);
	else if (type)
		dwt_event(type, value);
}

/* An event (type 0: none), then the innermost state is left: one trace
 * record. */
RTR_INLINE void
rtr_pop_ev(uint32_t type, uint64_t value)
{
	if (__builtin_expect(!rtr_on, 1)) {
		if (!acct_on)
			return;
		int d = rtr_depth;
		if (d > 0)
			rtr_depth = --d;
		if (type)
			rtr_acct_event(type, value);
		acct_switch((unsigned)(d - 1) < RTR_STACK
		                ? rtr_stack[d - 1] >> RTR_CLASS_SHIFT & 7u
		                : ACCT_NCLASS);
		return;
	}
	rtr_pop_traced(type, value);
}

RTR_INLINE void
rtr_pop(void)
{
	rtr_pop_ev(0, 0);
}

/*
 * A function's run (call_run): rtr_push_ev(state, type, value) and, at
 * its end, rtr_pop_ev(type, 0), but an item of a batch (live.h, "Batches")
 * is timed (1) or runs untimed (2): its mirror depth and its count only.
 * An untimed item's mirror entry is already in place: while untimed items
 * are left (acct_skip), the entry at the items' depth is RTR_ITEM_ENTRY,
 * written by the timed item before them or, for a batch that starts with
 * untimed items, by rtr_batch_begin; anything else pushed there switches
 * the class, which ends the mixed burst and the untimed items.
 */
#define RTR_ITEM_ENTRY (DWT_STATE_RUNNING | ACCT_USEFUL << RTR_CLASS_SHIFT)
RTR_INLINE int
rtr_run_begin(uint32_t state, uint32_t type, uint32_t value)
{
	int d = rtr_depth;
	if (__builtin_expect(acct_batch != (uint32_t)d + 1, 1) ||
	    state != DWT_STATE_RUNNING) {
		rtr_push_ev(state, type, value);
		return 0;
	}
	if (acct_skip) {           /* its count and function: acctbatch.c */
		rtr_depth = d + 1; /* its entry is there (RTR_ITEM_ENTRY) */
		acct_skip--;
		return 2;
	}
	rtr_push_ev(state, type, value);
	acct_item_begin(type ? value : 0);
	return 1;
}

RTR_INLINE void
rtr_run_end(int how, uint32_t type)
{
	if (__builtin_expect(how == 0, 1)) {
		rtr_pop_ev(type, 0);
		return;
	}
	int d = --rtr_depth; /* the carrier's entry is below */
	if (how == 2 && acct_cls_now == ACCT_CLS_MIXED)
		return; /* untimed, and nothing switched inside it */
	uint32_t below = (unsigned)(d - 1) < RTR_STACK
	                     ? rtr_stack[d - 1] >> RTR_CLASS_SHIFT & 7u
	                     : ACCT_NCLASS;
	if (how == 1) {
		acct_item_end(below, type != 0);
		return;
	}
	if (type) /* its burst ended inside it */
		rtr_acct_event(type, 0);
	acct_switch(below);
}

/* A batch carrier (pmap.c) runs its items, of function fn (nl bytes of
 * its name). */
static inline uint32_t
rtr_batch_begin(const char *fn, size_t nl)
{
	if (rtr_on || !acct_on)
		return acct_batch;
	int d = rtr_depth;
	uint32_t outer = acct_batch_begin(d, fn, nl);
	if (acct_skip && d < RTR_STACK) /* it starts with untimed items */
		rtr_stack[d] = RTR_ITEM_ENTRY;
	return outer;
}
static inline void
rtr_batch_end(uint32_t outer)
{
	if (acct_batch != outer)
		acct_batch_end(outer);
}

/*
 * Wait scopes (wait.c, docs/tracing.md "How waits are recorded").  Every
 * public blocking call opens one at its top:
 *
 *     RTR_WAITS(DWT_STATE_SCHEDULING);
 *
 * so the calling thread is in that state for the whole call (a master
 * user thread gets its Running base first), and every wait inside it
 * (rt_cond_wait) keeps that state; a call nested in it opens its own, the
 * innermost shows.  The scope closes when the block it is in ends,
 * whatever the return path.  RTR_IN(state) puts the thread in state
 * for the rest of its block inside a call (sending: Blocking send; a
 * reducer the call runs for the user: Running).
 */
enum rtr_wait_kind {
	RTR_WAIT_PRIMITIVE = 0, /* rt_cond_wait: keeps an enclosing scope */
	RTR_WAIT_SCOPE = 1,     /* a blocking call's scope */
	RTR_WAIT_PUSH = 2,      /* a state of its own inside a call */
};
/* The entry on top of this thread's mirror without its traced and
 * class bits; the scope bit clear and an impossible state when unknown
 * (empty, or deeper than kept). */
static inline uint32_t
rtr_wait_top(void)
{
	int d = rtr_depth;
	if ((unsigned)(d - 1) >= RTR_STACK)
		return UINT32_MAX & ~RTR_SCOPE;
	return rtr_stack[d - 1] & ~(RTR_TRACED | RTR_CLASS);
}
/* A primitive wait inside a scope, or in the state the thread is in,
 * pushes nothing: the enclosing state stands (traced or not). */
static inline int
rtr_wait_stands(uint32_t state, int kind, uint32_t top)
{
	return kind == RTR_WAIT_PRIMITIVE &&
	       ((top & RTR_SCOPE) || (top & ~RTR_SCOPE) == state);
}
/* Tracing's rules (docs/tracing.md, "How waits are recorded"): a wait
 * inside a scope, or in the state the thread is in, keeps that state; a
 * call nested in one of its own kind pushes nothing; anything else is
 * pushed.  Inline, so that with a constant state and kind only the
 * mirror's top is read and compared. */
RTR_INLINE int
rtr_wait_begin_traced(uint32_t state, int kind)
{
	if (kind == RTR_WAIT_SCOPE)
		rtr_user_thread(); /* its Running base goes below */
	uint32_t top = rtr_wait_top();
	if (rtr_wait_stands(state, kind, top))
		return 0; /* the enclosing call's state stands */
	uint32_t entry = kind == RTR_WAIT_SCOPE ? state | RTR_SCOPE : state;
	if (top == entry)
		return 0; /* a call nested in one of its own kind */
	rtr_push_traced(entry, 0, 0);
	return 1;
}
/* Returns 1 when it pushed a state (rtr_wait_end pops it).  With
 * accounting alone (tracing off) the mirror only keeps the class each
 * pop returns to, so a wait of the class the thread is in pushes
 * nothing (the master's send inside a call, and its wait for the
 * result, are in the call's Waiting a message scope), and one of
 * another class is pushed at once: both inline, with the class a
 * constant; a thread whose class is not known yet goes to wait.c. */
int rtr_wait_begin_slow(uint32_t state, int kind);
RTR_INLINE int
rtr_wait_begin(uint32_t state, int kind)
{
	if (__builtin_expect(rtr_on, 0))
		return rtr_wait_begin_traced(state, kind);
	if (!acct_on)
		return 0;
	if (kind == RTR_WAIT_SCOPE)
		rtr_user_thread(); /* its Running base goes below */
	if (acct_class_of(state) == acct_cls_now)
		return 0;
	if (__builtin_expect(acct_cls_now != ACCT_CLS_UNKNOWN, 1)) {
		rtr_push_as(kind == RTR_WAIT_SCOPE ? state | RTR_SCOPE : state);
		return 1;
	}
	return rtr_wait_begin_slow(state, kind);
}
RTR_INLINE void
rtr_wait_end(int *pushed)
{
	if (*pushed)
		rtr_pop();
	*pushed = 0;
}

#define RTR_WAITS(state)                                                       \
	__attribute__((cleanup(rtr_wait_end))) int rtr_waits_                  \
	    __attribute__((unused)) = rtr_wait_begin(state, RTR_WAIT_SCOPE)
#define RTR_IN(state)                                                          \
	__attribute__((cleanup(rtr_wait_end))) int rtr_in_                     \
	    __attribute__((unused)) = rtr_wait_begin(state, RTR_WAIT_PUSH)

static inline void
rtr_event(uint32_t type, uint64_t value)
{
	if (acct_on)
		rtr_acct_event(type, value);
	if (__builtin_expect(rtr_on, 0))
		dwt_event(type, value);
}

/* rtr_wait_end with an event at its end (type 0: none), in the pop's
 * record when it pops. */
static inline void
rtr_wait_end_ev(int *pushed, uint32_t type, uint64_t value)
{
	if (*pushed)
		rtr_pop_ev(type, value);
	else if (type)
		rtr_event(type, value);
	*pushed = 0;
}

/* A frame sent or received: type and bytes at one time. */
void rtr_frame(int sent, unsigned type, size_t bytes);

/* One side of a call's messages: k 0 call, 1 result/done, 2 fetch,
 * 3 fetched result, 4 request to an object's owner, 5 its answer (the
 * tag; the message id is call_id * 4 + k % 4, requests and calls
 * sharing one counter); peer is the other process id. */
#define RTR_TAG_REQUEST 4
#define RTR_TAG_ANSWER  5
static inline void
rtr_comm(unsigned flags, int peer, uint64_t call_id, int k, size_t bytes)
{
	if (__builtin_expect(rtr_on, 0))
		dwt_comm(flags, (uint32_t)(peer - 1), DWT_THREAD_ANY,
		         (uint32_t)k, bytes, call_id * 4 + (uint64_t)(k & 3));
}

/* Labels a registered function's id (every process does, for the .pcf). */
void rtr_label_function(const char *name);

/* ---- shared by the low part (rtrace.c) and the services ---- */
extern char rtr_dir[3800];                /* the trace directory */
extern char rtr_token[33];                /* of this run's marker file */
extern char rtr_local_dir_path[PATH_MAX]; /* worker: its files to send */
extern int rtr_merge_on;                  /* master: merge at the end */
extern uint64_t rtr_last_sync;            /* ms of the last sync round */
/* A string on the wire: u16 length, bytes (get: -1 when it does not
 * fit in len or in cap with its NUL). */
size_t rtr_put_str(unsigned char *p, const char *s);
int rtr_get_str(const unsigned char *p, size_t len, size_t *o, char *out,
                size_t cap);
/* Ends this process's tracing (the services' last records are in). */
void rtr_end(void);

/* ---- clock measurements, rtsync.c (master side, any thread) ---- */
/* Starts a round of n ping-pongs with w (no-op when one is running). */
void rtr_sync_start(struct worker *w, int n);
/* Waits up to ms for w's round to end. */
void rtr_sync_wait(struct worker *w, int ms);
/* A PONG from w arrived. */
void rtr_on_pong(struct conn *c, const unsigned char *p, size_t len);
/* Periodic rounds (I/O thread, heartbeat tick). */
void rtr_sync_tick(void);
/* Registers CLOCK_PING, CLOCK_PONG, SYNC and (master) the sync tick. */
void rtr_sync_attach(void);
/* rtgather.c: registers FILE frames. */
void rtr_gather_attach(void);

/* ---- worker side of the measurements ---- */
void rtr_on_clock_ping(struct conn *c, uint64_t ref, const unsigned char *p,
                       size_t len);
void rtr_on_sync(const unsigned char *p, size_t len);

/* ---- gathering (master side) ---- */
void rtr_on_file(struct conn *c, uint64_t ref, const unsigned char *p,
                 size_t len);

#endif
