#include "trace/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dwork/error.h>
#include <dwork/trace.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

struct clk_hot clk_hot __attribute__((aligned(64)));
int clk_skewed;
static int64_t skew_off;
static double skew_ppm;
static uint64_t skew_base;

uint64_t
clk_apply_skew(uint64_t ns)
{
	double drift = (double)(int64_t)(ns - skew_base) * skew_ppm * 1e-6;
	return (uint64_t)((int64_t)ns + skew_off + (int64_t)drift);
}

/* DWT_TEST_CLOCK_SKEW="OFFSET_NS[,DRIFT_PPM]" (test only). */
static int
clk_read_skew(void)
{
	const char *v = getenv("DWT_TEST_CLOCK_SKEW");
	if (!v || !*v)
		return DW_OK;
	char *end;
	long long off = strtoll(v, &end, 10);
	double ppm = 0;
	if (*end == ',')
		ppm = strtod(end + 1, &end);
	if (*end || ppm < -10000 || ppm > 10000) {
		fprintf(stderr,
		        "dwtrace: DWT_TEST_CLOCK_SKEW='%s' is not valid: "
		        "expected OFFSET_NS[,DRIFT_PPM]\n",
		        v);
		return DW_EINVAL;
	}
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	skew_base = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	skew_off = off;
	skew_ppm = ppm;
	clk_skewed = 1;
	return DW_OK;
}
static uint64_t clk_tps = 1000000000u;

static int
clk_cpu_invariant_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
		return 0;
	__get_cpuid(0x80000007u, &a, &b, &c, &d);
	return (d >> 8) & 1u;
#else
	return 0;
#endif
}

/* The kernel drops the TSC as clocksource when it finds it unstable
 * (unsynchronised sockets, a bad hypervisor); trust its verdict. */
static int
clk_kernel_uses_tsc(void)
{
	char s[32] = {0};
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/"
	                "current_clocksource",
	                "r");
	if (!f)
		return 0;
	int ok = fgets(s, sizeof s, f) && strncmp(s, "tsc", 3) == 0;
	fclose(f);
	return ok;
}

int
clk_tsc_usable(void)
{
	return clk_cpu_invariant_tsc() && clk_kernel_uses_tsc();
}

void
clk_pair(uint64_t *ticks, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	if (!clk_use_tsc) {
		*ticks = *ns = clk_raw_ns();
		return;
	}
	/* Keep the narrowest of three windows around the tick read. */
	for (int i = 0; i < 3; i++) {
		uint64_t n0 = clk_raw_ns();
		uint64_t t = clk_ticks();
		uint64_t n1 = clk_raw_ns();
		if (n1 - n0 < best) {
			best = n1 - n0;
			*ticks = t;
			*ns = n0 + (n1 - n0) / 2;
		}
	}
}

static void
clk_measure_rate(void)
{
	uint64_t t0, n0, t1, n1;
	clk_pair(&t0, &n0);
	do
		clk_pair(&t1, &n1);
	while (n1 - n0 < 2000000u);
	clk_tps =
	    (uint64_t)((unsigned __int128)(t1 - t0) * 1000000000u / (n1 - n0));
}

int
clk_setup(int kind)
{
	int usable = clk_tsc_usable();
	if (kind == DWT_CLOCK_TSC && !usable)
		return DW_EINVAL;
	if (clk_read_skew() != DW_OK)
		return DW_EINVAL;
	clk_use_tsc =
	    kind == DWT_CLOCK_TSC || (kind == DWT_CLOCK_AUTO && usable);
	if (clk_use_tsc)
		clk_measure_rate();
	else
		clk_tps = 1000000000u;
	return DW_OK;
}

uint64_t
clk_ticks_per_s(void)
{
	return clk_tps;
}
