/* The process file: header, label records, module map. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "trace/clock.h"
#include "trace/tracer.h"

static void
lbl_put_str(unsigned char *p, const char *s, size_t n)
{
	size_t l = strnlen(s, n - 1);
	memset(p, 0, n);
	memcpy(p, s, l);
}

/* Fills a header page but for its identity and magic: the file is not
 * valid yet. */
void
lbl_fill_header(unsigned char *h, int kind)
{
	fmt_put_u16(h + FMT_H_VMAJOR, FMT_VERSION_MAJOR);
	fmt_put_u16(h + FMT_H_VMINOR, FMT_VERSION_MINOR);
	fmt_put_u32(h + FMT_H_SIZE, FMT_H_END);
	uint32_t bom = FMT_BOM;
	memcpy(h + FMT_H_BOM, &bom, 4);
	fmt_put_u32(h + FMT_H_KIND, (uint32_t)kind);
	fmt_put_u64(h + FMT_H_UID, trc.uid);
	fmt_put_u32(h + FMT_H_PID, (uint32_t)trc.pid);
	fmt_put_u32(h + FMT_H_PPID, (uint32_t)getppid());
	fmt_put_u32(h + FMT_H_CLOCK,
	            clk_use_tsc ? FMT_CLOCK_TSC : FMT_CLOCK_MONO_RAW);
	fmt_put_u32(h + FMT_H_FLAGS,
	            (trc.cfg.circular ? FMT_FLAG_CIRCULAR : 0) |
	                (clk_skewed ? FMT_FLAG_OWN_CLOCK : 0));
	fmt_put_u64(h + FMT_H_INIT_TICKS, trc.init_ticks);
	fmt_put_u64(h + FMT_H_INIT_NS, trc.init_ns);
	fmt_put_u64(h + FMT_H_INIT_REAL_NS, trc.init_real_ns);
	fmt_put_u64(h + FMT_H_TICKS_PER_S, clk_ticks_per_s());
	fmt_put_u64(h + FMT_H_SEGMENT_SIZE, trc.cfg.segment_size);
	lbl_put_str(h + FMT_H_HOST, trc.host, 64);
	lbl_put_str(h + FMT_H_PROGRAM, trc.program, 64);
	lbl_put_str(h + FMT_H_BOOT_ID, trc.boot_id, 40);
}

void
lbl_header_ids(unsigned char *h, uint32_t thread)
{
	fmt_put_u32(h + FMT_H_TASK, trc.task);
	fmt_put_u32(h + FMT_H_NTASKS, trc.ntasks);
	fmt_put_u32(h + FMT_H_THREAD, thread);
	fmt_put_u32(h + FMT_H_NTHREADS, trc.nthreads);
}

/* The magic goes last, so a half-made header is not taken for a valid
 * one. */
void
lbl_seal_header(unsigned char *h, int kind)
{
	uint64_t magic;
	memcpy(&magic,
	       kind == FMT_FILE_PROCESS ? FMT_MAGIC_PROCESS : FMT_MAGIC_THREAD,
	       8);
	__atomic_store_n((uint64_t *)h, magic, __ATOMIC_RELEASE);
}

void
lbl_put_header(unsigned char *h, int kind, uint32_t thread)
{
	lbl_fill_header(h, kind);
	lbl_header_ids(h, thread);
	lbl_seal_header(h, kind);
}

/* Appends one TLV to the process file in a single write. */
int
lbl_write(uint32_t kind, const void *payload, uint32_t len)
{
	if (trc.pfd < 0)
		return DW_ESTATE;
	if (len > FMT_TLV_MAX)
		return DW_ETOOBIG;
	size_t total = 8 + ((len + 7u) & ~7u);
	unsigned char stackbuf[512], *p = stackbuf;
	if (total > sizeof stackbuf && !(p = malloc(total)))
		return DW_ENOMEM;
	memset(p, 0, total);
	fmt_put_u32(p, kind);
	fmt_put_u32(p + 4, len);
	if (len)
		memcpy(p + 8, payload, len);
	ssize_t w = pwrite(trc.pfd, p, total, (off_t)trc.poff);
	int err = w == (ssize_t)total
	              ? DW_OK
	              : (w < 0 ? dw_err_from_errno(errno) : DW_ENOSPC);
	if (err == DW_OK)
		trc.poff += total;
	if (p != stackbuf)
		free(p);
	return err;
}

