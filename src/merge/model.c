/*
 * The trace's processes and streams, from the directory listing; then
 * its shape for the writers: tasks, threads, nodes and CPUs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "merge/mg_int.h"

/* ---- Processes and streams ------------------------------------------- */

static void
proc_end(mg_proc *p)
{
	p->ended = rd_header_ended(&p->hdr);
	p->end_ticks = p->hdr.end_ticks;
	if (p->labels && p->labels->has_end)
		p->end_ticks = p->labels->end.ticks;
	if (!p->end_ticks)
		p->ended = false;
}

static dw_err
proc_load(mg_ctx *c, const rd_dir_proc *dp, mg_proc *p)
{
	dw_err err = DW_OK;

	p->dp = dp;
	p->name = dp->proc_path ? dp->proc_path : dp->thread_paths[0];
	if (dp->proc_path &&
	    rd_proc_open(dp->proc_path, c->errs, &p->labels) == DW_ENOMEM)
		return DW_ENOMEM;
	p->hdr = p->labels ? p->labels->hdr : dp->hdr;
	p->task = p->hdr.task;
	if (p->task >= MG_TASK_MAX) {
		rd_problem(
		    c->errs,
		    "%s: task id %u is over the limit (%u); process left "
		    "out",
		    p->name, p->task, MG_TASK_MAX - 1);
		p->skip = true;
	}
	mg_clock_init(&p->clk, p->hdr.clock, p->hdr.ticks_per_s);
	if (p->labels)
		err = rd_calib_add_proc(&p->clk.calib, p->labels);
	proc_end(p);
	return err;
}

static void
stream_load(mg_ctx *c, mg_proc *p, size_t i, mg_stream *s)
{
	s->proc = p;
	s->path = p->dp->thread_paths[i];
	s->tid = p->dp->thread_ids[i];
	s->skip = p->skip;
	s->shown = MG_NONE;
	if (s->tid >= MG_THREAD_MAX) {
		rd_problem(c->errs,
		           "%s: thread id %u is over the limit (%u); file left "
		           "out",
		           s->path, s->tid, MG_THREAD_MAX - 1);
		s->skip = true;
	}
}

dw_err
model_load(mg_ctx *c)
{
	size_t n = 0;
	dw_err err = rd_dir_open(c->o->dir, c->errs, &c->dir);

	if (err != DW_OK)
		return err;
	for (size_t i = 0; i < c->dir->nprocs; i++)
		n += c->dir->procs[i].nthreads;
	c->procs = calloc(c->dir->nprocs, sizeof *c->procs);
	c->streams = calloc(n ? n : 1, sizeof *c->streams);
	if (!c->procs || !c->streams)
		return DW_ENOMEM;
	for (size_t i = 0; err == DW_OK && i < c->dir->nprocs; i++) {
		mg_proc *p = &c->procs[c->nprocs++];

		err = proc_load(c, &c->dir->procs[i], p);
		for (size_t j = 0; err == DW_OK && j < p->dp->nthreads; j++)
			stream_load(c, p, j, &c->streams[c->nstreams++]);
	}
	return err;
}

void
model_free(mg_ctx *c)
{
	for (size_t i = 0; i < c->nstreams; i++) {
		mg_stream *s = &c->streams[i];

		stream_close(s);
		free(s->floors);
	}
	causal_free(c);
	for (size_t i = 0; i < c->nprocs; i++) {
		rd_proc_close(c->procs[i].labels);
		mg_clock_free(&c->procs[i].clk);
		free(c->procs[i].syncs);
	}
	for (size_t i = 0; i < c->nstrs; i++)
		free(c->strs[i]);
	free(c->strs);
	free(c->streams);
	free(c->procs);
	free(c->nodes);
	free(c->tasks);
	free(c->threads);
	rd_dir_close(c->dir);
}

/* ---- Shape ------------------------------------------------------------ */

char *
model_strdup(mg_ctx *c, const char *s)
{
	char *d;

	if (c->nstrs == c->capstrs) {
		size_t cap = c->capstrs ? c->capstrs * 2 : 64;
		char **v = realloc(c->strs, cap * sizeof *v);

		if (!v)
			return NULL;
		c->strs = v;
		c->capstrs = cap;
	}
	d = strdup(s);
	if (d)
		c->strs[c->nstrs++] = d;
	return d;
}

static const char *
host_name(const mg_proc *p)
{
	return p->hdr.host[0] ? p->hdr.host : "unknown-host";
}

/* Threads of each process: the highest thread id of its streams + 1. */
static void
shape_spans(mg_ctx *c)
{
	for (size_t i = 0; i < c->nstreams; i++) {
		mg_stream *s = &c->streams[i];

		if (!s->skip && s->tid + 1 > s->proc->thread_span)
			s->proc->thread_span = s->tid + 1;
	}
}

