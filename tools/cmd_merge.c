/* dwork merge TRACE_DIR [-o PREFIX] [-f FORMATS]: the trace directory into
 * Paraver (and the other formats of output/writers.h). */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "merge/merge.h"
#include "output/writers.h"
#include "tools/cmd.h"

static void
merge_usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: dwork merge TRACE_DIR [-o PREFIX] [-f FORMATS] [--from T] "
	    "[--to T]\n"
	    "                   [--tasks LIST] [--max-bytes N] [-q]\n\n"
	    "Merges the per-thread files of a trace directory into one "
	    "Paraver trace:\nPREFIX.prv (records), PREFIX.pcf (labels) "
	    "and PREFIX.row (names).\nPREFIX defaults to TRACE_DIR without "
	    "its \".trace\" suffix.\n\n"
	    "  -o, --output PREFIX  where to write the trace\n"
	    "  -f, --format LIST    formats, comma-separated (default prv):\n"
	    "                       prv: PREFIX.prv, .pcf, .row (Paraver)\n"
	    "                       otf2: PREFIX-otf2/traces.otf2 (Vampir)\n"
	    "                       json: PREFIX.json (Perfetto, "
	    "chrome://tracing)\n"
	    "                       perfetto: PREFIX.pftrace (Perfetto's "
	    "protobuf)\n"
	    "                       html: PREFIX.html (timeline picture; "
	    "dwork view\n"
	    "                       has its options)\n"
	    "  --from T, --to T     keep only this window (T: 2.5s, 120ms, "
	    "40us, 300ns)\n"
	    "  --tasks LIST         keep only these tasks (dwork process ids "
	    "= Paraver\n"
	    "                       tasks: 1 the master, 3 worker 3; "
	    "1,3-5)\n"
	    "  --max-bytes N        end the window where the .prv would "
	    "pass N bytes\n"
	    "                       (500k, 20M, 1G)\n"
	    "  -q, --quiet          no progress line and no summary\n"
	    "  -h, --help           this text\n\n"
	    "Each problem with the input is printed on one line and what "
	    "is valid is\nmerged (docs/merge.md).\n\n"
	    "exit: 0 merged, 2 usage, 3 nothing could be merged or the "
	    "output could not\nbe written\n");
}

/* TRACE_DIR without trailing slashes and without ".trace"; for ".",
 * ".." or "/", the file "trace" in it. */
char *
merge_default_prefix(const char *dir)
{
	size_t n = strlen(dir), b;
	char *p;

	while (n > 1 && dir[n - 1] == '/')
		n--;
	for (b = n; b > 0 && dir[b - 1] != '/'; b--)
		;
	if ((n - b == 1 && dir[b] == '.') ||
	    (n - b == 2 && !strncmp(dir + b, "..", 2)) || n - b == 0) {
		if (asprintf(&p, "%.*s/trace", (int)n, dir) < 0)
			return NULL;
		return p;
	}
	if (n > 6 && !strncmp(dir + n - 6, ".trace", 6) && dir[n - 7] != '/')
		n -= 6;
	p = malloc(n + 1);
	if (p) {
		memcpy(p, dir, n);
		p[n] = '\0';
	}
	return p;
}

