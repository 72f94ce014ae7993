/* Tick source of the tracer: the invariant TSC or CLOCK_MONOTONIC_RAW. */
#ifndef DW_TRACE_CLOCK_H
#define DW_TRACE_CLOCK_H

#include <stdint.h>
#include <time.h>

/* The two words every record reads, on one cache line of their own and
 * reached PC-relative (hidden): whether the TSC is the clock, and
 * whether tracing records (a copy of dwt_recording_, kept by trace.c:
 * the exported flag is reached through the GOT, and in a program that
 * reads it inline it is a copy in the program's own data, another line
 * and page).  A record after a context switch touches one line for
 * both instead of three (docs/tracing.md, "Cost"). */
struct clk_hot {
	int use_tsc;
	int on;
};
extern struct clk_hot clk_hot;
#define clk_use_tsc clk_hot.use_tsc
extern int clk_skewed;

/* Test hook (DWT_TEST_CLOCK_SKEW): this process's clock made to run off
 * by an offset and a drift, as a badly synchronised host's would. */
uint64_t clk_apply_skew(uint64_t ns);

static inline uint64_t
clk_raw_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	uint64_t ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return __builtin_expect(clk_skewed, 0) ? clk_apply_skew(ns) : ns;
}

/* The hot-path timestamp. */
static inline uint64_t
clk_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (__builtin_expect(clk_use_tsc, 1))
		return __builtin_ia32_rdtsc();
#endif
	return clk_raw_ns();
}

/* Chooses the tick source (enum dwt_clock).  Returns DW_EINVAL when TSC
 * is asked for and this machine has no trustworthy one. */
int clk_setup(int kind);

/* A calibration pair: ticks and CLOCK_MONOTONIC_RAW ns at one instant. */
void clk_pair(uint64_t *ticks, uint64_t *ns);

/* Ticks per second, measured at clk_setup (1e9 for the clock source). */
uint64_t clk_ticks_per_s(void);

/* 1 when the CPU has an invariant TSC the kernel uses as clocksource. */
int clk_tsc_usable(void);

#endif
