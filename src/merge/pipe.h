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
#include <stddef.h>
#include <string.h>

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

#define PIPE_RING_SIZE (4u << 20)

/*
 * The merge's side of the ring's fast path, the first member of
 * mg_pipe: below limit, a record's bytes at ring + whead (wrapped) are
 * free, do not wrap, and no batch is due to be published.
 */
typedef struct pipe_fast {
	uint8_t *ring;
	uint64_t whead; /* bytes written */
	uint64_t limit; /* 0: every record takes the slow path */
} pipe_fast;

/*
 * The ring's entries, also the output queue's (outq.c), so that the
 * records waiting behind a message go into the ring by one copy: this
 * header, then the part of the record its kind uses (the first bytes of
 * an mg_rec: a state's 32, an event's 16 without the union, a
 * communication's whole 56), then an event's pairs.  A state is 40
 * bytes and an event of two pairs 56, instead of 64 and 96 with the
 * whole record.  An entry larger than PIPE_ENT_MAX does not go into the
 * ring (the merge's thread writes it once the writer's caught up).
 */
typedef struct pipe_ent {
	uint32_t size; /* bytes of the entry, a multiple of 8 */
	uint32_t n;    /* event pairs after it */
} pipe_ent;

#define PIPE_FIXED_STATE 32u /* kind, thread, time, end, state (padding) */
#define PIPE_FIXED_EVENT 16u /* kind, thread, time */
#define PIPE_ENT_MAX     (1u << 20) /* a quarter of the ring */

static inline uint64_t
pipe_fixed_size(uint32_t kind)
{
	return kind == MG_STATE   ? PIPE_FIXED_STATE
	       : kind == MG_EVENT ? PIPE_FIXED_EVENT
	                          : sizeof(mg_rec);
}

/* The bytes of r's entry; its event pairs in *n. */
static inline uint64_t
pipe_ent_size(const mg_rec *r, uint32_t *n)
{
	*n = r->kind == MG_EVENT ? r->u.event.n : 0;
	return sizeof(pipe_ent) + pipe_fixed_size(r->kind) +
	       (uint64_t)*n * sizeof(mg_pair);
}

static inline void
pipe_ent_put(pipe_ent *e, const mg_rec *r, uint32_t n, uint64_t need)
{
	uint8_t *dst = (uint8_t *)(e + 1);
	mg_pair *pairs = (mg_pair *)(dst + PIPE_FIXED_EVENT);

	e->size = (uint32_t)need;
	e->n = n;
	if (r->kind == MG_STATE) {
		memcpy(dst, r, PIPE_FIXED_STATE);
	} else if (r->kind == MG_EVENT) {
		memcpy(dst, r, PIPE_FIXED_EVENT);
		for (uint32_t i = 0; i < n; i++) /* mostly one or two */
			pairs[i] = r->u.event.pairs[i];
	} else {
		memcpy(dst, r, sizeof *r);
	}
}

/* The record of an entry; an event's pairs point into the entry.  What
 * a kind does not use reads as 0. */
static inline void
pipe_ent_get(const pipe_ent *e, mg_rec *r)
{
	const uint8_t *src = (const uint8_t *)(e + 1);
	uint32_t kind;

	memcpy(&kind, src, sizeof kind);
	if (kind == MG_STATE) {
		memcpy(r, src, PIPE_FIXED_STATE);
		memset((uint8_t *)r + PIPE_FIXED_STATE, 0,
		       sizeof *r - PIPE_FIXED_STATE);
	} else if (kind == MG_EVENT) {
		memset(r, 0, sizeof *r);
		memcpy(r, src, PIPE_FIXED_EVENT);
		r->u.event.pairs = (const mg_pair *)(src + PIPE_FIXED_EVENT);
		r->u.event.n = e->n;
	} else {
		memcpy(r, src, sizeof *r);
	}
}

/*
 * Hands the writer's thread the len bytes of whole entries at src (each
 * at most PIPE_ENT_MAX), as if each had come by pipe_record.  Needs the
 * thread running (pipe_running).  DW_OK, or the writer's error once
 * one of its records failed.
 */
dw_err pipe_entries(mg_pipe *p, const uint8_t *src, uint64_t len);
bool pipe_running(const mg_pipe *p);

/* Room for an entry of need bytes, written at once (the caller fills
 * it): NULL when the record must take pipe_record's way. */
static inline pipe_ent *
pipe_slot(mg_pipe *p, uint64_t need)
{
	pipe_fast *f = (pipe_fast *)p;
	pipe_ent *e;

	if (__builtin_expect(f->whead + need >= f->limit, 0))
		return NULL;
	e = (pipe_ent *)(f->ring + (f->whead & (PIPE_RING_SIZE - 1)));
	f->whead += need;
	return e;
}

/* The merge gave a user function a new name (names_func): the next
 * record takes the slow path, which copies it for the writer. */
void pipe_names_added(mg_pipe *p);

/* Finishes the pipe if needed and frees it; NULL is ignored. */
void pipe_free(mg_pipe *p);

#endif
