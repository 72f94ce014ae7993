/*
 * Tracer benchmarks.  Each figure is printed beside its floor measured in
 * the same run (these machines are shared and noisy: ratios hold, absolute
 * times don't).  Every measurement is the best of REPEAT runs, for the
 * figure and for its floor alike.
 *
 *   trace.event_ns            one dwt_event, tracing on, 10M records,
 *                             files and segment growth included
 *   trace.event_ns_2threads   the same, 5M records on each of two threads
 *   trace.user_function_pair_ns  dwt_func_enter + dwt_func_exit
 *   trace.off_ns              dwt_event with tracing off
 *   trace.bytes_per_event     trace file bytes per event record
 *
 * Floor of a record: a timestamp read plus one 16-byte store, in the same
 * loop, into a freshly mapped array of the same total size.
 */
#include <dirent.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <dwork/trace.h>

#include "bench_util.h"

#define NREC   (bu_quick() ? 1000000u : 10000000u)
#define REPEAT (bu_quick() ? 2 : 5)

static char base[256];

/* ---- floor: timestamp + 16-byte store into a fresh mapping ---- */

struct floor_arg {
	uint64_t n;
	double ns;
};

static void *
floor_thread(void *p)
{
	struct floor_arg *a = p;
	a->ns = bu_floor_ns(a->n);
	return NULL;
}

static double
run_threads(void *(*fn)(void *), int nthreads, uint64_t per_thread)
{
	pthread_t th[2];
	struct floor_arg a[2];
	for (int i = 0; i < nthreads; i++) {
		a[i].n = per_thread;
		pthread_create(&th[i], NULL, fn, &a[i]);
	}
	double worst = 0;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		if (a[i].ns > worst)
			worst = a[i].ns;
	}
	return worst;
}

/* ---- the tracer ---- */

static uint64_t dir_bytes;

static int
add_size(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)p;
	(void)f;
	if (flag == FTW_F && strstr(p, ".dwt"))
		dir_bytes += (uint64_t)st->st_size;
	return 0;
}

static void
start_tracing(const char *tag, int enabled)
{
	static char dir[512];
	snprintf(dir, sizeof dir, "%s/%s", base, tag);
	dwt_config c;
	dwt_config_defaults(&c);
	c.dir = dir;
	c.program = "bench";
	c.enabled = enabled;
	if (dwt_init(&c) != DW_OK) {
		fprintf(stderr, "bench: dwt_init failed\n");
		exit(1);
	}
}

static void
stop_tracing(void)
{
	dwt_fini();
	bu_rmtree(base);
	mkdir(base, 0755);
}

static void *
event_thread(void *p)
{
	struct floor_arg *a = p;
	dwt_event(1, 0); /* registers the thread: not part of the figure */
	double t0 = bu_now_s();
	for (uint64_t i = 0; i < a->n; i++)
		dwt_event(2, i);
	a->ns = (bu_now_s() - t0) * 1e9 / (double)a->n;
	return NULL;
}

static void *
func_thread(void *p)
{
	struct floor_arg *a = p;
	dwt_event(1, 0);
	double t0 = bu_now_s();
	for (uint64_t i = 0; i < a->n; i++) {
		dwt_func_enter((const void *)func_thread);
		dwt_func_exit((const void *)func_thread);
	}
	a->ns = (bu_now_s() - t0) * 1e9 / (double)a->n;
	return NULL;
}

/* Runs the figure and its floor alternately, REPEAT times each, and keeps
 * the best of each: a burst of load from elsewhere then hits both. */
static void
best_pair(void *(*fn)(void *), int nthreads, uint64_t per_thread,
          uint64_t floor_per_thread, double *on, double *fl)
{
	*on = *fl = 1e30;
	for (int r = 0; r < REPEAT; r++) {
		double v =
		    run_threads(floor_thread, nthreads, floor_per_thread);
		if (v < *fl)
			*fl = v;
		start_tracing("on", 1);
		v = run_threads(fn, nthreads, per_thread);
		stop_tracing();
		if (v < *on)
			*on = v;
	}
}

static void
bench_event(void)
{
	double on, fl;
	best_pair(event_thread, 1, NREC, NREC, &on, &fl);
	bu_report("trace.event_ns", on, "ns", fl);
	best_pair(event_thread, 2, NREC / 2, NREC / 2, &on, &fl);
	bu_report("trace.event_ns_2threads", on, "ns", fl);
}

static void
bench_func(void)
{
	double on, fl;
	best_pair(func_thread, 1, NREC / 2, NREC, &on, &fl);
	bu_report("trace.user_function_pair_ns", on, "ns", 2 * fl);
}

static void
bench_off(void)
{
	double best = 1e30;
	const uint64_t n =
	    NREC * 10u; /* once: the loop is a load and a branch */
	start_tracing("off", 0);
	for (int r = 0; r < REPEAT; r++) {
		double t0 = bu_now_s();
		for (uint64_t i = 0; i < n; i++)
			dwt_event(2, i);
		double v = (bu_now_s() - t0) * 1e9 / (double)n;
		if (v < best)
			best = v;
	}
	stop_tracing();
	printf("bench: trace.off_ns = %.2f ns\n", best);
	printf("bench: trace.off_ns.target = 2.00 ns\n");
}

static void
bench_bytes(void)
{
	start_tracing("bytes", 1);
	for (uint64_t i = 0; i < NREC; i++)
		dwt_event(2, i);
	dwt_stats st;
	dwt_get_stats(&st);
	dwt_fini();
	dir_bytes = 0;
	nftw(base, add_size, 16, FTW_PHYS);
	bu_report("trace.bytes_per_event",
	          (double)dir_bytes / (double)st.records, "bytes", 0);
	printf("bench: trace.bytes_per_event.target = 16.00 bytes\n");
	stop_tracing();
}

int
main(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(base, sizeof base, "%s/dwbench-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 1;
	}
	bench_event();
	bench_func();
	bench_off();
	bench_bytes();
	bu_rmtree(base);
	return 0;
}