static bool
is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Each stream keeps two files open. */
static void
raise_fd_limit(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void
merge_summary(const char *out, const mg_report *r)
{
	printf("%s: %u task%s, %u thread%s on %u node%s, %llu records, "
	       "%.6f s of trace (merged in %.2f s)\n",
	       out, r->tasks, r->tasks == 1 ? "" : "s", r->threads,
	       r->threads == 1 ? "" : "s", r->nodes, r->nodes == 1 ? "" : "s",
	       (unsigned long long)r->records_in, (double)r->duration * 1e-9,
	       r->seconds);
	if (r->comms || r->unmatched_sends || r->unmatched_recvs)
		printf("  %llu communications; %llu sends and %llu receives "
		       "unmatched\n",
		       (unsigned long long)r->comms,
		       (unsigned long long)r->unmatched_sends,
		       (unsigned long long)r->unmatched_recvs);
	if (r->recv_moved)
		printf(
		    "  %llu receives moved to just after their send (at most "
		    "%llu ns, %llu ns in all; %llu beyond the clocks' error "
		    "bound)\n",
		    (unsigned long long)r->recv_moved,
		    (unsigned long long)r->recv_max_shift,
		    (unsigned long long)r->recv_total_shift,
		    (unsigned long long)r->recv_beyond);
}

/* The summary under the first output's name (PREFIX.prv for Paraver),
 * then the other outputs, one line each. */
static void
merge_outputs(const mg_format *const *fmts, size_t n, const char *prefix,
              const mg_report *r)
{
	char out[1200], *cut;

	snprintf(out, sizeof out, fmts[0]->outputs, prefix);
	if ((cut = strstr(out, " (")))
		*cut = '\0';
	merge_summary(out, r);
	for (size_t i = 1; i < n; i++) {
		printf("  %s: ", fmts[i]->name);
		printf(fmts[i]->outputs, prefix);
		printf("\n");
	}
}

struct merge_src {
	mg_opts o;
	mg_report *rep;
	const mg_format *const *fmts;
	size_t nfmts;
	const char *prefix;
};

static dw_err
merge_source(void *ctx, mg_writer *w, rd_errlist *errs)
{
	struct merge_src *m = ctx;

	return mg_merge(&m->o, w, errs, m->rep);
}

static dw_err
merge_make(void *ctx, mg_writer **w)
{
	struct merge_src *m = ctx;

	return mg_writers_new(m->fmts, m->nfmts, m->prefix, w);
}

/* The scan, the decoding and the writer get threads of their own when
 * this process may run on two CPUs or more (DWORK_MERGE_THREADS=1 keeps
 * one thread; docs/merge.md). */
static unsigned
merge_threads(void)
{
	const char *env = getenv("DWORK_MERGE_THREADS");
	cpu_set_t set;

	if (env && *env)
		return strcmp(env, "1") ? 2 : 1;
	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return 1;
	return CPU_COUNT(&set) >= 2 ? 2 : 1;
}

static int
merge_run(const struct cmd_out_args *a, const char *prefix)
{
	mg_opts o = {.dir = a->input, .threads = merge_threads()};
	const mg_format *fmts[16];
	size_t nfmts;
	char msg[512];
	mg_writer *w;
	mg_report rep;
	rd_errlist errs;
	dw_err err;
	cut_report cr;
	bool cut = cut_wanted(&a->cut.o);

	nfmts = mg_formats_parse(a->formats ? a->formats : "prv", fmts, 16, msg,
	                         sizeof msg);
	if (!nfmts) {
		fprintf(stderr, "dwork merge: %s\n", msg);
		return CMD_USAGE;
	}
	if (!a->quiet && isatty(STDERR_FILENO))
		o.progress = stderr;
	rd_errlist_init(&errs, stderr);
	if (cut) {
		struct merge_src m = {o, &rep, fmts, nfmts, prefix};

		err = cut_run(&a->cut.o, merge_source, merge_make, &m, &errs,
		              &cr, &w);
		if (!w) {
			fprintf(stderr, "dwork merge: out of memory\n");
			rd_errlist_free(&errs);
			return CMD_FAILED;
		}
	} else if (mg_writers_new(fmts, nfmts, prefix, &w) != DW_OK) {
		fprintf(stderr, "dwork merge: out of memory\n");
		rd_errlist_free(&errs);
		return CMD_FAILED;
	} else {
		err = mg_merge(&o, w, &errs, &rep);
	}
	if (err == DW_ENOMEM)
		fprintf(stderr, "dwork merge: out of memory\n");
	else if (err != DW_OK && w->err[0])
		fprintf(stderr, "dwork merge: %s\n", w->err);
	else if (err != DW_OK)
		fprintf(stderr, "dwork merge: %s: nothing merged: %s\n",
		        a->input,
		        err == DW_EFORMAT ? "no readable trace file, or not "
		                            "one record (each problem is above)"
		                          : dw_strerror(err));
	if (err == DW_OK && !a->quiet)
		merge_outputs(fmts, nfmts, prefix, &rep);
	if (err == DW_OK && !a->quiet && cut)
		cmd_cut_report(&a->cut, &cr);
	mg_writer_free(w);
	rd_errlist_free(&errs);
	return err == DW_OK ? CMD_OK : CMD_FAILED;
}

int
cmd_merge(int argc, char **argv)
{
	struct cmd_out_args a = {0};
	int rc =
	    cmd_out_parse("merge", "TRACE_DIR", merge_usage, argc, argv, &a);
	char *prefix;

	if (rc >= 0)
		return rc;
	if ((rc = cmd_trace_check("merge", a.input)) >= 0)
		return rc;
	if (!is_dir(a.input)) {
		fprintf(stderr,
		        "dwork merge: %s is a file, not a trace directory; "
		        "dwork merge reads the per-process files of a traced "
		        "run (to write a merged FILE.prv in other formats: "
		        "dwork convert %s -f FORMATS)\n",
		        a.input, a.input);
		return CMD_FAILED;
	}
	prefix = a.prefix ? strdup(a.prefix) : merge_default_prefix(a.input);
	if (!prefix) {
		fprintf(stderr, "dwork merge: out of memory\n");
		return CMD_FAILED;
	}
	raise_fd_limit();
	rc = merge_run(&a, prefix);
	free(prefix);
	free(a.cut.ranges);
	return rc;
}
