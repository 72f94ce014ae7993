/*
 * Reader basics: the error list, byte sources (a file read through a
 * window, or a memory buffer) and the file header.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracefile/reader_int.h"

#define RD_WINDOW_DEFAULT (64u << 10)
#define RD_WINDOW_MIN     64u
#define RD_WINDOW_MAX     (16u << 20)

static size_t rd_window = RD_WINDOW_DEFAULT;

void
rd_errlist_init(rd_errlist *errs, FILE *echo)
{
	memset(errs, 0, sizeof *errs);
	errs->echo = echo;
}

void
rd_errlist_free(rd_errlist *errs)
{
	for (size_t i = 0; i < errs->n; i++)
		free(errs->msgs[i]);
	free(errs->msgs);
	errs->msgs = NULL;
	errs->n = errs->cap = errs->dropped = 0;
}

size_t
rd_errlist_count(const rd_errlist *errs)
{
	return errs->n + errs->dropped;
}

void
rd_errlist_print(const rd_errlist *errs, FILE *out)
{
	for (size_t i = 0; i < errs->n; i++)
		fprintf(out, "%s\n", errs->msgs[i]);
	if (errs->dropped)
		fprintf(out, "(%zu more problems not shown)\n", errs->dropped);
}

static bool
errlist_grow(rd_errlist *errs)
{
	size_t cap = errs->cap ? errs->cap * 2 : 16;
	char **m;

	if (cap > RD_ERRS_MAX)
		cap = RD_ERRS_MAX;
	m = realloc(errs->msgs, cap * sizeof *m);
	if (!m)
		return false;
	errs->msgs = m;
	errs->cap = cap;
	return true;
}

static void
errlist_add(rd_errlist *errs, char *msg)
{
	if (errs->hold)
		errs->hold(errs);
	if (errs->fwd) {
		errlist_add(errs->fwd, msg);
		return;
	}
	if (!msg) {
		errs->dropped++;
		return;
	}
	if (errs->echo)
		fprintf(errs->echo, "%s\n", msg);
	if (errs->n >= RD_ERRS_MAX ||
	    (errs->n == errs->cap && !errlist_grow(errs))) {
		errs->dropped++;
		free(msg);
		return;
	}
	errs->msgs[errs->n++] = msg;
}

void
rd_errlist_add(rd_errlist *errs, char *msg)
{
	if (errs)
		errlist_add(errs, msg);
	else
		free(msg);
}

static char *
vformat(const char *prefix, const char *fmt, va_list ap)
{
	char *what = NULL, *msg = NULL;

	if (vasprintf(&what, fmt, ap) < 0)
		return NULL;
	if (asprintf(&msg, "%s%s", prefix, what) < 0)
		msg = NULL;
	free(what);
	return msg;
}

void
rd_report(rd_errlist *errs, const char *name, uint64_t off, const char *fmt,
          ...)
{
	char *prefix = NULL;
	va_list ap;

	if (!errs)
		return;
	if (asprintf(&prefix, "%s: offset %llu: ", name,
	             (unsigned long long)off) < 0) {
		errs->dropped++;
		return;
	}
	va_start(ap, fmt);
	errlist_add(errs, vformat(prefix, fmt, ap));
	va_end(ap);
	free(prefix);
}

void
rd_report_file(rd_errlist *errs, const char *name, const char *fmt, ...)
{
	char *prefix = NULL;
	va_list ap;

	if (!errs)
		return;
	if (asprintf(&prefix, "%s: ", name) < 0) {
		errs->dropped++;
		return;
	}
	va_start(ap, fmt);
	errlist_add(errs, vformat(prefix, fmt, ap));
	va_end(ap);
	free(prefix);
}

void
rd_problem(rd_errlist *errs, const char *fmt, ...)
{
	va_list ap;

	if (!errs)
		return;
	va_start(ap, fmt);
	errlist_add(errs, vformat("", fmt, ap));
	va_end(ap);
}

char *
rd_strndup(const unsigned char *p, size_t len)
{
	const void *nul = memchr(p, 0, len);
	char *s;

	if (nul)
		len = (size_t)((const unsigned char *)nul - p);
	s = malloc(len + 1);
	if (!s)
		return NULL;
	memcpy(s, p, len);
	s[len] = '\0';
	return s;
}

/* ---- Byte sources ---------------------------------------------------- */

void
rd_set_window(size_t bytes)
{
	if (bytes < RD_WINDOW_MIN)
		bytes = RD_WINDOW_MIN;
	if (bytes > RD_WINDOW_MAX)
		bytes = RD_WINDOW_MAX;
	rd_window = bytes;
}

