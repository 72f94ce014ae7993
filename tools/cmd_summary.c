/*
 * dwork summary TRACE_DIR: per task useful time, calls served and idle
 * time of a traced dwork run, and the POP efficiency metrics
 * (docs/tracing.md), computed from the per-process files.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dwork/dwork.h>
#include <dwork/trace.h>

#include "merge/reader.h"
#include "merge/stats.h"
#include "tools/cmd.h"

#define SUM_TASKS_MAX 4096
#define SUM_DEPTH     64

struct task_sum {
	int seen;
	double useful, idle; /* seconds */
	uint64_t calls;
};

struct sum {
	struct task_sum *t;
	uint32_t ntasks;
	int64_t first, last; /* ns over all threads */
};

static void
sum_usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: dwork summary TRACE_DIR\n\n"
	    "Prints, for a traced dwork run, each task's useful time (Running "
	    "on\nexecutor threads and on the master's user threads), calls "
	    "served and\nidle time, and the POP metrics: load balance, "
	    "communication\nefficiency and parallel efficiency "
	    "(docs/tracing.md).\n\nexit: 0 ok, 1 damaged input (reported), 2 "
	    "usage, 3 nothing readable\n");
}

/* Which of a thread's states count: useful on executors and on the
 * master's user threads, idle on executors; I/O threads not at all
 * (the same rule as `dwork stats`). */
static void
sum_kind(const char *name, uint32_t task, int *useful, int *idle)
{
	enum st_role role = st_thread_role(name, task);

	*useful = role != ST_NOT_COUNTED;
	*idle = role == ST_EXECUTOR;
}

static void
sum_thread(rd_thread *t, rd_calib *cal, const char *name, struct sum *s)
{
	const rd_header *h = rd_thread_header(t);
	uint32_t stack[SUM_DEPTH];
	int depth = 0, useful, idle;
	sum_kind(name, h->task, &useful, &idle);
	struct task_sum *ts = &s->t[h->task];
	int64_t last = 0;
	rd_rec r;
	int any = 0;
	while (rd_thread_next(t, &r)) {
		int64_t now = rd_calib_to_ns(cal, r.ticks);
		if (!any++ && now < s->first)
			s->first = now;
		if (now > s->last)
			s->last = now;
		if (depth > 0) {
			double dt = (double)(now - last) * 1e-9;
			ts->useful +=
			    useful && stack[depth - 1] == DWT_STATE_RUNNING ? dt
			                                                    : 0;
			ts->idle +=
			    idle && stack[depth - 1] == DWT_STATE_IDLE ? dt : 0;
		}
		last = now;
		if (r.kind == FMT_R_STATE_PUSH && depth < SUM_DEPTH)
			stack[depth++] = r.u.state.state;
		else if (r.kind == FMT_R_STATE_POP && depth > 0)
			depth--;
		else if (r.kind == FMT_R_EVENT &&
		         r.u.event.type == DW_EV_FUNCTION && r.u.event.value)
			ts->calls++;
	}
	ts->seen = 1;
}

static void
sum_proc(const rd_dir_proc *dp, struct sum *s, rd_errlist *errs)
{
	rd_proc *p = NULL;
	if (dp->proc_path)
		rd_proc_open(dp->proc_path, errs, &p);
	const rd_header *h = p ? &p->hdr : &dp->hdr;
	if (h->task >= SUM_TASKS_MAX) {
		rd_proc_close(p);
		return;
	}
	if (h->task >= s->ntasks)
		s->ntasks = h->task + 1;
	rd_calib cal;
	rd_calib_init(&cal, h->clock, h->ticks_per_s);
	if (p)
		rd_calib_add_proc(&cal, p);
	for (size_t i = 0; i < dp->nthreads; i++) {
		rd_thread *t;
		if (rd_thread_open(dp->thread_paths[i], errs, &t) != DW_OK)
			continue;
		rd_calib_add_thread(&cal, t);
		const char *name =
		    p ? rd_proc_thread_name(p, rd_thread_header(t)->thread)
		      : NULL;
		sum_thread(t, &cal, name, s);
		rd_thread_close(t);
	}
	rd_calib_free(&cal);
	rd_proc_close(p);
}

static void
sum_print(const struct sum *s)
{
	double T = s->last > s->first ? (double)(s->last - s->first) * 1e-9 : 0;
	double *useful = calloc(s->ntasks + 1, sizeof *useful);
	uint32_t n = 0;
	st_pop pop;
	printf("summary: %u tasks over %.3f s\n", s->ntasks, T);
	printf("  task  useful (s)  calls served  idle (s)\n");
	for (uint32_t i = 0; i < s->ntasks; i++) {
		const struct task_sum *t = &s->t[i];
		if (!t->seen) {
			printf("  %4u  (no trace)\n", i);
			continue;
		}
		printf("  %4u  %10.3f  %12" PRIu64 "  %8.3f\n", i, t->useful,
		       t->calls, t->idle);
		if (useful)
			useful[n++] = t->useful;
	}
	st_pop_compute(useful, n, T, &pop);
	free(useful);
	if (!pop.valid)
		return;
	printf("  load balance %.2f = mean(useful) / max(useful)\n", pop.lb);
	printf("  communication efficiency %.2f = max(useful) / elapsed\n",
	       pop.comm);
	printf("  parallel efficiency %.2f = load balance x communication "
	       "efficiency\n",
	       pop.pe);
}

int
cmd_summary(int argc, char **argv)
{
	const char *dir = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			sum_usage(stdout);
			return CMD_OK;
		}
		if (argv[i][0] == '-' || dir) {
			fprintf(stderr,
			        "dwork summary: unexpected argument '%s'\n",
			        argv[i]);
			sum_usage(stderr);
			return CMD_USAGE;
		}
		dir = argv[i];
	}
	if (!dir) {
		sum_usage(stderr);
		return CMD_USAGE;
	}
	rd_errlist errs;
	rd_errlist_init(&errs, stderr);
	rd_dir *d;
	if (rd_dir_open(dir, &errs, &d) != DW_OK) {
		rd_errlist_free(&errs);
		return CMD_FAILED;
	}
	struct sum s = {.t = calloc(SUM_TASKS_MAX, sizeof *s.t),
	                .first = INT64_MAX};
	if (!s.t)
		return CMD_FAILED;
	for (size_t i = 0; i < d->nprocs; i++)
		sum_proc(&d->procs[i], &s, &errs);
	sum_print(&s);
	int rc = rd_errlist_count(&errs) ? CMD_DAMAGED : CMD_OK;
	free(s.t);
	rd_dir_close(d);
	rd_errlist_free(&errs);
	return rc;
}
