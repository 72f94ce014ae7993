/*
 * No receive before its send (merge.md, Clocks, 3).  Across clocks that
 * are not shared, a corrected time is only as good as the measured
 * offsets (half a round trip), so a receive can still land before its
 * send.  The scan notes every part of such messages; once the clocks
 * are set up, each receive that would precede its send gets a floor on
 * its thread: from that record on, the thread's times are at least the
 * send + 1 ns.  The receive, its events and everything the thread
 * records after it until its own clock catches up move together, in
 * their order; nothing moves on any other thread.
 */
#include <stdlib.h>
#include <string.h>

#include "merge/mg_int.h"

/* 32 bytes a part.  The message is known by a 64-bit hash of (sender,
 * receiver, id): two messages that collide would be taken for one, a
 * chance of about n^2 / 2^65 for n messages. */
typedef struct mg_xpart {
	uint64_t key;
	int64_t t;       /* ticks until causal_setup, then corrected ns */
	uint64_t index;  /* record number in its stream */
	uint32_t stream; /* index in c->streams */
	uint8_t recv, phys;
} mg_xpart;

/* At most this many parts are noted (16 MiB); the receives of later
 * messages are only repaired at their communication record. */
#define CAUSAL_MAX_PARTS (1u << 19)

static uint64_t
msg_key(uint32_t s, uint32_t r, uint64_t id)
{
	uint64_t h = id * 0x9e3779b97f4a7c15ull;

	h ^= ((uint64_t)s << 32 | r) + 0x632be59bd9b4e019ull + (h << 6) +
	     (h >> 2);
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ h >> 29;
}

void
causal_free(mg_ctx *c)
{
	xsink_free(&c->xs);
	free(c->task_procs);
	c->task_procs = NULL;
	c->ntask_procs = 0;
}

dw_err
causal_begin(mg_ctx *c)
{
	size_t n = 0;

	xsink_init(&c->xs, c->errs, false);
	for (size_t i = 0; i < c->nprocs; i++)
		if (!c->procs[i].skip && c->procs[i].task + (size_t)1 > n)
			n = c->procs[i].task + (size_t)1;
	c->task_procs = calloc(n ? n : 1, sizeof *c->task_procs);
	if (!c->task_procs)
		return DW_ENOMEM;
	c->ntask_procs = n;
	for (size_t i = c->nprocs; i-- > 0;)
		if (!c->procs[i].skip)
			c->task_procs[c->procs[i].task] = &c->procs[i];
	return DW_OK;
}

static const mg_proc *
task_proc(const mg_ctx *c, uint32_t task)
{
	return task < c->ntask_procs ? c->task_procs[task] : NULL;
}

void
xsink_init(mg_xsink *k, rd_errlist *errs, bool defer)
{
	memset(k, 0, sizeof *k);
	k->limit = CAUSAL_MAX_PARTS;
	k->defer = defer;
	k->errs = errs;
}

void
xsink_free(mg_xsink *k)
{
	free(k->v);
	free(k->ecount);
	xsink_init(k, k->errs, false);
}

static void
limit_report(rd_errlist *errs)
{
	rd_problem(errs,
	           "more than %u message parts between clocks: the "
	           "receives of later ones are repaired only in their "
	           "communication record",
	           CAUSAL_MAX_PARTS);
}

static bool
grow(void **v, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 256;
	void *w;

	if (need <= *cap)
		return true;
	while (n < need)
		n *= 2;
	if (!(w = realloc(*v, n * size)))
		return false;
	*v = w;
	*cap = n;
	return true;
}

static dw_err
xpart_add(mg_xsink *k, const mg_xpart *x)
{
	if (k->defer && k->tried <= CAUSAL_MAX_PARTS) {
		if (!grow((void **)&k->ecount, &k->ecap, k->tried + 1,
		          sizeof *k->ecount))
			return DW_ENOMEM;
		k->ecount[k->tried] = k->errs ? (uint32_t)k->errs->n : 0;
	}
	k->tried++;
	if (k->n >= k->limit) {
		if (!k->full && !k->defer)
			limit_report(k->errs);
		k->full = true;
		return DW_OK;
	}
	if (!grow((void **)&k->v, &k->cap, k->n + 1, sizeof *k->v))
		return DW_ENOMEM;
	k->v[k->n++] = *x;
	return DW_OK;
}

