/*
 * dwork tracer (libdwtrace): low-overhead per-thread event tracing into
 * crash-safe memory-mapped files.  See docs/tracer.md for the guide and
 * docs/trace-format.md for the files it writes.
 *
 * Threads and blocking: every record call (dwt_event, dwt_state_*,
 * dwt_comm, dwt_func_*, dwt_sync) and every query is safe from any
 * thread at any time: before dwt_init, after dwt_fini or with tracing
 * off it returns at once without recording.  Record calls never block,
 * never allocate and never make a system call, except on the slow path
 * taken once per segment (a few MiB of records) and at a thread's first
 * record.  The label calls (dwt_define_*, dwt_set_*_name) take a short
 * lock and may allocate.  dwt_init and dwt_fini create and write files
 * (they block on the disk) and are not to be called concurrently with
 * each other; dwt_flush asks the kernel to write back without waiting.
 * No call waits on another process.  The event types and state numbers
 * are in dwork/events.h (included here).
 */
#ifndef DWORK_TRACE_H
#define DWORK_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include <dwork/error.h>
#include <dwork/events.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where timestamps come from. */
enum dwt_clock {
	DWT_CLOCK_AUTO = 0, /* TSC when invariant and trusted by the kernel */
	DWT_CLOCK_TSC = 1,  /* the CPU's time-stamp counter (x86 only) */
	DWT_CLOCK_MONOTONIC_RAW = 2, /* clock_gettime(CLOCK_MONOTONIC_RAW) */
};

/*
 * Tracer settings.  dwt_config_defaults() fills the defaults;
 * dwt_config_from_env() overlays the DWT_* environment variables:
 *
 *   DWT_ENABLED       on/off (1, 0, yes, no, true, false, on, off)
 *   DWT_DIR           trace directory (created if missing)
 *   DWT_PROGRAM       program name used in file names ([A-Za-z0-9._-], <64)
 *   DWT_SEGMENT_SIZE  bytes per buffer segment, K/M/G suffix, 64K..1G
 *   DWT_SIZE_CAP      cap on one process's trace bytes, 0 = none
 *   DWT_MODE          linear (stop recording at the cap) or circular
 *                     (keep the newest segments)
 *   DWT_CLOCK         auto, tsc or monotonic-raw
 *   DWT_INSTRUMENT_INCLUDE, DWT_INSTRUMENT_EXCLUDE
 *                     comma-separated name patterns (fnmatch) selecting
 *                     the functions -finstrument-functions records
 *   DWT_INSTRUMENT_MIN_NS
 *                     drop instrumented calls shorter than this that
 *                     recorded nothing inside (0 = keep all)
 *
 * The strings are borrowed: they must outlive dwt_init().
 */
typedef struct dwt_config {
	/* sizeof(struct ...) as the caller's header has it, or 0 for this
	 * header's layout; a size the library does not know is refused
	 * (DW_EINVAL).  Set it first: `.size = sizeof(dwt_config)`. */
	size_t size;
	int enabled;
	const char *dir;     /* NULL: "./<program>.trace" */
	const char *program; /* NULL: the executable's base name */
	uint64_t segment_size;
	uint64_t size_cap;
	int circular;
	int clock;                      /* enum dwt_clock */
	const char *instrument_include; /* NULL: every function */
	const char *instrument_exclude; /* NULL: none */
	uint64_t instrument_min_ns;
} dwt_config;

#define DWT_SEGMENT_MIN     (64u << 10)
#define DWT_SEGMENT_MAX     (1u << 30)
#define DWT_SEGMENT_DEFAULT (1u << 20)

/* Fills cfg with the defaults (enabled, 1 MiB segments, no cap, linear). */
DW_API void dwt_config_defaults(dwt_config *cfg);

/*
 * Overlays the DWT_* variables on cfg.  On a bad value returns DW_EINVAL,
 * leaves cfg unchanged, and writes into err (if not NULL) a message naming
 * the variable, the value and what it accepts.
 */
DW_API int dwt_config_from_env(dwt_config *cfg, char *err, size_t errlen);

