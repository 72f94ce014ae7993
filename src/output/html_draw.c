/*
 * Drawing the timeline: header, time axis, one row of bars per thread
 * (runs of pixel columns with the same dominant state), message lines,
 * the legend, and for HTML the zoom script.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "output/html_int.h"
#include "output/labels.h"
#include "output/stats.h"

#define LABEL_X 8   /* thread names start here */
#define PLOT_X  200 /* the plot's left edge */
#define MARGIN  20  /* right of the plot */
#define TOP     72  /* first row */
#define ROW_H   14  /* a bar's height */
#define PITCH   18  /* a row's height */
#define LEG_W   190 /* a legend item's width */

/* Colours for states the labels do not colour, and for message tags. */
static const uint32_t palette[] = {0xe6194b, 0x3cb44b, 0xffe119, 0x4363d8,
                                   0xf58231, 0x911eb4, 0x46f0f0, 0xf032e6};
static const uint32_t tag_rgb[] = {0x000000, 0xd40000, 0x0066cc, 0x009933,
                                   0xcc6600, 0x9900cc, 0x666666, 0xcc0099};

typedef struct draw {
	html_writer *h;
	const mg_info *info;
	FILE *f;
	uint32_t width, height; /* of the whole picture */
	double ns_px;
	uint64_t unit; /* ns of the unit times are shown in */
	int decimals;
	uint32_t *shown; /* states drawn, for the legend */
	size_t nshown;
	bool tags[8], mixed, big_tags;
	size_t ndrawn, nlines_drawn, nsegs, nmarks;
	bool runtime;   /* the dwork runtime's trace: messages by kind */
	bool *idle;     /* per thread: idle (or not created) all the range */
	int32_t *row_y; /* per thread: its row's y, -1 when folded */
	uint32_t nrows, nfolded, bottom;
	size_t npath; /* pieces of the critical path drawn */
} draw;

/* ---- Text --------------------------------------------------------------- */

static void
esc_n(FILE *f, const char *s, size_t n)
{
	for (const char *e = s + n; s < e; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '&')
			fputs("&amp;", f);
		else if (c == '<')
			fputs("&lt;", f);
		else if (c == '>')
			fputs("&gt;", f);
		else if (c == '"')
			fputs("&quot;", f);
		else if (c < 0x20 || c == 0x7f)
			fputc(' ', f);
		else
			fputc(c, f);
	}
}

static void
esc(FILE *f, const char *s)
{
	if (s)
		esc_n(f, s, strlen(s));
}

static const char *
unit_name(uint64_t unit)
{
	return unit >= 1000000000 ? "s"
	       : unit >= 1000000  ? "ms"
	       : unit >= 1000     ? "\xc2\xb5s"
	                          : "ns";
}

static uint64_t
unit_for(double ns)
{
	return ns >= 1e9   ? 1000000000
	       : ns >= 1e6 ? 1000000
	       : ns >= 1e3 ? 1000
	                   : 1;
}

/* Decimals that resolve `res` ns in `unit`. */
static int
decimals_for(double res, uint64_t unit)
{
	double r = res / (double)unit;
	int d = r >= 1 ? 0 : (int)ceil(-log10(r));

	return d > 6 ? 6 : d;
}

static void
put_time(const draw *d, uint64_t t)
{
	fprintf(d->f, "%.*f %s", d->decimals, (double)t / (double)d->unit,
	        unit_name(d->unit));
}

/* ---- Labels ---------------------------------------------------------------
 */

static const mg_state_label *
state_label(const draw *d, uint32_t state)
{
	const mg_labels *l = d->info->labels;
	size_t lo = 0, hi = l ? l->nstates : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->states[mid].state == state)
			return &l->states[mid];
		if (l->states[mid].state < state)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static uint32_t
state_rgb(const draw *d, uint32_t state)
{
	const mg_state_label *s = state_label(d, state);

	return s ? s->rgb : palette[state % 8];
}

static void
state_name(const draw *d, uint32_t state)
{
	const mg_state_label *s = state_label(d, state);

	if (s)
		esc(d->f, s->name);
	else
		fprintf(d->f, "State %u", state);
}

static void
shown_add(draw *d, uint32_t state)
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

/* A dwork process's thread by its name ("worker 3 executor 1", the
 * dwork id, not the task); any other "2.1 label": Paraver's task.thread
 * from 1 and the thread's label. */
static void
thread_short(const draw *d, size_t i)
{
	const mg_thread *t = &d->info->threads[i];
	size_t n = 0;
	const char *l = st_name_label(t->name, &n);

	if (l && t->name && strncmp(t->name, "task ", 5)) {
		esc_n(d->f, t->name, strlen(t->name));
		return;
	}
	fprintf(d->f, "%u.%u", t->task + 1, t->num + 1);
	if (l) {
		fputc(' ', d->f);
		esc_n(d->f, l, n);
	}
}

