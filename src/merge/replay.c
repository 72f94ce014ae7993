/*
 * The ideal-network replay (replay.h).  Each thread's replayed time is
 * its original time minus a shift that changes only at its receives:
 * the points (sends and receives) are taken in original time order, so
 * a send's replayed time is known before its receive is replayed.
 */
#include <stdlib.h>
#include <string.h>

#include <dwork/events.h>

#include "merge/replay_int.h"

int
rp_is_wait(uint32_t state)
{
	switch (state) {
	case DWT_STATE_IDLE:
	case DWT_STATE_NOT_CREATED:
	case DWT_STATE_WAITING_MESSAGE:
	case DWT_STATE_SYNCHRONIZATION:
	case DWT_STATE_TEST_PROBE:
	case DWT_STATE_WAIT_ALL:
	case DWT_STATE_BLOCKED:
	case DWT_STATE_SCHEDULING: /* inside dw_pmap and its kin */
		return 1;
	default:
		return 0;
	}
}

int
rp_grow(void **arr, size_t n, size_t *cap, size_t size)
{
	void *p;

	if (n < *cap)
		return 0;
	p = realloc(*arr, (*cap ? *cap * 2 : 64) * size);
	if (!p)
		return -1;
	*arr = p;
	*cap = *cap ? *cap * 2 : 64;
	return 0;
}

dw_err
rp_new(size_t nthreads, rp_replay **out)
{
	rp_replay *r = calloc(1, sizeof *r);

	*out = NULL;
	if (!r)
		return DW_ENOMEM;
	r->t = calloc(nthreads ? nthreads : 1, sizeof *r->t);
	if (!r->t) {
		free(r);
		return DW_ENOMEM;
	}
	r->nthreads = nthreads;
	*out = r;
	return DW_OK;
}

void
rp_thread_task(rp_replay *r, uint32_t thread, uint32_t task)
{
	if (r && thread < r->nthreads && task < UINT32_MAX)
		r->t[thread].task1 = task + 1;
}

dw_err
rp_state(rp_replay *r, uint32_t thread, uint64_t start, uint64_t end,
         uint32_t state)
{
	rp_thread *t;

	if (!r || thread >= r->nthreads || end < start)
		return DW_OK;
	t = &r->t[thread];
	if (rp_grow((void **)&t->b, t->nb, &t->capb, sizeof *t->b))
		return DW_ENOMEM;
	t->b[t->nb++] = (rp_burst){start, end, state};
	return DW_OK;
}

dw_err
rp_msg(rp_replay *r, uint32_t from, uint32_t to, uint64_t send, uint64_t recv,
       uint32_t tag)
{
	if (!r || from >= r->nthreads || to >= r->nthreads)
		return DW_OK;
	if (rp_grow((void **)&r->m, r->nm, &r->capm, sizeof *r->m))
		return DW_ENOMEM;
	r->m[r->nm++] =
	    (rp_m){from, to, send, recv > send ? recv : send, 0, tag};
	return DW_OK;
}

