/*
 * Internals of the timeline's drawing, shared by its files:
 * html_text.c (escaping, times, state and thread names, pixel positions),
 * html_draw.c (header, axis, rows, which rows fold, the whole picture),
 * html_marks.c (function runs and user events over the bars),
 * html_lines.c (message lines), html_legend.c (the legend and figures),
 * html_page.c (the SVG/HTML page, its style and script).  Every
 * function writes to d->f; none fails (the writer checks the stream).
 */
#ifndef DW_OUTPUT_HTML_DRAW_H
#define DW_OUTPUT_HTML_DRAW_H

#include <stdio.h>

#include "output/html_int.h"

#define HW_LABEL_X 8   /* thread names start here */
#define HW_PLOT_X  200 /* the plot's left edge */
#define HW_MARGIN  20  /* right of the plot */
#define HW_TOP     72  /* first row */
#define HW_ROW_H   14  /* a bar's height */
#define HW_PITCH   18  /* a row's height */

/* The picture being drawn: what hw_draw measured, and what the drawing
 * found on the way (for the style and the legend). */
typedef struct hw_canvas {
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
} hw_canvas;

/* Text, escaped for XML: n bytes of s; a string (NULL: nothing). */
void hw_esc_n(FILE *f, const char *s, size_t n);
void hw_esc(FILE *f, const char *s);

/* A time in the picture's unit and decimals; a unit (ns per unit)
 * named, the unit for a span, the decimals that resolve res ns in it. */
void hw_put_time(const hw_canvas *d, uint64_t t);
const char *hw_unit_name(uint64_t unit);
uint64_t hw_unit_for(double ns);
int hw_decimals_for(double res, uint64_t unit);

/* A state's colour (its label's, else one of a palette) and name. */
uint32_t hw_state_rgb(const hw_canvas *d, uint32_t state);
void hw_state_name(const hw_canvas *d, uint32_t state);

/* Thread i's short name ("worker 3 executor 1", else "2.1 label"). */
void hw_thread_short(const hw_canvas *d, size_t i);

/* The attribute that hides an element of a folded row, or "". */
const char *hw_hide(const hw_canvas *d, size_t row);

/* Function runs and user events over the bars (html_marks.c). */
void hw_draw_overlay(hw_canvas *d);

/* The message lines, the busiest max_lines (html_lines.c). */
void hw_draw_lines(hw_canvas *d);

/* The legend at y; the rows a legend of `items` takes (html_legend.c). */
void hw_draw_legend(hw_canvas *d, uint32_t y);
uint32_t hw_legend_rows(const hw_canvas *d, size_t items);

/* The page before the body (document, SVG element, background, style)
 * and after it (the end, and for HTML the script) (html_page.c). */
void hw_page_open(const hw_canvas *d);
void hw_page_close(const hw_canvas *d);

#endif
