/*
 * Built with -finstrument-functions (tests/CMakeLists.txt), for the
 * truth_instrument test: a call tree of known durations, with no tracing
 * call in it besides the session's start and end.  truth_outer works
 * 20 ms, calls truth_inner (30 ms of work), works 10 ms more; main runs
 * that twice.  It measures each call around it (CLOCK_MONOTONIC, no
 * tracer involved) and writes what it measured to the file FACTS.
 *
 * usage: truth_instrument_prog dwt|extrae FACTS
 *   dwt     the tracer's API: dwt_init(NULL) (DWT_* variables)
 *   extrae  the Extrae API: Extrae_init (EXTRAE_* variables)
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <dwork/trace.h>

#include "extrae_user_events.h"

#define NOINST __attribute__((no_instrument_function))
#define RUNS   2

static uint64_t NOINST
mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void NOINST
work_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts))
		;
}

static uint64_t inner_ns[RUNS];
static int run;

static void __attribute__((noinline)) truth_inner(void)
{
	work_ms(30);
}

static void __attribute__((noinline)) truth_outer(void)
{
	work_ms(20);
	uint64_t t0 = mono_ns();
	truth_inner();
	inner_ns[run] = mono_ns() - t0;
	work_ms(10);
}

int
main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[1], "dwt") && strcmp(argv[1], "extrae")))
		return 2;
	int extrae = !strcmp(argv[1], "extrae");
	FILE *f = fopen(argv[2], "w");
	if (!f)
		return 2;
	uint64_t outer_ns[RUNS], t_start = mono_ns();
	if (extrae)
		Extrae_init();
	else if (dwt_init(NULL) != DW_OK)
		return 1;
	for (run = 0; run < RUNS; run++) {
		uint64_t t0 = mono_ns();
		truth_outer();
		outer_ns[run] = mono_ns() - t0;
	}
	if (extrae)
		Extrae_fini();
	else
		dwt_fini();
	uint64_t span = mono_ns() - t_start;
	for (int i = 0; i < RUNS; i++)
		fprintf(f, "%llu %llu\n", (unsigned long long)outer_ns[i],
		        (unsigned long long)inner_ns[i]);
	fprintf(f, "%llu\n", (unsigned long long)span);
	return fclose(f) ? 1 : 0;
}
