/*
 * The legend under the timeline: the states, message kinds and markers
 * drawn, the counts, the figures of the whole trace and the POP tree.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/html_draw.h"
#include "output/labels.h"
#include "output/stats.h"

#define LEG_W 190 /* a legend item's width */

/* ---- Legend -------------------------------------------------------------- */

static int
u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

uint32_t
hw_legend_rows(const hw_canvas *d, size_t items)
{
	uint32_t per = (d->width - 16) / LEG_W;

	return (uint32_t)((items + per - 1) / (per ? per : 1));
}

static void
legend_item(hw_canvas *d, size_t k, uint32_t y0, const char *cls)
{
	uint32_t per = (d->width - 16) / LEG_W;
	uint32_t x = 8 + (uint32_t)(k % per) * LEG_W;
	uint32_t y = y0 + (uint32_t)(k / per) * HW_PITCH;

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
draw_figures(hw_canvas *d, uint32_t y)
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
	hw_esc(d->f, line);
	fputs("</text>\n", d->f);
	free(line);
}

/* The message kinds: call, result, ... in a runtime trace, else tags. */
static void
legend_messages(hw_canvas *d, size_t *k, uint32_t y)
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

void
hw_draw_legend(hw_canvas *d, uint32_t y)
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
		hw_state_name(d, d->shown[i]);
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
	y += hw_legend_rows(d, k) * HW_PITCH + 14;
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
	draw_figures(d, y + HW_PITCH);
	hw_draw_tree(d->h, d->f, y + 2 * HW_PITCH);
	fputs("</g>\n", d->f);
}