/* ---- Header and axis ---------------------------------------------------- */

static double
nice_step(double span)
{
	double raw = span / 8, p = pow(10, floor(log10(raw))), m = raw / p;

	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void
draw_header(draw *d)
{
	const html_writer *h = d->h;
	const mg_info *in = d->info;

	fputs("<text x=\"8\" y=\"20\" class=\"h1\">", d->f);
	esc(d->f, in->program && in->program[0] ? in->program : "trace");
	fprintf(d->f,
	        "</text>\n<text x=\"8\" y=\"38\">%zu tasks, %zu threads, ",
	        in->ntasks, in->nthreads);
	put_time(d, in->duration);
	fputs(" of trace; showing ", d->f);
	put_time(d, h->from);
	fputs(" to ", d->f);
	put_time(d, h->to);
	fprintf(d->f,
	        "; a pixel column is %.3g %s, coloured by its dominant "
	        "state</text>\n",
	        d->ns_px / (double)unit_for(d->ns_px),
	        unit_name(unit_for(d->ns_px)));
	if (h->svg)
		return;
	fprintf(d->f,
	        "<text x=\"%u\" y=\"38\" text-anchor=\"end\" "
	        "id=\"cursor\" fill=\"#555\">drag to zoom, double-click "
	        "to reset</text>\n",
	        d->width - MARGIN);
	if (d->nfolded)
		fprintf(d->f,
		        "<text x=\"%u\" y=\"20\" text-anchor=\"end\" "
		        "id=\"fold\" class=\"btn\" data-n=\"%u\">\xe2\x96\xb8 "
		        "%u row%s idle the whole range folded: click to "
		        "show</text>\n",
		        d->width - MARGIN, d->nfolded, d->nfolded,
		        d->nfolded == 1 ? "" : "s");
}

static void
draw_axis(draw *d)
{
	const html_writer *h = d->h;
	double step = nice_step((double)h->span);
	uint64_t unit = unit_for((double)h->to);
	int dec = decimals_for(step, unit);

	fputs("<g id=\"axis\" class=\"ax\">\n", d->f);
	for (double t = ceil((double)h->from / step) * step;
	     t <= (double)h->to + step * 1e-9; t += step) {
		double x = PLOT_X + hw_x(h, (uint64_t)llround(t));

		fprintf(d->f,
		        "<line x1=\"%.1f\" y1=\"%u\" x2=\"%.1f\" y2=\"%u\"/>"
		        "<text x=\"%.1f\" y=\"%u\" text-anchor=\"middle\">%.*f "
		        "%s</text>\n",
		        x, TOP - 6, x, d->bottom, x, TOP - 10, dec,
		        t / (double)unit, unit_name(unit));
	}
	fputs("</g>\n", d->f);
}

/* ---- Rows --------------------------------------------------------------- */

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
draw_run(draw *d, const hw_thread *t, uint32_t state, uint32_t c0, uint32_t c1,
         double total)
{
	const html_writer *h = d->h;
	double in = state_ns(t, state, c0, c1);

	fprintf(d->f,
	        "<rect class=\"s%u\" x=\"%u\" y=\"0\" width=\"%u\" "
	        "height=\"%u\"><title>",
	        state, c0, c1 - c0, ROW_H);
	state_name(d, state);
	fputs(": ", d->f);
	put_time(d, h->from + (uint64_t)llround(c0 * d->ns_px));
	fputs(" to ", d->f);
	put_time(d, h->from + (uint64_t)llround(c1 * d->ns_px));
	if (total > 0 && in < total * 0.995)
		fprintf(d->f, " (%.0f%% of it; other states less)",
		        100 * in / total);
	fputs("</title></rect>\n", d->f);
	shown_add(d, state);
	d->ndrawn++;
}

/* A row's bars, in a group the script moves when rows fold. */
static void
draw_row(draw *d, size_t i)
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

static const char *
hide(const draw *d, size_t row)
{
	return d->row_y[row] < 0 ? " display=\"none\"" : "";
}

static void
draw_names(draw *d)
{
	for (size_t i = 0; i < d->info->nthreads; i++) {
		const mg_thread *t = &d->info->threads[i];
		int32_t y = d->row_y[i] < 0 ? 0 : d->row_y[i];

		fprintf(d->f,
		        "<text class=\"rn\" data-r=\"%zu\" data-idle=\"%d\" "
		        "data-k=\"%u\" x=\"%u\" y=\"%d\"%s><title>",
		        i, d->idle[i], t->task, LABEL_X, y + ROW_H - 3,
		        hide(d, i));
		esc(d->f, t->name);
		fputs("</title>", d->f);
		thread_short(d, i);
		if (!d->h->threads[i].records)
			fputs(" (no records)", d->f);
		else if (d->idle[i])
			fputs(" (idle)", d->f);
		fputs("</text>\n", d->f);
	}
}

/* A line above the first row shown of each task but the first. */
static void
draw_seps(draw *d)
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
			        LABEL_X, d->row_y[i] - 2, d->width - MARGIN,
			        d->row_y[i] - 2);
		first = false;
	}
}