/*
 * Starts tracing this process.  cfg NULL means defaults overlaid by the
 * environment.  Creates the trace directory and this process's file;
 * threads get their own file at their first record.  Registers dwt_fini
 * with atexit.  Returns DW_OK; DW_EINVAL for a bad setting or environment
 * value (message on stderr, tracing stays off); DW_ESTATE if already
 * initialised; DW_EIO/DW_EACCES/DW_ENOSPC when the directory or file cannot
 * be made (message on stderr).  With enabled = 0 it succeeds, creates
 * nothing, and every record call is a no-op.
 */
DW_API int dwt_init(const dwt_config *cfg);

/*
 * Ends tracing: writes the final calibration and the end marker, names
 * the user functions seen, and marks every thread's file as ended.
 * Records made after it are ignored.  Safe to call twice.  dwt_init may be
 * called again afterwards; it starts new files.
 */
DW_API void dwt_fini(void);

/* Writes a calibration point and asks the kernel to write the buffers
 * back (asynchronously).  Records are already in the files' pages. */
DW_API int dwt_flush(void);

/* 1 while recording (initialised, enabled and not paused), else 0. */
DW_API int dwt_active(void);

/* Pauses (0) or resumes (1) recording without closing anything. */
DW_API void dwt_set_active(int on);

/* The trace directory in use, or NULL when not tracing. */
DW_API const char *dwt_dir(void);

/* The program name used in file names, or NULL when not tracing. */
DW_API const char *dwt_program(void);

/* ---- records (hot path) ---- */

/* One event: any 32-bit type, a 64-bit value. */
DW_API void dwt_event(uint32_t type, uint64_t value);

/* n events sharing one timestamp. */
DW_API void dwt_events(unsigned n, const uint32_t *types,
                       const uint64_t *values);

/* Enter a state (pushed on this thread's state stack) / leave the
 * innermost one. */
DW_API void dwt_state_push(uint32_t state);
DW_API void dwt_state_pop(void);

/* The same with one event at the same time, in one record (the cost of
 * one): enter state and record (type, value); record (type, value) and
 * leave the innermost state.  type 0 records no event.  A push's value
 * is 32 bits wide (a function id, a count); the merge reads each as the
 * two records it stands for. */
DW_API void dwt_state_push_event(uint32_t state, uint32_t type, uint32_t value);
DW_API void dwt_state_pop_event(uint32_t type, uint64_t value);
/* The same at a time the caller has just read: tsc, an x86 time-stamp
 * counter read (__rdtsc) on this thread after its previous record.  Used
 * when the tracer's clock is the TSC (a caller that reads it anyway, as
 * dwork's accounting does at a change of state, saves a second read);
 * otherwise the tracer reads its own clock and tsc is ignored. */
DW_API void dwt_state_push_event_tsc(uint64_t tsc, uint32_t state,
                                     uint32_t type, uint32_t value);
DW_API void dwt_state_pop_event_tsc(uint64_t tsc, uint32_t type,
                                    uint64_t value);

/* Communication flags: direction, and which of Paraver's two times this
 * record gives (logical: when the program asked; physical: when the bytes
 * left or arrived).  A record may give both. */
#define DWT_SEND       0u
#define DWT_RECV       1u
#define DWT_LOGICAL    2u
#define DWT_PHYSICAL   4u
#define DWT_THREAD_ANY 0xffffffu

/*
 * One side of a communication.  partner_task/partner_thread name the
 * other side (DWT_THREAD_ANY when unknown); the merger pairs a send and a
 * receive by (sender task, receiver task, id).
 */
DW_API void dwt_comm(unsigned flags, uint32_t partner_task,
                     uint32_t partner_thread, uint32_t tag, uint64_t size,
                     uint64_t id);

/* A user function entered / left, identified by its address. */
DW_API void dwt_func_enter(const void *addr);
DW_API void dwt_func_exit(const void *addr);

/*
 * A clock measurement: at local time local_ns (dwt_now_ns), the reference
 * task's clock read local_ns + offset_ns, measured with round trip rtt_ns.
 */
DW_API void dwt_sync(uint32_t ref_task, uint64_t local_ns, int64_t offset_ns,
                     uint64_t rtt_ns);

/* This process's trace clock in nanoseconds: the host's
 * CLOCK_MONOTONIC_RAW, read directly (the timeline the merger puts the
 * host's ticks on). */
DW_API uint64_t dwt_now_ns(void);

/* ---- labels (kept in memory and written to the process file) ---- */

