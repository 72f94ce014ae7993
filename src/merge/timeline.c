/*
 * The k-way merge: every stream is in time order, so a heap of streams
 * keyed by their next corrected time gives the records of the whole
 * trace in time order.  A stream's records of one time (a group) are
 * taken together: the state it then shows, all its events on one
 * record, then its communication parts.  At equal times streams go by
 * global thread index.
 */
#include <stdlib.h>
#include <string.h>

#include "merge/decode.h"
#include "merge/mg_int.h"
#include "merge/pipe.h"

/* ---- The tournament -------------------------------------------------------
 */

/*
 * A loser tree over the streams: the winner is the stream with the
 * earliest next time, then the lowest leaf (leaves are in global thread
 * order).  Replacing the winner's key replays one path from its leaf:
 * log2(streams) compares, with no branch on which child is smaller.
 * Keys are times since time 0.
 *
 * While every key fits in 64 - log2(leaves) bits (16 streams: 36 years
 * of trace), a node holds its loser as one number, the key above the
 * leaf, so a match is one compare in registers and no key is looked up
 * by leaf (`narrow`, a replay a third cheaper).  The first key that
 * does not fit turns the tree wide: indices, with the keys by leaf.
 */
typedef uint64_t lkey;
#define LT_DONE UINT64_MAX

typedef struct ltree {
	uint32_t p;     /* leaves: a power of two */
	uint32_t *node; /* wide: node[0] winner; node[1 .. p-1] losers */
	lkey *key;      /* by leaf: wide, and while the tree is built */
	mg_stream **s;  /* by leaf */
	int64_t t0;
	bool narrow;   /* nk is the tree, not node */
	unsigned bits; /* narrow: leaf bits */
	lkey kdone;    /* narrow: the key of a stream done (all ones) */
	uint64_t dmin; /* narrow: the slots of streams done are above */
	uint64_t *nk;  /* narrow: nk[0] winner; nk[1 .. p-1] losers */
	uint32_t *win; /* lt_build's winners by node (2p) */
} ltree;

static inline lkey
lt_key(const ltree *t, int64_t time)
{
	return time > t->t0 ? (lkey)((uint64_t)time - (uint64_t)t->t0) : 0;
}

static inline bool
lt_less(const ltree *t, uint32_t a, uint32_t b)
{
	return (t->key[a] < t->key[b]) | ((t->key[a] == t->key[b]) & (a < b));
}

static void
lt_free(ltree *t)
{
	free(t->node);
	free(t->nk);
	free(t->win);
	free(t->key);
	free(t->s);
}

static dw_err
lt_init(ltree *t, size_t n)
{
	t->p = 1;
	while (t->p < n)
		t->p *= 2;
	t->node = calloc(t->p, sizeof *t->node);
	t->nk = calloc(t->p, sizeof *t->nk);
	t->win = malloc(2 * t->p * sizeof *t->win);
	t->key = malloc(t->p * sizeof *t->key);
	t->s = calloc(t->p, sizeof *t->s);
	if (!t->node || !t->nk || !t->win || !t->key || !t->s)
		return DW_ENOMEM;
	t->bits = (unsigned)__builtin_ctz(t->p);
	t->kdone = UINT64_MAX >> t->bits;
	t->dmin = UINT64_MAX << t->bits;
	for (uint32_t i = 0; i < t->p; i++)
		t->key[i] = LT_DONE;
	return DW_OK;
}

/* A key as the narrow tree holds it (fits: below kdone, or done). */
static inline bool
lt_fits(const ltree *t, lkey k)
{
	return k < t->kdone || k == LT_DONE;
}

/* Plays every match, bottom up: narrow when every key fits. */
static void
lt_build(ltree *t)
{
	uint32_t *win = t->win;

	t->narrow = true;
	for (uint32_t i = 0; i < t->p; i++) {
		win[t->p + i] = i;
		t->narrow &= lt_fits(t, t->key[i]);
	}
	for (uint32_t n = t->p - 1; n >= 1; n--) {
		uint32_t a = win[2 * n], b = win[2 * n + 1];
		bool bw = lt_less(t, b, a);

		win[n] = bw ? b : a;
		t->node[n] = bw ? a : b;
	}
	t->node[0] = win[1];
	for (uint32_t n = 0; t->narrow && n < t->p; n++) {
		uint32_t l = t->node[n];
		t->nk[n] = t->key[l] << t->bits | l;
	}
}

static inline uint32_t
lt_winner(const ltree *t)
{
	return t->narrow ? (uint32_t)(t->nk[0] & (t->p - 1)) : t->node[0];
}

static inline bool
lt_done(const ltree *t)
{
	return t->narrow ? t->nk[0] >= t->dmin : t->key[t->node[0]] == LT_DONE;
}

