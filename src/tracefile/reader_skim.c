/*
 * Thread files: the skim (rd_thread_skim), the scan's fast way through
 * a stream.
 */
#include <string.h>

#include "tracefile/reader_int.h"

/* ---- Skimming: the records a pass does not need, passed over --------- */

static inline __attribute__((always_inline)) uint32_t
sk_u32(const unsigned char *p, bool swapped)
{
	uint32_t v = fmt_get_u32(p);

	return swapped ? __builtin_bswap32(v) : v;
}

static inline __attribute__((always_inline)) uint64_t
sk_u64(const unsigned char *p, bool swapped)
{
	uint64_t v = fmt_get_u64(p);

	return swapped ? __builtin_bswap64(v) : v;
}

#define SKIM_MAX 65536 /* slots one call goes through at most */
#define SKIM_ONE                                                               \
	(1u << FMT_R_EVENT | 1u << FMT_R_STATE_PUSH | 1u << FMT_R_STATE_POP |  \
	 1u << FMT_R_FUNC_ENTER | 1u << FMT_R_FUNC_EXIT)

/* A record at offset off and tick ticks: what fast_next starts with. */
static inline void
skim_rec(rd_rec *rec, uint32_t kind, uint64_t off, uint64_t ticks)
{
	memset(rec, 0, sizeof *rec);
	rec->kind = kind;
	rec->offset = off;
	rec->ticks = ticks;
}

/*
 * rd_thread_skim's loop, over the slots at pos in slot_at's fast range
 * (in the segment, in the window or memory; SKIM_MAX slots at most, so
 * that no time in it can overflow once its start is below safe).  It
 * goes through the records as seg_step and fast_one decode them (a 1.2
 * state record with an event is two records, its event the second
 * after a push and the first before a pop; a NEWBASE is none), decodes
 * the ones wanted into v, and stops at the first slot it is not sure
 * of: a zero w0, a reserved kind, a CONT, a NEWBASE that goes back, a
 * two-slot record not whole in the range, without its CONT or naming a
 * task out of range, the end of the range, or after the max-th record
 * for v.  The reader is left as rd_thread_next leaves it after the same
 * records (pos, now and last; nothing else changes on the way), so
 * rd_thread_next then reads, or reports, what the loop left.  The time
 * of the last record is now, unless a NEWBASE came after it: n_nb is n
 * at the last NEWBASE, which then saved it in last.  swapped is a
 * constant in each of the two copies.
 */
static inline __attribute__((always_inline)) size_t
skim_loop(rd_thread *t, rd_skim *sk, rd_rec *v, uint32_t *at, size_t max,
          bool swapped)
{
	const unsigned char *p = t->fbuf + (t->pos - t->foff), *end;
	uint64_t left = t->flim - t->pos, now = t->now, last = 0, safe;
	uint32_t lo = sk->ev_lo, span = sk->ev_span, evk = 1u << FMT_R_EVENT;
	uint32_t n = 0, n_nb = 0;
	size_t k = 0;

	if (t->carries)
		evk |= 1u << FMT_R_STATE_PUSH | 1u << FMT_R_STATE_POP;
	if (left > SKIM_MAX * FMT_REC_SIZE)
		left = SKIM_MAX * FMT_REC_SIZE;
	end = p + (left & ~(uint64_t)(FMT_REC_SIZE - 1));
	safe = UINT64_MAX - left / FMT_REC_SIZE * FMT_DELTA_MASK;
	if (now > safe)
		return 0;
	for (; p != end; p += FMT_REC_SIZE) {
		uint32_t w0 = sk_u32(p, swapped), a = sk_u32(p + 4, swapped);
		uint32_t d = w0 & FMT_DELTA_MASK, kind = w0 >> FMT_KIND_SHIFT;
		uint32_t bit = 1u << kind;
		uint64_t b = sk_u64(p + 8, swapped);

		if (bit & SKIM_ONE) {
			/* The record's own or carried event (fast_one). */
			bool push = kind == FMT_R_STATE_PUSH;
			uint32_t et = push ? (uint32_t)(b >> 32) : a;
			uint64_t ev = push ? (uint32_t)b : b;
			bool has = (bit & evk) && (kind == FMT_R_EVENT || et);

			now += d;
			if (!has || !ev || et - lo >= span) {
				n += 1 + (has && kind != FMT_R_EVENT);
				continue;
			}
			skim_rec(&v[k], FMT_R_EVENT,
			         t->foff + (uint64_t)(p - t->fbuf), now);
			v[k].u.event.type = et;
			v[k].u.event.value = ev;
			at[k] = n + push; /* after its push, before its pop */
			n += 1 + (kind != FMT_R_EVENT);
			if (++k == max) {
				p += FMT_REC_SIZE;
				break;
			}
			continue;
		}
		if (kind == FMT_R_NEWBASE) { /* seg_newbase */
			if (b < now || b > safe)
				break;
			if (n != n_nb)
				last = now, n_nb = n;
			now = b;
			continue;
		}
		if (kind == FMT_R_COMM || kind == FMT_R_SYNC) {
			if (end - p < 2 * FMT_REC_SIZE ||
			    sk_u32(p + FMT_REC_SIZE, swapped) >>
			            FMT_KIND_SHIFT !=
			        FMT_R_CONT ||
			    (kind == FMT_R_COMM ? sk_u32(p + 20, swapped)
			                        : a) >= RD_TASK_MAX)
				break;
		} else if (kind != FMT_R_THREAD_END) {
			break;
		}
		now += d;
		skim_rec(&v[k], kind, t->foff + (uint64_t)(p - t->fbuf), now);
		if (kind != FMT_R_THREAD_END) {
			rd_rec_two(t, kind, p, &v[k]);
			p += FMT_REC_SIZE;
		}
		at[k] = n++;
		if (++k == max) {
			p += FMT_REC_SIZE;
			break;
		}
	}
	t->pos = t->foff + (uint64_t)(p - t->fbuf);
	t->now = t->last = now;
	sk->count = n;
	sk->last = n != n_nb ? now : last;
	return k;
}

/* What rd_thread_skim returns of what rd_thread_next read. */
static bool
skim_wants(const rd_skim *sk, const rd_rec *r)
{
	if (r->kind == FMT_R_EVENT)
		return r->u.event.value &&
		       r->u.event.type - sk->ev_lo < sk->ev_span;
	return r->kind == FMT_R_COMM || r->kind == FMT_R_SYNC ||
	       r->kind == FMT_R_THREAD_END;
}

/*
 * The loop; when it went through nothing (a pending half, a segment to
 * enter, a window to move, a segment's end, damage), one record by
 * rd_thread_next, which reports what it finds before the call returns
 * anything.  On the merge's benchmark trace: about 20 instructions a
 * record passed over against rd_thread_next's 70, and no call a
 * record (docs/merge.md, "Streaming").
 */
size_t
rd_thread_skim(rd_thread *t, rd_skim *sk, rd_rec *v, uint32_t *at, size_t max)
{
	size_t k;

	sk->count = 0;
	if (!max)
		return 0;
	if (!t->have_pend && t->in_seg && t->pos + FMT_REC_SIZE <= t->flim) {
		k = t->hdr.swapped ? skim_loop(t, sk, v, at, max, true)
		                   : skim_loop(t, sk, v, at, max, false);
		if (sk->count)
			return k;
	}
	if (!rd_thread_next(t, v))
		return 0;
	sk->count = 1;
	sk->last = v->ticks;
	at[0] = 0;
	return skim_wants(sk, v);
}
