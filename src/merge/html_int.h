/* Internals of the timeline writer (html.c) and its drawing (html_draw.c). */
#ifndef DW_MERGE_HTML_INT_H
#define DW_MERGE_HTML_INT_H

#include <stdio.h>

#include "merge/html.h"
#include "merge/stats.h"

#define HW_WIDTH       960
#define HW_MAX_LINES   20000
#define HW_NOT_CREATED 2 /* Paraver's "Not created": drawn as nothing */

/* A thread: the ns it spent in each state per pixel column. */
typedef struct hw_thread {
	uint32_t nused;  /* states it entered in the range */
	uint32_t *state; /* state[i] owns cols[i] */
	double **cols;   /* cols[i][c]: ns in state[i] in column c */
	bool records;    /* has a record other than "Not created" */
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
	uint64_t messages, events;
	st_stats *st; /* the figures shown under the legend */
} html_writer;

/* Pixel position (from the plot's left edge) of time t in ns. */
double hw_x(const html_writer *h, uint64_t t);

/* Writes the whole picture to f. */
void hw_draw(html_writer *h, const mg_info *info, FILE *f);

#endif