/* Leaf i (the winner) has the new key k: replays its path to the root.
 * The winner's key stays in a local (looked up at every match, a step
 * cost a fifth more). */
static inline void
lt_replay_wide(ltree *t, uint32_t i, lkey k)
{
	uint32_t w = i;
	lkey wk = k;

	t->key[i] = k;
	for (uint32_t n = (i + t->p) / 2; n >= 1; n /= 2) {
		uint32_t l = t->node[n];
		lkey lk = t->key[l];
		bool sw = (lk < wk) | ((lk == wk) & (l < w));

		t->node[n] = sw ? w : l;
		w = sw ? l : w;
		wk = sw ? lk : wk;
	}
	t->node[0] = w;
}

/* The same on the narrow tree: one compare and two moves a match (a
 * done stream's key, all ones, keeps all ones above the leaf).  A key
 * that does not fit turns the tree wide: every leaf is in exactly one
 * slot, so the keys by leaf are read back from them and the tree is
 * built again, which gives the same winner. */
static void
lt_widen(ltree *t, uint32_t i, lkey k)
{
	for (uint32_t n = 0; n < t->p; n++) {
		uint64_t v = t->nk[n];

		t->key[v & (t->p - 1)] = v >= t->dmin ? LT_DONE : v >> t->bits;
	}
	t->key[i] = k;
	lt_build(t); /* k does not fit: wide from now on */
}

static inline void
lt_replay(ltree *t, uint32_t i, lkey k)
{
	uint64_t w = k << t->bits | i;

	if (!t->narrow)
		return lt_replay_wide(t, i, k);
	if (__builtin_expect(!lt_fits(t, k), 0))
		return lt_widen(t, i, k);
	for (uint32_t n = (i + t->p) / 2; n >= 1; n /= 2) {
		uint64_t l = t->nk[n];

		t->nk[n] = l < w ? w : l;
		w = l < w ? l : w;
	}
	t->nk[0] = w;
}

static int
stream_gcmp(const void *a, const void *b)
{
	const mg_stream *x = *(mg_stream *const *)a,
	                *y = *(mg_stream *const *)b;

	return x->gthread < y->gthread ? -1 : x->gthread > y->gthread;
}

/* ---- Emitting ---------------------------------------------------------------
 */

static uint64_t
rel(const mg_ctx *c, int64_t t)
{
	uint64_t r = t > c->t0 ? (uint64_t)t - (uint64_t)c->t0 : 0;

	return r < c->duration ? r : c->duration;
}

/*
 * Room for a record's entry (pipe.h) of need bytes written now, filled
 * by the caller and counted: in the writer's ring when nothing waits in
 * the output queue, else at the queue's end.  NULL when the record must
 * take oq_emit's way (no writer's thread, its slow path, the queue's
 * buffer full, a record too large for the ring).
 */
static inline pipe_ent *
ent_slot(mg_ctx *c, uint64_t need)
{
	mg_outq *q = &c->q;
	pipe_ent *e;

	if (!q->n)
		return c->pipe ? pipe_slot(c->pipe, need) : NULL;
	if (q->wr + need > q->base + q->cap || need > PIPE_ENT_MAX)
		return NULL;
	e = (pipe_ent *)(q->buf + (q->wr - q->base));
	q->wr += need;
	q->pushed++;
	q->n++;
	return e;
}

/* r written now: into ent_slot's room, else by oq_emit's way. */
static inline __attribute__((always_inline)) dw_err
emit_rec(mg_ctx *c, const mg_rec *r)
{
	uint32_t n;
	uint64_t need = pipe_ent_size(r, &n);
	pipe_ent *e = ent_slot(c, need);

	if (!e)
		return oq_emit(c, r);
	pipe_ent_put(e, r, n, need);
	mg_count(c, r->kind);
	return DW_OK;
}

static dw_err
emit_state(mg_ctx *c, const mg_stream *s, int64_t from, int64_t to,
           uint32_t state)
{
	mg_rec r = {.kind = MG_STATE, .thread = s->gthread};

	r.time = rel(c, from);
	r.u.state.end = rel(c, to);
	r.u.state.state = state;
	if (r.u.state.end <= r.time)
		return DW_OK;
	return emit_rec(c, &r);
}

static dw_err
emit_events(mg_ctx *c, const mg_stream *s, int64_t t)
{
	mg_rec r = {.kind = MG_EVENT, .thread = s->gthread};

	r.time = rel(c, t);
	r.u.event.pairs = c->pairs;
	r.u.event.n = c->npairs;
	return emit_rec(c, &r);
}

