/* Per-thread buffers: thread files, segments, and the record slow path. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "trace/clock.h"
#include "trace/prep_file.h"
#include "trace/record.h"
#include "trace/tracer.h"

#define BUF_RETRY_EVERY 4096u /* lost records between two allocation tries */
/* The next segment is asked for once 1/BUF_LOW_WATER of the current
 * one is filled. */
#define BUF_LOW_WATER 8u
/* A reused segment is cleared this much at a time, ahead of its records:
 * a microsecond or two of the record that reaches the cleared end, where
 * clearing 16 MB at the switch stalled it for milliseconds. */
#define BUF_CLEAR (16u << 10)

static uint64_t
buf_seg_off(uint64_t idx)
{
	return FMT_HEADER_PAGE + idx * trc.cfg.segment_size;
}

static int
buf_create_file(struct buf *b)
{
	for (int i = 0; i < 100 && b->fd < 0; i++) {
		if (i == 0)
			snprintf(b->path, sizeof b->path, "%s.%u.dwt",
			         trc.prefix, b->thread);
		else
			snprintf(b->path, sizeof b->path, "%s.%u-%d.dwt",
			         trc.prefix, b->thread, i);
		b->fd = open(b->path,
		             O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		             0644);
		if (b->fd < 0 && errno != EEXIST)
			return dw_err_from_errno(errno);
	}
	return b->fd < 0 ? DW_EEXIST : DW_OK;
}

static int
buf_open_file(struct buf *b)
{
	int err = buf_create_file(b);
	if (err != DW_OK)
		return err;
	if ((err = posix_fallocate(b->fd, 0, FMT_HEADER_PAGE)) != 0)
		goto fail;
	b->hdr = mmap(NULL, FMT_HEADER_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
	              b->fd, 0);
	if (b->hdr == MAP_FAILED) {
		b->hdr = NULL;
		err = errno;
		goto fail;
	}
	lbl_put_header(b->hdr, FMT_FILE_THREAD, b->thread);
	return DW_OK;
fail:
	close(b->fd);
	unlink(b->path);
	b->fd = -1;
	return dw_err_from_errno(err);
}

void
buf_write_header_counts(struct buf *b)
{
	if (!b->hdr)
		return;
	fmt_put_u64(b->hdr + FMT_H_LOST_DISK, b->lost_disk);
	fmt_put_u64(b->hdr + FMT_H_LOST_CAP, b->lost_cap);
	fmt_put_u64(b->hdr + FMT_H_SEG_REUSED, b->reused);
	fmt_put_u64(b->hdr + FMT_H_RECORDS, b->nrec);
}

/* Picks the file index of the next segment: a new one, or in circular
 * mode at the cap the oldest one (the next in ring order: once the cap is
 * reached it stays reached, so the ring never grows again). */
static int
buf_pick_segment(struct buf *b, uint64_t *idx, int *reuse)
{
	uint64_t seg = trc.cfg.segment_size, cap = trc.cfg.size_cap;
	uint64_t used = __atomic_load_n(&trc.bytes, __ATOMIC_RELAXED);
	*reuse = 0;
	if (cap && used + seg > cap) {
		if (!trc.cfg.circular || b->nseg == 0)
			return DW_ETOOBIG;
		*idx = prep_own_reuse(b);
		*reuse = 1;
		return DW_OK;
	}
	/* the index is taken first: the helper may be growing the file too
	 * (a failure leaves a hole, which the reader skips) */
	uint64_t at = prep_own_index(b);
	int e = posix_fallocate(b->fd, (off_t)buf_seg_off(at), (off_t)seg);
	if (e != 0)
		return e == ENOSPC ? DW_ENOSPC : dw_err_from_errno(e);
	__atomic_fetch_add(&trc.bytes, seg, __ATOMIC_RELAXED);
	__atomic_fetch_add(&trc.segments, 1, __ATOMIC_RELAXED);
	*idx = at;
	return DW_OK;
}

/* Mapped, not faulted in: growing here means the helper fell behind, and
 * faulting 16 MB in at once would stall this record for milliseconds;
 * the pages fault one at a time as records reach them (a few
 * microseconds each: no read-around, prep_mapseg). */
static unsigned char *
buf_map_segment(struct buf *b, uint64_t idx, int reuse)
{
	if (reuse && b->seg && idx == b->cur)
		return b->seg;
	return prep_mapseg(b->fd, idx);
}

/* Where records may go up to in b's segment: its low-water mark until
 * passed, then its end; in a reused segment, one slot short of where it
 * is cleared, so that the slot after the last record always reads as
 * the end of the records (a crash leaves none of the old ones after). */
