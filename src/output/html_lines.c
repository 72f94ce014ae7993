/*
 * Message lines of the timeline: one line per path (sender, receiver,
 * pixel columns), the busiest drawn when there are too many.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "output/html_draw.h"
#include "output/labels.h"

/* ---- Messages ----------------------------------------------------------- */

static int
line_cmp(const void *a, const void *b)
{
	const hw_line *x = *(const hw_line *const *)a;
	const hw_line *y = *(const hw_line *const *)b;

	return (x->count < y->count) - (x->count > y->count);
}

static double
line_x(const hw_canvas *d, int32_t c, uint64_t exact, bool one)
{
	if (one)
		return hw_x(d->h, exact);
	return c < 0                       ? -1
	       : c >= (int32_t)d->h->width ? d->h->width + 1
	                                   : c + 0.5;
}

static void
put_kind(const hw_canvas *d, const hw_line *l)
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
draw_line(hw_canvas *d, const hw_line *l)
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
	        cls, l->from, l->to, a, b, HW_PLOT_X + a,
	        d->row_y[l->from] + HW_ROW_H / 2, HW_PLOT_X + b,
	        d->row_y[l->to] + HW_ROW_H / 2, cls,
	        d->row_y[l->from] < 0 || d->row_y[l->to] < 0
	            ? " display=\"none\""
	            : "");
	put_kind(d, l);
	fprintf(d->f, ": %" PRIu64 " message%s ", l->count, one ? "" : "s");
	hw_thread_short(d, l->from);
	fputs(" \xe2\x86\x92 ", d->f);
	hw_thread_short(d, l->to);
	fprintf(d->f, ", %" PRIu64 " bytes, tag ", l->bytes);
	if (l->mixed)
		fputs("mixed", d->f);
	else
		fprintf(d->f, "%u", l->tag);
	fputs("; sent at ", d->f);
	hw_put_time(d, l->first);
	fputs(", received at ", d->f);
	hw_put_time(d, l->last_recv);
	if (!one)
		fputs(" (the first)", d->f);
	fputs("</title></line>\n", d->f);
	d->mixed |= l->mixed;
	if (!l->mixed)
		d->tags[l->tag % 8] = true;
	d->big_tags |= l->tag >= 8;
}

void
hw_draw_lines(hw_canvas *d)
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