dw_err
rd_src_mem(rd_src *s, const char *name, const void *buf, size_t len)
{
	memset(s, 0, sizeof *s);
	s->fd = -1;
	s->name = strdup(name);
	if (!s->name)
		return DW_ENOMEM;
	s->mem = buf;
	s->size = buf ? len : 0;
	return DW_OK;
}

static dw_err
src_stat(rd_src *s, rd_errlist *errs)
{
	struct stat st;

	if (fstat(s->fd, &st) < 0) {
		rd_report_file(errs, s->name, "%s", strerror(errno));
		return dw_err_from_errno(errno);
	}
	if (!S_ISREG(st.st_mode)) {
		rd_report_file(errs, s->name, "not a regular file");
		return DW_EFORMAT;
	}
	s->size = (uint64_t)st.st_size;
	return DW_OK;
}

dw_err
rd_src_open(rd_src *s, const char *path, size_t minwin, rd_errlist *errs)
{
	dw_err err;

	memset(s, 0, sizeof *s);
	s->fd = -1;
	s->name = strdup(path);
	if (!s->name)
		return DW_ENOMEM;
	/* never through a link planted in a trace directory; O_NONBLOCK
	 * so a planted FIFO cannot hang us (src_stat refuses it) */
	s->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (s->fd < 0) {
		int e = errno;
		err = dw_err_from_errno(e);
		if (e == ELOOP)
			rd_report_file(errs, path,
			               "is a symbolic link: refused (trace "
			               "files are never read through links)");
		else
			rd_report_file(errs, path, "cannot open: %s",
			               strerror(e));
		return err;
	}
	err = src_stat(s, errs);
	if (err != DW_OK)
		return err;
	s->wcap = rd_window > minwin ? rd_window : minwin;
	return DW_OK;
}

void
rd_src_close(rd_src *s)
{
	if (s->fd >= 0)
		close(s->fd);
	free(s->win);
	free(s->name);
	memset(s, 0, sizeof *s);
	s->fd = -1;
}

/* Reads exactly len bytes at off into dst, or reports why not. */
static bool
src_pread(rd_src *s, uint64_t off, unsigned char *dst, size_t len,
          rd_errlist *errs)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r =
		    pread(s->fd, dst + done, len - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rd_report(errs, s->name, off + done, "read failed: %s",
			          r < 0 ? strerror(errno) : "the file shrank");
			s->failed = true;
			return false;
		}
		done += (size_t)r;
	}
	return true;
}

const unsigned char *
rd_src_get(rd_src *s, uint64_t off, size_t len, rd_errlist *errs)
{
	size_t n;

	if (s->failed || len > s->size || off > s->size - len)
		return NULL;
	if (s->fd < 0)
		return s->mem + off;
	if (off >= s->woff && off - s->woff <= s->wlen &&
	    len <= s->wlen - (off - s->woff))
		return s->win + (off - s->woff);
	if (len > s->wcap) {
		rd_report(errs, s->name, off,
		          "internal: %zu bytes exceed the read window", len);
		return NULL;
	}
	if (!s->win && !(s->win = malloc(s->wcap))) {
		rd_report(errs, s->name, off,
		          "out of memory for the read window");
		s->failed = true;
		return NULL;
	}
	n = s->size - off < s->wcap ? (size_t)(s->size - off) : s->wcap;
	s->wlen = 0;
	if (!src_pread(s, off, s->win, n, errs))
		return NULL;
	s->woff = off;
	s->wlen = n;
	return s->win;
}

/* Copies up to len bytes at off into dst; returns how many there were. */
static size_t
src_copy(rd_src *s, uint64_t off, unsigned char *dst, size_t len,
         rd_errlist *errs)
{
	if (off >= s->size)
		return 0;
	if (len > s->size - off)
		len = (size_t)(s->size - off);
	if (s->fd < 0) {
		memcpy(dst, s->mem + off, len);
		return len;
	}
	return src_pread(s, off, dst, len, errs) ? len : 0;
}

/* ---- File header ----------------------------------------------------- */