void
xsink_flush(mg_xsink *to, mg_xsink *from, rd_errlist *held)
{
	size_t room = to->full ? 0 : to->limit - to->n;
	size_t at = SIZE_MAX; /* the report goes before problem `at` */

	if (!to->full && from->tried > room)
		at = from->ecount[room];
	for (size_t i = 0; held && i < held->n; i++) {
		if (i == at)
			limit_report(to->errs);
		rd_errlist_add(to->errs, held->msgs[i]);
	}
	if (held && to->errs)
		to->errs->dropped += held->dropped;
	if (held && at != SIZE_MAX && at >= held->n)
		limit_report(to->errs);
	if (held) {
		free(held->msgs);
		held->msgs = NULL;
		held->n = held->cap = held->dropped = 0;
	}
	if (from->n > room)
		from->n = room;
	from->limit = room;
	from->full = to->full || from->tried > room;
	from->defer = false;
	from->errs = to->errs;
	free(from->ecount);
	from->ecount = NULL;
	from->ecap = 0;
}

dw_err
xsink_append(mg_xsink *to, mg_xsink *from)
{
	if (!grow((void **)&to->v, &to->cap, to->n + from->n, sizeof *to->v))
		return DW_ENOMEM;
	if (from->n)
		memcpy(to->v + to->n, from->v, from->n * sizeof *to->v);
	to->n += from->n;
	to->tried += from->tried;
	to->full = to->full || from->full;
	return DW_OK;
}

dw_err
causal_note(mg_ctx *c, mg_xsink *k, const mg_stream *s, const rd_rec *r,
            uint64_t index)
{
	bool recv = r->u.comm.flags & RD_COMM_RECV;
	uint32_t me = s->proc->task, other = r->u.comm.partner_task;
	const mg_proc *p;
	unsigned f = r->u.comm.flags;

	p = task_proc(c, other);
	if (!p || !c->clocks_many)
		return DW_OK; /* one clock: exact, nothing to fear */
	return xpart_add(
	    k, &(mg_xpart){.key = recv ? msg_key(other, me, r->u.comm.id)
	                               : msg_key(me, other, r->u.comm.id),
	                   .t = (int64_t)r->ticks,
	                   .index = index,
	                   .stream = (uint32_t)(s - c->streams),
	                   .recv = recv,
	                   .phys = (f & RD_COMM_PHYSICAL) ||
	                           !(f & RD_COMM_LOGICAL)});
}

/*
 * Groups the parts by message: each message's parts together, its sends
 * (in the order noted) before its receives (in the order noted), the
 * messages in the order their first part was noted.  The order of the
 * messages does not matter (a pass of floors_find judges every message
 * against the floors of the pass before, and the floors are sorted
 * whole), so a hash table replaces the sort by key (a radix sort of 9
 * passes cost 300 instructions a part).  false: out of memory.
 */
typedef struct xgroup {
	uint64_t key;
	uint32_t at[2]; /* counts, then where its next send / receive goes */
} xgroup;

static bool
xparts_group(mg_xpart *v, size_t n)
{
	size_t nslot = 16, ng = 0;
	uint32_t *slot, *to; /* to: each part's group, then its place */
	xgroup *g;
	uint32_t sum = 0;

	while (nslot < 2 * n)
		nslot *= 2;
	slot = calloc(nslot, sizeof *slot); /* group index + 1, 0 empty */
	to = malloc(n * sizeof *to);
	g = malloc(n * sizeof *g);
	if (!slot || !to || !g) {
		free(slot), free(to), free(g);
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		size_t h = (size_t)v[i].key & (nslot - 1);

		while (slot[h] && g[slot[h] - 1].key != v[i].key)
			h = (h + 1) & (nslot - 1);
		if (!slot[h]) {
			g[ng] = (xgroup){v[i].key, {0, 0}};
			slot[h] = (uint32_t)++ng;
		}
		to[i] = slot[h] - 1;
		g[to[i]].at[v[i].recv]++;
	}
	free(slot);
	for (size_t k = 0; k < ng; k++) {
		uint32_t ns = g[k].at[0], nr = g[k].at[1];

		g[k].at[0] = sum;
		g[k].at[1] = sum + ns;
		sum += ns + nr;
	}
	for (size_t i = 0; i < n; i++)
		to[i] = g[to[i]].at[v[i].recv]++;
	free(g);
	/* in place, cycle by cycle: no copy of the parts (16 MiB at the
	 * limit), the places take 4 bytes a part */
	for (size_t i = 0; i < n; i++) {
		while (to[i] != i) {
			uint32_t j = to[i], tj = to[j];
			mg_xpart x = v[j];

			v[j] = v[i];
			v[i] = x;
			to[i] = tj;
			to[j] = j;
		}
	}
	free(to);
	return true;
}

