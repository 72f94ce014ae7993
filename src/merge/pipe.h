/*
 * The merge's second thread (mg_opts.threads = 2): the writer runs on a
 * thread of its own, fed through a single-producer, single-consumer ring
 * of records, while the merge thread reads, decodes and merges.  The
 * writer sees exactly the records, in exactly the order, that it sees
 * without the pipe, so every output is byte for byte the same.
 *
 * What the writer may read while the merge runs is the merge's shape and
 * labels (not changed once begin was called) and the names of user
 * functions (info->func_name), which the merge adds to as it goes: the
 * pipe gives the writer its own copy of those names, published before
 * the records that carry them.  Memory: the ring (4 MiB) and the copy's
 * pointers.
 */
#ifndef DW_MERGE_PIPE_H
#define DW_MERGE_PIPE_H

#include "merge/writer.h"

typedef struct mg_ctx mg_ctx;
typedef struct mg_pipe mg_pipe;

/* Makes the pipe for c's writer, before its begin: points
 * c->info.func_name at the pipe's copy.  DW_OK or DW_ENOMEM. */
dw_err pipe_new(mg_ctx *c, mg_pipe **out);

/* Starts the writer's thread (after the writer's begin).  DW_OK, or an
 * error (the merge then writes without the thread). */
dw_err pipe_start(mg_pipe *p);

/* Hands r to the writer's thread (r and what it points to are copied).
 * Returns the writer's error once one of its records failed, else
 * DW_OK. */
dw_err pipe_record(mg_pipe *p, const mg_rec *r);

/* Waits until the writer has every record, stops the thread and
 * returns the writer's first error (DW_OK if none).  After it the
 * writer may be called on this thread again (its end). */
dw_err pipe_finish(mg_pipe *p);

/* Finishes the pipe if needed and frees it; NULL is ignored. */
void pipe_free(mg_pipe *p);

#endif
