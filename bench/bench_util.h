/*
 * What the tracer benchmarks share: the clock, the output format, and
 * the floor of one record (a timestamp read plus one 16-byte store into a
 * freshly mapped array of the same total size, page faults included).
 */
#ifndef DW_BENCH_UTIL_H
#define DW_BENCH_UTIL_H

#include <dirent.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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
bu_rmtree(const char *top)
{
	nftw(top, bu_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The instructions a callgrind output file counts (its "totals:" or
 * "summary:" line); 0 when it cannot be read. */
static inline uint64_t BU_NI
bu_cg_file(const char *path)
{
	char line[512];
	uint64_t total = 0;
	FILE *f = fopen(path, "r");

	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "totals:", 7) ||
		    !strncmp(line, "summary:", 8)) {
			total = strtoull(strchr(line, ':') + 1, NULL, 10);
			break;
		}
	if (f)
		fclose(f);
	return total;
}

/* The sum of bu_cg_file over the files of dir whose names start with
 * prefix (one a process with --callgrind-out-file=WHERE/cg.%p), each
 * removed once read. */
static inline uint64_t BU_NI
bu_cg_dir(const char *where, const char *prefix)
{
	char f[1200];
	uint64_t total = 0;
	DIR *d = opendir(where);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		if (strncmp(e->d_name, prefix, strlen(prefix)) ||
		    e->d_name[0] == '.')
			continue;
		snprintf(f, sizeof f, "%s/%s", where, e->d_name);
		total += bu_cg_file(f);
		unlink(f);
	}
	if (d)
		closedir(d);
	return total;
}

#endif
