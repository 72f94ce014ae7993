/*
 * The helper's file and mapping steps (src/trace/prep.c): growing and
 * mapping a segment, unmapping a full one, freeing a kit, naming a taken
 * kit's file; its sleep, and the switches' counts.  None takes prep.c's
 * lock.
 */
#include <errno.h>
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

uint64_t
prep_seg_off(uint64_t idx)
{
	return FMT_HEADER_PAGE + idx * trc.cfg.segment_size;
}

/* Maps segment idx of fd (not faulted in yet), with no read-around:
 * a page the helper has not faulted in yet costs the thread that writes
 * it one page (15-20 us), where the kernel's read-around of a fault
 * (read_ahead_kb, 8 MB on the test VM) zero-filled up to 16 MB in that
 * one fault (0.6-5.8 ms).  The helper reads its chunks in itself
 * (prep_fault_in). */
unsigned char *
prep_mapseg(int fd, uint64_t idx)
{
	uint64_t seg = trc.cfg.segment_size;
	unsigned char *m = mmap(NULL, seg, PROT_READ | PROT_WRITE, MAP_SHARED,
	                        fd, (off_t)prep_seg_off(idx));
	if (m == MAP_FAILED)
		return NULL;
	madvise(m, seg, MADV_RANDOM);
	return m;
}

/* Bytes off..off+len of segment idx (mapped at m) made writable: read
 * into the page cache in one go (large folios, as read-around did),
 * then mapped writable; older kernels refuse MADV_POPULATE_WRITE and the
 * pages fault lazily. */
void
prep_fault_in(int fd, uint64_t idx, unsigned char *m, uint64_t off,
              uint64_t len)
{
	posix_fadvise(fd, (off_t)(prep_seg_off(idx) + off), (off_t)len,
	              POSIX_FADV_WILLNEED);
#ifdef MADV_POPULATE_WRITE
	madvise(m + off, len, MADV_POPULATE_WRITE);
#else
	(void)m;
#endif
}

/* Grows fd by segment idx and maps it. */
unsigned char *
prep_grow(int fd, uint64_t idx)
{
	if (posix_fallocate(fd, (off_t)prep_seg_off(idx),
	                    (off_t)trc.cfg.segment_size))
		return NULL;
	return prep_mapseg(fd, idx);
}

void
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

/* Renames a taken kit's file to its thread's name; a name in use (a
 * thread id callback may repeat ids) gets a suffix, as buf_create_file
 * does.  Only the helper, or fini once the helper is idle, calls it. */
void
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
void
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

/* A full segment unmapped a chunk at a time: munmap holds the address
 * space's lock for writing, and a recording thread that faults a page
 * meanwhile (it overtook the helper) waits for it, spinning: 16 MB at
 * once held it 1-2 ms on the test VM. */
void
prep_unmap(unsigned char *m)
{
	uint64_t seg = trc.cfg.segment_size;
	for (uint64_t off = 0; off < seg; off += PREP_CHUNK)
		munmap(m + off,
		       seg - off < PREP_CHUNK ? seg - off : PREP_CHUNK);
}

void
prep_sem_sleep(sem_t *s, unsigned ms)
{
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	until.tv_sec += ms / 1000 + until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	while ((ms ? sem_clockwait(s, CLOCK_MONOTONIC, &until) : sem_wait(s)) &&
	       errno == EINTR)
		;
}

void
prep_get_counts(struct prep_counts *c)
{
	memset(c, 0, sizeof *c);
	pthread_mutex_lock(&trc.lock);
	for (struct buf *b = trc.bufs; b; b = b->next) {
		if (b->gen != trc.gen)
			continue;
		c->swaps += b->sw_swap;
		c->waits += b->sw_wait;
		c->grown_inline += b->sw_inline;
		c->unmapped_inline += b->unmap_inline;
	}
	pthread_mutex_unlock(&trc.lock);
}
