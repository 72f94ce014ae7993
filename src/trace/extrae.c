/*
 * The Extrae user API on the tracer: sessions (Extrae_init, automatic
 * initialisation when the library is loaded), pausing, identity
 * callbacks, labels and the calls accepted without effect.  The record
 * calls are in extrae_records.c.  docs/extrae-compat.md is the guide.
 */
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "trace/extrae_int.h"
#include "trace/tracer.h"

_Static_assert(_Generic((uint32_t)0, unsigned : 1, default : 0),
               "the identity callbacks are passed on as uint32_t (*)(void)");

int xtr_options = EXTRAE_HWC_OPTION;

static pthread_mutex_t xtr_lock = PTHREAD_MUTEX_INITIALIZER;
static int xtr_paused;                       /* Extrae_shutdown */
static unsigned xtr_from, xtr_to = UINT_MAX; /* Extrae_set_tracing_tasks */
static void (*xtr_finalize_fn)(void);
static int xtr_own; /* this layer started the session: Extrae's states and
                       events are written */

/* Present when the dwork runtime is linked in: then DWORK_TRACE alone
 * decides whether the process is traced. */
extern int dw_init(int *argc, char ***argv) __attribute__((weak));

static int
xtr_initialized(void)
{
	pthread_mutex_lock(&trc.lock);
	int on = trc.initialized;
	pthread_mutex_unlock(&trc.lock);
	return on;
}

/* Recording follows Extrae_shutdown/restart and the traced task range. */
static void
xtr_apply_active(void)
{
	uint32_t task = dwt_task();
	dwt_set_active(!xtr_paused && task >= xtr_from && task <= xtr_to);
}

