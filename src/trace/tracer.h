/* Tracer internals shared by the files of src/trace. */
#ifndef DW_TRACE_TRACER_H
#define DW_TRACE_TRACER_H

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include <dwork/trace.h>

#include "common/format.h"

/* A set of function addresses (open addressing; 0 marks a free slot). */
struct addrset {
	uint64_t *v;
	size_t n, cap;
};

#define BUF_FNCACHE 64 /* addresses a thread remembers without the lock */
#define BUF_OLD     16 /* full segments a thread leaves for the helper */

/*
 * One thread's buffer.  The first four fields are the hot path's; only
 * the owning thread writes them (dwt_fini may set end to stop it).
 */
struct buf {
	unsigned char *pos; /* next free slot */
	unsigned char *end; /* end of the current segment's slots */
	uint64_t last;      /* ticks of the last record */
	uint64_t nrec;      /* records stored */

	uint64_t gen;       /* tracing session it belongs to */
	uint32_t thread;    /* trace thread id */
	int fd;             /* thread file, -1 when it could not be made */
	unsigned char *hdr; /* mapped header page, NULL without file */
	unsigned char *seg; /* mapped current segment, NULL when none */
	uint64_t seq;       /* sequence number of the current segment */
	uint64_t nseg;      /* segments allocated in the file */
	uint64_t cur;       /* index of the current segment in the file */
	uint64_t lost_disk; /* records lost: disk full */
	uint64_t lost_cap;  /* records lost: size cap */
	uint64_t reused;    /* segments overwritten */
	uint64_t retry_at;  /* lost count at which to retry allocating */
	int fail_err;       /* why the last allocation failed */
	int exited;         /* its thread has exited */
	uint64_t reg_ticks, reg_ns;    /* calibration pair at registration, for
	                                  its first segment (0 once used) */
	uint64_t fncache[BUF_FNCACHE]; /* recently seen function addresses */
	unsigned char *fe_pos; /* instrumented entry that may be taken back */
	uint64_t fe_last;      /* the time base before it */
	struct addrset fns;    /* every function address it saw */
	/* The current segment's low-water mark: end stops there first, and
	 * the record that reaches it asks for the next segment; NULL once
	 * passed. */
	unsigned char *lw;
	/* A reused segment (circular mode) is cleared a chunk at a time
	 * ahead of the records: how far it is; NULL once all of it is. */
	unsigned char *clear;
	/* prep.c: the next segment, prepared ahead.  spare is handed over
	 * with atomics (set by the helper, taken by the owner); the flags
	 * are prep_lock's, but spare_want (set by the owner, atomic) */
	unsigned char *spare; /* mapped (and being or) faulted in, or NULL */
	uint64_t spare_idx;   /* its index in the file */
	int spare_reuse;      /* it is an old one to reuse (circular) */
	uint64_t ring_at;     /* index of the segment given out last */
	int spare_want;       /* asked for */
	int spare_busy;       /* the helper is making it */
	int own_busy;         /* the owner is growing its file itself */
	int spare_failed;     /* do not prepare any more */
	/* the segment the helper faults in, a chunk at a time between its
	 * other jobs (prep_lock; NULL when none), and how far it got */
	unsigned char *fill;
	uint64_t fill_idx; /* its index in the file */
	uint64_t fill_off;
	void *old[BUF_OLD]; /* full segments for the helper to unmap */
	/* segment switches, by the owner only: a prepared segment taken
	 * (sw_swap), waited for (sw_wait), grown by the owner itself
	 * (sw_inline); full segments it unmapped itself */
	uint64_t sw_swap, sw_wait, sw_inline, unmap_inline;
	/* prep.c: a prepared file is named by the helper once its thread
	 * took it; the pair of the registration is written then (trc.lock,
	 * or at fini) */
	struct buf *name_next; /* in the list of files to name */
	int cal_pending;       /* cal_ticks, cal_ns not written yet */
	uint64_t cal_ticks, cal_ns;
	char path[PATH_MAX];
	struct buf *next;
};

/* Label records kept in memory, rewritten into a new process file. */
struct label {
	uint32_t kind;
	uint32_t len;
	struct label *next;
	unsigned char data[]; /* payload */
};