static uint32_t
shape_ntasks(const mg_ctx *c)
{
	uint32_t n = 0;

	for (size_t i = 0; i < c->nprocs; i++)
		if (!c->procs[i].skip && c->procs[i].task + 1 > n)
			n = c->procs[i].task + 1;
	return n;
}

/* Processes of one task share it: their threads come one after another. */
static uint32_t
shape_task_threads(mg_ctx *c, uint32_t task, uint32_t *nprocs)
{
	uint32_t base = 0;

	*nprocs = 0;
	for (size_t i = 0; i < c->nprocs; i++) {
		mg_proc *p = &c->procs[i];

		if (p->skip || p->task != task)
			continue;
		p->thread_base = base;
		base += p->thread_span;
		(*nprocs)++;
	}
	if (*nprocs > 1)
		rd_problem(c->errs,
		           "task %u: %u processes traced as this task; their "
		           "threads are numbered one after the other",
		           task, *nprocs);
	return base;
}

static mg_proc *
task_proc(mg_ctx *c, uint32_t task)
{
	for (size_t i = 0; i < c->nprocs; i++)
		if (!c->procs[i].skip && c->procs[i].task == task)
			return &c->procs[i];
	return NULL;
}

static uint32_t
node_of(mg_ctx *c, const char *host)
{
	for (size_t i = 0; i < c->nnodes; i++)
		if (!strcmp(c->nodes[i].name, host))
			return (uint32_t)i;
	c->nodes[c->nnodes].name = host;
	return (uint32_t)c->nnodes++;
}

static bool
task_traced(const mg_ctx *c, uint32_t task)
{
	for (size_t i = 0; i < c->nstreams; i++) {
		const mg_stream *s = &c->streams[i];

		if (!s->skip && s->nrec && s->proc->task == task)
			return true;
	}
	return false;
}

/* The process's own name ("master", "worker 3"), NULL when it gave none. */
static const char *
proc_name(const mg_proc *p)
{
	return p && p->labels && p->labels->pname && p->labels->pname[0]
	           ? p->labels->pname
	           : NULL;
}

/* Tasks and threads are named as Paraver numbers them, from 1; a dwork
 * process by its name instead ("worker 3" is task 3). */
static dw_err
shape_task_name(mg_ctx *c, uint32_t t, const mg_proc *p, uint32_t nprocs)
{
	char buf[256], who[96];
	const char *pn = proc_name(p);

	if (pn)
		snprintf(who, sizeof who, "%.90s", pn);
	else
		snprintf(who, sizeof who, "task %u", t + 1);
	if (!p)
		snprintf(buf, sizeof buf, "%s (not traced)", who);
	else if (nprocs > 1)
		snprintf(buf, sizeof buf, "%s (pid %u and %u more on %s)", who,
		         p->hdr.pid, nprocs - 1, host_name(p));
	else
		snprintf(buf, sizeof buf, "%s (pid %u on %s)", who, p->hdr.pid,
		         host_name(p));
	c->tasks[t].name = model_strdup(c, buf);
	return c->tasks[t].name ? DW_OK : DW_ENOMEM;
}

static dw_err
shape_tasks(mg_ctx *c)
{
	uint32_t first = 0, nprocs;
	dw_err err = DW_OK;

	c->ntasks = shape_ntasks(c);
	c->tasks = calloc(c->ntasks ? c->ntasks : 1, sizeof *c->tasks);
	c->nodes = calloc(c->ntasks ? c->ntasks : 1, sizeof *c->nodes);
	if (!c->tasks || !c->nodes)
		return DW_ENOMEM;
	for (uint32_t t = 0; err == DW_OK && t < c->ntasks; t++) {
		mg_task *k = &c->tasks[t];
		mg_proc *p = task_proc(c, t);

		k->nthreads = shape_task_threads(c, t, &nprocs);
		k->traced = task_traced(c, t);
		if (!k->nthreads)
			k->nthreads = 1;
		k->first_thread = first;
		first += k->nthreads;
		k->node = p ? node_of(c, host_name(p)) : MG_NONE;
		err = shape_task_name(c, t, p, nprocs);
	}
	c->nthreads = first;
	for (uint32_t t = 0; t < c->ntasks; t++)
		if (c->tasks[t].node == MG_NONE)
			c->tasks[t].node = 0;
	if (!c->nnodes)
		c->nodes[c->nnodes++].name = "unknown-host";
	return err;
}

/* The process (and its thread id) that owns thread k of task t. */
static mg_proc *
thread_owner(mg_ctx *c, uint32_t t, uint32_t k, uint32_t *tid)
{
	for (size_t i = 0; i < c->nprocs; i++) {
		mg_proc *p = &c->procs[i];

		if (p->skip || p->task != t || k < p->thread_base ||
		    k >= p->thread_base + p->thread_span)
			continue;
		*tid = k - p->thread_base;
		return p;
	}
	*tid = k;
	return NULL;
}

