/* Reader internals shared by the files of src/tracefile/reader*.c. */
#ifndef DW_TRACEFILE_READER_INT_H
#define DW_TRACEFILE_READER_INT_H

#include <stdarg.h>

#include "tracefile/reader.h"

/*
 * Adds "NAME: offset OFF: what" to errs (NULL: nothing).  Never fails:
 * without memory the message is only counted.
 */
void rd_report(rd_errlist *errs, const char *name, uint64_t off,
               const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* As rd_report without an offset: "NAME: what". */
void rd_report_file(rd_errlist *errs, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Bytes of one file, either a borrowed memory buffer or a file read
 * through a window (rd_set_window).
 */
typedef struct rd_src {
	char *name;               /* owned copy, labels messages */
	int fd;                   /* -1: memory */
	const unsigned char *mem; /* memory: the bytes */
	uint64_t size;            /* bytes in the file when opened */
	unsigned char *win;       /* file: window buffer */
	size_t wcap;              /* its size */
	uint64_t woff;            /* file offset of win[0] */
	size_t wlen;              /* valid bytes in win */
	bool failed;              /* a read failed: stop using it */
} rd_src;

/* Opens path for reading with a window of at least minwin bytes. */
dw_err rd_src_open(rd_src *s, const char *path, size_t minwin,
                   rd_errlist *errs);

/* Wraps buf[0 .. len-1] (borrowed); name is copied. */
dw_err rd_src_mem(rd_src *s, const char *name, const void *buf, size_t len);

void rd_src_close(rd_src *s);

/*
 * A pointer to the len bytes at offset off, valid until the next call,
 * or NULL when they are not all in the file (or a read failed: reported,
 * and s->failed set).  len must not exceed the window size.
 */
const unsigned char *rd_src_get(rd_src *s, uint64_t off, size_t len,
                                rd_errlist *errs);

/* rd_src_get with its common case inline: the bytes are in the window.
 * The thread reader's hot path (every record, twice a merge); the call
 * cost a third of a record's decoding. */
static inline const unsigned char *
rd_src_at(rd_src *s, uint64_t off, size_t len, rd_errlist *errs)
{
	if (!s->failed && s->fd >= 0 && off >= s->woff &&
	    off - s->woff <= s->wlen && len <= s->wlen - (off - s->woff))
		return s->win + (off - s->woff);
	return rd_src_get(s, off, len, errs);
}

/* Parses and validates the header of s; wanted: the expected file kind. */
dw_err rd_src_header(rd_src *s, uint32_t wanted, rd_errlist *errs,
                     rd_header *out);

/* A copy of len bytes of p as a NUL-terminated string (cut at a NUL). */
char *rd_strndup(const unsigned char *p, size_t len);

/* A thread file being read (reader_thread.c; reader_skim.c reads it
 * too). */
struct rd_thread {
	rd_src src;
	rd_header hdr;
	rd_errlist *errs;
	rd_segment *segs; /* readable segments, by sequence */
	size_t nsegs;
	size_t cap;
	size_t cur;       /* next segment to enter */
	bool in_seg;      /* pos..seg_end is being read */
	uint64_t pos;     /* offset of the next slot */
	uint64_t seg_end; /* end of the current segment (maybe past EOF) */
	uint64_t now;     /* time the next delta counts from */
	uint64_t last;    /* latest time met: never go before it */
	bool have_last;
	bool have_pend; /* pend is the second half of the last record */
	bool carries;   /* format 1.2: a state record may carry an event */
	rd_rec pend;
	/* The fast path (slot_at): bytes at offsets below flim (in the
	 * current segment, in the window or memory) are at fbuf + (off -
	 * foff); 0 until the slow path has looked. */
	uint64_t flim, foff;
	const unsigned char *fbuf;
};

/* The fields of a COMM or SYNC record at p (both slots). */
void rd_rec_two(const rd_thread *t, uint32_t kind, const unsigned char *p,
                rd_rec *rec);

#endif
