/*
 * Drawing the timeline: header, time axis, one row of bars per thread
 * (runs of pixel columns with the same dominant state), which rows
 * fold, and the whole picture in order (hw_draw); the other parts are
 * the files html_draw.h names.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

#include "output/html_draw.h"
#include "output/labels.h"

/* ---- Header and axis ---------------------------------------------------- */

static double
nice_step(double span)
{
	double raw = span / 8, p = pow(10, floor(log10(raw))), m = raw / p;

	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void
draw_header(hw_canvas *d)
{
	const html_writer *h = d->h;
	const mg_info *in = d->info;

	fputs("<text x=\"8\" y=\"20\" class=\"h1\">", d->f);
	hw_esc(d->f, in->program && in->program[0] ? in->program : "trace");
	fprintf(d->f,
	        "</text>\n<text x=\"8\" y=\"38\">%zu tasks, %zu threads, ",
	        in->ntasks, in->nthreads);
	hw_put_time(d, in->duration);
	fputs(" of trace; showing ", d->f);
	hw_put_time(d, h->from);
	fputs(" to ", d->f);
	hw_put_time(d, h->to);
	fprintf(d->f,
	        "; a pixel column is %.3g %s, coloured by its dominant "
	        "state</text>\n",
	        d->ns_px / (double)hw_unit_for(d->ns_px),
	        hw_unit_name(hw_unit_for(d->ns_px)));
	if (h->svg)
		return;
	fprintf(d->f,
	        "<text x=\"%u\" y=\"38\" text-anchor=\"end\" "
	        "id=\"cursor\" fill=\"#555\">drag to zoom, double-click "
	        "to reset</text>\n",
	        d->width - HW_MARGIN);
	if (d->nfolded)
		fprintf(d->f,
		        "<text x=\"%u\" y=\"20\" text-anchor=\"end\" "
		        "id=\"fold\" class=\"btn\" data-n=\"%u\">\xe2\x96\xb8 "
		        "%u row%s idle the whole range folded: click to "
		        "show</text>\n",
		        d->width - HW_MARGIN, d->nfolded, d->nfolded,
		        d->nfolded == 1 ? "" : "s");
}

static void
draw_axis(hw_canvas *d)
{
	const html_writer *h = d->h;
	double step = nice_step((double)h->span);
	uint64_t unit = hw_unit_for((double)h->to);
	int dec = hw_decimals_for(step, unit);

	fputs("<g id=\"axis\" class=\"ax\">\n", d->f);
	for (double t = ceil((double)h->from / step) * step;
	     t <= (double)h->to + step * 1e-9; t += step) {
		double x = HW_PLOT_X + hw_x(h, (uint64_t)llround(t));

		fprintf(d->f,
		        "<line x1=\"%.1f\" y1=\"%u\" x2=\"%.1f\" y2=\"%u\"/>"
		        "<text x=\"%.1f\" y=\"%u\" text-anchor=\"middle\">%.*f "
		        "%s</text>\n",
		        x, HW_TOP - 6, x, d->bottom, x, HW_TOP - 10, dec,
		        t / (double)unit, hw_unit_name(unit));
	}
	fputs("</g>\n", d->f);
}

/* ---- Rows --------------------------------------------------------------- */

/* A state drawn, for the style and the legend. */
static void
shown_add(hw_canvas *d, uint32_t state)
{
	uint32_t *a;

	for (size_t i = 0; i < d->nshown; i++)
		if (d->shown[i] == state)
			return;
	a = realloc(d->shown, (d->nshown + 1) * sizeof *a);
	if (!a)
		return; /* the legend lacks it; the bars are drawn */
	d->shown = a;
	d->shown[d->nshown++] = state;
}

/* The dominant state of column c (-1: nothing drawn) and the ns of the
 * column the thread spent in any state. */
static int64_t
dominant(const hw_thread *t, uint32_t c, double *total)
{
	double best = 0;
	int64_t s = -1;

	*total = 0;
	for (uint32_t k = 0; k < t->nused; k++) {
		double v = t->cols[k][c];

		*total += v;
		if (v > best) {
			best = v;
			s = t->state[k];
		}
	}
	return s == HW_NOT_CREATED ? -1 : s;
}

static double
state_ns(const hw_thread *t, uint32_t state, uint32_t c0, uint32_t c1)
{
	double ns = 0;

	for (uint32_t k = 0; k < t->nused; k++)
		if (t->state[k] == state)
			for (uint32_t c = c0; c < c1; c++)
				ns += t->cols[k][c];
	return ns;
}

static void
draw_run(hw_canvas *d, const hw_thread *t, uint32_t state, uint32_t c0,
         uint32_t c1, double total)
{
	const html_writer *h = d->h;
	double in = state_ns(t, state, c0, c1);

	fprintf(d->f,
	        "<rect class=\"s%u\" x=\"%u\" y=\"0\" width=\"%u\" "
	        "height=\"%u\"><title>",
	        state, c0, c1 - c0, HW_ROW_H);
	hw_state_name(d, state);
	fputs(": ", d->f);
	hw_put_time(d, h->from + (uint64_t)llround(c0 * d->ns_px));
	fputs(" to ", d->f);
	hw_put_time(d, h->from + (uint64_t)llround(c1 * d->ns_px));
	if (total > 0 && in < total * 0.995)
		fprintf(d->f, " (%.0f%% of it; other states less)",
		        100 * in / total);
	fputs("</title></rect>\n", d->f);
	shown_add(d, state);
	d->ndrawn++;
}

/* A row's bars, in a group the script moves when rows fold. */
static void
draw_row(hw_canvas *d, size_t i)
{
	const hw_thread *t = &d->h->threads[i];
	uint32_t c0 = 0;
	int64_t cur = -1;
	double total = 0, tc = 0;

	fprintf(d->f,
	        "<g class=\"row\" data-r=\"%zu\" "
	        "transform=\"translate(0,%d)\"%s>\n",
	        i, d->row_y[i] < 0 ? 0 : d->row_y[i],
	        d->row_y[i] < 0 ? " display=\"none\"" : "");
	for (uint32_t c = 0; c <= d->h->width; c++) {
		int64_t s = c < d->h->width ? dominant(t, c, &tc) : -2;

		if (s == cur) {
			total += c < d->h->width ? tc : 0;
			continue;
		}
		if (cur >= 0)
			draw_run(d, t, (uint32_t)cur, c0, c, total);
		cur = s;
		c0 = c;
		total = c < d->h->width ? tc : 0;
	}
	fputs("</g>\n", d->f);
}

static void
draw_names(hw_canvas *d)
{
	for (size_t i = 0; i < d->info->nthreads; i++) {
		const mg_thread *t = &d->info->threads[i];
		int32_t y = d->row_y[i] < 0 ? 0 : d->row_y[i];

		fprintf(d->f,
		        "<text class=\"rn\" data-r=\"%zu\" data-idle=\"%d\" "
		        "data-k=\"%u\" x=\"%u\" y=\"%d\"%s><title>",
		        i, d->idle[i], t->task, HW_LABEL_X, y + HW_ROW_H - 3,
		        hw_hide(d, i));
		hw_esc(d->f, t->name);
		fputs("</title>", d->f);
		hw_thread_short(d, i);
		if (!d->h->threads[i].records)
			fputs(" (no records)", d->f);
		else if (d->idle[i])
			fputs(" (idle)", d->f);
		fputs("</text>\n", d->f);
	}
}

/* A line above the first row shown of each task but the first. */
static void
draw_seps(hw_canvas *d)
{
	bool first = true;

	for (size_t i = 0; i < d->info->nthreads; i++) {
		uint32_t task = d->info->threads[i].task;
		bool head = true;

		for (size_t j = i; j-- > 0 && d->info->threads[j].task == task;)
			head &= d->row_y[j] < 0;
		if (d->row_y[i] < 0 || !head)
			continue;
		if (!first)
			fprintf(d->f,
			        "<line class=\"sep\" x1=\"%u\" y1=\"%d\" "
			        "x2=\"%u\" y2=\"%d\"/>\n",
			        HW_LABEL_X, d->row_y[i] - 2,
			        d->width - HW_MARGIN, d->row_y[i] - 2);
		first = false;
	}
}

/* ---- Which rows show ------------------------------------------------------
 */

/* Idle the whole range: no state but Idle and Not created, nothing run,
 * no event of its own, no message drawn to or from it. */
static void
fold_rows(hw_canvas *d)
{
	const html_writer *h = d->h;
	uint32_t y = HW_TOP;

	for (size_t i = 0; i < h->nthreads; i++) {
		const hw_thread *t = &h->threads[i];
		bool idle = !t->nsegs && !t->nmarks;

		for (uint32_t k = 0; idle && k < t->nused; k++)
			if (t->state[k] != HW_IDLE &&
			    t->state[k] != HW_NOT_CREATED)
				for (uint32_t c = 0; idle && c < h->width; c++)
					idle = !(t->cols[k][c] > 0);
		d->idle[i] = idle;
	}
	for (size_t i = 0; i < h->lcap; i++)
		if (h->lines[i].count)
			d->idle[h->lines[i].from] = d->idle[h->lines[i].to] =
			    false;
	for (size_t i = 0; i < h->nthreads; i++)
		d->nfolded += d->idle[i];
	if (d->nfolded == h->nthreads)
		d->nfolded = 0; /* nothing but idle rows: show them */
	for (size_t i = 0; i < h->nthreads; i++) {
		if (d->nfolded && d->idle[i]) {
			d->row_y[i] = -1;
			continue;
		}
		d->row_y[i] = (int32_t)y;
		y += HW_PITCH;
		d->nrows++;
	}
	d->bottom = y;
}

static void
draw_body(hw_canvas *d, uint32_t legend_y)
{
	draw_header(d);
	draw_axis(d);
	draw_names(d);
	fputs("<g id=\"seps\">\n", d->f);
	draw_seps(d);
	fputs("</g>\n", d->f);
	fprintf(d->f,
	        "<clipPath id=\"clip\"><rect id=\"cliprect\" x=\"%u\" "
	        "y=\"%u\" width=\"%u\" height=\"%u\"/></clipPath>\n<g "
	        "clip-path=\"url(#clip)\">\n<g id=\"zoom\" "
	        "transform=\"translate(%u,0)\">\n",
	        HW_PLOT_X, HW_TOP - 4, d->h->width, d->bottom - HW_TOP + 8,
	        HW_PLOT_X);
	for (size_t i = 0; i < d->h->nthreads; i++)
		draw_row(d, i);
	fputs("</g>\n<g id=\"overlay\">\n", d->f);
	hw_draw_overlay(d);
	hw_draw_lines(d);
	d->npath = hw_draw_path(
	    d->h, &(hw_row_geom){d->f, d->row_y, HW_PLOT_X, HW_ROW_H});
	fprintf(d->f,
	        "</g>\n</g>\n<rect id=\"sel\" x=\"0\" y=\"%u\" width=\"0\" "
	        "height=\"%u\" fill=\"#48f\" opacity=\".2\" "
	        "visibility=\"hidden\"/>\n",
	        HW_TOP - 4, d->bottom - HW_TOP + 4);
	hw_draw_legend(d, legend_y);
}

void
hw_draw(html_writer *h, const mg_info *info, FILE *f)
{
	hw_canvas d = {.h = h, .info = info, .f = f};
	uint32_t legend_y;
	char *body = NULL;
	size_t blen = 0;
	FILE *mem;

	d.width = HW_PLOT_X + h->width + HW_MARGIN;
	d.ns_px = (double)h->span / h->width;
	d.unit = hw_unit_for((double)(h->to > 0 ? h->to : 1));
	d.decimals = hw_decimals_for(d.ns_px, d.unit);
	d.runtime = lb_is_runtime(info->labels);
	d.idle = calloc(h->nthreads + 1, sizeof *d.idle);
	d.row_y = calloc(h->nthreads + 1, sizeof *d.row_y);
	mem = d.idle && d.row_y ? open_memstream(&body, &blen) : NULL;
	if (!mem) {
		fputs("out of memory", f);
		free(d.idle);
		free(d.row_y);
		return;
	}
	fold_rows(&d);
	legend_y = d.bottom + 30;
	/* The body first, into memory: the style needs the states drawn. */
	d.f = mem;
	draw_body(&d, legend_y);
	fclose(mem);
	d.f = f;
	d.height = legend_y + hw_legend_rows(&d, d.nshown + 11) * HW_PITCH +
	           40 + 2 * HW_PITCH;
	hw_page_open(&d);
	fwrite(body, 1, blen, f);
	free(body);
	free(d.shown);
	free(d.idle);
	free(d.row_y);
	hw_page_close(&d);
}
