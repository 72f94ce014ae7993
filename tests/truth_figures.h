/*
 * One set of figures, checked on a ground-truth run (the truth_* tests):
 * the summary the master printed at the end of its run, the real
 * `dwork summary` of the trace directory and of its .prv, and the real
 * `dwork stats` (text and --json) of the .prv must all show the same
 * per-task useful time, load balance, communication and parallel
 * efficiency:
 *
 * - the three summaries are the same text, byte for byte;
 * - the JSON's useful_ns per task and duration_ns are the trace's own
 *   numbers (what the test summed from the .prv and read from its
 *   header), and its metrics are the POP formulas on them (to the
 *   JSON's six decimals);
 * - every printed decimal (summary: useful %.3f s, metrics %.2f; stats
 *   text: useful %.6f s, metrics %.2f) is that number printed;
 * - and the known answer holds: each task's useful time within the
 *   bounds the program measured around its sleeps, the metrics within
 *   the bounds those give with the elapsed time bounded by the master's
 *   own clock (at least dw_init's return to dw_finalize's call, at most
 *   dw_init's call to dw_finalize's return).
 */
#ifndef DW_TRUTH_FIGURES_H
#define DW_TRUTH_FIGURES_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define TF_TASKS 8

struct tf_in {
	const char *dir;        /* the trace directory; DIR/trace.prv */
	const char *master_out; /* a file holding the master's stdout */
	int ntasks;
	uint64_t useful_ns[TF_TASKS];            /* the trace's own, per task */
	double lo_ms[TF_TASKS], hi_ms[TF_TASKS]; /* the known answer */
	double t_lo_ms, t_hi_ms; /* the elapsed time, by the master's clock */
};

struct tf_fig {
	char useful[TF_TASKS][32]; /* as printed */
	int ntasks;
	char lb[32], comm[32], pe[32];
};

/* The whole output of a command; NULL if it did not exit 0. */
static char *
tf_run(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	REQUIRE(p);
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	REQUIRE(buf);
	size_t k;
	while ((k = fread(buf + n, 1, cap - n - 1, p)) > 0) {
		n += k;
		if (n + 1 == cap)
			REQUIRE((buf = realloc(buf, cap *= 2)));
	}
	buf[n] = 0;
	int st = pclose(p);
	if (st != 0) {
		fprintf(stderr, "'%s' failed (status %d):\n%s\n", cmd, st, buf);
		tu_failures++;
		free(buf);
		return NULL;
	}
	return buf;
}

static char *
tf_tool(const char *args, const char *path)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd, "'%s' %s '%s'", DWORK_TOOL_PATH, args, path);
	return tf_run(cmd);
}

static char *
tf_slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	REQUIRE(f);
	static char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

/* The trace's duration: FTIME in "#Paraver (...):FTIME_ns:...". */
static uint64_t
tf_ftime(const char *prv)
{
	FILE *f = fopen(prv, "r");
	REQUIRE(f);
	char line[4096];
	REQUIRE(fgets(line, sizeof line, f));
	fclose(f);
	const char *p = strstr(line, "):");
	REQUIRE(p);
	return strtoull(p + 2, NULL, 10);
}

/* "  task  useful (s)  calls served  idle (s)" rows, then the metrics. */
static void
tf_parse_summary(const char *s, struct tf_fig *g)
{
	memset(g, 0, sizeof *g);
	for (const char *l = s; l && *l;
	     l = strchr(l, '\n'), l = l ? l + 1 : l) {
		unsigned task;
		char v[32];
		/* tasks count from 1, as in Paraver and --tasks */
		if (sscanf(l, " %u %31s", &task, v) == 2 && task <= TF_TASKS &&
		    (int)task == g->ntasks + 1)
			snprintf(g->useful[g->ntasks++], 32, "%s", v);
		sscanf(l, "  load balance %31s", g->lb);
		sscanf(l, "  communication efficiency %31s", g->comm);
		sscanf(l, "  parallel efficiency %31s", g->pe);
	}
}

