/*
 * What ran and what the program marked, drawn over the bars: a
 * function's runs as named outlines, user events as markers with labels.
 */
#include <inttypes.h>
#include <string.h>

#include "output/html_draw.h"
#include "output/labels.h"

/* ---- What ran: function names on the bars -------------------------------- */

static const char *
seg_name(const hw_canvas *d, const hw_seg *s)
{
	if (s->kind == HW_RUN)
		return lb_value(lb_type(d->info->labels, HW_TYPE_RUN), s->id);
	return lb_func(d->info, s->id);
}

static void
put_name(const hw_canvas *d, const hw_seg *s)
{
	const char *n = seg_name(d, s);

	if (n)
		hw_esc(d->f, n);
	else
		fprintf(d->f, "function %" PRIu64, s->id);
}

static void
draw_seg(hw_canvas *d, size_t row, const hw_seg *s)
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
	        HW_PLOT_X + s->x0, y, w < 0.5 ? 0.5 : w, HW_ROW_H,
	        hw_hide(d, row));
	if (s->count > 1)
		fprintf(d->f, "%u runs: ", s->count);
	put_name(d, s);
	if (s->mixed)
		fputs(" and others", d->f);
	fputs(s->kind == HW_RUN ? " (remote function run): "
	                        : " (user function): ",
	      d->f);
	hw_put_time(d, s->b);
	fputs(" to ", d->f);
	hw_put_time(d, s->e);
	fputs("</title></rect>\n", d->f);
	fprintf(d->f,
	        "<text class=\"fl\" data-r=\"%zu\" data-a=\"%.2f\" "
	        "data-b=\"%.2f\" data-n=\"%zu\" x=\"%.2f\" y=\"%d\"%s%s>",
	        row, s->x0, s->x1, len, HW_PLOT_X + s->x0 + 2, y + HW_ROW_H - 4,
	        w >= (double)len * 6 + 4 ? "" : " visibility=\"hidden\"",
	        hw_hide(d, row));
	put_name(d, s);
	fputs("</text>\n", d->f);
	d->nsegs++;
}

/* ---- User events: markers with their labels ------------------------------ */

static void
mark_text(const hw_canvas *d, const hw_mark *m, bool full)
{
	const mg_type_label *tl = lb_type(d->info->labels, m->type);
	const char *v = lb_value(tl, m->value);

	if (full || !v) {
		if (tl && tl->name)
			hw_esc(d->f, tl->name);
		else
			fprintf(d->f, "type %u", m->type);
		fputs(" = ", d->f);
	}
	if (v)
		hw_esc(d->f, v);
	else
		fprintf(d->f, "%" PRIu64, m->value);
	if (full)
		fprintf(d->f, " (type %u, value %" PRIu64 ")", m->type,
		        m->value);
}

static void
draw_mark(hw_canvas *d, size_t row, const hw_mark *m, double next)
{
	int32_t y = d->row_y[row] < 0 ? 0 : d->row_y[row];

	fprintf(d->f,
	        "<path class=\"ev\" data-r=\"%zu\" data-a=\"%.2f\" "
	        "data-y=\"%d\" transform=\"translate(%.2f,%d)\" "
	        "d=\"M0,0l-3.5,-5h7z\"%s><title>",
	        row, m->x, y + 5, HW_PLOT_X + m->x, y + 5, hw_hide(d, row));
	if (m->count > 1)
		fprintf(d->f, "%u events from ", m->count);
	else
		fputs("event at ", d->f);
	hw_put_time(d, m->t);
	fputs(": ", d->f);
	mark_text(d, m, true);
	if (m->mixed)
		fputs(" and others", d->f);
	fputs("</title></path>\n", d->f);
	fprintf(d->f,
	        "<text class=\"el\" data-r=\"%zu\" data-a=\"%.2f\" "
	        "data-b=\"%.2f\" x=\"%.2f\" y=\"%d\"%s%s>",
	        row, m->x + 4, next, HW_PLOT_X + m->x + 4, y + HW_ROW_H - 4,
	        next - m->x >= 40 ? "" : " visibility=\"hidden\"",
	        hw_hide(d, row));
	mark_text(d, m, false);
	fputs("</text>\n", d->f);
	d->nmarks++;
}

void
hw_draw_overlay(hw_canvas *d)
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
