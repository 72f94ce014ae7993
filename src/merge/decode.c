/*
 * The decoding thread (decode.h).  Each stream's ring has one producer
 * (this thread, after dec_start) and one consumer (the merge).  They
 * share, per stream, two cache lines: the decoder's published tail and
 * end, and the merge's published position and "waiting" flag, so
 * neither writes a line the other writes.  The merge publishes its
 * position every half ring, and the decoder refills a stream only when
 * half its ring is free (or the merge waits for it): a handoff costs a
 * few atomics per half ring, not per record.  A side with nothing to do
 * sleeps on a condition variable; the other wakes it only when it said
 * it sleeps (seq_cst flags checked after each store: neither can miss
 * the other), as in pipe.c.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "merge/decode.h"
#include "merge/mg_int.h"
#include "merge/pipe.h"

typedef struct mg_decslot {
	_Alignas(64) _Atomic uint64_t tail; /* decoder: records decoded */
	_Atomic int eof;                    /* decoder: no more */
	_Alignas(64) _Atomic uint64_t pos;  /* merge: records it is done with */
	_Atomic int want;                   /* merge: waits for this stream */
} mg_decslot;

struct mg_dec {
	mg_stream **s;
	mg_run *run;
	mg_decslot *slot;
	mg_cursor *cur;  /* the streams' fill cursors, while the thread runs */
	uint64_t *dtail; /* decoder's own: by stream */
	bool *deof;
	size_t n;
	_Atomic uint64_t kick; /* the merge freed room or waits */
	size_t pending;        /* merge: kicks not woken for (decoder asleep) */
	size_t wake_at;        /* merge: kicks that are worth a wake-up */
	_Atomic int dsleep, msleep, stop;
	pthread_mutex_t *mu; /* own_mu, or the host's (pipe_host) */
	pthread_cond_t *dcv; /* own_dcv, or the host's */
	pthread_cond_t mcv;  /* the merge waits for a stream (with *mu) */
	pthread_mutex_t own_mu;
	pthread_cond_t own_dcv;
	mg_pipe *host; /* the writer's thread runs the decoding, or NULL */
	pthread_t thr;
};

static void dec_stop_locked(mg_dec *d, bool running);

/* As in pipe.c: the broadcast after the unlock, so that the woken
 * thread does not block on the mutex at once. */
static void
wake(mg_dec *d, _Atomic int *sleeping, pthread_cond_t *cv)
{
	if (atomic_load(sleeping)) {
		pthread_mutex_lock(d->mu);
		pthread_mutex_unlock(d->mu);
		pthread_cond_broadcast(cv);
	}
}

/* ---- The decoder's thread ----------------------------------------------- */

/* Fills stream k's free room; true when it decoded anything. */
static bool
refill(mg_dec *d, size_t k)
{
	mg_decslot *sl = &d->slot[k];
	mg_stream *s = d->s[k];
	mg_ent *ring = s->ring;
	uint64_t mask = s->rmask, t = d->dtail[k];
	uint64_t room = mask + 1 - (t - atomic_load(&sl->pos));
	bool want = atomic_load_explicit(&sl->want, memory_order_relaxed);
	mg_run r = d->run[k]; /* in registers while it decodes */

	if (!room || (room <= mask / 2 && !want))
		return false;
	t = cursor_fill(&d->cur[k], ring, mask, &r, t, t + room, &d->deof[k]);
	if (d->deof[k])
		cursor_close(&d->cur[k]); /* its window, now */
	d->run[k] = r;
	d->dtail[k] = t;
	atomic_store(&sl->tail, t);
	if (d->deof[k])
		atomic_store(&sl->eof, 1);
	wake(d, &d->msleep, &d->mcv);
	return true;
}

uint64_t
dec_kicks(mg_dec *d)
{
	return atomic_load(&d->kick);
}

bool
dec_kicked(mg_dec *d, uint64_t seen)
{
	return atomic_load(&d->kick) != seen || atomic_load(&d->stop);
}

void
dec_sleeping(mg_dec *d, bool on)
{
	atomic_store(&d->dsleep, on);
}

bool
dec_work(mg_dec *d)
{
	bool did = false;

	for (size_t k = 0; k < d->n; k++)
		if (!d->deof[k])
			did |= refill(d, k);
	return did;
}

static void *
dec_main(void *arg)
{
	mg_dec *d = arg;

	while (!atomic_load(&d->stop)) {
		uint64_t seen = dec_kicks(d);

		if (dec_work(d))
			continue;
		pthread_mutex_lock(d->mu);
		dec_sleeping(d, true);
		while (!dec_kicked(d, seen))
			pthread_cond_wait(d->dcv, d->mu);
		dec_sleeping(d, false);
		pthread_mutex_unlock(d->mu);
	}
	return NULL;
}

/* ---- The merge's side ----------------------------------------------------
 */

/*
 * A sleeping decoder is woken once a quarter of all the rings' room is
 * free (wake_at half-ring kicks), not at the first stream's half: it
 * then refills many streams in one go, instead of waking (and taking a
 * core from the merge or the writer) every few hundred records.  A
 * skipped wake-up only delays it: the merge forces one before it waits
 * (dec_more), and the kick counter tells an awake decoder anyway.
 */
