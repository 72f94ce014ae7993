/*
 * A large output buffer written with write(2), and integer formatting by
 * hand: the text writers' hot path (tens of millions of lines) must not
 * go through printf.
 */
#ifndef DW_MERGE_OUTBUF_H
#define DW_MERGE_OUTBUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <dwork/error.h>

typedef struct ob {
	int fd;
	char *path; /* owned */
	char *buf;
	size_t len, cap;
	uint64_t total; /* bytes written to the file so far */
	int errnum;     /* errno of the first failure, 0 if none */
} ob;

#define OB_SIZE (1u << 20)

/*
 * Creates (truncates) path for writing with a buffer of OB_SIZE bytes.
 * Returns DW_OK, DW_ENOMEM or the mapped errno (b->errnum set).
 */
dw_err ob_open(ob *b, const char *path);

/* Writes the buffered bytes; DW_OK or the mapped errno of the failure
 * (kept: later calls fail the same way). */
dw_err ob_flush(ob *b);

/* Flushes, closes and frees; DW_OK or the first error. */
dw_err ob_close(ob *b);

/* Closes and frees without writing what is buffered. */
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

static inline unsigned
ob_ndigits(uint64_t v)
{
	unsigned n = 1;

	for (;;) {
		if (v < 10)
			return n;
		if (v < 100)
			return n + 1;
		if (v < 1000)
			return n + 2;
		if (v < 10000)
			return n + 3;
		v /= 10000;
		n += 4;
	}
}

/* Writes v in decimal at p; returns the end. */
static inline char *
ob_u64(char *p, uint64_t v)
{
	unsigned n = ob_ndigits(v);
	char *e = p + n;

	while (v >= 100) {
		unsigned i = (unsigned)(v % 100) * 2;

		v /= 100;
		*--e = ob_digits[i + 1];
		*--e = ob_digits[i];
	}
	if (v >= 10) {
		*--e = ob_digits[v * 2 + 1];
		*--e = ob_digits[v * 2];
	} else {
		*--e = (char)('0' + v);
	}
	return p + n;
}

static inline char *
ob_mem(char *p, const void *s, size_t n)
{
	memcpy(p, s, n);
	return p + n;
}

#endif