static unsigned char *
buf_limit(struct buf *b)
{
	unsigned char *e = b->lw ? b->lw : b->seg + trc.cfg.segment_size;
	if (b->clear && b->clear - FMT_REC_SIZE < e)
		e = b->clear - FMT_REC_SIZE;
	return e;
}

/* The next chunk of a reused segment cleared. */
static void
buf_clear_more(struct buf *b)
{
	unsigned char *e = b->seg + trc.cfg.segment_size;
	size_t n = (size_t)(e - b->clear) < BUF_CLEAR ? (size_t)(e - b->clear)
	                                              : BUF_CLEAR;
	memset(b->clear, 0, n);
	b->clear = b->clear + n < e ? b->clear + n : NULL;
}

/* t, ns: the calibration pair and time base, taken before the file was
 * grown and mapped, so that the record that asked for the segment keeps
 * (nearly) the time it was made. */
static void
buf_start_segment(struct buf *b, unsigned char *m, uint64_t idx, int reuse,
                  uint64_t *now, uint64_t t, uint64_t ns)
{
	uint64_t seg = trc.cfg.segment_size;
	if (b->seg && b->seg != m)
		prep_retire(b, b->seg);
	b->seg = m;
	b->clear = NULL;
	if (reuse) { /* its old records cleared as the new ones come */
		__atomic_store_n((uint32_t *)m, 0, __ATOMIC_RELEASE);
		b->clear = m + FMT_S_END;
		buf_clear_more(b);
		b->reused++;
		__atomic_fetch_add(&trc.segments_reused, 1, __ATOMIC_RELAXED);
	}
	if (t < *now)
		t = *now;
	fmt_put_u32(m + FMT_S_SIZE, FMT_S_END);
	fmt_put_u64(m + FMT_S_SEQ, ++b->seq);
	fmt_put_u64(m + FMT_S_TICKS, t);
	fmt_put_u64(m + FMT_S_NS, ns);
	fmt_put_u32(m + FMT_S_THREAD, b->thread);
	uint32_t magic;
	fmt_put_u32((unsigned char *)&magic, FMT_SEG_MAGIC);
	__atomic_store_n((uint32_t *)m, magic, __ATOMIC_RELEASE);
	b->cur = idx;
	b->pos = m + FMT_S_END;
	b->lw = m + FMT_S_END +
	        (seg - FMT_S_END) / BUF_LOW_WATER / FMT_REC_SIZE * FMT_REC_SIZE;
	__atomic_store_n(&b->end, buf_limit(b), __ATOMIC_RELAXED);
	b->last = t;
	*now = t;
	buf_write_header_counts(b);
}

/* The helper's prepared segment when there is one (a pointer swap);
 * else made here.  The next one is asked for at the low-water mark. */
static int
buf_new_segment(struct buf *b, uint64_t *now)
{
	uint64_t idx = 0, t = b->reg_ticks, ns = b->reg_ns;
	int reuse = 0, err = DW_OK;
	if (t)
		b->reg_ticks = b->reg_ns = 0;
	else
		clk_pair(&t, &ns);
	if (b->fd < 0 && (err = buf_open_file(b)) != DW_OK)
		return err;
	unsigned char *m = prep_take_segment(b, &idx);
	if (m)
		reuse = b->spare_reuse;
	else {
		b->sw_inline++;
		err = buf_pick_segment(b, &idx, &reuse);
		if (err == DW_OK && !(m = buf_map_segment(b, idx, reuse)))
			err = DW_ENOSPC;
		prep_own_done(b);
		if (err != DW_OK && err != DW_ETOOBIG) {
			/* the helper's segment may have taken the last room */
			if (!(m = prep_take_late(b, &idx)))
				return err;
			err = DW_OK;
			reuse = b->spare_reuse;
		} else if (err != DW_OK)
			return err;
	}
	buf_start_segment(b, m, idx, reuse, now, t, ns);
	return DW_OK;
}

static void
buf_lose(struct buf *b, int err)
{
	if (err == DW_ETOOBIG)
		b->lost_cap++;
	else
		b->lost_disk++;
	buf_write_header_counts(b);
}

/* No segment to write into: records are lost until the next try. */
static void
buf_fail(struct buf *b, int err)
{
	if (b->seg)
		munmap(b->seg, trc.cfg.segment_size);
	b->seg = NULL;
	b->pos = NULL;
	b->lw = NULL;
	b->clear = NULL;
	__atomic_store_n(&b->end, NULL, __ATOMIC_RELAXED);
	b->retry_at = b->lost_disk + b->lost_cap + BUF_RETRY_EVERY;
	b->fail_err = err;
	buf_lose(b, err);
}

/* A buffer prepared ahead: no system call here, its file is named and
 * the pair written by the helper. */
