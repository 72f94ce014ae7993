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

#include <pthread.h>
#include <stdbool.h>

#include "merge/writer.h"

typedef struct mg_ctx mg_ctx;
typedef struct mg_pipe mg_pipe;
typedef struct mg_dec mg_dec;

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

/*
 * The streams' decoding (decode.h) on the writer's thread, so that the
 * merge's two threads, not three, share two cores.  pipe_host_sync
 * gives the mutex and condition variable the decoder must use for its
 * wake-ups (the writer's thread sleeps on them for both jobs); false
 * when the writer's thread does not run (the decoder then needs a
 * thread of its own).  pipe_host hands d to the thread, which runs
 * dec_work between batches of records until pipe_unhost(p, d), which
 * returns once the thread no longer touches d.  Called by the merge's
 * thread, before pipe_finish.
 */
bool pipe_host_sync(mg_pipe *p, pthread_mutex_t **mu, pthread_cond_t **cv);
void pipe_host(mg_pipe *p, mg_dec *d);
void pipe_unhost(mg_pipe *p, mg_dec *d);

/* Finishes the pipe if needed and frees it; NULL is ignored. */
void pipe_free(mg_pipe *p);

#endif
