/*
 * Thread files: segments ordered by sequence number, records streamed
 * through the source's window.
 */
#include <stdlib.h>
#include <string.h>

#include "tracefile/reader_int.h"

#define RD_SEG_MIN (FMT_S_END + FMT_REC_SIZE)
#define RD_SEG_MAX (1ull << 40)

static const char *const rd_kind_names[16] = {
    "zero", "EVENT", "STATE_PUSH", "STATE_POP",  "FUNC_ENTER", "FUNC_EXIT",
    "COMM", "SYNC",  "NEWBASE",    "THREAD_END", "10",         "11",
    "12",   "13",    "14",         "CONT",
};

static uint32_t
rec_u32(const rd_thread *t, const unsigned char *p)
{
	uint32_t v = fmt_get_u32(p);

	return t->hdr.swapped ? __builtin_bswap32(v) : v;
}

static uint64_t
rec_u64(const rd_thread *t, const unsigned char *p)
{
	uint64_t v = fmt_get_u64(p);

	return t->hdr.swapped ? __builtin_bswap64(v) : v;
}

/* ---- Opening: the segment index -------------------------------------- */

static bool
seg_push(rd_thread *t, const rd_segment *sg)
{
	if (t->nsegs == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 8;
		rd_segment *n = realloc(t->segs, cap * sizeof *n);

		if (!n)
			return false;
		t->segs = n;
		t->cap = cap;
	}
	t->segs[t->nsegs++] = *sg;
	return true;
}

static bool
seg_magic_ok(const rd_thread *t, uint32_t magic)
{
	return magic == FMT_SEG_MAGIC ||
	       (t->hdr.swapped && magic == __builtin_bswap32(FMT_SEG_MAGIC));
}

/* Checks the header of the segment at off; fills *sg when readable. */
static bool
seg_header(rd_thread *t, uint64_t off, rd_segment *sg)
{
	const char *name = t->src.name;
	uint64_t avail = t->src.size - off;
	const unsigned char *p;
	uint32_t magic, hsize, thread;

	if (avail < 4 || !(p = rd_src_at(&t->src, off, 4, t->errs)))
		return false;
	magic = fmt_get_u32(p);
	if (magic == 0)
		return false;
	if (!seg_magic_ok(t, magic)) {
		rd_report(t->errs, name, off,
		          "bad segment magic 0x%08x; segment skipped", magic);
		return false;
	}
	if (avail < FMT_S_END ||
	    !(p = rd_src_at(&t->src, off, FMT_S_END, t->errs))) {
		rd_report(t->errs, name, off,
		          "segment header cut by the end of the file; segment "
		          "skipped");
		return false;
	}
	hsize = fmt_get_u32(p + FMT_S_SIZE);
	thread = fmt_get_u32(p + FMT_S_THREAD);
	if (hsize < FMT_S_END || hsize % FMT_REC_SIZE ||
	    hsize > t->hdr.segment_size) {
		rd_report(t->errs, name, off + FMT_S_SIZE,
		          "bad segment header size %u; segment skipped", hsize);
		return false;
	}
	if (thread != t->hdr.thread) {
		rd_report(t->errs, name, off + FMT_S_THREAD,
		          "segment of thread %u in the file of thread %u; "
		          "segment skipped",
		          thread, t->hdr.thread);
		return false;
	}
	sg->seq = fmt_get_u64(p + FMT_S_SEQ);
	sg->offset = off;
	sg->ticks = fmt_get_u64(p + FMT_S_TICKS);
	sg->ns = fmt_get_u64(p + FMT_S_NS);
	sg->header_size = hsize;
	return true;
}

