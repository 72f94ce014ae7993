/*
 * The critical path of the ideal-network replay (replay.h,
 * docs/tracing.md "The critical path"): from the replay's end, back
 * along the busy bursts of a thread; at a wait, to what ended it.  A
 * wait ended by a receive whose send came last crosses the message to
 * the sender; one whose receiver came last continues before the wait
 * (it takes no time on the ideal network); a wait no message ends (an
 * I/O thread between socket reads, a master in dw_finalize) goes to its
 * waker (wake.c) when the waker came last, and otherwise, or when it
 * has none, to the busy burst on any thread that ended last before the
 * wait did.  Waits are never on the path: its length is the time of
 * the busy bursts on it.
 */
#include <stdlib.h>
#include <string.h>

#include <dwork/events.h>

#include "merge/replay_int.h"

#define NONE SIZE_MAX

typedef struct walk {
	rp_replay *r;
	uint32_t th; /* the thread the path is on */
	uint64_t x;  /* the original time it is at */
	size_t kb;   /* receives of th that may still end the path: [0, kb) */
	uint64_t in; /* its time in functions */
	uint64_t len;
	uint64_t messages;
} walk;

static rp_fn *
fn_get(rp_replay *r, uint64_t func)
{
	rp_fn *p;

	for (size_t i = 0; i < r->nfns; i++)
		if (r->fns[i].func == func)
			return &r->fns[i];
	p = realloc(r->fns, (r->nfns + 1) * sizeof *p);
	if (!p)
		return NULL;
	r->fns = p;
	r->fns[r->nfns] = (rp_fn){func, 0};
	return &r->fns[r->nfns++];
}

static int
fn_cmp(const void *a, const void *b)
{
	const rp_fn *x = a, *y = b;

	return x->func < y->func ? -1 : x->func > y->func;
}

/* Puts the busy piece [a, b] of the walk's thread on the path, with the
 * time of its functions. */
static int
busy(walk *w, uint64_t a, uint64_t b)
{
	rp_replay *r = w->r;
	const rp_thread *t = &r->t[w->th];
	rp_seg *last = r->nsegs ? &r->segs[r->nsegs - 1] : NULL;

	if (b <= a)
		return 0;
	w->len += b - a;
	if (last && last->thread == w->th && last->start == b) {
		last->start = a;
	} else {
		if (rp_grow((void **)&r->segs, r->nsegs, &r->capsegs,
		            sizeof *r->segs))
			return -1;
		r->segs[r->nsegs++] = (rp_seg){w->th, a, b};
	}
	for (size_t i = 0; i < t->nf; i++) {
		uint64_t s = t->f[i].start > a ? t->f[i].start : a;
		uint64_t e = t->f[i].end < b ? t->f[i].end : b;
		rp_fn *f;

		if (e <= s)
			continue;
		f = fn_get(r, t->f[i].func);
		if (!f)
			return -1;
		f->ns += e - s;
		w->in += e - s;
	}
	return 0;
}

