/*
 * The cutter (cut.h): a writer in front of another that keeps a time
 * window and a set of tasks, renumbers what it keeps, and counts what it
 * left out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "merge/cut.h"

typedef struct cut_writer {
	mg_writer base;
	mg_writer *inner;
	cut_opts o;
	cut_range *ranges;
	cut_report *rep;
	uint64_t from, to;
	uint32_t *tmap; /* old global thread -> new, UINT32_MAX: left out */
	size_t nold;
	mg_info info; /* the cut's shape */
	mg_node *nodes;
	mg_task *tasks;
	mg_thread *threads;
	uint32_t *pre; /* bytes of "cpu:1:task:thread:" of each new thread */
	bool stopped;  /* the byte cap was reached */
} cut_writer;

bool
cut_wanted(const cut_opts *o)
{
	return o->from || o->to || o->tasks || o->max_bytes;
}

static dw_err
fail(cut_writer *c, dw_err err, const char *fmt, unsigned long long a,
     unsigned long long b)
{
	snprintf(c->base.err, sizeof c->base.err, fmt, a, b);
	return err;
}

static bool
task_kept(const cut_writer *c, uint32_t num)
{
	if (!c->o.tasks)
		return true;
	for (size_t i = 0; i < c->o.ntasks; i++)
		if (num >= c->ranges[i].lo && num <= c->ranges[i].hi)
			return true;
	return false;
}

static unsigned
digits(uint64_t v)
{
	unsigned n = 1;

	while (v >= 10)
		v /= 10, n++;
	return n;
}

/* ---- The cut's shape ------------------------------------------------------
 */

static dw_err
check_tasks(cut_writer *c, const mg_info *in)
{
	for (size_t i = 0; c->o.tasks && i < c->o.ntasks; i++)
		if (c->ranges[i].hi > in->ntasks || c->ranges[i].lo == 0)
			return fail(c, DW_EINVAL,
			            "--tasks: task %llu is not in the trace "
			            "(its tasks are 1 to %llu)",
			            c->ranges[i].hi > in->ntasks
			                ? c->ranges[i].hi
			                : c->ranges[i].lo,
			            in->ntasks);
	return DW_OK;
}

/* Tasks and threads kept, in order; CPUs numbered node by node. */
static dw_err
shape_threads(cut_writer *c, const mg_info *in)
{
	uint32_t nt = 0, nth = 0;

	for (size_t i = 0; i < in->nthreads; i++)
		c->tmap[i] = UINT32_MAX;
	for (size_t k = 0; k < in->ntasks; k++) {
		const mg_task *t = &in->tasks[k];

		if (!task_kept(c, (uint32_t)k + 1)) {
			c->rep->tasks_out++;
			c->rep->threads_out += t->nthreads;
			continue;
		}
		c->tasks[nt] = *t;
		c->tasks[nt].first_thread = nth;
		for (uint32_t j = 0; j < t->nthreads; j++) {
			c->tmap[t->first_thread + j] = nth;
			c->threads[nth] = in->threads[t->first_thread + j];
			c->threads[nth++].task = nt;
		}
		nt++;
	}
	c->info.ntasks = nt;
	c->info.nthreads = nth;
	if (!nt)
		snprintf(c->base.err, sizeof c->base.err,
		         "--tasks keeps no task");
	return nt ? DW_OK : DW_EINVAL;
}

static dw_err
shape_nodes(cut_writer *c, const mg_info *in)
{
	uint32_t nn = 0, cpu = 0;

	for (size_t n = 0; n < in->nnodes; n++) {
		const mg_node *nd = &in->nodes[n];
		uint32_t first = cpu;

		/* the node's kept threads, by their old CPU */
		for (uint32_t oc = nd->first_cpu;
		     oc < nd->first_cpu + nd->ncpus; oc++)
			for (size_t i = 0; i < c->info.nthreads; i++)
				if (c->threads[i].cpu == oc &&
				    c->threads[i].task != UINT32_MAX &&
				    c->tasks[c->threads[i].task].node == n) {
					c->threads[i].cpu = UINT32_MAX - cpu;
					cpu++;
				}
		if (cpu == first)
			continue;
		c->nodes[nn] = *nd;
		c->nodes[nn].first_cpu = first;
		c->nodes[nn].ncpus = cpu - first;
		for (size_t t = 0; t < c->info.ntasks; t++)
			if (c->tasks[t].node == n)
				c->tasks[t].node = UINT32_MAX - nn;
		nn++;
	}
	for (size_t i = 0; i < c->info.nthreads; i++)
		c->threads[i].cpu = UINT32_MAX - c->threads[i].cpu;
	for (size_t t = 0; t < c->info.ntasks; t++)
		c->tasks[t].node = UINT32_MAX - c->tasks[t].node;
	c->info.nnodes = nn;
	c->info.ncpus = cpu;
	return DW_OK;
}

