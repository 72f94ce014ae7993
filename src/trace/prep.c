/*
 * Segments prepared ahead of time, so that no record pays for growing a
 * file: a helper thread allocates, maps and faults in (MADV_POPULATE_WRITE)
 *
 * - each buffer's next segment, asked for when a segment starts: when
 *   the current one is full, the record that finds it full only swaps
 *   pointers;
 * - the unmapping of full segments;
 * - a "kit" for the next thread to register: its struct buf, its file
 *   (under a name the reader ignores), header page (filled, not sealed)
 *   and first segment, so that registering takes no system call;
 * - the naming of a taken kit's file (a rename costs 50-100 us on ext4)
 *   and the calibration pair of its registration (a write).
 *
 * What the helper prepared and nobody used is given back at fini (cut
 * from the file, or the kit's file removed), so the files end as they
 * did without it.  The helper's work happens under no lock a recording
 * thread takes; prep_lock guards the handoff only.
 */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "trace/tracer.h"

static pthread_mutex_t prep_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t prep_work = PTHREAD_COND_INITIALIZER; /* to helper */
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
/* Full segments to unmap: tearing down 16 MB of page tables takes about
 * a millisecond, which the helper pays instead of the recording thread. */
#define PREP_OLD 8
static void *prep_old[PREP_OLD];
static size_t prep_old_len[PREP_OLD];
static unsigned prep_nold;

static uint64_t
prep_seg_off(uint64_t idx)
{
	return FMT_HEADER_PAGE + idx * trc.cfg.segment_size;
}

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

/* Grows fd by segment idx and maps it, faulted in. */
static unsigned char *
prep_map(int fd, uint64_t idx)
{
	uint64_t seg = trc.cfg.segment_size;
	if (posix_fallocate(fd, (off_t)prep_seg_off(idx), (off_t)seg))
		return NULL;
	unsigned char *m = mmap(NULL, seg, PROT_READ | PROT_WRITE, MAP_SHARED,
	                        fd, (off_t)prep_seg_off(idx));
	if (m == MAP_FAILED)
		return NULL;
#ifdef MADV_POPULATE_WRITE
	madvise(m, seg, MADV_POPULATE_WRITE);
#endif
	return m;
}

static void
prep_one_segment(struct buf *b, uint64_t idx)
{
	unsigned char *m = prep_map(b->fd, idx);
	pthread_mutex_lock(&prep_lock);
	if (m) {
		b->spare = m;
		b->spare_idx = idx;
		__atomic_fetch_add(&trc.segments, 1, __ATOMIC_RELAXED);
	} else {
		b->nseg--; /* nobody else grows it while busy */
		prep_unreserve();
		b->spare_failed = 1;
	}
	b->spare_busy = 0;
	pthread_cond_broadcast(&prep_done);
	pthread_mutex_unlock(&prep_lock);
}

static void
prep_kit_free(struct buf *k, int remove)
{
	if (k->spare)
		munmap(k->spare, trc.cfg.segment_size);
	if (k->hdr)
		munmap(k->hdr, FMT_HEADER_PAGE);
	if (k->fd >= 0)
		close(k->fd);
	if (k->fd >= 0 && remove)
		unlink(k->path);
	free(k);
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
		k->spare = prep_map(k->fd, 0);
	}
	if (k->spare) {
		k->gen = gen;
		k->nseg = 1;
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
	} else {
		if (k)
			prep_kit_free(k, 1);
		prep_kit_fails += !k;
	}
	prep_kit_busy = 0;
	pthread_cond_broadcast(&prep_done);
	pthread_mutex_unlock(&prep_lock);
}

/* Renames a taken kit's file to its thread's name; a name in use (a
 * thread id callback may repeat ids) gets a suffix, as buf_create_file
 * does.  Only the helper, or fini once the helper is idle, calls it. */
static void
prep_name_file(struct buf *b)
{
	char to[PATH_MAX];
	int e = 0;
	for (int i = 0; i < 100; i++) {
		if (i == 0)
			snprintf(to, sizeof to, "%s.%u.dwt", trc.prefix,
			         b->thread);
		else
			snprintf(to, sizeof to, "%s.%u-%d.dwt", trc.prefix,
			         b->thread, i);
		e = renameat2(AT_FDCWD, b->path, AT_FDCWD, to, RENAME_NOREPLACE)
		        ? errno
		        : 0;
		if (e == EINVAL || e == ENOSYS) { /* no RENAME_NOREPLACE */
			e = link(b->path, to) ? errno : 0;
			if (e == 0)
				unlink(b->path);
		}
		if (e == 0) {
			memcpy(b->path, to, sizeof to);
			return;
		}
		if (e != EEXIST)
			break;
	}
	trc_err("cannot name the file of thread %u ('%s'): %s", b->thread,
	        b->path, strerror(e));
}

/* The registration's calibration pair, unless fini wrote it. */
static void
prep_write_calib(struct buf *b)
{
	if (!b->cal_pending)
		return;
	unsigned char pl[16];
	fmt_put_u64(pl, b->cal_ticks);
	fmt_put_u64(pl + 8, b->cal_ns);
	if (b->gen == trc.gen)
		lbl_write(FMT_L_CALIB, pl, sizeof pl);
	b->cal_pending = 0;
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
		if (b->gen == prep_gen && b->spare_want && !b->spare_busy &&
		    !b->spare && b->fd >= 0)
			return b;
	return NULL;
}