/* How many receives of t come at or before x (before, when strict). */
static size_t
recv_count(const rp_thread *t, uint64_t x, int strict)
{
	size_t lo = 0, hi = t->nsh;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strict ? t->sh[mid].at < x : t->sh[mid].at <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The last receive among the first kb of t inside (a, b]; NONE. */
static size_t
recv_in(const rp_thread *t, size_t kb, uint64_t a, uint64_t b)
{
	size_t n = recv_count(t, b, 0);

	n = n < kb ? n : kb;
	return n && t->sh[n - 1].at > a ? n - 1 : NONE;
}

/* The last burst of t that starts before x; NONE. */
static size_t
burst_before(const rp_thread *t, uint64_t x)
{
	size_t n = rp_bursts_before(t, x);

	return n ? n - 1 : NONE;
}

static int64_t
replayed(const rp_thread *t, uint64_t x)
{
	return (int64_t)x - rp_shift_at(t, x);
}

/* The last busy burst of t that ended, in original time, at or before
 * eo and, on the ideal network, at or before e; NONE.  Only the last
 * SCAN bursts before eo are looked at (a thread the replay moved later
 * than the waiter is an unlikely waker). */
#define SCAN 256

static size_t
busy_before(const rp_thread *t, uint64_t eo, int64_t e)
{
	size_t lo = rp_bursts_ended(t, eo);

	for (size_t n = 0; lo-- > 0 && n < SCAN; n++)
		if (!rp_is_wait(t->b[lo].state) &&
		    t->b[lo].end > t->b[lo].start &&
		    replayed(t, t->b[lo].end) <= e)
			return lo;
	return NONE;
}

/* A wait of the walk's thread ending at original e that nothing ends
 * (no receive, no waker: wake.c): the path goes on from the busy burst
 * that ended last, on the ideal network, before the wait did, and no
 * later in original time (so the walk never goes forward); the
 * thread's own earlier work when nothing else did.  0 when there is
 * none: the start. */
static int
waker(walk *w, uint64_t e)
{
	const rp_replay *r = w->r;
	int64_t at = replayed(&r->t[w->th], e), best = INT64_MIN;
	uint32_t bt = w->th;
	uint64_t bx = 0;

	for (size_t n = 0; n < r->nthreads; n++) {
		uint32_t u = (uint32_t)((w->th + n) % r->nthreads);
		const rp_thread *t = &r->t[u];
		size_t i = busy_before(t, e, at);
		int64_t re;

		if (i == NONE)
			continue;
		re = replayed(t, t->b[i].end);
		if (re > best) {
			best = re;
			bt = u;
			bx = t->b[i].end;
		}
	}
	if (best == INT64_MIN)
		return 0;
	w->th = bt;
	w->x = bx;
	w->kb = recv_count(&r->t[bt], bx, 0);
	return 1;
}

/* The receive (or wake) k of the walk's thread ends the piece walked
 * back: to its sender (or waker), or to when the receiver was ready. */
static void
receive(walk *w, size_t k)
{
	const rp_shift *sh = &w->r->t[w->th].sh[k];

	if (sh->by_send) {
		w->messages += sh->msg != RP_NO_MSG;
		w->th = sh->from;
		w->x = sh->from_at;
		/* a send at a receive's time was made before it (replay.c) */
		w->kb = recv_count(&w->r->t[w->th], w->x, sh->msg != RP_NO_MSG);
	} else {
		w->x = sh->ready;
		w->kb = k;
	}
}

/* One step back: along the thread's bursts before x to the receive or
 * wait that ends this piece.  1 to go on, 0 at the start, -1 ENOMEM. */
static int
step(walk *w)
{
	const rp_thread *t = &w->r->t[w->th];

	for (size_t i = burst_before(t, w->x); i != NONE; i--) {
		const rp_burst *b = &t->b[i];
		uint64_t e = b->end < w->x ? b->end : w->x;
		size_t k = recv_in(t, w->kb, b->start, e);

		if (!rp_is_wait(b->state)) {
			if (busy(w, k == NONE ? b->start : t->sh[k].at, e))
				return -1;
		} else if (k == NONE && e > b->start) {
			return waker(w, e);
		}
		if (k != NONE) {
			receive(w, k);
			return 1;
		}
	}
	return 0;
}

dw_err
rp_critical_path(rp_replay *r, rp_path *out)
{
	walk w = {.r = r};
	size_t cap = 16;
	int more = 1;

	memset(out, 0, sizeof *out);
	if (r && r->faster)
		return DW_EINVAL;
	if (!r || r->end <= 0)
		return DW_OK;
	r->nfns = 0;
	r->nsegs = 0;
	for (size_t i = 0; i < r->nthreads; i++)
		cap += 2 * (r->t[i].nb + r->t[i].nsh);
	w.th = r->end_thread;
	w.x = r->end_at;
	w.kb = recv_count(&r->t[w.th], w.x, 0);
	/* every step walks back past a burst or a receive: cap is a guard */
	while (more > 0 && cap-- > 0)
		more = step(&w);
	if (more < 0)
		return DW_ENOMEM;
	if (r->nfns > 1)
		qsort(r->fns, r->nfns, sizeof *r->fns, fn_cmp);
	out->fns = r->fns;
	out->nfns = r->nfns;
	out->length_ns = w.len;
	out->other_ns = w.len - w.in;
	out->messages = w.messages;
	out->segs = r->segs;
	out->nsegs = r->nsegs;
	return DW_OK;
}