struct trc {
	pthread_mutex_t lock; /* registry, labels, process file, identity */
	int initialized;
	int active;   /* dwt_set_active */
	uint64_t gen; /* tracing session, bumped by init */
	dwt_config cfg;
	char dir[3808];
	char program[64];
	char host[64];
	char boot_id[40];  /* /proc/sys/kernel/random/boot_id */
	char prefix[3968]; /* dir/program.pid.uid */
	uint64_t uid;
	pid_t pid;
	int pfd;             /* process file, -1 when none */
	unsigned char *phdr; /* its mapped header page */
	uint64_t poff;       /* where the next label record goes */
	int need_pfile;      /* after fork: make the process file lazily */
	uint64_t init_ticks, init_ns, init_real_ns;
	uint32_t next_thread;
	uint32_t nthreads;
	uint32_t base_state; /* pushed by a thread's first record; 0 none */
	uint32_t task, ntasks;
	uint32_t (*task_fn)(void), (*ntasks_fn)(void);
	uint32_t (*thread_fn)(void), (*nthreads_fn)(void);
	uint64_t bytes; /* file bytes reserved by this process */
	uint64_t segments, segments_reused;
	struct buf *bufs;
	struct label *labels, **labels_tail;
};

extern struct trc trc;
extern pthread_key_t trc_key; /* marks a buffer whose thread exited */
/* initialized && enabled && active: the hot-path flag (exported, read by
 * the inline checks of trace.h) */
#define trc_on dwt_recording_
extern __thread struct buf *trc_self __attribute__((tls_model("initial-exec")));

/* buffer.c */
/* Slow path of a record of `need` bytes: registers the thread, starts a
 * segment, writes a NEWBASE.  Updates *tp and *now; returns where to
 * write, or NULL when the record is lost or tracing is off. */
unsigned char *buf_slow(struct buf **tp, uint64_t *now, unsigned need);
void buf_write_header_counts(struct buf *b);
void buf_finish(struct buf *b, uint64_t ticks, uint64_t ns, int trim);
/* Forgets every buffer without touching the files (fork child). */
void buf_drop_all(void);

/* labels.c (call with trc.lock held) */
int lbl_add(uint32_t kind, const void *payload, uint32_t len);
int lbl_write(uint32_t kind, const void *payload, uint32_t len);
int lbl_pfile_create(void);
void lbl_pfile_identity(int changed);
void lbl_write_modules(void);
void lbl_free_all(void);
void lbl_put_header(unsigned char *h, int kind, uint32_t thread);
/* lbl_put_header in steps, for a file prepared ahead: all but the
 * identity and the magic; the identity (task, thread, counts); the
 * magic, last. */
void lbl_fill_header(unsigned char *h, int kind);
void lbl_header_ids(unsigned char *h, uint32_t thread);
void lbl_seal_header(unsigned char *h, int kind);

/* prep.c: segments and thread files prepared ahead by a helper thread */
void prep_session(uint64_t gen); /* dwt_init: a new session */
/* At b's low-water mark: asks the helper for b's next segment (no lock;
 * wakes the helper). */
void prep_want_segment(struct buf *b);
/* b's prepared next segment and its index (a pointer swap; b->spare_reuse
 * says whether it is an old one to reuse), or NULL when
 * the helper fell behind: then the caller grows the file itself, at
 * prep_own_index(b), and calls prep_own_done(b) after.  Waits only with
 * a size cap, for a segment the helper is mapping. */
unsigned char *prep_take_segment(struct buf *b, uint64_t *idx);
uint64_t prep_own_index(struct buf *b);
/* Circular mode at the cap: the index of the oldest segment, reused by
 * the caller (while it grows its file itself, as above). */
uint64_t prep_own_reuse(struct buf *b);
void prep_own_done(struct buf *b);
/* After growing the file in-line failed: the segment the helper was
 * making for b meanwhile (it may hold the last room on the disk), once
 * it is mapped; NULL when it failed too or none was being made.  Waits,
 * but only on this failure path. */
