/*
 * Segments prepared ahead of time, so that no record pays for growing a
 * file: a helper thread allocates, maps and faults in (MADV_POPULATE_WRITE)
 *
 * - each buffer's next segment, asked for at the current one's low-water
 *   mark (an eighth of it filled): when the current one is full, the
 *   record that finds it full only swaps pointers (an atomic exchange,
 *   no lock, no system call, no page fault);
 * - the unmapping of full segments, left by their threads in per-buffer
 *   slots;
 * - a "kit" for the next thread to register: its struct buf, its file
 *   (under a name the reader ignores), header page (filled, not sealed)
 *   and first segment, so that registering takes no system call;
 * - the naming of a taken kit's file (a rename costs 50-100 us on ext4)
 *   and the calibration pair of its registration (a write).
 *
 * Its jobs, in this order: naming taken kits' files; mapping a running
 * thread's wanted next segment; faulting in a running thread's segment,
 * a chunk at a time; making a kit; faulting in a kit's segment, a chunk
 * at a time; unmapping full segments.  The order is looked at again
 * after every chunk, so that a thread's next segment never waits behind
 * a kit no thread has taken yet (16 MB faulted in takes the helper
 * 5-20 ms of CPU, which a thread recording at full speed outruns).
 *
 * What the helper prepared and nobody used is given back at fini (cut
 * from the file, or the kit's file removed), so the files end as they
 * did without it.  The helper's work happens under no lock a recording
 * thread takes; prep_lock guards the bookkeeping, which a recording
 * thread takes only when the helper fell behind (no segment ready).
 * The helper sleeps on a semaphore: waking it is an atomic increment,
 * plus a futex wake only when it sleeps, and cannot be lost; a thread's
 * first record leaves it asleep while a kit is ready (prep_name_later).
 */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "trace/prep_file.h"
#include "trace/tracer.h"

static pthread_mutex_t prep_lock = PTHREAD_MUTEX_INITIALIZER;
static sem_t prep_sem; /* wakes the helper */
static int prep_sem_ok;
static pthread_cond_t prep_done = PTHREAD_COND_INITIALIZER; /* from it */
static int prep_running;   /* a helper thread exists (in this process) */
static uint64_t prep_gen;  /* session the kit and requests belong to */
static int prep_kit_want;  /* a kit is wanted */
static int prep_kit_busy;  /* the helper is making it */
static int prep_kit_fails; /* consecutive failures: stop trying */
/* Kits ready (fd, hdr, spare, path set), linked by next: two, so that
 * two threads started at once both find one. */
#define PREP_KITS 2
static struct buf *prep_kits;
static unsigned prep_nkits;
static struct buf *prep_names; /* taken kits whose files want a name */
static int prep_name_busy;     /* the helper is naming one */
/* The buffer (a thread's or a kit) a chunk of whose segment the helper
 * faults in now, prep_lock dropped: release and fini wait for it. */
static struct buf *prep_filling;
static int prep_unmapping; /* it unmaps a full segment, lock dropped */
/* Test hooks (prep_test_hold): jobs left before the helper stops (-1:
 * never), whether it stopped, whether it sleeps with nothing to do, and
 * the jobs it did, and the wake-ups asked for. */
static int prep_hold = -1;
static int prep_parked;
static int prep_idle;
static unsigned prep_nwakes;
static char prep_log[64];
static unsigned prep_nlog;

/* Room under the size cap for one more segment (and reserves it). */
static int
prep_reserve(void)
{
	uint64_t seg = trc.cfg.segment_size, cap = trc.cfg.size_cap;
	uint64_t used = __atomic_load_n(&trc.bytes, __ATOMIC_RELAXED);
	if (cap && used + seg > cap)
		return -1;
	__atomic_fetch_add(&trc.bytes, seg, __ATOMIC_RELAXED);
	return 0;
}

static void
prep_unreserve(void)
{
	__atomic_fetch_sub(&trc.bytes, trc.cfg.segment_size, __ATOMIC_RELAXED);
}