static void
kick(mg_dec *d, bool force)
{
	atomic_fetch_add(&d->kick, 1);
	if (!atomic_load(&d->dsleep)) {
		d->pending = 0;
		return;
	}
	if (!force && ++d->pending < d->wake_at)
		return;
	d->pending = 0;
	wake(d, &d->dsleep, d->dcv);
}

static void
pos_publish(mg_stream *s, bool force)
{
	atomic_store(&s->dslot->pos, s->pos);
	kick(s->dec, force);
}

void
dec_pos(mg_stream *s)
{
	pos_publish(s, false);
}

static bool
has_more(mg_stream *s)
{
	return atomic_load(&s->dslot->tail) != s->tail ||
	       atomic_load(&s->dslot->eof);
}

bool
dec_more(mg_stream *s)
{
	mg_decslot *sl = s->dslot;
	mg_dec *d = s->dec;

	for (;;) {
		uint64_t t = atomic_load(&sl->tail);

		if (t != s->tail) {
			s->tail = t;
			return true;
		}
		if (atomic_load(&sl->eof)) {
			if ((t = atomic_load(&sl->tail)) != s->tail) {
				s->tail = t;
				return true;
			}
			s->eof = true;
			return false;
		}
		atomic_store(&sl->want, 1);
		pos_publish(s, true);
		pthread_mutex_lock(d->mu);
		atomic_store(&d->msleep, 1);
		while (!has_more(s))
			pthread_cond_wait(&d->mcv, d->mu);
		atomic_store(&d->msleep, 0);
		pthread_mutex_unlock(d->mu);
		atomic_store(&sl->want, 0);
	}
}

dw_err
dec_start(mg_stream **s, size_t n, mg_pipe *host, mg_dec **out)
{
	size_t m = n ? n : 1;
	mg_dec *d = calloc(1, sizeof *d);

	*out = NULL;
	if (!d)
		return DW_ENOMEM;
	d->slot = aligned_alloc(64, m * sizeof *d->slot);
	d->cur = aligned_alloc(64, (m * sizeof *d->cur + 63) / 64 * 64);
	d->dtail = calloc(m, sizeof *d->dtail);
	d->deof = calloc(m, sizeof *d->deof);
	d->run = calloc(m, sizeof *d->run);
	d->s = s;
	if (!d->slot || !d->cur || !d->dtail || !d->deof || !d->run) {
		dec_stop(d);
		return DW_ENOMEM;
	}
	for (size_t k = 0; k < n; k++) {
		atomic_init(&d->slot[k].tail, s[k]->tail);
		atomic_init(&d->slot[k].eof, s[k]->eof);
		atomic_init(&d->slot[k].pos, s[k]->pos);
		atomic_init(&d->slot[k].want, 0);
		d->dtail[k] = s[k]->tail;
		d->deof[k] = s[k]->eof || !s[k]->ring;
	}
	pthread_mutex_init(&d->own_mu, NULL);
	pthread_cond_init(&d->own_dcv, NULL);
	pthread_cond_init(&d->mcv, NULL);
	d->mu = &d->own_mu;
	d->dcv = &d->own_dcv;
	if (host && pipe_host_sync(host, &d->mu, &d->dcv))
		d->host = host;
	/* the cursors move to the thread: the merge's lines of its streams
	 * are not written by it */
	for (size_t k = 0; k < n; k++) {
		d->run[k] = s[k]->run;
		d->cur[k] = s[k]->fill;
		s[k]->fill.rd = NULL;
		s[k]->fill.st = (mg_stack){0}; /* owned by the copy now */
	}
	d->n = n;
	d->wake_at = n / 2 ? n / 2 : 1;
	for (size_t k = 0; k < n; k++) {
		s[k]->dec = d;
		s[k]->dslot = &d->slot[k];
	}
	if (d->host)
		pipe_host(d->host, d); /* its thread decodes from now on */
	else if (pthread_create(&d->thr, NULL, dec_main, d) != 0) {
		dec_stop_locked(d, false);
		return DW_ENOMEM;
	}
	*out = d;
	return DW_OK;
}

/* Gives the streams back their cursors and what was decoded; frees d. */
static void
dec_stop_locked(mg_dec *d, bool running)
{
	if (running && d->host) {
		pipe_unhost(d->host, d); /* returns once its thread let go */
	} else if (running) {
		atomic_store(&d->stop, 1);
		pthread_mutex_lock(d->mu);
		pthread_cond_broadcast(d->dcv);
		pthread_mutex_unlock(d->mu);
		pthread_join(d->thr, NULL);
	}
	if (d->n) {
		pthread_mutex_destroy(&d->own_mu);
		pthread_cond_destroy(&d->own_dcv);
		pthread_cond_destroy(&d->mcv);
	}
	for (size_t k = 0; k < d->n; k++) {
		mg_stream *s = d->s[k];

		s->dec = NULL;
		s->dslot = NULL;
		if (!s->ring) { /* closed by the merge */
			cursor_close(&d->cur[k]);
			continue;
		}
		s->fill = d->cur[k];
		s->run = d->run[k];
		s->tail = d->dtail[k];
		s->eof = d->deof[k];
	}
	free(d->slot);
	free(d->cur);
	free(d->dtail);
	free(d->deof);
	free(d->run);
	free(d);
}

void
dec_stop(mg_dec *d)
{
	if (d)
		dec_stop_locked(d, d->n > 0);
}
