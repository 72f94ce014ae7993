/*
 * The waits no receive ends and their wakers (replay_int.h, rp_wakes;
 * docs/tracing.md "The POP tree").  A thread of the runtime often
 * waits for something the trace shows as no message: an I/O thread
 * between socket reads, a master in dw_finalize while its workers hand
 * in their traces, a master in dw_pmap whose I/O thread takes in the
 * results.  Such a wait is taken to end because of the last receive
 * on another thread of its process inside it (not an Idle wait), else
 * of the busy burst of another thread that ended last inside it, so
 * the replay moves it with that, as it moves a receive with its send.  A
 * wait inside which no other thread ended a burst (a timer, say) keeps
 * its duration.  A thread's Not created stretches are not waits here.
 */
#include <stdbool.h>
#include <stdlib.h>

#include <dwork/events.h>

#include "merge/replay_int.h"

typedef struct rp_rcv {
	uint32_t to;
	uint64_t at;
} rp_rcv;

static int
rcv_cmp(const void *a, const void *b)
{
	const rp_rcv *x = a, *y = b;

	if (x->to != y->to)
		return x->to < y->to ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

/* True when a receive of thread lies in (a, b]. */
static int
received_in(const rp_rcv *v, size_t n, uint32_t thread, uint64_t a, uint64_t b)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].to < thread ||
		    (v[mid].to == thread && v[mid].at <= a))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].to == thread && v[lo].at <= b;
}

/* Where the last search of a thread's bursts stopped: the waits of one
 * thread come in time order, so the next search mostly moves a step or
 * two forward (a binary search and a scan back, a wait and thread, were
 * a third of the JSON writer's instructions).  busy[i]: burst i is busy
 * (not a wait, not empty), worked out once. */
typedef struct rp_cur {
	size_t at;     /* the bursts before at ended by the last x */
	uint64_t last; /* the end of the last busy one of them; 0 */
	uint8_t *busy;
} rp_cur;

/* The end of the last busy burst of t ending at or before x; 0.
 * Inlined: called for every wait and thread. */
static inline __attribute__((always_inline)) uint64_t
busy_end(const rp_thread *t, uint64_t x, rp_cur *c)
{
	size_t lo = c->at, k = 0;
	uint64_t e = c->last;

	for (; lo < t->nb && t->b[lo].end <= x && k++ < 8; lo++)
		e = c->busy[lo] ? t->b[lo].end : e;
	if (k > 8 || (lo && t->b[lo - 1].end > x)) { /* far: a search */
		lo = rp_bursts_ended(t, x);
		e = 0;
		for (size_t i = lo; i-- > 0;)
			if (c->busy[i]) {
				e = t->b[i].end;
				break;
			}
	}
	c->at = lo;
	c->last = e;
	return e;
}

/* Each thread's cursor, with its bursts' busy flags; NULL when out of
 * memory. */
static rp_cur *
curs_new(const rp_replay *r)
{
	rp_cur *c = calloc(r->nthreads + 1, sizeof *c);

	for (uint32_t u = 0; c && u < r->nthreads; u++) {
		const rp_thread *t = &r->t[u];

		if (!(c[u].busy = malloc(t->nb + 1))) {
			while (u-- > 0)
				free(c[u].busy);
			free(c);
			return NULL;
		}
		for (size_t i = 0; i < t->nb; i++)
			c[u].busy[i] = !rp_is_wait(t->b[i].state) &&
			               t->b[i].end > t->b[i].start;
	}
	return c;
}

static void
curs_free(const rp_replay *r, rp_cur *c)
{
	for (uint32_t u = 0; c && u < r->nthreads; u++)
		free(c[u].busy);
	free(c);
}

/* Wait, Send Receive, Wait, ...: i is followed by another wait. */
static int
continued(const rp_thread *t, size_t i)
{
	return i + 2 < t->nb && t->b[i + 1].state == DWT_STATE_SEND_RECEIVE &&
	       t->b[i + 1].start == t->b[i].end &&
	       rp_is_wait(t->b[i + 2].state) &&
	       t->b[i + 2].start == t->b[i + 1].end;
}

/* The end of wait i of t, or of the wait after it when only a Send
 * Receive breaks them (the runtime's caller reading its own result:
 * replay.c treats the two, ended by a receive, as one wait).  Not the
 * whole chain: an I/O thread alternates the two all run long. */
static uint64_t
chain_end(const rp_thread *t, size_t i)
{
	return continued(t, i) ? t->b[i + 2].end : t->b[i].end;
}

/* The last receive of thread in (a, b]; 0 when there is none. */
static uint64_t
last_received(const rp_rcv *v, size_t n, uint32_t thread, uint64_t a,
              uint64_t b)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].to < thread ||
		    (v[mid].to == thread && v[mid].at <= b))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && v[lo - 1].to == thread && v[lo - 1].at > a ? v[lo - 1].at
	                                                        : 0;
}

/* The thread of th's process that received a message last inside
 * (a, b], and where: its busy burst holding or after the receive that
 * ended by b, else the receive itself.  A thread that another thread
 * of its process wakes (a master in dw_pmap, whose I/O thread takes
 * the results in) waits for that receive.  0 when none did. */