static struct buf *
buf_from_kit(uint32_t thread)
{
	struct buf *b = prep_take_kit();
	if (!b)
		return NULL;
	b->thread = thread;
	lbl_header_ids(b->hdr, thread);
	lbl_seal_header(b->hdr, FMT_FILE_THREAD);
	clk_pair(&b->cal_ticks, &b->cal_ns);
	b->cal_pending = 1;
	prep_name_later(b);
	return b;
}

/* The usual path: the file made here, the pair written here. */
static struct buf *
buf_made_here(uint32_t thread)
{
	struct buf *b = calloc(1, sizeof *b);
	if (!b)
		return NULL;
	b->fd = -1;
	b->thread = thread;
	if (buf_open_file(b) != DW_OK)
		b->retry_at = 0;
	uint64_t t, ns;
	clk_pair(&t, &ns);
	unsigned char pl[16];
	fmt_put_u64(pl, t);
	fmt_put_u64(pl + 8, ns);
	lbl_write(FMT_L_CALIB, pl, sizeof pl);
	return b;
}

static struct buf *
buf_register(uint64_t now)
{
	uint64_t t0, ns0;
	clk_pair(&t0, &ns0); /* the thread's start, before its file exists */
	prep_await_kit();
	pthread_mutex_lock(&trc.lock);
	struct buf *b = NULL;
	if (!trc_on)
		goto out;
	if (trc.need_pfile) { /* the first record after a fork */
		lbl_pfile_create();
		prep_session(trc.gen);
	}
	uint32_t thread = trc.thread_fn ? trc.thread_fn() : trc.next_thread;
	trc.next_thread++;
	trc.nthreads++;
	trc_refresh_identity();
	if (!(b = buf_from_kit(thread)) && !(b = buf_made_here(thread))) {
		trc.next_thread--;
		trc.nthreads--;
		goto out;
	}
	b->gen = trc.gen;
	b->last = now;
	b->reg_ticks = t0;
	b->reg_ns = ns0;
	b->next = trc.bufs;
	trc.bufs = b;
	pthread_setspecific(trc_key, b);
out:
	pthread_mutex_unlock(&trc.lock);
	trc_self = b;
	return b;
}

static int
buf_need_segment(struct buf *b, uint64_t *now)
{
	if (!b->seg && b->lost_disk + b->lost_cap < b->retry_at) {
		buf_lose(b, b->fail_err);
		return -1;
	}
	int err = buf_new_segment(b, now);
	if (err != DW_OK) {
		buf_fail(b, err);
		return -1;
	}
	return 0;
}

/* A reused segment's cleared end is near: room for a record of need
 * bytes and a NEWBASE before it, and the slot after. */
static int
buf_at_clear(struct buf *b, unsigned need)
{
	return b->clear &&
	       b->pos + need + FMT_REC_SIZE > b->clear - FMT_REC_SIZE;
}

/* Past the low-water mark (then the next segment is asked for), or at
 * a reused segment's cleared end (then the next chunk is cleared): the
 * writable end moves on.  The exchange fails when fini (or the thread's
 * exit) has stopped the buffer meanwhile: it stays stopped. */
static void
buf_move_end(struct buf *b, unsigned need)
{
	unsigned char *old = buf_limit(b);
	int at_clear = buf_at_clear(b, need);
	int ask = b->lw && (!at_clear || b->pos + need > b->lw);
	if (ask)
		b->lw = NULL;
	if (at_clear)
		buf_clear_more(b);
	if (__atomic_compare_exchange_n(&b->end, &old, buf_limit(b), 0,
	                                __ATOMIC_RELAXED, __ATOMIC_RELAXED) &&
	    ask)
		prep_want_segment(b);
}

/* A new thread's first record is its base state when the session has
 * one (the Extrae API's Running); the caller's record follows it. */
static unsigned char *
buf_base_state(struct buf **tp, uint64_t *now, unsigned need)
{
	unsigned char *p = buf_slow(tp, now, FMT_REC_SIZE + need);
	if (!p)
		return NULL;
	rec_store_one(*tp, *now, FMT_R_STATE_PUSH, trc.base_state, 0);
	return (*tp)->pos;
}

