/*
 * The ideal-network replay (replay.h).  Each thread's replayed time is
 * its original time minus a shift that changes only at its receives:
 * the points (sends and receives) are taken in original time order, so
 * a send's replayed time is known before its receive is replayed.
 */
#include <stdlib.h>
#include <string.h>

#include <dwork/events.h>

#include "merge/replay.h"

typedef struct rp_burst {
	uint64_t start, end;
	uint32_t state;
} rp_burst;

/* From original time at on, replayed = original - shift. */
typedef struct rp_shift {
	uint64_t at;
	int64_t shift;
	uint64_t ready; /* original time the receiver was ready */
	uint32_t msg;
	int by_send; /* the send came last: the path goes to the sender */
} rp_shift;

typedef struct rp_run_ {
	uint64_t start, end, func;
} rp_frun;

typedef struct rp_thread {
	rp_burst *b;
	size_t nb, capb;
	rp_shift *sh;
	size_t nsh, capsh;
	rp_frun *f;
	size_t nf, capf;
	uint64_t last_recv; /* original time of its last receive */
	int64_t recv_end;   /* replayed time of its last receive */
} rp_thread;

typedef struct rp_m {
	uint32_t from, to;
	uint64_t send, recv;
	int64_t send_new;
} rp_m;

typedef struct rp_point {
	uint64_t time;
	uint32_t recv; /* 0 send, 1 receive: sends first at one time */
	uint32_t msg;
} rp_point;

struct rp_replay {
	rp_thread *t;
	size_t nthreads;
	rp_m *m;
	size_t nm, capm;
	int64_t end;         /* the replay's end */
	uint32_t end_thread; /* the thread that ends last */
	uint64_t end_at;     /* its original time there */
	rp_fn *fns;
	size_t nfns;
};

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
		return 1;
	default:
		return 0;
	}
}

/* Room for one more element of size in *arr (capacity *cap). */
static int
grow(void **arr, size_t n, size_t *cap, size_t size)
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

dw_err
rp_state(rp_replay *r, uint32_t thread, uint64_t start, uint64_t end,
         uint32_t state)
{
	rp_thread *t;

	if (!r || thread >= r->nthreads || end < start)
		return DW_OK;
	t = &r->t[thread];
	if (grow((void **)&t->b, t->nb, &t->capb, sizeof *t->b))
		return DW_ENOMEM;
	t->b[t->nb++] = (rp_burst){start, end, state};
	return DW_OK;
}

dw_err
rp_msg(rp_replay *r, uint32_t from, uint32_t to, uint64_t send, uint64_t recv)
{
	if (!r || from >= r->nthreads || to >= r->nthreads)
		return DW_OK;
	if (grow((void **)&r->m, r->nm, &r->capm, sizeof *r->m))
		return DW_ENOMEM;
	r->m[r->nm++] = (rp_m){from, to, send, recv > send ? recv : send, 0};
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
	return (int)x->recv - (int)y->recv;
}

static int64_t
shift_now(const rp_thread *t)
{
	return t->nsh ? t->sh[t->nsh - 1].shift : 0;
}

/* The shift at original time x: the last change at or before x. */
static int64_t
shift_at(const rp_thread *t, uint64_t x)
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

/* The wait burst of t that a receive at x ends (start < x <= end). */
static const rp_burst *
wait_before(const rp_thread *t, uint64_t x)
{
	size_t lo = 0, hi = t->nb;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->b[mid].start < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || t->b[lo - 1].end < x || !rp_is_wait(t->b[lo - 1].state))
		return NULL;
	return &t->b[lo - 1];
}

/* A receive at R completes at max(send, the receiver ready): the start
 * of the wait it ends (or its last receive, when one wait holds many),
 * or R itself when it ends no wait. */
static int
receive(rp_replay *r, rp_m *m)
{
	rp_thread *t = &r->t[m->to];
	const rp_burst *w = wait_before(t, m->recv);
	uint64_t ready = m->recv;
	int64_t rnew;

	if (w)
		ready = w->start > t->last_recv ? w->start : t->last_recv;
	rnew = (int64_t)ready - shift_now(t);
	rnew = m->send_new > rnew ? m->send_new : rnew;
	if (grow((void **)&t->sh, t->nsh, &t->capsh, sizeof *t->sh))
		return -1;
	t->sh[t->nsh++] = (rp_shift){m->recv, (int64_t)m->recv - rnew, ready,
	                             (uint32_t)(m - r->m), m->send_new >= rnew};
	t->last_recv = m->recv;
	t->recv_end = rnew > t->recv_end ? rnew : t->recv_end;
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
		int64_t e = (int64_t)t->b[i].end - shift_at(t, t->b[i].end);

		if (e > end)
			*at = t->b[i].end;
		return e > end ? e : end;
	}
	return end;
}

