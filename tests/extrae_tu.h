/*
 * Helpers of the Extrae compatibility tests: a whole trace directory read
 * into memory with the reader (src/tracefile/reader.h), and lookups in it.
 * Include after testutil.h.
 */
#ifndef DW_EXTRAE_TU_H
#define DW_EXTRAE_TU_H

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "tracefile/reader.h"

/* One record of a process, with the trace thread that wrote it. */
struct xt_rec {
	uint32_t thread;
	rd_rec r;
};

struct xt_proc {
	rd_header hdr;   /* of the process file */
	rd_proc *labels; /* NULL when the process file was missing */
	struct xt_rec *recs;
	size_t n, cap;
	uint32_t threads[16]; /* thread ids of its thread files */
	size_t nthreads;
	rd_calib calib; /* ticks to CLOCK_MONOTONIC_RAW ns */
};

struct xt_trace {
	struct xt_proc *p;
	size_t n;
	size_t errors; /* problems the reader reported */
};

static inline void
xt_add_rec(struct xt_proc *p, uint32_t thread, const rd_rec *r)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 64;
		p->recs = realloc(p->recs, p->cap * sizeof *p->recs);
		REQUIRE(p->recs);
	}
	p->recs[p->n].thread = thread;
	p->recs[p->n++].r = *r;
}

static inline void
xt_read_thread(struct xt_proc *p, const char *path, rd_errlist *e)
{
	rd_thread *t;
	rd_rec r;
	if (rd_thread_open(path, e, &t) != DW_OK)
		return;
	uint32_t id = rd_thread_header(t)->thread;
	rd_calib_add_thread(&p->calib, t);
	if (p->nthreads < 16)
		p->threads[p->nthreads++] = id;
	while (rd_thread_next(t, &r))
		xt_add_rec(p, id, &r);
	rd_thread_close(t);
}

/* Reads every process of dir; the result is sorted by task. */
static inline struct xt_trace
xt_load(const char *dir)
{
	struct xt_trace tr = {0};
	rd_errlist e;
	rd_dir *d;
	rd_errlist_init(&e, stderr);
	if (rd_dir_open(dir, &e, &d) != DW_OK) {
		tr.errors = rd_errlist_count(&e) + 1;
		rd_errlist_free(&e);
		return tr;
	}
	tr.n = d->nprocs;
	tr.p = calloc(tr.n ? tr.n : 1, sizeof *tr.p);
	REQUIRE(tr.p);
	for (size_t i = 0; i < d->nprocs; i++) {
		struct xt_proc *p = &tr.p[i];
		p->hdr = d->procs[i].hdr;
		rd_calib_init(&p->calib, p->hdr.clock, p->hdr.ticks_per_s);
		if (d->procs[i].proc_path &&
		    rd_proc_open(d->procs[i].proc_path, &e, &p->labels) ==
		        DW_OK)
			rd_calib_add_proc(&p->calib, p->labels);
		for (size_t k = 0; k < d->procs[i].nthreads; k++)
			xt_read_thread(p, d->procs[i].thread_paths[k], &e);
	}
	tr.errors = rd_errlist_count(&e);
	rd_dir_close(d);
	rd_errlist_free(&e);
	return tr;
}

static inline void
xt_free(struct xt_trace *tr)
{
	for (size_t i = 0; i < tr->n; i++) {
		rd_proc_close(tr->p[i].labels);
		rd_calib_free(&tr->p[i].calib);
		free(tr->p[i].recs);
	}
	free(tr->p);
	memset(tr, 0, sizeof *tr);
}

/* A record's time on the host's CLOCK_MONOTONIC_RAW timeline. */
static inline int64_t
xt_ns(struct xt_proc *p, const rd_rec *r)
{
	return rd_calib_to_ns(&p->calib, r->ticks);
}

/* Number of EVENT records (type, value) of p. */
static inline size_t
xt_count_event(const struct xt_proc *p, uint32_t type, uint64_t value)
{
	size_t c = 0;
	for (size_t i = 0; i < p->n; i++)
		if (p->recs[i].r.kind == FMT_R_EVENT &&
		    p->recs[i].r.u.event.type == type &&
		    p->recs[i].r.u.event.value == value)
			c++;
	return c;
}

/* Index of the first record of kind at or after `from`, or -1. */
static inline long
xt_find_kind(const struct xt_proc *p, uint32_t kind, size_t from)
{
	for (size_t i = from; i < p->n; i++)
		if (p->recs[i].r.kind == kind)
			return (long)i;
	return -1;
}

/* Number of EVENT records of type (any value). */
static inline size_t
xt_count_type(const struct xt_proc *p, uint32_t type)
{
	size_t c = 0;
	for (size_t i = 0; i < p->n; i++)
		if (p->recs[i].r.kind == FMT_R_EVENT &&
		    p->recs[i].r.u.event.type == type)
			c++;
	return c;
}

static inline int
xt_streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

/* Captures what is written on stderr (xt_capture_begin) or stdout
 * (xt_capture_out_begin) until xt_capture_end (which returns it; free
 * it). */
struct xt_capture {
	int saved, fd;
	FILE *f;
};

static inline void
xt_capture_fd_begin(struct xt_capture *c, int fd)
{
	fflush(stdout);
	fflush(stderr);
	c->fd = fd;
	c->f = tmpfile();
	REQUIRE(c->f);
	c->saved = dup(fd);
	REQUIRE(c->saved >= 0 && dup2(fileno(c->f), fd) == fd);
}

static inline void
xt_capture_begin(struct xt_capture *c)
{
	xt_capture_fd_begin(c, 2);
}

static inline void
xt_capture_out_begin(struct xt_capture *c)
{
	xt_capture_fd_begin(c, 1);
}

static inline char *
xt_capture_end(struct xt_capture *c)
{
	fflush(stdout);
	fflush(stderr);
	dup2(c->saved, c->fd);
	close(c->saved);
	struct stat st;
	long n = fstat(fileno(c->f), &st) == 0 ? (long)st.st_size : 0;
	char *s = calloc(1, n > 0 ? (size_t)n + 1 : 1);
	REQUIRE(s);
	rewind(c->f);
	if (n > 0 && fread(s, 1, (size_t)n, c->f) != (size_t)n)
		s[0] = 0;
	fclose(c->f);
	fputs(s, stderr); /* still shown in the test log */
	return s;
}

/* Number of times needle occurs in hay. */
static inline size_t
xt_count_str(const char *hay, const char *needle)
{
	size_t c = 0;
	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		c++;
	return c;
}

/* Runs /proc/self/exe with args (NULL-terminated, args[0] first) in the
 * environment envp (NULL: inherited) and returns its exit status, or -1. */
static inline int
xt_run_self(char *const args[], char *const envp[])
{
	extern char **environ;
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		execve("/proc/self/exe", args, envp ? envp : environ);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

#endif
