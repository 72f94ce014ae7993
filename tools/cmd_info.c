/* dwork info TRACE_DIR: what a trace directory holds. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tracefile/reader.h"
#include "tools/cmd.h"

struct counts {
	uint64_t n, events, states, funcs, comms, syncs;
	uint64_t first, last;
};

static void
info_usage(FILE *out)
{
	fprintf(out,
	        "usage: dwork info TRACE_DIR\n\n"
	        "Lists the processes and threads of a trace directory: task, "
	        "pid, host,\nwhether the process ended cleanly, and per thread "
	        "its records by kind,\ntime span and lost records.  Damaged "
	        "files are reported, one line a problem.\n\nexit: 0 ok, 1 "
	        "damaged input (reported), 2 usage, 3 nothing readable\n");
}

static void
info_count(rd_thread *t, struct counts *c)
{
	rd_rec r;
	memset(c, 0, sizeof *c);
	while (rd_thread_next(t, &r)) {
		if (c->n++ == 0)
			c->first = r.ticks;
		c->last = r.ticks;
		c->events += r.kind == FMT_R_EVENT;
		c->states += r.kind == FMT_R_STATE_PUSH;
		c->funcs += r.kind == FMT_R_FUNC_ENTER;
		c->comms += r.kind == FMT_R_COMM;
		c->syncs += r.kind == FMT_R_SYNC;
	}
}

static void
info_thread(const char *path, rd_proc *p, rd_calib *cal, rd_errlist *errs)
{
	rd_thread *t;
	if (rd_thread_open(path, errs, &t) != DW_OK)
		return;
	rd_calib_add_thread(cal, t);
	struct counts c;
	info_count(t, &c);
	const rd_header *h = rd_thread_header(t);
	const char *name = p ? rd_proc_thread_name(p, h->thread) : NULL;
	double span = c.n ? (double)(rd_calib_to_ns(cal, c.last) -
	                             rd_calib_to_ns(cal, c.first)) *
	                        1e-9
	                  : 0;
	printf("  thread %-3u %-16s %10" PRIu64 " records (%" PRIu64
	       " events, %" PRIu64 " states, %" PRIu64 " calls, %" PRIu64
	       " comms, %" PRIu64 " syncs) over %.6f s, lost %" PRIu64 "\n",
	       h->thread, name ? name : "-", c.n, c.events, c.states, c.funcs,
	       c.comms, c.syncs, span, h->lost_disk + h->lost_cap);
	rd_thread_close(t);
}

static void
info_proc(const rd_dir_proc *dp, rd_errlist *errs)
{
	rd_proc *p = NULL;
	if (dp->proc_path)
		rd_proc_open(dp->proc_path, errs, &p);
	const rd_header *h = p ? &p->hdr : &dp->hdr;
	printf("task %u of %u: %s pid %u on %s, %zu thread%s, %s\n", h->task,
	       h->ntasks, h->program, h->pid, h->host, dp->nthreads,
	       dp->nthreads == 1 ? "" : "s",
	       rd_header_ended(h) ? "ended cleanly"
	                          : "did not end (killed or still running)");
	rd_calib cal;
	rd_calib_init(&cal, h->clock, h->ticks_per_s);
	if (p)
		rd_calib_add_proc(&cal, p);
	for (size_t i = 0; i < dp->nthreads; i++)
		info_thread(dp->thread_paths[i], p, &cal, errs);
	rd_calib_free(&cal);
	rd_proc_close(p);
}

int
cmd_info(int argc, char **argv)
{
	static const cmd_opt opts[] = {{1, "--help", "-h", CMD_OPT_FLAG},
	                               {0, NULL, NULL, CMD_OPT_FLAG}};
	const char *dir = NULL;
	cmd_args a;
	int id;

	cmd_args_init(&a, argc, argv);
	while ((id = cmd_opt_next(&a, opts)) != CMD_OPT_END) {
		if (id == 1) {
			info_usage(stdout);
			return CMD_OK;
		}
		if (id != CMD_OPT_ARG || dir) {
			fprintf(stderr,
			        "dwork info: unexpected argument '%s'\n",
			        a.arg);
			info_usage(stderr);
			return CMD_USAGE;
		}
		dir = a.arg;
	}
	if (!dir) {
		info_usage(stderr);
		return CMD_USAGE;
	}
	rd_errlist errs;
	rd_errlist_init(&errs, stderr);
	rd_dir *d;
	if (rd_dir_open(dir, &errs, &d) != DW_OK) {
		rd_errlist_free(&errs);
		return CMD_FAILED;
	}
	printf("%s: %zu process%s\n", dir, d->nprocs,
	       d->nprocs == 1 ? "" : "es");
	for (size_t i = 0; i < d->nprocs; i++)
		info_proc(&d->procs[i], &errs);
	int rc = rd_errlist_count(&errs) ? CMD_DAMAGED : CMD_OK;
	rd_dir_close(d);
	rd_errlist_free(&errs);
	return rc;
}
