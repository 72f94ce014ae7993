/*
 * The Extrae user API's cost on the tracer, beside the same floor as
 * trace.event_ns (bench_trace.c), measured in the same run.  Each figure
 * is the best of REPEAT runs, the floor too, alternating.
 *
 *   extrae.event_ns   one Extrae_event, tracing on (started by
 *                     Extrae_init from EXTRAE_* variables), 10M records,
 *                     files and segment growth included
 *
 *   trace.first_event_us          the first Extrae_event of a thread
 *                                 started after Extrae_init, with a
 *                                 1M-event buffer from EXTRAE_BUFFER_SIZE
 *                                 (a 16 MB segment): worst of REPEAT
 *   trace.first_event_us_init     the same on the thread that called
 *                                 Extrae_init (its segment is made there)
 *                                 floor: the worst second record of
 *                                 the same threads (any record's cost)
 *   trace.first_event_us.median   their median, beside the median
 *                                 second record
 *   trace.first_event_cpu_us      the worst in the thread's CPU time
 *   trace.thread_start_us         for scale: pthread_create + join of a
 *                                 thread that does nothing, no tracing
 *                                 (best of REPEAT)
 *   trace.worst_record_us         the slowest single Extrae_event of 10M
 *                                 on one thread, 16 MB segments (each
 *                                 call timed: a clock read either side);
 *                                 on a loaded machine the scheduler's
 *                                 preemptions (4 ms ticks) dominate it
 *   trace.worst_record_cpu_us     the same in the thread's CPU time
 *                                 (CLOCK_THREAD_CPUTIME_ID): what the
 *                                 record itself costs, page faults and
 *                                 system calls included, preemption not
 *
 * Floor of a record: a timestamp read plus one 16-byte store, in the same
 * loop, into a freshly mapped array of the same total size.
 */
#include <ftw.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "extrae_user_events.h"

#define NREC   (bu_quick() ? 1000000u : 10000000u)
#define REPEAT (bu_quick() ? 2 : 5)

static char base[256];

static double
event_ns(uint64_t n)
{
	char dir[512];
	snprintf(dir, sizeof dir, "%s/on", base);
	setenv("EXTRAE_ON", "1", 1);
	setenv("EXTRAE_FINAL_DIR", dir, 1);
	setenv("EXTRAE_PROGRAM_NAME", "bench", 1);
	Extrae_init();
	if (Extrae_is_initialized() == EXTRAE_NOT_INITIALIZED) {
		fprintf(stderr, "bench: Extrae_init failed\n");
		exit(1);
	}
	Extrae_event(1, 0); /* registers the thread: not part of the figure */
	double t0 = bu_now_s();
	for (uint64_t i = 0; i < n; i++)
		Extrae_event(2, i);
	double ns = (bu_now_s() - t0) * 1e9 / (double)n;
	Extrae_fini();
	bu_rmtree(base);
	mkdir(base, 0755);
	return ns;
}

static double
now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void
big_init(const char *sub)
{
	char dir[512];
	snprintf(dir, sizeof dir, "%s/%s", base, sub);
	setenv("EXTRAE_ON", "1", 1);
	setenv("EXTRAE_FINAL_DIR", dir, 1);
	setenv("EXTRAE_PROGRAM_NAME", "bench", 1);
	setenv("EXTRAE_BUFFER_SIZE", "1000000", 1); /* 16 MB segments */
	Extrae_init();
	if (Extrae_is_initialized() == EXTRAE_NOT_INITIALIZED) {
		fprintf(stderr, "bench: Extrae_init failed\n");
		exit(1);
	}
}

static void
big_fini(void)
{
	Extrae_fini();
	unsetenv("EXTRAE_BUFFER_SIZE");
	bu_rmtree(base);
	mkdir(base, 0755);
}

static double cpu_us(void);

/* p: wall and CPU time of the thread's first record, wall time of its
 * second */