static int
burst_cmp(const void *a, const void *b)
{
	const rp_burst *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int
point_cmp(const void *a, const void *b)
{
	const rp_point *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return (int)x->kind - (int)y->kind;
}

static unsigned
point_digit(const rp_point *x, int d)
{
	return d ? (unsigned)(x->time >> (8 * (d - 1))) & 0xff : x->kind;
}

/* Sorts the points by (time, kind), stably, as point_cmp with glibc's
 * merge sort did: a byte-wise radix sort, the kind first, then the
 * time's bytes from the lowest, skipping a byte all points share
 * (qsort was 40 comparisons a point).  -1 when out of memory. */
static int
points_sort(rp_point *v, size_t n)
{
	enum { ND = 9 };
	size_t(*cnt)[256] = calloc(ND, sizeof *cnt);
	rp_point *tmp = malloc(n * sizeof *tmp), *src = v, *dst = tmp;

	if (!cnt || !tmp) {
		free(cnt);
		free(tmp);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		for (int d = 0; d < ND; d++)
			cnt[d][point_digit(&v[i], d)]++;
	for (int d = 0; d < ND; d++) {
		size_t sum = 0;
		rp_point *x;

		if (cnt[d][point_digit(&v[0], d)] == n)
			continue; /* every point has this digit */
		for (int k = 0; k < 256; k++) {
			size_t c = cnt[d][k];

			cnt[d][k] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[cnt[d][point_digit(&src[i], d)]++] = src[i];
		x = src, src = dst, dst = x;
	}
	if (src != v)
		memcpy(v, src, n * sizeof *v);
	free(cnt);
	free(tmp);
	return 0;
}

/* True when the bursts are in order already (the merge gives them so):
 * the stable sort would leave them as they are. */
static int
bursts_sorted(const rp_burst *b, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (b[i].start < b[i - 1].start)
			return 0;
	return 1;
}

static int64_t
shift_now(const rp_thread *t)
{
	return t->nsh ? t->sh[t->nsh - 1].shift : 0;
}

/* The shift at original time x: the last change at or before x. */
int64_t
rp_shift_at(const rp_thread *t, uint64_t x)
{
	size_t lo = 0, hi = t->nsh;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->sh[mid].at <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? t->sh[lo - 1].shift : 0;
}

size_t
rp_bursts_before(const rp_thread *t, uint64_t x)
{
	size_t lo = 0, hi = t->nb;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->b[mid].start < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t
rp_bursts_ended(const rp_thread *t, uint64_t x)
{
	size_t lo = 0, hi = t->nb;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->b[mid].end <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The wait burst of t that a receive at x ends (start < x <= end), or
 * the one that ended where the Send Receive burst holding x began: a
 * thread that wakes to read a frame may record the receive while it
 * handles it (an I/O thread taking in a pmap result), so the wait ended
 * for that frame.  An Idle one alone: an I/O thread idles between the
 * frames it handles, its chain of Idle and Send Receive is no one wait
 * as a caller's is.  *pre is where that handling began (x when x lies
 * in the wait). */
static const rp_burst *
wait_before(const rp_thread *t, uint64_t x, uint64_t *pre)
{
	size_t lo = rp_bursts_before(t, x);
	const rp_burst *b;

	*pre = x;
	if (!lo || t->b[lo - 1].end < x)
		return NULL;
	b = &t->b[lo - 1];
	if (rp_is_wait(b->state))
		return rp_wait_group(t, lo - 1);
	if (b->state != DWT_STATE_SEND_RECEIVE || lo < 2 ||
	    !rp_is_wait(b[-1].state) || b[-1].state == DWT_STATE_NOT_CREATED ||
	    b[-1].end != b->start)
		return NULL;
	*pre = b->start;
	return b[-1].state == DWT_STATE_IDLE ? &b[-1]
	                                     : rp_wait_group(t, lo - 2);
}

/* A wait that the thread broke off only to handle a frame itself (the
 * runtime's caller reading its own result: Wait, Send Receive, Wait)
 * is one wait: the first of the group. */
const rp_burst *
rp_wait_group(const rp_thread *t, size_t i)
{
	while (i >= 2 && t->b[i - 1].state == DWT_STATE_SEND_RECEIVE &&
	       t->b[i - 1].end == t->b[i].start &&
	       rp_is_wait(t->b[i - 2].state) &&
	       t->b[i - 2].state != DWT_STATE_NOT_CREATED &&
	       t->b[i - 2].end == t->b[i - 1].start)
		i -= 2;
	return &t->b[i];
}

/* A receive at R completes at max(send, the receiver ready): the start
 * of the wait it ends (or its last receive, when one wait holds many),
 * or R itself when it ends no wait.  The handling of the frame before
 * R, when the wait ended earlier (wait_before), keeps its duration. */
static int
receive(rp_replay *r, rp_m *m)
{
	rp_thread *t = &r->t[m->to];
	uint64_t pre, ready = m->recv, lag = 0;
	const rp_burst *w = wait_before(t, m->recv, &pre);
	int64_t rnew;

	if (w && t->last_recv >= pre) {
		ready = t->last_recv; /* read in the same handling */
	} else if (w) {
		ready = w->start > t->last_recv ? w->start : t->last_recv;
		lag = m->recv - pre;
	}
	rnew = (int64_t)ready - shift_now(t);
	rnew = (m->send_new > rnew ? m->send_new : rnew) + (int64_t)lag;
	if (rp_grow((void **)&t->sh, t->nsh, &t->capsh, sizeof *t->sh))
		return -1;
	t->sh[t->nsh++] = (rp_shift){m->recv,
	                             (int64_t)m->recv - rnew,
	                             ready,
	                             (uint32_t)(m - r->m),
	                             m->send_new + (int64_t)lag >= rnew,
	                             m->from,
	                             m->send};
	t->last_recv = m->recv;
	t->recv_end = rnew > t->recv_end ? rnew : t->recv_end;
	return 0;
}

/* A wait no receive ends completes at max(its waker's end plus the lag
 * after it, the waiter ready), as a receive does at its send: the lag
 * (e - waker's end) is kept, for nothing says it was a transfer. */
static int
wake(rp_replay *r, const rp_wake *w)
{
	rp_thread *t = &r->t[w->thread];
	const rp_thread *u = &r->t[w->from];
	uint64_t ready = w->ready > t->last_recv ? w->ready : t->last_recv;
	int64_t rnew = (int64_t)ready - shift_now(t);
	int64_t rw = (int64_t)w->at - rp_shift_at(u, w->from_at);

	rnew = rw > rnew ? rw : rnew;
	if (rp_grow((void **)&t->sh, t->nsh, &t->capsh, sizeof *t->sh))
		return -1;
	t->sh[t->nsh++] = (rp_shift){w->at,      (int64_t)w->at - rnew,
	                             ready,      RP_NO_MSG,
	                             rw >= rnew, w->from,
	                             w->from_at};
	return 0;
}

/* The replayed end of t: its last receive or the end of its last burst
 * that is not a wait (a wait at the end waits for the run to end). */
static int64_t
thread_end(const rp_thread *t, uint64_t *at)
{
	int64_t end = t->recv_end;

	*at = t->nsh ? t->sh[t->nsh - 1].at : 0;
	for (size_t i = t->nb; i-- > 0;) {
		if (rp_is_wait(t->b[i].state))
			continue;
		int64_t e = (int64_t)t->b[i].end - rp_shift_at(t, t->b[i].end);

		if (e > end)
			*at = t->b[i].end;
		return e > end ? e : end;
	}
	return end;
}

/* A run of a faster function ends: the rest of its thread moves
 * earlier by the time saved. */
static int
speed_up(rp_replay *r, const rp_speed *v)
{
	rp_thread *t = &r->t[v->thread];
	int64_t shift = shift_now(t) + (int64_t)v->saved;

	if (rp_grow((void **)&t->sh, t->nsh, &t->capsh, sizeof *t->sh))
		return -1;
	t->sh[t->nsh++] = (rp_shift){v->at, shift, v->at, RP_NO_MSG, 0, 0, 0};
	return 0;
}

/* The sends, receives and speed-ups in original time order. */
static rp_point *
points(const rp_replay *r, size_t *n)
{
	rp_point *p = calloc(r->nm * 2 + r->nspeed + r->nwake + 1, sizeof *p);

	*n = 0;
	if (!p)
		return NULL;
	for (size_t i = 0; i < r->nm; i++) {
		p[(*n)++] = (rp_point){r->m[i].send, RP_SEND, (uint32_t)i};
		p[(*n)++] = (rp_point){r->m[i].recv, RP_RECV, (uint32_t)i};
	}
	for (size_t i = 0; i < r->nspeed; i++)
		p[(*n)++] = (rp_point){r->speed[i].at, RP_SPEED, (uint32_t)i};
	for (size_t i = 0; i < r->nwake; i++)
		p[(*n)++] = (rp_point){r->wake[i].at, RP_WAKE, (uint32_t)i};
	if (*n > 1 && points_sort(p, *n))
		qsort(p, *n, sizeof *p, point_cmp); /* no memory: in place */
	return p;
}

static void
ends(rp_replay *r)
{
	r->end = 0;
	for (size_t i = 0; i < r->nthreads; i++) {
		uint64_t at;
		int64_t e = thread_end(&r->t[i], &at);

		if (e > r->end) {
			r->end = e;
			r->end_thread = (uint32_t)i;
			r->end_at = at;
		}
	}
}

/* The replay proper: every thread from its original times, with the
 * speed-ups in r->speed. */
static dw_err
replay(rp_replay *r, uint64_t *ideal)
{
	size_t n;
	rp_point *p = points(r, &n);
	int err = 0;

	*ideal = 0;
	if (!p)
		return DW_ENOMEM;
	for (size_t i = 0; i < r->nthreads; i++) {
		r->t[i].nsh = 0;
		r->t[i].last_recv = 0;
		r->t[i].recv_end = 0;
	}
	for (size_t i = 0; i < n && !err; i++) {
		rp_m *m = p[i].kind == RP_SPEED || p[i].kind == RP_WAKE
		              ? NULL
		              : &r->m[p[i].msg];

		if (p[i].kind == RP_WAKE)
			err = wake(r, &r->wake[p[i].msg]);
		else if (!m)
			err = speed_up(r, &r->speed[p[i].msg]);
		else if (p[i].kind == RP_SEND)
			m->send_new =
			    (int64_t)m->send - shift_now(&r->t[m->from]);
		else
			err = receive(r, m);
	}
	free(p);
	if (err)
		return DW_ENOMEM;
	ends(r);
	*ideal = (uint64_t)r->end;
	return DW_OK;
}

dw_err
rp_run(rp_replay *r, uint64_t *ideal)
{
	*ideal = 0;
	if (!r)
		return DW_OK;
	for (size_t i = 0; i < r->nthreads; i++)
		if (r->t[i].nb > 1 && !bursts_sorted(r->t[i].b, r->t[i].nb))
			qsort(r->t[i].b, r->t[i].nb, sizeof *r->t[i].b,
			      burst_cmp);
	r->nspeed = 0;
	r->faster = 0;
	if (rp_wakes(r))
		return DW_ENOMEM;
	return replay(r, ideal);
}

/* Running time of t within [a, b] (its bursts are sorted and apart). */
static uint64_t
running_in(const rp_thread *t, uint64_t a, uint64_t b)
{
	uint64_t ns = 0;

	for (size_t i = rp_bursts_ended(t, a); i < t->nb && t->b[i].start < b;
	     i++) {
		uint64_t s = t->b[i].start > a ? t->b[i].start : a;
		uint64_t e = t->b[i].end < b ? t->b[i].end : b;

		if (t->b[i].state == DWT_STATE_RUNNING && e > s)
			ns += e - s;
	}
	return ns;
}

static int
speed_add(rp_replay *r, uint32_t thread, uint64_t at, uint64_t saved)
{
	if (rp_grow((void **)&r->speed, r->nspeed, &r->capspeed,
	            sizeof *r->speed))
		return -1;
	r->speed[r->nspeed++] = (rp_speed){thread, at, saved};
	return 0;
}

/* A send: its thread and original time (the sends sorted by both). */
typedef struct rp_snd {
	uint32_t from;
	uint64_t at;
} rp_snd;

static int
send_cmp(const void *a, const void *b)
{
	const rp_snd *x = a, *y = b;

	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

/* The sends by thread, then time; NULL when out of memory. */
static rp_snd *
sends(const rp_replay *r)
{
	rp_snd *o = malloc((r->nm + 1) * sizeof *o);

	if (!o)
		return NULL;
	for (size_t i = 0; i < r->nm; i++)
		o[i] = (rp_snd){r->m[i].from, r->m[i].send};
	if (r->nm > 1)
		qsort(o, r->nm, sizeof *o, send_cmp);
	return o;
}

/* The first send in o made by thread at or after x. */
static size_t
send_first(const rp_replay *r, const rp_snd *o, uint32_t thread, uint64_t x)
{
	size_t lo = 0, hi = r->nm;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (o[mid].from < thread ||
		    (o[mid].from == thread && o[mid].at < x))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* One run [a, b] of a faster function on thread: at each send inside it
 * the Running time before the send, divided by k, has been saved (the
 * send moves earlier with it); the rest at its end. */
static int
run_faster(rp_replay *r, const rp_snd *o, uint32_t thread, uint64_t a,
           uint64_t b, double k)
{
	const rp_thread *t = &r->t[thread];
	uint64_t done = 0, upto;

	for (size_t j = send_first(r, o, thread, a + 1);
	     j < r->nm && o[j].from == thread && o[j].at < b; j++) {
		uint64_t x = o[j].at;

		upto = (uint64_t)((double)running_in(t, a, x) * (1 - 1 / k));
		if (upto > done && speed_add(r, thread, x, upto - done))
			return -1;
		done = upto > done ? upto : done;
	}
	upto = (uint64_t)((double)running_in(t, a, b) * (1 - 1 / k));
	return upto > done ? speed_add(r, thread, b, upto - done) : 0;
}

dw_err
rp_faster(rp_replay *r, uint64_t func, double k, uint64_t *ideal)
{
	rp_snd *o;
	int err = 0;

	*ideal = 0;
	if (!r)
		return DW_OK;
	if (!(k >= 1))
		return DW_EINVAL;
	r->nspeed = 0;
	r->faster = 1;
	o = sends(r);
	if (!o)
		return DW_ENOMEM;
	for (size_t i = 0; i < r->nthreads && !err; i++) {
		const rp_thread *t = &r->t[i];

		for (size_t j = 0; j < t->nf && !err; j++)
			if (t->f[j].func == func)
				err = run_faster(r, o, (uint32_t)i,
				                 t->f[j].start, t->f[j].end, k);
	}
	free(o);
	return err ? DW_ENOMEM : replay(r, ideal);
}

void
rp_free(rp_replay *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nthreads; i++) {
		free(r->t[i].b);
		free(r->t[i].sh);
		free(r->t[i].f);
	}
	free(r->fns);
	free(r->segs);
	free(r->speed);
	free(r->wake);
	free(r->t);
	free(r->m);
	free(r);
}

dw_err
rp_func(rp_replay *r, uint32_t thread, uint64_t start, uint64_t end,
        uint64_t func)
{
	rp_thread *t;

	if (!r || thread >= r->nthreads || end <= start)
		return DW_OK;
	t = &r->t[thread];
	if (rp_grow((void **)&t->f, t->nf, &t->capf, sizeof *t->f))
		return DW_ENOMEM;
	t->f[t->nf++] = (rp_frun){start, end, func};
	return DW_OK;
}
