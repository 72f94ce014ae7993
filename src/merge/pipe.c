/*
 * The writer's thread (pipe.h).  The ring holds entries of an mg_rec and
 * the event pairs it points to; the merge publishes what it wrote and
 * the writer what it is done with in batches (BATCH bytes), so the two
 * threads touch the shared indices once per batch, not per record.  A
 * side with nothing to do sleeps on the condition variable; the other
 * wakes it only when it said it sleeps (a seq_cst flag checked after
 * each index store: neither can miss the other).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "merge/decode.h"
#include "merge/mg_int.h"
#include "merge/pipe.h"

#define RING_SIZE   PIPE_RING_SIZE
#define RING_MASK   (RING_SIZE - 1)
#define BATCH       (64u << 10)
#define WAKE_BYTES  (RING_SIZE / 4) /* a sleeping writer's wake-up */
#define ENT_PAD     0x80000000u     /* skip to the ring's start */
#define NAMES_CHUNK 4096u
#define NAMES_DIR   4096u /* 16 M function names */

_Static_assert(offsetof(mg_rec, u.state.state) + 4 <= PIPE_FIXED_STATE &&
                   offsetof(mg_rec, u) == PIPE_FIXED_EVENT &&
                   sizeof(mg_rec) % 8 == 0 && PIPE_ENT_MAX == RING_SIZE / 4,
               "pipe entries follow mg_rec's layout");

struct mg_pipe {
	pipe_fast f; /* merge: the ring, bytes written, the limit
	                of the fast path (first: pipe_slot) */
	mg_ctx *c;
	mg_writer *w;
	_Atomic uint64_t head; /* bytes the merge published */
	_Atomic uint64_t tail; /* bytes the writer is done with */
	uint64_t wtail;        /* merge: the tail last read */
	uint64_t want;         /* merge: bytes it waits for room for */
	uint64_t rtail;        /* writer thread: bytes consumed */
	_Atomic int failed;    /* a record failed: err says why */
	dw_err err;
	_Atomic int done;
	_Atomic int rsleep,
	    wsleep;            /* the writer's / the merge's thread waits */
	_Atomic(mg_dec *) dec; /* the decoding the writer's thread runs */
	_Atomic int unhost;    /* the merge asks it to let go of dec */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thr;
	bool running;
	/* The names of user functions, as names_func_name gives them. */
	const char **names[NAMES_DIR];
	_Atomic size_t nnames;
	size_t ncopied;
	const char *(*func_name)(const mg_info *, uint64_t);
	const void *func_ctx;
};

_Static_assert(offsetof(mg_pipe, f) == 0, "pipe_slot reads mg_pipe's start");

/* The mutex only orders the wake-up after the sleeper's check (a
 * sleeper holds it from its flag to its wait); the broadcast comes
 * after the unlock, so that the woken thread does not block at once on
 * the mutex this one still holds. */
static void
wake(mg_pipe *p, _Atomic int *sleeping)
{
	if (atomic_load(sleeping)) {
		pthread_mutex_lock(&p->mu);
		pthread_mutex_unlock(&p->mu);
		pthread_cond_broadcast(&p->cv);
	}
}

static void
sleep_until(mg_pipe *p, _Atomic int *sleeping, bool (*ready)(mg_pipe *))
{
	pthread_mutex_lock(&p->mu);
	atomic_store(sleeping, 1);
	while (!ready(p))
		pthread_cond_wait(&p->cv, &p->mu);
	atomic_store(sleeping, 0);
	pthread_mutex_unlock(&p->mu);
}

/* ---- The writer's thread ------------------------------------------------ */

static bool
has_work(mg_pipe *p)
{
	return atomic_load(&p->head) != p->rtail || atomic_load(&p->done);
}

/* Writes e's record; false when the writer failed (err says why). */
static bool
consume(mg_pipe *p, const pipe_ent *e)
{
	mg_rec r;
	dw_err err;

	pipe_ent_get(e, &r);
	err = p->w->ops->record(p->w, &r);
	if (err != DW_OK) {
		p->err = err;
		atomic_store(&p->failed, 1);
		return false;
	}
	return true;
}

/* Writes the records before head, at most max bytes of them; with a
 * decoding d to run, stops early once the merge kicked it since seen
 * (it freed room or waits for a record), looked at every 64 records.
 * The tail is published every BATCH bytes: the inner loop runs to the
 * next publication.  Only this thread sets failed while records come
 * (direct() writes once it is idle), so it is read once. */
