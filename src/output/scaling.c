/*
 * Scaling across runs (scaling.h).  Every run's tree comes from its own
 * st_stats, so each row is what `dwork stats` prints for that run.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <dwork/error.h>
#include <dwork/events.h>

#include "output/scaling.h"

static int
run_cmp(const void *a, const void *b)
{
	const sc_run *x = a, *y = b;

	return x->procs < y->procs ? -1 : x->procs > y->procs;
}

/* A run's processes, workers and total useful time. */
static void
run_size(sc_run *r)
{
	const st_stats *s = r->st;

	for (size_t i = 0; i < s->ntasks; i++) {
		if (!s->tasks[i].active)
			continue;
		r->procs++;
		r->useful += (double)s->tasks[i].useful;
	}
	r->workers = s->runtime && r->procs > 0 ? r->procs - 1 : r->procs;
}

/* x of run r against x0 of the reference, per process when weak:
 * how much more of it the reference needed (1 is perfect). */
static double
scal(const sc_table *t, const sc_run *r, double x, double x0)
{
	const sc_run *r0 = &t->runs[0];

	if (x <= 0)
		return 0;
	if (t->weak)
		return (x0 / (double)r0->procs) / (x / (double)r->procs);
	return x0 / x;
}

/* Weak scaling when the total useful time grew with the processes by
 * more than the geometric mean of "not at all" (strong: the same work
 * shared) and "in proportion" (weak: the same work per process). */
static bool
detect_weak(const sc_table *t)
{
	const sc_run *a = &t->runs[0], *b = &t->runs[t->n - 1];
	double p = (double)b->procs / (double)a->procs;

	return p > 1 && b->useful / a->useful >= sqrt(p);
}

static void
derive(sc_table *t, enum sc_mode mode)
{
	const sc_run *r0 = &t->runs[0];

	t->forced = mode != SC_AUTO;
	t->weak = t->forced ? mode == SC_WEAK : detect_weak(t);
	t->counters = true;
	for (size_t i = 0; i < t->n && t->counters; i++)
		if (!t->runs[i].st->ctr.valid) {
			t->counters = false;
			snprintf(t->why, sizeof t->why, "%s: %s",
			         t->runs[i].st->source, t->runs[i].st->ctr.why);
		}
	for (size_t i = 0; i < t->n; i++) {
		sc_run *r = &t->runs[i];
		const st_counters *c = &r->st->ctr, *c0 = &r0->st->ctr;

		r->comp = scal(t, r, r->useful, r0->useful);
		r->global = r->st->pop.pe * r->comp;
		if (!t->counters)
			continue;
		r->ins_scal = scal(t, r, (double)c->ins, (double)c0->ins);
		r->ipc_scal = c->ipc / c0->ipc;
	}
}

static dw_err
read_one(const char *trace, rd_errlist *errs, sc_run *r, char *err,
         size_t errlen)
{
	dw_err e = st_stats_new(trace, &r->st);

	if (e != DW_OK)
		return e;
	e = st_stats_read(trace, r->st, errs);
	if (e != DW_OK) {
		snprintf(err, errlen, "%s: %s", trace,
		         r->st->base.err[0] ? r->st->base.err : dw_strerror(e));
		return e == DW_ENOMEM ? e : DW_EINVAL;
	}
	run_size(r);
	if (!r->st->pop.valid || r->useful <= 0) {
		snprintf(err, errlen,
		         "%s: no useful time (no task ran anything): "
		         "no efficiency to scale",
		         trace);
		return DW_EINVAL;
	}
	return DW_OK;
}

dw_err
sc_read(const char *const *traces, size_t n, enum sc_mode mode,
        rd_errlist *errs, sc_table *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof *t);
	err[0] = '\0';
	if (!n) {
		snprintf(err, errlen, "no run given");
		return DW_EINVAL;
	}
	t->runs = calloc(n, sizeof *t->runs);
	if (!t->runs)
		return DW_ENOMEM;
	for (; t->n < n; t->n++) {
		dw_err e =
		    read_one(traces[t->n], errs, &t->runs[t->n], err, errlen);

		if (e != DW_OK) {
			t->n++;
			return e;
		}
	}
	qsort(t->runs, t->n, sizeof *t->runs, run_cmp);
	derive(t, mode);
	return DW_OK;
}

void
sc_free(sc_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		st_stats_free(t->runs[i].st);
	free(t->runs);
	memset(t, 0, sizeof *t);
}

/* ---- Output ----------------------------------------------------------- */

/* The columns every format prints, in order. */
enum { C_PE, C_LB, C_COMM, C_SER, C_TRF, C_COMP, C_GLOBAL, C_N };

static const char *const col_key[C_N] = {
    "parallel_efficiency",      "load_balance",
    "communication_efficiency", "serialization_efficiency",
    "transfer_efficiency",      "computation_scalability",
    "global_efficiency",
};

static const char *const col_short[C_N] = {
    "PE", "LB", "CommE", "SerE", "TrfE", "CompScal", "GE",
};