static dw_err
hdr_magic(const char *name, const unsigned char *p, size_t len,
          rd_errlist *errs, uint32_t *kind)
{
	if (len == 0) {
		rd_report(errs, name, 0, "empty file, not a trace file");
		return DW_EFORMAT;
	}
	if (len < 8 && (memcmp(p, FMT_MAGIC_PROCESS, len) == 0 ||
	                memcmp(p, FMT_MAGIC_THREAD, len) == 0)) {
		rd_report(errs, name, len, "file ends inside the header");
		return DW_EFORMAT;
	}
	if (len >= 8 && memcmp(p, FMT_MAGIC_PROCESS, 8) == 0)
		*kind = FMT_FILE_PROCESS;
	else if (len >= 8 && memcmp(p, FMT_MAGIC_THREAD, 8) == 0)
		*kind = FMT_FILE_THREAD;
	else {
		rd_report(errs, name, 0, "not a dwork trace file (bad magic)");
		return DW_EFORMAT;
	}
	return DW_OK;
}

static dw_err
hdr_version(const char *name, const unsigned char *p, size_t len,
            rd_errlist *errs)
{
	unsigned major, minor;

	if (len < FMT_H_SIZE) {
		rd_report(errs, name, len, "file ends inside the header");
		return DW_EFORMAT;
	}
	major = fmt_get_u16(p + FMT_H_VMAJOR);
	minor = fmt_get_u16(p + FMT_H_VMINOR);
	if (major > FMT_VERSION_MAJOR) {
		rd_report(errs, name, FMT_H_VMAJOR,
		          "trace format version %u.%u is newer than this "
		          "reader (%u.x)",
		          major, minor, FMT_VERSION_MAJOR);
		return DW_EVERSION;
	}
	if (major < FMT_VERSION_MAJOR) {
		rd_report(errs, name, FMT_H_VMAJOR,
		          "trace format version %u.%u is not supported (this "
		          "reader reads %u.x)",
		          major, minor, FMT_VERSION_MAJOR);
		return DW_EVERSION;
	}
	return DW_OK;
}

static dw_err
hdr_size(const char *name, const unsigned char *p, size_t len, rd_errlist *errs)
{
	uint32_t size;

	if (len < FMT_H_SIZE + 4) {
		rd_report(errs, name, len, "file ends inside the header");
		return DW_EFORMAT;
	}
	size = fmt_get_u32(p + FMT_H_SIZE);
	if (size < FMT_H_END_1_0 || size > FMT_HEADER_PAGE) {
		rd_report(errs, name, FMT_H_SIZE,
		          "header size %u is not in [%u, %u]", size,
		          FMT_H_END_1_0, FMT_HEADER_PAGE);
		return DW_EFORMAT;
	}
	if (len < size) {
		rd_report(errs, name, len,
		          "file ends inside the header (%u bytes defined)",
		          size);
		return DW_EFORMAT;
	}
	return DW_OK;
}

static void
hdr_string(char *dst, const unsigned char *p)
{
	memcpy(dst, p, 64);
	dst[64] = '\0';
}

static void
hdr_fields(const unsigned char *p, rd_header *h)
{
	h->vmajor = fmt_get_u16(p + FMT_H_VMAJOR);
	h->vminor = fmt_get_u16(p + FMT_H_VMINOR);
	h->size = fmt_get_u32(p + FMT_H_SIZE);
	h->kind = fmt_get_u32(p + FMT_H_KIND);
	h->uid = fmt_get_u64(p + FMT_H_UID);
	h->pid = fmt_get_u32(p + FMT_H_PID);
	h->ppid = fmt_get_u32(p + FMT_H_PPID);
	h->task = fmt_get_u32(p + FMT_H_TASK);
	h->ntasks = fmt_get_u32(p + FMT_H_NTASKS);
	h->thread = fmt_get_u32(p + FMT_H_THREAD);
	h->nthreads = fmt_get_u32(p + FMT_H_NTHREADS);
	h->clock = fmt_get_u32(p + FMT_H_CLOCK);
	h->flags = fmt_get_u32(p + FMT_H_FLAGS);
	h->init_ticks = fmt_get_u64(p + FMT_H_INIT_TICKS);
	h->init_ns = fmt_get_u64(p + FMT_H_INIT_NS);
	h->init_real_ns = fmt_get_u64(p + FMT_H_INIT_REAL_NS);
	h->ticks_per_s = fmt_get_u64(p + FMT_H_TICKS_PER_S);
	h->segment_size = fmt_get_u64(p + FMT_H_SEGMENT_SIZE);
	h->end_ticks = fmt_get_u64(p + FMT_H_END_TICKS);
	h->end_ns = fmt_get_u64(p + FMT_H_END_NS);
	h->lost_disk = fmt_get_u64(p + FMT_H_LOST_DISK);
	h->lost_cap = fmt_get_u64(p + FMT_H_LOST_CAP);
	h->seg_reused = fmt_get_u64(p + FMT_H_SEG_REUSED);
	h->records = fmt_get_u64(p + FMT_H_RECORDS);
	hdr_string(h->host, p + FMT_H_HOST);
	hdr_string(h->program, p + FMT_H_PROGRAM);
	if (h->size >= FMT_H_BOOT_ID + 40) { /* 1.1 */
		memcpy(h->boot_id, p + FMT_H_BOOT_ID, 40);
		h->boot_id[40] = '\0';
	}
}