static void *
first_on_thread(void *p)
{
	double *r = p, c0 = cpu_us(), t0 = now_us();
	Extrae_event(3, 1);
	r[0] = now_us() - t0;
	r[1] = cpu_us() - c0;
	t0 = now_us();
	Extrae_event(3, 2);
	r[2] = now_us() - t0;
	return NULL;
}

static void *
nothing(void *p)
{
	return p;
}

static double
thread_start_us(void)
{
	pthread_t th;
	double t0 = now_us();
	if (pthread_create(&th, NULL, nothing, NULL)) {
		perror("pthread_create");
		exit(1);
	}
	pthread_join(th, NULL);
	return now_us() - t0;
}

/* The first record of the init thread, and of a thread started 20 ms
 * after init (a program's threads start after its init). */
static void
first_event(double *init_us, double thread_us[3])
{
	pthread_t th;
	struct timespec gap = {0, 20000000};
	big_init("first");
	double t0 = now_us();
	Extrae_event(3, 1);
	*init_us = now_us() - t0;
	nanosleep(&gap, NULL);
	if (pthread_create(&th, NULL, first_on_thread, thread_us)) {
		perror("pthread_create");
		exit(1);
	}
	pthread_join(th, NULL);
	big_fini();
}

static double
cpu_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double
worst_record_us(uint64_t n, double (*clk)(void))
{
	double worst = 0;
	big_init("worst");
	Extrae_event(1, 0);
	for (uint64_t i = 0; i < n; i++) {
		double t0 = clk();
		Extrae_event(2, i);
		double d = clk() - t0;
		if (d > worst)
			worst = d;
	}
	big_fini();
	return worst;
}

static int
dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Like bench_trace.c, each measurement runs on a thread of its own. */
struct job {
	double (*fn)(uint64_t);
	double ns;
};

static void *
job_run(void *p)
{
	struct job *j = p;
	j->ns = j->fn(NREC);
	return NULL;
}

static double
on_thread(double (*fn)(uint64_t))
{
	struct job j = {fn, 0};
	pthread_t th;
	if (pthread_create(&th, NULL, job_run, &j)) {
		perror("pthread_create");
		exit(1);
	}
	pthread_join(th, NULL);
	return j.ns;
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
	unsetenv("EXTRAE_CONFIG_FILE");
	double on = 1e30, fl = 1e30;
	for (int r = 0; r < REPEAT; r++) {
		double v = on_thread(bu_floor_ns);
		if (v < fl)
			fl = v;
		v = on_thread(event_ns);
		if (v < on)
			on = v;
	}
	bu_report("extrae.event_ns", on, "ns", fl);
	double fi = 0, ft[REPEAT], fs[REPEAT], fc = 0, ts = 1e30;
	for (int r = 0; r < REPEAT; r++) {
		double a, b[3], t = thread_start_us();
		first_event(&a, b);
		fi = a > fi ? a : fi;
		ft[r] = b[0];
		fc = b[1] > fc ? b[1] : fc;
		fs[r] = b[2];
		ts = t < ts ? t : ts;
	}
	qsort(ft, REPEAT, sizeof ft[0], dbl_cmp);
	qsort(fs, REPEAT, sizeof fs[0], dbl_cmp);
	bu_report("trace.first_event_us", ft[REPEAT - 1], "us", fs[REPEAT - 1]);
	printf("bench: trace.first_event_us.target = 50.00 us\n");
	bu_report("trace.first_event_us.median", ft[REPEAT / 2], "us",
	          fs[REPEAT / 2]);
	bu_report("trace.first_event_cpu_us", fc, "us", 0);
	bu_report("trace.thread_start_us", ts, "us", 0);
	bu_report("trace.first_event_us_init", fi, "us", 0);
	bu_report("trace.worst_record_us", worst_record_us(NREC, now_us), "us",
	          0);
	bu_report("trace.worst_record_cpu_us", worst_record_us(NREC, cpu_us),
	          "us", 0);
	bu_rmtree(base);
	return 0;
}
