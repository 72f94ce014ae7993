/*
 * The timeline picture: one self-contained HTML file (or a bare SVG) of
 * a trace — each thread's states as coloured bars over time, messages as
 * lines from send to receive, a legend from the trace's state colours
 * and names, hover text on every bar and line.  No network, no external
 * script or style: an inline SVG, an inline style, and (HTML only) a few
 * lines of inline script for zooming with the mouse.
 *
 * Any trace size: the plot is a fixed number of pixel columns, and each
 * thread's time in each state is summed per column as the records go by;
 * a column shows its dominant state (the one the thread spent most of
 * the column in).  So a column of a large trace aggregates its records
 * instead of dropping any, and a small trace is drawn record by record.
 * Messages are drawn one line per distinct pixel path, with the number
 * of messages it stands for; past a cap, the busiest paths are drawn and
 * the legend says how many were not.
 *
 * Memory: per thread, one column array per state it entered (plot
 * width x 8 bytes each), plus one entry per distinct message path.
 */
#ifndef DW_MERGE_HTML_H
#define DW_MERGE_HTML_H

#include <stdbool.h>
#include <stdint.h>

#include "merge/writer.h"

typedef struct html_opts {
	uint64_t from, to;  /* ns: the range drawn; to 0 = the end */
	uint32_t width;     /* pixel columns of the plot; 0 = 960 */
	bool svg;           /* a bare SVG (no script) instead of HTML */
	uint32_t max_lines; /* message paths drawn; 0 = 20000 */
} html_opts;

/*
 * A timeline writer writing path (written as path.tmp and renamed by
 * end).  o may be NULL for the defaults.  Returns DW_OK with *out set,
 * DW_EINVAL (from >= to when to is given, or a width over 100000), or
 * DW_ENOMEM.
 */
dw_err html_writer_open(const char *path, const html_opts *o, mg_writer **out);

/* The format table's constructor: PREFIX.html with the defaults. */
dw_err html_writer_new(const char *prefix, mg_writer **out);

#endif
