/*
 * Synthetic trace files for the merge tests and benchmark: process and
 * thread files written byte by byte with the format.h helpers, as
 * docs/trace-format.md specifies them (not by the tracer), so tests can
 * build any clock, any timing and any damage.
 *
 *	ms_proc p;
 *	ms_proc_init(&p, dir, 0x1234, 100, 0);  // uid, pid, task
 *	ms_thread t;
 *	ms_thread_open(&t, &p, 0);
 *	ms_push(&t, 1000, 1);
 *	ms_pop(&t, 2000);
 *	ms_thread_close(&t);
 *	ms_proc_close(&p);
 *
 * Times are the process's ticks; with the default clock (kind 2) ticks
 * are nanoseconds.  Records of a thread must come in time order (except
 * through ms_segment, which tests use to break that on purpose).
 */
#ifndef DW_TESTS_MERGE_SYNTH_H
#define DW_TESTS_MERGE_SYNTH_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/format.h"

typedef struct ms_proc {
	char dir[1024];
	uint64_t uid;
	uint32_t pid, task, ntasks, nthreads;
	uint16_t vmajor;      /* 1; tests set 2 for "newer version" */
	uint32_t clock;       /* FMT_CLOCK_MONO_RAW (default) or TSC */
	uint64_t ticks_per_s; /* TSC: ns = init_ns + (t - init) * 1e9 / tps */
	uint64_t init_ticks, init_ns, init_real_ns;
	bool ended;
	uint64_t end_ticks;
	uint64_t seg_size;
	char host[64], program[64];
	unsigned char *tlv; /* label records, written at close */
	size_t ntlv, captlv;
} ms_proc;

typedef struct ms_thread {
	ms_proc *p;
	uint32_t tid;
	int fd;
	unsigned char *seg; /* the segment being filled */
	uint64_t pos;       /* next slot offset in seg */
	uint64_t k;         /* segments written so far */
	uint64_t now;       /* time the next delta counts from */
	bool open;
	uint64_t records;
} ms_thread;

static inline void
ms_die(const char *what)
{
	perror(what);
	exit(2);
}

/* ---- Process ------------------------------------------------------------ */

static inline void
ms_proc_init(ms_proc *p, const char *dir, uint64_t uid, uint32_t pid,
             uint32_t task)
{
	memset(p, 0, sizeof *p);
	snprintf(p->dir, sizeof p->dir, "%s", dir);
	p->uid = uid;
	p->pid = pid;
	p->task = task;
	p->ntasks = task + 1;
	p->vmajor = FMT_VERSION_MAJOR;
	p->clock = FMT_CLOCK_MONO_RAW;
	p->ticks_per_s = 1000000000ull;
	p->init_real_ns = 1704164645000000000ull; /* 2024-01-02 03:04:05 UTC */
	p->seg_size = 64u << 10;
	snprintf(p->host, sizeof p->host, "node-a");
	snprintf(p->program, sizeof p->program, "gold");
}

/* Host ns of ticks under the process's clock model. */
static inline uint64_t
ms_ns(const ms_proc *p, uint64_t ticks)
{
	unsigned __int128 d;

	if (p->clock == FMT_CLOCK_MONO_RAW)
		return ticks;
	if (ticks >= p->init_ticks) {
		d = (unsigned __int128)(ticks - p->init_ticks) * 1000000000u;
		return p->init_ns +
		       (uint64_t)((d + p->ticks_per_s / 2) / p->ticks_per_s);
	}
	d = (unsigned __int128)(p->init_ticks - ticks) * 1000000000u;
	return p->init_ns -
	       (uint64_t)((d + p->ticks_per_s / 2) / p->ticks_per_s);
}