static int
seg_cmp(const void *a, const void *b)
{
	const rd_segment *x = a, *y = b;

	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Sorts by sequence; a repeated sequence number keeps the first one. */
static void
seg_sort(rd_thread *t)
{
	size_t k = 0;

	if (t->nsegs)
		qsort(t->segs, t->nsegs, sizeof *t->segs, seg_cmp);
	for (size_t i = 0; i < t->nsegs; i++) {
		if (k && t->segs[k - 1].seq == t->segs[i].seq) {
			rd_report(t->errs, t->src.name,
			          t->segs[i].offset + FMT_S_SEQ,
			          "sequence number %llu repeats the segment at "
			          "offset %llu; segment skipped",
			          (unsigned long long)t->segs[i].seq,
			          (unsigned long long)t->segs[k - 1].offset);
			continue;
		}
		t->segs[k++] = t->segs[i];
	}
	t->nsegs = k;
}

static dw_err
seg_check_size(rd_thread *t)
{
	uint64_t size = t->hdr.segment_size, cut;

	if (size < RD_SEG_MIN || size > RD_SEG_MAX) {
		rd_report(t->errs, t->src.name, FMT_H_SEGMENT_SIZE,
		          "segment size %llu is not in [%u, 2^40]",
		          (unsigned long long)size, (unsigned)RD_SEG_MIN);
		return DW_EFORMAT;
	}
	if (t->src.size < FMT_HEADER_PAGE) {
		rd_report(t->errs, t->src.name, t->src.size,
		          "file ends inside the header page: truncated, no "
		          "records");
		return DW_OK;
	}
	cut = (t->src.size - FMT_HEADER_PAGE) % size;
	/* dwt_fini trims the last segment after its last record. */
	if (cut && !(t->hdr.flags & FMT_FLAG_TRIMMED))
		rd_report(t->errs, t->src.name, t->src.size,
		          "file ends inside the segment at offset %llu: "
		          "truncated",
		          (unsigned long long)(t->src.size - cut));
	return DW_OK;
}

static dw_err
seg_index(rd_thread *t)
{
	uint64_t size = t->hdr.segment_size;
	dw_err err = seg_check_size(t);
	rd_segment sg;

	if (err != DW_OK)
		return err;
	for (uint64_t off = FMT_HEADER_PAGE; off < t->src.size; off += size) {
		if (!seg_header(t, off, &sg))
			continue;
		if (!seg_push(t, &sg))
			return DW_ENOMEM;
	}
	if (t->src.failed)
		return DW_EIO;
	seg_sort(t);
	return DW_OK;
}

static dw_err
thread_init(rd_thread *t, rd_errlist *errs)
{
	dw_err err;

	t->errs = errs;
	err = rd_src_header(&t->src, FMT_FILE_THREAD, errs, &t->hdr);
	t->carries = t->hdr.vmajor > 1 || t->hdr.vminor >= 2;
	if (err == DW_OK)
		err = seg_index(t);
	return err;
}

static dw_err
thread_finish(rd_thread *t, dw_err err, rd_thread **out)
{
	if (err != DW_OK) {
		rd_thread_close(t);
		t = NULL;
	}
	*out = t;
	return err;
}

dw_err
rd_thread_open(const char *path, rd_errlist *errs, rd_thread **out)
{
	rd_thread *t = calloc(1, sizeof *t);
	dw_err err;

	*out = NULL;
	if (!t)
		return DW_ENOMEM;
	err = rd_src_open(&t->src, path, 2 * FMT_S_END, errs);
	if (err == DW_OK)
		err = thread_init(t, errs);
	return thread_finish(t, err, out);
}

dw_err
rd_thread_open_mem(const char *name, const void *buf, size_t len,
                   rd_errlist *errs, rd_thread **out)
{
	rd_thread *t = calloc(1, sizeof *t);
	dw_err err;

	*out = NULL;
	if (!t)
		return DW_ENOMEM;
	err = rd_src_mem(&t->src, name, buf, len);
	if (err == DW_OK)
		err = thread_init(t, errs);
	return thread_finish(t, err, out);
}

void
rd_thread_close(rd_thread *t)
{
	if (!t)
		return;
	rd_src_close(&t->src);
	free(t->segs);
	free(t);
}

const rd_header *
rd_thread_header(const rd_thread *t)
{
	return &t->hdr;
}

const char *
rd_thread_name(const rd_thread *t)
{
	return t->src.name;
}

const rd_segment *
rd_thread_segments(const rd_thread *t, size_t *n)
{
	*n = t->nsegs;
	return t->segs;
}

void
rd_thread_rewind(rd_thread *t)
{
	t->cur = 0;
	t->in_seg = false;
	t->have_pend = false;
	t->have_last = false;
	t->last = 0;
}

/* ---- Streaming ------------------------------------------------------- */

static bool
seg_enter(rd_thread *t)
{
	while (t->cur < t->nsegs) {
		const rd_segment *sg = &t->segs[t->cur++];

		if (t->have_last && sg->ticks < t->last) {
			rd_report(t->errs, t->src.name,
			          sg->offset + FMT_S_TICKS,
			          "segment %llu starts at tick %llu, before "
			          "tick %llu already read; segment skipped",
			          (unsigned long long)sg->seq,
			          (unsigned long long)sg->ticks,
			          (unsigned long long)t->last);
			continue;
		}
		t->pos = sg->offset + sg->header_size;
		t->seg_end = sg->offset + t->hdr.segment_size;
		t->flim = 0;
		t->now = t->last = sg->ticks;
		t->have_last = true;
		t->in_seg = true;
		return true;
	}
	return false;
}

/* The slot(s) at pos cannot be read: report it unless it is clean EOF. */
static void
seg_cut(rd_thread *t)
{
	uint64_t left = t->src.size > t->pos ? t->src.size - t->pos : 0;
	const unsigned char *p;

	if (t->src.failed || left == 0)
		return;
	p = rd_src_at(&t->src, t->pos, (size_t)left, t->errs);
	for (size_t i = 0; p && i < left; i++) {
		if (p[i]) {
			rd_report(t->errs, t->src.name, t->pos,
			          "record cut by the end of the file");
			return;
		}
	}
}

/*
 * The len bytes at pos, in the segment (the caller checked), or NULL.
 * What rd_src_at gives, with one compare instead of five when the bytes
 * are where the last slow look found them (a record's decoding cost a
 * fifth less).
 */
static inline const unsigned char *
slot_at(rd_thread *t, size_t len)
{
	const rd_src *s = &t->src;
	const unsigned char *p;

	if (t->pos + len <= t->flim)
		return t->fbuf + (t->pos - t->foff);
	p = rd_src_at(&t->src, t->pos, len, t->errs);
	t->flim = 0;
	if (p && !s->failed && s->fd >= 0) {
		t->fbuf = s->win;
		t->foff = s->woff;
		t->flim = s->woff + s->wlen;
	} else if (p && !s->failed) {
		t->fbuf = s->mem;
		t->foff = 0;
		t->flim = s->size;
	}
	if (t->flim > t->seg_end)
		t->flim = t->seg_end;
	return p;
}

/* Time of a record whose delta is d, or false (reported) on overflow. */
static bool
rec_time(rd_thread *t, uint32_t d, uint64_t *ticks)
{
	if (t->now > UINT64_MAX - d) {
		rd_report(
		    t->errs, t->src.name, t->pos,
		    "time overflows 64 bits; rest of the segment skipped");
		return false;
	}
	*ticks = t->now + d;
	return true;
}

static void
rec_one(const rd_thread *t, uint32_t kind, const unsigned char *p, rd_rec *rec)
{
	uint32_t a = rec_u32(t, p + 4);
	uint64_t b = rec_u64(t, p + 8);

	switch (kind) {
	case FMT_R_EVENT:
		rec->u.event.type = a;
		rec->u.event.value = b;
		break;
	case FMT_R_STATE_PUSH:
		rec->u.state.state = a;
		rec->u.event.value = b; /* its event, if any: rec_split */
		break;
	case FMT_R_STATE_POP:
		rec->u.event.type = a;
		rec->u.event.value = b;
		break;
	case FMT_R_THREAD_END:
		break;
	default: /* FUNC_ENTER, FUNC_EXIT */
		rec->u.func.addr = b;
		break;
	}
}

void
rd_rec_two(const rd_thread *t, uint32_t kind, const unsigned char *p,
           rd_rec *rec)
{
	uint32_t a = rec_u32(t, p + 4), w1 = rec_u32(t, p + 16);
	uint32_t a1 = rec_u32(t, p + 20);
	uint64_t b = rec_u64(t, p + 8), b1 = rec_u64(t, p + 24);

	if (kind == FMT_R_COMM) {
		rec->u.comm.tag = a;
		rec->u.comm.id = b;
		rec->u.comm.flags = w1 & 7u;
		rec->u.comm.partner_thread =
		    (w1 >> FMT_COMM_THREAD_SHIFT) & FMT_COMM_THREAD_ANY;
		rec->u.comm.partner_task = a1;
		rec->u.comm.size = b1;
	} else {
		rec->u.sync.ref_task = a;
		rec->u.sync.local_ns = b;
		rec->u.sync.rtt_ns = a1;
		rec->u.sync.offset_ns = (int64_t)b1;
	}
}

/* Reads a two-slot record at pos; false (reported) when it is damaged. */
static bool
seg_two(rd_thread *t, uint32_t kind, rd_rec *rec)
{
	const unsigned char *p;
	uint32_t k1;

	if (t->seg_end - t->pos < 2 * FMT_REC_SIZE) {
		rd_report(t->errs, t->src.name, t->pos,
		          "%s record cut by the segment end; rest of the "
		          "segment skipped",
		          rd_kind_names[kind]);
		return false;
	}
	p = slot_at(t, 2 * FMT_REC_SIZE);
	if (!p) {
		seg_cut(t);
		return false;
	}
	k1 = rec_u32(t, p + FMT_REC_SIZE) >> FMT_KIND_SHIFT;
	if (k1 != FMT_R_CONT) {
		rd_report(t->errs, t->src.name, t->pos + FMT_REC_SIZE,
		          "second slot of a %s record has kind %u, not CONT; "
		          "rest of the segment skipped",
		          rd_kind_names[kind], k1);
		return false;
	}
	rd_rec_two(t, kind, p, rec);
	uint32_t task = kind == FMT_R_COMM ? rec->u.comm.partner_task
	                                   : rec->u.sync.ref_task;
	if (task >= RD_TASK_MAX) {
		rd_report(t->errs, t->src.name, t->pos,
		          "%s record names task %u, out of range (at most "
		          "%u); rest of the segment skipped",
		          rd_kind_names[kind], task, RD_TASK_MAX - 1);
		return false;
	}
	t->pos += 2 * FMT_REC_SIZE;
	return true;
}

static bool
seg_newbase(rd_thread *t, const unsigned char *p)
{
	uint64_t b = rec_u64(t, p + 8);

	if (b < t->now) {
		rd_report(t->errs, t->src.name, t->pos,
		          "NEWBASE goes back in time (tick %llu, before %llu); "
		          "rest of the segment skipped",
		          (unsigned long long)b, (unsigned long long)t->now);
		return false;
	}
	t->now = t->last = b;
	t->pos += FMT_REC_SIZE;
	return true;
}

static bool
seg_bad_kind(rd_thread *t, uint32_t kind)
{
	if (kind == FMT_R_CONT)
		rd_report(t->errs, t->src.name, t->pos,
		          "CONT slot without a record before it; rest of the "
		          "segment skipped");
	else
		rd_report(
		    t->errs, t->src.name, t->pos,
		    "reserved record kind %u; rest of the segment skipped",
		    kind);
	return false;
}

/*
 * Since format 1.2 a state push or pop may carry one event at its time
 * (docs/trace-format.md): the push's b is the event's type << 32 | its
 * value, the pop's a and b the event's type and value (0: none).  The
 * record is returned as two: the push then its event, or the event
 * then the pop.
 */
static void
rec_split(rd_thread *t, rd_rec *rec)
{
	bool push = rec->kind == FMT_R_STATE_PUSH;

	if (!push && rec->kind != FMT_R_STATE_POP)
		return;
	uint32_t type =
	    push ? (uint32_t)(rec->u.event.value >> 32) : rec->u.event.type;
	uint64_t value =
	    push ? rec->u.event.value & 0xffffffffu : rec->u.event.value;
	uint32_t state = push ? rec->u.state.state : 0;
	bool carries = t->hdr.vmajor > 1 || t->hdr.vminor >= 2;

	memset(&rec->u, 0, sizeof rec->u);
	rec->u.state.state = state;
	if (!type || !carries)
		return;
	rd_rec ev = *rec;
	ev.kind = FMT_R_EVENT;
	ev.u.event.type = type;
	ev.u.event.value = value;
	t->pend = push ? ev : *rec;
	if (!push)
		*rec = ev;
	t->have_pend = true;
}

/*
 * Decodes the record at pos into rec.  Returns 1 for a record, 0 at the
 * end of the segment's data (or a damaged record), -1 after a NEWBASE.
 */
static int
seg_step(rd_thread *t, rd_rec *rec)
{
	const unsigned char *p;
	uint32_t w0, kind;

	if (t->seg_end - t->pos < FMT_REC_SIZE)
		return 0;
	p = slot_at(t, FMT_REC_SIZE);
	if (!p) {
		seg_cut(t);
		return 0;
	}
	w0 = rec_u32(t, p);
	kind = w0 >> FMT_KIND_SHIFT;
	if (w0 == 0)
		return 0;
	if (kind == FMT_R_NEWBASE)
		return seg_newbase(t, p) ? -1 : 0;
	if (kind == 0 || kind > FMT_R_THREAD_END)
		return seg_bad_kind(t, kind);
	memset(rec, 0, sizeof *rec);
	rec->kind = kind;
	rec->offset = t->pos;
	if (!rec_time(t, w0 & FMT_DELTA_MASK, &rec->ticks))
		return 0;
	if (kind == FMT_R_COMM || kind == FMT_R_SYNC) {
		if (!seg_two(t, kind, rec))
			return 0;
	} else {
		rec_one(t, kind, p, rec);
		rec_split(t, rec);
		t->pos += FMT_REC_SIZE;
	}
	t->now = t->last = rec->ticks;
	return 1;
}

/*
 * A one-slot record's fields, with rec_split's result built directly
 * (rec_one then rec_split zero and rewrite the union a second time).
 */
static inline void
fast_one(rd_thread *t, uint32_t kind, const unsigned char *p, rd_rec *rec)
{
	uint32_t a = rec_u32(t, p + 4);
	uint64_t b = rec_u64(t, p + 8);
	bool carries = t->carries;

	switch (kind) {
	case FMT_R_EVENT:
		rec->u.event.type = a;
		rec->u.event.value = b;
		return;
	case FMT_R_STATE_PUSH:
		rec->u.state.state = a;
		if (!(b >> 32) || !carries)
			return;
		t->pend = *rec;
		t->pend.kind = FMT_R_EVENT;
		t->pend.u.event.type = (uint32_t)(b >> 32);
		t->pend.u.event.value = b & 0xffffffffu;
		t->have_pend = true;
		return;
	case FMT_R_STATE_POP:
		if (!a || !carries)
			return;
		t->pend = *rec;
		rec->kind = FMT_R_EVENT;
		rec->u.event.type = a;
		rec->u.event.value = b;
		t->have_pend = true;
		return;
	case FMT_R_THREAD_END:
		return;
	default: /* FUNC_ENTER, FUNC_EXIT */
		rec->u.func.addr = b;
		return;
	}
}

/*
 * seg_step for the common case, in one pass: the record (and a second
 * slot) inside the window's fast range, a kind that is neither NEWBASE
 * nor damaged, no overflow, no pending half.  Returns 0, having changed
 * nothing but *rec, for anything else: seg_step then decides (and
 * reports) as before.  Saves about a third of a record's decoding.
 */
static inline int
fast_next(rd_thread *t, rd_rec *rec)
{
	const unsigned char *p;
	uint32_t w0, kind, d;

	if (t->have_pend || !t->in_seg || t->pos + 2 * FMT_REC_SIZE > t->flim)
		return 0;
	p = t->fbuf + (t->pos - t->foff);
	w0 = rec_u32(t, p);
	kind = w0 >> FMT_KIND_SHIFT;
	d = w0 & FMT_DELTA_MASK;
	if (kind == 0 || kind > FMT_R_THREAD_END || kind == FMT_R_NEWBASE ||
	    t->now > UINT64_MAX - d)
		return 0;
	memset(rec, 0, sizeof *rec);
	rec->kind = kind;
	rec->offset = t->pos;
	rec->ticks = t->now + d;
	if (kind == FMT_R_COMM || kind == FMT_R_SYNC) {
		if (rec_u32(t, p + FMT_REC_SIZE) >> FMT_KIND_SHIFT !=
		    FMT_R_CONT)
			return 0;
		rd_rec_two(t, kind, p, rec);
		if ((kind == FMT_R_COMM ? rec->u.comm.partner_task
		                        : rec->u.sync.ref_task) >= RD_TASK_MAX)
			return 0;
		t->pos += 2 * FMT_REC_SIZE;
	} else {
		fast_one(t, kind, p, rec);
		t->pos += FMT_REC_SIZE;
	}
	t->now = t->last = rec->ticks;
	return 1;
}

/* Everything fast_next leaves: a pending half, a segment to enter, a
 * window to move, a NEWBASE, damage.  Out of line, so that the fast
 * path saves no registers. */
static __attribute__((noinline)) int
next_slow(rd_thread *t, rd_rec *rec)
{
	if (t->have_pend) {
		*rec = t->pend;
		t->have_pend = false;
		return 1;
	}
	for (;;) {
		int r;

		if (!t->in_seg && !seg_enter(t))
			return 0;
		r = seg_step(t, rec);
		if (r > 0)
			return 1;
		if (r == 0)
			t->in_seg = false;
		if (t->src.failed) {
			t->cur = t->nsegs;
			t->in_seg = false;
			return 0;
		}
	}
}

int
rd_thread_next(rd_thread *t, rd_rec *rec)
{
	return fast_next(t, rec) ? 1 : next_slow(t, rec);
}