/* ---- What ran: function names on the bars -------------------------------- */

static const char *
seg_name(const draw *d, const hw_seg *s)
{
	if (s->kind == HW_RUN)
		return lb_value(lb_type(d->info->labels, HW_TYPE_RUN), s->id);
	return lb_func(d->info, s->id);
}

static void
put_name(const draw *d, const hw_seg *s)
{
	const char *n = seg_name(d, s);

	if (n)
		esc(d->f, n);
	else
		fprintf(d->f, "function %" PRIu64, s->id);
}

static void
draw_seg(draw *d, size_t row, const hw_seg *s)
{
	const char *n = seg_name(d, s);
	size_t len = n ? strlen(n) : 12;
	double w = s->x1 - s->x0;
	int32_t y = d->row_y[row] < 0 ? 0 : d->row_y[row];

	fprintf(d->f,
	        "<rect class=\"fn%s\" data-r=\"%zu\" data-a=\"%.2f\" "
	        "data-b=\"%.2f\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" "
	        "height=\"%u\"%s><title>",
	        s->kind == HW_FUNC ? " uf" : "", row, s->x0, s->x1,
	        PLOT_X + s->x0, y, w < 0.5 ? 0.5 : w, ROW_H, hide(d, row));
	if (s->count > 1)
		fprintf(d->f, "%u runs: ", s->count);
	put_name(d, s);
	if (s->mixed)
		fputs(" and others", d->f);
	fputs(s->kind == HW_RUN ? " (remote function run): "
	                        : " (user function): ",
	      d->f);
	put_time(d, s->b);
	fputs(" to ", d->f);
	put_time(d, s->e);
	fputs("</title></rect>\n", d->f);
	fprintf(d->f,
	        "<text class=\"fl\" data-r=\"%zu\" data-a=\"%.2f\" "
	        "data-b=\"%.2f\" data-n=\"%zu\" x=\"%.2f\" y=\"%d\"%s%s>",
	        row, s->x0, s->x1, len, PLOT_X + s->x0 + 2, y + ROW_H - 4,
	        w >= (double)len * 6 + 4 ? "" : " visibility=\"hidden\"",
	        hide(d, row));
	put_name(d, s);
	fputs("</text>\n", d->f);
	d->nsegs++;
}

/* ---- User events: markers with their labels ------------------------------ */

static void
mark_text(const draw *d, const hw_mark *m, bool full)
{
	const mg_type_label *tl = lb_type(d->info->labels, m->type);
	const char *v = lb_value(tl, m->value);

	if (full || !v) {
		if (tl && tl->name)
			esc(d->f, tl->name);
		else
			fprintf(d->f, "type %u", m->type);
		fputs(" = ", d->f);
	}
	if (v)
		esc(d->f, v);
	else
		fprintf(d->f, "%" PRIu64, m->value);
	if (full)
		fprintf(d->f, " (type %u, value %" PRIu64 ")", m->type,
		        m->value);
}

static void
draw_mark(draw *d, size_t row, const hw_mark *m, double next)
{
	int32_t y = d->row_y[row] < 0 ? 0 : d->row_y[row];

	fprintf(d->f,
	        "<path class=\"ev\" data-r=\"%zu\" data-a=\"%.2f\" "
	        "data-y=\"%d\" transform=\"translate(%.2f,%d)\" "
	        "d=\"M0,0l-3.5,-5h7z\"%s><title>",
	        row, m->x, y + 5, PLOT_X + m->x, y + 5, hide(d, row));
	if (m->count > 1)
		fprintf(d->f, "%u events from ", m->count);
	else
		fputs("event at ", d->f);
	put_time(d, m->t);
	fputs(": ", d->f);
	mark_text(d, m, true);
	if (m->mixed)
		fputs(" and others", d->f);
	fputs("</title></path>\n", d->f);
	fprintf(d->f,
	        "<text class=\"el\" data-r=\"%zu\" data-a=\"%.2f\" "
	        "data-b=\"%.2f\" x=\"%.2f\" y=\"%d\"%s%s>",
	        row, m->x + 4, next, PLOT_X + m->x + 4, y + ROW_H - 4,
	        next - m->x >= 40 ? "" : " visibility=\"hidden\"",
	        hide(d, row));
	mark_text(d, m, false);
	fputs("</text>\n", d->f);
	d->nmarks++;
}

