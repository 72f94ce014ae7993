/*
 * The output queue.  Records go straight to the writer unless a
 * communication placed before them still waits for its receive; then
 * they wait behind it, in order.  The queue is the only memory that
 * grows with the messages in flight, and its window bounds it: past a
 * soft limit a matched message stops waiting for its missing times,
 * past the hard limit a send without a receive is given up.
 */
#include <stdlib.h>
#include <string.h>

#include "merge/mg_int.h"
#include "merge/pipe.h"

#define OQ_INLINE 2

struct oq_ent {
	mg_rec r;
	uint32_t msg; /* MG_NONE: r is a complete record */
	mg_pair inl[OQ_INLINE];
	mg_pair *ext; /* event pairs beyond OQ_INLINE */
};

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
	for (size_t i = 0; i < q->n; i++)
		free(q->v[(q->head + i) & (q->cap - 1)].ext);
	free(q->v);
	memset(q, 0, sizeof *q);
}

/* The capacity is a power of two, so an index wraps with a mask. */
static bool
oq_grow(mg_outq *q)
{
	size_t cap = q->cap ? q->cap * 2 : 1024;
	oq_ent *v = malloc(cap * sizeof *v);

	if (!v)
		return false;
	for (size_t i = 0; i < q->n; i++)
		v[i] = q->v[(q->head + i) & (q->cap - 1)];
	free(q->v);
	q->v = v;
	q->cap = cap;
	q->head = 0;
	return true;
}

static inline oq_ent *
oq_push(mg_outq *q)
{
	oq_ent *e;

	if (__builtin_expect(q->n == q->cap, 0) && !oq_grow(q))
		return NULL;
	e = &q->v[(q->head + q->n++) & (q->cap - 1)];
	e->msg = MG_NONE;
	e->ext = NULL;
	return e;
}

static dw_err
oq_copy_pairs(oq_ent *e, const mg_rec *r)
{
	uint32_t n = r->u.event.n;

	if (n > OQ_INLINE) {
		e->ext = malloc(n * sizeof *e->ext);
		if (!e->ext)
			return DW_ENOMEM;
		memcpy(e->ext, r->u.event.pairs, n * sizeof *e->ext);
	} else {
		memcpy(e->inl, r->u.event.pairs, n * sizeof *e->inl);
	}
	return DW_OK;
}

dw_err
oq_queue(mg_ctx *c, const mg_rec *r)
{
	oq_ent *e;

	if (!(e = oq_push(&c->q)))
		return DW_ENOMEM;
	e->r = *r;
	return r->kind == MG_EVENT ? oq_copy_pairs(e, r) : DW_OK;
}

dw_err
oq_place(mg_ctx *c, uint32_t msg)
{
	oq_ent *e = oq_push(&c->q);

	if (!e)
		return DW_ENOMEM;
	e->msg = msg;
	if (c->q.n == 1)
		c->q.wait = msg;
	return DW_OK;
}

/* Writes the head entry, or sets *wait if it must wait. */
static dw_err
oq_head(mg_ctx *c, oq_ent *e, bool final, bool *wait)
{
	mg_outq *q = &c->q;
	int pressed, k;
	mg_rec r;

	if (e->msg == MG_NONE) {
		if (e->r.kind == MG_EVENT)
			e->r.u.event.pairs = e->ext ? e->ext : e->inl;
		return mg_write(c, &e->r);
	}
	pressed = q->n > q->hard ? 2 : q->n > q->soft ? 1 : 0;
	k = comms_head(c, e->msg, pressed, final);
	*wait = k == 0;
	if (k == 0)
		return DW_OK;
	if (k == 2)
		return DW_OK;
	comms_rec(c, e->msg, &r);
	comms_release(c, e->msg);
	return mg_write(c, &r);
}

dw_err
oq_flush(mg_ctx *c, bool final)
{
	mg_outq *q = &c->q;

	q->kick = false;
	while (q->n) {
		oq_ent *e = &q->v[q->head];
		bool wait = false;
		dw_err err = oq_head(c, e, final, &wait);

		if (wait) {
			q->wait = e->msg;
			return DW_OK;
		}
		if (e->ext) {
			free(e->ext);
			e->ext = NULL;
		}
		q->head = (q->head + 1) & (q->cap - 1);
		q->n--;
		if (err != DW_OK)
			return err;
	}
	q->wait = MG_NONE;
	return DW_OK;
}