/* Task and thread ids within the limits every consumer relies on. */
static dw_err
hdr_ids(const char *name, rd_errlist *errs, const rd_header *h)
{
	const char *what = NULL;
	uint32_t v = 0, max = 0, off = 0;

	if (h->task >= RD_TASK_MAX)
		what = "task id", v = h->task, max = RD_TASK_MAX - 1,
		off = FMT_H_TASK;
	else if (h->ntasks > RD_TASK_MAX)
		what = "task count", v = h->ntasks, max = RD_TASK_MAX,
		off = FMT_H_NTASKS;
	else if (h->thread >= RD_THREAD_MAX)
		what = "thread id", v = h->thread, max = RD_THREAD_MAX - 1,
		off = FMT_H_THREAD;
	else if (h->nthreads > RD_THREAD_MAX)
		what = "thread count", v = h->nthreads, max = RD_THREAD_MAX,
		off = FMT_H_NTHREADS;
	if (!what)
		return DW_OK;
	rd_report(errs, name, off,
	          "%s %u is out of range (at most %u); file "
	          "refused",
	          what, v, max);
	return DW_EFORMAT;
}

static dw_err
hdr_check(const char *name, uint32_t magic_kind, rd_errlist *errs,
          const unsigned char *p, rd_header *h)
{
	uint32_t bom = fmt_get_u32(p + FMT_H_BOM);

	if (bom != FMT_BOM && bom != __builtin_bswap32(FMT_BOM)) {
		rd_report(errs, name, FMT_H_BOM, "bad byte-order mark 0x%08x",
		          bom);
		return DW_EFORMAT;
	}
	h->swapped = bom != FMT_BOM;
	if (h->kind != magic_kind) {
		rd_report(errs, name, FMT_H_KIND,
		          "file kind %u does not match the magic", h->kind);
		return DW_EFORMAT;
	}
	if (h->clock != FMT_CLOCK_TSC && h->clock != FMT_CLOCK_MONO_RAW) {
		rd_report(errs, name, FMT_H_CLOCK, "unknown clock kind %u",
		          h->clock);
		return DW_EFORMAT;
	}
	return hdr_ids(name, errs, h);
}

dw_err
rd_header_parse(const char *name, const void *buf, size_t len, rd_errlist *errs,
                rd_header *out)
{
	const unsigned char *p = buf;
	uint32_t kind = 0;
	dw_err err;

	memset(out, 0, sizeof *out);
	if (!p)
		len = 0;
	err = hdr_magic(name, p, len, errs, &kind);
	if (err == DW_OK)
		err = hdr_version(name, p, len, errs);
	if (err == DW_OK)
		err = hdr_size(name, p, len, errs);
	if (err != DW_OK)
		return err;
	hdr_fields(p, out);
	return hdr_check(name, kind, errs, p, out);
}

dw_err
rd_src_header(rd_src *s, uint32_t wanted, rd_errlist *errs, rd_header *out)
{
	unsigned char page[FMT_HEADER_PAGE];
	size_t n = src_copy(s, 0, page, sizeof page, errs);
	dw_err err;

	if (s->failed)
		return DW_EIO;
	err = rd_header_parse(s->name, page, n, errs, out);
	if (err != DW_OK)
		return err;
	if (wanted && out->kind != wanted) {
		rd_report(errs, s->name, FMT_H_MAGIC,
		          "a %s file, not a %s file",
		          out->kind == FMT_FILE_PROCESS ? "process" : "thread",
		          wanted == FMT_FILE_PROCESS ? "process" : "thread");
		return DW_EFORMAT;
	}
	return DW_OK;
}

dw_err
rd_header_read(const char *path, rd_errlist *errs, rd_header *out)
{
	rd_src s;
	dw_err err = rd_src_open(&s, path, RD_WINDOW_MIN, errs);

	if (err == DW_OK)
		err = rd_src_header(&s, 0, errs, out);
	rd_src_close(&s);
	return err;
}