static void
draw_overlay(draw *d)
{
	for (size_t i = 0; i < d->h->nthreads; i++) {
		const hw_thread *t = &d->h->threads[i];

		for (size_t k = 0; k < t->nsegs; k++)
			draw_seg(d, i, &t->segs[k]);
		for (size_t k = 0; k < t->nmarks; k++)
			draw_mark(d, i, &t->marks[k],
			          k + 1 < t->nmarks ? t->marks[k + 1].x
			                            : d->h->width);
	}
}

/* ---- Messages ----------------------------------------------------------- */

static int
line_cmp(const void *a, const void *b)
{
	const hw_line *x = *(const hw_line *const *)a;
	const hw_line *y = *(const hw_line *const *)b;

	return (x->count < y->count) - (x->count > y->count);
}

static double
line_x(const draw *d, int32_t c, uint64_t exact, bool one)
{
	if (one)
		return hw_x(d->h, exact);
	return c < 0                       ? -1
	       : c >= (int32_t)d->h->width ? d->h->width + 1
	                                   : c + 0.5;
}

static void
put_kind(const draw *d, const hw_line *l)
{
	const char *k = d->runtime ? lb_comm_kind(l->tag) : NULL;

	if (l->mixed)
		fputs("messages of several kinds", d->f);
	else if (k)
		fputs(k, d->f);
	else
		fprintf(d->f, "tag %u", l->tag);
}

static void
draw_line(draw *d, const hw_line *l)
{
	bool one = l->count == 1;
	double a = line_x(d, l->c0, l->first, one);
	double b = line_x(d, l->c1, l->last_recv, one);
	char cls[4] = {'x', 0};

	if (!l->mixed)
		cls[0] = (char)('0' + l->tag % 8);
	fprintf(d->f,
	        "<line class=\"m%s\" data-f=\"%u\" data-t=\"%u\" "
	        "data-a=\"%.2f\" data-b=\"%.2f\" x1=\"%.2f\" y1=\"%d\" "
	        "x2=\"%.2f\" y2=\"%d\" marker-end=\"url(#a%s)\"%s><title>",
	        cls, l->from, l->to, a, b, PLOT_X + a,
	        d->row_y[l->from] + ROW_H / 2, PLOT_X + b,
	        d->row_y[l->to] + ROW_H / 2, cls,
	        d->row_y[l->from] < 0 || d->row_y[l->to] < 0
	            ? " display=\"none\""
	            : "");
	put_kind(d, l);
	fprintf(d->f, ": %" PRIu64 " message%s ", l->count, one ? "" : "s");
	thread_short(d, l->from);
	fputs(" \xe2\x86\x92 ", d->f);
	thread_short(d, l->to);
	fprintf(d->f, ", %" PRIu64 " bytes, tag ", l->bytes);
	if (l->mixed)
		fputs("mixed", d->f);
	else
		fprintf(d->f, "%u", l->tag);
	fputs("; sent at ", d->f);
	put_time(d, l->first);
	fputs(", received at ", d->f);
	put_time(d, l->last_recv);
	if (!one)
		fputs(" (the first)", d->f);
	fputs("</title></line>\n", d->f);
	d->mixed |= l->mixed;
	if (!l->mixed)
		d->tags[l->tag % 8] = true;
	d->big_tags |= l->tag >= 8;
}

static void
draw_lines(draw *d)
{
	const html_writer *h = d->h;
	hw_line **all = malloc((h->nlines + 1) * sizeof *all);
	size_t n = 0;

	if (!all)
		return;
	for (size_t i = 0; i < h->lcap; i++)
		if (h->lines[i].count)
			all[n++] = &h->lines[i];
	if (n > h->max_lines) {
		qsort(all, n, sizeof *all, line_cmp);
		n = h->max_lines;
	}
	for (size_t i = 0; i < n; i++)
		draw_line(d, all[i]);
	d->nlines_drawn = n;
	free(all);
}

/* ---- Legend -------------------------------------------------------------- */

static int
u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static uint32_t
legend_rows(const draw *d, size_t items)
{
	uint32_t per = (d->width - 16) / LEG_W;

	return (uint32_t)((items + per - 1) / (per ? per : 1));
}