static void
drain(mg_pipe *p, uint64_t head, uint64_t *freed, uint64_t max, mg_dec *d,
      uint64_t seen)
{
	uint64_t t = p->rtail, stop = head - t > max ? t + max : head;
	bool ok = !atomic_load_explicit(&p->failed, memory_order_relaxed);
	unsigned k = 64;

	while (t < stop) {
		uint64_t bend = *freed + BATCH < stop ? *freed + BATCH : stop;

		while (t < bend) {
			const pipe_ent *e =
			    (const pipe_ent *)(p->f.ring + (t & RING_MASK));
			uint32_t size = e->size;

			if (size & ENT_PAD) {
				t += size & ~ENT_PAD;
				continue;
			}
			if (ok)
				ok = consume(p, e);
			t += size;
			if (d && !--k) {
				k = 64;
				if (dec_kicked(d, seen)) {
					p->rtail = t;
					return;
				}
			}
		}
		if (t - *freed >= BATCH) {
			*freed = t;
			atomic_store(&p->tail, t);
			wake(p, &p->wsleep);
		}
	}
	p->rtail = t;
}

/* Sleeps until records come, the merge is done, a decoding d runs
 * would have work (dec_kicked since seen), or the decoding to run
 * changes. */
static void
host_sleep(mg_pipe *p, mg_dec *d, uint64_t seen)
{
	pthread_mutex_lock(&p->mu);
	atomic_store(&p->rsleep, 1);
	if (d)
		dec_sleeping(d, true);
	while (!has_work(p) && atomic_load(&p->dec) == d &&
	       !atomic_load(&p->unhost) && !(d && dec_kicked(d, seen)))
		pthread_cond_wait(&p->cv, &p->mu);
	if (d)
		dec_sleeping(d, false);
	atomic_store(&p->rsleep, 0);
	pthread_mutex_unlock(&p->mu);
}

/* The merge asked for its decoding back: from now on this thread does
 * not touch it. */
