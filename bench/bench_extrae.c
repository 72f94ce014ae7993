/*
 * The Extrae user API's cost on the tracer, beside the same floor as
 * trace.event_ns (bench_trace.c), measured in the same run.  Each figure
 * is the best of REPEAT runs, the floor too, alternating.
 *
 *   extrae.event_ns   one Extrae_event, tracing on (started by
 *                     Extrae_init from EXTRAE_* variables), 10M records,
 *                     files and segment growth included
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

#define NREC   10000000u
#define REPEAT 5

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
	bu_rmtree(base);
	return 0;
}
