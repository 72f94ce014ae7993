/*
 * dwork view TRACE [-o OUT] [--from T] [--to T] [--width PX] [--svg]:
 * the timeline picture of a trace directory or a merged .prv, as one
 * self-contained HTML file (or a bare SVG).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "output/html.h"
#include "merge/merge.h"
#include "merge/prvread.h"
#include "tools/cmd.h"

struct view_args {
	const char *trace, *out;
	html_opts o;
	bool quiet;
};

static void
view_usage(FILE *out)
{
	fprintf(out,
	        "usage: dwork view TRACE [-o OUT] [--from T] [--to T] "
	        "[--width PX] [--svg] [-q]\n\n"
	        "Draws the timeline of TRACE (a trace directory, or a merged "
	        "FILE.prv with\nits .pcf and .row) as one self-contained HTML "
	        "file: each thread's states\nas coloured bars, messages as "
	        "lines, a legend, hover text, mouse zoom.\n\n"
	        "  -o, --output OUT  the file to write (default: TRACE without "
	        ".prv or\n"
	        "                    .trace, plus .html or .svg)\n"
	        "  --from T, --to T  draw only this time range; T in ns, or "
	        "with a unit:\n"
	        "                    2.5s, 120ms, 40us, 300ns\n"
	        "  --width PX        pixel columns of the plot (default 960)\n"
	        "  --svg             a bare SVG, for a README (no script)\n"
	        "  -q, --quiet       do not print the output's path\n"
	        "  -h, --help        this text\n\n"
	        "exit: 0 written, 1 damaged input (reported), 2 usage, 3 "
	        "nothing readable\nor the output could not be written\n");
}

static int
usage_error(const char *what, const char *arg)
{
	fprintf(stderr, "dwork view: %s '%s'\n", what, arg);
	view_usage(stderr);
	return CMD_USAGE;
}

enum {
	OPT_HELP = 1,
	OPT_SVG,
	OPT_QUIET,
	OPT_OUTPUT,
	OPT_FROM,
	OPT_TO,
	OPT_WIDTH
};

static const cmd_opt view_opts[] = {
    {OPT_HELP, "--help", "-h", CMD_OPT_FLAG},
    {OPT_SVG, "--svg", NULL, CMD_OPT_FLAG},
    {OPT_QUIET, "--quiet", "-q", CMD_OPT_FLAG},
    {OPT_OUTPUT, "--output", "-o", CMD_OPT_VALUE},
    {OPT_FROM, "--from", NULL, CMD_OPT_VALUE},
    {OPT_TO, "--to", NULL, CMD_OPT_VALUE},
    {OPT_WIDTH, "--width", NULL, CMD_OPT_VALUE},
    {0, NULL, NULL, CMD_OPT_FLAG},
};

static int
view_value(struct view_args *a, int id, const char *v)
{
	char *end;

	if (id == OPT_OUTPUT) {
		a->out = v;
	} else if (id == OPT_FROM) {
		if (!cmd_parse_time(v, &a->o.from))
			return usage_error("not a time:", v);
	} else if (id == OPT_TO) {
		if (!cmd_parse_time(v, &a->o.to) || a->o.to == 0)
			return usage_error("not a time after 0:", v);
	} else {
		unsigned long w = strtoul(v, &end, 10);

		if (*end || w < 10 || w > 100000)
			return usage_error("not a width of 10 to 100000:", v);
		a->o.width = (uint32_t)w;
	}
	return -1;
}

static int
view_parse(int argc, char **argv, struct view_args *a)
{
	cmd_args args;
	int id, rc;

	cmd_args_init(&args, argc, argv);
	while ((id = cmd_opt_next(&args, view_opts)) != CMD_OPT_END) {
		if (id == OPT_HELP) {
			view_usage(stdout);
			return CMD_OK;
		} else if (id == OPT_SVG) {
			a->o.svg = true;
		} else if (id == OPT_QUIET) {
			a->quiet = true;
		} else if (id == CMD_OPT_NOVALUE) {
			return usage_error("a value is needed after", args.arg);
		} else if (id > 0) {
			if ((rc = view_value(a, id, args.value)) >= 0)
				return rc;
		} else if (id != CMD_OPT_ARG || a->trace) {
			return usage_error("unexpected argument", args.arg);
		} else {
			a->trace = args.arg;
		}
	}
	if (!a->trace)
		return usage_error("no TRACE given", "");
	if (a->o.to && a->o.from >= a->o.to) {
		fprintf(stderr,
		        "dwork view: the range to draw is empty: --from ");
		cmd_print_time(stderr, a->o.from);
		fprintf(stderr, " is not before --to ");
		cmd_print_time(stderr, a->o.to);
		fprintf(stderr, "; give --from T1 --to T2 with T1 < T2\n");
		return CMD_USAGE;
	}
	return -1;
}

/* TRACE without ".prv", or without trailing slashes and ".trace" (for
 * ".", ".." or "/": the file "trace" in it), plus the extension. */
static char *
default_out(const char *trace, const char *ext)
{
	size_t n = strlen(trace), b;
	char *p;

	while (n > 1 && trace[n - 1] == '/')
		n--;
	for (b = n; b > 0 && trace[b - 1] != '/'; b--)
		;
	if (n > 4 && !strncmp(trace + n - 4, ".prv", 4))
		n -= 4;
	else if ((n - b == 1 && trace[b] == '.') ||
	         (n - b == 2 && !strncmp(trace + b, "..", 2)) || n - b == 0)
		return asprintf(&p, "%.*s/trace%s", (int)n, trace, ext) < 0
		           ? NULL
		           : p;
	else if (n - b > 6 && !strncmp(trace + n - 6, ".trace", 6))
		n -= 6;
	return asprintf(&p, "%.*s%s", (int)n, trace, ext) < 0 ? NULL : p;
}

static dw_err
view_read(const char *trace, mg_writer *w, rd_errlist *errs)
{
	struct stat st;

	if (stat(trace, &st) == 0 && S_ISDIR(st.st_mode)) {
		mg_opts o = {.dir = trace};

		return mg_merge(&o, w, errs, NULL);
	}
	return prvread_run(trace, w, errs, NULL);
}

int
cmd_view(int argc, char **argv)
{
	struct view_args a = {0};
	int rc = view_parse(argc, argv, &a);
	char *out;
	mg_writer *w;
	rd_errlist errs;
	dw_err err;

	if (rc >= 0)
		return rc;
	if ((rc = cmd_trace_check("view", a.trace)) >= 0)
		return rc;
	out = a.out ? strdup(a.out)
	            : default_out(a.trace, a.o.svg ? ".svg" : ".html");
	if (!out || html_writer_open(out, &a.o, &w) != DW_OK) {
		fprintf(stderr, "dwork view: out of memory\n");
		free(out);
		return CMD_FAILED;
	}
	rd_errlist_init(&errs, stderr);
	err = view_read(a.trace, w, &errs);
	if (err != DW_OK) {
		fprintf(stderr, "dwork view: %s: %s\n", a.trace,
		        w->err[0] ? w->err : dw_strerror(err));
		rc = CMD_FAILED;
	} else {
		if (!a.quiet)
			printf("%s\n", out);
		rc = rd_errlist_count(&errs) ? CMD_DAMAGED : CMD_OK;
	}
	mg_writer_free(w);
	rd_errlist_free(&errs);
	free(out);
	return rc;
}
