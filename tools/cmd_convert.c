/*
 * dwork convert TRACE [-f FORMATS] [-o PREFIX]: a merged Paraver trace
 * (ours or another tool's) or a trace directory into other formats,
 * through the same writers as dwork merge (output/writers.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "merge/merge.h"
#include "merge/prvread.h"
#include "output/writers.h"
#include "tools/cmd.h"

#define CONVERT_DEFAULT "json"

static void
convert_usage(FILE *out)
{
	size_t n;
	const mg_format *f = mg_formats(&n);

	fprintf(
	    out,
	    "usage: dwork convert TRACE [-f FORMATS] [-o PREFIX] [--from T] "
	    "[--to T]\n"
	    "                     [--tasks LIST] [--max-bytes N] "
	    "[-q]\n\n"
	    "Writes a trace in other formats.  TRACE is a merged Paraver "
	    "trace (FILE.prv,\nwith its .pcf and .row beside it: dwork's, "
	    "or another tool's such as\nExtrae's) or a trace directory "
	    "(merged on the way, as dwork merge does).\n\n"
	    "  -f, --format LIST    formats, comma-separated "
	    "(default " CONVERT_DEFAULT "):\n");
	for (size_t i = 0; i < n; i++) {
		fprintf(out, "                       %s: ", f[i].name);
		fprintf(out, f[i].outputs, "PREFIX");
		fprintf(out, "%s\n", f[i].create ? "" : " (not in this build)");
	}
	fprintf(out,
	        "  -o, --output PREFIX  where to write (default: TRACE without "
	        "its .prv or\n                       .trace suffix)\n"
	        "  --from T, --to T     keep only this window (T: 2.5s, "
	        "120ms, 40us, 300ns)\n"
	        "  --tasks LIST         keep only these tasks (dwork process "
	        "ids = Paraver\n"
	        "                       tasks: 1 the master, 3 worker 3; "
	        "1,3-5)\n"
	        "  --max-bytes N        end the window where the .prv would "
	        "pass N bytes\n"
	        "  -q, --quiet          no summary\n"
	        "  -h, --help           this text\n\n"
	        "exit: 0 written, 1 written but some input was damaged (each "
	        "problem printed),\n2 usage, 3 nothing could be read or the "
	        "output could not be written\n");
}

static bool
is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* TRACE.prv without ".prv"; a directory as dwork merge names it. */
static char *
default_prefix(const char *trace)
{
	size_t n = strlen(trace);
	char *p;

	if (is_dir(trace))
		return merge_default_prefix(trace);
	if (n > 4 && !strcmp(trace + n - 4, ".prv"))
		n -= 4;
	p = malloc(n + 1);
	if (p) {
		memcpy(p, trace, n);
		p[n] = '\0';
	}
	return p;
}

/* Paraver written over the Paraver trace it reads: refused. */
static bool
replaces_input(const struct cmd_out_args *a, const char *prefix,
               const mg_format *const *fmts, size_t n)
{
	size_t len = strlen(prefix);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(fmts[i]->name, "prv") &&
		    !strncmp(a->input, prefix, len) &&
		    !strcmp(a->input + len, ".prv"))
			return true;
	return false;
}

static void
convert_summary(const mg_format *const *fmts, size_t n, const char *prefix,
                uint64_t records)
{
	for (size_t i = 0; i < n; i++) {
		printf(i ? "  %s: " : "%s: ", fmts[i]->name);
		printf(fmts[i]->outputs, prefix);
		if (!i)
			printf(" (%llu records)", (unsigned long long)records);
		printf("\n");
	}
}

struct convert_src {
	const char *trace;
	uint64_t records;
	const mg_format *const *fmts;
	size_t n;
	const char *prefix;
};

static dw_err
convert_source(void *ctx, mg_writer *w, rd_errlist *errs)
{
	struct convert_src *c = ctx;
	mg_report rep = {0};
	dw_err err;

	if (is_dir(c->trace)) {
		mg_opts o = {.dir = c->trace};

		err = mg_merge(&o, w, errs, &rep);
		c->records = rep.records_in;
		return err;
	}
	return prvread_run(c->trace, w, errs, &c->records);
}

static dw_err
convert_make(void *ctx, mg_writer **w)
{
	struct convert_src *c = ctx;

	return mg_writers_new(c->fmts, c->n, c->prefix, w);
}

static int
convert_run(const struct cmd_out_args *a, const char *prefix,
            const mg_format *const *fmts, size_t n)
{
	struct convert_src src = {a->input, 0, fmts, n, prefix};
	bool cut = cut_wanted(&a->cut.o);
	mg_writer *w = NULL;
	cut_report cr;
	rd_errlist errs;
	uint64_t records;
	dw_err err;
	int rc;

	rd_errlist_init(&errs, stderr);
	if (cut)
		err = cut_run(&a->cut.o, convert_source, convert_make, &src,
		              &errs, &cr, &w);
	else if ((err = convert_make(&src, &w)) == DW_OK)
		err = convert_source(&src, w, &errs);
	if (!w) {
		fprintf(stderr, "dwork convert: out of memory\n");
		rd_errlist_free(&errs);
		return CMD_FAILED;
	}
	records = src.records;
	if (err != DW_OK)
		fprintf(stderr, "dwork convert: %s: %s\n", a->input,
		        w->err[0] ? w->err : dw_strerror(err));
	else if (!a->quiet)
		convert_summary(fmts, n, prefix, records);
	if (err == DW_OK && !a->quiet && cut)
		cmd_cut_report(&a->cut, &cr);
	rc = err != DW_OK              ? CMD_FAILED
	     : rd_errlist_count(&errs) ? CMD_DAMAGED
	                               : CMD_OK;
	mg_writer_free(w);
	rd_errlist_free(&errs);
	return rc;
}

int
cmd_convert(int argc, char **argv)
{
	struct cmd_out_args a = {0};
	int rc =
	    cmd_out_parse("convert", "TRACE", convert_usage, argc, argv, &a);
	const mg_format *fmts[16];
	char msg[512];
	size_t n;
	char *prefix;

	if (rc >= 0)
		return rc;
	if ((rc = cmd_trace_check("convert", a.input)) >= 0)
		return rc;
	n = mg_formats_parse(a.formats ? a.formats : CONVERT_DEFAULT, fmts, 16,
	                     msg, sizeof msg);
	if (!n) {
		fprintf(stderr, "dwork convert: %s\n", msg);
		return CMD_USAGE;
	}
	prefix = a.prefix ? strdup(a.prefix) : default_prefix(a.input);
	if (!prefix) {
		fprintf(stderr, "dwork convert: out of memory\n");
		return CMD_FAILED;
	}
	if (replaces_input(&a, prefix, fmts, n)) {
		fprintf(stderr,
		        "dwork convert: the Paraver output would replace %s; "
		        "give another -o PREFIX\n",
		        a.input);
		free(prefix);
		return CMD_USAGE;
	}
	rc = convert_run(&a, prefix, fmts, n);
	free(prefix);
	free(a.cut.ranges);
	return rc;
}
