/*
 * The record hot path: a timestamp read and stores into the calling
 * thread's mapped segment.  No lock, no system call, no allocation; the
 * slow path (first record of a thread, full segment, long gap) is
 * buf_slow().
 */
#ifndef DW_TRACE_RECORD_H
#define DW_TRACE_RECORD_H

#include <string.h>

#include "trace/clock.h"
#include "trace/tracer.h"

#define rec_likely(x)   __builtin_expect(!!(x), 1)
#define rec_unlikely(x) __builtin_expect(!!(x), 0)

/* Reserves `need` bytes; returns the slot and the record's delta, or NULL
 * when the record cannot be stored (it is then counted as lost). */
static inline unsigned char *
rec_reserve(struct buf **tp, uint64_t *now, uint32_t *delta, unsigned need)
{
	struct buf *t = trc_self;
	uint64_t n = clk_ticks();
	unsigned char *p;
	if (rec_likely(t != NULL)) {
		uint64_t d = n - t->last;
		uintptr_t end =
		    (uintptr_t)__atomic_load_n(&t->end, __ATOMIC_RELAXED);
		p = t->pos;
		if (rec_likely(d < FMT_DELTA_LIMIT &&
		               (uintptr_t)p + need <= end)) {
			*tp = t;
			*now = n;
			*delta = (uint32_t)d;
			return p;
		}
	}
	if (!(p = buf_slow(&t, &n, need)))
		return NULL;
	*tp = t;
	*now = n;
	*delta = (uint32_t)(n - t->last);
	return p;
}

/* Stores a slot's payload; the slot becomes valid at rec_commit. */
static inline void
rec_payload(unsigned char *p, uint32_t a, uint64_t b)
{
	memcpy(p + 4, &a, 4);
	memcpy(p + 8, &b, 8);
}

static inline void
rec_commit(unsigned char *p, uint32_t kind, uint32_t delta)
{
	__atomic_store_n((uint32_t *)p, kind << FMT_KIND_SHIFT | delta,
	                 __ATOMIC_RELEASE);
}

/* The line after the next slot asked for ahead, for writing: a record
 * lands on a line of the segment no one has touched since the helper
 * zeroed it, long since out of this core's caches; a call writes 1-2
 * lines a thread between context switches, so the next record's line
 * is then there already (a prefetch past the segment's end is dropped,
 * never a fault). */
static inline void
rec_done(struct buf *t, unsigned char *next, uint64_t now)
{
	__builtin_prefetch(next + 64, 1, 3);
	t->pos = next;
	t->last = now;
	t->nrec++;
}

/* The slow paths store the whole record themselves, so that the fast path
 * needs no stack frame; the _clk ones read the clock source themselves
 * (no TSC), so that every way out of the fast path is a tail call and
 * the arguments never need keeping across a call. */
void rec_one_slow(uint32_t kind, uint32_t a, uint64_t b, uint64_t now);
void rec_two_slow(uint32_t kind, uint32_t a, uint64_t b, uint32_t w1,
                  uint32_t a1, uint64_t b1, uint64_t now);
void rec_one_clk(uint32_t kind, uint32_t a, uint64_t b);
void rec_two_clk(uint32_t kind, uint32_t a, uint64_t b, uint32_t w1,
                 uint32_t a1, uint64_t b1);

/* The TSC read inline when it is the clock: 0 and no read otherwise
 * (the caller then goes to a _clk path). */
#if defined(__x86_64__) || defined(__i386__)
#define REC_TSC() rec_likely(clk_use_tsc)
#define REC_NOW() __builtin_ia32_rdtsc()
#else
#define REC_TSC() 0
#define REC_NOW() 0
#endif

static inline int
rec_fits(struct buf *t, uint64_t now, unsigned need)
{
	uintptr_t end = (uintptr_t)__atomic_load_n(&t->end, __ATOMIC_RELAXED);
	return rec_likely(now - t->last < FMT_DELTA_LIMIT &&
	                  (uintptr_t)t->pos + need <= end);
}

static inline void
rec_store_one(struct buf *t, uint64_t now, uint32_t kind, uint32_t a,
              uint64_t b)
{
	unsigned char *p = t->pos;
	uint32_t delta = (uint32_t)(now - t->last); /* before the stores */
	rec_payload(p, a, b);
	rec_commit(p, kind, delta);
	rec_done(t, p + FMT_REC_SIZE, now);
}

/* A two-slot record: the second slot is complete before the first one's
 * w0 makes the pair valid. */
static inline void
rec_store_two(struct buf *t, uint64_t now, uint32_t kind, uint32_t a,
              uint64_t b, uint32_t w1, uint32_t a1, uint64_t b1)
{
	unsigned char *p = t->pos;
	uint32_t delta = (uint32_t)(now - t->last); /* before the stores */
	uint32_t cont = (uint32_t)FMT_R_CONT << FMT_KIND_SHIFT | w1;
	memcpy(p + 16, &cont, 4);
	rec_payload(p + 16, a1, b1);
	rec_payload(p, a, b);
	rec_commit(p, kind, delta);
	rec_done(t, p + 2 * FMT_REC_SIZE, now);
}

static inline void
rec_one(uint32_t kind, uint32_t a, uint64_t b)
{
	if (!REC_TSC()) {
		rec_one_clk(kind, a, b);
		return;
	}
	struct buf *t = trc_self;
	uint64_t now = REC_NOW();
	if (rec_likely(t != NULL) && rec_fits(t, now, FMT_REC_SIZE))
		rec_store_one(t, now, kind, a, b);
	else
		rec_one_slow(kind, a, b, now);
}

/* rec_one at a TSC value the caller read (its own clock when the TSC is
 * not the tracer's). */
static inline void
rec_one_at(uint64_t tsc, uint32_t kind, uint32_t a, uint64_t b)
{
	if (!REC_TSC()) {
		rec_one_clk(kind, a, b);
		return;
	}
	struct buf *t = trc_self;
	if (rec_likely(t != NULL) && rec_fits(t, tsc, FMT_REC_SIZE))
		rec_store_one(t, tsc, kind, a, b);
	else
		rec_one_slow(kind, a, b, tsc);
}

static inline void
rec_two(uint32_t kind, uint32_t a, uint64_t b, uint32_t w1, uint32_t a1,
        uint64_t b1)
{
	if (!REC_TSC()) {
		rec_two_clk(kind, a, b, w1, a1, b1);
		return;
	}
	struct buf *t = trc_self;
	uint64_t now = REC_NOW();
	if (rec_likely(t != NULL) && rec_fits(t, now, 2 * FMT_REC_SIZE))
		rec_store_two(t, now, kind, a, b, w1, a1, b1);
	else
		rec_two_slow(kind, a, b, w1, a1, b1, now);
}

#endif
