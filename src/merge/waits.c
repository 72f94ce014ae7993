/*
 * The causes of waits (replay.h, docs/tracing.md "Wait causes"): the
 * analogue of Scalasca's late sender for master/worker programs.  A
 * wait is cut at each receive inside it; the piece before a receive
 * waited first for the message to be sent (its cause follows from what
 * the message was), then for it to arrive (the network).
 */
#include <stdlib.h>
#include <string.h>

#include <dwork/events.h>

#include "merge/replay_int.h"

/* The runtime's message tags (src/runtime/rtrace.h, RTR_TAG_*). */
enum {
	TAG_CALL = 0,
	TAG_RESULT = 1,
	TAG_FETCHED = 3,
	TAG_REQUEST = 4,
	TAG_ANSWER = 5
};

static const char *const cause_keys[RP_NCAUSES] = {
    "master", "work", "network", "producer", "sender", "none",
};

const char *
rp_cause_key(enum rp_cause c)
{
	return (unsigned)c < RP_NCAUSES ? cause_keys[c] : "?";
}

typedef struct w_acc {
	rp_wait *w;
	size_t n, cap;
} w_acc;

/* The entry of (thread, func), made on first use. */
static rp_wait *
w_get(w_acc *a, uint32_t thread, uint64_t func)
{
	for (size_t i = a->n; i-- > 0;)
		if (a->w[i].thread == thread && a->w[i].func == func)
			return &a->w[i];
	if (rp_grow((void **)&a->w, a->n, &a->cap, sizeof *a->w))
		return NULL;
	memset(&a->w[a->n], 0, sizeof a->w[a->n]);
	a->w[a->n].thread = thread;
	a->w[a->n].func = func;
	return &a->w[a->n++];
}

/* The number of runs of t that start before x (or at x, when at). */
static size_t
runs_before(const rp_thread *t, uint64_t x, int at)
{
	size_t lo = 0, hi = t->nf;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->f[mid].start < x || (at && t->f[mid].start == x))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The run of t that holds x, or (after) the first that starts at or
 * after x; 0 when none.  A thread's runs are apart and in order. */
static uint64_t
func_at(const rp_thread *t, uint64_t x, int after)
{
	size_t i = runs_before(t, x, !after);

	if (after)
		return i < t->nf ? t->f[i].func : 0;
	return i && t->f[i - 1].end > x ? t->f[i - 1].func : 0;
}

/* The last run of t that ended at or before x (the result it sends at
 * x is that run's); 0 when none. */
static uint64_t
func_before(const rp_thread *t, uint64_t x)
{
	size_t i = runs_before(t, x, 1);

	while (i > 0 && t->f[i - 1].end > x)
		i--;
	return i ? t->f[i - 1].func : 0;
}

/* What waiting for m's send was, and the function it was for. */
static enum rp_cause
late_cause(const rp_replay *r, const rp_m *m, uint64_t *func)
{
	switch (m->tag) {
	case TAG_CALL:
		*func = func_at(&r->t[m->to], m->recv, 1);
		return RP_CAUSE_MASTER;
	case TAG_RESULT:
	case TAG_FETCHED:
		*func = func_before(&r->t[m->from], m->send);
		return RP_CAUSE_WORK;
	case TAG_REQUEST: /* an owner waiting: a put into its channel */
	case TAG_ANSWER:
		*func = func_before(&r->t[m->from], m->send);
		return RP_CAUSE_PRODUCER;
	default:
		*func = func_before(&r->t[m->from], m->send);
		return RP_CAUSE_SENDER;
	}
}

/* The piece [a, m->recv] of a wait, ended by m: it waited for the
 * send until m->send, for the transfer after. */
static int
piece(w_acc *acc, const rp_replay *r, uint32_t thread, const rp_m *m,
      uint64_t a)
{
	uint64_t func = 0, sent = m->send < m->recv ? m->send : m->recv;
	enum rp_cause c = late_cause(r, m, &func);
	rp_wait *w = w_get(acc, thread, func);

	if (!w)
		return -1;
	if (sent > a)
		w->ns[c] += sent - a;
	w->ns[RP_CAUSE_NETWORK] += m->recv - (sent > a ? sent : a);
	return 0;
}

/* The pieces of wait b of thread i cut by the receives of thread p
 * (i itself, or the thread that takes in its messages) from *k on;
 * returns where the last piece ended, or 0 on ENOMEM. */
static uint64_t
cut(w_acc *acc, const rp_replay *r, uint32_t i, uint32_t p, const rp_burst *b,
    size_t *k)
{
	const rp_thread *t = &r->t[p];
	uint64_t a = b->start;

	while (*k < t->nsh && t->sh[*k].at <= b->start)
		(*k)++;
	for (; *k < t->nsh && t->sh[*k].at <= b->end; (*k)++) {
		if (t->sh[*k].msg == RP_NO_MSG)
			continue;
		if (piece(acc, r, i, &r->m[t->sh[*k].msg], a))
			return 0;
		a = t->sh[*k].at;
	}
	return a;
}

/* One wait burst of thread i; k walks its receives (in time order), pk
 * those of its proxy (UINT32_MAX: none), used when i has none in b. */
static int
one_wait(w_acc *acc, const rp_replay *r, uint32_t i, uint32_t proxy,
         const rp_burst *b, size_t *k, size_t *pk)
{
	uint64_t a = cut(acc, r, i, i, b, k);
	rp_wait *w;

	if (a == b->start && proxy < r->nthreads)
		a = cut(acc, r, i, proxy, b, pk);
	if (!a && b->start)
		return -1;
	if (b->end <= a)
		return 0;
	w = w_get(acc, i, func_at(&r->t[i], a, 0));
	if (!w)
		return -1;
	w->ns[RP_CAUSE_NONE] += b->end - a;
	return 0;
}

/* Wait j of t goes on after a frame handled (rp_wait_group): it is
 * counted with the group's last wait. */
static int
group_next(const rp_thread *t, size_t j)
{
	return j + 2 < t->nb && rp_wait_group(t, j + 2) <= &t->b[j];
}

dw_err
rp_waits(const rp_replay *r, const unsigned char *counted,
         const uint32_t *proxy, rp_wait **out, size_t *n)
{
	w_acc acc = {0};

	*out = NULL;
	*n = 0;
	if (!r)
		return DW_OK;
	if (r->faster)
		return DW_EINVAL;
	for (uint32_t i = 0; i < r->nthreads; i++) {
		const rp_thread *t = &r->t[i];
		size_t k = 0, pk = 0;
		uint32_t p = proxy ? proxy[i] : UINT32_MAX;

		if (!counted[i])
			continue;
		for (size_t j = 0; j < t->nb; j++) {
			rp_burst g;

			if (!rp_is_wait(t->b[j].state) ||
			    t->b[j].state == DWT_STATE_NOT_CREATED ||
			    group_next(t, j))
				continue;
			g = *rp_wait_group(t, j);
			g.end = t->b[j].end;
			if (one_wait(&acc, r, i, p, &g, &k, &pk)) {
				free(acc.w);
				return DW_ENOMEM;
			}
		}
	}
	*out = acc.w;
	*n = acc.n;
	return DW_OK;
}
