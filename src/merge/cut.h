/*
 * Paraver's cutter for every format: a writer that passes on only a time
 * window and a set of tasks of the trace to another writer, and counts
 * what it left out (docs/merge.md, "Cutting").
 *
 * Times are shifted so that the window starts at 0 and the trace's
 * duration is the window's length.  A state across a window edge is
 * clipped at it (so states still tile each thread's time); events are
 * kept when from <= t <= to; a communication is kept when its four times
 * lie in the window and both its threads are kept, else it is left out
 * and counted as cut.  The tasks kept are renumbered 1..N in the order
 * of their numbers (their names keep their processes' names, "worker
 * 3 ..."), with their threads, nodes and CPUs.
 *
 * The byte cap is measured: the writer computes the bytes each record
 * it passes on takes in a .prv, and notes the time of the first record
 * that would take the file over the cap (cap_to); a caller that gets a
 * cap_to runs the cut again with to = cap_to (cut_run does).
 */
#ifndef DW_MERGE_CUT_H
#define DW_MERGE_CUT_H

#include <stdbool.h>
#include <stdint.h>

#include "tracefile/reader.h"
#include "merge/writer.h"

typedef struct cut_range {
	uint32_t lo, hi; /* Paraver task numbers (tracer task + 1) */
} cut_range;

typedef struct cut_opts {
	uint64_t from, to;      /* ns; to 0 = the end */
	const cut_range *tasks; /* NULL: every task */
	size_t ntasks;          /* ranges */
	uint64_t max_bytes;     /* of the .prv; 0 = none */
} cut_opts;

typedef struct cut_report {
	uint64_t from, to;       /* the window cut, ns of the input */
	uint64_t states_out;     /* state records left out */
	uint64_t states_clipped; /* clipped at an edge of the window */
	uint64_t events_out;     /* event records left out */
	uint64_t comms_cut;      /* communications left out */
	uint32_t tasks_out, threads_out;
	uint64_t prv_bytes; /* of the .prv, as measured */
	uint64_t cap_to;    /* the byte cap ends the window here; 0 */
	bool cap_reached;
} cut_report;

/* Whether o asks for any cut at all. */
bool cut_wanted(const cut_opts *o);

/*
 * A writer that passes the cut of o on to inner (which it then owns and
 * frees); rep gets the counts (kept by the caller, filled as the records
 * go by).  With a byte cap, once the cap is reached nothing more is
 * passed on and end does not end inner (its outputs are not written):
 * rep->cap_reached says so.  DW_OK or DW_ENOMEM.  begin fails with
 * DW_EINVAL and a message when the window starts after the trace's end
 * or a task asked for is not in the trace.
 */
dw_err cut_writer_new(const cut_opts *o, mg_writer *inner, cut_report *rep,
                      mg_writer **out);

/*
 * Reads the trace through a cut: source(ctx, w, errs) merges or reads the
 * trace into w (it is called once, or twice when the byte cap is reached:
 * the second time with the window ending where the cap was, and make
 * creating fresh inner writers each time).  Problems are added to errs
 * on the first read only.  Returns what source returned, or the writers'
 * error; *w_out gets the writer of the last read, for its message (the
 * caller frees it).
 */
typedef dw_err (*cut_source)(void *ctx, mg_writer *w, rd_errlist *errs);
typedef dw_err (*cut_make)(void *ctx, mg_writer **inner);
dw_err cut_run(const cut_opts *o, cut_source source, cut_make make, void *ctx,
               rd_errlist *errs, cut_report *rep, mg_writer **w_out);

#endif
