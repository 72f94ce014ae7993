/*
 * The merger: every per-thread file of a trace directory into one trace,
 * through a writer (merge/writer.h).  docs/merge.md describes what it
 * does with clocks, states and communications.
 *
 * How it works, in two passes over the files:
 *  1. scan: each thread file is read once on its own, for its calibration,
 *     its sync records, its first and last record and its record count;
 *     every problem of the input is reported here, once.
 *  2. merge: the threads' streams, each already in time order, are merged
 *     by a k-way merge on corrected time.  A state needs its end before
 *     it can be written at its start: a second cursor on the same file
 *     reads ahead to the next state change, so a state costs nothing to
 *     hold.  A communication is written at its send and needs its
 *     receive: the records after a send wait in a queue until its receive
 *     is read (messages in flight), bounded by a window.
 * Memory: a few read windows per stream, the messages in flight and the
 * records queued behind them; never the trace.
 *
 * Not thread-safe; one merge at a time per process (the reader's window
 * size is a global).
 */
#ifndef DW_MERGE_MERGE_H
#define DW_MERGE_MERGE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tracefile/reader.h"
#include "merge/writer.h"

typedef struct mg_opts {
	const char *dir; /* the trace directory */
	/* Progress line ("records done of total, rate, time left"), shown
	 * on this stream once the merge has run for a second; NULL: none.
	 * The caller decides whether it is a terminal. */
	FILE *progress;
	/* Records that may wait behind a send whose receive has not been
	 * read; 0: the default (MG_WINDOW_DEFAULT).  A send still without
	 * its receive when the window is full is reported unmatched. */
	uint32_t window;
	/* 2 or more: a second thread scans half the processes, a thread
	 * decodes the streams during the merge (merge/decode.h) and the
	 * writer runs on a thread of its own (merge/pipe.h); the outputs
	 * and the problems reported are the same.  0 or 1: one thread. */
	unsigned threads;
} mg_opts;

#define MG_WINDOW_DEFAULT (1u << 17)

/* What a merge did, for the caller's summary. */
typedef struct mg_report {
	uint32_t processes, threads, tasks, nodes;
	uint64_t records_in;            /* records read from the thread files */
	uint64_t states, events, comms; /* records written, by kind */
	uint64_t duration;              /* ns */
	uint64_t unmatched_sends, unmatched_recvs;
	uint64_t duplicate_parts;  /* message parts given twice */
	uint64_t recv_moved;       /* receives moved to just after the send */
	uint64_t recv_max_shift;   /* ns: the largest move */
	uint64_t recv_total_shift; /* ns: all the moves together */
	uint64_t recv_beyond;      /* moves larger than the clock error bound */
	uint64_t lsend_fixed;      /* logical sends after the physical send */
	uint64_t hosts_unsynced;   /* hosts aligned by their real-time clock */
	double seconds;            /* wall time of the merge */
} mg_report;

/*
 * Merges the directory o->dir into writer w.  Problems with the input
 * (damaged files, clocks that disagree, unmatched messages) are added to
 * errs, one line each ("FILE: offset N: what was dropped", or "FILE:
 * what"); the merge goes on with what is valid.  rep (may be NULL) gets
 * the figures.
 *
 * Returns DW_OK when a trace was written; DW_ENOENT (no directory, no
 * trace file in it), DW_EFORMAT (no readable trace file, or no record at
 * all) when nothing could be merged; DW_ENOMEM; or the writer's error
 * (DW_EIO, DW_ENOSPC, ...) with its message in w->err.
 */
dw_err mg_merge(const mg_opts *o, mg_writer *w, rd_errlist *errs,
                mg_report *rep);

#endif