static bool
pairs_grow(mg_ctx *c)
{
	uint32_t cap = c->cappairs ? c->cappairs * 2 : 64;
	mg_pair *v = realloc(c->pairs, cap * sizeof *v);

	if (!v)
		return false;
	c->pairs = v;
	c->cappairs = cap;
	return true;
}

static inline bool
pair_add(mg_ctx *c, uint32_t type, uint64_t value)
{
	if (c->npairs == c->cappairs && !pairs_grow(c))
		return false;
	c->pairs[c->npairs++] = (mg_pair){type, value};
	return true;
}

static bool
part_add(mg_ctx *c, const rd_rec *r)
{
	if (c->nparts == c->capparts) {
		uint32_t cap = c->capparts ? c->capparts * 2 : 16;
		rd_rec *v = realloc(c->parts, cap * sizeof *v);

		if (!v)
			return false;
		c->parts = v;
		c->capparts = cap;
	}
	c->parts[c->nparts++] = *r;
	return true;
}

/* ---- User functions
 * ------------------------------------------------------------ */

/* As Extrae writes them: the function and its line at an entry, 0 and
 * 0 at an exit (Paraver's stacked values rebuild the nesting). */
static bool
func_enter(mg_ctx *c, mg_stream *s, uint64_t addr)
{
	if (!s->fcache_id || s->fcache_addr != addr) {
		s->fcache_id = names_func(c, s->proc, addr, &s->fcache_lid);
		s->fcache_addr = addr;
	}
	s->fn++;
	return pair_add(c, MG_TYPE_FUNC, s->fcache_id) &&
	       pair_add(c, MG_TYPE_FUNC_LINE, s->fcache_lid);
}

static bool
func_exit(mg_ctx *c, mg_stream *s)
{
	if (s->fn)
		s->fn--;
	return pair_add(c, MG_TYPE_FUNC, 0) &&
	       pair_add(c, MG_TYPE_FUNC_LINE, 0);
}

/* ---- Groups
 * -------------------------------------------------------------------- */

/* An event; the value of a type that names something becomes its
 * dense id (dense.c). */
static bool
event_add(mg_ctx *c, mg_stream *s, const rd_rec *r)
{
	int cls = dense_class(r->u.event.type);

	return pair_add(c, r->u.event.type,
	                cls < 0 ? r->u.event.value
	                        : dense_id(s->proc, cls, r->u.event.value));
}

static bool
take(mg_ctx *c, mg_stream *s, const mg_ent *e)
{
	const rd_rec *r = &e->rec;

	switch (r->kind) {
	case FMT_R_EVENT:
		return event_add(c, s, r);
	case FMT_R_STATE_PUSH:
	case FMT_R_STATE_POP:
		s->bad_pops += e->bad_pop; /* the cursor applied it */
		return true;
	case FMT_R_FUNC_ENTER:
		return func_enter(c, s, r->u.func.addr);
	case FMT_R_FUNC_EXIT:
		return func_exit(c, s);
	case FMT_R_COMM:
		return part_add(c, r);
	default: /* SYNC: used by the clock correction */
		return true;
	}
}

/* next: where the state shown after the group ends, when the decoding
 * thread found it already (mg_ent.next), else MG_NEXT_UNKNOWN. */
static dw_err
group_emit(mg_ctx *c, mg_stream *s, int64_t t, uint32_t shown, int64_t next)
{
	dw_err err = DW_OK;

	if (shown != s->shown) {
		if (next == MG_NEXT_UNKNOWN)
			next = lookahead_next(s, t, shown);
		err = emit_state(c, s, t, next, shown);
		s->shown = shown;
	}
	if (err == DW_OK && c->npairs)
		err = emit_events(c, s, t);
	for (uint32_t i = 0; err == DW_OK && i < c->nparts; i++)
		err = comms_part(c, s, &c->parts[i], t);
	return err;
}

/* Takes the stream's records of its next time, then writes them. */
static dw_err
group(mg_ctx *c, mg_stream *s)
{
	const mg_ent *e = stream_peek(s);
	int64_t t = e->t;
	uint64_t n = 0;
	uint32_t shown;
	int64_t next;

	c->npairs = c->nparts = 0;
	s->key = t; /* the last time taken */
	do {
		if (!take(c, s, e))
			return DW_ENOMEM;
		shown = e->shown; /* the state shown after the group */
		/* read before the take: then the decoder may reuse it */
		next = atomic_load_explicit(&e->next, memory_order_relaxed);
		stream_take(s);
		n++;
	} while ((e = stream_peek(s)) && e->t == t);
	if ((c->done & 0xffff) + n > 0xffff)
		mg_progress_update(&c->prog, c->done + n);
	c->done += n;
	return group_emit(c, s, t, shown, next);
}

/* ---- Streams
 * ------------------------------------------------------------------- */