static void
prep_wake(void)
{
	__atomic_fetch_add(&prep_nwakes, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&prep_idle, 0, __ATOMIC_RELAXED);
	if (__atomic_load_n(&prep_sem_ok, __ATOMIC_ACQUIRE))
		sem_post(&prep_sem);
}

/* A job done (prep_lock held): logged for the tests, and counted
 * against a test's hold. */
static void
prep_note(char job)
{
	if (prep_nlog + 1 < sizeof prep_log)
		prep_log[prep_nlog++] = job;
	if (prep_hold > 0)
		prep_hold--;
}

/* One chunk of b's segment b->fill made writable now (prep_lock held,
 * dropped meanwhile), instead of a fault a page in the record path;
 * older kernels refuse MADV_POPULATE_WRITE and the pages fault lazily.
 * Once b's thread took the segment (it overtook the helper), the chunks
 * it has reached are its own to fault and the helper goes on ahead of
 * it; once it has left the segment, the fill ends.  kit: b is a kit
 * (for the log). */
static void
prep_fill_step(struct buf *b, int kit)
{
	unsigned char *m = b->fill;
	uint64_t seg = trc.cfg.segment_size, off = b->fill_off;
#ifdef MADV_POPULATE_WRITE
	/* racy reads of the owner's fields: at worst a chunk more */
	if (__atomic_load_n(&b->spare, __ATOMIC_ACQUIRE) != m) {
		if (__atomic_load_n(&b->seg, __ATOMIC_RELAXED) != m)
			off = seg;
		while (off < seg &&
		       __atomic_load_n(&b->pos, __ATOMIC_RELAXED) >= m + off)
			off += PREP_CHUNK;
	}
#else
	off = seg;
#endif
	if (off >= seg) {
		b->fill = NULL;
		pthread_cond_broadcast(&prep_done);
		return;
	}
	uint64_t len = seg - off < PREP_CHUNK ? seg - off : PREP_CHUNK;
	prep_filling = b;
	pthread_mutex_unlock(&prep_lock);
	prep_fault_in(b->fd, b->fill_idx, m, off, len);
	pthread_mutex_lock(&prep_lock);
	prep_filling = NULL;
	b->fill_off = off + len;
	if (b->fill_off >= seg)
		b->fill = NULL;
	prep_note(kit ? 'k' : 's');
	pthread_cond_broadcast(&prep_done);
}

/* The segment is handed over as soon as it is mapped, then faulted in
 * as a job of its own: a thread that switches meanwhile takes it at once
 * and faults only the pages the helper has not reached yet.  reuse: an
 * old segment of the file (circular mode at the cap), mapped, not grown:
 * faulting it in leaves its old records as they are, and its owner
 * clears them as it writes.  Called and returns with prep_lock held. */
static void
prep_one_segment(struct buf *b, uint64_t idx, int reuse)
{
	pthread_mutex_unlock(&prep_lock);
	unsigned char *m =
	    reuse ? prep_mapseg(b->fd, idx) : prep_grow(b->fd, idx);
	pthread_mutex_lock(&prep_lock);
	if (m) {
		b->spare_idx = idx;
		b->spare_reuse = reuse;
		b->ring_at = idx;
		__atomic_store_n(&b->spare, m, __ATOMIC_RELEASE);
		if (!reuse)
			__atomic_fetch_add(&trc.segments, 1, __ATOMIC_RELAXED);
		b->fill = m; /* replaces the fill of the one b is in */
		b->fill_idx = idx;
		b->fill_off = 0;
		prep_note('S');
	} else if (reuse) {
		/* the owner maps it itself */
	} else {
		if (idx + 1 == b->nseg) /* else the owner grew it meanwhile */
			b->nseg--;
		prep_unreserve();
		__atomic_store_n(&b->spare_failed, 1, __ATOMIC_RELAXED);
	}
	b->spare_busy = 0;
	pthread_cond_broadcast(&prep_done);
}

static void
prep_kits_free(int remove)
{
	while (prep_kits) {
		struct buf *k = prep_kits;
		prep_kits = k->next;
		prep_kit_free(k, remove);
	}
	prep_nkits = 0;
}