static void *
prep_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&prep_lock);
	/* names first (until then a crash hides the thread's records),
	 * then one kit: threads start soon after init, while a segment
	 * just started takes long to fill */
	for (;;) {
		struct buf *b = prep_find();
		if (prep_names) {
			prep_name_one();
		} else if (prep_nold) {
			prep_nold--;
			void *m = prep_old[prep_nold];
			size_t len = prep_old_len[prep_nold];
			pthread_mutex_unlock(&prep_lock);
			munmap(m, len);
			pthread_mutex_lock(&prep_lock);
		} else if (prep_kit_want && !prep_kit_busy &&
		           prep_nkits < PREP_KITS && (!prep_nkits || !b)) {
			/* the second kit (for a burst of threads) after the
			 * next segment of a thread that is recording */
			prep_kit_want = 0;
			/* counted against the cap when a thread takes it */
			if (prep_kit_fails > 2)
				continue;
			prep_kit_busy = 1;
			uint64_t gen = prep_gen;
			pthread_mutex_unlock(&prep_lock);
			prep_one_kit(gen);
			pthread_mutex_lock(&prep_lock);
		} else if (b) {
			b->spare_want = 0;
			if (prep_reserve())
				continue; /* at the cap: the owner decides */
			b->spare_busy = 1;
			uint64_t idx = b->nseg++;
			pthread_mutex_unlock(&prep_lock);
			prep_one_segment(b, idx);
			pthread_mutex_lock(&prep_lock);
		} else {
			pthread_cond_wait(&prep_work, &prep_lock);
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
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	/* its signals stay the program's: block them all in the helper */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&t, &a, prep_main, NULL) == 0)
		prep_running = 1;
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
	pthread_cond_signal(&prep_work);
	pthread_mutex_unlock(&prep_lock);
}

void
prep_want_segment(struct buf *b)
{
	pthread_mutex_lock(&prep_lock);
	if (b->gen == prep_gen && !b->spare && !b->spare_failed) {
		b->spare_want = 1;
		prep_start();
		pthread_cond_signal(&prep_work);
	}
	pthread_mutex_unlock(&prep_lock);
}

void
prep_retire(void *m, size_t len)
{
	pthread_mutex_lock(&prep_lock);
	if (prep_running && prep_nold < PREP_OLD) {
		prep_old[prep_nold] = m;
		prep_old_len[prep_nold++] = len;
		pthread_cond_signal(&prep_work);
		m = NULL;
	}
	pthread_mutex_unlock(&prep_lock);
	if (m)
		munmap(m, len);
}

unsigned char *
prep_take_segment(struct buf *b, uint64_t *idx)
{
	unsigned char *m;
	pthread_mutex_lock(&prep_lock);
	while (b->spare_busy) /* being made: waiting is the cheapest */
		pthread_cond_wait(&prep_done, &prep_lock);
	m = b->spare;
	*idx = b->spare_idx;
	b->spare = NULL;
	b->spare_want = 0;
	/* the caller may grow the file itself now: the helper keeps off */
	b->spare_busy = m == NULL;
	pthread_mutex_unlock(&prep_lock);
	return m;
}

void
prep_own_done(struct buf *b)
{
	pthread_mutex_lock(&prep_lock);
	b->spare_busy = 0;
	pthread_cond_broadcast(&prep_done);
	pthread_mutex_unlock(&prep_lock);
}

struct buf *
prep_take_kit(void)
{
	pthread_mutex_lock(&prep_lock);
	struct buf *k = prep_gen == trc.gen ? prep_kits : NULL;
	if (k) {
		prep_kits = k->next;
		prep_nkits--;
		k->next = NULL;
		if (prep_reserve()) { /* at the cap: the usual path decides */
			prep_kit_free(k, 1);
			k = NULL;
		}
	}
	prep_kit_want = 1;
	if (!k) /* else prep_name_later wakes the helper */
		pthread_cond_signal(&prep_work);
	pthread_mutex_unlock(&prep_lock);
	if (k)
		__atomic_fetch_add(&trc.segments, 1, __ATOMIC_RELAXED);
	return k;
}

void
prep_name_later(struct buf *b)
{
	pthread_mutex_lock(&prep_lock);
	b->name_next = prep_names;
	prep_names = b;
	prep_start();
	pthread_cond_signal(&prep_work);
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
	pthread_mutex_lock(&prep_lock);
	while (prep_running && prep_gen && !prep_nkits && prep_kit_fails <= 2 &&
	       (prep_kit_want || prep_kit_busy))
		pthread_cond_wait(&prep_done, &prep_lock);
	pthread_mutex_unlock(&prep_lock);
}

/* b's spare segment, unused: cut from the end of its file (lock held). */
static void
prep_drop_spare(struct buf *b)
{
	if (!b->spare)
		return;
	munmap(b->spare, trc.cfg.segment_size);
	b->spare = NULL;
	if (b->fd >= 0 && b->spare_idx + 1 == b->nseg &&
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
	while (b->spare_busy)
		pthread_cond_wait(&prep_done, &prep_lock);
	b->spare_want = 0;
	b->spare_failed = 1; /* no more */
	prep_drop_spare(b);
	pthread_mutex_unlock(&prep_lock);
}

void
prep_fini(void)
{
	pthread_mutex_lock(&prep_lock);
	while (prep_kit_busy || prep_name_busy)
		pthread_cond_wait(&prep_done, &prep_lock);
	prep_kit_want = 0;
	prep_gen = 0;
	prep_kits_free(1);
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
	pthread_cond_init(&prep_work, NULL);
	pthread_cond_init(&prep_done, NULL);
	prep_running = 0;
	prep_nold = 0; /* the child's copies stay mapped: harmless */
	prep_kit_busy = 0;
	prep_kit_want = 0;
	prep_gen = 0;
	prep_names = NULL; /* the parent's buffers, forgotten */
	prep_name_busy = 0;
	prep_kits_free(0); /* the parent's: unmapped here, files kept */
}