static inline void
ms_header(const ms_proc *p, unsigned char *h, uint32_t kind, uint32_t tid,
          uint64_t records)
{
	memset(h, 0, FMT_HEADER_PAGE);
	memcpy(h,
	       kind == FMT_FILE_PROCESS ? FMT_MAGIC_PROCESS : FMT_MAGIC_THREAD,
	       8);
	fmt_put_u16(h + FMT_H_VMAJOR, p->vmajor);
	fmt_put_u16(h + FMT_H_VMINOR, 0);
	fmt_put_u32(h + FMT_H_SIZE, FMT_H_END);
	fmt_put_u32(h + FMT_H_BOM, FMT_BOM);
	fmt_put_u32(h + FMT_H_KIND, kind);
	fmt_put_u64(h + FMT_H_UID, p->uid);
	fmt_put_u32(h + FMT_H_PID, p->pid);
	fmt_put_u32(h + FMT_H_PPID, 1);
	fmt_put_u32(h + FMT_H_TASK, p->task);
	fmt_put_u32(h + FMT_H_NTASKS, p->ntasks);
	fmt_put_u32(h + FMT_H_THREAD, tid);
	fmt_put_u32(h + FMT_H_NTHREADS, p->nthreads);
	fmt_put_u32(h + FMT_H_CLOCK, p->clock);
	fmt_put_u32(h + FMT_H_FLAGS, p->ended ? FMT_FLAG_ENDED : 0);
	fmt_put_u64(h + FMT_H_INIT_TICKS, p->init_ticks);
	fmt_put_u64(h + FMT_H_INIT_NS, p->init_ns);
	fmt_put_u64(h + FMT_H_INIT_REAL_NS, p->init_real_ns);
	fmt_put_u64(h + FMT_H_TICKS_PER_S, p->ticks_per_s);
	fmt_put_u64(h + FMT_H_SEGMENT_SIZE, p->seg_size);
	if (p->ended) {
		fmt_put_u64(h + FMT_H_END_TICKS, p->end_ticks);
		fmt_put_u64(h + FMT_H_END_NS, ms_ns(p, p->end_ticks));
	}
	fmt_put_u64(h + FMT_H_RECORDS, records);
	memcpy(h + FMT_H_HOST, p->host, strnlen(p->host, 63));
	memcpy(h + FMT_H_PROGRAM, p->program, strnlen(p->program, 63));
}

static inline void
ms_path(const ms_proc *p, char *buf, size_t len, int tid)
{
	if (tid < 0)
		snprintf(buf, len, "%s/%s.%u.%016llx.dwp", p->dir, p->program,
		         p->pid, (unsigned long long)p->uid);
	else
		snprintf(buf, len, "%s/%s.%u.%016llx.%d.dwt", p->dir,
		         p->program, p->pid, (unsigned long long)p->uid, tid);
}

/* Appends a label record: kind, then a fixed part and a name. */
static inline void
ms_tlv(ms_proc *p, uint32_t kind, const void *fixed, size_t nfixed,
       const char *name)
{
	size_t nname = name ? strlen(name) : 0, len = nfixed + nname;
	size_t need = 8 + ((len + 7) & ~(size_t)7);

	if (p->ntlv + need > p->captlv) {
		p->captlv = (p->ntlv + need) * 2;
		p->tlv = realloc(p->tlv, p->captlv);
		if (!p->tlv)
			ms_die("realloc");
	}
	memset(p->tlv + p->ntlv, 0, need);
	fmt_put_u32(p->tlv + p->ntlv, kind);
	fmt_put_u32(p->tlv + p->ntlv + 4, (uint32_t)len);
	memcpy(p->tlv + p->ntlv + 8, fixed, nfixed);
	if (nname)
		memcpy(p->tlv + p->ntlv + 8 + nfixed, name, nname);
	p->ntlv += need;
}

static inline void
ms_label_type(ms_proc *p, uint32_t type, const char *name)
{
	unsigned char f[8] = {0};

	fmt_put_u32(f, type);
	ms_tlv(p, FMT_L_TYPE, f, 8, name);
}

static inline void
ms_label_value(ms_proc *p, uint32_t type, uint64_t value, const char *name)
{
	unsigned char f[16] = {0};

	fmt_put_u32(f, type);
	fmt_put_u64(f + 8, value);
	ms_tlv(p, FMT_L_VALUE, f, 16, name);
}

