/*
 * The merge's decoding thread (mg_opts.threads >= 2): while the merge
 * takes records from its streams' rings, a thread of its own decodes
 * the next ones into them (reading the file, decoding the record,
 * converting its time).  The ring, its order and every decoded entry
 * are the ones the merge would decode itself, so the outputs are byte
 * for byte the same.  The rings are the only memory it adds to (none:
 * the same rings); a stream's cursor belongs to the thread while it
 * runs.  The merge's reports come from the scan, so the thread reports
 * nothing.
 */
#ifndef DW_MERGE_DECODE_H
#define DW_MERGE_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dwork/error.h>

typedef struct mg_stream mg_stream;
typedef struct mg_dec mg_dec;
typedef struct mg_pipe mg_pipe;

/* Starts decoding the n streams s (opened, their rings filled as far as
 * the merge has looked; s stays valid until dec_stop) on another
 * thread: the writer's thread of host when it runs one (pipe_host, so
 * that two threads share two cores, not three), else a thread of its
 * own.  host may be NULL.  DW_OK, or DW_ENOMEM (the merge then decodes
 * on its own thread). */
dw_err dec_start(mg_stream **s, size_t n, mg_pipe *host, mg_dec **out);

/* Stops the thread; the streams decode on the merge's thread again.
 * NULL is ignored. */
void dec_stop(mg_dec *d);

/* The merge's side, for streams with a thread (s->dec): waits until the
 * ring has more than s->tail (true) or the stream has no more (false,
 * s->eof set). */
bool dec_more(mg_stream *s);

/* Tells the thread that the merge is done with the records before
 * s->pos (their room may be refilled). */
void dec_pos(mg_stream *s);

/* The decoding side, for the thread that runs it (its own, or a host's
 * loop, pipe.c): one pass over the streams, refilling every ring that
 * has room; true when it decoded anything. */
bool dec_work(mg_dec *d);

/* The merge's kicks so far: read before a pass of dec_work, then
 * dec_kicked(d, seen) tells whether the merge freed room or waits since
 * (or the decoder is stopped).  A thread that sleeps for want of work
 * says so with dec_sleeping(d, true) under the decoder's mutex first. */
uint64_t dec_kicks(mg_dec *d);
bool dec_kicked(mg_dec *d, uint64_t seen);
void dec_sleeping(mg_dec *d, bool on);

#endif