static double
col(const sc_run *r, int c)
{
	const st_pop *p = &r->st->pop;

	switch (c) {
	case C_PE:
		return p->pe;
	case C_LB:
		return p->lb;
	case C_COMM:
		return p->comm;
	case C_SER:
		return p->ideal_valid ? p->ser : NAN;
	case C_TRF:
		return p->ideal_valid ? p->trf : NAN;
	case C_COMP:
		return r->comp;
	default:
		return r->global;
	}
}

static const char *
mode(const sc_table *t)
{
	return t->weak ? "weak" : "strong";
}

void
sc_print_text(const sc_table *t, FILE *f)
{
	fprintf(f,
	        "Scaling: %zu runs, %s scaling (%s; the largest run's total "
	        "useful time\nis %.2fx the reference's, on %.2fx the "
	        "processes)\n",
	        t->n, mode(t), t->forced ? "as given" : "detected",
	        t->runs[t->n - 1].useful / t->runs[0].useful,
	        (double)t->runs[t->n - 1].procs / (double)t->runs[0].procs);
	fprintf(f, "  reference: %s (%zu processes)\n", t->runs[0].st->source,
	        t->runs[0].procs);
	fprintf(f, "  CompScal = %s\n  GE = PE x CompScal\n",
	        t->weak ? "(sum U_ref / P_ref) / (sum U / P)"
	                : "sum U_ref / sum U");
	fprintf(f, "\n  %7s %5s %10s", "workers", "procs", "elapsed s");
	for (int c = 0; c < C_N; c++)
		fprintf(f, " %8s", col_short[c]);
	fputc('\n', f);
	for (size_t i = 0; i < t->n; i++) {
		const sc_run *r = &t->runs[i];

		fprintf(f, "  %7zu %5zu %10.6f", r->workers, r->procs,
		        (double)r->st->duration * 1e-9);
		for (int c = 0; c < C_N; c++)
			fprintf(f, " %8.2f", col(r, c));
		fprintf(f, "  %s\n", r->st->source);
	}
	if (!t->counters) {
		fprintf(f,
		        "  instruction and IPC scalability: unavailable (%s)\n",
		        t->why);
		return;
	}
	for (size_t i = 0; i < t->n; i++)
		fprintf(f,
		        "  %7zu workers: instruction scalability %.2f, IPC "
		        "scalability %.2f\n",
		        t->runs[i].workers, t->runs[i].ins_scal,
		        t->runs[i].ipc_scal);
}

static void
num(FILE *f, double v)
{
	if (isnan(v))
		fputs("null", f);
	else
		fprintf(f, "%.6f", v);
}

void
sc_print_csv(const sc_table *t, FILE *f)
{
	fputs("trace,scaling,workers,processes,elapsed_ns,useful_ns", f);
	for (int c = 0; c < C_N; c++)
		fprintf(f, ",%s", col_key[c]);
	fputs(",instruction_scalability,ipc_scalability\n", f);
	for (size_t i = 0; i < t->n; i++) {
		const sc_run *r = &t->runs[i];
		const char *src = r->st->source;

		if (strpbrk(src, ",\"\r\n")) {
			fputc('"', f);
			for (; *src; src++)
				fprintf(f, *src == '"' ? "\"\"" : "%c", *src);
			fputc('"', f);
		} else {
			fputs(src, f);
		}
		fprintf(f, ",%s,%zu,%zu,%llu,%.0f", mode(t), r->workers,
		        r->procs, (unsigned long long)r->st->duration,
		        r->useful);
		for (int c = 0; c < C_N; c++) {
			double v = col(r, c);

			if (isnan(v))
				fputc(',', f);
			else
				fprintf(f, ",%.6f", v);
		}
		if (t->counters)
			fprintf(f, ",%.6f,%.6f\n", r->ins_scal, r->ipc_scal);
		else
			fputs(",,\n", f);
	}
}