/* The session's strings and clock are fixed while it runs, so the
 * header is filled without trc.lock; the taker writes the identity. */
/* The kit being made: reachable from a global while this thread builds
 * it, so that a process exiting meanwhile (exit() with no dwt_fini)
 * leaves no unreachable memory (LeakSanitizer reports it otherwise). */
static struct buf *volatile prep_building;

static struct buf *
prep_make_kit(uint64_t gen)
{
	static unsigned n;
	struct buf *k = calloc(1, sizeof *k);
	if (!k)
		return NULL;
	prep_building = k;
	snprintf(k->path, sizeof k->path, "%s.kit%u.dwt-spare", trc.prefix,
	         n++);
	k->fd = open(k->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (k->fd >= 0 && posix_fallocate(k->fd, 0, FMT_HEADER_PAGE) == 0)
		k->hdr = mmap(NULL, FMT_HEADER_PAGE, PROT_READ | PROT_WRITE,
		              MAP_SHARED, k->fd, 0);
	if (k->hdr == MAP_FAILED)
		k->hdr = NULL;
	if (k->hdr && gen == __atomic_load_n(&trc.gen, __ATOMIC_RELAXED)) {
		lbl_fill_header(k->hdr, FMT_FILE_THREAD);
		k->spare = prep_grow(k->fd, 0);
	}
	if (k->spare) {
		k->gen = gen;
		k->nseg = 1;
		k->fill = k->spare; /* faulted in later, as a job of its own */
		k->fill_idx = 0;
		return k;
	}
	prep_kit_free(k, 1);
	return NULL;
}

static void
prep_one_kit(uint64_t gen)
{
	struct buf *k = prep_make_kit(gen);
	pthread_mutex_lock(&prep_lock);
	prep_building = NULL; /* in the list or freed below */
	if (k && gen == prep_gen && prep_nkits < PREP_KITS) {
		k->next = prep_kits;
		prep_kits = k;
		prep_kit_fails = 0;
		prep_kit_want |= ++prep_nkits < PREP_KITS;
		prep_note('K');
	} else {
		if (k)
			prep_kit_free(k, 1);
		prep_kit_fails += !k;
	}
	prep_kit_busy = 0;
	pthread_cond_broadcast(&prep_done);
	pthread_mutex_unlock(&prep_lock);
}

/* Names the first file on the list (prep_lock held, and again on
 * return); the pair is written under trc.lock, taken with no job
 * marked busy, since fini waits for busy jobs holding trc.lock. */
static void
prep_name_one(void)
{
	struct buf *b = prep_names;
	prep_names = b->name_next;
	prep_name_busy = 1;
	pthread_mutex_unlock(&prep_lock);
	prep_name_file(b);
	pthread_mutex_lock(&prep_lock);
	prep_name_busy = 0;
	prep_note('N');
	pthread_cond_broadcast(&prep_done);
	pthread_mutex_unlock(&prep_lock);
	pthread_mutex_lock(&trc.lock);
	prep_write_calib(b);
	pthread_mutex_unlock(&trc.lock);
	pthread_mutex_lock(&prep_lock);
}

/* A buffer of this session whose next segment is wanted (lock held). */
static struct buf *
prep_find(void)
{
	struct buf *b = __atomic_load_n(&trc.bufs, __ATOMIC_ACQUIRE);
	for (; b; b = b->next)
		if (b->gen == prep_gen &&
		    __atomic_load_n(&b->spare_want, __ATOMIC_ACQUIRE) &&
		    !b->spare_busy && !b->own_busy &&
		    !__atomic_load_n(&b->spare, __ATOMIC_ACQUIRE) &&
		    !__atomic_load_n(&b->spare_failed, __ATOMIC_RELAXED) &&
		    b->fd >= 0)
			return b;
	return NULL;
}

/* A full segment a thread left to unmap (lock held), taken from its
 * slot; NULL when none.  Tearing down 16 MB of page tables takes about
 * a millisecond, which the helper pays instead of the recording thread. */
static void *
prep_find_old(void)
{
	struct buf *b = __atomic_load_n(&trc.bufs, __ATOMIC_ACQUIRE);
	for (; b; b = b->next)
		for (int i = 0; i < BUF_OLD; i++)
			if (__atomic_load_n(&b->old[i], __ATOMIC_RELAXED))
				return __atomic_exchange_n(&b->old[i], NULL,
				                           __ATOMIC_ACQUIRE);
	return NULL;
}

/* A buffer of this session (bufs: a thread's) or a kit (bufs: the
 * kits) whose segment is being faulted in (lock held). */
static struct buf *
prep_find_fill(struct buf *b)
{
	for (; b; b = b->next)
		if (b->gen == prep_gen && b->fill)
			return b;
	return NULL;
}

/* A running thread's wanted next segment: grown and mapped (lock held,
 * dropped meanwhile). */
static void
prep_serve(struct buf *b)
{
	__atomic_store_n(&b->spare_want, 0, __ATOMIC_RELAXED);
	if (prep_reserve() == 0) {
		b->spare_busy = 1;
		prep_one_segment(b, b->nseg++, 0);
	} else if (trc.cfg.circular && b->nseg > 1) {
		/* at the cap: the oldest one, next in ring order (one only
		 * is the one being written: the owner reuses it itself) */
		b->spare_busy = 1;
		prep_one_segment(b, (b->ring_at + 1) % b->nseg, 1);
	} /* else at the cap: the owner decides */
}

/* The next kit made (lock held, dropped meanwhile). */
static void
prep_kit_job(void)
{
	prep_kit_want = 0;
	/* counted against the cap when a thread takes it */
	if (prep_kit_fails > 2)
		return;
	prep_kit_busy = 1;
	uint64_t gen = prep_gen;
	pthread_mutex_unlock(&prep_lock);
	prep_one_kit(gen);
	pthread_mutex_lock(&prep_lock);
}

/* Nothing to do: sleeps until woken (lock held, dropped meanwhile), or
 * PREP_POLL_MS while a kit is ready (prep_name_later). */
static void
prep_sleep(void)
{
	int poll = prep_gen && prep_nkits;
	__atomic_store_n(&prep_idle, 1, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&prep_done);
	pthread_mutex_unlock(&prep_lock);
	prep_sem_sleep(&prep_sem, poll ? PREP_POLL_MS : 0);
	pthread_mutex_lock(&prep_lock);
}

static void *
prep_main(void *arg)
{
	(void)arg;
	/* named, so that its CPU time can be told from the program's (top
	 * -H, bench_trace_rpc's segment preparation figure) */
	pthread_setname_np(pthread_self(), "dwtrace-prep");
	pthread_mutex_lock(&prep_lock);
	/* names first (until then a crash hides the thread's records);
	 * then what running threads wait for; then what the next thread
	 * will want; full segments are unmapped last, once the next ones
	 * are ready.  One job, or one chunk of a fill, at a time. */
	for (;;) {
		while (prep_hold == 0) {
			prep_parked = 1;
			pthread_cond_broadcast(&prep_done);
			pthread_cond_wait(&prep_done, &prep_lock);
		}
		struct buf *b;
		void *old;
		if (prep_names) {
			prep_name_one();
		} else if ((b = prep_find()) != NULL) {
			prep_serve(b);
		} else if ((b = prep_find_fill(trc.bufs)) != NULL) {
			prep_fill_step(b, 0);
		} else if (prep_kit_want && !prep_kit_busy &&
		           prep_nkits < PREP_KITS) {
			prep_kit_job();
		} else if ((b = prep_find_fill(prep_kits)) != NULL) {
			prep_fill_step(b, 1);
		} else if ((old = prep_find_old()) != NULL) {
			prep_unmapping = 1;
			pthread_mutex_unlock(&prep_lock);
			prep_unmap(old);
			pthread_mutex_lock(&prep_lock);
			prep_unmapping = 0;
			prep_note('U');
			pthread_cond_broadcast(&prep_done);
		} else {
			prep_sleep();
		}
	}
	return NULL;
}

/* Starts the helper if this process has none (lock held). */
static void
prep_start(void)
{
	pthread_t t;
	pthread_attr_t a;
	if (prep_running)
		return;
	if (!prep_sem_ok && sem_init(&prep_sem, 0, 0) == 0)
		__atomic_store_n(&prep_sem_ok, 1, __ATOMIC_RELEASE);
	if (!prep_sem_ok)
		return;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	/* its signals stay the program's: block them all in the helper */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&t, &a, prep_main, NULL) == 0)
		__atomic_store_n(&prep_running, 1, __ATOMIC_RELEASE);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
}