static void
legend_item(draw *d, size_t k, uint32_t y0, const char *cls)
{
	uint32_t per = (d->width - 16) / LEG_W;
	uint32_t x = 8 + (uint32_t)(k % per) * LEG_W;
	uint32_t y = y0 + (uint32_t)(k / per) * PITCH;

	if (cls[0] == 's')
		fprintf(d->f,
		        "<rect class=\"%s\" x=\"%u\" y=\"%u\" width=\"14\" "
		        "height=\"12\" stroke=\"#888\"/>",
		        cls, x, y);
	else if (!strcmp(cls, "fn"))
		fprintf(d->f,
		        "<rect class=\"fn\" x=\"%u\" y=\"%u\" width=\"14\" "
		        "height=\"12\"/>",
		        x, y);
	else if (!strcmp(cls, "ev"))
		fprintf(d->f,
		        "<path class=\"ev\" transform=\"translate(%u,%u)\" "
		        "d=\"M0,0l-3.5,-5h7z\"/>",
		        x + 7, y + 8);
	else
		fprintf(d->f,
		        "<line class=\"%s\" x1=\"%u\" y1=\"%u\" x2=\"%u\" "
		        "y2=\"%u\" marker-end=\"url(#a%s)\"/>",
		        cls, x, y + 6, x + 14, y + 6, cls + 1);
	fprintf(d->f, "<text x=\"%u\" y=\"%u\">", x + 20, y + 11);
}

/* The figures of the whole trace (those of `dwork stats`), as text and
 * as data attributes for scripts. */
static void
draw_figures(draw *d, uint32_t y)
{
	const st_stats *s = d->h->st;
	char *line = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&line, &len);

	if (!m)
		return;
	st_print_figures_line(s, m);
	if (fclose(m) != 0) {
		free(line);
		return;
	}
	fprintf(d->f, "<text x=\"8\" y=\"%u\" id=\"figures\"", y);
	if (s->pop.valid)
		fprintf(d->f,
		        " data-load-balance=\"%.6f\" "
		        "data-communication-efficiency=\"%.6f\" "
		        "data-parallel-efficiency=\"%.6f\"",
		        s->pop.lb, s->pop.comm, s->pop.pe);
	fputs(">", d->f);
	esc(d->f, line);
	fputs("</text>\n", d->f);
	free(line);
}

/* The message kinds: call, result, ... in a runtime trace, else tags. */
static void
legend_messages(draw *d, size_t *k, uint32_t y)
{
	char cls[16];

	for (int t = 0; t < 8; t++) {
		const char *kind =
		    d->runtime ? lb_comm_kind((uint32_t)t) : NULL;

		if (!d->tags[t])
			continue;
		snprintf(cls, sizeof cls, "m%d", t);
		legend_item(d, (*k)++, y, cls);
		if (kind && !d->big_tags)
			fprintf(d->f, "%s</text>\n", kind);
		else
			fprintf(d->f, "messages, tag %d%s</text>\n", t,
			        d->big_tags ? " (mod 8)" : "");
	}
	if (d->mixed) {
		legend_item(d, (*k)++, y, "mx");
		fputs("messages of several kinds</text>\n", d->f);
	}
}

static void
draw_legend(draw *d, uint32_t y)
{
	size_t k = 0;
	char cls[16];

	if (d->nshown)
		qsort(d->shown, d->nshown, sizeof *d->shown, u32_cmp);
	fprintf(d->f,
	        "<g id=\"legend\" class=\"legend\" "
	        "transform=\"translate(0,0)\">\n<text x=\"8\" y=\"%u\" "
	        "class=\"h2\">Legend</text>\n",
	        y - 6);
	for (size_t i = 0; i < d->nshown; i++, k++) {
		snprintf(cls, sizeof cls, "s%u", d->shown[i]);
		legend_item(d, k, y, cls);
		fprintf(d->f, "%u ", d->shown[i]);
		state_name(d, d->shown[i]);
		fputs("</text>\n", d->f);
	}
	legend_messages(d, &k, y);
	if (d->nsegs) {
		legend_item(d, k++, y, "fn");
		fputs("a function's run, named</text>\n", d->f);
	}
	if (d->nmarks) {
		legend_item(d, k++, y, "ev");
		fputs("the program's own events</text>\n", d->f);
	}
	y += legend_rows(d, k) * PITCH + 14;
	fprintf(d->f,
	        "<text x=\"8\" y=\"%u\" id=\"counts\">%" PRIu64
	        " messages as %zu line%s",
	        y, d->h->messages, d->nlines_drawn,
	        d->nlines_drawn == 1 ? "" : "s");
	if (d->h->nlines > d->nlines_drawn)
		fprintf(d->f,
		        " (the busiest %zu of %zu paths; %zu paths not "
		        "drawn)",
		        d->nlines_drawn, d->h->nlines,
		        d->h->nlines - d->nlines_drawn);
	fprintf(d->f,
	        "; %zu function run bar%s; %" PRIu64
	        " user events as %zu marker%s; %" PRIu64
	        " event records in all",
	        d->nsegs, d->nsegs == 1 ? "" : "s", d->h->marks_in, d->nmarks,
	        d->nmarks == 1 ? "" : "s", d->h->events);
	if (d->nfolded)
		fprintf(d->f, "; %u idle row%s folded", d->nfolded,
		        d->nfolded == 1 ? "" : "s");
	fputs("</text>\n", d->f);
	draw_figures(d, y + PITCH);
	hw_draw_tree(d->h, d->f, y + 2 * PITCH);
	fputs("</g>\n", d->f);
}

