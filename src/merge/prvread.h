/*
 * Reading a merged Paraver trace back: PREFIX.prv with its PREFIX.pcf
 * (labels) and PREFIX.row (names) when they are beside it, given to a
 * writer (merge/writer.h) as the merger would give it.  So every writer
 * that works on a trace directory — statistics, the HTML timeline —
 * also works on a .prv from anywhere (ours or Extrae's).
 *
 * A .prv is outside input.  Each line that cannot be used (not a
 * record, an object that the header does not declare, an end before its
 * begin, a time beyond the duration) is reported as "PATH: line N: what"
 * in errs and skipped; reading goes on.  Only the first application of a
 * trace is read (Paraver's other applications are reported once).
 * Records are passed in file order: a trace sorted by time, as Paraver
 * requires, gives the writer what it expects.
 *
 * Memory: the labels, names and one line; never the trace.
 */
#ifndef DW_MERGE_PRVREAD_H
#define DW_MERGE_PRVREAD_H

#include "tracefile/reader.h"
#include "merge/writer.h"

/* True when path names a Paraver trace (ends in ".prv"). */
bool prvread_is_prv(const char *path);

/*
 * Reads the trace at path (a .prv file) into w: begin, every record,
 * end.  Returns DW_OK; DW_ENOENT (no such file), DW_EFORMAT (not a
 * Paraver trace: no valid header), DW_ENOMEM; or the writer's error with
 * its message in w->err.  *records (may be NULL) gets the number of
 * records given to w.
 */
dw_err prvread_run(const char *path, mg_writer *w, rd_errlist *errs,
                   uint64_t *records);

#endif
