/*
 * A large output buffer written with write(2), and integer formatting by
 * hand: the text writers' hot path (tens of millions of lines) must not
 * go through printf.  Past the first OB_FREERUN bytes, what is written is
 * handed to the disk in chunks of OB_CHUNK as it goes (sync_file_range),
 * and a chunk OB_WINDOW behind
 * the end, once on disk, is dropped from the page cache: an output of
 * gigabytes keeps a window of the cache, not gigabytes of it, so its
 * pages are recycled instead of taken fresh (docs/merge.md, "Performance
 * of the writers").
 */
#ifndef DW_OUTPUT_OUTBUF_H
#define DW_OUTPUT_OUTBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <dwork/error.h>

typedef struct ob {
	int fd;
	char *path; /* owned */
	char *buf;
	size_t len, cap;
	uint64_t total;   /* bytes written to the file so far */
	uint64_t freerun; /* bytes left to the page cache as they are */
	uint64_t started; /* bytes handed to writeback (whole chunks) */
	uint64_t dropped; /* bytes dropped from the page cache */
	int errnum;       /* errno of the first failure, 0 if none */
	int nohint;       /* the file takes no sync_file_range (not fatal) */
} ob;

#define OB_SIZE    (1u << 20)
#define OB_FREERUN (256u << 20) /* ob_open's freerun (OB_CHUNK's multiple) */
#define OB_CHUNK   (8u << 20)   /* writeback is started a chunk at a time */
#define OB_WINDOW  (64u << 20)  /* started but not dropped, at most */

/*
 * Creates (truncates) path for writing with a buffer of OB_SIZE bytes;
 * b->freerun is OB_FREERUN (a caller may lower it, to a multiple of
 * OB_CHUNK, before the first write: 0 keeps the window from the start).
 * Returns DW_OK, DW_ENOMEM or the mapped errno (b->errnum set).
 */
dw_err ob_open(ob *b, const char *path);

/* Writes the buffered bytes, starts writeback of each whole chunk and
 * drops the chunks more than OB_WINDOW behind (waiting for their
 * writeback, so it may block on the disk); DW_OK or the mapped errno of
 * the failure (kept: later calls fail the same way). */
dw_err ob_flush(ob *b);

/* Flushes, then writes n bytes from p past the buffer, as a flush
 * would (the same writeback); DW_OK or the mapped errno.  For a caller
 * whose bytes are already made (bench_merge.h's floor). */
dw_err ob_write(ob *b, const void *p, size_t n);

/* Flushes, closes and frees; DW_OK or the first error. */
dw_err ob_close(ob *b);

/* Closes and frees without writing what is buffered; errnum stays. */
void ob_discard(ob *b);

/* Makes room for n bytes (n <= OB_SIZE); then ob_end(b) is where to
 * write and ob_commit(b, p) the end of what was written. */
static inline dw_err
ob_need(ob *b, size_t n)
{
	return b->cap - b->len >= n ? DW_OK : ob_flush(b);
}

static inline char *
ob_end(ob *b)
{
	return b->buf + b->len;
}

static inline void
ob_commit(ob *b, char *p)
{
	b->len = (size_t)(p - b->buf);
}

extern const char ob_digits[201];
extern const uint64_t ob_pow10[20];

/* Decimal digits of v (v > 0). */
static inline unsigned
ob_ndigits(uint64_t v)
{
	unsigned t = (unsigned)(64 - __builtin_clzll(v)) * 1233 >> 12;

	return t + 1 - (v < ob_pow10[t]);
}

/* Writes v in decimal at p; returns the end. */
static inline char *
ob_u64(char *p, uint64_t v)
{
	unsigned n;
	char *e;

	if (v < 10) {
		*p = (char)('0' + v);
		return p + 1;
	}
	n = ob_ndigits(v);
	e = p + n;
	while (v >= 100) {
		unsigned i = (unsigned)(v % 100) * 2;

		v /= 100;
		e -= 2;
		memcpy(e, ob_digits + i, 2);
	}
	if (v >= 10)
		memcpy(e - 2, ob_digits + v * 2, 2);
	else
		e[-1] = (char)('0' + v);
	return p + n;
}

/*
 * Numbers that come close to each other (times in a sorted trace): base,
 * a multiple of 10000, and its digits; a number in [base, base + 10000)
 * is a copy of them and of its last four digits from ob_four, with no
 * division.  ob_near_init starts base at 10000, so every hit is right.
 */
typedef struct ob_near {
	uint64_t base;
	unsigned n; /* digits of base */
	char s[32];
} ob_near;

extern char ob_four[40000]; /* "0000" .. "9999", after ob_near_init */

void ob_near_init(ob_near *c);

/* Moves c's base to v's; false if v < 10000 (its digits vary). */
bool ob_near_move(ob_near *c, uint64_t v);

/* Writes v in decimal at p (storing up to 32 bytes); returns the end.
 * Always inlined: called from a few places per line, and gcc kept it
 * out of line (a call and its spills on every record time). */
static inline __attribute__((always_inline)) char *
ob_u64_near(ob_near *c, char *p, uint64_t v)
{
	uint64_t d = v - c->base;

	if (__builtin_expect(d >= 10000, 0)) {
		if (!ob_near_move(c, v))
			return ob_u64(p, v);
		d = v - c->base;
	}
	memcpy(p, c->s, 32);
	memcpy(p + c->n - 4, ob_four + 4 * d, 4);
	return p + c->n;
}

static inline char *
ob_mem(char *p, const void *s, size_t n)
{
	memcpy(p, s, n);
	return p + n;
}

#endif