/* The last "= X" of a line: the value `dwork stats` prints there. */
static void
tf_last_value(const char *l, char *out)
{
	const char *end = strchr(l, '\n'), *eq = NULL;
	for (const char *p = l; *p && (!end || p < end); p++)
		if (*p == '=')
			eq = p;
	if (eq)
		sscanf(eq + 1, "%31s", out);
}

/* The "Efficiency (POP metrics)" section of `dwork stats`. */
static void
tf_parse_stats(const char *s, struct tf_fig *g)
{
	memset(g, 0, sizeof *g);
	const char *sec = strstr(s, "\nEfficiency (POP metrics)");
	REQUIRE(sec);
	for (const char *l = sec + 1; l && *l;
	     l = strchr(l, '\n'), l = l ? l + 1 : l) {
		unsigned task;
		char v[32];
		/* tasks count from 1, as in Paraver and --tasks */
		if (sscanf(l, " %u %31s", &task, v) == 2 && task <= TF_TASKS &&
		    (int)task == g->ntasks + 1)
			snprintf(g->useful[g->ntasks++], 32, "%s", v);
		if (!strncmp(l, "  load balance ", 15))
			tf_last_value(l, g->lb);
		if (!strncmp(l, "  communication efficiency ", 27))
			tf_last_value(l, g->comm);
		if (!strncmp(l, "  parallel efficiency ", 22))
			tf_last_value(l, g->pe);
	}
}

static double
tf_json_num(const char *from, const char *key)
{
	char k[64];
	snprintf(k, sizeof k, "\"%s\": ", key);
	const char *p = strstr(from, k);
	REQUIRE(p);
	return strtod(p + strlen(k), NULL);
}

static void
tf_same(const char *what, const char *got, const char *want)
{
	if (strcmp(got, want)) {
		fprintf(stderr, "%s: '%s', expected '%s'\n", what, got, want);
		tu_failures++;
	}
}

/* lo - slack <= v <= hi + slack, printed either way. */
static void
tf_within(const char *what, const char *printed, double lo, double hi,
          double slack)
{
	double v = strtod(printed, NULL);
	int ok = v >= lo - slack && v <= hi + slack;
	printf("  %-40s %10s  known [%.4f, %.4f]%s\n", what, printed, lo, hi,
	       ok ? "" : "  <-- FAIL");
	if (!ok)
		tu_failures++;
}

/* The summary block of the master's output: from "summary:" to its
 * end. */
static const char *
tf_master_summary(const char *out)
{
	const char *p = strstr(out, "summary: ");
	if (p && p != out && p[-1] != '\n')
		p = NULL;
	return p ? p : "(no summary in the master's output)";
}

static void
tf_check_json(const struct tf_in *in, const char *json, uint64_t ftime,
              double *lb, double *comm, double *pe)
{
	CHECK_EQ_U64((uint64_t)tf_json_num(json, "duration_ns"), ftime);
	const char *p = strstr(json, "\"tasks\": [");
	REQUIRE(p);
	double sum = 0, max = 0;
	for (int i = 0; i < in->ntasks; i++) {
		char key[64];
		snprintf(key, sizeof key, "{\"task\": %d, ", i + 1);
		REQUIRE((p = strstr(p, key)));
		CHECK_EQ_U64((uint64_t)tf_json_num(p, "useful_ns"),
		             in->useful_ns[i]);
		sum += (double)in->useful_ns[i];
		max = (double)in->useful_ns[i] > max ? (double)in->useful_ns[i]
		                                     : max;
	}
	/* the POP formulas on the trace's own numbers (docs/tracing.md) */
	double mean = sum / in->ntasks;
	*lb = mean / max;
	*comm = max / (double)ftime;
	*pe = mean / (double)ftime;
	REQUIRE((p = strstr(json, "\"pop\": {")));
	CHECK(fabs(tf_json_num(p, "load_balance") - *lb) <= 5.1e-7);
	CHECK(fabs(tf_json_num(p, "communication_efficiency") - *comm) <=
	      5.1e-7);
	CHECK(fabs(tf_json_num(p, "parallel_efficiency") - *pe) <= 5.1e-7);
}