/* Every part's corrected time, as the merge pass computes it.  The
 * parts are in scan order (stream by stream), so one conversion per
 * stream keeps its cached span and segment from part to part (a fresh
 * one took the slow path every time: 60 instructions a record); its
 * floor is reset, so each time is the one a fresh conversion gives
 * (the fast and slow paths compute the same formula, clock.c). */
static void
xparts_time(mg_ctx *c)
{
	uint32_t cur = UINT32_MAX;
	mg_tconv tc;

	for (size_t i = 0; i < c->xs.n; i++) {
		mg_xpart *x = &c->xs.v[i];

		if (x->stream != cur) {
			cur = x->stream;
			mg_tconv_init(&tc, &c->streams[cur].proc->clk);
		}
		tc.last = INT64_MIN;
		x->t = mg_time(&tc, (uint64_t)x->t);
	}
}

/* The floors, gathered per stream before they are handed out. */
typedef struct sfloor {
	uint32_t stream;
	mg_floor f;
} sfloor;

typedef struct floors {
	sfloor *v;     /* sorted by stream and index after floors_index */
	size_t n, cap; /* v[0 .. n-1] */
	size_t sorted; /* v[0 .. sorted-1] are indexed */
	size_t *first; /* by stream: its first floor in v, and ... */
	size_t *count; /* ... how many */
	int64_t *pmax; /* the largest floor t up to each one (its stream) */
} floors;

static dw_err
floor_add(floors *fl, uint32_t stream, uint64_t index, int64_t t)
{
	if (fl->n == fl->cap) {
		size_t cap = fl->cap ? fl->cap * 2 : 64;
		sfloor *v = realloc(fl->v, cap * sizeof *v);

		if (!v)
			return DW_ENOMEM;
		fl->v = v;
		fl->cap = cap;
	}
	fl->v[fl->n++] = (sfloor){stream, {index, t}};
	return DW_OK;
}

static int
sfloor_cmp(const void *a, const void *b)
{
	const sfloor *x = a, *y = b;

	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	if (x->f.index != y->f.index)
		return x->f.index < y->f.index ? -1 : 1;
	return x->f.t < y->f.t ? -1 : x->f.t > y->f.t;
}

/* Sorts every floor so far and makes them searchable. */
static dw_err
floors_index(mg_ctx *c, floors *fl)
{
	int64_t *pm = realloc(fl->pmax, (fl->n ? fl->n : 1) * sizeof *pm);

	if (!pm)
		return DW_ENOMEM;
	fl->pmax = pm;
	if (fl->n)
		qsort(fl->v, fl->n, sizeof *fl->v, sfloor_cmp);
	memset(fl->count, 0, c->nstreams * sizeof *fl->count);
	for (size_t i = 0; i < fl->n; i++) {
		uint32_t s = fl->v[i].stream;
		bool head = !fl->count[s]++;

		if (head)
			fl->first[s] = i;
		pm[i] =
		    head || fl->v[i].f.t > pm[i - 1] ? fl->v[i].f.t : pm[i - 1];
	}
	fl->sorted = fl->n;
	return DW_OK;
}

/* The part's time once the floors indexed so far apply to its thread. */
static int64_t
eff(const floors *fl, const mg_xpart *x)
{
	size_t lo = fl->first[x->stream], n = fl->count[x->stream];
	size_t hi = lo + n, at = SIZE_MAX;

	while (lo < hi) { /* the last floor at or before the record */
		size_t mid = lo + (hi - lo) / 2;

		if (fl->v[mid].f.index <= x->index)
			at = mid, lo = mid + 1;
		else
			hi = mid;
	}
	if (n && at != SIZE_MAX && fl->pmax[at] > x->t)
		return fl->pmax[at];
	return x->t;
}

/* The send part of a message (its physical one if any), or NULL. */
static const mg_xpart *
send_part(const mg_xpart *v, size_t n)
{
	const mg_xpart *snd = NULL;

	for (size_t i = 0; i < n && !v[i].recv; i++)
		if (!snd || (v[i].phys && !snd->phys))
			snd = &v[i];
	return snd && v[n - 1].recv ? snd : NULL;
}

/* One message: parts v[0 .. n-1], sends first.  Its receive parts that
 * are not after the send get the floor send + 1; *more when any did. */
