/*
 * trace.instrumented_call_ns: the cost of one function call (entry and
 * exit records) in a program built with -finstrument-functions, beside
 * its floor measured in the same run: two dwt_event records.  Target:
 * ratio <= 2.  Best of 5 each, alternating.
 */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <dwork/trace.h>

#include "bench_util.h"

#define NI __attribute__((no_instrument_function))
#define N  (bu_quick() ? 500000u : 5000000u)

static volatile int sink;

static void __attribute__((noinline)) work(void)
{
	sink++;
}

static double NI
measure(const char *dir, int instrumented)
{
	dwt_config c;
	dwt_config_defaults(&c);
	c.dir = dir;
	c.program = "bench";
	if (dwt_init(&c) != DW_OK)
		exit(1);
	dwt_event(1, 0);      /* registers this thread */
	const unsigned n = N; /* once, outside the measured loops */
	double t0 = bu_now_s();
	if (instrumented)
		for (unsigned i = 0; i < n; i++)
			work();
	else
		for (unsigned i = 0; i < n; i++) {
			dwt_event(2, i);
			dwt_event(3, i);
		}
	double ns = (bu_now_s() - t0) * 1e9 / n;
	dwt_fini();
	bu_rmtree(dir);
	return ns;
}

int NI
main(void)
{
	char dir[256];
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/dwbench-ins-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		return 1;
	double call = 1e30, two = 1e30;
	for (int r = 0; r < 5; r++) {
		double v = measure(dir, 0);
		two = v < two ? v : two;
		v = measure(dir, 1);
		call = v < call ? v : call;
	}
	rmdir(dir);
	printf("bench: trace.instrumented_call_ns = %.2f ns\n", call);
	printf("bench: trace.instrumented_call_ns.floor = %.2f ns\n", two);
	printf("bench: trace.instrumented_call_ns.ratio = %.2f\n", call / two);
	printf("bench: trace.instrumented_call_ns.target_ratio = 2.00\n");
	return 0;
}
