/*
 * Trace file reader tests.  Files are built by hand with the format.h
 * helpers (not by the tracer), so the reader is checked against the
 * specification, not against the writer's idea of it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dwork/dwork.h>
#include <dwork/trace.h>

#include "common/format.h"
#include "tracefile/events.h"
#include "tracefile/reader.h"
#include "tu_tmp.h"

/* The merge side's copy of the numbers is the runtime's and tracer's. */
_Static_assert((int)TF_EV_FUNCTION == (int)DW_EV_FUNCTION, "TF_EV_FUNCTION");
_Static_assert((int)TF_EV_CALL == (int)DW_EV_CALL, "TF_EV_CALL");
_Static_assert((int)TF_STATE_IDLE == (int)DWT_STATE_IDLE, "TF_STATE_IDLE");
_Static_assert((int)TF_STATE_RUNNING == (int)DWT_STATE_RUNNING,
               "TF_STATE_RUNNING");
_Static_assert((int)TF_STATE_NOT_CREATED == (int)DWT_STATE_NOT_CREATED,
               "TF_STATE_NOT_CREATED");

static int failures;

#define CHECK(c)                                                               \
	do {                                                                   \
		if (!(c)) {                                                    \
			fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__,       \
			        __LINE__, #c);                                 \
			failures++;                                            \
		}                                                              \
	} while (0)