/* The bytes of each thread's "cpu:1:task:thread:" and of the header. */
static uint64_t
shape_bytes(cut_writer *c)
{
	uint64_t h = 64 + digits(c->info.duration);

	for (size_t i = 0; i < c->info.nthreads; i++)
		c->pre[i] = digits(c->threads[i].cpu + 1) + 3 +
		            digits(c->threads[i].task + 1) + 1 +
		            digits(c->threads[i].num + 1) + 1;
	for (size_t n = 0; n < c->info.nnodes; n++)
		h += digits(c->nodes[n].ncpus) + 1;
	for (size_t t = 0; t < c->info.ntasks; t++)
		h += digits(c->tasks[t].nthreads) +
		     digits(c->tasks[t].node + 1) + 2;
	return h;
}

static dw_err
cut_begin(mg_writer *w, const mg_info *in)
{
	cut_writer *c = (cut_writer *)w;
	dw_err err;

	c->from = c->o.from;
	c->to = c->o.to && c->o.to < in->duration ? c->o.to : in->duration;
	if (c->from >= c->to && in->duration) {
		snprintf(c->base.err, sizeof c->base.err,
		         "--from %.9g s is not before the end of the trace "
		         "(%.9g s): nothing to keep",
		         (double)c->from / 1e9, (double)c->to / 1e9);
		return DW_EINVAL;
	}
	c->rep->from = c->from;
	c->rep->to = c->to;
	c->nold = in->nthreads;
	c->tmap = calloc(in->nthreads + 1, sizeof *c->tmap);
	c->threads = calloc(in->nthreads + 1, sizeof *c->threads);
	c->tasks = calloc(in->ntasks + 1, sizeof *c->tasks);
	c->nodes = calloc(in->nnodes + 1, sizeof *c->nodes);
	c->pre = calloc(in->nthreads + 1, sizeof *c->pre);
	if (!c->tmap || !c->threads || !c->tasks || !c->nodes || !c->pre)
		return DW_ENOMEM;
	if ((err = check_tasks(c, in)) != DW_OK ||
	    (err = shape_threads(c, in)) != DW_OK ||
	    (err = shape_nodes(c, in)) != DW_OK)
		return err;
	c->info = (mg_info){
	    .duration = c->to - c->from,
	    .start_real_ns = in->start_real_ns + (int64_t)c->from,
	    .program = in->program,
	    .nodes = c->nodes,
	    .nnodes = c->info.nnodes,
	    .tasks = c->tasks,
	    .ntasks = c->info.ntasks,
	    .threads = c->threads,
	    .nthreads = c->info.nthreads,
	    .ncpus = c->info.ncpus,
	    .labels = in->labels,
	    .func_name = in->func_name,
	    .func_ctx = in->func_ctx,
	};
	c->rep->prv_bytes = shape_bytes(c);
	if (!c->inner)
		return DW_OK;
	err = c->inner->ops->begin(c->inner, &c->info);
	if (err != DW_OK)
		snprintf(c->base.err, sizeof c->base.err, "%s", c->inner->err);
	return err;
}

/* ---- Records --------------------------------------------------------------
 */

/* The bytes of r (already cut) in a .prv. */
static uint64_t
rec_bytes(const cut_writer *c, const mg_rec *r)
{
	uint64_t n = 2 + c->pre[r->thread] + digits(r->time) + 1;

	if (r->kind == MG_STATE)
		return n + digits(r->u.state.end) + 1 +
		       digits(r->u.state.state);
	if (r->kind == MG_EVENT) {
		for (uint32_t i = 0; i < r->u.event.n; i++)
			n += digits(r->u.event.pairs[i].type) + 1 +
			     digits(r->u.event.pairs[i].value) + 1;
		return n - 1;
	}
	return n + digits(r->u.comm.phy_send) + 1 +
	       c->pre[r->u.comm.recv_thread] + digits(r->u.comm.log_recv) + 1 +
	       digits(r->u.comm.phy_recv) + 1 + digits(r->u.comm.size) + 1 +
	       digits(r->u.comm.tag);
}

