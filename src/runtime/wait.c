/*
 * How a thread's waits are recorded (docs/tracing.md, "How waits are
 * recorded").  Two entry points, one rule: every condition-variable wait
 * of the runtime is rt_cond_wait, which names the state of that wait (the
 * raw pthread waits are poisoned in rt.h, so no wait can be written
 * without one), and every public blocking call opens a wait scope
 * (RTR_WAITS) naming the state of the whole call, which the waits inside
 * it keep.  What the thread is already in is read from the runtime's
 * mirror of the states it pushed, never from the tracer.
 */
#define RT_WAIT_IMPL /* this file is the one that may wait directly */
#include "runtime/rt.h"
#include "runtime/rtrace.h"

ACCT_TLS uint32_t rtr_stack[RTR_STACK];
ACCT_TLS int rtr_depth;

int
rtr_wait_begin_slow(uint32_t state, int kind)
{
	if (rtr_on)
		return rtr_wait_begin_traced(state, kind);
	if (!acct_on)
		return 0;
	if (kind == RTR_WAIT_SCOPE)
		rtr_user_thread(); /* its Running base goes below */
	uint32_t top = rtr_wait_top();
	if (rtr_wait_stands(state, kind, top))
		return 0; /* the enclosing call's state stands */
	if (rtr_depth > 0 && rtr_depth <= RTR_STACK &&
	    (rtr_stack[rtr_depth - 1] >> RTR_CLASS_SHIFT & 7u) ==
	        acct_class_of(state))
		return 0; /* accounting alone, a state of the class the
		             thread is in (rtrace.h's inline test, where the
		             clock is not the TSC): the push would change
		             nothing the accounting keeps */
	uint32_t entry = kind == RTR_WAIT_SCOPE ? state | RTR_SCOPE : state;
	if (top == entry)
		return 0; /* a call nested in one of its own kind */
	rtr_push_as(entry);
	return 1;
}

int
rt_cond_wait(pthread_cond_t *cv, pthread_mutex_t *m, const struct timespec *dl,
             uint32_t state)
{
	int pushed = rtr_wait_begin(state, RTR_WAIT_PRIMITIVE);
	int r =
	    dl ? pthread_cond_timedwait(cv, m, dl) : pthread_cond_wait(cv, m);
	rtr_wait_end(&pushed);
	return r;
}
