/*
 * dwork stats TRACE [--csv | --json]: time per state, events, remote
 * calls, messages and the POP metrics of a trace directory (merged on
 * the fly, clocks corrected) or of a merged Paraver trace.
 */
#include <stdio.h>
#include <string.h>

#include "output/stats.h"
#include "tools/cmd.h"

enum stats_fmt { F_TEXT, F_CSV, F_JSON };

static void
stats_usage(FILE *out)
{
	fprintf(out,
	        "usage: dwork stats TRACE [--csv | --json]\n\n"
	        "TRACE is a trace directory or a merged Paraver trace "
	        "(FILE.prv, with its\n.pcf and .row beside it). Prints per "
	        "task and thread the time in each\nstate, the events per "
	        "type, the remote functions run (calls, mean and\nmax "
	        "duration), the messages and bytes sent and received, and "
	        "the POP\nefficiency metrics with their formulas "
	        "(docs/tools.md).\n\n"
	        "  --csv    one CSV table instead of the report\n"
	        "  --json   one JSON object instead of the report\n"
	        "  --scaling RUN...  the efficiencies across runs "
	        "(dwork stats --scaling -h)\n"
	        "  -h, --help  this text\n\n"
	        "exit: 0 ok, 1 damaged input (reported), 2 usage, 3 nothing "
	        "readable\n");
}

enum { OPT_HELP = 1, OPT_CSV, OPT_JSON };

static const cmd_opt stats_opts[] = {
    {OPT_HELP, "--help", "-h", CMD_OPT_FLAG},
    {OPT_CSV, "--csv", NULL, CMD_OPT_FLAG},
    {OPT_JSON, "--json", NULL, CMD_OPT_FLAG},
    {0, NULL, NULL, CMD_OPT_FLAG},
};

static int
stats_parse(int argc, char **argv, const char **trace, enum stats_fmt *fmt)
{
	cmd_args a;
	int id;

	cmd_args_init(&a, argc, argv);
	while ((id = cmd_opt_next(&a, stats_opts)) != CMD_OPT_END) {
		enum stats_fmt want = id == OPT_CSV ? F_CSV : F_JSON;

		if (id == OPT_HELP) {
			stats_usage(stdout);
			return CMD_OK;
		} else if (id == OPT_CSV || id == OPT_JSON) {
			if (*fmt != F_TEXT && *fmt != want) {
				fprintf(stderr,
				        "dwork stats: --csv and --json "
				        "exclude each other: give one (one "
				        "table, or one JSON object)\n");
				return CMD_USAGE;
			}
			*fmt = want;
		} else if (id != CMD_OPT_ARG || *trace) {
			fprintf(stderr,
			        "dwork stats: unexpected argument '%s'\n",
			        a.arg);
			stats_usage(stderr);
			return CMD_USAGE;
		} else {
			*trace = a.arg;
		}
	}
	if (!*trace) {
		fprintf(stderr, "dwork stats: no TRACE given\n");
		stats_usage(stderr);
		return CMD_USAGE;
	}
	return -1;
}

int
cmd_stats(int argc, char **argv)
{
	const char *trace = NULL;
	enum stats_fmt fmt = F_TEXT;
	int rc;
	st_stats *s;
	rd_errlist errs;
	dw_err err;

	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--scaling"))
			return cmd_stats_scaling(argc, argv);
	if ((rc = stats_parse(argc, argv, &trace, &fmt)) >= 0)
		return rc;
	if ((rc = cmd_trace_check("stats", trace)) >= 0)
		return rc;
	if (st_stats_new(trace, &s) != DW_OK) {
		fprintf(stderr, "dwork stats: out of memory\n");
		return CMD_FAILED;
	}
	rd_errlist_init(&errs, stderr);
	err = st_stats_read(trace, s, &errs);
	if (err != DW_OK) {
		fprintf(stderr, "dwork stats: %s: %s\n", trace,
		        s->base.err[0] ? s->base.err : dw_strerror(err));
		rc = CMD_FAILED;
	} else {
		if (fmt == F_CSV)
			st_print_csv(s, stdout);
		else if (fmt == F_JSON)
			st_print_json(s, stdout);
		else
			st_print_text(s, stdout);
		rc = rd_errlist_count(&errs) ? CMD_DAMAGED : CMD_OK;
	}
	st_stats_free(s);
	rd_errlist_free(&errs);
	return rc;
}
