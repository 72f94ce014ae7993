/* States and functions as nested regions (nest.h). */
#include <stdlib.h>

#include "output/nest.h"

#define STATE_NOT_CREATED 2u
#define TYPE_FUNC_END     0u

dw_err
nest_init(nest *n, uint32_t nthreads, const nest_ops *ops, void *ctx)
{
	n->t = calloc(nthreads ? nthreads : 1, sizeof *n->t);
	n->n = nthreads;
	n->ops = ops;
	n->ctx = ctx;
	if (!n->t)
		return DW_ENOMEM;
	for (uint32_t i = 0; i < nthreads; i++)
		n->t[i].state = NEST_NONE;
	return DW_OK;
}

void
nest_free(nest *n)
{
	for (uint32_t i = 0; n->t && i < n->n; i++)
		free(n->t[i].stack);
	free(n->t);
	n->t = NULL;
}

static inline unsigned
same_begin(const nest_thread *th, uint32_t below, uint64_t begin)
{
	return below && th->stack[below - 1].begin == begin ? NEST_SAME_BEGIN
	                                                    : 0;
}

/* Ends the current piece at t (or at its state's end, if before). */
static dw_err
piece_close(nest *n, uint32_t thread, nest_thread *th, uint64_t t)
{
	uint64_t e = t < th->until ? t : th->until;
	dw_err err = DW_OK;

	if (th->state == NEST_NONE)
		return DW_OK;
	if (e > th->since) {
		if (!th->opened)
			err = n->ops->open(n->ctx, thread, NEST_STATE,
			                   th->state, th->since);
		if (err == DW_OK)
			err = n->ops->close(
			    n->ctx, thread, NEST_STATE, th->state, th->since, e,
			    same_begin(th, th->depth, th->since));
	}
	th->opened = false;
	th->since = t;
	if (t >= th->until)
		th->state = NEST_NONE;
	return err;
}

dw_err
nest_touch(nest *n, uint32_t thread, uint64_t t)
{
	nest_thread *th = &n->t[thread];

	if (t > th->last)
		th->last = t;
	if (th->state == NEST_NONE || t <= th->since)
		return DW_OK;
	if (t >= th->until)
		return piece_close(n, thread, th, t);
	if (th->opened)
		return DW_OK;
	th->opened = true;
	return n->ops->open(n->ctx, thread, NEST_STATE, th->state, th->since);
}

dw_err
nest_state(nest *n, uint32_t thread, uint64_t t, uint64_t end, uint32_t state)
{
	nest_thread *th = &n->t[thread];
	dw_err err = piece_close(n, thread, th, t);

	if (t > th->last)
		th->last = t;
	if (state == STATE_NOT_CREATED) {
		if (th->end < t)
			th->end = t;
		th->state = NEST_NONE;
		return err;
	}
	if (th->end < end)
		th->end = end;
	th->state = state;
	th->since = t;
	th->until = end;
	th->opened = false;
	return err;
}

static dw_err
func_push(nest *n, uint32_t thread, nest_thread *th, uint64_t t, uint64_t id)
{
	if (th->depth == th->cap) {
		uint32_t cap = th->cap ? th->cap * 2 : 16;
		nest_frame *v;

		if (th->depth >= NEST_DEPTH_MAX) {
			th->over++;
			return DW_OK;
		}
		v = realloc(th->stack, cap * sizeof *v);
		if (!v)
			return DW_ENOMEM;
		th->stack = v;
		th->cap = cap;
	}
	th->stack[th->depth++] = (nest_frame){id, t};
	return n->ops->open(n->ctx, thread, NEST_FUNC, id, t);
}

static dw_err
func_pop(nest *n, uint32_t thread, nest_thread *th, uint64_t t)
{
	nest_frame *f;

	if (th->over) {
		th->over--;
		return DW_OK;
	}
	if (!th->depth)
		return DW_OK;
	f = &th->stack[--th->depth];
	return n->ops->close(n->ctx, thread, NEST_FUNC, f->id, f->begin,
	                     t > f->begin ? t : f->begin,
	                     same_begin(th, th->depth, f->begin));
}

dw_err
nest_func(nest *n, uint32_t thread, uint64_t t, uint64_t value)
{
	nest_thread *th = &n->t[thread];
	dw_err err;

	if (t > th->last)
		th->last = t;
	/* The state goes on from t, inside (or outside) the function. */
	err = piece_close(n, thread, th, t);
	if (err != DW_OK)
		return err;
	if (value == TYPE_FUNC_END || (th->depth >= 2 && !th->over &&
	                               th->stack[th->depth - 2].id == value))
		return func_pop(n, thread, th, t);
	return func_push(n, thread, th, t, value);
}

dw_err
nest_run(nest *n, uint32_t thread, uint64_t t, uint64_t kind, uint64_t value)
{
	nest_thread *th = &n->t[thread];
	uint32_t k = th->depth;
	dw_err err;

	if (t > th->last)
		th->last = t;
	err = piece_close(n, thread, th, t);
	if (err != DW_OK || th->over)
		return err;
	if (value) {
		if (k >= 2 && th->stack[k - 2].id == (value | kind))
			return func_pop(n, thread, th,
			                t); /* back to the caller */
		return func_push(n, thread, th, t, value | kind);
	}
	while (k > 0 && !(th->stack[k - 1].id & kind))
		k--;
	while (err == DW_OK && k > 0 && th->depth >= k)
		err = func_pop(n, thread, th, t); /* the run and what it left */
	return err;
}

static dw_err
finish_thread(nest *n, uint32_t thread, nest_thread *th)
{
	uint64_t end = th->end > th->last ? th->end : th->last;
	dw_err err = DW_OK;

	if (th->state != NEST_NONE)
		err = piece_close(n, thread, th, th->until);
	th->over = 0;
	while (err == DW_OK && th->depth)
		err = func_pop(n, thread, th, end);
	return err;
}

dw_err
nest_finish(nest *n)
{
	dw_err err = DW_OK;

	for (uint32_t i = 0; err == DW_OK && i < n->n; i++)
		err = finish_thread(n, i, &n->t[i]);
	return err;
}
