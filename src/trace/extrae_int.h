/*
 * Internals of the Extrae user API on the tracer (extrae*.c): settings
 * read the way Extrae reads its own, perf_event counters, and the macro
 * that exports the SEQtrace_/OMPtrace_/MPItrace_/OMPItrace_ names.
 */
#ifndef DW_TRACE_EXTRAE_INT_H
#define DW_TRACE_EXTRAE_INT_H

#include <stdint.h>

#include <dwork/trace.h>

#include "extrae_user_events.h"

/* Event types this layer records itself (docs/extrae-compat.md). */
#define XTR_TYPE_TASK_CLOCK   39000001u /* ns of CPU time, perf_event */
#define XTR_TYPE_CTX_SWITCHES 39000002u /* context switches */
#define XTR_TYPE_PAGE_FAULTS  39000003u /* page faults */
#define XTR_TYPE_VTHREAD      39000010u /* Extrae_resume_virtual_thread */
#define XTR_TYPE_PAPI_TOT_INS 42000050u /* Extrae's/PAPI's numbering */
/* Extrae's own events of a sequential run (docs/extrae-compat.md) */
#define XTR_EV_APPL           40000001u /* application: 1 begin, 0 end */
#define XTR_EV_TRACE_INIT     40000002u /* trace initialisation */
#define XTR_EV_FLUSH          40000003u /* flushing traces */
#define XTR_EV_TRACING        40000012u /* 0 Extrae_shutdown, 1 restart */
#define XTR_EV_TRACING_MODE   40000018u /* 1 detailed */
#define XTR_EV_CPU            40000033u /* executing CPU + 1 */
#define XTR_EV_PID            40000036u
#define XTR_EV_PPID           40000037u
#define XTR_EV_FORK_DEPTH     40000038u
#define XTR_EV_RAW_CLOCK      40000050u /* CLOCK_MONOTONIC ns */
#define XTR_EV_CPU_SAMPLING   40000133u /* CPU-event sampling interval */
#define XTR_TYPE_PAPI_TOT_CYC 42000059u

/* Extrae_<name> also exported as SEQtrace_<name>, OMPtrace_<name>, ...:
 * the same code under more names.  Use after the definition. */
#define XTR_ALIAS_(pfx, ret, name, params)                                     \
	DW_API ret pfx##name params __attribute__((alias("Extrae" #name)));
#define XTR_ALIASES(ret, name, params)                                         \
	XTR_ALIAS_(SEQtrace, ret, name, params)                                \
	XTR_ALIAS_(OMPtrace, ret, name, params)                                \
	XTR_ALIAS_(MPItrace, ret, name, params)                                \
	XTR_ALIAS_(OMPItrace, ret, name, params)

/* A state push (kind FMT_R_STATE_PUSH, state) or pop (FMT_R_STATE_POP)
 * and n events, all at one timestamp (n small: within a segment). */
void xtr_state_events(uint32_t kind, uint32_t state, unsigned n,
                      const uint32_t *types, const uint64_t *values);

/* Extrae_set_options bits in force (EXTRAE_HWC_OPTION by default). */
extern int xtr_options;

/* ---- extrae_config.c: settings ---- */

/* Settings for one Extrae_init; the strings live in the struct. */
struct xcfg {
	dwt_config cfg;
	int counters; /* <counters enabled>: record counters */
	int has_dir, has_final_dir;
	char dir[3800];       /* EXTRAE_DIR, <temporal-directory> */
	char final_dir[3800]; /* EXTRAE_FINAL_DIR, <final-directory> */
	char program[64];     /* EXTRAE_PROGRAM_NAME, <trace-prefix> */
};

/* What a setting is, wherever it comes from (variable or XML element). */
enum xcfg_key {
	XK_ON,
	XK_PROGRAM,
	XK_DIR,
	XK_FINAL_DIR,
	XK_BUFFER,    /* records per buffer */
	XK_FILE_SIZE, /* MB of trace per process */
	XK_CIRCULAR,
	XK_COUNTERS,
};

/*
 * Fills x for Extrae_init: the defaults, the DWT_* variables, then the
 * XML file of EXTRAE_CONFIG_FILE when set (else the EXTRAE_* variables).
 * Returns DW_OK, or DW_EINVAL after printing on stderr a message naming
 * the bad setting (tracing must then stay off).
 */
int xcfg_load(struct xcfg *x);

/* 1 when a library just loaded should start tracing by itself: EXTRAE_ON
 * or EXTRAE_CONFIG_FILE is set, and EXTRAE_SKIP_AUTO_LIBRARY_INITIALIZE
 * does not say to skip. */
int xcfg_auto_wanted(void);

/*
 * Applies one setting given as text.  origin names it in messages
 * ("EXTRAE_BUFFER_SIZE", "f.xml line 3: <size>").  Returns DW_OK, or
 * DW_EINVAL with a message on stderr.
 */
int xcfg_set(struct xcfg *x, enum xcfg_key k, const char *origin,
             const char *val);

/*
 * Copies in to out, trimmed of surrounding white space, with every
 * $NAME$ replaced by the variable's value.  Returns 0; or -1 when NAME
 * is not set or out is too small, with the variable's name (or "") in
 * missing.
 */
int xcfg_subst(const char *in, char *out, size_t outlen, char *missing,
               size_t mlen);

/* extrae_xml.c: applies the XML file at path to x (DW_OK or DW_EINVAL,
 * with messages).  Without libxml2 it says so and returns DW_ENOTFOUND:
 * the caller goes on with the EXTRAE_* variables. */
int xcfg_xml(struct xcfg *x, const char *path);

/* ---- extrae_counters.c ---- */

#define XCTR_MAX 5 /* counters a read can give */

/*
 * Reads the calling thread's counters (opened at its first read, again
 * after fork) and stores each one's increase since this thread's previous
 * read as an event (types[i], values[i]), i < the result.  Returns 0 when
 * no counter is available here.  The first time a counter opens, its
 * type is labelled.  Makes system calls; never allocates after the first
 * read of a thread.
 */
unsigned xctr_read(uint32_t types[XCTR_MAX], uint64_t values[XCTR_MAX]);

#endif
