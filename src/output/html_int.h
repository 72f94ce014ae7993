/* Internals of the timeline writer (html.c) and its drawing (html_draw.h). */
#ifndef DW_MERGE_HTML_INT_H
#define DW_MERGE_HTML_INT_H

#include <stdio.h>

#include "output/html.h"
#include "output/stats.h"

#define HW_WIDTH       960
#define HW_MAX_LINES   20000
#define HW_NOT_CREATED 2 /* Paraver's "Not created": drawn as nothing */
#define HW_IDLE        0
#define HW_TYPE_RUN    71000001u /* DW_EV_FUNCTION */
#define HW_TYPE_FUNC   60000019u /* user functions (Extrae's type) */

enum { HW_RUN, HW_FUNC, HW_NKINDS }; /* DW_EV_FUNCTION, type 60000019 */

/* What ran on a thread: one run of a function, or the runs of a few
 * pixels drawn as one (count > 1; mixed: of several functions). */
typedef struct hw_seg {
	double x0, x1;  /* plot px */
	uint64_t b, e;  /* ns: the first's begin, the last's end */
	uint64_t id;    /* the first's function */
	uint32_t count; /* runs it stands for */
	bool mixed;
	uint8_t kind; /* HW_RUN or HW_FUNC */
} hw_seg;

/* A user event, or the events of one pixel column of a thread. */
typedef struct hw_mark {
	double x;
	uint64_t t; /* the first's */
	uint32_t type, count;
	uint64_t value;
	bool mixed;
} hw_mark;

/* A thread: the ns it spent in each state per pixel column, what ran
 * on it, its own events. */
typedef struct hw_thread {
	uint32_t nused;  /* states it entered in the range */
	uint32_t *state; /* state[i] owns cols[i] */
	double **cols;   /* cols[i][c]: ns in state[i] in column c */
	bool records;    /* has a record other than "Not created" */
	uint64_t live;   /* end of its last state other than Not created */
	uint64_t cur[HW_NKINDS], since[HW_NKINDS]; /* what runs now */
	hw_seg *segs;
	size_t nsegs, capsegs;
	hw_mark *marks;
	size_t nmarks, capmarks;
} hw_thread;

/* A message path: sender, receiver and their pixel columns (-1 before
 * the range, width after it); count 0 marks a free slot. */
typedef struct hw_line {
	uint32_t from, to;
	int32_t c0, c1;
	uint32_t tag;
	bool mixed; /* messages of several tags */
	uint64_t count, bytes;
	uint64_t first, last_recv; /* the first message's send and receive */
} hw_line;

typedef struct html_writer {
	mg_writer base;
	char *path, *tmp;
	uint64_t from, to, to_opt, span; /* ns */
	uint32_t width, max_lines;
	bool svg, ended;
	hw_thread *threads;
	size_t nthreads;
	hw_line *lines; /* open addressing, lcap a power of two */
	size_t lcap, nlines;
	uint64_t messages, events, marks_in; /* marks_in: user events drawn */
	st_stats *st; /* the figures shown under the legend */
} html_writer;

/* Ends what runs on every thread at its end (before hw_draw). */
void hw_close_runs(html_writer *h);

/* Pixel position (from the plot's left edge) of time t in ns
 * (html_text.c). */
double hw_x(const html_writer *h, uint64_t t);

/* Where rows are, for the drawings of other files. */
typedef struct hw_row_geom {
	FILE *f;
	const int32_t *row_y; /* per thread: its row's y, -1 when folded */
	uint32_t plot_x, row_h;
} hw_row_geom;

/* The critical path outlined on its rows (html_pop.c); the pieces
 * drawn. */
size_t hw_draw_path(const html_writer *h, const hw_row_geom *g);

/* The POP tree as one line of text at y (html_pop.c). */
void hw_draw_tree(const html_writer *h, FILE *f, uint32_t y);

/* Writes the whole picture to f. */
void hw_draw(html_writer *h, const mg_info *info, FILE *f);

#endif
