/*
 * Trace file reader: the process (.dwp) and thread (.dwt) files that
 * libdwtrace writes, as specified in docs/trace-format.md.  The merger
 * stands on it; nothing here knows about output formats.
 *
 * Trace files are outside input: they may be truncated (a copy cut
 * short, a process killed while writing), garbled, or written by a newer
 * tracer.  Every function here checks every length against the file
 * before reading or allocating, never reads beyond the bytes it was
 * given, and reports what is wrong as a message in an rd_errlist:
 * "PATH: offset N: what" (or "PATH: what" for a whole file or directory,
 * and for calibration).  The library prints nothing unless the list was
 * given a stream to echo to.
 *
 * Memory: a thread file is read as a stream, one small window at a time
 * (never the whole file); a process file's labels are held in memory.
 * Files are read with pread(), never mapped, so a file that shrinks
 * while it is read is an error, not a SIGBUS.
 *
 * Not thread-safe: use one object per thread (objects are independent).
 */
#ifndef DW_TRACEFILE_READER_H
#define DW_TRACEFILE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <dwork/error.h>

#include "common/format.h"

/*
 * Ids a file may name.  A header whose task, task count, thread or
 * thread count is over these is refused (DW_EFORMAT, reported), a COMM
 * or SYNC record naming a task over them is damage (the rest of its
 * segment is skipped), an identity label over them is ignored: no
 * consumer sized by them can be made to index past its arrays.
 */
#define RD_TASK_MAX   (1u << 20) /* task ids are below this */
#define RD_THREAD_MAX (1u << 16) /* thread ids are below this */

/* ---- Error list ------------------------------------------------------ */

#define RD_ERRS_MAX 1000 /* messages kept; later ones are only counted */

/*
 * Messages about damaged input, in the order they were found.  Owned by
 * the caller; one list may be shared by any number of readers.
 */
typedef struct rd_errlist {
	char **msgs;    /* msgs[0 .. n-1], NUL-terminated, no newline */
	size_t n;       /* messages kept */
	size_t cap;     /* allocated slots of msgs */
	size_t dropped; /* messages not kept (over RD_ERRS_MAX or no memory) */
	FILE *echo;     /* when not NULL, each message is also printed here */
	/* A list filled on another thread (the merge's second scanning
	 * thread): hold, when set, is called before each message is added
	 * (it may wait, and set fwd); with fwd set, messages go to fwd. */
	void (*hold)(struct rd_errlist *errs);
	struct rd_errlist *fwd;
} rd_errlist;

/* Makes an empty list; echo (may be NULL) gets each message as it comes. */
void rd_errlist_init(rd_errlist *errs, FILE *echo);

/* Frees the messages; the list is empty and reusable afterwards. */
void rd_errlist_free(rd_errlist *errs);

/* Number of problems found: kept plus dropped messages. */
size_t rd_errlist_count(const rd_errlist *errs);

/* Adds msg (malloc'ed, owned by errs from now on; NULL counts as a
 * message without memory) as the problems found here are. */
void rd_errlist_add(rd_errlist *errs, char *msg);

/* Prints every kept message, one a line, and a count of dropped ones. */
void rd_errlist_print(const rd_errlist *errs, FILE *out);

/*
 * Adds "what" to errs (NULL: nothing), one line: a problem with the
 * input found above the reader (the merge's checks).  Never fails:
 * without memory the message is only counted.
 */
