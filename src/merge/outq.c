/*
 * The output queue.  Records go straight to the writer unless a
 * communication placed before them still waits for its receive; then
 * they wait behind it, in order.  The queue is the only memory that
 * grows with the messages in flight, and its window bounds it: past a
 * soft limit a matched message stops waiting for its missing times,
 * past the hard limit a send without a receive is given up.
 *
 * The records wait as the writer's ring holds them (pipe.h's entries),
 * so that those between two messages go to the ring by one copy when
 * the message before them goes; the messages are marks beside them
 * (mg_outq, mg_int.h).  Entries are counted as the queue of records and
 * messages they stand for, which is what the limits are measured in.
 */
#include <stdlib.h>
#include <string.h>

#include "merge/mg_int.h"
#include "merge/pipe.h"

void
oq_init(mg_outq *q, uint32_t window)
{
	memset(q, 0, sizeof *q);
	q->hard = window ? window : MG_WINDOW_DEFAULT;
	q->soft = q->hard / 32 > 16 ? q->hard / 32 : 16;
	q->wait = MG_NONE;
}

void
oq_free(mg_outq *q)
{
	free(q->buf);
	free(q->m);
	memset(q, 0, sizeof *q);
}

/* Room for need more bytes: the waiting bytes moved to the buffer's
 * start when that leaves at least half of it free, else a buffer twice
 * as large (so each byte is moved once at most, on average). */
static bool
buf_room(mg_outq *q, uint64_t need)
{
	uint64_t live = q->wr - q->rd, cap = q->cap ? q->cap : 64u << 10;
	uint8_t *v = q->buf;

	while (cap < 2 * (live + need))
		cap *= 2;
	if (cap != q->cap) {
		if (!(v = malloc(cap)))
			return false;
		if (live)
			memcpy(v, q->buf + (q->rd - q->base), live);
		free(q->buf);
		q->buf = v;
		q->cap = cap;
	} else if (live) {
		memmove(v, v + (q->rd - q->base), live);
	}
	q->base = q->rd;
	return true;
}

/* The marks' capacity is a power of two. */
static __attribute__((noinline)) bool
marks_grow(mg_outq *q)
{
	size_t cap = q->mcap ? q->mcap * 2 : 256;
	oq_mark *v = malloc(cap * sizeof *v);

	if (!v)
		return false;
	for (size_t i = 0; i < q->nm; i++)
		v[i] = q->m[(q->mhead + i) & (q->mcap - 1)];
	free(q->m);
	q->m = v;
	q->mcap = cap;
	q->mhead = 0;
	return true;
}

/* A mark at the queue's end. */
static inline bool
mark_add(mg_outq *q, uint32_t msg)
{
	oq_mark *m;

	if (q->nm == q->mcap && !marks_grow(q))
		return false;
	m = &q->m[(q->mhead + q->nm++) & (q->mcap - 1)];
	m->pos = q->wr;
	m->idx = q->pushed;
	m->msg = msg;
	return true;
}

/* Counted as written now: every record queued is written, in order. */
dw_err
oq_queue(mg_ctx *c, const mg_rec *r)
{
	mg_outq *q = &c->q;
	uint32_t n;
	uint64_t need = pipe_ent_size(r, &n);

	if (q->wr + need > q->base + q->cap && !buf_room(q, need))
		return DW_ENOMEM;
	if (need > PIPE_ENT_MAX && !mark_add(q, MG_NONE))
		return DW_ENOMEM;
	pipe_ent_put((pipe_ent *)(q->buf + (q->wr - q->base)), r, n, need);
	q->wr += need;
	q->pushed++;
	q->n++;
	mg_count(c, r->kind);
	return DW_OK;
}

dw_err
oq_place(mg_ctx *c, uint32_t msg)
{
	mg_outq *q = &c->q;

	if (!mark_add(q, msg))
		return DW_ENOMEM;
	q->pushed++;
	if (++q->n == 1)
		q->wait = msg;
	return DW_OK;
}

/* Writes the queue's records from rd up to position end, entry idx (no
 * mark between): by one copy into the writer's ring, or one by one. */
static dw_err
oq_run(mg_ctx *c, uint64_t end, uint64_t idx)
{
	mg_outq *q = &c->q;
	const uint8_t *b = q->buf + (q->rd - q->base);
	uint64_t len = end - q->rd;
	dw_err err = DW_OK;

	q->n -= idx - (q->pushed - q->n); /* the entries before idx go */
	q->rd = end;
	if (c->pipe && pipe_running(c->pipe)) {
		if ((err = pipe_entries(c->pipe, b, len)) != DW_OK)
			c->werr = err;
		return err;
	}
	for (uint64_t k = 0; err == DW_OK && k < len;) {
		const pipe_ent *e = (const pipe_ent *)(b + k);
		mg_rec r;

		pipe_ent_get(e, &r);
		err = mg_put(c, &r);
		k += e->size;
	}
	return err;
}

/* The head mark: true when it went (*err set), false when it waits. */
static bool
oq_mark_head(mg_ctx *c, const oq_mark *m, bool final, dw_err *err)
{
	mg_outq *q = &c->q;
	int pressed, k;
	mg_rec r;

	if (m->msg == MG_NONE) { /* a record too large for the ring */
		const pipe_ent *e =
		    (const pipe_ent *)(q->buf + (q->rd - q->base));

		pipe_ent_get(e, &r);
		q->rd += e->size;
		*err = mg_put(c, &r);
		return true;
	}
	pressed = q->n > q->hard ? 2 : q->n > q->soft ? 1 : 0;
	k = comms_head(c, m->msg, pressed, final);
	if (k == 0)
		return false;
	if (k == 1) {
		comms_rec(c, m->msg, &r);
		comms_release(c, m->msg);
		*err = mg_write(c, &r);
	}
	return true;
}

dw_err
oq_flush(mg_ctx *c, bool final)
{
	mg_outq *q = &c->q;

	q->kick = false;
	while (q->n) {
		const oq_mark *m = q->nm ? &q->m[q->mhead] : NULL;
		dw_err err = DW_OK;

		if (!m) {
			err = oq_run(c, q->wr, q->pushed);
			if (err != DW_OK)
				return err;
			break;
		}
		if (m->pos > q->rd &&
		    (err = oq_run(c, m->pos, m->idx)) != DW_OK)
			return err;
		if (!oq_mark_head(c, m, final, &err)) {
			q->wait = m->msg;
			return DW_OK;
		}
		q->mhead = (q->mhead + 1) & (q->mcap - 1);
		q->nm--;
		q->n--;
		if (err != DW_OK)
			return err;
	}
	q->wait = MG_NONE;
	return DW_OK;
}