unsigned char *
buf_slow(struct buf **tp, uint64_t *now, unsigned need)
{
	struct buf *b = *tp;
	if (!__atomic_load_n(&trc_on, __ATOMIC_RELAXED))
		return NULL;
	if (b && __atomic_load_n(&b->exited, __ATOMIC_ACQUIRE))
		return NULL; /* after its THREAD_END */
	if (!b || b->gen != trc.gen) {
		if (!(b = buf_register(*now)))
			return NULL;
		*tp = b;
		if (trc.base_state)
			return buf_base_state(tp, now, need);
	}
	if (*now < b->last)
		*now = b->last; /* a thread's records never go back in time */
	if (b->lw || buf_at_clear(b, need))
		buf_move_end(b, need);
	uintptr_t end = (uintptr_t)__atomic_load_n(&b->end, __ATOMIC_RELAXED);
	if (!b->seg || (uintptr_t)b->pos + need > end)
		return buf_need_segment(b, now) ? NULL : b->pos;
	if (*now - b->last < FMT_DELTA_LIMIT)
		return b->pos;
	if ((uintptr_t)b->pos + FMT_REC_SIZE + need > end)
		return buf_need_segment(b, now) ? NULL : b->pos;
	unsigned char *p = b->pos;
	memset(p + 4, 0, 4);
	memcpy(p + 8, now, 8);
	__atomic_store_n((uint32_t *)p,
	                 (uint32_t)FMT_R_NEWBASE << FMT_KIND_SHIFT,
	                 __ATOMIC_RELEASE);
	b->pos = p + FMT_REC_SIZE;
	b->last = *now;
	return b->pos;
}

/* Cuts the reserved but unused tail of the file's last segment.  Only
 * for a buffer no thread can store into any more. */
static uint32_t
buf_trim(struct buf *b)
{
	if (!b->seg || b->nseg == 0 || b->cur != b->nseg - 1)
		return 0;
	uint64_t used = (uint64_t)(b->pos - b->seg);
	munmap(b->seg, trc.cfg.segment_size);
	b->seg = NULL;
	b->pos = NULL;
	b->clear = NULL;
	if (ftruncate(b->fd, (off_t)(buf_seg_off(b->cur) + used)) != 0)
		return 0;
	return FMT_FLAG_TRIMMED;
}

void
buf_finish(struct buf *b, uint64_t ticks, uint64_t ns, int trim)
{
	__atomic_store_n(&b->end, NULL, __ATOMIC_RELAXED);
	if (!b->hdr)
		return;
	buf_write_header_counts(b);
	fmt_put_u64(b->hdr + FMT_H_END_TICKS, ticks);
	fmt_put_u64(b->hdr + FMT_H_END_NS, ns);
	uint32_t fl = fmt_get_u32(b->hdr + FMT_H_FLAGS) | FMT_FLAG_ENDED;
	if (trim)
		fl |= buf_trim(b);
	fmt_put_u32(b->hdr + FMT_H_FLAGS, fl);
}

void
buf_drop_all(void)
{
	struct buf *b = trc.bufs, *n;
	for (; b; b = n) {
		n = b->next;
		if (b->seg)
			munmap(b->seg, trc.cfg.segment_size);
		if (b->spare) /* the parent's: forgotten, not cut */
			munmap(b->spare, trc.cfg.segment_size);
		for (int i = 0; i < BUF_OLD; i++)
			if (b->old[i])
				munmap(b->old[i], trc.cfg.segment_size);
		if (b->hdr)
			munmap(b->hdr, FMT_HEADER_PAGE);
		if (b->fd >= 0)
			close(b->fd);
		fn_set_free(&b->fns);
		free(b);
	}
	trc.bufs = NULL;
	trc_self = NULL;
}

void
rec_one_slow(uint32_t kind, uint32_t a, uint64_t b, uint64_t now)
{
	struct buf *t = trc_self;
	if (buf_slow(&t, &now, FMT_REC_SIZE))
		rec_store_one(t, now, kind, a, b);
}

void
rec_two_slow(uint32_t kind, uint32_t a, uint64_t b, uint32_t w1, uint32_t a1,
             uint64_t b1, uint64_t now)
{
	struct buf *t = trc_self;
	if (buf_slow(&t, &now, 2 * FMT_REC_SIZE))
		rec_store_two(t, now, kind, a, b, w1, a1, b1);
}

void
rec_one_clk(uint32_t kind, uint32_t a, uint64_t b)
{
	struct buf *t = trc_self;
	uint64_t now = clk_ticks();
	if (rec_likely(t != NULL) && rec_fits(t, now, FMT_REC_SIZE))
		rec_store_one(t, now, kind, a, b);
	else
		rec_one_slow(kind, a, b, now);
}

void
rec_two_clk(uint32_t kind, uint32_t a, uint64_t b, uint32_t w1, uint32_t a1,
            uint64_t b1)
{
	struct buf *t = trc_self;
	uint64_t now = clk_ticks();
	if (rec_likely(t != NULL) && rec_fits(t, now, 2 * FMT_REC_SIZE))
		rec_store_two(t, now, kind, a, b, w1, a1, b1);
	else
		rec_two_slow(kind, a, b, w1, a1, b1, now);
}