/* Ring entries a stream gets: 8192 in all (640 KiB: the rings stay in
 * the cache), 64 to 4096 each. */
static size_t
ring_size(const mg_ctx *c)
{
	/* with a decoding thread, 4x: its handoffs (every half ring) and
	 * wake-ups (a quarter of all rooms) come 4x less often */
	size_t all = c->o->threads > 1 ? 32768u : 8192u;
	size_t n = all / (c->nstreams ? c->nstreams : 1);
	size_t r = 64, cap = all / 2;

	while (r * 2 <= n && r < cap)
		r *= 2;
	return r;
}

static dw_err
stream_open(mg_ctx *c, mg_stream *s)
{
	dw_err err = stream_open_ring(s, ring_size(c));
	const mg_ent *e;

	if (err == DW_ENOMEM)
		return err;
	s->fill_one = c->o->threads > 1;
	s->phase = MG_RUN;
	e = err == DW_OK ? stream_peek(s) : NULL;
	if (!e) {
		rd_problem(c->errs, "%s: cannot be read again; left out",
		           s->path);
		s->phase = MG_FINISH;
	}
	s->key = e ? e->t : s->end;
	return emit_state(c, s, c->t0, s->first, MG_STATE_NOT_CREATED);
}

static dw_err
stream_finish(mg_ctx *c, mg_stream *s)
{
	int64_t end = s->end > s->key ? s->end : s->key;
	dw_err err =
	    emit_state(c, s, end, (int64_t)((uint64_t)c->t0 + c->duration),
	               MG_STATE_NOT_CREATED);

	if (s->bad_pops)
		rd_problem(c->errs,
		           "%s: %llu state exits without an entry; "
		           "ignored",
		           s->path, (unsigned long long)s->bad_pops);
	s->phase = MG_DONE;
	stream_close(s);
	return err;
}

static dw_err
step(mg_ctx *c, ltree *lt)
{
	uint32_t w = lt_winner(lt);
	mg_stream *s = lt->s[w];
	const mg_ent *e;
	dw_err err;
	lkey k;

	if (s->phase == MG_FINISH) {
		err = stream_finish(c, s);
		k = LT_DONE;
	} else {
		err = group(c, s);
		if ((e = stream_peek(s))) {
			k = lt_key(lt, e->t);
		} else {
			s->phase = MG_FINISH;
			k = lt_key(lt, s->end);
		}
	}
	lt_replay(lt, w, k);
	/* The head can go only when a message completed, or when the
	 * queue's length presses it. */
	if (err == DW_OK && c->q.n && (c->q.kick || c->q.n > c->q.soft))
		err = oq_flush(c, false);
	return err;
}

/* The streams with records, opened, in the tree by global thread. */
static dw_err
tree_build(mg_ctx *c, ltree *lt)
{
	size_t n = 0;
	dw_err err;

	for (size_t i = 0; i < c->nstreams; i++)
		n += !c->streams[i].skip && c->streams[i].nrec;
	err = lt_init(lt, n ? n : 1);
	if (err != DW_OK)
		return err;
	lt->t0 = c->t0;
	n = 0;
	for (size_t i = 0; i < c->nstreams; i++)
		if (!c->streams[i].skip && c->streams[i].nrec)
			lt->s[n++] = &c->streams[i];
	qsort(lt->s, n, sizeof *lt->s, stream_gcmp);
	for (size_t i = 0; err == DW_OK && i < n; i++) {
		err = stream_open(c, lt->s[i]);
		lt->key[i] = lt_key(lt, lt->s[i]->key);
	}
	if (err == DW_OK)
		lt_build(lt);
	return err;
}

/* With two threads or more, the streams are decoded on a thread of
 * their own (decode.h); without memory for it, on this one. */
static mg_dec *
decoder(mg_ctx *c, ltree *lt)
{
	mg_dec *d = NULL;
	size_t n = 0;

	while (n < lt->p && lt->s[n])
		n++;
	if (c->o->threads > 1 && n)
		(void)dec_start(lt->s, n, c->pipe, &d);
	return d;
}

dw_err
timeline_run(mg_ctx *c)
{
	ltree lt = {0};
	mg_dec *d = NULL;
	dw_err err;

	mg_progress_start(&c->prog, c->o->progress, "merging",
	                  c->rep.records_in);
	c->done = 0;
	err = tree_build(c, &lt);
	if (err == DW_OK)
		d = decoder(c, &lt);
	while (err == DW_OK && !lt_done(&lt))
		err = step(c, &lt);
	dec_stop(d);
	if (err == DW_OK)
		err = oq_flush(c, true);
	if (err == DW_OK)
		comms_finish(c);
	mg_progress_end(&c->prog);
	lt_free(&lt);
	return err;
}