static inline void
ms_label_state(ms_proc *p, uint32_t state, uint32_t rgb, const char *name)
{
	unsigned char f[8];

	fmt_put_u32(f, state);
	fmt_put_u32(f + 4, rgb);
	ms_tlv(p, FMT_L_STATE, f, 8, name);
}

static inline void
ms_label_func(ms_proc *p, uint64_t addr, const char *name)
{
	unsigned char f[8];

	fmt_put_u64(f, addr);
	ms_tlv(p, FMT_L_FUNC, f, 8, name);
}

static inline void
ms_label_thread(ms_proc *p, uint32_t tid, const char *name)
{
	unsigned char f[8] = {0};

	fmt_put_u32(f, tid);
	ms_tlv(p, FMT_L_THREAD_NAME, f, 8, name);
}

/* Marks the process ended (dwt_fini ran) at ticks. */
static inline void
ms_proc_end(ms_proc *p, uint64_t ticks)
{
	unsigned char f[16];

	p->ended = true;
	p->end_ticks = ticks;
	fmt_put_u64(f, ticks);
	fmt_put_u64(f + 8, ms_ns(p, ticks));
	ms_tlv(p, FMT_L_END, f, 16, NULL);
}

static inline void
ms_write_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const unsigned char *b = buf;

	while (len) {
		ssize_t r = pwrite(fd, b, len, (off_t)off);

		if (r <= 0)
			ms_die("pwrite");
		b += r;
		len -= (size_t)r;
		off += (uint64_t)r;
	}
}

/* Writes the process file (header and labels). */
static inline void
ms_proc_close(ms_proc *p)
{
	unsigned char h[FMT_HEADER_PAGE];
	char path[1200];
	int fd;

	ms_path(p, path, sizeof path, -1);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		ms_die(path);
	ms_header(p, h, FMT_FILE_PROCESS, 0, 0);
	ms_write_all(fd, h, sizeof h, 0);
	if (p->ntlv)
		ms_write_all(fd, p->tlv, p->ntlv, FMT_HEADER_PAGE);
	close(fd);
	free(p->tlv);
	p->tlv = NULL;
	p->ntlv = p->captlv = 0;
}

/* ---- Thread ---------------------------------------------------------------
 */

static inline void
ms_thread_open(ms_thread *t, ms_proc *p, uint32_t tid)
{
	char path[1200];

	memset(t, 0, sizeof *t);
	t->p = p;
	t->tid = tid;
	if (tid + 1 > p->nthreads)
		p->nthreads = tid + 1;
	ms_path(p, path, sizeof path, (int)tid);
	t->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (t->fd < 0)
		ms_die(path);
	t->seg = calloc(1, p->seg_size);
	if (!t->seg)
		ms_die("calloc");
}

static inline void
ms_flush_segment(ms_thread *t)
{
	if (!t->open)
		return;
	ms_write_all(t->fd, t->seg, t->p->seg_size,
	             FMT_HEADER_PAGE + t->k * t->p->seg_size);
	t->k++;
	t->open = false;
}

/* Starts a new segment whose time base is ticks (any time: tests use it
 * to make a stream go back). */
static inline void
ms_segment(ms_thread *t, uint64_t ticks)
{
	ms_flush_segment(t);
	memset(t->seg, 0, t->p->seg_size);
	fmt_put_u32(t->seg + FMT_S_MAGIC, FMT_SEG_MAGIC);
	fmt_put_u32(t->seg + FMT_S_SIZE, FMT_S_END);
	fmt_put_u64(t->seg + FMT_S_SEQ, t->k + 1);
	fmt_put_u64(t->seg + FMT_S_TICKS, ticks);
	fmt_put_u64(t->seg + FMT_S_NS, ms_ns(t->p, ticks));
	fmt_put_u32(t->seg + FMT_S_THREAD, t->tid);
	t->pos = FMT_S_END;
	t->now = ticks;
	t->open = true;
}