void
prep_session(uint64_t gen)
{
	pthread_mutex_lock(&prep_lock);
	prep_gen = gen;
	prep_kit_fails = 0;
	prep_kit_want = 1;
	prep_start();
	prep_wake();
	pthread_mutex_unlock(&prep_lock);
}

/* At the low-water mark: no lock, an atomic store and the helper's
 * wake-up (a futex wake when it sleeps). */
void
prep_want_segment(struct buf *b)
{
	if (b->gen != __atomic_load_n(&prep_gen, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&b->spare_failed, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&b->spare_want, 1, __ATOMIC_RELEASE);
	if (!__atomic_load_n(&prep_running, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&prep_lock);
		prep_start();
		pthread_mutex_unlock(&prep_lock);
	}
	prep_wake();
}

/* A full segment left in a free slot of its buffer (the owner is the
 * only one to fill slots, the helper empties them when it next wakes);
 * with every slot taken (the helper has not run for BUF_OLD segments),
 * unmapped here. */
void
prep_retire(struct buf *b, void *m)
{
	if (__atomic_load_n(&prep_running, __ATOMIC_ACQUIRE))
		for (int i = 0; i < BUF_OLD; i++)
			if (!__atomic_load_n(&b->old[i], __ATOMIC_RELAXED)) {
				__atomic_store_n(&b->old[i], m,
				                 __ATOMIC_RELEASE);
				return;
			}
	b->unmap_inline++;
	munmap(m, trc.cfg.segment_size);
}

unsigned char *
prep_take_segment(struct buf *b, uint64_t *idx)
{
	unsigned char *m =
	    __atomic_exchange_n(&b->spare, NULL, __ATOMIC_ACQUIRE);
	if (m) { /* the usual case: a pointer swap */
		*idx = b->spare_idx;
		b->sw_swap++;
		return m;
	}
	pthread_mutex_lock(&prep_lock);
	/* Behind.  With a size cap, the segment the helper is making may be
	 * the last one allowed (and circular mode reuses a segment by its
	 * index, which must not be that one): wait for it to be mapped.
	 * Else the caller grows the file itself at once. */
	while (b->spare_busy && trc.cfg.size_cap &&
	       !__atomic_load_n(&b->spare, __ATOMIC_ACQUIRE)) {
		b->sw_wait++;
		pthread_cond_wait(&prep_done, &prep_lock);
	}
	m = __atomic_exchange_n(&b->spare, NULL, __ATOMIC_ACQUIRE);
	*idx = b->spare_idx;
	if (m)
		b->sw_swap++;
	else /* the helper starts no job for b while the owner grows it */
		b->own_busy = 1;
	pthread_mutex_unlock(&prep_lock);
	return m;
}

unsigned char *
prep_take_late(struct buf *b, uint64_t *idx)
{
	pthread_mutex_lock(&prep_lock);
	while (b->spare_busy && !__atomic_load_n(&b->spare, __ATOMIC_ACQUIRE)) {
		b->sw_wait++;
		pthread_cond_wait(&prep_done, &prep_lock);
	}
	unsigned char *m =
	    __atomic_exchange_n(&b->spare, NULL, __ATOMIC_ACQUIRE);
	*idx = b->spare_idx;
	if (m)
		b->sw_swap++;
	pthread_mutex_unlock(&prep_lock);
	return m;
}

uint64_t
prep_own_index(struct buf *b)
{
	pthread_mutex_lock(&prep_lock);
	uint64_t idx = b->ring_at = b->nseg++;
	pthread_mutex_unlock(&prep_lock);
	return idx;
}

uint64_t
prep_own_reuse(struct buf *b)
{
	pthread_mutex_lock(&prep_lock);
	uint64_t idx = b->ring_at = (b->ring_at + 1) % b->nseg;
	pthread_mutex_unlock(&prep_lock);
	return idx;
}

void
prep_own_done(struct buf *b)
{
	pthread_mutex_lock(&prep_lock);
	b->own_busy = 0;
	pthread_cond_broadcast(&prep_done);
	pthread_mutex_unlock(&prep_lock);
}

/* A kit whose segment is all faulted in, else NULL (lock held). */
static struct buf **
prep_kit_filled(void)
{
	for (struct buf **k = &prep_kits; *k; k = &(*k)->next)
		if (!(*k)->fill)
			return k;
	return NULL;
}

struct buf *
prep_take_kit(void)
{
	pthread_mutex_lock(&prep_lock);
	struct buf **at = prep_kit_filled(), *k = NULL;
	if (!at) /* else one being faulted in: the rest faults lazily */
		at = &prep_kits;
	if (prep_gen == trc.gen && (k = *at) != NULL) {
		*at = k->next;
		prep_nkits--;
		k->next = NULL;
		if (prep_reserve()) { /* at the cap: the usual path decides */
			while (prep_filling == k)
				pthread_cond_wait(&prep_done, &prep_lock);
			prep_kit_free(k, 1);
			k = NULL;
		}
	}
	prep_kit_want = 1;
	if (!k) /* else prep_name_later decides */
		prep_wake();
	pthread_mutex_unlock(&prep_lock);
	if (k)
		__atomic_fetch_add(&trc.segments, 1, __ATOMIC_RELAXED);
	return k;
}

/* No wake-up (10-25 us, at times 200 us: most of a first record) unless
 * this thread took the last kit: the name waits for the next one, at
 * the latest PREP_POLL_MS. */
void
prep_name_later(struct buf *b)
{
	pthread_mutex_lock(&prep_lock);
	b->name_next = prep_names;
	prep_names = b;
	prep_start();
	if (!prep_nkits)
		prep_wake();
	pthread_mutex_unlock(&prep_lock);
}

void
prep_await_kit(void)
{
	pthread_mutex_lock(&prep_lock);
	while (!prep_nkits && prep_kit_busy && prep_gen)
		pthread_cond_wait(&prep_done, &prep_lock);
	pthread_mutex_unlock(&prep_lock);
}

void
prep_wait_kit(void)
{
	prep_wake(); /* the kit a record of init took is replaced now */
	pthread_mutex_lock(&prep_lock);
	while (prep_running && prep_gen && !prep_kit_filled() &&
	       prep_kit_fails <= 2 &&
	       (prep_kit_want || prep_kit_busy || prep_nkits))
		pthread_cond_wait(&prep_done, &prep_lock);
	/* and named: left for later, it comes before the next segment */
	while (prep_running && (prep_names || prep_name_busy))
		pthread_cond_wait(&prep_done, &prep_lock);
	pthread_mutex_unlock(&prep_lock);
}

/* b's spare segment, unused: cut from the end of its file (lock held). */
static void
prep_drop_spare(struct buf *b)
{
	unsigned char *m =
	    __atomic_exchange_n(&b->spare, NULL, __ATOMIC_ACQUIRE);
	if (!m)
		return;
	munmap(m, trc.cfg.segment_size);
	if (b->fd >= 0 && !b->spare_reuse && b->spare_idx + 1 == b->nseg &&
	    ftruncate(b->fd, (off_t)prep_seg_off(b->spare_idx)) == 0) {
		b->nseg--;
		prep_unreserve();
		__atomic_fetch_sub(&trc.segments, 1, __ATOMIC_RELAXED);
	}
}

void
prep_release(struct buf *b)
{
	pthread_mutex_lock(&prep_lock);
	while (b->spare_busy || b->own_busy || prep_filling == b)
		pthread_cond_wait(&prep_done, &prep_lock);
	b->spare_want = 0;
	b->fill = NULL;
	__atomic_store_n(&b->spare_failed, 1, __ATOMIC_RELAXED); /* no more */
	prep_drop_spare(b);
	pthread_mutex_unlock(&prep_lock);
}

/* The full segments of this session not unmapped yet: unmapped here,
 * with its segment size (the next session's may differ; lock held). */
static void
prep_drop_old(void)
{
	for (struct buf *b = trc.bufs; b; b = b->next)
		for (int i = 0; b->gen == trc.gen && i < BUF_OLD; i++) {
			void *m = __atomic_exchange_n(&b->old[i], NULL,
			                              __ATOMIC_ACQUIRE);
			if (m)
				munmap(m, trc.cfg.segment_size);
		}
}

void
prep_fini(void)
{
	pthread_mutex_lock(&prep_lock);
	while (prep_kit_busy || prep_name_busy || prep_filling ||
	       prep_unmapping)
		pthread_cond_wait(&prep_done, &prep_lock);
	prep_kit_want = 0;
	prep_gen = 0;
	prep_kits_free(1);
	prep_drop_old();
	struct buf *names = prep_names;
	prep_names = NULL;
	pthread_mutex_unlock(&prep_lock);
	for (; names; names = names->name_next)
		prep_name_file(names);
	for (struct buf *b = trc.bufs; b; b = b->next)
		prep_write_calib(b);
}

void
prep_fork_prepare(void)
{
	pthread_mutex_lock(&prep_lock);
}

void
prep_fork_parent(void)
{
	pthread_mutex_unlock(&prep_lock);
}

/* The helper and the kit are the parent's: the child forgets them (its
 * buffers are forgotten too) and starts its own helper when needed. */
void
prep_fork_child(void)
{
	pthread_mutex_init(&prep_lock, NULL);
	if (prep_sem_ok)
		sem_init(&prep_sem, 0, 0);
	pthread_cond_init(&prep_done, NULL);
	prep_running = 0;
	prep_kit_busy = 0;
	prep_kit_want = 0;
	prep_gen = 0;
	prep_names = NULL; /* the parent's buffers, forgotten */
	prep_name_busy = 0;
	prep_filling = NULL;
	prep_unmapping = 0;
	prep_hold = -1;
	prep_parked = prep_idle = 0;
	prep_nlog = 0;
	prep_kits_free(0); /* the parent's: unmapped here, files kept */
}

void
prep_test_hold(int jobs)
{
	pthread_mutex_lock(&prep_lock);
	prep_hold = jobs;
	prep_parked = 0;
	prep_nlog = 0;
	pthread_cond_broadcast(&prep_done);
	pthread_mutex_unlock(&prep_lock);
	prep_wake();
}

/* Until *flag is set (prep_lock held); 0 after 20 s. */
static int
prep_test_wait(int *flag)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 20;
	int e = 0;
	while (!__atomic_load_n(flag, __ATOMIC_RELAXED) && e != ETIMEDOUT)
		e = pthread_cond_timedwait(&prep_done, &prep_lock, &until);
	return __atomic_load_n(flag, __ATOMIC_RELAXED);
}

int
prep_test_wait_parked(void)
{
	pthread_mutex_lock(&prep_lock);
	int ok = prep_test_wait(&prep_parked);
	pthread_mutex_unlock(&prep_lock);
	return ok;
}

int
prep_test_wait_idle(void)
{
	prep_wake(); /* a job left without a wake-up is done first */
	pthread_mutex_lock(&prep_lock);
	int ok = prep_test_wait(&prep_idle);
	pthread_mutex_unlock(&prep_lock);
	return ok;
}

unsigned
prep_test_wakes(void)
{
	return __atomic_load_n(&prep_nwakes, __ATOMIC_RELAXED);
}

void
prep_test_log(char *out, size_t len)
{
	pthread_mutex_lock(&prep_lock);
	size_t n = prep_nlog < len ? prep_nlog : len - 1;
	memcpy(out, prep_log, n);
	out[n] = 0;
	prep_nlog = 0;
	pthread_mutex_unlock(&prep_lock);
}