/* Keeps a label in memory (a new process file after fork gets them all)
 * and writes it. */
int
lbl_add(uint32_t kind, const void *payload, uint32_t len)
{
	if (len > FMT_TLV_MAX)
		return DW_ETOOBIG;
	struct label *l = malloc(sizeof *l + len);
	if (!l)
		return DW_ENOMEM;
	l->kind = kind;
	l->len = len;
	l->next = NULL;
	memcpy(l->data, payload, len);
	*trc.labels_tail = l;
	trc.labels_tail = &l->next;
	return trc.pfd >= 0 ? lbl_write(kind, payload, len) : DW_OK;
}

void
lbl_free_all(void)
{
	struct label *l = trc.labels, *n;
	for (; l; l = n) {
		n = l->next;
		free(l);
	}
	trc.labels = NULL;
	trc.labels_tail = &trc.labels;
}

/* Records the executable file mappings, so that function addresses can be
 * named later even if the process was killed. */
void
lbl_write_modules(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[PATH_MAX + 128], perm[8], path[PATH_MAX];
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		uint64_t lo, hi, off;
		path[0] = 0;
		if (sscanf(line,
		           "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64
		           " %*s %*s %4095[^\n]",
		           &lo, &hi, perm, &off, path) < 4)
			continue;
		if (perm[2] != 'x' || path[0] != '/')
			continue;
		size_t n = strlen(path);
		unsigned char pl[24 + PATH_MAX];
		fmt_put_u64(pl, lo);
		fmt_put_u64(pl + 8, hi);
		fmt_put_u64(pl + 16, off);
		memcpy(pl + 24, path, n);
		lbl_write(FMT_L_MODULE, pl, (uint32_t)(24 + n));
	}
	fclose(f);
}

/* Creates this process's file: header page, then every label so far and
 * the module map. */
int
lbl_pfile_create(void)
{
	char path[PATH_MAX + 8];
	snprintf(path, sizeof path, "%s.dwp", trc.prefix);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	              0644);
	if (fd < 0)
		return dw_err_from_errno(errno);
	int e = posix_fallocate(fd, 0, FMT_HEADER_PAGE);
	unsigned char *h = e ? MAP_FAILED
	                     : mmap(NULL, FMT_HEADER_PAGE,
	                            PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED) {
		e = e ? e : errno;
		close(fd);
		unlink(path);
		return dw_err_from_errno(e);
	}
	trc.pfd = fd;
	trc.phdr = h;
	trc.poff = FMT_HEADER_PAGE;
	trc.need_pfile = 0;
	lbl_put_header(h, FMT_FILE_PROCESS, 0);
	for (struct label *l = trc.labels; l; l = l->next)
		lbl_write(l->kind, l->data, l->len);
	lbl_write_modules();
	return DW_OK;
}

static void
lbl_put_identity(unsigned char *h)
{
	if (!h)
		return;
	fmt_put_u32(h + FMT_H_TASK, trc.task);
	fmt_put_u32(h + FMT_H_NTASKS, trc.ntasks);
	fmt_put_u32(h + FMT_H_NTHREADS, trc.nthreads);
}

/* Writes the current identity into every header and, as a record, into
 * the process file. */
void
lbl_pfile_identity(int changed)
{
	lbl_put_identity(trc.phdr);
	for (struct buf *b = trc.bufs; b; b = b->next)
		if (b->gen == trc.gen)
			lbl_put_identity(b->hdr);
	if (!changed)
		return;
	unsigned char pl[16];
	fmt_put_u64(pl, clk_ticks());
	fmt_put_u32(pl + 8, trc.task);
	fmt_put_u32(pl + 12, trc.ntasks);
	lbl_write(FMT_L_IDENTITY, pl, sizeof pl);
}
