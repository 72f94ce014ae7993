/*
 * Credit-based flow control of calls, the receiving side: one pool of
 * conn_job_limit bytes per process, shared by every link that brings it
 * calls (docs/runtime.md, "Flow control").  A link holds of the pool
 * what its peer may still have on the way or queued here: its window
 * less the bytes already run (or its queued calls, if more).  Bytes run
 * go back to their link at once while nobody waits; while links wait
 * (each asked once, ASK), nothing goes back unasked and the waiting
 * links are served in the order they asked, each with all it asked for
 * once the pool has it, so no link starves and the pool's sum stays
 * within the bound.  A link's first FLOW_LINK_MIN comes with the link.
 * Frames are sent under the pool lock: conn_send never blocks, and a
 * queued link cannot be freed meanwhile (conn_close takes it out first).
 */
#include <pthread.h>

#include "runtime/rt.h"

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t pool_used; /* the sum of every link's rx.commit */
static uint64_t pool_held; /* CALL bytes queued or running, all links */
static struct conn *wait_head, **wait_tail = &wait_head;

static void
rx_settle(struct conn *c)
{
	struct flow_rx *x = &c->rx;
	uint64_t w = x->win > x->gone ? x->win - x->gone : 0;
	uint64_t commit = w > x->held ? w : x->held;
	pool_used = pool_used - x->commit + commit;
	x->commit = commit;
}

static void
rx_tell(struct conn *c, uint8_t type, uint64_t bytes, int flags)
{
	struct frame f;
	frame_init(&f, type, bytes, NULL, 0, NULL, 0, 0);
	conn_send(c, &f, flags);
}

static struct conn *
rx_pop(void)
{
	struct conn *c = wait_head;
	wait_head = c->rx.next;
	if (!wait_head)
		wait_tail = &wait_head;
	c->rx.next = NULL;
	c->rx.queued = 0;
	return c;
}

/* The first waiting link gets what it asked, its own bytes run first,
 * then a larger window; alone, a little more, so that a stream of calls
 * does not ask for each.  A call larger than the pool's free part goes
 * once no call is queued or running anywhere. */
static int
rx_serve_one(void)
{
	struct conn *c = wait_head;
	uint64_t bound = conn_job_limit;
	uint64_t free = bound > pool_used ? bound - pool_used : 0;
	uint64_t want = c->rx.want;
	if (want > free && pool_held > 0)
		return 0;
	rx_pop();
	uint64_t back = c->rx.gone < want ? c->rx.gone : want;
	uint64_t more = want - back;
	if (!wait_head && free > want) {
		uint64_t extra = (free - want) / 4;
		more += extra < FLOW_GRANT_MORE ? extra : FLOW_GRANT_MORE;
	}
	c->rx.gone -= back;
	c->rx.win += more;
	c->rx.want = 0;
	rx_settle(c);
	if (back)
		rx_tell(c, WIRE_CREDIT, back, CONN_MORE);
	rx_tell(c, WIRE_GRANT, more, 0);
	return 1;
}

static void
rx_serve(void)
{
	while (wait_head && rx_serve_one())
		;
}

void
flow_rx_open(struct conn *c)
{
	pthread_mutex_lock(&pool_lock);
	c->rx.open = 1;
	c->rx.win = FLOW_LINK_MIN;
	rx_settle(c);
	pthread_mutex_unlock(&pool_lock);
}

void
flow_rx_close(struct conn *c)
{
	pthread_mutex_lock(&pool_lock);
	if (c->rx.open) {
		c->rx.open = 0;
		if (c->rx.queued) {
			struct conn **pp = &wait_head;
			while (*pp != c)
				pp = &(*pp)->rx.next;
			*pp = c->rx.next;
			if (!*pp)
				wait_tail = pp;
			c->rx.next = NULL;
			c->rx.queued = 0;
		}
		c->rx.win = c->rx.gone = c->rx.want = 0;
		rx_settle(c); /* its queued calls still count until they run */
		rx_serve();
	}
	pthread_mutex_unlock(&pool_lock);
}

void
flow_received(struct conn *c, uint64_t bytes)
{
	pthread_mutex_lock(&pool_lock);
	c->rx.held += bytes;
	pool_held += bytes;
	rx_settle(c);
	pthread_mutex_unlock(&pool_lock);
}

void
flow_consumed(struct conn *c, uint64_t bytes, int now, int flags)
{
	pthread_mutex_lock(&pool_lock);
	struct flow_rx *x = &c->rx;
	bytes = bytes < x->held ? bytes : x->held;
	x->held -= bytes;
	pool_held -= bytes;
	uint64_t back = 0;
	if (x->open) {
		x->gone += bytes;
		if (!wait_head && (now || x->gone >= FLOW_CREDIT_STEP)) {
			back = x->gone;
			x->gone = 0;
		}
	}
	rx_settle(c);
	if (back)
		rx_tell(c, WIRE_CREDIT, back, flags);
	rx_serve();
	pthread_mutex_unlock(&pool_lock);
}

void
flow_rx_ask(struct conn *c, uint64_t want)
{
	pthread_mutex_lock(&pool_lock);
	if (c->rx.open && want) {
		c->rx.want = want;
		if (!c->rx.queued) {
			c->rx.queued = 1;
			*wait_tail = c;
			wait_tail = &c->rx.next;
		}
		rx_serve();
	}
	pthread_mutex_unlock(&pool_lock);
}

void
flow_rx_return(struct conn *c, uint64_t bytes)
{
	pthread_mutex_lock(&pool_lock);
	if (c->rx.open) {
		uint64_t over =
		    c->rx.win > FLOW_LINK_MIN ? c->rx.win - FLOW_LINK_MIN : 0;
		c->rx.win -= bytes < over ? bytes : over;
		rx_settle(c);
		rx_serve();
	}
	pthread_mutex_unlock(&pool_lock);
}