/* ---- Which rows show ------------------------------------------------------
 */

/* Idle the whole range: no state but Idle and Not created, nothing run,
 * no event of its own, no message drawn to or from it. */
static void
fold_rows(draw *d)
{
	const html_writer *h = d->h;
	uint32_t y = TOP;

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
		y += PITCH;
		d->nrows++;
	}
	d->bottom = y;
}

/* ---- Document -------------------------------------------------------------
 */

static void
style(draw *d)
{
	fputs("<style>\ntext{font:11px sans-serif;fill:#222}\n"
	      ".h1{font:bold 15px sans-serif}\n"
	      ".h2{font:bold 11px sans-serif}\n"
	      ".ax line{stroke:#ddd;stroke-width:1}\n"
	      ".ax text{font-size:10px;fill:#555}\n"
	      ".sep{stroke:#bbb;stroke-width:1}\n"
	      "line[class^=m]{stroke-width:1.2}\n"
	      ".mx{stroke:#888}\n"
	      ".fn{fill:none;stroke:#111;stroke-width:.8}\n"
	      ".uf{stroke:#7a4b00;stroke-dasharray:3 1}\n"
	      ".fl,.el{font:9px sans-serif;pointer-events:none;"
	      "paint-order:stroke;stroke:#fff;stroke-width:2.5px}\n"
	      ".fl{fill:#000}.el{fill:#a00}\n"
	      ".ev{fill:#e00;stroke:#fff;stroke-width:.6}\n"
	      ".btn{fill:#0645ad;cursor:pointer;text-decoration:underline}\n",
	      d->f);
	for (size_t i = 0; i < d->nshown; i++) {
		uint32_t c = state_rgb(d, d->shown[i]);

		fprintf(d->f, ".s%u{fill:#%06x}\n", d->shown[i], c & 0xffffff);
	}
	for (int t = 0; t < 8; t++)
		fprintf(d->f, ".m%d{stroke:#%06x}\n", t, tag_rgb[t]);
	fputs("</style>\n<defs>\n", d->f);
	/* Arrowheads, one per message colour: a line ends at its receive. */
	for (int t = 0; t <= 8; t++)
		fprintf(
		    d->f,
		    "<marker id=\"a%c\" viewBox=\"0 0 10 10\" refX=\"10\" "
		    "refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" "
		    "markerUnits=\"userSpaceOnUse\" orient=\"auto\">"
		    "<path d=\"M0,0L10,5L0,10z\" fill=\"#%06x\"/></marker>\n",
		    t < 8 ? '0' + t : 'x', t < 8 ? tag_rgb[t] : 0x888888);
	fputs("</defs>\n", d->f);
}

