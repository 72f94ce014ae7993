/*
 * The first pass: each thread file read once, on its own, for what the
 * merge needs before it starts: the calibration pairs of its segments,
 * the sync records of its process, its first and last record and its
 * record count.  Every damaged part of the input is reported here (the
 * merge pass reads the same files without a list and skips the same
 * parts).
 */
#include <stdlib.h>
#include <sys/stat.h>

#include "merge/mg_int.h"

static dw_err
sync_add(mg_proc *p, const rd_rec *r)
{
	if (r->u.sync.ref_task == p->task)
		return DW_OK; /* against itself: nothing to learn */
	if (p->nsyncs == p->capsyncs) {
		size_t cap = p->capsyncs ? p->capsyncs * 2 : 16;
		mg_sync *v = realloc(p->syncs, cap * sizeof *v);

		if (!v)
			return DW_ENOMEM;
		p->syncs = v;
		p->capsyncs = cap;
	}
	p->syncs[p->nsyncs++] = (mg_sync){
	    .local = r->u.sync.local_ns > INT64_MAX
	                 ? INT64_MAX
	                 : (int64_t)r->u.sync.local_ns,
	    .offset = r->u.sync.offset_ns,
	    .rtt = r->u.sync.rtt_ns,
	    .ref = r->u.sync.ref_task,
	};
	return DW_OK;
}

static dw_err
scan_records(mg_ctx *c, mg_stream *s, rd_thread *t)
{
	uint64_t n = 0;
	dw_err err = DW_OK;
	rd_rec r;
	int cls;

	while (err == DW_OK && rd_thread_next(t, &r)) {
		if (n == 0)
			s->first_ticks = r.ticks;
		s->last_ticks = r.ticks;
		s->thread_end = r.kind == FMT_R_THREAD_END;
		if (r.kind == FMT_R_SYNC)
			err = sync_add(s->proc, &r);
		else if (r.kind == FMT_R_EVENT && r.u.event.value &&
		         (cls = dense_class(r.u.event.type)) >= 0)
			err = dense_seen(s->proc, cls, r.u.event.value);
		else if (r.kind == FMT_R_COMM)
			err = causal_note(c, s, &r, n);
		if ((++n & 0xffff) == 0)
			mg_progress_update(&c->prog, c->done + n);
	}
	s->nrec = n;
	c->done += n;
	return err;
}

static dw_err
scan_stream(mg_ctx *c, mg_stream *s)
{
	rd_thread *t;
	dw_err err = rd_thread_open(s->path, c->errs, &t);

	if (err == DW_ENOMEM)
		return err;
	if (err != DW_OK) { /* reported by the reader */
		s->skip = true;
		return DW_OK;
	}
	if (rd_thread_header(t)->task != s->proc->task) {
		rd_problem(c->errs,
		           "%s: its header says task %u, its process is task "
		           "%u; file left out",
		           s->path, rd_thread_header(t)->task, s->proc->task);
		s->skip = true;
		rd_thread_close(t);
		return DW_OK;
	}
	err = rd_calib_add_thread(&s->proc->clk.calib, t);
	if (err == DW_OK)
		err = scan_records(c, s, t);
	rd_thread_close(t);
	return err;
}

/* About how many records the thread files hold (for the progress). */
static uint64_t
scan_estimate(const mg_ctx *c)
{
	uint64_t n = 0;
	struct stat st;

	for (size_t i = 0; i < c->nstreams; i++)
		if (!stat(c->streams[i].path, &st) &&
		    st.st_size > FMT_HEADER_PAGE)
			n += ((uint64_t)st.st_size - FMT_HEADER_PAGE) /
			     FMT_REC_SIZE;
	return n;
}

dw_err
scan_all(mg_ctx *c)
{
	dw_err err = DW_OK;
	size_t k = 0;

	clocks_group(c);
	mg_progress_start(&c->prog, c->o->progress, "reading",
	                  scan_estimate(c));
	c->done = 0;
	for (size_t i = 0; err == DW_OK && i < c->nprocs; i++) {
		mg_proc *p = &c->procs[i];

		for (;
		     err == DW_OK && k < c->nstreams && c->streams[k].proc == p;
		     k++)
			if (!c->streams[k].skip)
				err = scan_stream(c, &c->streams[k]);
		if (err == DW_OK && !p->skip)
			rd_calib_finish(&p->clk.calib, p->name, c->errs);
	}
	c->rep.records_in = c->done;
	mg_progress_end(&c->prog);
	return err;
}
