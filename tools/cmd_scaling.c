/*
 * dwork stats --scaling RUN... [--csv | --json | --html FILE]: the POP
 * tree of each run of one program at different worker counts, with the
 * computation scalability and the global efficiency (docs/tools.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/scaling.h"
#include "tools/cmd.h"

enum sc_fmt { S_TEXT, S_CSV, S_JSON };

struct sc_args {
	const char **runs;
	size_t nruns;
	enum sc_fmt fmt;
	enum sc_mode mode;
	const char *html;
};

static void
scaling_usage(FILE *out)
{
	fprintf(out,
	        "usage: dwork stats --scaling RUN... [--csv | --json] "
	        "[--html FILE]\n                   [--strong | --weak]\n\n"
	        "Each RUN is a trace directory or a merged .prv of the same "
	        "program at a\ndifferent number of workers. Prints per run "
	        "PE, LB, CommE, SerE, TrfE,\nthe computation scalability "
	        "(strong or weak, detected from the useful\ntime) and the "
	        "global efficiency; --html FILE also writes a page that\n"
	        "plots them against the workers. --strong or --weak gives "
	        "the kind of\nscaling instead of detecting it.\n");
}

static int
scaling_fmt(struct sc_args *a, enum sc_fmt want)
{
	if (a->fmt != S_TEXT && a->fmt != want) {
		fprintf(stderr, "dwork stats: --csv and --json exclude each "
		                "other: give one\n");
		return CMD_USAGE;
	}
	a->fmt = want;
	return -1;
}

static int
scaling_parse(int argc, char **argv, struct sc_args *a)
{
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		int rc = -1;

		if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
			scaling_usage(stdout);
			return CMD_OK;
		} else if (!strcmp(s, "--scaling")) {
			continue;
		} else if (!strcmp(s, "--strong") || !strcmp(s, "--weak")) {
			enum sc_mode m = s[2] == 's' ? SC_STRONG : SC_WEAK;

			if (a->mode != SC_AUTO && a->mode != m) {
				fprintf(stderr, "dwork stats: --strong and "
				                "--weak exclude each other\n");
				return CMD_USAGE;
			}
			a->mode = m;
		} else if (!strcmp(s, "--csv") || !strcmp(s, "--json")) {
			rc = scaling_fmt(a, s[2] == 'c' ? S_CSV : S_JSON);
		} else if (!strcmp(s, "--html")) {
			if (++i >= argc) {
				fprintf(stderr, "dwork stats: --html needs "
				                "a FILE to write\n");
				return CMD_USAGE;
			}
			a->html = argv[i];
		} else if (s[0] == '-' && s[1]) {
			fprintf(stderr,
			        "dwork stats: unexpected argument '%s'\n", s);
			scaling_usage(stderr);
			return CMD_USAGE;
		} else {
			a->runs[a->nruns++] = s;
		}
		if (rc >= 0)
			return rc;
	}
	if (!a->nruns) {
		fprintf(stderr, "dwork stats: --scaling needs at least one "
		                "RUN (a trace of each worker count)\n");
		scaling_usage(stderr);
		return CMD_USAGE;
	}
	return -1;
}

static int
scaling_html(const sc_table *t, const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		perror(path);
		return CMD_FAILED;
	}
	sc_print_html(t, f);
	if (fclose(f) != 0) {
		perror(path);
		return CMD_FAILED;
	}
	return CMD_OK;
}

static int
scaling_run(struct sc_args *a)
{
	sc_table t;
	rd_errlist errs;
	char err[512];
	int rc = CMD_OK;
	dw_err e;

	for (size_t i = 0; i < a->nruns; i++)
		if ((rc = cmd_trace_check("stats", a->runs[i])) >= 0)
			return rc;
	rd_errlist_init(&errs, stderr);
	e = sc_read(a->runs, a->nruns, a->mode, &errs, &t, err, sizeof err);
	if (e != DW_OK) {
		fprintf(stderr, "dwork stats --scaling: %s\n",
		        err[0] ? err : dw_strerror(e));
		rc = CMD_FAILED;
	} else {
		if (a->fmt == S_CSV)
			sc_print_csv(&t, stdout);
		else if (a->fmt == S_JSON)
			sc_print_json(&t, stdout);
		else
			sc_print_text(&t, stdout);
		rc = a->html ? scaling_html(&t, a->html) : CMD_OK;
		if (rc == CMD_OK && rd_errlist_count(&errs))
			rc = CMD_DAMAGED;
	}
	sc_free(&t);
	rd_errlist_free(&errs);
	return rc;
}

int
cmd_stats_scaling(int argc, char **argv)
{
	struct sc_args a = {0};
	int rc;

	a.runs = calloc((size_t)argc + 1, sizeof *a.runs);
	if (!a.runs) {
		fprintf(stderr, "dwork stats: out of memory\n");
		return CMD_FAILED;
	}
	rc = scaling_parse(argc, argv, &a);
	if (rc < 0)
		rc = scaling_run(&a);
	free(a.runs);
	return rc;
}