static const char script[] =
    "<script>\n"
    "(function(){\n"
    "var svg=document.getElementById('tl'),z=document.getElementById('zoom'),"
    "ax=document.getElementById('axis'),cur=document.getElementById('cursor'),"
    "sel=document.getElementById('sel'),leg=document.getElementById('legend'),"
    "fold=document.getElementById('fold'),clip=document.getElementById("
    "'cliprect'),bg=document.getElementById('bg'),sg=document.getElementById("
    "'seps');\n"
    "var D=svg.dataset,X=+D.x,W=+D.w,T0=+D.from,T1=+D.to,TOP=+D.top,PI=+D."
    "pitch,RH=+D.rowh,M=+D.margin,H0=+D.height,B0=+D.bottom;\n"
    "var P=W,v0=0,v1=W,down=null,all=false,BOT=B0,WD=X+W+M,H=H0,Y=[];\n"
    "function q(s){return Array.prototype.slice.call(svg.querySelectorAll(s));}"
    "\n"
    "var names=q('text.rn'),rows=q('g.row'),xs=q('[data-a]');\n"
    "function vis(e,b){e.setAttribute('display',b?'inline':'none');}\n"
    "function size(){svg.setAttribute('width',WD);svg.setAttribute('height',H);"
    "svg.setAttribute('viewBox','0 0 '+WD+' '+H);bg.setAttribute('width',WD);"
    "bg.setAttribute('height',H);clip.setAttribute('width',P);if(cur)cur."
    "setAttribute('x',WD-M);if(fold)fold.setAttribute('x',WD-M);}\n"
    "function layout(){var n=0,s='',lt=null;\n"
    " names.forEach(function(t){var r=+t.dataset.r,show=all||!fold||t.dataset."
    "idle!=='1';Y[r]=show?TOP+PI*n++:-1;vis(t,show);if(show){t.setAttribute("
    "'y',Y[r]+RH-3);if(lt!==null&&t.dataset.k!==lt)s+='<line class=\"sep\" "
    "x1=\"8\" y1=\"'+(Y[r]-2)+'\" x2=\"'+(X+P)+'\" y2=\"'+(Y[r]-2)+'\"/>';lt="
    "t.dataset.k;}});\n"
    " BOT=TOP+n*PI;sg.innerHTML=s;\n"
    " rows.forEach(function(g){var y=Y[+g.dataset.r];vis(g,y>=0);g."
    "setAttribute('transform','translate(0,'+Math.max(y,0)+')');});\n"
    " xs.forEach(function(e){var c=e.tagName,y;if(c==='line'){var f=Y[+e."
    "dataset.f],t=Y[+e.dataset.t];vis(e,f>=0&&t>=0);e.setAttribute('y1',f+RH/"
    "2);e.setAttribute('y2',t+RH/2);return;}y=Y[+e.dataset.r];vis(e,y>=0);if("
    "y<0)return;if(c==='rect')e.setAttribute('y',y);else if(c==='text')e."
    "setAttribute('y',y+RH-4);else e.dataset.y=y+5;});\n"
    " clip.setAttribute('height',BOT-TOP+8);sel.setAttribute('height',BOT-TOP+"
    "4);leg.setAttribute('transform','translate(0,'+(BOT-B0)+')');H=H0+BOT-B0;"
    "\n"
    " if(fold)fold.textContent=(all?'\\u25be ':'\\u25b8 ')+fold.dataset.n+' "
    "row'+(fold.dataset.n==='1'?'':'s')+' idle the whole range '+(all?'shown: "
    "click to fold':'folded: click to show');size();}\n"
    "function tm(p){return T0+(v0+p/P*(v1-v0))/W*(T1-T0);}\n"
    "function unit(ns){return ns>=1e9?[1e9,'s']:ns>=1e6?[1e6,'ms']:ns>=1e3?"
    "[1e3,'\\u00b5s']:[1,'ns'];}\n"
    "function fmt(t,step,top){var u=unit(top),r=step/u[0],d=r>=1?0:Math.min("
    "6,Math.ceil(-Math.log10(r)));return (t/u[0]).toFixed(d)+' '+u[1];}\n"
    "function axis(){var a=tm(0),b=tm(P),raw=(b-a)/8,p=Math.pow(10,"
    "Math.floor(Math.log10(raw))),m=raw/p,step=(m<1.5?1:m<3.5?2:m<7.5?5:10)"
    "*p,s='';\n"
    " for(var t=Math.ceil(a/step)*step;t<=b+step*1e-9;t+=step){var x=X+(t-a)"
    "/(b-a)*P;s+='<line x1=\"'+x+'\" y1=\"'+(TOP-6)+'\" x2=\"'+x+'\" y2=\"'"
    "+BOT+'\"/><text x=\"'+x+'\" y=\"'+(TOP-10)+'\" text-anchor=\"middle\">'"
    "+fmt(t,step,b)+'</text>';}\n"
    " ax.innerHTML=s;}\n"
    "function place(){var k=P/(v1-v0);z.setAttribute('transform','translate('"
    "+(X-v0*k)+',0) scale('+k+',1)');\n"
    " xs.forEach(function(e){var c=e.tagName,a=X+(+e.dataset.a-v0)*k,b="
    "e.dataset.b===undefined?a:X+(+e.dataset.b-v0)*k;\n"
    "  if(c==='line'){e.setAttribute('x1',a);e.setAttribute('x2',b);}else if(c"
    "==='rect'){e.setAttribute('x',a);e.setAttribute('width',Math.max(b-a,.5)"
    ");}else if(c==='text'){var fl=e.getAttribute('class')==='fl';e."
    "setAttribute('x',fl?a+2:a);e.setAttribute('visibility',b-a>=(fl?+e."
    "dataset.n*6+4:36)?'visible':'hidden');}else e.setAttribute('transform',"
    "'translate('+a+','+(e.dataset.y||0)+')');});\n"
    " axis();}\n"
    "function resize(){WD=Math.max(document.documentElement.clientWidth||"
    "window.innerWidth,X+M+200);P=WD-X-M;size();layout();place();}\n"
    "function px(e){var p=svg.createSVGPoint();p.x=e.clientX;p.y=e.clientY;"
    "return p.matrixTransform(svg.getScreenCTM().inverse()).x-X;}\n"
    "svg.addEventListener('mousedown',function(e){var p=px(e);if(p>=0&&p<=P)"
    "{down=p;e.preventDefault();}});\n"
    "svg.addEventListener('mousemove',function(e){var p=px(e);if(p<0||p>P)"
    "return;if(cur)cur.textContent=fmt(tm(p),(tm(P)-tm(0))/P,tm(P));if(down!=="
    "null){sel.setAttribute('x',X+Math.min(p,down));sel.setAttribute('width',"
    "Math.abs(p-down));sel.setAttribute('visibility','visible');}});\n"
    "svg.addEventListener('mouseup',function(e){if(down===null)return;var p="
    "Math.max(0,Math.min(P,px(e)));if(Math.abs(p-down)>3){var a=Math.min(p,"
    "down),b=Math.max(p,down),n0=v0+a/P*(v1-v0),n1=v0+b/P*(v1-v0);v0=n0;v1="
    "n1;place();}down=null;sel.setAttribute('visibility','hidden');});\n"
    "svg.addEventListener('dblclick',function(){v0=0;v1=W;place();});\n"
    "if(fold)fold.addEventListener('click',function(e){all=!all;layout();"
    "place();e.stopPropagation();});\n"
    "window.addEventListener('resize',resize);resize();\n"
    "})();\n"
    "</script>\n";