#define CHECK_EQ(a, b)                                                         \
	do {                                                                   \
		unsigned long long a_ = (unsigned long long)(a);               \
		unsigned long long b_ = (unsigned long long)(b);               \
		if (a_ != b_) {                                                \
			fprintf(stderr,                                        \
			        "%s:%d: FAILED: %s == %s (%llu != "            \
			        "%llu)\n",                                     \
			        __FILE__, __LINE__, #a, #b, a_, b_);           \
			failures++;                                            \
		}                                                              \
	} while (0)

static char tmpdir[256];

/* ---- Building files -------------------------------------------------- */

#define SEG 256u /* small segments: 12 slots each */
#define UID 0x1122334455667788ull

/* A file image being built: grows, zero-filled. */
struct img {
	unsigned char *p;
	size_t size;
};

static unsigned char *
img_at(struct img *f, size_t off, size_t len)
{
	if (off + len > f->size) {
		f->p = realloc(f->p, off + len);
		if (!f->p) {
			perror("realloc");
			exit(2);
		}
		memset(f->p + f->size, 0, off + len - f->size);
		f->size = off + len;
	}
	return f->p + off;
}

static void
img_free(struct img *f)
{
	free(f->p);
	f->p = NULL;
	f->size = 0;
}

static void
header(struct img *f, uint32_t kind, uint32_t thread, bool be)
{
	unsigned char *h = img_at(f, 0, FMT_HEADER_PAGE);

	memcpy(h,
	       kind == FMT_FILE_PROCESS ? FMT_MAGIC_PROCESS : FMT_MAGIC_THREAD,
	       8);
	fmt_put_u16(h + FMT_H_VMAJOR, 1);
	fmt_put_u16(h + FMT_H_VMINOR, 0);
	fmt_put_u32(h + FMT_H_SIZE, FMT_H_END);
	fmt_put_u32(h + FMT_H_BOM, be ? 0x04030201u : FMT_BOM);
	fmt_put_u32(h + FMT_H_KIND, kind);
	fmt_put_u64(h + FMT_H_UID, UID);
	fmt_put_u32(h + FMT_H_PID, 4242);
	fmt_put_u32(h + FMT_H_PPID, 4241);
	fmt_put_u32(h + FMT_H_TASK, 2);
	fmt_put_u32(h + FMT_H_NTASKS, 5);
	fmt_put_u32(h + FMT_H_THREAD, thread);
	fmt_put_u32(h + FMT_H_NTHREADS, 3);
	fmt_put_u32(h + FMT_H_CLOCK, FMT_CLOCK_TSC);
	fmt_put_u32(h + FMT_H_FLAGS, FMT_FLAG_ENDED | FMT_FLAG_CIRCULAR);
	fmt_put_u64(h + FMT_H_INIT_TICKS, 900);
	fmt_put_u64(h + FMT_H_INIT_NS, 49900);
	fmt_put_u64(h + FMT_H_INIT_REAL_NS, 1700000000000000000ull);
	fmt_put_u64(h + FMT_H_TICKS_PER_S, 1000000000ull);
	fmt_put_u64(h + FMT_H_SEGMENT_SIZE, SEG);
	fmt_put_u64(h + FMT_H_END_TICKS, 500000000ull);
	fmt_put_u64(h + FMT_H_END_NS, 600000000ull);
	fmt_put_u64(h + FMT_H_LOST_DISK, 11);
	fmt_put_u64(h + FMT_H_LOST_CAP, 12);
	fmt_put_u64(h + FMT_H_SEG_REUSED, 13);
	fmt_put_u64(h + FMT_H_RECORDS, 22);
	memcpy(h + FMT_H_HOST, "node-7", 6);
	memcpy(h + FMT_H_PROGRAM, "demo", 4);
}

static uint64_t
seg_off(int k)
{
	return FMT_HEADER_PAGE + (uint64_t)k * SEG;
}

static void
segment(struct img *f, int k, uint64_t seq, uint64_t ticks, uint64_t ns)
{
	unsigned char *s = img_at(f, seg_off(k), SEG);

	fmt_put_u32(s + FMT_S_MAGIC, FMT_SEG_MAGIC);
	fmt_put_u32(s + FMT_S_SIZE, FMT_S_END);
	fmt_put_u64(s + FMT_S_SEQ, seq);
	fmt_put_u64(s + FMT_S_TICKS, ticks);
	fmt_put_u64(s + FMT_S_NS, ns);
	fmt_put_u32(s + FMT_S_THREAD, 1);
}

static uint64_t
slot_off(int k, int i)
{
	return seg_off(k) + FMT_S_END + (uint64_t)i * FMT_REC_SIZE;
}

/* Slot i of segment k, in the writer's byte order (be: big-endian). */
static void
slot(struct img *f, bool be, int k, int i, uint32_t kind, uint32_t low,
     uint32_t a, uint64_t b)
{
	unsigned char *p = img_at(f, slot_off(k, i), FMT_REC_SIZE);
	uint32_t w0 = kind << FMT_KIND_SHIFT | low;

	fmt_put_u32(p, be ? __builtin_bswap32(w0) : w0);
	fmt_put_u32(p + 4, be ? __builtin_bswap32(a) : a);
	fmt_put_u64(p + 8, be ? __builtin_bswap64(b) : b);
}

#define NEWBASE_TICKS 400002010ull
#define SEQ3_BASE     400002100ull

/*
 * The reference thread file: segments at positions 0, 1, 2 carry
 * sequence numbers 2, 3, 1 (circular mode reused the first ones).
 */
static void
thread_file(struct img *f, bool be)
{
	header(f, FMT_FILE_THREAD, 1, be);
	segment(f, 2, 1, 1000, 50000);
	slot(f, be, 2, 0, FMT_R_EVENT, 10, 7, 42);
	slot(f, be, 2, 1, FMT_R_EVENT, 0, 8, 43);
	slot(f, be, 2, 2, FMT_R_STATE_PUSH, 5, 1, 0);
	slot(f, be, 2, 3, FMT_R_FUNC_ENTER, 1, 0, 0x401000);
	slot(f, be, 2, 4, FMT_R_FUNC_EXIT, 2, 0, 0x401000);
	slot(f, be, 2, 5, FMT_R_STATE_POP, 3, 0, 0);
	segment(f, 0, 2, 2000, 51000);
	slot(f, be, 0, 0, FMT_R_COMM, 4, 5, 99);
	slot(f, be, 0, 1, FMT_R_CONT, 2u << 3 | 6u, 3, 1024);
	slot(f, be, 0, 2, FMT_R_COMM, 0, 6, 100);
	slot(f, be, 0, 3, FMT_R_CONT, FMT_COMM_THREAD_ANY << 3 | 1u, 0, 8);
	slot(f, be, 0, 4, FMT_R_SYNC, 6, 0, 123456);
	slot(f, be, 0, 5, FMT_R_CONT, 0, 789, (uint64_t)-55);
	slot(f, be, 0, 6, FMT_R_NEWBASE, 0, 0, NEWBASE_TICKS);
	slot(f, be, 0, 7, FMT_R_EVENT, 7, 9, 1);
	segment(f, 1, 3, SEQ3_BASE, 52000);
	for (int i = 0; i < 12; i++) /* fills the segment: no zero slot */
		slot(f, be, 1, i, FMT_R_EVENT, (uint32_t)i + 1, 10,
		     (uint64_t)i);
}

/* The records of thread_file in reading order. */
static size_t
expected(rd_rec *v)
{
	size_t n = 0;
	uint64_t t = SEQ3_BASE;

#define EXP(k, tk, off) (v[n] = (rd_rec){.kind = k, .ticks = tk, .offset = off})
	EXP(FMT_R_EVENT, 1010, slot_off(2, 0));
	v[n].u.event.type = 7, v[n++].u.event.value = 42;
	EXP(FMT_R_EVENT, 1010, slot_off(2, 1));
	v[n].u.event.type = 8, v[n++].u.event.value = 43;
	EXP(FMT_R_STATE_PUSH, 1015, slot_off(2, 2));
	v[n++].u.state.state = 1;
	EXP(FMT_R_FUNC_ENTER, 1016, slot_off(2, 3));
	v[n++].u.func.addr = 0x401000;
	EXP(FMT_R_FUNC_EXIT, 1018, slot_off(2, 4));
	v[n++].u.func.addr = 0x401000;
	EXP(FMT_R_STATE_POP, 1021, slot_off(2, 5));
	n++;
	EXP(FMT_R_COMM, 2004, slot_off(0, 0));
	v[n].u.comm.flags = RD_COMM_LOGICAL | RD_COMM_PHYSICAL;
	v[n].u.comm.partner_thread = 2, v[n].u.comm.partner_task = 3;
	v[n].u.comm.tag = 5, v[n].u.comm.size = 1024, v[n++].u.comm.id = 99;
	EXP(FMT_R_COMM, 2004, slot_off(0, 2));
	v[n].u.comm.flags = RD_COMM_RECV;
	v[n].u.comm.partner_thread = FMT_COMM_THREAD_ANY;
	v[n].u.comm.partner_task = 0, v[n].u.comm.tag = 6;
	v[n].u.comm.size = 8, v[n++].u.comm.id = 100;
	EXP(FMT_R_SYNC, 2010, slot_off(0, 4));
	v[n].u.sync.ref_task = 0, v[n].u.sync.local_ns = 123456;
	v[n].u.sync.rtt_ns = 789, v[n++].u.sync.offset_ns = -55;
	EXP(FMT_R_EVENT, NEWBASE_TICKS + 7, slot_off(0, 7));
	v[n].u.event.type = 9, v[n++].u.event.value = 1;
	for (int i = 0; i < 12; i++) {
		t += (uint64_t)i + 1;
		EXP(FMT_R_EVENT, t, slot_off(1, i));
		v[n].u.event.type = 10, v[n++].u.event.value = (uint64_t)i;
	}
#undef EXP
	return n;
}

static bool
rec_equal(const rd_rec *a, const rd_rec *b)
{
	if (a->kind != b->kind || a->ticks != b->ticks ||
	    a->offset != b->offset)
		return false;
	switch (a->kind) {
	case FMT_R_EVENT:
		return a->u.event.type == b->u.event.type &&
		       a->u.event.value == b->u.event.value;
	case FMT_R_STATE_PUSH:
	case FMT_R_STATE_POP:
		return a->u.state.state == b->u.state.state;
	case FMT_R_FUNC_ENTER:
	case FMT_R_FUNC_EXIT:
		return a->u.func.addr == b->u.func.addr;
	case FMT_R_COMM:
		return a->u.comm.flags == b->u.comm.flags &&
		       a->u.comm.partner_task == b->u.comm.partner_task &&
		       a->u.comm.partner_thread == b->u.comm.partner_thread &&
		       a->u.comm.tag == b->u.comm.tag &&
		       a->u.comm.size == b->u.comm.size &&
		       a->u.comm.id == b->u.comm.id;
	default:
		return a->u.sync.ref_task == b->u.sync.ref_task &&
		       a->u.sync.local_ns == b->u.sync.local_ns &&
		       a->u.sync.rtt_ns == b->u.sync.rtt_ns &&
		       a->u.sync.offset_ns == b->u.sync.offset_ns;
	}
}

/* A process file's TLV at *off. */
static void
tlv(struct img *f, size_t *off, uint32_t kind, const void *payload,
    uint32_t len)
{
	size_t padded = (len + 7u) & ~7u;
	unsigned char *p = img_at(f, *off, 8 + padded);

	fmt_put_u32(p, kind);
	fmt_put_u32(p + 4, len);
	memcpy(p + 8, payload, len);
	*off += 8 + padded;
}

/* Payload: a u32 or u64 sequence then a name. */
static uint32_t
pl(unsigned char *buf, const char *fmt, ...)
{
	uint32_t n = 0;
	va_list ap;

	va_start(ap, fmt);
	for (const char *c = fmt; *c; c++) {
		if (*c == '4') {
			fmt_put_u32(buf + n, va_arg(ap, uint32_t));
			n += 4;
		} else if (*c == '8') {
			fmt_put_u64(buf + n, va_arg(ap, uint64_t));
			n += 8;
		} else {
			const char *s = va_arg(ap, const char *);

			memcpy(buf + n, s, strlen(s));
			n += (uint32_t)strlen(s);
		}
	}
	va_end(ap);
	return n;
}

/* Offsets of the reference process file's TLVs. */
static size_t tlv_offs[16];

/* The reference process file; returns the number of TLVs. */
static int
proc_file(struct img *f)
{
	unsigned char b[256];
	size_t off = FMT_HEADER_PAGE;
	int k = 0;

	header(f, FMT_FILE_PROCESS, 0, false);
#define T(kind, ...)                                                           \
	(tlv_offs[k++] = off, tlv(f, &off, kind, b, pl(b, __VA_ARGS__)))
	T(FMT_L_TYPE, "44s", 7u, 0u, "Iterations (old)");
	T(FMT_L_VALUE, "448s", 7u, 0u, (uint64_t)42, "answer");
	T(FMT_L_STATE, "44s", 1u, 0x00ff00u, "Running");
	T(FMT_L_STATE, "44s", 3u, RD_NO_COLOR, "Waiting");
	T(FMT_L_FUNC, "8s", (uint64_t)0x401000, "main");
	T(FMT_L_THREAD_NAME, "44s", 1u, 0u, "worker-1");
	T(FMT_L_MODULE, "888s", (uint64_t)0x400000, (uint64_t)0x500000,
	  (uint64_t)0x1000, "/usr/bin/demo");
	T(FMT_L_CALIB, "88", (uint64_t)1500, (uint64_t)50500);
	T(77, "8s", (uint64_t)1, "a kind from the future");
	T(FMT_L_TYPE, "44s", 7u, 0u, "Iterations");
	T(FMT_L_IDENTITY, "844", (uint64_t)1600, 3u, 6u);
	T(FMT_L_VALUE, "448s", 7u, 0u, (uint64_t)43, "");
	T(FMT_L_END, "88", (uint64_t)500000000, (uint64_t)600000000);
#undef T
	tlv_offs[k] = off;
	img_at(f, off, 64); /* zero tail: not an error */
	return k;
}

static char *
write_file(const char *name, const struct img *f, size_t len)
{
	char *path = NULL;
	FILE *o;

	if (asprintf(&path, "%s/%s", tmpdir, name) < 0)
		exit(2);
	o = fopen(path, "wb");
	if (!o || (len && fwrite(f->p, 1, len, o) != len) || fclose(o)) {
		perror(path);
		exit(2);
	}
	return path;
}

/* ---- Helpers to check results ---------------------------------------- */

static bool
has_msg(const rd_errlist *e, const char *fmt, ...)
{
	char want[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(want, sizeof want, fmt, ap);
	va_end(ap);
	for (size_t i = 0; i < e->n; i++)
		if (strstr(e->msgs[i], want))
			return true;
	fprintf(stderr, "  no message containing \"%s\"; got:\n", want);
	rd_errlist_print(e, stderr);
	return false;
}

/* Reads every record of t into v (at most max); returns the count. */
static size_t
read_all(rd_thread *t, rd_rec *v, size_t max)
{
	size_t n = 0;
	rd_rec r;
	uint64_t last = 0;

	while (rd_thread_next(t, &r)) {
		CHECK(r.ticks >= last);
		last = r.ticks;
		if (n < max)
			v[n] = r;
		n++;
	}
	return n;
}

/* Checks that t's records are exp[idx[0]], exp[idx[1]] ... */
static void
check_records(rd_thread *t, const rd_rec *exp, const int *idx, size_t n)
{
	rd_rec got[64];
	size_t k = read_all(t, got, 64);

	CHECK_EQ(k, n);
	for (size_t i = 0; i < k && i < n; i++) {
		if (!rec_equal(&got[i], &exp[idx[i]])) {
			fprintf(stderr,
			        "  record %zu (offset %llu) differs from "
			        "expected %d\n",
			        i, (unsigned long long)got[i].offset, idx[i]);
			failures++;
		}
	}
}

/* The expected records from..to-1 as an index list appended to idx. */
static size_t
range(int *idx, size_t n, int from, int to)
{
	for (int i = from; i < to; i++)
		idx[n++] = i;
	return n;
}

/* Opens the image as a thread file from memory; checks the outcome. */
static rd_thread *
open_img(const struct img *f, size_t len, rd_errlist *e, dw_err want)
{
	rd_thread *t = NULL;
	dw_err err = rd_thread_open_mem("T", f->p, len, e, &t);

	CHECK_EQ(err, want);
	CHECK((t != NULL) == (want == DW_OK));
	return t;
}

/* ---- Tests ----------------------------------------------------------- */

static void
check_header(const rd_header *h, uint32_t kind, uint32_t thread)
{
	CHECK_EQ(h->vmajor, 1);
	CHECK_EQ(h->vminor, 0);
	CHECK_EQ(h->size, FMT_H_END);
	CHECK_EQ(h->kind, kind);
	CHECK_EQ(h->uid, UID);
	CHECK_EQ(h->pid, 4242);
	CHECK_EQ(h->ppid, 4241);
	CHECK_EQ(h->task, 2);
	CHECK_EQ(h->ntasks, 5);
	CHECK_EQ(h->thread, thread);
	CHECK_EQ(h->nthreads, 3);
	CHECK_EQ(h->clock, FMT_CLOCK_TSC);
	CHECK(rd_header_ended(h));
	CHECK(h->flags & FMT_FLAG_CIRCULAR);
	CHECK_EQ(h->init_ticks, 900);
	CHECK_EQ(h->init_ns, 49900);
	CHECK_EQ(h->init_real_ns, 1700000000000000000ull);
	CHECK_EQ(h->ticks_per_s, 1000000000ull);
	CHECK_EQ(h->segment_size, SEG);
	CHECK_EQ(h->end_ticks, 500000000ull);
	CHECK_EQ(h->end_ns, 600000000ull);
	CHECK_EQ(h->lost_disk, 11);
	CHECK_EQ(h->lost_cap, 12);
	CHECK_EQ(h->seg_reused, 13);
	CHECK_EQ(h->records, 22);
	CHECK(strcmp(h->host, "node-7") == 0);
	CHECK(strcmp(h->program, "demo") == 0);
}

static void
check_thread_valid(rd_thread *t)
{
	rd_rec exp[64];
	int idx[64] = {0};
	size_t n = expected(exp), ns;
	const rd_segment *sg = rd_thread_segments(t, &ns);

	check_header(rd_thread_header(t), FMT_FILE_THREAD, 1);
	CHECK_EQ(ns, 3);
	CHECK_EQ(sg[0].seq, 1);
	CHECK_EQ(sg[0].offset, seg_off(2));
	CHECK_EQ(sg[1].seq, 2);
	CHECK_EQ(sg[1].offset, seg_off(0));
	CHECK_EQ(sg[2].seq, 3);
	CHECK_EQ(sg[2].ticks, SEQ3_BASE);
	CHECK_EQ(sg[2].ns, 52000);
	check_records(t, exp, idx, range(idx, 0, 0, (int)n));
	rd_thread_rewind(t);
	check_records(t, exp, idx, range(idx, 0, 0, (int)n));
}

static void
test_thread_valid(void)
{
	struct img f = {0};
	rd_errlist e;
	rd_thread *t;
	char *path;

	rd_errlist_init(&e, NULL);
	thread_file(&f, false);
	t = open_img(&f, f.size, &e, DW_OK);
	if (t)
		check_thread_valid(t);
	rd_thread_close(t);
	path = write_file("a.dwt", &f, f.size);
	for (size_t w = 64; w <= 65536; w *= 32) { /* window refills too */
		rd_set_window(w);
		t = NULL;
		CHECK_EQ(rd_thread_open(path, &e, &t), DW_OK);
		if (t) {
			CHECK(strcmp(rd_thread_name(t), path) == 0);
			check_thread_valid(t);
		}
		rd_thread_close(t);
	}
	rd_set_window(65536);
	CHECK_EQ(rd_errlist_count(&e), 0);
	rd_errlist_print(&e, stderr);
	rd_errlist_free(&e);
	free(path);
	img_free(&f);
}

static void
test_thread_big_endian(void)
{
	struct img f = {0};
	rd_errlist e;
	rd_thread *t;

	rd_errlist_init(&e, NULL);
	thread_file(&f, true);
	t = open_img(&f, f.size, &e, DW_OK);
	if (t) {
		CHECK(rd_thread_header(t)->swapped);
		check_thread_valid(t);
	}
	CHECK_EQ(rd_errlist_count(&e), 0);
	rd_thread_close(t);
	rd_errlist_free(&e);
	img_free(&f);
}

/* Truncated thread files keep what is before the cut. */
static void
test_thread_truncated(void)
{
	struct img f = {0};
	rd_rec exp[64];
	int idx[64] = {0};
	size_t n;
	rd_errlist e;
	rd_thread *t;
	uint64_t cut;

	expected(exp);
	thread_file(&f, false);

	/* Cut between slots 3 and 4 of the segment of sequence 1. */
	rd_errlist_init(&e, NULL);
	cut = slot_off(2, 3);
	t = open_img(&f, cut, &e, DW_OK);
	n = range(idx, range(idx, 0, 0, 3), 6, 22);
	if (t)
		check_records(t, exp, idx, n);
	CHECK(has_msg(
	    &e, "T: offset %llu: file ends inside the segment at offset %llu",
	    (unsigned long long)cut, (unsigned long long)seg_off(2)));
	CHECK_EQ(rd_errlist_count(&e), 1);
	rd_thread_close(t);
	rd_errlist_free(&e);

	/* dwt_fini trimmed the last segment after its last record. */
	rd_errlist_init(&e, NULL);
	fmt_put_u32(f.p + FMT_H_FLAGS, FMT_FLAG_ENDED | FMT_FLAG_TRIMMED);
	t = open_img(&f, slot_off(2, 6), &e, DW_OK);
	if (t)
		check_records(t, exp, idx, range(idx, 0, 0, 22));
	CHECK_EQ(rd_errlist_count(&e), 0);
	rd_thread_close(t);
	t = open_img(&f, slot_off(2, 5) + 4, &e, DW_OK); /* and cut again */
	if (t)
		check_records(t, exp, idx,
		              range(idx, range(idx, 0, 0, 5), 6, 22));
	CHECK(has_msg(&e, "T: offset %llu: record cut by the end of the file",
	              (unsigned long long)slot_off(2, 5)));
	CHECK_EQ(rd_errlist_count(&e), 1);
	rd_thread_close(t);
	rd_errlist_free(&e);
	fmt_put_u32(f.p + FMT_H_FLAGS, FMT_FLAG_ENDED | FMT_FLAG_CIRCULAR);

	/* Cut in the middle of a record. */
	n = range(idx, range(idx, 0, 0, 3), 6, 22);
	rd_errlist_init(&e, NULL);
	t = open_img(&f, cut + 9, &e, DW_OK);
	if (t)
		check_records(t, exp, idx, n);
	CHECK(has_msg(&e, "T: offset %llu: record cut by the end of the file",
	              (unsigned long long)cut));
	CHECK_EQ(rd_errlist_count(&e), 2);
	rd_thread_close(t);
	rd_errlist_free(&e);

	/* Cut inside the second slot of a COMM: nothing readable. */
	rd_errlist_init(&e, NULL);
	t = open_img(&f, slot_off(0, 1) + 8, &e, DW_OK);
	if (t)
		check_records(t, exp, idx, 0);
	CHECK(has_msg(&e, "T: offset %llu: record cut by the end of the file",
	              (unsigned long long)slot_off(0, 0)));
	rd_thread_close(t);
	rd_errlist_free(&e);

	/* Cut inside a segment header: that segment is skipped. */
	rd_errlist_init(&e, NULL);
	t = open_img(&f, seg_off(2) + 30, &e, DW_OK);
	if (t)
		check_records(t, exp, idx, range(idx, 0, 6, 22));
	CHECK(has_msg(&e, "T: offset %llu: segment header cut",
	              (unsigned long long)seg_off(2)));
	rd_thread_close(t);
	rd_errlist_free(&e);

	/* Header page only, and a header cut short. */
	rd_errlist_init(&e, NULL);
	t = open_img(&f, FMT_HEADER_PAGE, &e, DW_OK);
	if (t)
		check_records(t, exp, idx, 0);
	CHECK_EQ(rd_errlist_count(&e), 0);
	rd_thread_close(t);
	open_img(&f, 100, &e, DW_EFORMAT);
	CHECK(has_msg(&e, "T: offset 100: file ends inside the header"));
	open_img(&f, 3, &e, DW_EFORMAT);
	CHECK(has_msg(&e, "T: offset 3: file ends inside the header"));
	rd_errlist_free(&e);
	img_free(&f);
}

/* One damaged slot: records before it are kept, its segment ends. */
static void
garbled(struct img *f, const rd_rec *exp, int from1, int to1, int from2,
        int to2, const char *msg)
{
	int idx[64] = {0};
	size_t n = range(idx, range(idx, 0, 0, from1), to1, from2);
	rd_errlist e;
	rd_thread *t;

	n = range(idx, n, to2, 22);
	rd_errlist_init(&e, NULL);
	t = open_img(f, f->size, &e, DW_OK);
	if (t)
		check_records(t, exp, idx, n);
	CHECK(has_msg(&e, "%s", msg));
	CHECK_EQ(rd_errlist_count(&e), 1);
	rd_thread_close(t);
	rd_errlist_free(&e);
}

static void
test_thread_garbled(void)
{
	struct img f = {0};
	rd_rec exp[64];
	char msg[256];

	expected(exp);
	thread_file(&f, false);
	slot(&f, false, 0, 4, 10, 1, 0, 0); /* reserved kind instead of SYNC */
	snprintf(msg, sizeof msg, "T: offset %llu: reserved record kind 10",
	         (unsigned long long)slot_off(0, 4));
	garbled(&f, exp, 6, 6, 8, 10, msg);
	img_free(&f);

	thread_file(&f, false);
	slot(&f, false, 2, 2, FMT_R_CONT, 0, 0, 0); /* CONT first */
	snprintf(msg, sizeof msg, "T: offset %llu: CONT slot without a record",
	         (unsigned long long)slot_off(2, 2));
	garbled(&f, exp, 2, 6, 6, 6, msg);
	img_free(&f);

	thread_file(&f, false);
	slot(&f, false, 0, 1, FMT_R_EVENT, 0, 3, 1024); /* COMM without CONT */
	snprintf(
	    msg, sizeof msg,
	    "T: offset %llu: second slot of a COMM record has kind 1, not CONT",
	    (unsigned long long)slot_off(0, 1));
	garbled(&f, exp, 6, 6, 6, 10, msg);
	img_free(&f);

	thread_file(&f, false);
	slot(&f, false, 1, 11, FMT_R_SYNC, 1, 0, 0); /* two slots, one left */
	snprintf(msg, sizeof msg,
	         "T: offset %llu: SYNC record cut by the segment end",
	         (unsigned long long)slot_off(1, 11));
	garbled(&f, exp, 21, 22, 22, 22, msg);
	img_free(&f);

	thread_file(&f, false);
	slot(&f, false, 0, 6, FMT_R_NEWBASE, 0, 0, 1500); /* back in time */
	snprintf(msg, sizeof msg, "T: offset %llu: NEWBASE goes back in time",
	         (unsigned long long)slot_off(0, 6));
	garbled(&f, exp, 6, 6, 9, 10, msg);
	img_free(&f);

	thread_file(&f, false);
	fmt_put_u64(img_at(&f, seg_off(1) + FMT_S_TICKS, 8), 1990);
	snprintf(msg, sizeof msg,
	         "T: offset %llu: segment 3 starts at tick 1990, before tick "
	         "%llu already read",
	         (unsigned long long)(seg_off(1) + FMT_S_TICKS),
	         NEWBASE_TICKS + 7);
	garbled(&f, exp, 10, 22, 22, 22, msg);
	img_free(&f);

	thread_file(&f, false); /* kind 0 with a delta: garbage */
	slot(&f, false, 2, 0, 0, 5, 0, 0);
	snprintf(msg, sizeof msg, "T: offset %llu: reserved record kind 0",
	         (unsigned long long)slot_off(2, 0));
	garbled(&f, exp, 0, 6, 6, 6, msg);
	img_free(&f);
}

/* One pass of t by rd_thread_next (skim: by rd_thread_skim, types 7..9
 * wanted, batches of 3) into a text: every record wanted with its
 * number, the count, the last tick, then the problems. */
static void
skim_pass(struct img *f, bool skim, char *out, size_t len)
{
	rd_skim sk = {.ev_lo = 7, .ev_span = 3};
	rd_errlist e;
	rd_thread *t = NULL;
	rd_rec v[3];
	uint32_t at[3];
	uint64_t n = 0, last = 0;
	size_t o = 0, k;

	rd_errlist_init(&e, NULL);
	CHECK_EQ(rd_thread_open_mem("T", f->p, f->size, &e, &t), DW_OK);
	while (t) {
		if (skim) {
			k = rd_thread_skim(t, &sk, v, at, 3);
		} else {
			k = rd_thread_next(t, v) ? 1 : 0;
			sk.count = k;
			at[0] = 0;
			sk.last = v[0].ticks;
			if (k && v[0].kind == FMT_R_EVENT
			        ? !(v[0].u.event.value &&
			            v[0].u.event.type - 7u < 3u)
			        : v[0].kind < FMT_R_COMM)
				k = 0;
		}
		if (!sk.count)
			break;
		for (size_t i = 0; i < k && o < len; i++)
			o += (size_t)snprintf(
			    out + o, len - o, "%llu:%u@%llu/%llu %u %llu;",
			    (unsigned long long)(n + at[i]), v[i].kind,
			    (unsigned long long)v[i].ticks,
			    (unsigned long long)v[i].offset, v[i].u.comm.flags,
			    (unsigned long long)v[i].u.comm.size);
		n += sk.count;
		last = sk.last;
	}
	if (o < len)
		o += (size_t)snprintf(out + o, len - o, "n %llu last %llu;",
		                      (unsigned long long)n,
		                      (unsigned long long)last);
	for (size_t i = 0; i < e.n && o < len; i++)
		o += (size_t)snprintf(out + o, len - o, "%s;", e.msgs[i]);
	rd_thread_close(t);
	rd_errlist_free(&e);
}

static void
skim_same(struct img *f, int line)
{
	static char a[8192], b[8192];

	skim_pass(f, false, a, sizeof a);
	skim_pass(f, true, b, sizeof b);
	if (strcmp(a, b)) {
		fprintf(stderr, "%s:%d: skim differs:\n%s\n%s\n", __FILE__,
		        line, a, b);
		failures++;
	}
}

/* rd_thread_skim against rd_thread_next: the reference file in both
 * byte orders, as 1.2 with carried events, and damaged. */
static void
test_thread_skim(void)
{
	struct img f = {0};

	for (int be = 0; be < 2; be++) {
		thread_file(&f, be);
		skim_same(&f, __LINE__);
		fmt_put_u16(img_at(&f, FMT_H_VMINOR, 2), 2);
		slot(&f, be, 2, 2, FMT_R_STATE_PUSH, 5, 1, 8ull << 32 | 5);
		slot(&f, be, 2, 5, FMT_R_STATE_POP, 3, 9, 6);
		slot(&f, be, 2, 6, FMT_R_STATE_PUSH, 1, 2, 20ull << 32 | 5);
		slot(&f, be, 2, 7, FMT_R_STATE_POP, 1, 7, 0);
		slot(&f, be, 2, 8, FMT_R_THREAD_END, 0, 0, 0);
		skim_same(&f, __LINE__);
		img_free(&f);
	}
	thread_file(&f, false);
	slot(&f, false, 0, 4, 10, 1, 0, 0);
	skim_same(&f, __LINE__);
	slot(&f, false, 2, 2, FMT_R_CONT, 0, 0, 0);
	skim_same(&f, __LINE__);
	slot(&f, false, 0, 1, FMT_R_EVENT, 0, 3, 1024);
	skim_same(&f, __LINE__);
	slot(&f, false, 1, 11, FMT_R_SYNC, 1, 0, 0);
	skim_same(&f, __LINE__);
	img_free(&f);
	thread_file(&f, false);
	slot(&f, false, 0, 6, FMT_R_NEWBASE, 0, 0, 1500);
	skim_same(&f, __LINE__);
	fmt_put_u64(img_at(&f, seg_off(1) + FMT_S_TICKS, 8), 1990);
	skim_same(&f, __LINE__);
	slot(&f, false, 1, 3, FMT_R_NEWBASE, 0, 0, UINT64_MAX - 5);
	skim_same(&f, __LINE__);
	img_free(&f);
}

/* Segment-level damage: bad magic, repeated sequence, no magic. */
static void
test_thread_segments(void)
{
	struct img f = {0};
	rd_rec exp[64];
	int idx[64] = {0};
	rd_errlist e;
	rd_thread *t;

	expected(exp);
	rd_errlist_init(&e, NULL);
	thread_file(&f, false);
	fmt_put_u64(img_at(&f, seg_off(1) + FMT_S_SEQ, 8), 2);
	t = open_img(&f, f.size, &e, DW_OK);
	if (t)
		check_records(t, exp, idx, range(idx, 0, 0, 10));
	CHECK(has_msg(&e,
	              "T: offset %llu: sequence number 2 repeats the segment "
	              "at offset %llu",
	              (unsigned long long)(seg_off(1) + FMT_S_SEQ),
	              (unsigned long long)seg_off(0)));
	CHECK_EQ(rd_errlist_count(&e), 1);
	rd_thread_close(t);
	rd_errlist_free(&e);
	img_free(&f);

	rd_errlist_init(&e, NULL);
	thread_file(&f, false);
	fmt_put_u32(img_at(&f, seg_off(0), 4), 0); /* never started */
	fmt_put_u32(img_at(&f, seg_off(1), 4), 0x12345678);
	t = open_img(&f, f.size, &e, DW_OK);
	if (t)
		check_records(t, exp, idx, range(idx, 0, 0, 6));
	CHECK(has_msg(&e, "T: offset %llu: bad segment magic 0x12345678",
	              (unsigned long long)seg_off(1)));
	CHECK_EQ(rd_errlist_count(&e), 1);
	rd_thread_close(t);
	rd_errlist_free(&e);

	rd_errlist_init(&e, NULL);
	fmt_put_u64(img_at(&f, FMT_H_SEGMENT_SIZE, 8), 16);
	open_img(&f, f.size, &e, DW_EFORMAT);
	CHECK(has_msg(&e, "T: offset 96: segment size 16 is not in"));
	rd_errlist_free(&e);
	img_free(&f);
}

static void
test_headers(void)
{
	struct img f = {0};
	rd_errlist e;
	rd_thread *t = NULL;
	rd_proc *p = NULL;
	rd_header h;
	char *path;

	rd_errlist_init(&e, NULL);
	thread_file(&f, false);
	fmt_put_u16(f.p + FMT_H_VMAJOR, 2);
	path = write_file("new.dwt", &f, f.size);
	CHECK_EQ(rd_thread_open(path, &e, &t), DW_EVERSION);
	CHECK(t == NULL);
	CHECK(has_msg(&e,
	              "%s: offset 8: trace format version 2.0 is newer than "
	              "this reader (1.x)",
	              path));
	CHECK_EQ(rd_header_read(path, &e, &h), DW_EVERSION);
	free(path);

	fmt_put_u16(f.p + FMT_H_VMAJOR, 1);
	fmt_put_u16(f.p + FMT_H_VMINOR, 7); /* newer minor: fine */
	CHECK_EQ(rd_header_parse("H", f.p, f.size, &e, &h), DW_OK);
	CHECK_EQ(h.vminor, 7);
	fmt_put_u32(f.p + FMT_H_SIZE, 200);
	CHECK_EQ(rd_header_parse("H", f.p, f.size, &e, &h), DW_EFORMAT);
	CHECK(has_msg(&e, "H: offset 12: header size 200 is not in"));
	fmt_put_u32(f.p + FMT_H_SIZE, 4097);
	CHECK_EQ(rd_header_parse("H", f.p, f.size, &e, &h), DW_EFORMAT);
	fmt_put_u32(f.p + FMT_H_SIZE, 1000); /* a later minor's fields */
	CHECK_EQ(rd_header_parse("H", f.p, f.size, &e, &h), DW_OK);
	CHECK_EQ(rd_header_parse("H", f.p, 999, &e, &h), DW_EFORMAT);
	CHECK(has_msg(&e, "H: offset 999: file ends inside the header"));
	fmt_put_u32(f.p + FMT_H_BOM, 0x01020305);
	CHECK_EQ(rd_header_parse("H", f.p, f.size, &e, &h), DW_EFORMAT);
	CHECK(has_msg(&e, "H: offset 16: bad byte-order mark"));
	fmt_put_u32(f.p + FMT_H_BOM, FMT_BOM);
	fmt_put_u32(f.p + FMT_H_KIND, 1);
	CHECK_EQ(rd_header_parse("H", f.p, f.size, &e, &h), DW_EFORMAT);
	CHECK(has_msg(&e, "H: offset 20: file kind 1 does not match"));
	fmt_put_u32(f.p + FMT_H_KIND, 2);
	fmt_put_u32(f.p + FMT_H_CLOCK, 3);
	CHECK_EQ(rd_header_parse("H", f.p, f.size, &e, &h), DW_EFORMAT);
	CHECK(has_msg(&e, "H: offset 56: unknown clock kind 3"));
	fmt_put_u32(f.p + FMT_H_CLOCK, 1);

	/* A thread file is not a process file and the other way round. */
	CHECK_EQ(rd_proc_open_mem("T", f.p, f.size, &e, &p), DW_EFORMAT);
	CHECK(p == NULL);
	CHECK(has_msg(&e, "T: offset 0: a thread file, not a process file"));

	/* Empty file, wrong magic. */
	path = write_file("empty.dwt", &f, 0);
	CHECK_EQ(rd_thread_open(path, &e, &t), DW_EFORMAT);
	CHECK(has_msg(&e, "%s: offset 0: empty file, not a trace file", path));
	free(path);
	memcpy(f.p, "DWTXXXX", 8);
	CHECK_EQ(rd_thread_open_mem("M", f.p, f.size, &e, &t), DW_EFORMAT);
	CHECK(has_msg(&e, "M: offset 0: not a dwork trace file (bad magic)"));
	CHECK_EQ(rd_thread_open("/nonexistent/x.dwt", &e, &t), DW_ENOENT);
	CHECK(has_msg(&e, "/nonexistent/x.dwt: cannot open"));
	rd_errlist_free(&e);
	img_free(&f);
}

static void
check_proc(const rd_proc *p, int ntlv)
{
	const rd_state_label *st;
	const rd_module *m;

	check_header(&p->hdr, FMT_FILE_PROCESS, 0);
	CHECK_EQ(p->ntypes, 1);
	CHECK(strcmp(rd_proc_type_name(p, 7), "Iterations") == 0);
	CHECK(rd_proc_type_name(p, 8) == NULL);
	CHECK_EQ(p->nvalues, 2);
	CHECK(strcmp(rd_proc_value_name(p, 7, 42), "answer") == 0);
	CHECK(strcmp(rd_proc_value_name(p, 7, 43), "") == 0);
	CHECK(rd_proc_value_name(p, 8, 42) == NULL);
	CHECK_EQ(p->nstates, 2);
	st = rd_proc_state(p, 1);
	CHECK(st && st->rgb == 0x00ff00 && strcmp(st->name, "Running") == 0);
	st = rd_proc_state(p, 3);
	CHECK(st && st->rgb == RD_NO_COLOR && strcmp(st->name, "Waiting") == 0);
	CHECK(rd_proc_state(p, 2) == NULL);
	CHECK(strcmp(rd_proc_func_name(p, 0x401000), "main") == 0);
	CHECK(rd_proc_func_name(p, 0x401001) == NULL);
	CHECK(strcmp(rd_proc_thread_name(p, 1), "worker-1") == 0);
	CHECK_EQ(p->nmodules, 1);
	m = rd_proc_module(p, 0x4fffff);
	CHECK(m && m->start == 0x400000 && m->end == 0x500000 &&
	      m->foff == 0x1000 && strcmp(m->path, "/usr/bin/demo") == 0);
	CHECK(rd_proc_module(p, 0x500000) == NULL);
	CHECK(rd_proc_module(p, 0x3fffff) == NULL);
	CHECK_EQ(p->ncalib, 1);
	CHECK(p->ncalib && p->calib[0].ticks == 1500 &&
	      p->calib[0].ns == 50500);
	CHECK_EQ(p->nident, 1);
	CHECK(p->nident && p->ident[0].ticks == 1600 && p->ident[0].task == 3 &&
	      p->ident[0].ntasks == 6);
	CHECK(p->has_end && p->end.ticks == 500000000 &&
	      p->end.ns == 600000000);
	CHECK_EQ(p->data_end, tlv_offs[ntlv]);
}

static void
test_proc_valid(void)
{
	struct img f = {0};
	int ntlv = proc_file(&f);
	rd_errlist e;
	rd_proc *p = NULL;
	char *path = write_file("a.dwp", &f, f.size);

	rd_errlist_init(&e, NULL);
	CHECK_EQ(rd_proc_open_mem("P", f.p, f.size, &e, &p), DW_OK);
	if (p)
		check_proc(p, ntlv);
	rd_proc_close(p);
	p = NULL;
	CHECK_EQ(rd_proc_open(path, &e, &p), DW_OK);
	if (p) {
		check_proc(p, ntlv);
		CHECK(strcmp(p->path, path) == 0);
	}
	rd_proc_close(p);
	CHECK_EQ(rd_errlist_count(&e), 0);
	rd_errlist_print(&e, stderr);
	rd_errlist_free(&e);
	free(path);
	img_free(&f);
}

static void
test_proc_damaged(void)
{
	struct img f = {0};
	int ntlv = proc_file(&f);
	rd_errlist e;
	rd_proc *p = NULL;

	/* Cut inside the IDENTITY record (index 10): the first ten stay. */
	rd_errlist_init(&e, NULL);
	CHECK_EQ(rd_proc_open_mem("P", f.p, tlv_offs[10] + 12, &e, &p), DW_OK);
	CHECK(p && p->ntypes == 1 && p->nident == 0 && !p->has_end);
	CHECK(p && strcmp(rd_proc_type_name(p, 7), "Iterations") == 0);
	CHECK(p && p->data_end == tlv_offs[10]);
	CHECK(has_msg(&e,
	              "P: offset %zu: label record of kind 8 and length 16 cut "
	              "by the end of the file",
	              tlv_offs[10]));
	rd_proc_close(p);

	/* Cut inside a TLV head. */
	CHECK_EQ(rd_proc_open_mem("P", f.p, tlv_offs[1] + 5, &e, &p), DW_OK);
	CHECK(p && p->ntypes == 1 && p->nvalues == 0);
	CHECK(has_msg(&e, "P: offset %zu: label record cut by the end",
	              tlv_offs[1]));
	rd_proc_close(p);

	/* Header page cut: no labels, still a process. */
	CHECK_EQ(rd_proc_open_mem("P", f.p, 2000, &e, &p), DW_OK);
	CHECK(p && p->ntypes == 0);
	CHECK(has_msg(&e, "P: offset 2000: file ends inside the header page"));
	rd_proc_close(p);
	CHECK_EQ(rd_proc_open_mem("P", f.p, 200, &e, &p), DW_EFORMAT);
	rd_errlist_free(&e);

	/* Length over the limit. */
	rd_errlist_init(&e, NULL);
	fmt_put_u32(f.p + tlv_offs[3] + 4, FMT_TLV_MAX + 1);
	CHECK_EQ(rd_proc_open_mem("P", f.p, f.size, &e, &p), DW_OK);
	CHECK(p && p->nstates == 1 && p->nvalues == 1 && p->nfuncs == 0);
	CHECK(has_msg(&e,
	              "P: offset %zu: label record of kind 3 has length 65537, "
	              "over the limit",
	              tlv_offs[3] + 4));
	CHECK_EQ(rd_errlist_count(&e), 1);
	rd_proc_close(p);
	rd_errlist_free(&e);
	img_free(&f);

	/* Zero kind followed by non-zero bytes; payload too short. */
	rd_errlist_init(&e, NULL);
	ntlv = proc_file(&f);
	fmt_put_u32(f.p + tlv_offs[4], 0);
	CHECK_EQ(rd_proc_open_mem("P", f.p, f.size, &e, &p), DW_OK);
	CHECK(p && p->nstates == 2 && p->nfuncs == 0 && p->ntypes == 1);
	CHECK(p && strcmp(rd_proc_type_name(p, 7), "Iterations (old)") == 0);
	CHECK(has_msg(
	    &e,
	    "P: offset %zu: label record of kind 0 followed by non-zero bytes",
	    tlv_offs[4]));
	rd_proc_close(p);
	fmt_put_u32(f.p + tlv_offs[4], FMT_L_FUNC);
	fmt_put_u32(f.p + tlv_offs[7] + 4, 15); /* CALIB needs 16 */
	CHECK_EQ(rd_proc_open_mem("P", f.p, f.size, &e, &p), DW_OK);
	CHECK(p && p->nmodules == 1 && p->ncalib == 0);
	CHECK(has_msg(&e,
	              "P: offset %zu: label record of kind 7 has a payload of "
	              "15 bytes, too short",
	              tlv_offs[7]));
	CHECK_EQ(rd_errlist_count(&e), 2);
	rd_proc_close(p);
	rd_errlist_free(&e);
	(void)ntlv;
	img_free(&f);
}

static void
test_calib(void)
{
	rd_calib c;
	rd_errlist e;
	uint64_t t0 = 1000000000ull, span = 108000000000000ull; /* 10 h */

	rd_errlist_init(&e, NULL);
	rd_calib_init(&c, FMT_CLOCK_TSC, 1000000000ull);
	CHECK_EQ(rd_calib_add(&c, 5000, 1006000), DW_OK);
	CHECK_EQ(rd_calib_add(&c, 1000, 1000000), DW_OK);
	CHECK_EQ(rd_calib_add(&c, 3000, 1002000), DW_OK);
	CHECK_EQ(rd_calib_add(&c, 3000, 1002000), DW_OK); /* duplicate */
	CHECK_EQ(rd_calib_add(&c, 0, 0), DW_OK);          /* unset */
	CHECK_EQ(rd_calib_add(&c, 4000, 1001000), DW_OK); /* back in time */
	CHECK_EQ(rd_calib_finish(&c, "C", &e), 1);
	CHECK(has_msg(&e, "C: calibration pair (tick 4000, 1001000 ns) goes "
	                  "back in time; ignored"));
	CHECK_EQ(c.n, 3);
	CHECK_EQ(rd_calib_to_ns(&c, 1000), 1000000);
	CHECK_EQ(rd_calib_to_ns(&c, 2000), 1001000); /* slope 1 */
	CHECK_EQ(rd_calib_to_ns(&c, 3000), 1002000);
	CHECK_EQ(rd_calib_to_ns(&c, 4000), 1004000); /* slope 2 */
	CHECK_EQ(rd_calib_to_ns(&c, 4001), 1004002);
	CHECK_EQ(rd_calib_to_ns(&c, 5000), 1006000);
	/* Outside: the slope from first to last pair, 1.5 ns a tick. */
	CHECK_EQ(rd_calib_to_ns(&c, 6000), 1007500);
	CHECK_EQ(rd_calib_to_ns(&c, 5001), 1006002); /* 1006001.5 rounds up */
	CHECK_EQ(rd_calib_to_ns(&c, 0), 998500);
	CHECK_EQ(rd_calib_to_ns(&c, 999), 999998); /* 999998.5: away */
	CHECK(rd_calib_to_ns(&c, UINT64_MAX) > 0);
	rd_calib_free(&c);

	/* Hours at 3 GHz: exact to the nanosecond. */
	rd_calib_init(&c, FMT_CLOCK_TSC, 0);
	rd_calib_add(&c, t0, 5000000000ull);
	rd_calib_add(&c, t0 + 3 * span, 5000000000ull + span);
	CHECK_EQ(rd_calib_to_ns(&c, t0 + 3 * 12345678901234ull),
	         5000000000ull + 12345678901234ull);
	CHECK_EQ(rd_calib_to_ns(&c, t0 + 3 * span + 3 * 7200000000000ull + 1),
	         5000000000ull + span + 7200000000000ull);
	CHECK_EQ(rd_calib_to_ns(&c, t0 + 3 * span + 3 * 7200000000000ull + 2),
	         5000000000ull + span + 7200000000001ull);
	rd_calib_free(&c);

	/* One pair: the header's rate; none and no rate: ticks. */
	rd_calib_init(&c, FMT_CLOCK_TSC, 3000000000ull);
	rd_calib_add(&c, t0, 7000);
	CHECK_EQ(rd_calib_to_ns(&c, t0 + 3000000000ull * 3600),
	         7000 + 3600000000000ull);
	CHECK_EQ(rd_calib_to_ns(&c, t0 - 3), 6999);
	rd_calib_free(&c);
	rd_calib_init(&c, FMT_CLOCK_TSC, 0);
	CHECK_EQ(rd_calib_to_ns(&c, 12345), 12345);
	rd_calib_free(&c);

	/* Clock kind 2: ticks are nanoseconds whatever the pairs say. */
	rd_calib_init(&c, FMT_CLOCK_MONO_RAW, 0);
	rd_calib_add(&c, 10, 20);
	rd_calib_add(&c, 30, 90);
	CHECK_EQ(rd_calib_to_ns(&c, 777), 777);
	rd_calib_free(&c);
	rd_errlist_free(&e);
}

/* The calibration of the reference process: files' pairs together. */
static void
test_calib_files(void)
{
	struct img pf = {0}, tf = {0};
	rd_errlist e;
	rd_proc *p = NULL;
	rd_thread *t = NULL;
	rd_calib c;

	rd_errlist_init(&e, NULL);
	proc_file(&pf);
	thread_file(&tf, false);
	CHECK_EQ(rd_proc_open_mem("P", pf.p, pf.size, &e, &p), DW_OK);
	CHECK_EQ(rd_thread_open_mem("T", tf.p, tf.size, &e, &t), DW_OK);
	if (p && t) {
		rd_calib_init(&c, p->hdr.clock, p->hdr.ticks_per_s);
		CHECK_EQ(rd_calib_add_proc(&c, p), DW_OK);
		CHECK_EQ(rd_calib_add_thread(&c, t), DW_OK);
		CHECK_EQ(rd_calib_finish(&c, "P", &e), 0);
		/* 900, 1000, 1500, 2000, SEQ3_BASE, 500000000 */
		CHECK_EQ(c.n, 6);
		CHECK_EQ(rd_calib_to_ns(&c, 1250), 50250);
		CHECK_EQ(rd_calib_to_ns(&c, 1750), 50750);
		CHECK_EQ(rd_calib_to_ns(&c, 900), 49900);
		rd_calib_free(&c);
	}
	CHECK_EQ(rd_errlist_count(&e), 0);
	rd_proc_close(p);
	rd_thread_close(t);
	rd_errlist_free(&e);
	img_free(&pf);
	img_free(&tf);
}

static char *
make_dir(const char *name)
{
	char *path = NULL;

	if (asprintf(&path, "%s/%s", tmpdir, name) < 0 || mkdir(path, 0700)) {
		perror("mkdir");
		exit(2);
	}
	return path;
}

static void
put_file(const char *dir, const char *name, const struct img *f)
{
	char *path = NULL;
	FILE *o;

	if (asprintf(&path, "%s/%s", dir, name) < 0)
		exit(2);
	o = fopen(path, "wb");
	if (!o || (f->size && fwrite(f->p, 1, f->size, o) != f->size) ||
	    fclose(o)) {
		perror(path);
		exit(2);
	}
	free(path);
}

static void
test_dir(void)
{
	struct img pf = {0}, tf = {0}, junk = {0};
	char *d = make_dir("trace"), *d2 = make_dir("none");
	rd_errlist e;
	rd_dir *dir = NULL;

	proc_file(&pf);
	thread_file(&tf, false);
	memcpy(img_at(&junk, 0, 16), "not a trace file", 16);
	put_file(d, "demo.4242.1122334455667788.dwp", &pf);
	/* Names lie; headers tell: thread 1 of UID, and thread 2 below. */
	put_file(d, "zzz.dwt", &tf);
	fmt_put_u32(tf.p + FMT_H_THREAD, 2);
	put_file(d, "demo.4242.1122334455667788.2.dwt", &tf);
	fmt_put_u64(tf.p + FMT_H_UID, 0xabcdef);
	fmt_put_u32(tf.p + FMT_H_TASK, 0);
	put_file(d, "demo.9.0000000000abcdef.2.dwt", &tf);
	put_file(d, "broken.dwt", &junk);
	put_file(d, "notes.txt", &junk);

	rd_errlist_init(&e, NULL);
	CHECK_EQ(rd_dir_open(d, &e, &dir), DW_OK);
	if (dir) {
		CHECK_EQ(dir->nprocs, 2);
		/* Task 0 (no process file) comes first. */
		CHECK_EQ(dir->procs[0].uid, 0xabcdef);
		CHECK(dir->procs[0].proc_path == NULL);
		CHECK_EQ(dir->procs[0].nthreads, 1);
		CHECK_EQ(dir->procs[0].hdr.task, 0);
		CHECK_EQ(dir->procs[1].uid, UID);
		CHECK(dir->procs[1].proc_path &&
		      strstr(dir->procs[1].proc_path, ".dwp"));
		CHECK_EQ(dir->procs[1].hdr.kind, FMT_FILE_PROCESS);
		CHECK_EQ(dir->procs[1].nthreads, 2);
		CHECK_EQ(dir->procs[1].thread_ids[0], 1);
		CHECK(strstr(dir->procs[1].thread_paths[0], "zzz.dwt"));
		CHECK_EQ(dir->procs[1].thread_ids[1], 2);
	}
	CHECK(has_msg(&e,
	              "%s/demo.9.0000000000abcdef.2.dwt: offset 24: no process "
	              "file for uid 0000000000abcdef",
	              d));
	CHECK(
	    has_msg(&e, "%s/broken.dwt: offset 0: not a dwork trace file", d));
	CHECK_EQ(rd_errlist_count(&e), 2);
	rd_dir_close(dir);
	rd_errlist_free(&e);

	rd_errlist_init(&e, NULL);
	CHECK_EQ(rd_dir_open(d2, &e, &dir), DW_ENOENT);
	CHECK(dir == NULL);
	CHECK(has_msg(&e, "%s: no trace files (*.dwp, *.dwt) in this directory",
	              d2));
	put_file(d2, "readme.txt", &junk);
	CHECK_EQ(rd_dir_open(d2, &e, &dir), DW_ENOENT);
	put_file(d2, "x.dwp", &junk);
	CHECK_EQ(rd_dir_open(d2, &e, &dir), DW_EFORMAT);
	CHECK(has_msg(&e, "%s: none of its 1 trace files has a readable header",
	              d2));
	CHECK_EQ(rd_dir_open("/nonexistent-dir", &e, &dir), DW_ENOENT);
	rd_errlist_free(&e);
	free(d);
	free(d2);
	img_free(&pf);
	img_free(&tf);
	img_free(&junk);
}

static void
test_errlist(void)
{
	rd_errlist e;
	struct img f = {0};
	rd_thread *t = NULL;

	rd_errlist_init(&e, NULL);
	for (int i = 0; i < RD_ERRS_MAX + 5; i++)
		rd_thread_open_mem("E", f.p, 0, &e, &t);
	CHECK_EQ(e.n, RD_ERRS_MAX);
	CHECK_EQ(e.dropped, 5);
	CHECK_EQ(rd_errlist_count(&e), RD_ERRS_MAX + 5);
	rd_errlist_free(&e);
	CHECK_EQ(rd_errlist_count(&e), 0);
}

static int
rm_tree(const char *path)
{
	char *cmd = NULL;
	int rc;

	if (asprintf(&cmd, "rm -rf '%s'", path) < 0)
		return -1;
	rc = system(cmd);
	free(cmd);
	return rc;
}

/* Seeds for tests/fuzz/corpus/reader: reader_test --corpus DIR. */
static int
write_corpus(const char *dir)
{
	struct img pf = {0}, tf = {0}, be = {0};
	int n = proc_file(&pf);

	thread_file(&tf, false);
	thread_file(&be, true);
	put_file(dir, "proc", &pf);
	put_file(dir, "thread", &tf);
	put_file(dir, "thread-be", &be);
	tf.size = (size_t)slot_off(2, 3) + 9; /* mid-record */
	put_file(dir, "thread-cut-record", &tf);
	tf.size = (size_t)slot_off(0, 1) + 8; /* mid two-slot record */
	put_file(dir, "thread-cut-comm", &tf);
	tf.size = 100; /* mid-header */
	put_file(dir, "thread-cut-header", &tf);
	pf.size = tlv_offs[n - 3] + 12; /* mid-TLV */
	put_file(dir, "proc-cut-tlv", &pf);
	slot(&be, true, 0, 4, 9, 1, 0, 0);
	slot(&be, true, 1, 11, FMT_R_COMM, 1, 0, 0);
	slot(&be, true, 2, 2, FMT_R_CONT, 0, 0, 0);
	put_file(dir, "thread-garbled", &be);
	img_free(&pf);
	img_free(&tf);
	img_free(&be);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--corpus") == 0)
		return write_corpus(argv[2]);
	if (!mkdtemp(tu_tmp_template(tmpdir, sizeof tmpdir, "reader_test"))) {
		perror("mkdtemp");
		return 2;
	}
	test_thread_valid();
	test_thread_big_endian();
	test_thread_truncated();
	test_thread_garbled();
	test_thread_segments();
	test_thread_skim();
	test_headers();
	test_proc_valid();
	test_proc_damaged();
	test_calib();
	test_calib_files();
	test_dir();
	test_errlist();
	rm_tree(tmpdir);
	if (failures) {
		fprintf(stderr, "reader_test: %d checks failed\n", failures);
		return 1;
	}
	printf("reader_test: all checks passed\n");
	return 0;
}
