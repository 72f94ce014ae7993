/*
 * Deferred re-arming: while remote calls flow back to back, a thread that
 * has read its frames leaves the I/O thread's interest in the link off
 * and the I/O thread turns it back on within REARM_DEFER_MS, instead of
 * two epoll_ctl calls per read turn (one to hand the link back, one to
 * take it again for the next call, ~0.6 us each on this VM).
 *
 * The I/O thread is in this mode only while links are being handed back
 * often (REARM_ENTER re-arms at once within REARM_WINDOW_MS; it ends
 * after REARM_QUIET_WAKES periods without a deferral); then it waits
 * REARM_DEFER_MS at most in epoll_wait and re-arms the link left off, so a
 * frame nobody reads (a heartbeat, an interrupt, a call for another executor, a
 * result with a completion notice) waits at most that long more.  Otherwise
 * epoll_wait blocks as before and a link handed back is re-armed at once.
 *
 * One link at a time is left off (the hot one; others re-arm at once).
 * Ordering: a reader publishes the link, then reads the mode; the I/O
 * thread clears the mode, then takes the published link: either the
 * reader sees the mode off and re-arms itself, or the I/O thread sees the
 * link (both may re-arm: conn_rearm_now is idempotent).
 */
#include "runtime/conn.h"
#include "runtime/rt.h"

#define REARM_ENTER       32 /* re-arms at once within REARM_WINDOW_MS */
#define REARM_WINDOW_MS   10
#define REARM_QUIET_WAKES 64 /* periods without a deferral: mode ends */

/* defer_lock guards defer_c (one reference held); a leaf. */
static pthread_mutex_t defer_lock = PTHREAD_MUTEX_INITIALIZER;
static struct conn *defer_c;
static int defer_mode;        /* atomic: the I/O thread wakes each period */
static unsigned defer_hits;   /* atomic: deferrals since its last wake */
static unsigned defer_rearms; /* atomic: re-arms at once in the window */
static uint64_t defer_window; /* atomic: when the window started (ms) */
static int defer_quiet;       /* I/O thread: periods without a deferral */

/* Puts c in the slot unless another link has it. */
static int
rearm_publish(struct conn *c)
{
	pthread_mutex_lock(&defer_lock);
	int ok = defer_c == NULL || defer_c == c;
	if (ok && !defer_c) {
		conn_ref(c);
		defer_c = c;
	}
	pthread_mutex_unlock(&defer_lock);
	return ok;
}

/* c->wlock held.  1: c's interest may stay off (the I/O thread turns it
 * on within REARM_DEFER_MS); 0: re-arm it now. */
int
rearm_defer(struct conn *c)
{
	if (!__atomic_load_n(&defer_mode, __ATOMIC_SEQ_CST)) {
		uint64_t now = rt_now_ms(),
		         w = __atomic_load_n(&defer_window, __ATOMIC_RELAXED);
		if (now - w > REARM_WINDOW_MS) { /* a new window */
			__atomic_store_n(&defer_window, now, __ATOMIC_RELAXED);
			__atomic_store_n(&defer_rearms, 0, __ATOMIC_RELAXED);
		}
		if (__atomic_add_fetch(&defer_rearms, 1, __ATOMIC_RELAXED) ==
		    REARM_ENTER) {
			__atomic_store_n(&defer_mode, 1, __ATOMIC_SEQ_CST);
			loop_wake(); /* its epoll_wait gets the period */
		}
		return 0;
	}
	/* still published since the last period: no lock (the I/O thread
	 * taking it now re-arms c after this wlock, or the next period) */
	if (__atomic_load_n(&defer_c, __ATOMIC_SEQ_CST) != c &&
	    !rearm_publish(c))
		return 0;
	__atomic_add_fetch(&defer_hits, 1, __ATOMIC_RELAXED);
	/* published: if the mode ended meanwhile, re-arm here too */
	return __atomic_load_n(&defer_mode, __ATOMIC_SEQ_CST) != 0;
}

/* I/O thread: how long epoll_wait may block (ms, -1 for ever). */
int
rearm_wait_ms(void)
{
	return __atomic_load_n(&defer_mode, __ATOMIC_RELAXED) ? REARM_DEFER_MS
	                                                      : -1;
}

/* I/O thread, after each epoll_wait: re-arms the link left off; ends the
 * mode after REARM_QUIET_WAKES periods without a deferral. */
void
rearm_tick(void)
{
	if (__atomic_load_n(&defer_mode, __ATOMIC_RELAXED)) {
		if (__atomic_exchange_n(&defer_hits, 0, __ATOMIC_RELAXED))
			defer_quiet = 0;
		else if (++defer_quiet >= REARM_QUIET_WAKES) {
			defer_quiet = 0;
			__atomic_store_n(&defer_mode, 0, __ATOMIC_SEQ_CST);
		}
	}
	if (!__atomic_load_n(&defer_c, __ATOMIC_SEQ_CST))
		return;
	pthread_mutex_lock(&defer_lock);
	struct conn *c = defer_c;
	defer_c = NULL;
	pthread_mutex_unlock(&defer_lock);
	int again = __atomic_load_n(&defer_mode, __ATOMIC_SEQ_CST) != 0;
	if (c && !conn_rearm_now(c, !again)) { /* busy: the next period */
		pthread_mutex_lock(&defer_lock);
		if (!defer_c) {
			defer_c = c;
			c = NULL;
		}
		pthread_mutex_unlock(&defer_lock);
		if (c) /* the slot went to another link meanwhile */
			conn_rearm_now(c, 1);
		__atomic_store_n(&defer_hits, 1, __ATOMIC_RELAXED);
	}
	if (c)
		conn_unref(c);
}

/* The loop stopped: nothing is left off. */
void
rearm_stop(void)
{
	rearm_tick();
	__atomic_store_n(&defer_mode, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&defer_rearms, 0, __ATOMIC_RELAXED);
	defer_quiet = 0;
	rearm_tick();
}
