/*
 * The POP tree in the timeline (html_draw.c calls these): the critical
 * path outlined on the rows it runs on, its messages as lines between
 * them, and the tree as one line of text under the figures.  The
 * outlines carry the data-a/-b/-r (lines -f/-t) the page's script uses
 * to move every drawn thing when it zooms or folds rows.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "output/html_int.h"

#define CP_RGB 0xe6194b

/* Whether [a, b] (ns) meets the drawn range. */
static int
in_range(const html_writer *h, uint64_t a, uint64_t b)
{
	return b >= h->from && a <= h->from + h->span;
}

/* A piece as drawn: the pieces of one thread less than a pixel apart
 * become one outline, so the picture stays bounded by its width. */
typedef struct cp_rect {
	double x0, x1;
	uint64_t start, end;
	bool open;
} cp_rect;

static void
cp_flush(const hw_row_geom *g, uint32_t thread, cp_rect *r)
{
	int32_t y = g->row_y[thread] < 0 ? 0 : g->row_y[thread];

	if (!r->open)
		return;
	fprintf(g->f,
	        "<rect class=\"cp\" data-r=\"%" PRIu32 "\" data-a=\"%.2f\" "
	        "data-b=\"%.2f\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" "
	        "height=\"%u\" fill=\"none\" stroke=\"#%06x\" "
	        "stroke-width=\"2\"><title>critical path: %.6f s to %.6f s"
	        "</title></rect>\n",
	        thread, r->x0, r->x1, g->plot_x + r->x0, y,
	        r->x1 - r->x0 < 0.5 ? 0.5 : r->x1 - r->x0, g->row_h, CP_RGB,
	        (double)r->start * 1e-9, (double)r->end * 1e-9);
	r->open = false;
}

/* Adds piece s to its thread's outline; 1 when one was drawn. */
static size_t
cp_seg(const html_writer *h, const hw_row_geom *g, cp_rect *rs, const rp_seg *s)
{
	cp_rect *r = &rs[s->thread];
	double x0 = hw_x(h, s->start), x1 = hw_x(h, s->end);
	size_t drawn = 0;

	if (r->open && x0 - r->x1 < 1) {
		r->x1 = x1 > r->x1 ? x1 : r->x1;
		r->end = s->end > r->end ? s->end : r->end;
		return 0;
	}
	drawn = r->open;
	cp_flush(g, s->thread, r);
	*r = (cp_rect){x0, x1, s->start, s->end, true};
	return drawn;
}

/* The message from the earlier piece e (its end) to the later l. */
static void
cp_hop(const html_writer *h, const hw_row_geom *g, const rp_seg *e,
       const rp_seg *l)
{
	double x0 = hw_x(h, e->end), x1 = hw_x(h, l->start);
	int32_t y0 = g->row_y[e->thread], y1 = g->row_y[l->thread];

	fprintf(g->f,
	        "<line class=\"cp\" data-f=\"%" PRIu32 "\" data-t=\"%" PRIu32
	        "\" data-a=\"%.2f\" data-b=\"%.2f\" x1=\"%.2f\" y1=\"%u\" "
	        "x2=\"%.2f\" y2=\"%u\" stroke=\"#%06x\" stroke-width=\"2\" "
	        "stroke-dasharray=\"4 2\"><title>critical path: a message"
	        "</title></line>\n",
	        e->thread, l->thread, x0, x1, g->plot_x + x0,
	        (y0 < 0 ? 0 : (uint32_t)y0) + g->row_h / 2, g->plot_x + x1,
	        (y1 < 0 ? 0 : (uint32_t)y1) + g->row_h / 2, CP_RGB);
}

size_t
hw_draw_path(const html_writer *h, const hw_row_geom *g)
{
	const st_stats *s = h->st;
	cp_rect *rs;
	size_t n = 0;
	double last_hop = -2;

	if (!s || !s->ended || !s->npath_segs)
		return 0;
	rs = calloc(h->nthreads + 1, sizeof *rs);
	if (!rs)
		return 0;
	/* the pieces are listed from the end back: drawn forward */
	for (size_t i = s->npath_segs; i-- > 0;) {
		const rp_seg *p = &s->path_segs[i];
		const rp_seg *e = i + 1 < s->npath_segs ? p + 1 : NULL;

		if (p->thread >= h->nthreads || !in_range(h, p->start, p->end))
			continue;
		n += cp_seg(h, g, rs, p);
		if (e && e->thread != p->thread && e->thread < h->nthreads &&
		    hw_x(h, p->start) - last_hop >= 1) {
			cp_hop(h, g, e, p);
			last_hop = hw_x(h, p->start);
		}
	}
	for (uint32_t t = 0; t < h->nthreads; t++) {
		n += rs[t].open;
		cp_flush(g, t, &rs[t]);
	}
	free(rs);
	return n;
}

void
hw_draw_tree(const html_writer *h, FILE *f, uint32_t y)
{
	const st_pop *p = &h->st->pop;

	if (!h->st->ended || !p->valid)
		return;
	fprintf(f, "<text x=\"8\" y=\"%u\" id=\"pop-tree\"", y);
	if (p->ideal_valid)
		fprintf(f,
		        " data-serialization-efficiency=\"%.6f\" "
		        "data-transfer-efficiency=\"%.6f\"",
		        p->ser, p->trf);
	fprintf(f, ">POP tree: PE %.2f = LB %.2f \xc3\x97 CommE %.2f", p->pe,
	        p->lb, p->comm);
	if (p->ideal_valid)
		fprintf(f, " (SerE %.2f \xc3\x97 TrfE %.2f)", p->ser, p->trf);
	fprintf(f,
	        "; critical path (outlined in red) %.6f s, %" PRIu64
	        " messages</text>\n",
	        (double)h->st->ideal * 1e-9, h->st->path_messages);
}