/* r cut into o; false when it is left out (and counted). */
static bool
cut_rec(cut_writer *c, const mg_rec *r, mg_rec *o)
{
	uint32_t th = r->thread < c->nold ? c->tmap[r->thread] : UINT32_MAX;

	*o = *r;
	o->thread = th;
	if (r->kind == MG_STATE) {
		uint64_t b = r->time > c->from ? r->time : c->from;
		uint64_t e = r->u.state.end < c->to ? r->u.state.end : c->to;

		if (th == UINT32_MAX || b >= e) {
			c->rep->states_out++;
			return false;
		}
		c->rep->states_clipped += b != r->time || e != r->u.state.end;
		o->time = b - c->from;
		o->u.state.end = e - c->from;
		return true;
	}
	if (r->kind == MG_EVENT) {
		if (th == UINT32_MAX || r->time < c->from || r->time > c->to) {
			c->rep->events_out++;
			return false;
		}
		o->time = r->time - c->from;
		return true;
	}
	o->u.comm.recv_thread = r->u.comm.recv_thread < c->nold
	                            ? c->tmap[r->u.comm.recv_thread]
	                            : UINT32_MAX;
	if (th == UINT32_MAX || o->u.comm.recv_thread == UINT32_MAX ||
	    r->time < c->from || r->u.comm.phy_send < c->from ||
	    r->u.comm.log_recv > c->to || r->u.comm.phy_recv > c->to ||
	    r->u.comm.phy_send > c->to || r->u.comm.log_recv < c->from) {
		c->rep->comms_cut++;
		return false;
	}
	o->time -= c->from;
	o->u.comm.phy_send -= c->from;
	o->u.comm.log_recv -= c->from;
	o->u.comm.phy_recv -= c->from;
	return true;
}

static dw_err
cut_record(mg_writer *w, const mg_rec *r)
{
	cut_writer *c = (cut_writer *)w;
	mg_rec o;
	dw_err err;

	if (c->stopped || !cut_rec(c, r, &o))
		return DW_OK;
	c->rep->prv_bytes += rec_bytes(c, &o) + 1;
	if (c->o.max_bytes && c->rep->prv_bytes > c->o.max_bytes) {
		c->stopped = c->rep->cap_reached = true;
		c->rep->cap_to = r->time > c->from ? r->time : c->from + 1;
		return DW_OK;
	}
	if (!c->inner)
		return DW_OK;
	err = c->inner->ops->record(c->inner, &o);
	if (err != DW_OK)
		snprintf(c->base.err, sizeof c->base.err, "%s", c->inner->err);
	return err;
}

static dw_err
cut_end(mg_writer *w, const mg_info *in)
{
	cut_writer *c = (cut_writer *)w;
	dw_err err;

	(void)in;
	if (c->stopped || !c->inner)
		return DW_OK;
	c->info.labels = in->labels; /* complete now */
	err = c->inner->ops->end(c->inner, &c->info);
	if (err != DW_OK)
		snprintf(c->base.err, sizeof c->base.err, "%s", c->inner->err);
	return err;
}

static void
cut_free(mg_writer *w)
{
	cut_writer *c = (cut_writer *)w;

	mg_writer_free(c->inner);
	free(c->ranges);
	free(c->tmap);
	free(c->threads);
	free(c->tasks);
	free(c->nodes);
	free(c->pre);
	free(c);
}

static const mg_writer_ops cut_ops = {
    .name = "cut",
    .begin = cut_begin,
    .record = cut_record,
    .end = cut_end,
    .free = cut_free,
};

dw_err
cut_writer_new(const cut_opts *o, mg_writer *inner, cut_report *rep,
               mg_writer **out)
{
	cut_writer *c = calloc(1, sizeof *c);

	*out = NULL;
	if (!c || (o->tasks &&
	           !(c->ranges = calloc(o->ntasks + 1, sizeof *c->ranges)))) {
		free(c);
		mg_writer_free(inner);
		return DW_ENOMEM;
	}
	c->base.ops = &cut_ops;
	c->o = *o;
	if (o->tasks)
		memcpy(c->ranges, o->tasks, o->ntasks * sizeof *c->ranges);
	c->inner = inner;
	c->rep = rep;
	memset(rep, 0, sizeof *rep);
	*out = &c->base;
	return DW_OK;
}

dw_err
cut_run(const cut_opts *o, cut_source source, cut_make make, void *ctx,
        rd_errlist *errs, cut_report *rep, mg_writer **w_out)
{
	cut_opts o2 = *o;
	rd_errlist quiet;
	mg_writer *inner, *w;
	dw_err err;

	*w_out = NULL;
	if ((err = make(ctx, &inner)) != DW_OK ||
	    (err = cut_writer_new(o, inner, rep, &w)) != DW_OK)
		return err;
	err = source(ctx, w, errs);
	if (err != DW_OK || !rep->cap_reached) {
		*w_out = w;
		return err;
	}
	/* Again, the window ending where the cap was; no second report. */
	mg_writer_free(w);
	o2.to = rep->cap_to;
	o2.max_bytes = 0;
	if ((err = make(ctx, &inner)) != DW_OK ||
	    (err = cut_writer_new(&o2, inner, rep, &w)) != DW_OK)
		return err;
	rd_errlist_init(&quiet, NULL);
	err = source(ctx, w, &quiet);
	rd_errlist_free(&quiet);
	rep->cap_reached = true;
	rep->cap_to = o2.to;
	*w_out = w;
	return err;
}