void rd_problem(rd_errlist *errs, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- File header ----------------------------------------------------- */

/* The header fields of either file kind (docs/trace-format.md). */
typedef struct rd_header {
	uint16_t vmajor, vminor;
	uint32_t size; /* header_size: bytes of defined fields */
	bool swapped;  /* records were written big-endian (thread files) */
	uint32_t kind; /* enum fmt_file_kind */
	uint64_t uid;  /* process uid: groups the files of one process */
	uint32_t pid, ppid;
	uint32_t task, ntasks;
	uint32_t thread, nthreads;
	uint32_t clock; /* enum fmt_clock_kind */
	uint32_t flags; /* enum fmt_flags */
	uint64_t init_ticks, init_ns, init_real_ns;
	uint64_t ticks_per_s;
	uint64_t segment_size;
	uint64_t end_ticks, end_ns; /* 0 until dwt_fini */
	uint64_t lost_disk, lost_cap, seg_reused, records;
	char host[65];    /* NUL terminated */
	char program[65]; /* NUL terminated */
	char boot_id[41]; /* NUL terminated; empty before version 1.1 */
} rd_header;

/* True when dwt_fini ran for this file's process. */
static inline bool
rd_header_ended(const rd_header *h)
{
	return (h->flags & FMT_FLAG_ENDED) != 0;
}

/*
 * Decodes and validates the header at the start of buf[0 .. len-1]
 * (at least the defined fields must be there; the zero padding of the
 * header page need not be).  name labels the messages.  Returns DW_OK,
 * DW_EVERSION (a newer major version: "trace format version 2.0 is newer
 * than this reader (1.x)") or DW_EFORMAT, with a message in errs.
 */
dw_err rd_header_parse(const char *name, const void *buf, size_t len,
                       rd_errlist *errs, rd_header *out);

/* As rd_header_parse on the start of file path; also DW_ENOENT, DW_EIO. */
dw_err rd_header_read(const char *path, rd_errlist *errs, rd_header *out);

/* ---- Thread files ---------------------------------------------------- */

/* Flags of a COMM record. */
enum rd_comm_flags {
	RD_COMM_RECV = 1u,     /* receive; else send */
	RD_COMM_LOGICAL = 2u,  /* the logical time of the communication */
	RD_COMM_PHYSICAL = 4u, /* the physical time */
};

/* One decoded record.  NEWBASE is handled by the reader, never returned. */
typedef struct rd_rec {
	uint32_t kind;   /* enum fmt_rec_kind: EVENT .. SYNC */
	uint64_t ticks;  /* absolute time in the process's ticks */
	uint64_t offset; /* byte offset of the record in its file */
	union {
		struct {
			uint32_t type;
			uint64_t value;
		} event;
		struct {
			uint32_t state; /* STATE_PUSH; 0 for STATE_POP */
		} state;
		struct {
			uint64_t addr; /* FUNC_EXIT: 0 when unknown */
		} func;
		struct {
			uint32_t flags; /* enum rd_comm_flags */
			uint32_t partner_task;
			uint32_t
			    partner_thread; /* FMT_COMM_THREAD_ANY: unknown */
			uint32_t tag;
			uint64_t size; /* bytes */
			uint64_t id;   /* message id */
		} comm;
		struct {
			uint32_t ref_task;
			uint64_t local_ns; /* this process's calibrated clock */
			uint32_t rtt_ns;   /* saturated at 2^32 - 1 */
			int64_t
			    offset_ns; /* the reference read local + offset */
		} sync;
	} u;
} rd_rec;

/* A segment of a thread file that has its magic set. */
typedef struct rd_segment {
	uint64_t seq;    /* sequence number: the reading order */
	uint64_t offset; /* byte offset of the segment in the file */
	uint64_t ticks;  /* calibration pair and time base */
	uint64_t ns;
	uint32_t header_size; /* records start this far into the segment */
} rd_segment;

typedef struct rd_thread rd_thread;

/*
 * Opens a thread file for streaming.  Reads the header and every segment
 * header (64 bytes each) to order the segments by sequence number;
 * records are read later, by rd_thread_next, through a small window.
 * Segments with no magic are skipped silently; a damaged segment header,
 * a duplicate sequence number or a file ending inside a segment are
 * reported in errs and the rest stays readable.  errs (may be NULL) must
 * outlive the reader.  On DW_OK *out is the caller's, to close with
 * rd_thread_close.  Errors: DW_ENOENT, DW_EACCES, DW_EIO (the file),
 * DW_EFORMAT (not a valid thread file header), DW_EVERSION (newer major
 * version), DW_ENOMEM.
 */
dw_err rd_thread_open(const char *path, rd_errlist *errs, rd_thread **out);

/*
 * As rd_thread_open on the bytes buf[0 .. len-1], which are borrowed and
 * must outlive the reader; name labels the messages.  No file I/O.
 */
dw_err rd_thread_open_mem(const char *name, const void *buf, size_t len,
                          rd_errlist *errs, rd_thread **out);

/* Closes the file and frees the reader.  NULL is ignored. */
void rd_thread_close(rd_thread *t);

/* The file's header and name (valid until rd_thread_close). */
const rd_header *rd_thread_header(const rd_thread *t);
const char *rd_thread_name(const rd_thread *t);

/*
 * The readable segments in reading order (by sequence number), *n of
 * them; valid until rd_thread_close.  Their (ticks, ns) pairs belong to
 * the process's calibration (rd_calib_add_thread).
 */
const rd_segment *rd_thread_segments(const rd_thread *t, size_t *n);

/*
 * Stores the next record in *rec and returns 1, or returns 0 at the end
 * of the stream.  Records come in time order (ticks never decrease).
 * A damaged record (reserved kind, CONT first, a two-slot record without
 * its CONT or cut by the segment end, a NEWBASE or a segment base that
 * goes back in time, a record cut by the end of the file) is reported in
 * errs with its offset; the rest of its segment is skipped and reading
 * goes on with the next segment.  A read error is reported and ends the
 * stream.  Does not allocate.
 */
int rd_thread_next(rd_thread *t, rd_rec *rec);

/*
 * rd_thread_next for a pass that needs few of the records (the merge's
 * scan): the records it does not need are passed over in a loop over
 * the segment's slots, counted but not decoded.  Each call goes through
 * the next sk->count records of the stream (0: the end), the last of
 * them at tick sk->last, and returns how many of them it put in v (at
 * most max), as rd_thread_next decodes them: every COMM, SYNC and
 * THREAD_END, and every EVENT (a state record's event included) whose
 * value is not 0 and whose type - ev_lo is below ev_span; v[i] is the
 * at[i]-th record of the call's (from 0).  The stream is the one
 * rd_thread_next reads (the two may be mixed), and its problems are
 * the same, in the same order, reported only before a call goes
 * through any record: after the records of the calls before.
 */
typedef struct rd_skim {
	uint32_t ev_lo, ev_span; /* set by the caller */
	uint64_t count;          /* records the last call went through */
	uint64_t last;           /* ... the last of them at this tick */
} rd_skim;

size_t rd_thread_skim(rd_thread *t, rd_skim *sk, rd_rec *v, uint32_t *at,
                      size_t max);

/* Starts the stream again from its first record. */
void rd_thread_rewind(rd_thread *t);

/*
 * Bytes read into memory at a time from a file (not from memory
 * buffers), for the readers opened afterwards.  Clamped to
 * [64, 16 MiB]; the default is 64 KiB.  Tests make it small to exercise
 * window refills.
 */
void rd_set_window(size_t bytes);

/* ---- Process files --------------------------------------------------- */

typedef struct rd_type_label {
	uint32_t type;
	char *name;
	uint64_t offset; /* of its TLV in the file: the later one wins */
} rd_type_label;

typedef struct rd_value_label {
	uint32_t type;
	uint64_t value;
	char *name;
	uint64_t offset;
} rd_value_label;

typedef struct rd_state_label {
	uint32_t state;
	uint32_t rgb; /* 0xRRGGBB, RD_NO_COLOR when none */
	char *name;
	uint64_t offset;
} rd_state_label;
#define RD_NO_COLOR 0xffffffffu

typedef struct rd_func_label {
	uint64_t addr;
	char *name;
	uint64_t offset;
} rd_func_label;

/* Where a function address is in the source: file:line. */
typedef struct rd_line_label {
	uint64_t addr;
	uint32_t line;
	char *name; /* the source file's path */
	uint64_t offset;
} rd_line_label;

typedef struct rd_thread_label {
	uint32_t thread;
	char *name;
	uint64_t offset;
} rd_thread_label;

/* An executable mapping: [start, end) maps path at file offset foff. */
typedef struct rd_module {
	uint64_t start, end, foff;
	char *path;
	uint64_t offset;
} rd_module;

typedef struct rd_pair {
	uint64_t ticks, ns;
} rd_pair;

typedef struct rd_identity {
	uint64_t ticks;
	uint32_t task, ntasks;
} rd_identity;

/*
 * A process file, entirely in memory.  Label tables are sorted by key
 * (types by type, values by (type, value), states by state, functions
 * by address, threads by thread, modules by start) with one entry a key:
 * the latest definition.  calib and ident keep file order.  Names are
 * NUL-terminated copies (a name holding a NUL byte is cut there).
 */
typedef struct rd_proc {
	char *path;
	rd_header hdr;
	rd_type_label *types;
	size_t ntypes;
	rd_value_label *values;
	size_t nvalues;
	rd_state_label *states;
	size_t nstates;
	rd_func_label *funcs;
	size_t nfuncs;
	rd_line_label *lines; /* by address */
	size_t nlines;
	rd_thread_label *threads;
	size_t nthreads;
	rd_module *modules;
	size_t nmodules;
	rd_pair *calib; /* CALIB records */
	size_t ncalib;
	rd_identity *ident; /* IDENTITY records */
	size_t nident;
	char *pname;       /* PROCESS_NAME ("worker 3"), NULL when none */
	bool has_end;      /* an END record was read ... */
	rd_pair end;       /* ... with this pair (the last one if several) */
	uint64_t data_end; /* offset where reading the TLVs stopped */
} rd_proc;

/*
 * Reads a process file: the header and every TLV after the header page.
 * Unknown TLV kinds are skipped; a corrupt TLV (zero kind followed by
 * non-zero bytes, a length over FMT_TLV_MAX, a payload too short for its
 * kind, a record cut by the end of the file) is reported in errs and
 * ends reading, keeping everything before it (still DW_OK).  On DW_OK
 * *out is the caller's, to free with rd_proc_close.  Errors: DW_ENOENT,
 * DW_EACCES, DW_EIO, DW_EFORMAT (not a valid process file header),
 * DW_EVERSION, DW_ENOMEM.
 */
dw_err rd_proc_open(const char *path, rd_errlist *errs, rd_proc **out);

/* As rd_proc_open on buf[0 .. len-1] (copied from as needed). */
dw_err rd_proc_open_mem(const char *name, const void *buf, size_t len,
                        rd_errlist *errs, rd_proc **out);

/* Frees the process and its labels.  NULL is ignored. */
void rd_proc_close(rd_proc *p);

/* Label lookups: the name, or NULL when the file defines none. */
const char *rd_proc_type_name(const rd_proc *p, uint32_t type);
const char *rd_proc_value_name(const rd_proc *p, uint32_t type, uint64_t value);
const char *rd_proc_func_name(const rd_proc *p, uint64_t addr);
/* The source line of a function address, or NULL. */
const rd_line_label *rd_proc_func_line(const rd_proc *p, uint64_t addr);
const char *rd_proc_thread_name(const rd_proc *p, uint32_t thread);

/* The state's label (name and colour), or NULL. */
const rd_state_label *rd_proc_state(const rd_proc *p, uint32_t state);

/* The module whose [start, end) holds addr, or NULL. */
const rd_module *rd_proc_module(const rd_proc *p, uint64_t addr);

/* ---- Time ------------------------------------------------------------ */

/*
 * Tick-to-nanosecond conversion of one process (docs/trace-format.md,
 * "Time"): piecewise-linear between calibration pairs sorted by ticks,
 * the slope from the first to the last pair outside them, the header's
 * ticks per second with a single pair, and the identity with clock kind
 * 2 (ticks are CLOCK_MONOTONIC_RAW nanoseconds already).
 */
typedef struct rd_calib {
	uint32_t clock;       /* enum fmt_clock_kind */
	uint64_t ticks_per_s; /* used with a single pair */
	rd_pair *pairs;       /* sorted by ticks, strictly increasing */
	size_t n;
	size_t cap;
	bool sorted;
} rd_calib;

/* An empty calibration for the given clock kind and estimated rate. */
void rd_calib_init(rd_calib *c, uint32_t clock, uint64_t ticks_per_s);

/* Frees the pairs; c may be initialized again. */
void rd_calib_free(rd_calib *c);

/*
 * Adds a pair; (0, 0) — an unset header field — is ignored.  Returns
 * DW_OK or DW_ENOMEM.
 */
dw_err rd_calib_add(rd_calib *c, uint64_t ticks, uint64_t ns);

/* Adds the header's init and end pairs, and CALIB and END records. */
dw_err rd_calib_add_proc(rd_calib *c, const rd_proc *p);

/* Adds the thread file's header init pair and its segments' pairs. */
dw_err rd_calib_add_thread(rd_calib *c, const rd_thread *t);

/*
 * Sorts the pairs by (ticks, ns) and keeps the first pair of each tick
 * value.  A pair whose ns is below the previous kept pair's would make
 * time go back: it is dropped and reported in errs (may be NULL) under
 * name.  rd_calib_to_ns calls it when pairs were added since; call it
 * yourself to get the report.  Returns the number of pairs dropped.
 */
size_t rd_calib_finish(rd_calib *c, const char *name, rd_errlist *errs);

/*
 * Nanoseconds on the host's CLOCK_MONOTONIC_RAW timeline for ticks,
 * rounded to the nearest (128-bit arithmetic: exact for any span).
 * Saturates at INT64_MIN/INT64_MAX.  With no pair at all (clock kind 1)
 * it scales ticks by ticks_per_s, or returns ticks when that is 0.
 * The first call after an rd_calib_add sorts the pairs (see
 * rd_calib_finish), so c is not const.
 */
int64_t rd_calib_to_ns(rd_calib *c, uint64_t ticks);

/* A line of the conversion: ns = base.ns + (ticks - base.ticks) * num /
 * den from base.ticks up to end (exclusive; UINT64_MAX: no end). */
typedef struct rd_span {
	rd_pair base;
	uint64_t num, den;
	uint64_t end;
} rd_span;

/*
 * The line rd_calib_to_ns takes for ticks (not with clock kind 2): the
 * one search of the calibration, shared with the merge's fast per-stream
 * conversion so that both give a tick the same time.  c must be sorted
 * (rd_calib_finish).
 */
rd_span rd_calib_span(const rd_calib *c, uint64_t ticks);

/* ---- Trace directories ----------------------------------------------- */

/* One process found in a trace directory. */
typedef struct rd_dir_proc {
	uint64_t uid;
	char *proc_path;      /* the .dwp file, NULL when missing */
	rd_header hdr;        /* of the .dwp, else of the first thread file */
	char **thread_paths;  /* .dwt files, by thread id */
	uint32_t *thread_ids; /* from their headers */
	size_t nthreads;
} rd_dir_proc;

typedef struct rd_dir {
	char *path;
	rd_dir_proc *procs; /* by task, then uid */
	size_t nprocs;
} rd_dir;

/*
 * Lists the *.dwp and *.dwt files of directory path, reads their headers
 * and groups them by process uid (from the headers, not the names).
 * Files with an unreadable header, a second process file for a uid and a
 * second thread file for a (uid, thread) are reported in errs and left
 * out; a thread file whose process file is missing is reported and kept
 * (its header carries the identity).  On DW_OK *out is the caller's, to
 * free with rd_dir_close.  Errors: DW_ENOENT (no such directory, or no
 * trace file in it), DW_EFORMAT (no trace file with a readable header),
 * DW_EIO, DW_EACCES, DW_ENOMEM — each with a message in errs.
 */
dw_err rd_dir_open(const char *path, rd_errlist *errs, rd_dir **out);

/* Frees the listing.  NULL is ignored. */
void rd_dir_close(rd_dir *d);

#endif
