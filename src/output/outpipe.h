/*
 * An output written on a thread of its own: the writer formats into a
 * block (an ob without a file, filled with ob_end/ob_commit), hands the
 * full block over and fills the next while the thread gives each block,
 * in order, to a function that writes it into the file's ob (as it is, or
 * compressed first: perfetto_z.c).  The text writers spend about half
 * their time in write(2) and the Perfetto writer more than half in
 * deflate; on a second core that work runs beside the formatting
 * (docs/merge.md, "Performance of the writers").  The bytes written are
 * the same, in the same order, as without the thread.
 *
 * Memory: OP_NBLK blocks.  When the thread cannot be started the blocks
 * are written on the caller's thread, at op_submit.
 */
#ifndef DW_OUTPUT_OUTPIPE_H
#define DW_OUTPUT_OUTPIPE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "output/outbuf.h"

#define OP_NBLK 4 /* blocks: one filled, the others queued or written */

/* Writes len bytes of buf (a whole block) into out; DW_OK or an error.
 * Runs on the pipe's thread. */
typedef dw_err (*op_put_fn)(void *ctx, ob *out, const char *buf, size_t len);

typedef struct opipe {
	ob cur; /* the block being filled (cur.buf, cur.len, cur.cap) */
	ob *out;
	op_put_fn put;
	void *ctx;
	char *blk[OP_NBLK];
	size_t len[OP_NBLK];
	unsigned fill;   /* blk[fill] is cur's */
	unsigned head;   /* the oldest queued block */
	unsigned queued; /* blocks queued or being written */
	bool made;       /* the mutex and conditions are initialized */
	bool threaded;   /* the thread runs */
	bool stop;
	dw_err err; /* the first error of a put; no block is written after */
	pthread_mutex_t mu;
	pthread_cond_t work, room;
	pthread_t thread;
} opipe;

/*
 * Makes p's blocks (of size bytes each) and starts its thread, which
 * writes them through put(ctx, out, ...); out is the thread's from now
 * until op_finish or op_free returns.  DW_OK or DW_ENOMEM (then
 * op_free).  A thread that cannot be created is not an error.
 */
dw_err op_start(opipe *p, ob *out, size_t size, op_put_fn put, void *ctx);

/* Hands the filled block to the thread (nothing when it is empty) and
 * makes p->cur the next, empty; may wait for a block to be written.
 * Returns the first error of a put so far (the block is then dropped),
 * else DW_OK. */
dw_err op_submit(opipe *p);

/* Room for n bytes (at most the block's size) at ob_end(&p->cur). */
static inline dw_err
op_need(opipe *p, size_t n)
{
	return p->cur.cap - p->cur.len >= n ? DW_OK : op_submit(p);
}

/* Submits what is filled, waits until every block is written and stops
 * the thread: out is the caller's again.  Returns the first error. */
dw_err op_finish(opipe *p);

/* Stops the thread if it runs (what is queued is dropped, not written)
 * and frees the blocks; a zeroed or finished p is fine. */
void op_free(opipe *p);

#endif