/* The known answer for the metrics: bounds from the tasks' bounds and
 * the elapsed time's. */
static void
tf_check_known(const struct tf_in *in, const struct tf_fig *g)
{
	double mlo = 0, mhi = 0, xlo = 0, xhi = 0;
	for (int i = 0; i < in->ntasks; i++) {
		char what[64];
		snprintf(what, sizeof what, "summary: task %d useful (s)", i);
		/* printed to the ms: half of one either way */
		tf_within(what, g->useful[i], in->lo_ms[i] / 1e3,
		          in->hi_ms[i] / 1e3, 0.0005);
		mlo += in->lo_ms[i] / in->ntasks;
		mhi += in->hi_ms[i] / in->ntasks;
		xlo = in->lo_ms[i] > xlo ? in->lo_ms[i] : xlo;
		xhi = in->hi_ms[i] > xhi ? in->hi_ms[i] : xhi;
	}
	tf_within("summary: load balance", g->lb, mlo / xhi,
	          mhi / xlo > 1 ? 1 : mhi / xlo, 0.005);
	tf_within("summary: communication efficiency", g->comm,
	          xlo / in->t_hi_ms, xhi / in->t_lo_ms, 0.005);
	tf_within("summary: parallel efficiency", g->pe, mlo / in->t_hi_ms,
	          mhi / in->t_lo_ms, 0.005);
}

static void
tf_check(const struct tf_in *in)
{
	char prv[1024], buf[64];
	snprintf(prv, sizeof prv, "%s/trace.prv", in->dir);
	uint64_t ftime = tf_ftime(prv);
	char *sdir = tf_tool("summary", in->dir);
	char *sprv = tf_tool("summary", prv);
	char *json = tf_tool("stats --json", prv);
	char *text = tf_tool("stats", prv);
	if (!sdir || !sprv || !json || !text)
		goto out;
	tf_same("dwork summary of the .prv vs of the directory", sprv, sdir);
	tf_same("the master's end-of-run summary vs dwork summary",
	        tf_master_summary(tf_slurp(in->master_out)), sdir);
	double lb, comm, pe;
	tf_check_json(in, json, ftime, &lb, &comm, &pe);
	struct tf_fig sum, st;
	tf_parse_summary(sdir, &sum);
	tf_parse_stats(text, &st);
	CHECK(sum.ntasks == in->ntasks && st.ntasks == in->ntasks);
	for (int i = 0; i < in->ntasks; i++) {
		double s = (double)in->useful_ns[i] * 1e-9;
		snprintf(buf, sizeof buf, "%.3f", s);
		tf_same("summary: useful (s)", sum.useful[i], buf);
		snprintf(buf, sizeof buf, "%.6f", s);
		tf_same("stats: useful (s)", st.useful[i], buf);
	}
	snprintf(buf, sizeof buf, "%.2f", lb);
	tf_same("summary: load balance", sum.lb, buf);
	tf_same("stats: load balance", st.lb, buf);
	snprintf(buf, sizeof buf, "%.2f", comm);
	tf_same("summary: communication efficiency", sum.comm, buf);
	tf_same("stats: communication efficiency", st.comm, buf);
	snprintf(buf, sizeof buf, "%.2f", pe);
	tf_same("summary: parallel efficiency", sum.pe, buf);
	tf_same("stats: parallel efficiency", st.pe, buf);
	printf("  summary = dwork summary (dir, .prv) = dwork stats (text, "
	       "json); elapsed %.3f ms, known [%.3f, %.3f]\n",
	       ftime / 1e6, in->t_lo_ms, in->t_hi_ms);
	CHECK(ftime / 1e6 >= in->t_lo_ms && ftime / 1e6 <= in->t_hi_ms);
	tf_check_known(in, &sum);
out:
	free(sdir), free(sprv), free(json), free(text);
}

#endif