static inline void
ms_slot(ms_thread *t, uint32_t kind, uint32_t low, uint32_t a, uint64_t b)
{
	unsigned char *s = t->seg + t->pos;

	fmt_put_u32(s, kind << FMT_KIND_SHIFT | low);
	fmt_put_u32(s + 4, a);
	fmt_put_u64(s + 8, b);
	t->pos += FMT_REC_SIZE;
}

/* Room for a record of nslots at ticks: a new segment or a NEWBASE. */
static inline uint32_t
ms_room(ms_thread *t, uint64_t ticks, unsigned nslots)
{
	uint64_t left = t->open ? t->p->seg_size - t->pos : 0;
	bool far = t->open && ticks - t->now >= FMT_DELTA_LIMIT;

	if (!t->open || left < (nslots + far) * FMT_REC_SIZE)
		ms_segment(t, ticks);
	else if (far) {
		ms_slot(t, FMT_R_NEWBASE, 0, 0, ticks);
		t->now = ticks;
	}
	return (uint32_t)(ticks - t->now);
}

static inline void
ms_rec1(ms_thread *t, uint64_t ticks, uint32_t kind, uint32_t a, uint64_t b)
{
	uint32_t d = ms_room(t, ticks, 1);

	ms_slot(t, kind, d, a, b);
	t->now = ticks;
	t->records++;
}

static inline void
ms_rec2(ms_thread *t, uint64_t ticks, uint32_t kind, uint32_t a, uint64_t b,
        uint32_t low1, uint32_t a1, uint64_t b1)
{
	uint32_t d = ms_room(t, ticks, 2);

	ms_slot(t, kind, d, a, b);
	ms_slot(t, FMT_R_CONT, low1, a1, b1);
	t->now = ticks;
	t->records++;
}

static inline void
ms_event(ms_thread *t, uint64_t ticks, uint32_t type, uint64_t value)
{
	ms_rec1(t, ticks, FMT_R_EVENT, type, value);
}

static inline void
ms_push(ms_thread *t, uint64_t ticks, uint32_t state)
{
	ms_rec1(t, ticks, FMT_R_STATE_PUSH, state, 0);
}

static inline void
ms_pop(ms_thread *t, uint64_t ticks)
{
	ms_rec1(t, ticks, FMT_R_STATE_POP, 0, 0);
}

static inline void
ms_enter(ms_thread *t, uint64_t ticks, uint64_t addr)
{
	ms_rec1(t, ticks, FMT_R_FUNC_ENTER, 0, addr);
}

static inline void
ms_exit(ms_thread *t, uint64_t ticks, uint64_t addr)
{
	ms_rec1(t, ticks, FMT_R_FUNC_EXIT, 0, addr);
}

/* flags: bit 0 receive, bit 1 logical, bit 2 physical (as dwt_comm). */
static inline void
ms_comm(ms_thread *t, uint64_t ticks, unsigned flags, uint32_t partner,
        uint32_t tag, uint64_t size, uint64_t id)
{
	ms_rec2(t, ticks, FMT_R_COMM, tag, id,
	        (flags & 7u) | FMT_COMM_THREAD_ANY << FMT_COMM_THREAD_SHIFT,
	        partner, size);
}

/* At local ns `local` the reference task read local + offset. */
static inline void
ms_sync(ms_thread *t, uint64_t ticks, uint32_t ref, uint64_t local,
        int64_t offset, uint32_t rtt)
{
	ms_rec2(t, ticks, FMT_R_SYNC, ref, local, 0, rtt, (uint64_t)offset);
}

/* Writes the last segment and the header; closes the file. */
static inline void
ms_thread_close(ms_thread *t)
{
	unsigned char h[FMT_HEADER_PAGE];

	ms_flush_segment(t);
	ms_header(t->p, h, FMT_FILE_THREAD, t->tid, t->records);
	ms_write_all(t->fd, h, sizeof h, 0);
	close(t->fd);
	free(t->seg);
	t->seg = NULL;
}

#endif