static void
draw_body(draw *d, uint32_t legend_y)
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
	        PLOT_X, TOP - 4, d->h->width, d->bottom - TOP + 8, PLOT_X);
	for (size_t i = 0; i < d->h->nthreads; i++)
		draw_row(d, i);
	fputs("</g>\n<g id=\"overlay\">\n", d->f);
	draw_overlay(d);
	draw_lines(d);
	d->npath =
	    hw_draw_path(d->h, &(hw_row_geom){d->f, d->row_y, PLOT_X, ROW_H});
	fprintf(d->f,
	        "</g>\n</g>\n<rect id=\"sel\" x=\"0\" y=\"%u\" width=\"0\" "
	        "height=\"%u\" fill=\"#48f\" opacity=\".2\" "
	        "visibility=\"hidden\"/>\n",
	        TOP - 4, d->bottom - TOP + 4);
	draw_legend(d, legend_y);
}

void
hw_draw(html_writer *h, const mg_info *info, FILE *f)
{
	draw d = {.h = h, .info = info, .f = f};
	uint32_t legend_y;
	char *body = NULL;
	size_t blen = 0;
	FILE *mem;

	d.width = PLOT_X + h->width + MARGIN;
	d.ns_px = (double)h->span / h->width;
	d.unit = unit_for((double)(h->to > 0 ? h->to : 1));
	d.decimals = decimals_for(d.ns_px, d.unit);
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
	d.height =
	    legend_y + legend_rows(&d, d.nshown + 11) * PITCH + 40 + 2 * PITCH;
	if (h->svg)
		fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg "
		      "xmlns=\"http://www.w3.org/2000/svg\"",
		      f);
	else
		fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta "
		      "charset=\"utf-8\"><title>",
		      f);
	if (!h->svg) {
		esc(f, info->program && info->program[0] ? info->program
		                                         : "trace");
		fputs(" \xe2\x80\x94 dwork "
		      "timeline</title>\n<style>body{margin:0;"
		      "background:#fff}svg{display:block}</style></"
		      "head>\n<body>\n<svg",
		      f);
	}
	fprintf(f,
	        " id=\"tl\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
	        "data-x=\"%u\" data-w=\"%u\" data-from=\"%" PRIu64
	        "\" data-to=\"%" PRIu64
	        "\" data-top=\"%u\" data-bottom=\"%u\" data-pitch=\"%u\" "
	        "data-rowh=\"%u\" data-margin=\"%u\" data-height=\"%u\">\n",
	        d.width, d.height, d.width, d.height, PLOT_X, h->width, h->from,
	        h->to, TOP, d.bottom, PITCH, ROW_H, MARGIN, d.height);
	fprintf(f,
	        "<rect id=\"bg\" width=\"%u\" height=\"%u\" fill=\"#fff\"/>\n",
	        d.width, d.height);
	style(&d);
	fwrite(body, 1, blen, f);
	free(body);
	free(d.shown);
	free(d.idle);
	free(d.row_y);
	fputs("</svg>\n", f);
	if (!h->svg)
		fprintf(f, "%s</body>\n</html>\n", script);
}
