/*
 * What the tracer benchmarks share: the clock, the output format, and
 * the floor of one record (a timestamp read plus one 16-byte store into a
 * freshly mapped array of the same total size, page faults included).
 */
#ifndef DW_BENCH_UTIL_H
#define DW_BENCH_UTIL_H

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#define BU_NI __attribute__((no_instrument_function))

/* True under `make bench-quick` (BENCH_QUICK set, not 0): a tenth of
 * the work, for development; the figures are noisier. */
static inline int BU_NI
bu_quick(void)
{
	/* read once: it sizes loops whose bodies are nanoseconds */
	static int quick = -1;

	if (quick < 0) {
		const char *q = getenv("BENCH_QUICK");

		quick = q && *q && strcmp(q, "0") != 0;
	}
	return quick;
}

static inline double BU_NI
bu_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline uint64_t BU_NI
bu_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#else
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

/* Prints "bench: NAME = V UNIT" and, with a floor, its floor and ratio. */
static inline void BU_NI
bu_report(const char *name, double v, const char *unit, double floor)
{
	printf("bench: %s = %.2f %s\n", name, v, unit);
	if (floor > 0) {
		printf("bench: %s.floor = %.2f %s\n", name, floor, unit);
		printf("bench: %s.ratio = %.2f\n", name, v / floor);
	}
}

/* The floor of one record, in ns, over n records. */
static inline double BU_NI
bu_floor_ns(uint64_t n)
{
	size_t bytes = n * 16;
	unsigned char *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
	                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	double t0 = bu_now_s();
	for (uint64_t i = 0; i < n; i++) {
		uint64_t w[2] = {bu_ticks(), i};
		memcpy(m + i * 16, w, 16);
		__asm__ volatile("" ::"r"(m) : "memory");
	}
	double ns = (bu_now_s() - t0) * 1e9 / (double)n;
	munmap(m, bytes);
	return ns;
}

static int BU_NI
bu_rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

/* Removes a directory tree. */
static inline void BU_NI
bu_rmtree(const char *dir)
{
	nftw(dir, bu_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