/* Labels of Extrae's own events, as its merger writes them. */
static void
xtr_define_internal(void)
{
	static const struct {
		uint32_t type;
		const char *name;
	} t[] = {
	    {XTR_EV_APPL, "Application"},
	    {XTR_EV_TRACE_INIT, "Trace initialization"},
	    {XTR_EV_FLUSH, "Flushing Traces"},
	    {XTR_EV_TRACING, "Tracing"},
	    {XTR_EV_TRACING_MODE, "Tracing mode"},
	    {XTR_EV_CPU, "Executing CPU"},
	    {XTR_EV_PID, "Process IDentifier"},
	    {XTR_EV_PPID, "Parent Process IDentifier"},
	    {XTR_EV_FORK_DEPTH, "fork() depth"},
	    {XTR_EV_RAW_CLOCK, "RAW clock() value from system"},
	    {XTR_EV_CPU_SAMPLING, "CPU-Event sampling interval"},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		dwt_define_type(t[i].type, t[i].name);
	for (uint32_t ty = XTR_EV_APPL; ty <= XTR_EV_FLUSH; ty++) {
		dwt_define_value(ty, 0, "End");
		dwt_define_value(ty, 1, "Begin");
	}
	dwt_define_value(XTR_EV_TRACING, 0, "Disabled");
	dwt_define_value(XTR_EV_TRACING, 1, "Enabled");
	dwt_define_value(XTR_EV_TRACING_MODE, 1, "Detailed");
	dwt_define_value(XTR_EV_TRACING_MODE, 2, "CPU Bursts");
}

static uint64_t
xtr_raw_clock(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The application begins, then the trace initialisation (state Others)
 * with the process's identity, as Extrae writes them.  The first of
 * these records makes the thread's file and segment: that cost falls
 * in "Trace initialization", where Extrae pays its own. */
static void
xtr_begin(void)
{
	int cpu = sched_getcpu();
	uint32_t t[5] = {XTR_EV_APPL, XTR_EV_RAW_CLOCK, XTR_EV_CPU,
	                 XTR_EV_CPU_SAMPLING, XTR_EV_TRACING_MODE};
	uint64_t v[5] = {1, xtr_raw_clock(), cpu < 0 ? 0 : (uint64_t)cpu + 1, 0,
	                 1};
	uint32_t it[4] = {XTR_EV_TRACE_INIT, XTR_EV_PID, XTR_EV_PPID,
	                  XTR_EV_FORK_DEPTH};
	uint64_t iv[4] = {1, (uint64_t)getpid(), 0, 1}, end = 0;
	dwt_events(5, t, v);
	xtr_state_events(FMT_R_STATE_PUSH, DWT_STATE_OTHERS, 4, it, iv);
	xtr_define_internal();
	xtr_state_events(FMT_R_STATE_POP, 0, 1, it, &end);
}

/* Extrae_fini's flush (state I/O), then the application's end. */
static void
xtr_end(void)
{
	uint32_t t[2] = {XTR_EV_APPL, XTR_EV_RAW_CLOCK}, f = XTR_EV_FLUSH;
	uint64_t v[2] = {0, 0}, one = 1, zero = 0;
	xtr_state_events(FMT_R_STATE_PUSH, DWT_STATE_IO, 1, &f, &one);
	dwt_flush();
	xtr_state_events(FMT_R_STATE_POP, 0, 1, &f, &zero);
	v[1] = xtr_raw_clock();
	dwt_events(2, t, v);
}

static void
xtr_start(void)
{
	static struct xcfg x; /* dwt_init copies its strings */
	if (xcfg_load(&x) != DW_OK)
		return;
	if (x.counters)
		xtr_options |= EXTRAE_HWC_OPTION;
	else
		xtr_options &= ~EXTRAE_HWC_OPTION;
	if (dwt_init(&x.cfg) != DW_OK)
		return;
	/* As in Extrae, a thread runs unless it says otherwise. */
	pthread_mutex_lock(&trc.lock);
	trc.base_state = DWT_STATE_RUNNING;
	pthread_mutex_unlock(&trc.lock);
	xtr_own = 1;
	xtr_paused = 0;
	xtr_apply_active();
	xtr_begin();
	prep_wait_kit(); /* xtr_begin's records took the first one */
}

/* A second initialisation (by hand after the automatic one, or after the
 * dwork runtime's dwt_init) keeps the session and its records. */
static void
xtr_init(int automatic)
{
	pthread_mutex_lock(&xtr_lock);
	if (!xtr_initialized() && !dw_init &&
	    (!automatic || xcfg_auto_wanted()))
		xtr_start();
	pthread_mutex_unlock(&xtr_lock);
}

__attribute__((constructor)) static void
xtr_auto_init(void)
{
	xtr_init(1);
}

DW_API void
Extrae_init(void)
{
	xtr_init(0);
}
XTR_ALIASES(void, _init, (void))

DW_API extrae_init_type_t
Extrae_is_initialized(void)
{
	return xtr_initialized() ? EXTRAE_INITIALIZED_EXTRAE_INIT
	                         : EXTRAE_NOT_INITIALIZED;
}
XTR_ALIASES(extrae_init_type_t, _is_initialized, (void))

DW_API void
Extrae_fini(void)
{
	pthread_mutex_lock(&xtr_lock);
	int was = xtr_initialized();
	if (was && xtr_own)
		xtr_end();
	xtr_own = 0;
	dwt_fini();
	void (*fn)(void) = xtr_finalize_fn;
	pthread_mutex_unlock(&xtr_lock);
	if (was && fn)
		fn();
}
XTR_ALIASES(void, _fini, (void))

DW_API void
Extrae_flush(void)
{
	dwt_flush();
}
XTR_ALIASES(void, _flush, (void))

/* As Extrae marks them: "Tracing" 0 and the state Tracing Disabled from
 * the shutdown to the restart, on the thread that calls them. */
DW_API void
Extrae_shutdown(void)
{
	pthread_mutex_lock(&xtr_lock);
	if (xtr_own && !xtr_paused) {
		uint32_t t = XTR_EV_TRACING;
		uint64_t v = 0;
		xtr_state_events(FMT_R_STATE_PUSH, DWT_STATE_TRACING_DISABLED,
		                 1, &t, &v);
	}
	xtr_paused = 1;
	xtr_apply_active();
	pthread_mutex_unlock(&xtr_lock);
}
XTR_ALIASES(void, _shutdown, (void))

DW_API void
Extrae_restart(void)
{
	pthread_mutex_lock(&xtr_lock);
	int was = xtr_paused;
	xtr_paused = 0;
	xtr_apply_active();
	if (xtr_own && was) {
		uint32_t t = XTR_EV_TRACING;
		uint64_t v = 1;
		xtr_state_events(FMT_R_STATE_POP, 0, 1, &t, &v);
	}
	pthread_mutex_unlock(&xtr_lock);
}
XTR_ALIASES(void, _restart, (void))

DW_API void
Extrae_set_tracing_tasks(unsigned from, unsigned to)
{
	pthread_mutex_lock(&xtr_lock);
	xtr_from = from;
	xtr_to = to;
	xtr_apply_active();
	pthread_mutex_unlock(&xtr_lock);
}
XTR_ALIASES(void, _set_tracing_tasks, (unsigned, unsigned))

DW_API void
Extrae_set_options(int options)
{
	__atomic_store_n(&xtr_options, options, __ATOMIC_RELAXED);
}
XTR_ALIASES(void, _set_options, (int))

/* One counter set, no network counters: accepted, nothing to do. */
DW_API void
Extrae_previous_hwc_set(void)
{
}
XTR_ALIASES(void, _previous_hwc_set, (void))

DW_API void
Extrae_next_hwc_set(void)
{
}
XTR_ALIASES(void, _next_hwc_set, (void))

DW_API void
Extrae_network_counters(void)
{
}
XTR_ALIASES(void, _network_counters, (void))

DW_API void
Extrae_network_routes(int mpi_rank)
{
	(void)mpi_rank;
}
XTR_ALIASES(void, _network_routes, (int))

/* ---- identity ---- */

DW_API void
Extrae_set_taskid_function(unsigned (*fn)(void))
{
	dwt_set_task_fn(fn);
}

DW_API void
Extrae_set_numtasks_function(unsigned (*fn)(void))
{
	dwt_set_ntasks_fn(fn);
}

DW_API void
Extrae_set_threadid_function(unsigned (*fn)(void))
{
	dwt_set_thread_fn(fn);
}

DW_API void
Extrae_set_numthreads_function(unsigned (*fn)(void))
{
	dwt_set_nthreads_fn(fn);
}

/* Never needed, so never called: see the header. */
DW_API void
Extrae_set_barrier_tasks_function(void (*fn)(void))
{
	(void)fn;
}

DW_API void
Extrae_set_finalize_task_function(void (*fn)(void))
{
	pthread_mutex_lock(&xtr_lock);
	xtr_finalize_fn = fn;
	pthread_mutex_unlock(&xtr_lock);
}

DW_API void
Extrae_set_thread_name(unsigned thread, char *name)
{
	unsigned char h[8] = {0};
	fmt_put_u32(h, thread);
	api_label(FMT_L_THREAD_NAME, h, sizeof h, name);
}

/* ---- labels ---- */

DW_API void
Extrae_define_event_type(extrae_type_t *type, char *description,
                         unsigned *nvalues, extrae_value_t *values,
                         char **description_values)
{
	if (!type)
		return;
	if (description)
		dwt_define_type(*type, description);
	unsigned n = nvalues && values && description_values ? *nvalues : 0;
	for (unsigned i = 0; i < n; i++)
		if (description_values[i])
			dwt_define_value(*type, values[i],
			                 description_values[i]);
}
XTR_ALIASES(void, _define_event_type,
            (extrae_type_t *, char *, unsigned *, extrae_value_t *, char **))

DW_API void
Extrae_register_codelocation_type(extrae_type_t t1, extrae_type_t t2,
                                  const char *s1, const char *s2)
{
	if (s1)
		dwt_define_type(t1, s1);
	if (s2)
		dwt_define_type(t2, s2);
}

DW_API void
Extrae_register_function_address(void *ptr, const char *funcname,
                                 const char *modname, unsigned line)
{
	(void)modname;
	(void)line;
	if (ptr && funcname)
		dwt_define_function(ptr, funcname);
}

DW_API void
Extrae_register_stacked_type(extrae_type_t type)
{
	(void)type;
}

DW_API void
Extrae_get_version(unsigned *major, unsigned *minor, unsigned *revision)
{
	if (major)
		*major = 5;
	if (minor)
		*minor = 1;
	if (revision)
		*revision = 2;
}

DW_API void
Extrae_init_UserCommunication(struct extrae_UserCommunication *c)
{
	if (c)
		memset(c, 0, sizeof *c);
}
XTR_ALIASES(void, _init_UserCommunication, (struct extrae_UserCommunication *))

DW_API void
Extrae_init_CombinedEvents(struct extrae_CombinedEvents *e)
{
	if (!e)
		return;
	memset(e, 0, sizeof *e);
	e->UserFunction = EXTRAE_USER_FUNCTION_NONE;
}
XTR_ALIASES(void, _init_CombinedEvents, (struct extrae_CombinedEvents *))
