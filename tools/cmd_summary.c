/*
 * dwork summary TRACE: per task useful time, calls served and idle time
 * of a traced run, and the POP efficiency metrics (docs/tracing.md).
 * The figures are those of `dwork stats` (output/stats.h): one
 * implementation over the same clock-corrected timeline.
 */
#include <stdio.h>
#include <string.h>

#include "output/stats.h"
#include "tools/cmd.h"

static void
sum_usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: dwork summary TRACE\n\n"
	    "TRACE is a trace directory or a merged Paraver trace (FILE.prv, "
	    "with its\n.pcf and .row beside it). Prints each task's useful "
	    "time (Running on\nexecutor threads and on the master's user "
	    "threads), calls served and\nidle time, and the POP metrics: load "
	    "balance, communication efficiency\nand parallel efficiency "
	    "(docs/tracing.md); the same figures as\n'dwork stats'.\n\n"
	    "exit: 0 ok, 1 damaged input (reported), 2 usage, 3 nothing "
	    "readable\n");
}

static const cmd_opt sum_opts[] = {
    {1, "--help", "-h", CMD_OPT_FLAG},
    {0, NULL, NULL, CMD_OPT_FLAG},
};

static int
sum_parse(int argc, char **argv, const char **trace)
{
	cmd_args a;
	int id;

	cmd_args_init(&a, argc, argv);
	while ((id = cmd_opt_next(&a, sum_opts)) != CMD_OPT_END) {
		if (id == 1) {
			sum_usage(stdout);
			return CMD_OK;
		} else if (id != CMD_OPT_ARG || *trace) {
			fprintf(stderr,
			        "dwork summary: unexpected argument '%s'\n",
			        a.arg);
			sum_usage(stderr);
			return CMD_USAGE;
		} else {
			*trace = a.arg;
		}
	}
	if (!*trace) {
		sum_usage(stderr);
		return CMD_USAGE;
	}
	return -1;
}

int
cmd_summary(int argc, char **argv)
{
	const char *trace = NULL;
	int rc = sum_parse(argc, argv, &trace);
	st_stats *s;
	rd_errlist errs;
	dw_err err;

	if (rc >= 0)
		return rc;
	if ((rc = cmd_trace_check("summary", trace)) >= 0)
		return rc;
	if (st_stats_new(trace, &s) != DW_OK) {
		fprintf(stderr, "dwork summary: out of memory\n");
		return CMD_FAILED;
	}
	rd_errlist_init(&errs, stderr);
	err = st_stats_read(trace, s, &errs);
	if (err != DW_OK) {
		fprintf(stderr, "dwork summary: %s: %s\n", trace,
		        s->base.err[0] ? s->base.err : dw_strerror(err));
		rc = CMD_FAILED;
	} else {
		st_print_summary(s, stdout);
		rc = rd_errlist_count(&errs) ? CMD_DAMAGED : CMD_OK;
	}
	st_stats_free(s);
	rd_errlist_free(&errs);
	return rc;
}
