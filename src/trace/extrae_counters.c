/*
 * Counters for Extrae_counters and friends: the calling thread's
 * perf_event counters, in two groups (software, always tried; hardware,
 * where a PMU exists), each read with one read().  Values are increments
 * since the thread's previous read, as Extrae records them.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "trace/extrae_int.h"
#include "trace/tracer.h"

struct ctr_def {
	uint32_t kind, config; /* perf_event type and config */
	uint32_t type;         /* event type recorded */
	const char *label;
};

/* Group 0: software counters; group 1: hardware counters. */
static const struct ctr_def ctr_defs[2][3] = {
    {
        {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, XTR_TYPE_TASK_CLOCK,
         "Task clock (ns of CPU time)"},
        {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES,
         XTR_TYPE_CTX_SWITCHES, "Context switches"},
        {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, XTR_TYPE_PAGE_FAULTS,
         "Page faults"},
    },
    {
        {PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, XTR_TYPE_PAPI_TOT_INS,
         "PAPI_TOT_INS [Instr completed]"},
        {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, XTR_TYPE_PAPI_TOT_CYC,
         "PAPI_TOT_CYC [Total cycles]"},
        {0, 0, 0, NULL},
    },
};

struct ctr_group {
	int fd;     /* the leader, -1 when the group is empty */
	unsigned n; /* members, in perf's read order */
	uint32_t type[3];
	uint64_t last[3];
};

struct ctr_thread {
	uint64_t gen; /* ctr_gen when opened; 0: never */
	struct ctr_group g[2];
};

static __thread struct ctr_thread ctr_self;
static uint64_t ctr_gen = 1;  /* bumped in a fork child */
static unsigned ctr_labelled; /* bit per counter already labelled */
static int ctr_told;          /* the "no counters" message was printed */
static pthread_key_t ctr_key; /* closes a thread's fds at its exit */

static void
ctr_close(struct ctr_thread *t)
{
	for (int i = 0; i < 2; i++) {
		if (t->g[i].fd >= 0)
			close(t->g[i].fd);
		t->g[i].fd = -1;
		t->g[i].n = 0;
	}
}

static void
ctr_thread_exit(void *p)
{
	ctr_close(p);
}

static void
ctr_atfork_child(void)
{
	__atomic_add_fetch(&ctr_gen, 1, __ATOMIC_RELAXED);
}

static void
ctr_once(void)
{
	pthread_key_create(&ctr_key, ctr_thread_exit);
	pthread_atfork(NULL, NULL, ctr_atfork_child);
}

/* Software events count in the kernel too (a context switch happens
 * there); where perf_event_paranoid forbids that, user space only. */
static int
ctr_open(const struct ctr_def *d, int leader)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = d->kind;
	a.config = d->config;
	a.read_format = PERF_FORMAT_GROUP;
	a.exclude_hv = 1;
	a.exclude_kernel = d->kind == PERF_TYPE_HARDWARE;
	for (int tries = 0; tries < 2; tries++) {
		long fd = syscall(SYS_perf_event_open, &a, 0, -1, leader,
		                  PERF_FLAG_FD_CLOEXEC);
		if (fd >= 0)
			return (int)fd;
		if ((errno != EACCES && errno != EPERM) || a.exclude_kernel)
			break;
		a.exclude_kernel = 1;
	}
	return -1;
}

static void
ctr_label(unsigned bit, const struct ctr_def *d)
{
	unsigned old =
	    __atomic_fetch_or(&ctr_labelled, 1u << bit, __ATOMIC_RELAXED);
	if (!(old & (1u << bit)))
		dwt_define_type(d->type, d->label);
}

static void
ctr_open_group(struct ctr_group *g, int gi)
{
	g->fd = -1;
	g->n = 0;
	for (int i = 0; i < 3 && ctr_defs[gi][i].label; i++) {
		const struct ctr_def *d = &ctr_defs[gi][i];
		int fd = ctr_open(d, g->fd);
		if (fd < 0)
			continue;
		if (g->fd < 0)
			g->fd = fd; /* members share the leader's fd */
		g->type[g->n] = d->type;
		g->last[g->n++] = 0;
		ctr_label((unsigned)(gi * 3 + i), d);
	}
}

static void
ctr_tell_none(int err)
{
	if (__atomic_exchange_n(&ctr_told, 1, __ATOMIC_RELAXED))
		return;
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	int lvl = -99;
	if (f) {
		if (fscanf(f, "%d", &lvl) != 1)
			lvl = -99;
		fclose(f);
	}
	trc_err("Extrae counters: perf_event_open failed (%s; "
	        "perf_event_paranoid is %d): no counter is recorded",
	        strerror(err), lvl);
}

static void
ctr_setup(struct ctr_thread *t)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, ctr_once);
	if (t->gen)
		ctr_close(t); /* a fork child's copies count its parent */
	ctr_open_group(&t->g[0], 0);
	int err = errno;
	ctr_open_group(&t->g[1], 1);
	t->gen = __atomic_load_n(&ctr_gen, __ATOMIC_RELAXED);
	pthread_setspecific(ctr_key, t);
	if (t->g[0].fd < 0 && t->g[1].fd < 0)
		ctr_tell_none(err);
}

static unsigned
ctr_read_group(struct ctr_group *g, uint32_t *types, uint64_t *values)
{
	uint64_t buf[1 + 3];
	if (g->fd < 0)
		return 0;
	ssize_t r = read(g->fd, buf, sizeof buf);
	if (r < (ssize_t)(8 * (1 + g->n)) || buf[0] != g->n)
		return 0;
	for (unsigned i = 0; i < g->n; i++) {
		types[i] = g->type[i];
		values[i] = buf[1 + i] - g->last[i];
		g->last[i] = buf[1 + i];
	}
	return g->n;
}

unsigned
xctr_read(uint32_t types[XCTR_MAX], uint64_t values[XCTR_MAX])
{
	struct ctr_thread *t = &ctr_self;
	if (t->gen != __atomic_load_n(&ctr_gen, __ATOMIC_RELAXED))
		ctr_setup(t);
	unsigned n = ctr_read_group(&t->g[0], types, values);
	return n + ctr_read_group(&t->g[1], types + n, values + n);
}