static dw_err
message(floors *fl, const mg_xpart *v, size_t n, bool *more)
{
	const mg_xpart *snd = send_part(v, n);
	dw_err err = DW_OK;
	int64_t s;

	if (!snd)
		return DW_OK; /* unmatched: the merge reports it */
	s = eff(fl, snd);
	for (size_t i = 0; err == DW_OK && i < n; i++)
		if (v[i].recv && eff(fl, &v[i]) <= s) {
			err = floor_add(fl, v[i].stream, v[i].index, s + 1);
			*more = true;
		}
	return err;
}

/* Counts a moved message against both clocks' error (half the round
 * trip of the nearest sync record on each side). */
static void
move_count(mg_ctx *c, const floors *fl, const mg_xpart *v, size_t n)
{
	const mg_xpart *snd = send_part(v, n), *rcv = NULL;
	int64_t shift = 0, own = 0, es, er;

	for (size_t i = 0; snd && i < n; i++) {
		if (!v[i].recv)
			continue;
		if (eff(fl, &v[i]) - v[i].t > shift)
			rcv = &v[i], shift = eff(fl, &v[i]) - v[i].t;
		if (snd->t + 1 - v[i].t > own)
			own = snd->t + 1 - v[i].t;
	}
	if (!rcv)
		return;
	es = mg_clock_err(&c->streams[snd->stream].proc->clk, snd->t);
	er = mg_clock_err(&c->streams[rcv->stream].proc->clk, rcv->t);
	c->rep.recv_moved++;
	c->rep.recv_total_shift += (uint64_t)shift;
	if ((uint64_t)shift > c->rep.recv_max_shift)
		c->rep.recv_max_shift = (uint64_t)shift;
	/* the bound is on this message's own disagreement of the clocks
	 * (its receive before its send as corrected), not on a move it
	 * inherited from an earlier receive of its thread */
	if (es >= 0 && er >= 0 && es + er > 0 && own > es + er)
		c->rep.recv_beyond++;
}

/* Hands each stream its floors, by record index. */
static dw_err
floors_give(mg_ctx *c, floors *fl)
{
	for (size_t k = 0; k < c->nstreams; k++) {
		mg_stream *s = &c->streams[k];
		size_t n = fl->count[k];

		if (!n)
			continue;
		s->floors = malloc(n * sizeof *s->floors);
		if (!s->floors)
			return DW_ENOMEM;
		for (size_t i = 0; i < n; i++)
			s->floors[i] = fl->v[fl->first[k] + i].f;
		s->nfloors = n;
	}
	return DW_OK;
}

/* The end of the message that starts at c->xs.v[i]. */
static size_t
message_end(const mg_ctx *c, size_t i)
{
	const mg_xpart *a = &c->xs.v[i];
	size_t j = i + 1;

	while (j < c->xs.n && c->xs.v[j].key == a->key)
		j++;
	return j;
}

/*
 * Floors until none is needed: a moved receive may move a send that
 * follows it on its thread, which may need another move.  Real messages
 * cannot chase each other in a circle; damaged ones could, so the
 * passes are bounded.
 */
static dw_err
floors_find(mg_ctx *c, floors *fl)
{
	dw_err err = DW_OK;
	bool more = true;
	int pass;

	for (pass = 0; err == DW_OK && more && pass < 64; pass++) {
		more = false;
		err = floors_index(c, fl);
		for (size_t i = 0, j; err == DW_OK && i < c->xs.n; i = j) {
			j = message_end(c, i);
			err = message(fl, &c->xs.v[i], j - i, &more);
		}
	}
	if (err == DW_OK)
		err = floors_index(c, fl);
	if (err == DW_OK && more)
		rd_problem(
		    c->errs,
		    "messages whose receives and sends chase each other "
		    "in a circle: some receives still precede their send");
	return err;
}

dw_err
causal_setup(mg_ctx *c)
{
	floors fl = {0};
	dw_err err = DW_OK;

	fl.first = calloc(c->nstreams + 1, sizeof *fl.first);
	fl.count = calloc(c->nstreams + 1, sizeof *fl.count);
	if (!fl.first || !fl.count)
		err = DW_ENOMEM;
	if (err == DW_OK)
		xparts_time(c);
	if (err == DW_OK && c->xs.n && !xparts_group(c->xs.v, c->xs.n))
		err = DW_ENOMEM;
	if (err == DW_OK)
		err = floors_find(c, &fl);
	for (size_t i = 0, j; err == DW_OK && i < c->xs.n; i = j) {
		j = message_end(c, i);
		move_count(c, &fl, &c->xs.v[i], j - i);
	}
	if (err == DW_OK)
		err = floors_give(c, &fl);
	free(fl.v);
	free(fl.first);
	free(fl.count);
	free(fl.pmax);
	causal_free(c);
	return err;
}
