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

#include "merge/mg_int.h"

/* ---- The heap ------------------------------------------------------------ */

static bool
before(const mg_stream *a, const mg_stream *b)
{
	return a->key < b->key || (a->key == b->key && a->gthread < b->gthread);
}

static void
sift_down(mg_stream **h, size_t n, size_t i)
{
	mg_stream *s = h[i];

	for (;;) {
		size_t k = 2 * i + 1;

		if (k >= n)
			break;
		if (k + 1 < n && before(h[k + 1], h[k]))
			k++;
		if (!before(h[k], s))
			break;
		h[i] = h[k];
		i = k;
	}
	h[i] = s;
}

static int
gthread_cmp(const void *a, const void *b)
{
	const mg_stream *x = *(mg_stream *const *)a, *y = *(mg_stream *const *)b;

	return x->gthread < y->gthread ? -1 : x->gthread > y->gthread;
}

/* ---- Emitting --------------------------------------------------------------- */

static uint64_t
rel(const mg_ctx *c, int64_t t)
{
	uint64_t r = t > c->t0 ? (uint64_t)(t - c->t0) : 0;

	return r < c->duration ? r : c->duration;
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
	return oq_emit(c, &r);
}

static dw_err
emit_events(mg_ctx *c, const mg_stream *s, int64_t t)
{
	mg_rec r = {.kind = MG_EVENT, .thread = s->gthread};

	r.time = rel(c, t);
	r.u.event.pairs = c->pairs;
	r.u.event.n = c->npairs;
	return oq_emit(c, &r);
}

static bool
pair_add(mg_ctx *c, uint32_t type, uint64_t value)
{
	if (c->npairs == c->cappairs) {
		uint32_t cap = c->cappairs ? c->cappairs * 2 : 64;
		mg_pair *v = realloc(c->pairs, cap * sizeof *v);

		if (!v)
			return false;
		c->pairs = v;
		c->cappairs = cap;
	}
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

/* ---- User functions ------------------------------------------------------------ */

static bool
func_enter(mg_ctx *c, mg_stream *s, uint64_t addr)
{
	uint32_t id;

	if (s->fcache_id && s->fcache_addr == addr) {
		id = s->fcache_id;
	} else {
		id = names_func(c, s->proc, addr);
		s->fcache_addr = addr, s->fcache_id = id;
	}
	if (s->fn == s->fcap) {
		uint32_t cap = s->fcap ? s->fcap * 2 : 16;
		uint32_t *v = cap <= MG_STACK_MAX ? realloc(s->fstack,
		                                            cap * sizeof *v)
		                                  : NULL;

		if (v) {
			s->fstack = v;
			s->fcap = cap;
		}
	}
	if (s->fn < s->fcap)
		s->fstack[s->fn++] = id;
	return pair_add(c, MG_TYPE_FUNC, id);
}

/* Leaving a function shows the one that called it (0: none). */
static bool
func_exit(mg_ctx *c, mg_stream *s)
{
	if (s->fn)
		s->fn--;
	return pair_add(c, MG_TYPE_FUNC, s->fn ? s->fstack[s->fn - 1] : 0);
}

/* ---- Groups -------------------------------------------------------------------- */

static bool
take(mg_ctx *c, mg_stream *s, const rd_rec *r)
{
	switch (r->kind) {
	case FMT_R_EVENT:
		return pair_add(c, r->u.event.type, r->u.event.value);
	case FMT_R_STATE_PUSH:
	case FMT_R_STATE_POP:
		return stack_apply(&s->st, r);
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

static dw_err
group_emit(mg_ctx *c, mg_stream *s, int64_t t)
{
	uint32_t shown = stack_shown(&s->st);
	dw_err err = DW_OK;

	if (shown != s->shown) {
		err = emit_state(c, s, t, lookahead_next(s, t, shown), shown);
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
	int64_t t = s->cur.t;
	uint64_t n = 0;

	c->npairs = c->nparts = 0;
	do {
		if (!take(c, s, &s->cur.rec))
			return DW_ENOMEM;
		s->cur.have = false;
		n++;
	} while (cursor_peek(&s->cur) && s->cur.t == t);
	if ((c->done & 0xffff) + n > 0xffff)
		mg_progress_update(&c->prog, c->done + n);
	c->done += n;
	return group_emit(c, s, t);
}

/* ---- Streams ------------------------------------------------------------------- */

static dw_err
stream_open(mg_ctx *c, mg_stream *s)
{
	dw_err err = cursor_open(&s->cur, s->path, &s->proc->clk);

	if (err == DW_OK)
		err = cursor_open(&s->la, s->path, &s->proc->clk);
	if (err == DW_ENOMEM)
		return err;
	s->phase = MG_RUN;
	if (err != DW_OK || !cursor_peek(&s->cur)) {
		mg_problem(c->errs, "%s: cannot be read again; left out",
		           s->path);
		s->phase = MG_FINISH;
	}
	s->key = s->phase == MG_RUN ? s->cur.t : s->end;
	return emit_state(c, s, c->t0, s->first, MG_STATE_NOT_CREATED);
}

static dw_err
stream_finish(mg_ctx *c, mg_stream *s)
{
	dw_err err = emit_state(c, s, s->end, c->t0 + (int64_t)c->duration,
	                        MG_STATE_NOT_CREATED);

	if (s->st.bad_pops)
		mg_problem(c->errs, "%s: %llu state exits without an entry; "
		                    "ignored",
		           s->path, (unsigned long long)s->st.bad_pops);
	s->phase = MG_DONE;
	cursor_close(&s->cur);
	cursor_close(&s->la);
	return err;
}

static dw_err
step(mg_ctx *c, mg_stream **h, size_t *n)
{
	mg_stream *s = h[0];
	dw_err err;

	if (s->phase == MG_FINISH) {
		err = stream_finish(c, s);
		h[0] = h[--*n];
	} else {
		err = group(c, s);
		if (cursor_peek(&s->cur)) {
			s->key = s->cur.t;
		} else {
			s->phase = MG_FINISH;
			s->key = s->end;
		}
	}
	if (*n)
		sift_down(h, *n, 0);
	if (err == DW_OK && c->q.n)
		err = oq_flush(c, false);
	return err;
}

static dw_err
heap_build(mg_ctx *c, mg_stream **h, size_t *n)
{
	dw_err err = DW_OK;

	*n = 0;
	for (size_t i = 0; i < c->nstreams; i++)
		if (!c->streams[i].skip && c->streams[i].nrec)
			h[(*n)++] = &c->streams[i];
	qsort(h, *n, sizeof *h, gthread_cmp);
	for (size_t i = 0; err == DW_OK && i < *n; i++)
		err = stream_open(c, h[i]);
	for (size_t i = *n / 2; i-- > 0;)
		sift_down(h, *n, i);
	return err;
}

dw_err
timeline_run(mg_ctx *c)
{
	mg_stream **h = malloc((c->nstreams ? c->nstreams : 1) * sizeof *h);
	size_t n;
	dw_err err;

	if (!h)
		return DW_ENOMEM;
	mg_progress_start(&c->prog, c->o->progress, "merging",
	                  c->rep.records_in);
	c->done = 0;
	err = heap_build(c, h, &n);
	while (err == DW_OK && n)
		err = step(c, h, &n);
	if (err == DW_OK)
		err = oq_flush(c, true);
	if (err == DW_OK)
		comms_finish(c);
	mg_progress_end(&c->prog);
	free(h);
	return err;
}
