/*
 * The first pass: each thread file read once, on its own, for what the
 * merge needs before it starts: the calibration pairs of its segments,
 * the sync records of its process, its first and last record and its
 * record count.  Every damaged part of the input is reported here (the
 * merge pass reads the same files without a list and skips the same
 * parts).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
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

/* One scanning thread's share: processes p0 .. p1-1, from stream k0. */
typedef struct scan_job {
	mg_ctx *c;
	rd_errlist *errs; /* where its problems go */
	mg_xsink *xs;     /* ... and its message parts */
	size_t p0, p1, k0;
	bool progress; /* the merge's thread: it shows the progress line */
	uint64_t done; /* records read */
	dw_err err;
} scan_job;

/* The scan's work on a record it needs; index: its number in the
 * stream. */
static dw_err
scan_one(scan_job *j, mg_stream *s, const rd_rec *r, uint64_t index)
{
	int cls;

	if (r->kind == FMT_R_SYNC)
		return sync_add(s->proc, r);
	if (r->kind == FMT_R_EVENT && r->u.event.value &&
	    (cls = dense_class(r->u.event.type)) >= 0)
		return dense_seen(s->proc, cls, r->u.event.value);
	if (r->kind == FMT_R_COMM)
		return causal_note(j->c, j->xs, s, r, index);
	return DW_OK;
}

#define SCAN_BATCH 64 /* records the reader's skim returns at a time */

/*
 * The records of one stream.  The scan needs few of them (COMM, SYNC,
 * THREAD_END, events of the dense types with a value): the reader's
 * skim passes over the others, only counted (rd_thread_skim: a fifth
 * of decoding them on the benchmark's trace).  The first record is
 * read in full, for its time.
 */
static dw_err
scan_records(scan_job *j, mg_stream *s, rd_thread *t)
{
	rd_skim sk = {.ev_lo = MG_DENSE_LO, .ev_span = MG_DENSE_SPAN};
	rd_rec v[SCAN_BATCH];
	uint32_t at[SCAN_BATCH];
	uint64_t n = 0, shown = 0;
	dw_err err = DW_OK;
	size_t k;

	if (rd_thread_next(t, &v[0])) {
		s->first_ticks = s->last_ticks = v[0].ticks;
		s->thread_end = v[0].kind == FMT_R_THREAD_END;
		err = scan_one(j, s, &v[0], n++);
	}
	while (err == DW_OK && n) {
		k = rd_thread_skim(t, &sk, v, at, SCAN_BATCH);
		if (!sk.count)
			break;
		for (size_t i = 0; err == DW_OK && i < k; i++)
			err = scan_one(j, s, &v[i], n + at[i]);
		s->last_ticks = sk.last;
		s->thread_end = k && at[k - 1] + 1 == sk.count &&
		                v[k - 1].kind == FMT_R_THREAD_END;
		n += sk.count;
		if ((n ^ shown) >> 16 && j->progress) {
			shown = n;
			mg_progress_update(&j->c->prog, j->done + n);
		}
	}
	s->nrec = n;
	j->done += n;
	return err;
}

static dw_err
scan_stream(scan_job *j, mg_stream *s)
{
	rd_thread *t;
	dw_err err = rd_thread_open(s->path, j->errs, &t);

	if (err == DW_ENOMEM)
		return err;
	if (err != DW_OK) { /* reported by the reader */
		s->skip = true;
		return DW_OK;
	}
	if (rd_thread_header(t)->task != s->proc->task) {
		rd_problem(j->errs,
		           "%s: its header says task %u, its process is task "
		           "%u; file left out",
		           s->path, rd_thread_header(t)->task, s->proc->task);
		s->skip = true;
		rd_thread_close(t);
		return DW_OK;
	}
	err = rd_calib_add_thread(&s->proc->clk.calib, t);
	if (err == DW_OK)
		err = scan_records(j, s, t);
	rd_thread_close(t);
	return err;
}

/* The streams of process i start at k: where the next process's do. */
static size_t
proc_streams_end(const mg_ctx *c, size_t i, size_t k)
{
	while (k < c->nstreams && c->streams[k].proc == &c->procs[i])
		k++;
	return k;
}

static void
scan_procs(scan_job *j)
{
	mg_ctx *c = j->c;
	size_t k = j->k0;

	j->err = DW_OK;
	for (size_t i = j->p0; j->err == DW_OK && i < j->p1; i++) {
		mg_proc *p = &c->procs[i];
		size_t end = proc_streams_end(c, i, k);

		for (; j->err == DW_OK && k < end; k++)
			if (!c->streams[k].skip)
				j->err = scan_stream(j, &c->streams[k]);
		if (j->err == DW_OK && !p->skip)
			rd_calib_finish(&p->clk.calib, p->name, j->errs);
	}
}