dw_err
rp_run(rp_replay *r, uint64_t *ideal)
{
	rp_point *p;
	int64_t end = 0;

	*ideal = 0;
	if (!r)
		return DW_OK;
	p = calloc(r->nm * 2 + 1, sizeof *p);
	if (!p)
		return DW_ENOMEM;
	for (size_t i = 0; i < r->nthreads; i++)
		if (r->t[i].nb > 1)
			qsort(r->t[i].b, r->t[i].nb, sizeof *r->t[i].b,
			      burst_cmp);
	for (size_t i = 0; i < r->nm; i++) {
		p[2 * i] = (rp_point){r->m[i].send, 0, (uint32_t)i};
		p[2 * i + 1] = (rp_point){r->m[i].recv, 1, (uint32_t)i};
	}
	if (r->nm)
		qsort(p, r->nm * 2, sizeof *p, point_cmp);
	for (size_t i = 0; i < r->nm * 2; i++) {
		rp_m *m = &r->m[p[i].msg];

		if (!p[i].recv)
			m->send_new =
			    (int64_t)m->send - shift_now(&r->t[m->from]);
		else if (receive(r, m)) {
			free(p);
			return DW_ENOMEM;
		}
	}
	free(p);
	for (size_t i = 0; i < r->nthreads; i++) {
		uint64_t at;
		int64_t e = thread_end(&r->t[i], &at);

		if (e > end) {
			end = e;
			r->end_thread = (uint32_t)i;
			r->end_at = at;
		}
	}
	r->end = end;
	*ideal = (uint64_t)end;
	return DW_OK;
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
	free(r->t);
	free(r->m);
	free(r);
}

/* ---- The critical path ------------------------------------------------ */

dw_err
rp_func(rp_replay *r, uint32_t thread, uint64_t start, uint64_t end,
        uint64_t func)
{
	rp_thread *t;

	if (!r || thread >= r->nthreads || end <= start)
		return DW_OK;
	t = &r->t[thread];
	if (grow((void **)&t->f, t->nf, &t->capf, sizeof *t->f))
		return DW_ENOMEM;
	t->f[t->nf++] = (rp_frun){start, end, func};
	return DW_OK;
}

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

/* Adds the functions' time within [a, b] of thread t; *in is the time
 * of the segment spent in functions. */
static int
segment(rp_replay *r, const rp_thread *t, uint64_t a, uint64_t b, uint64_t *in)
{
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
		*in += e - s;
	}
	return 0;
}

/* The last receive of t at or before x (strictly before when strict),
 * among its first n; n when none. */
static size_t
recv_before(const rp_thread *t, size_t n, uint64_t x, int strict)
{
	while (n-- > 0)
		if (strict ? t->sh[n].at < x : t->sh[n].at <= x)
			return n;
	return SIZE_MAX;
}

static int
fn_cmp(const void *a, const void *b)
{
	const rp_fn *x = a, *y = b;

	return x->func < y->func ? -1 : x->func > y->func;
}

dw_err
rp_critical_path(rp_replay *r, rp_path *out)
{
	uint64_t x, in = 0;
	uint32_t th;
	size_t k;

	memset(out, 0, sizeof *out);
	if (!r || r->end <= 0)
		return DW_OK;
	th = r->end_thread;
	x = r->end_at;
	k = recv_before(&r->t[th], r->t[th].nsh, x, 0);
	for (;;) {
		const rp_thread *t = &r->t[th];
		uint64_t a =
		    k == SIZE_MAX ? (t->nb ? t->b[0].start : 0) : t->sh[k].at;

		a = a < x ? a : x;
		if (segment(r, t, a, x, &in))
			return DW_ENOMEM;
		if (k == SIZE_MAX)
			break;
		if (t->sh[k].by_send) {
			const rp_m *m = &r->m[t->sh[k].msg];

			out->messages++;
			th = m->from;
			x = m->send;
			k = recv_before(&r->t[th], r->t[th].nsh, x, 1);
		} else {
			x = t->sh[k].ready;
			k = recv_before(t, k, x, 0);
		}
	}
	if (r->nfns > 1)
		qsort(r->fns, r->nfns, sizeof *r->fns, fn_cmp);
	out->fns = r->fns;
	out->nfns = r->nfns;
	out->other_ns = (uint64_t)r->end - in;
	return DW_OK;
}
