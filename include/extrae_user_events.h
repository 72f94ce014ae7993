/*
 * The Extrae user API on dwork's tracer (libdwtrace, also installed as
 * libseqtrace.so).  Same names, types and signatures as Extrae's
 * documented API, written for dwork; docs/extrae-compat.md says what each
 * call records, what is accepted and ignored, and why.
 *
 * Every call is safe from any thread at any time.  Record calls made
 * before Extrae_init, after Extrae_fini or between Extrae_shutdown and
 * Extrae_restart return at once and record nothing.  Nothing here blocks
 * except Extrae_init, Extrae_fini and Extrae_flush (file work).
 *
 * Each function of the first group also exists with the historical
 * prefixes SEQtrace_, OMPtrace_, MPItrace_ and OMPItrace_ instead of
 * Extrae_ (the same function under another name).
 */
#ifndef EXTRAE_USER_EVENTS_INCLUDED
#define EXTRAE_USER_EVENTS_INCLUDED

#include "extrae_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declares Extrae_NAME and its four prefixed twins. */
#define EXTRAE_DECLARE_(ret, name, params)                                     \
	ret Extrae_##name params;                                              \
	ret SEQtrace_##name params;                                            \
	ret OMPtrace_##name params;                                            \
	ret MPItrace_##name params;                                            \
	ret OMPItrace_##name params;

/* ---- tracing session ---- */

/* Starts tracing with the settings of EXTRAE_CONFIG_FILE (XML) or the
 * EXTRAE_* variables over the DWT_* ones.  A second call while tracing is
 * harmless and keeps everything recorded so far.  A bad setting prints a
 * message naming it and leaves tracing off. */
EXTRAE_DECLARE_(void, init, (void))

/* EXTRAE_NOT_INITIALIZED, or EXTRAE_INITIALIZED_EXTRAE_INIT while the
 * tracer is initialised (by any means). */
EXTRAE_DECLARE_(extrae_init_type_t, is_initialized, (void))

/* Ends tracing and closes the files (also done at exit). */
EXTRAE_DECLARE_(void, fini, (void))

/* Writes a calibration point and asks the kernel to write the buffers
 * back.  Records are in the files' pages already. */
EXTRAE_DECLARE_(void, flush, (void))

/* Pauses / resumes recording, keeping the files open. */
EXTRAE_DECLARE_(void, shutdown, (void))
EXTRAE_DECLARE_(void, restart, (void))

/* ---- records ---- */

/* One event.  By convention value 0 ends what a nonzero value began. */
EXTRAE_DECLARE_(void, event, (extrae_type_t type, extrae_value_t value))

/* count events sharing one timestamp; the arrays are only read. */
EXTRAE_DECLARE_(void, nevent,
                (unsigned count, extrae_type_t *types, extrae_value_t *values))

/* As Extrae_event / Extrae_nevent, plus the counters (see Extrae_counters)
 * at the same timestamp. */
EXTRAE_DECLARE_(void, eventandcounters,
                (extrae_type_t type, extrae_value_t value))
EXTRAE_DECLARE_(void, neventandcounters,
                (unsigned count, extrae_type_t *types, extrae_value_t *values))

/* Records the calling thread's counters (read through perf_event: task
 * clock, context switches, page faults, and instructions and cycles when
 * a PMU is available) as their increase since this thread's last read.
 * Records nothing where the kernel allows no counter. */
EXTRAE_DECLARE_(void, counters, (void))

/* One counter set only: accepted, no effect. */
EXTRAE_DECLARE_(void, previous_hwc_set, (void))
EXTRAE_DECLARE_(void, next_hwc_set, (void))

/* enter != 0: the calling function is entered; 0: it is left.  Returns the
 * address recorded (an address inside the caller, named at the end of
 * tracing from the symbol tables), 0 when leaving or not recording. */
EXTRAE_DECLARE_(unsigned long long, user_function, (unsigned enter))

/* Labels: *type is named description, and values[i] description_values[i]
 * for i < *nvalues.  NULL pointers are allowed (nothing for them). */
EXTRAE_DECLARE_(void, define_event_type,
                (extrae_type_t * type, char *description, unsigned *nvalues,
                 extrae_value_t *values, char **description_values))

/* Records only while this process's task id is in [from, to]. */
EXTRAE_DECLARE_(void, set_tracing_tasks, (unsigned from, unsigned to))

#define EXTRAE_DISABLE_ALL_OPTIONS (0)
#define EXTRAE_CALLER_OPTION       (1 << 0)
#define EXTRAE_HWC_OPTION          (1 << 1)
#define EXTRAE_MPI_HWC_OPTION      (1 << 2)
#define EXTRAE_MPI_OPTION          (1 << 3)
#define EXTRAE_OMP_OPTION          (1 << 4)
#define EXTRAE_OMP_HWC_OPTION      (1 << 5)
#define EXTRAE_UF_HWC_OPTION       (1 << 6)
#define EXTRAE_PTHREAD_OPTION      (1 << 7)
#define EXTRAE_PTHREAD_HWC_OPTION  (1 << 8)
#define EXTRAE_SAMPLING_OPTION     (1 << 9)
#define EXTRAE_ENABLE_ALL_OPTIONS                                              \
	(EXTRAE_CALLER_OPTION | EXTRAE_HWC_OPTION | EXTRAE_MPI_HWC_OPTION |    \
	 EXTRAE_MPI_OPTION | EXTRAE_OMP_OPTION | EXTRAE_OMP_HWC_OPTION |       \
	 EXTRAE_UF_HWC_OPTION | EXTRAE_PTHREAD_OPTION |                        \
	 EXTRAE_PTHREAD_HWC_OPTION | EXTRAE_SAMPLING_OPTION)