unsigned char *prep_take_late(struct buf *b, uint64_t *idx);
/* A full segment of b, unmapped by the helper (no lock, no system call;
 * unmapped here when b's BUF_OLD slots are all taken). */
void prep_retire(struct buf *b, void *m);
/* Segment switches of this session's threads, summed (takes trc.lock):
 * for tests and benchmarks. */
struct prep_counts {
	uint64_t swaps;           /* a prepared segment taken */
	uint64_t waits;           /* waited for the helper (a size cap) */
	uint64_t grown_inline;    /* the helper was behind: grown in-line */
	uint64_t unmapped_inline; /* a full segment unmapped in-line */
};
void prep_get_counts(struct prep_counts *c);
/* A prepared buffer (trc.lock held): its file (under a spare name), its
 * header filled but not sealed, its first segment as its spare; NULL
 * when none is ready.  The caller sets its thread and calls
 * prep_name_later. */
struct buf *prep_take_kit(void);
/* The helper renames b's file to the thread's name and writes its
 * pending calibration pair, off the recording thread: at its next
 * wake-up, within PREP_POLL_MS (src/trace/prep.c), when another kit is
 * ready (the caller does not wake it: a futex wake, the bulk of a
 * thread's first record), at once when the caller took the last one. */
void prep_name_later(struct buf *b);
/* When no kit is ready but one is being made, waits for it: it is nearer
 * done than one started by the caller.  Call without trc.lock. */
void prep_await_kit(void);
/* Waits until the helper has prepared the next thread's buffer (or
 * failed to), so that a thread started after init finds it ready, and
 * named the files of kits taken so far; call without trc.lock. */
void prep_wait_kit(void);
void prep_release(struct buf *b); /* its spare given back; no more */
void prep_fini(void);             /* the unused kit removed */
/* Test hooks: the helper stops at its next job once it has done `jobs`
 * more (0: at once; -1: never), and the jobs it did since are logged,
 * one letter each: N a file named, S a thread's next segment mapped, s
 * a chunk of it faulted in, K a kit made (mapped), k a chunk of a kit's
 * segment, U a full segment unmapped.  The waits give up after 20 s
 * (0); the log is copied, NUL-terminated, and restarted. */
void prep_test_hold(int jobs);
int prep_test_wait_parked(void);
/* Until it sleeps with nothing to do (it is woken first, so that a job
 * left without a wake-up is done). */
int prep_test_wait_idle(void);
void prep_test_log(char *out, size_t len);
/* How many times the helper was woken (asked to, whether it slept or
 * not) since the process started. */
unsigned prep_test_wakes(void);
void prep_fork_prepare(void);
void prep_fork_parent(void);
void prep_fork_child(void);

/* funcs.c */
/* Remembers a function address seen by thread b (takes trc.lock). */
void fn_note(struct buf *b, uint64_t addr);
/* At fini (trc.lock held): names every address seen by this session. */
void fn_name_seen(void);
void fn_set_free(struct addrset *s);

/* srcline.c: source lines from DWARF (libdw); without libdw srcl_open
 * returns NULL and srcl_find finds nothing.  srcl_find: 0 with the
 * file's path and the line, or -1. */
struct srcl;
struct srcl *srcl_open(void);
int srcl_find(struct srcl *s, uint64_t addr, char *file, size_t len,
              uint32_t *line);
void srcl_close(struct srcl *s);

/* config.c: a yes/no value (1 0 yes no true false on off, any case) into
 * *out, 0; -1 when it is none of those.  A valid program name: 1. */
int cfg_bool(const char *s, int *out);
int cfg_program_ok(const char *s);

/* instrument.c */
void ins_configure(const dwt_config *c, uint64_t ticks_per_s);

/* trace.c */
void trc_refresh_identity(void);
void trc_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The executable's base name, made a valid program name. */
void trc_default_program(char *out, size_t len);

/* api.c: keeps the label head[0..hlen) + name (takes trc.lock).  Returns
 * DW_OK, DW_EINVAL (name NULL), DW_ETOOBIG or DW_ENOMEM. */
int api_label(uint32_t kind, const unsigned char *head, size_t hlen,
              const char *name);

#endif