/* ---- Two scanning threads ------------------------------------------------
 *
 * With two threads the processes are split in two halves of about as
 * many bytes; the second thread scans the second half.  What it finds
 * is what one thread finds, in the same order: its problems are held
 * (RD_ERRS_MAX at most: then it waits for the first half to be done)
 * and added after the first half's, and its message parts appended
 * after the first half's, with the limit's report placed among its
 * problems where one thread would have made it (xsink_flush).  Every
 * process's state is touched by one thread only.
 */

typedef struct scan_par {
	rd_errlist held; /* first: hold() finds the rest from it */
	mg_ctx *c;
	mg_xsink xs;
	scan_job job;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool first_done; /* the first half is scanned */
	bool flushed;    /* held went to c->errs; the rest goes there too */
} scan_par;

static void
par_flush(scan_par *q)
{
	xsink_flush(&q->c->xs, &q->xs, q->c->errs ? &q->held : NULL);
	q->held.fwd = q->c->errs;
	q->flushed = true;
}

/* Before each problem of the second half: when the list is full, waits
 * for the first half and hands the list over. */
static void
par_hold(rd_errlist *errs)
{
	scan_par *q = (scan_par *)errs;

	if (q->flushed || errs->n + 1 < RD_ERRS_MAX)
		return;
	pthread_mutex_lock(&q->mu);
	while (!q->first_done)
		pthread_cond_wait(&q->cv, &q->mu);
	pthread_mutex_unlock(&q->mu);
	par_flush(q);
}

static void *
par_main(void *arg)
{
	scan_job *j = arg;

	scan_procs(j);
	return NULL;
}

/* The first process of the second half: the halves' bytes as even as
 * the processes allow; 0 when there is no second half. */
static size_t
split_point(const mg_ctx *c, size_t *k0)
{
	uint64_t *bytes = calloc(c->nprocs ? c->nprocs : 1, sizeof *bytes);
	uint64_t total = 0, sum = 0;
	size_t k = 0, m = 0;
	struct stat st;

	if (!bytes || c->nprocs < 2) {
		free(bytes);
		return 0;
	}
	for (size_t i = 0; i < c->nprocs; i++) {
		size_t end = proc_streams_end(c, i, k);

		for (; k < end; k++)
			if (!stat(c->streams[k].path, &st))
				bytes[i] += (uint64_t)st.st_size;
		total += bytes[i];
	}
	k = 0;
	while (m + 1 < c->nprocs && 2 * (sum + bytes[m]) <= total + bytes[m]) {
		sum += bytes[m];
		k = proc_streams_end(c, m, k);
		m++;
	}
	free(bytes);
	*k0 = k;
	return m;
}

static dw_err
scan_two(mg_ctx *c, scan_job *first, size_t m, size_t k0)
{
	scan_par q;
	pthread_t thr;
	dw_err err;

	memset(&q, 0, sizeof q);
	rd_errlist_init(&q.held, NULL);
	q.held.hold = par_hold;
	q.c = c;
	xsink_init(&q.xs, c->errs ? &q.held : NULL, true);
	q.job = (scan_job){.c = c,
	                   .errs = c->errs ? &q.held : NULL,
	                   .xs = &q.xs,
	                   .p0 = m,
	                   .p1 = c->nprocs,
	                   .k0 = k0};
	pthread_mutex_init(&q.mu, NULL);
	pthread_cond_init(&q.cv, NULL);
	first->p1 = m;
	if (pthread_create(&thr, NULL, par_main, &q.job)) {
		first->p1 = c->nprocs; /* one thread after all */
		scan_procs(first);
		err = first->err;
	} else {
		scan_procs(first);
		pthread_mutex_lock(&q.mu);
		q.first_done = true;
		pthread_cond_broadcast(&q.cv);
		pthread_mutex_unlock(&q.mu);
		pthread_join(thr, NULL);
		if (!q.flushed)
			par_flush(&q);
		err = first->err != DW_OK ? first->err : q.job.err;
		if (err == DW_OK)
			err = xsink_append(&c->xs, &q.xs);
		first->done += q.job.done;
	}
	xsink_free(&q.xs);
	rd_errlist_free(&q.held);
	pthread_mutex_destroy(&q.mu);
	pthread_cond_destroy(&q.cv);
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
	scan_job j = {.c = c,
	              .errs = c->errs,
	              .xs = &c->xs,
	              .p1 = c->nprocs,
	              .progress = true};
	size_t m = 0, k0 = 0;
	dw_err err;

	clocks_group(c);
	err = causal_begin(c);
	mg_progress_start(&c->prog, c->o->progress, "reading",
	                  scan_estimate(c));
	if (err == DW_OK && c->o->threads > 1)
		m = split_point(c, &k0);
	if (err == DW_OK && m) {
		err = scan_two(c, &j, m, k0);
	} else if (err == DW_OK) {
		scan_procs(&j);
		err = j.err;
	}
	c->done = j.done;
	c->rep.records_in = c->done;
	mg_progress_end(&c->prog);
	return err;
}