static void
host_release(mg_pipe *p)
{
	pthread_mutex_lock(&p->mu);
	atomic_store(&p->dec, NULL);
	atomic_store(&p->unhost, 0);
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/*
 * Records until the merge is done; after a failed one the rest are
 * read and dropped, so the merge never waits for room in vain.  While
 * the merge's streams are decoded here (pipe_host), a pass of the
 * decoding comes between batches of records, so that neither waits on
 * the other for long, and the thread sleeps only when neither has work.
 */
static void *
writer_main(void *arg)
{
	mg_pipe *p = arg;
	uint64_t freed = 0;

	for (;;) {
		mg_dec *d = atomic_load(&p->dec);
		uint64_t seen, head;
		bool did;

		if (d && atomic_load(&p->unhost)) {
			host_release(p);
			continue;
		}
		seen = d ? dec_kicks(d) : 0;
		did = d && dec_work(d);
		head = atomic_load(&p->head);
		if (head != p->rtail) {
			drain(p, head, &freed, d ? BATCH : UINT64_MAX, d, seen);
			continue;
		}
		if (did)
			continue;
		atomic_store(&p->tail, p->rtail);
		wake(p, &p->wsleep);
		if (!d && atomic_load(&p->done) &&
		    atomic_load(&p->head) == p->rtail)
			return NULL;
		host_sleep(p, d, seen);
	}
}

bool
pipe_host_sync(mg_pipe *p, pthread_mutex_t **mu, pthread_cond_t **cv)
{
	if (!p->running)
		return false;
	*mu = &p->mu;
	*cv = &p->cv;
	return true;
}

void
pipe_host(mg_pipe *p, mg_dec *d)
{
	pthread_mutex_lock(&p->mu);
	atomic_store(&p->dec, d);
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

void
pipe_unhost(mg_pipe *p, mg_dec *d)
{
	pthread_mutex_lock(&p->mu);
	atomic_store(&p->unhost, 1);
	pthread_cond_broadcast(&p->cv);
	while (atomic_load(&p->dec) == d)
		pthread_cond_wait(&p->cv, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

/* ---- The merge's side -----------------------------------------------------
 */

static const char *
pipe_func_name(const mg_info *info, uint64_t id)
{
	const mg_pipe *p = info->func_ctx;
	size_t n = atomic_load_explicit(&p->nnames, memory_order_acquire);

	if (!id)
		return "End";
	id--;
	return id < n ? p->names[id / NAMES_CHUNK][id % NAMES_CHUNK] : NULL;
}

/* Copies the function names the merge added since the last copy (the
 * strings stay where they are until the merge ends). */
static void
names_copy(mg_pipe *p)
{
	const mg_idnames *v = &p->c->names.tab[MG_IDS_FUNC];

	while (p->ncopied < v->n && p->ncopied < NAMES_DIR * NAMES_CHUNK) {
		size_t i = p->ncopied, k = i / NAMES_CHUNK;

		if (!p->names[k] &&
		    !(p->names[k] = malloc(NAMES_CHUNK * sizeof(char *))))
			break; /* out of memory: later names read as unknown */
		p->names[k][i % NAMES_CHUNK] = v->names[i];
		p->ncopied++;
	}
	atomic_store_explicit(&p->nnames, p->ncopied, memory_order_release);
}

static inline void
names_sync(mg_pipe *p)
{
	if (__builtin_expect(p->c->names.tab[MG_IDS_FUNC].n != p->ncopied, 0))
		names_copy(p);
}

dw_err
pipe_new(mg_ctx *c, mg_pipe **out)
{
	mg_pipe *p = calloc(1, sizeof *p);

	*out = NULL;
	if (!p || !(p->f.ring = malloc(RING_SIZE))) {
		free(p);
		return DW_ENOMEM;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->c = c;
	p->w = c->w;
	p->func_name = c->info.func_name;
	p->func_ctx = c->info.func_ctx;
	if (c->info.func_name == names_func_name) {
		c->info.func_name = pipe_func_name;
		c->info.func_ctx = p;
	}
	*out = p;
	return DW_OK;
}

dw_err
pipe_start(mg_pipe *p)
{
	if (pthread_create(&p->thr, NULL, writer_main, p) != 0)
		return DW_ENOMEM;
	p->running = true;
	return DW_OK;
}

/*
 * A writer that caught up sleeps until a quarter of the ring waits for
 * it (WAKE_BYTES), not until the next batch: it is faster than the
 * merge, and woken every batch it would sleep and wake every ~1,500
 * records, each wake-up taking a core from the merge or the decoder.
 * Skipping a wake-up only delays it: the merge forces one before it
 * waits for room or for the writer, and at its end.
 */
static void
publish_wake(mg_pipe *p, bool force)
{
	atomic_store(&p->head, p->f.whead);
	if (force || p->f.whead - atomic_load(&p->tail) >= WAKE_BYTES)
		wake(p, &p->rsleep);
}

static void
publish(mg_pipe *p)
{
	publish_wake(p, true);
}

static bool
has_room(mg_pipe *p)
{
	return p->f.whead + p->want - atomic_load(&p->tail) <= RING_SIZE;
}

static void
wait_room(mg_pipe *p, uint64_t need)
{
	if (p->f.whead + need - p->wtail <= RING_SIZE)
		return;
	p->want = need;
	if (!has_room(p)) {
		publish(p); /* give the writer what there is */
		sleep_until(p, &p->wsleep, has_room);
	}
	p->wtail = atomic_load(&p->tail);
}

static bool
is_idle(mg_pipe *p)
{
	return atomic_load(&p->tail) == p->f.whead;
}

/* A record too large for the ring: written from this thread once the
 * writer's thread has done every record before it. */
static dw_err
direct(mg_pipe *p, const mg_rec *r)
{
	dw_err err;

	publish(p);
	sleep_until(p, &p->wsleep, is_idle);
	err = p->w->ops->record(p->w, r);
	if (err != DW_OK) {
		p->err = err;
		atomic_store(&p->failed, 1);
	}
	return err;
}

/* The end of the fast path: the room known free, the ring's wrap and
 * the next publication, whichever comes first. */
static void
set_limit(mg_pipe *p)
{
	uint64_t lim,
	    wrap = (p->f.whead | RING_MASK) + 1,
	    pub = atomic_load_explicit(&p->head, memory_order_relaxed) + BATCH;

	p->wtail = atomic_load(&p->tail);
	lim = p->wtail + RING_SIZE;
	lim = wrap < lim ? wrap : lim;
	p->f.limit = pub < lim ? pub : lim;
}

/* Every record that may not take the fast path: the names to copy, the
 * thread not running or failed, a record too large, the ring's wrap, no
 * room known, a batch to publish. */
static __attribute__((noinline)) dw_err
record_slow(mg_pipe *p, const mg_rec *r, uint32_t n, uint64_t need)
{
	uint64_t off = p->f.whead & RING_MASK, pad;

	names_sync(p);
	p->f.limit = 0;
	if (!p->running)
		return p->w->ops->record(p->w, r);
	if (atomic_load_explicit(&p->failed, memory_order_acquire))
		return p->err;
	if (need > PIPE_ENT_MAX)
		return direct(p, r);
	pad = off + need > RING_SIZE ? RING_SIZE - off : 0;
	wait_room(p, pad + need);
	if (pad) {
		((pipe_ent *)(p->f.ring + off))->size = ENT_PAD | (uint32_t)pad;
		p->f.whead += pad;
	}
	pipe_ent_put((pipe_ent *)(p->f.ring + (p->f.whead & RING_MASK)), r, n,
	             need);
	p->f.whead += need;
	if (p->f.whead - atomic_load_explicit(&p->head, memory_order_relaxed) >=
	    BATCH)
		publish_wake(p, false);
	set_limit(p);
	return DW_OK;
}

/* The fast path checks one bound: below p->f.limit there is room, no
 * wrap, no batch to publish and no names to copy (pipe_names_added).  A
 * writer's failure is seen at the next slow record (once a batch at most); the
 * records written meanwhile are dropped by the writer's thread. */
static inline dw_err
put_record(mg_pipe *p, const mg_rec *r)
{
	uint32_t n;
	uint64_t need = pipe_ent_size(r, &n);

	pipe_ent *e = pipe_slot(p, need);

	if (__builtin_expect(!e, 0))
		return record_slow(p, r, n, need);
	pipe_ent_put(e, r, n, need);
	return DW_OK;
}

dw_err
pipe_record(mg_pipe *p, const mg_rec *r)
{
	return put_record(p, r);
}

void
pipe_names_added(mg_pipe *p)
{
	p->f.limit = 0; /* the next record copies them (record_slow) */
}

bool
pipe_running(const mg_pipe *p)
{
	return p->running;
}

/* The largest run of whole entries at src, at most max of its len bytes. */
static uint64_t
entries_within(const uint8_t *src, uint64_t len, uint64_t max)
{
	uint64_t k = 0;

	while (k < len && k + ((const pipe_ent *)(src + k))->size <= max)
		k += ((const pipe_ent *)(src + k))->size;
	return k;
}

/*
 * The entries go in as they are, by one copy while they fit before the
 * ring's end and in a quarter of it (else in runs of whole entries, and
 * a pad to the ring's start as for one record); the names, the
 * writer's failure and the batches as record_slow handles them.
 */
dw_err
pipe_entries(mg_pipe *p, const uint8_t *src, uint64_t len)
{
	names_sync(p);
	p->f.limit = 0;
	while (len) {
		uint64_t off = p->f.whead & RING_MASK, k = len,
		         max = RING_SIZE - off < PIPE_ENT_MAX ? RING_SIZE - off
		                                              : PIPE_ENT_MAX;

		if (atomic_load_explicit(&p->failed, memory_order_acquire))
			return p->err;
		if (k > max)
			k = entries_within(src, len, max);
		if (!k) { /* the next entry does not fit before the end */
			uint64_t pad = RING_SIZE - off;

			wait_room(p, pad + ((const pipe_ent *)src)->size);
			((pipe_ent *)(p->f.ring + off))->size =
			    ENT_PAD | (uint32_t)pad;
			p->f.whead += pad;
			continue;
		}
		wait_room(p, k);
		memcpy(p->f.ring + off, src, k);
		p->f.whead += k;
		src += k;
		len -= k;
		if (p->f.whead -
		        atomic_load_explicit(&p->head, memory_order_relaxed) >=
		    BATCH)
			publish_wake(p, false);
	}
	set_limit(p);
	return DW_OK;
}

/* Here, not in outq.c, so that a record's way into the ring is inlined. */
dw_err
mg_put(mg_ctx *c, const mg_rec *r)
{
	dw_err err =
	    c->pipe ? put_record(c->pipe, r) : c->w->ops->record(c->w, r);

	if (err != DW_OK)
		c->werr = err;
	return err;
}

dw_err
mg_write(mg_ctx *c, const mg_rec *r)
{
	mg_count(c, r->kind);
	return mg_put(c, r);
}

dw_err
pipe_finish(mg_pipe *p)
{
	if (!p)
		return DW_OK;
	names_sync(p);
	if (p->running) {
		publish(p);
		atomic_store(&p->done, 1);
		wake(p, &p->rsleep);
		pthread_join(p->thr, NULL);
		p->running = false;
	}
	if (p->c->info.func_ctx == p) {
		p->c->info.func_name = p->func_name;
		p->c->info.func_ctx = p->func_ctx;
	}
	return atomic_load(&p->failed) ? p->err : DW_OK;
}

void
pipe_free(mg_pipe *p)
{
	if (!p)
		return;
	pipe_finish(p);
	for (size_t k = 0; k < NAMES_DIR; k++)
		free(p->names[k]);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p->f.ring);
	free(p);
}