/*
 * A dwork process's thread: "worker 3 executor 1" (its process's name,
 * then its label; a label that already starts with the process's name,
 * as the master's "master", stands alone; unlabelled: "worker 3 thread
 * 4").  Any other: "task 2 thread 1 (label)".  Numbers from 1.
 */
static dw_err
shape_thread_name(mg_ctx *c, mg_thread *th, uint32_t nprocs)
{
	uint32_t tid;
	mg_proc *p = thread_owner(c, th->task, th->num, &tid);
	const char *label =
	    p && p->labels ? rd_proc_thread_name(p->labels, tid) : NULL;
	const char *pn = proc_name(p);
	char buf[256], pid[32] = "";

	if (p && nprocs > 1)
		snprintf(pid, sizeof pid, " pid %u", p->hdr.pid);
	if (pn && label && !strncmp(label, pn, strlen(pn)))
		snprintf(buf, sizeof buf, "%.200s%s", label, pid);
	else if (pn && label)
		snprintf(buf, sizeof buf, "%.90s %.100s%s", pn, label, pid);
	else if (pn)
		snprintf(buf, sizeof buf, "%.90s thread %u%s", pn, th->num + 1,
		         pid);
	else if (label)
		snprintf(buf, sizeof buf, "task %u thread %u%s (%.180s)",
		         th->task + 1, th->num + 1, pid, label);
	else
		snprintf(buf, sizeof buf, "task %u thread %u%s", th->task + 1,
		         th->num + 1, pid);
	th->name = model_strdup(c, buf);
	return th->name ? DW_OK : DW_ENOMEM;
}

static uint32_t
task_nprocs(const mg_ctx *c, uint32_t t)
{
	uint32_t n = 0;

	for (size_t i = 0; i < c->nprocs; i++)
		n += !c->procs[i].skip && c->procs[i].task == t;
	return n;
}

static dw_err
shape_threads(mg_ctx *c)
{
	dw_err err = DW_OK;

	c->threads = calloc(c->nthreads ? c->nthreads : 1, sizeof *c->threads);
	if (!c->threads)
		return DW_ENOMEM;
	for (uint32_t t = 0; err == DW_OK && t < c->ntasks; t++) {
		const mg_task *k = &c->tasks[t];
		uint32_t nprocs = task_nprocs(c, t);

		for (uint32_t i = 0; err == DW_OK && i < k->nthreads; i++) {
			mg_thread *th = &c->threads[k->first_thread + i];

			th->task = t;
			th->num = i;
			err = shape_thread_name(c, th, nprocs);
		}
	}
	for (size_t i = 0; i < c->nstreams; i++) {
		mg_stream *s = &c->streams[i];

		if (!s->skip)
			s->gthread = c->tasks[s->proc->task].first_thread +
			             s->proc->thread_base + s->tid;
	}
	return err;
}

/* One CPU per thread, numbered node by node. */
static void
shape_cpus(mg_ctx *c)
{
	uint32_t cpu = 0;

	for (size_t t = 0; t < c->ntasks; t++)
		c->nodes[c->tasks[t].node].ncpus += c->tasks[t].nthreads;
	for (size_t n = 0; n < c->nnodes; n++) {
		c->nodes[n].first_cpu = cpu;
		cpu += c->nodes[n].ncpus;
		c->nodes[n].ncpus = 0; /* counted again below */
	}
	c->ncpus = cpu;
	for (size_t i = 0; i < c->nthreads; i++) {
		mg_node *n = &c->nodes[c->tasks[c->threads[i].task].node];

		c->threads[i].cpu = n->first_cpu + n->ncpus++;
	}
}

static void
shape_info(mg_ctx *c)
{
	mg_info *f = &c->info;
	int64_t real = 0;
	const mg_proc *first = NULL;

	for (size_t i = 0; i < c->nprocs; i++) {
		const mg_proc *p = &c->procs[i];

		if (p->skip)
			continue;
		if (!first)
			first = p;
		if (p->hdr.init_real_ns &&
		    (!real || (int64_t)p->hdr.init_real_ns < real))
			real = (int64_t)p->hdr.init_real_ns;
	}
	f->duration = c->duration;
	f->start_real_ns = real;
	f->program =
	    first && first->hdr.program[0] ? first->hdr.program : "program";
	f->nodes = c->nodes, f->nnodes = c->nnodes;
	f->tasks = c->tasks, f->ntasks = c->ntasks;
	f->threads = c->threads, f->nthreads = c->nthreads;
	f->ncpus = c->ncpus;
	f->labels = &c->names.labels;
	f->func_name = names_func_name;
	f->func_ctx = &c->names;
}

dw_err
model_shape(mg_ctx *c)
{
	dw_err err;

	shape_spans(c);
	err = shape_tasks(c);
	if (err == DW_OK)
		err = shape_threads(c);
	if (err != DW_OK)
		return err;
	shape_cpus(c);
	shape_info(c);
	return DW_OK;
}
