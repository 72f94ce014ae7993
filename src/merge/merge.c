/*
 * mg_merge: the merge's phases in order — list and scan the files,
 * correct the clocks, lay out the trace's shape and labels, run the
 * k-way merge through the writer.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "merge/mg_int.h"
#include "merge/pipe.h"

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Where each stream starts and ends on the reference timeline: from its
 * first record to its THREAD_END; without one (a thread alive at
 * dwt_fini, or killed with its process) to its process's end if that
 * was recorded, else to its last record. */
static void
stream_span(mg_stream *s)
{
	mg_proc *p = s->proc;
	mg_tconv tc;

	mg_tconv_init(&tc, &p->clk);
	s->first = mg_time(&tc, s->first_ticks);
	s->end = mg_time(&tc, s->last_ticks);
	if (!s->thread_end && p->ended && p->end_ticks > s->last_ticks) {
		int64_t e = mg_time(&tc, p->end_ticks);

		if (e > s->end)
			s->end = e;
	}
	if (s->nfloors && s->floors[s->nfloors - 1].t > s->end)
		s->end = s->floors[s->nfloors - 1].t; /* a moved receive */
}

static dw_err
stream_times(mg_ctx *c)
{
	bool any = false;
	int64_t last = 0;

	for (size_t i = 0; i < c->nstreams; i++) {
		mg_stream *s = &c->streams[i];

		if (s->skip || !s->nrec)
			continue;
		stream_span(s);
		if (!any || s->first < c->t0)
			c->t0 = s->first;
		if (!any || s->end > last)
			last = s->end;
		any = true;
	}
	if (!any) {
		rd_problem(c->errs,
		           "%s: no records in any thread file; nothing "
		           "to merge",
		           c->o->dir);
		return DW_EFORMAT;
	}
	c->duration = (uint64_t)last - (uint64_t)c->t0; /* no int64 overflow */
	return DW_OK;
}

static void
report_fill(mg_ctx *c, mg_report *rep, double start)
{
	c->rep.processes = 0;
	for (size_t i = 0; i < c->nprocs; i++)
		c->rep.processes += !c->procs[i].skip;
	c->rep.threads = (uint32_t)c->nthreads;
	c->rep.tasks = (uint32_t)c->ntasks;
	c->rep.nodes = (uint32_t)c->nnodes;
	c->rep.duration = c->duration;
	c->rep.seconds = now_s() - start;
	if (rep)
		*rep = c->rep;
}

/* The merge keeps two readers a stream open: 64 KiB windows each, less
 * when there are many streams (16 MiB in all). */
static void
window_size(const mg_ctx *c)
{
	size_t per = (16u << 20) / (2 * c->nstreams + 1);

	rd_set_window(per < 4096 ? 4096 : per > (64u << 10) ? 64u << 10 : per);
}

static dw_err
run(mg_ctx *c)
{
	dw_err err = model_load(c);

	if (err == DW_OK)
		err = scan_all(c);
	if (err == DW_OK)
		err = clocks_setup(c);
	if (err == DW_OK)
		err = causal_setup(c);
	if (err == DW_OK)
		err = stream_times(c);
	if (err == DW_OK)
		window_size(c);
	if (err == DW_OK)
		err = model_shape(c);
	if (err == DW_OK)
		err = names_build(c);
	if (err == DW_OK && c->o->threads > 1)
		(void)pipe_new(c, &c->pipe); /* without memory: one thread */
	if (err == DW_OK)
		err = c->w->ops->begin(c->w, &c->info);
	if (err == DW_OK && c->pipe)
		pipe_start(c->pipe); /* else its records go straight through */
	if (err == DW_OK)
		err = timeline_run(c);
	if (c->pipe) {
		dw_err perr = pipe_finish(c->pipe);

		err = err == DW_OK ? perr : err;
	}
	if (err == DW_OK)
		err = names_finish(c);
	if (err == DW_OK)
		err = c->w->ops->end(c->w, &c->info);
	return err;
}

dw_err
mg_merge(const mg_opts *o, mg_writer *w, rd_errlist *errs, mg_report *rep)
{
	mg_ctx c;
	double start = now_s();
	dw_err err;

	memset(&c, 0, sizeof c);
	c.o = o;
	c.errs = errs;
	c.w = w;
	oq_init(&c.q, o->window);
	comms_init(&c.cm);
	err = run(&c);
	pipe_free(c.pipe);
	rd_set_window(64u << 10);
	report_fill(&c, rep, start);
	oq_free(&c.q);
	comms_free(&c.cm);
	names_free(&c);
	model_free(&c);
	free(c.pairs);
	free(c.parts);
	return err;
}