static uint64_t
own_waker(const rp_replay *r, uint32_t th, uint64_t a, uint64_t b,
          const rp_rcv *v, uint32_t *from, rp_cur *cur)
{
	uint64_t best = 0, at = 0;

	for (uint32_t u = 0; u < r->nthreads && r->t[th].task1; u++) {
		uint64_t x, e;

		if (u == th || r->t[u].task1 != r->t[th].task1)
			continue;
		x = last_received(v, r->nm, u, a, b);
		if (x <= best)
			continue;
		e = busy_end(&r->t[u], b, &cur[u]);
		best = x;
		at = e > x ? e : x;
		*from = u;
	}
	return at;
}

/* The waker of wait i of thread th, when no receive ends it or the
 * wait it is broken off from: for a thread inside a blocking call, the
 * last receive on another thread of its process inside it (not for an
 * Idle one, an I/O thread between frames, which frames from other
 * processes wake); else the busy burst of another thread that ended
 * last inside it.  Added to r->wake. */
static int
wait_waker(rp_replay *r, uint32_t th, size_t i, const rp_rcv *v, rp_cur *at)
{
	const rp_thread *t = &r->t[th];
	const rp_burst *b = &t->b[i];
	uint32_t from = th;
	uint64_t best = 0;
	int own;

	if (received_in(v, r->nm, th, b->start, chain_end(t, i)))
		return 0;
	if (b->state != DWT_STATE_IDLE)
		best = own_waker(r, th, b->start, b->end, v, &from, at);
	own = from != th;
	for (uint32_t u = 0; u < r->nthreads && !own; u++) {
		uint64_t e = u == th ? 0 : busy_end(&r->t[u], b->end, &at[u]);

		if (e > b->start && e > best) {
			best = e;
			from = u;
		}
	}
	if (from == th)
		return 0;
	if (rp_grow((void **)&r->wake, r->nwake, &r->capwake, sizeof *r->wake))
		return -1;
	r->wake[r->nwake++] = (rp_wake){th, from, b->end, b->start, best};
	return 0;
}

/* Each group of v (of n) with one receiver in time order: insertion,
 * as a thread's receives come nearly in order, else qsort. */
static void
rcv_group_sort(rp_rcv *v, size_t n)
{
	size_t moves = 0;

	for (size_t i = 1; i < n; i++) {
		rp_rcv x = v[i];
		size_t k = i;

		for (; k > 0 && v[k - 1].at > x.at; k--)
			v[k] = v[k - 1];
		v[k] = x;
		if ((moves += i - k) > 16 * n) {
			qsort(v, n, sizeof *v, rcv_cmp);
			return;
		}
	}
}

/* The receives into v by receiver, then time: counted by receiver,
 * then each receiver's sorted (a qsort of them all was 3% of the JSON
 * writer).  c: one cursor a thread, its at used as the count. */
static void
rcv_sort(const rp_replay *r, rp_rcv *v, rp_cur *c)
{
	size_t pos = 0;

	for (size_t i = 0; i < r->nm; i++) {
		if (r->m[i].to >= r->nthreads) { /* cannot happen: all */
			for (size_t k = 0; k < r->nm; k++)
				v[k] = (rp_rcv){r->m[k].to, r->m[k].recv};
			if (r->nm > 1)
				qsort(v, r->nm, sizeof *v, rcv_cmp);
			return;
		}
		c[r->m[i].to].at++;
	}
	for (uint32_t u = 0; u < r->nthreads; u++) {
		size_t n = c[u].at;

		c[u].at = pos;
		pos += n;
	}
	for (size_t i = 0; i < r->nm; i++)
		v[c[r->m[i].to].at++] = (rp_rcv){r->m[i].to, r->m[i].recv};
	for (size_t u = 0, from = 0; u < r->nthreads; u++) {
		rcv_group_sort(v + from, c[u].at - from);
		from = c[u].at;
	}
}

int
rp_wakes(rp_replay *r)
{
	rp_rcv *v = malloc((r->nm + 1) * sizeof *v);
	rp_cur *at = curs_new(r);
	int err = 0;

	r->nwake = 0;
	if (!v || !at) {
		free(v);
		curs_free(r, at);
		return -1;
	}
	rcv_sort(r, v, at);
	for (uint32_t th = 0; th < r->nthreads && !err; th++) {
		const rp_thread *t = &r->t[th];
		bool fresh = false;

		/* the last burst: a wait there waits for the run to end */
		for (size_t i = 0; i + 1 < t->nb && !err; i++) {
			if (!rp_is_wait(t->b[i].state) ||
			    t->b[i].state == DWT_STATE_NOT_CREATED ||
			    t->b[i].end <= t->b[i].start)
				continue;
			/* the cursors restart for a thread with a wait only:
			 * a trace of many threads and few waits (or a file
			 * that claims 65,535 threads) is not nthreads^2 */
			for (uint32_t u = 0; u < r->nthreads && !fresh; u++)
				at[u].at = at[u].last = 0;
			fresh = true;
			err = wait_waker(r, th, i, v, at);
		}
	}
	curs_free(r, at);
	free(v);
	return err;
}