static void
jstr(FILE *f, const char *p)
{
	fputc('"', f);
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if ((unsigned char)*p < 0x20)
			fprintf(f, "\\u%04x", (unsigned char)*p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

void
sc_print_json(const sc_table *t, FILE *f)
{
	fprintf(f, "{\n  \"scaling\": \"%s\",\n  \"reference\": ", mode(t));
	jstr(f, t->runs[0].st->source);
	fprintf(f, ",\n  \"counters\": {\"available\": %s",
	        t->counters ? "true" : "false");
	if (!t->counters) {
		fputs(", \"reason\": ", f);
		jstr(f, t->why);
	}
	fputs("},\n  \"runs\": [", f);
	for (size_t i = 0; i < t->n; i++) {
		const sc_run *r = &t->runs[i];

		fputs(i ? ",\n    {\"trace\": " : "\n    {\"trace\": ", f);
		jstr(f, r->st->source);
		fprintf(f,
		        ", \"workers\": %zu, \"processes\": %zu, "
		        "\"elapsed_ns\": %llu, \"useful_ns\": %.0f",
		        r->workers, r->procs,
		        (unsigned long long)r->st->duration, r->useful);
		for (int c = 0; c < C_N; c++) {
			fprintf(f, ", \"%s\": ", col_key[c]);
			num(f, col(r, c));
		}
		if (t->counters)
			fprintf(f,
			        ", \"instruction_scalability\": %.6f, "
			        "\"ipc_scalability\": %.6f",
			        r->ins_scal, r->ipc_scal);
		fputc('}', f);
	}
	fputs("\n  ]\n}\n", f);
}

/* ---- The HTML plot ------------------------------------------------------ */

#define PW 640 /* plot area */
#define PH 320
#define PL 60 /* margins */
#define PT 20

static const unsigned col_rgb[C_N] = {
    0x000000, 0x1f77b4, 0xff7f0e, 0x2ca02c, 0x17becf, 0x9467bd, 0xd62728,
};

typedef struct plot {
	double x0, x1, ymax;
} plot;

static double
px(const plot *p, double w)
{
	return PL + (p->x1 > p->x0 ? (w - p->x0) / (p->x1 - p->x0) : 0.5) * PW;
}

static double
py(const plot *p, double v)
{
	return PT + PH - v / p->ymax * PH;
}

static void
axes(const sc_table *t, const plot *p, FILE *f)
{
	for (int k = 0; k <= 4; k++) {
		double v = p->ymax * k / 4;

		fprintf(f,
		        "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" "
		        "stroke=\"#ddd\"/><text x=\"%d\" y=\"%.1f\" "
		        "text-anchor=\"end\">%.2f</text>\n",
		        PL, PL + PW, py(p, v), py(p, v), PL - 6, py(p, v) + 4,
		        v);
	}
	for (size_t i = 0; i < t->n; i++)
		fprintf(f,
		        "<text x=\"%.1f\" y=\"%d\" "
		        "text-anchor=\"middle\">%zu</text>\n",
		        px(p, (double)t->runs[i].workers), PT + PH + 18,
		        t->runs[i].workers);
	fprintf(f,
	        "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">workers"
	        "</text>\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
	        "fill=\"none\" stroke=\"#000\"/>\n",
	        PL + PW / 2, PT + PH + 38, PL, PT, PW, PH);
}

static void
series(const sc_table *t, const plot *p, int c, FILE *f)
{
	fprintf(f,
	        "<polyline class=\"s\" data-k=\"%s\" fill=\"none\" "
	        "stroke=\"#%06x\" stroke-width=\"2\" points=\"",
	        col_key[c], col_rgb[c]);
	for (size_t i = 0; i < t->n; i++)
		if (!isnan(col(&t->runs[i], c)))
			fprintf(f, "%.1f,%.1f ",
			        px(p, (double)t->runs[i].workers),
			        py(p, col(&t->runs[i], c)));
	fputs("\"/>\n", f);
	for (size_t i = 0; i < t->n; i++)
		if (!isnan(col(&t->runs[i], c)))
			fprintf(f,
			        "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" "
			        "fill=\"#%06x\"><title>%s %zu workers: %.2f"
			        "</title></circle>\n",
			        px(p, (double)t->runs[i].workers),
			        py(p, col(&t->runs[i], c)), col_rgb[c],
			        col_short[c], t->runs[i].workers,
			        col(&t->runs[i], c));
	fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#%06x\">%s</text>\n",
	        PL + PW + 12, PT + 14 + 18 * c, col_rgb[c], col_short[c]);
}

static void
html_escape(FILE *f, const char *p)
{
	for (; *p; p++) {
		if (*p == '<')
			fputs("&lt;", f);
		else if (*p == '>')
			fputs("&gt;", f);
		else if (*p == '&')
			fputs("&amp;", f);
		else
			fputc(*p, f);
	}
}

void
sc_print_html(const sc_table *t, FILE *f)
{
	plot p = {(double)t->runs[0].workers, (double)t->runs[t->n - 1].workers,
	          1};

	for (size_t i = 0; i < t->n; i++)
		for (int c = 0; c < C_N; c++)
			if (col(&t->runs[i], c) > p.ymax)
				p.ymax = col(&t->runs[i], c);
	fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
	           "<title>dwork scaling</title></head><body "
	           "style=\"font-family:sans-serif\">\n<h1>Efficiency "
	           "against workers</h1>\n<p>");
	fprintf(f, "%s scaling; CompScal = %s; GE = PE &times; CompScal.",
	        mode(t),
	        t->weak ? "(&Sigma;U<sub>ref</sub>/P<sub>ref</sub>) / "
	                  "(&Sigma;U/P)"
	                : "&Sigma;U<sub>ref</sub> / &Sigma;U");
	if (!t->counters) {
		fputs(" Instruction and IPC scalability: unavailable (", f);
		html_escape(f, t->why);
		fputs(").", f);
	}
	fprintf(f,
	        "</p>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
	        "width=\"%d\" height=\"%d\" font-size=\"12\">\n",
	        PL + PW + 100, PT + PH + 50);
	axes(t, &p, f);
	for (int c = 0; c < C_N; c++)
		series(t, &p, c, f);
	fputs("</svg>\n<pre>\n", f);
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&buf, &len);

		if (m) {
			sc_print_text(t, m);
			fclose(m);
			html_escape(f, buf);
		}
		free(buf);
	}
	fputs("</pre>\n</body></html>\n", f);
}