DW_API int dwt_define_type(uint32_t type, const char *name);
DW_API int dwt_define_value(uint32_t type, uint64_t value, const char *name);
/* rgb: 0xRRGGBB, or DWT_NO_COLOR for Paraver's default. */
#define DWT_NO_COLOR 0xffffffffu
DW_API int dwt_define_state(uint32_t state, const char *name, uint32_t rgb);
DW_API int dwt_define_function(const void *addr, const char *name);
/* Names the calling thread. */
DW_API int dwt_set_thread_name(const char *name);
/* Names this process (the dwork runtime: "master", "worker 3"); the
 * merge names its task and threads after it. */
DW_API int dwt_set_process_name(const char *name);

/* ---- identity ---- */

/* Task id and number of tasks, by value or by callback (the callback wins
 * and is asked again at each thread registration and at fini).  Defaults:
 * task 0 of 1.  A change after init is written to the files. */
DW_API void dwt_set_task(uint32_t task);
DW_API void dwt_set_ntasks(uint32_t ntasks);
DW_API void dwt_set_task_fn(uint32_t (*fn)(void));
DW_API void dwt_set_ntasks_fn(uint32_t (*fn)(void));
/* Thread id of the calling thread (default: registration order from 0)
 * and number of threads, by callback. */
DW_API void dwt_set_thread_fn(uint32_t (*fn)(void));
DW_API void dwt_set_nthreads_fn(uint32_t (*fn)(void));
DW_API uint32_t dwt_task(void);
DW_API uint32_t dwt_ntasks(void);
/* The calling thread's trace thread id (registers it if needed);
 * UINT32_MAX when not tracing. */
DW_API uint32_t dwt_thread(void);

/*
 * Tracing off costs a load and a branch: the record calls above are also
 * macros that test this flag inline before calling the function.  Their
 * arguments are not evaluated while tracing is off.  The functions stay
 * exported for bindings and dlsym; define DWT_NO_INLINE_CHECK before
 * including this header, or write (dwt_event)(t, v), to call them directly.
 */
DW_API extern int dwt_recording_; /* read only; nonzero while recording */
#if !defined(DWT_NO_INLINE_CHECK) && !defined(DW_BUILDING)
#define DWT_RECORDING_                __atomic_load_n(&dwt_recording_, __ATOMIC_RELAXED)
#define DWT_IF_ON_(call)              (DWT_RECORDING_ ? call : (void)0)
#define dwt_event(t, v)               DWT_IF_ON_(dwt_event(t, v))
#define dwt_events(n, t, v)           DWT_IF_ON_(dwt_events(n, t, v))
#define dwt_state_push(s)             DWT_IF_ON_(dwt_state_push(s))
#define dwt_state_pop()               DWT_IF_ON_(dwt_state_pop())
#define dwt_state_push_event(s, t, v) DWT_IF_ON_(dwt_state_push_event(s, t, v))
#define dwt_state_pop_event(t, v)     DWT_IF_ON_(dwt_state_pop_event(t, v))
#define dwt_state_push_event_tsc(c, s, t, v)                                   \
	DWT_IF_ON_(dwt_state_push_event_tsc(c, s, t, v))
#define dwt_state_pop_event_tsc(c, t, v)                                       \
	DWT_IF_ON_(dwt_state_pop_event_tsc(c, t, v))
#define dwt_comm(f, pt, pth, tag, size, id)                                    \
	DWT_IF_ON_(dwt_comm(f, pt, pth, tag, size, id))
#define dwt_func_enter(a) DWT_IF_ON_(dwt_func_enter(a))
#define dwt_func_exit(a)  DWT_IF_ON_(dwt_func_exit(a))
#endif

/* ---- counters ---- */
typedef struct dwt_stats {
	uint64_t records;         /* records stored (all threads) */
	uint64_t lost_disk;       /* records lost: the disk was full */
	uint64_t lost_cap;        /* records lost: the size cap was reached */
	uint64_t segments;        /* segments made */
	uint64_t segments_reused; /* circular mode: segments overwritten */
	uint32_t threads;
} dwt_stats;

/* Fills st with this tracing session's counters. */
DW_API void dwt_get_stats(dwt_stats *st);

#ifdef __cplusplus
}
#endif
#endif