#define MPITRACE_DISABLE_ALL_OPTIONS EXTRAE_DISABLE_ALL_OPTIONS
#define MPITRACE_CALLER_OPTION       EXTRAE_CALLER_OPTION
#define MPITRACE_HWC_OPTION          EXTRAE_HWC_OPTION
#define MPITRACE_MPI_HWC_OPTION      EXTRAE_MPI_HWC_OPTION
#define MPITRACE_MPI_OPTION          EXTRAE_MPI_OPTION
#define MPITRACE_OMP_OPTION          EXTRAE_OMP_OPTION
#define MPITRACE_OMP_HWC_OPTION      EXTRAE_OMP_HWC_OPTION
#define MPITRACE_UF_HWC_OPTION       EXTRAE_UF_HWC_OPTION
#define MPITRACE_PTHREAD_OPTION      EXTRAE_PTHREAD_OPTION
#define MPITRACE_PTHREAD_HWC_OPTION  EXTRAE_PTHREAD_HWC_OPTION
#define MPITRACE_SAMPLING_OPTION     EXTRAE_SAMPLING_OPTION
#define MPITRACE_ENABLE_ALL_OPTIONS  EXTRAE_ENABLE_ALL_OPTIONS

/* A bitwise or of the options above.  EXTRAE_HWC_OPTION (on by default)
 * lets the calls above record counters; EXTRAE_UF_HWC_OPTION (off by
 * default) adds them to Extrae_user_function.  The others concern MPI,
 * OpenMP, pthread, callers and sampling instrumentation, which this
 * library does not do: accepted, no effect. */
EXTRAE_DECLARE_(void, set_options, (int options))

/* Myrinet GM/MX network counters and routes: accepted, no effect. */
EXTRAE_DECLARE_(void, network_counters, (void))
EXTRAE_DECLARE_(void, network_routes, (int mpi_rank))

/* ---- extended API ---- */

/* Clear a communication / a combined-events struct (UserFunction becomes
 * EXTRAE_USER_FUNCTION_NONE). */
EXTRAE_DECLARE_(void, init_UserCommunication,
                (struct extrae_UserCommunication *))
EXTRAE_DECLARE_(void, init_CombinedEvents, (struct extrae_CombinedEvents *))

/* Records, at one timestamp: the events (and counters when
 * HardwareCounters), the user function entry or exit (the caller of this
 * call), and each communication side with both its logical and physical
 * time.  The struct is only read. */
EXTRAE_DECLARE_(void, emit_CombinedEvents, (struct extrae_CombinedEvents *))

#undef EXTRAE_DECLARE_

/* ---- identity (Extrae_ names only) ---- */

/* Callbacks giving this process's task id (0-based) and number of tasks,
 * the calling thread's id and the number of threads.  Asked at init, when
 * a thread first records, and at the end.  NULL restores the default. */
void Extrae_set_taskid_function(unsigned (*taskid_function)(void));
void Extrae_set_numtasks_function(unsigned (*numtasks_function)(void));
void Extrae_set_threadid_function(unsigned (*threadid_function)(void));
void Extrae_set_numthreads_function(unsigned (*numthreads_function)(void));

/* Accepted, never called: processes of one host share one clock and the
 * dwork runtime aligns hosts, so no barrier is needed. */
void Extrae_set_barrier_tasks_function(void (*barriertasks_function)(void));

/* Called by Extrae_fini after the files are closed (MPI_Finalize, say). */
void Extrae_set_finalize_task_function(void (*finalizetask_function)(void));

/* Names trace thread `thread` of this process. */
void Extrae_set_thread_name(unsigned thread, char *name);

/* ---- labels and code locations (Extrae_ names only) ---- */

/* A user function entered at address (NULL: the innermost one is left);
 * type is ignored. */
void Extrae_function_from_address(extrae_type_t type, void *address);

/* Names the function at ptr funcname (modname and line are not kept). */
void Extrae_register_function_address(void *ptr, const char *funcname,
                                      const char *modname, unsigned line);

/* Labels types t1 and t2 with s1 and s2. */
void Extrae_register_codelocation_type(extrae_type_t t1, extrae_type_t t2,
                                       const char *s1, const char *s2);

/* Virtual threads: recorded as events of type 39000010 (value vthread +
 * 1, then 0 at suspend); the thread keeps its own trace id. */
void Extrae_resume_virtual_thread(unsigned vthread);
void Extrae_suspend_virtual_thread(void);
/* Accepted, no effect (meaningful only with remapped virtual threads). */
void Extrae_register_stacked_type(extrae_type_t type);

/* The Extrae API version implemented: 4.0.0.  Any pointer may be NULL. */
void Extrae_get_version(unsigned *major, unsigned *minor, unsigned *revision);

#ifdef __cplusplus
}
#endif
#endif
