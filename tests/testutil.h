/* Small helpers shared by the tests: checks, temp dirs, reading traces. */
#ifndef DW_TESTUTIL_H
#define DW_TESTUTIL_H

#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TEST_SKIP 77

/* Under AddressSanitizer freed memory sits in a quarantine, so RSS
 * bounds say nothing there; LeakSanitizer checks the freeing instead. */
#if defined(__SANITIZE_ADDRESS__)
#define TU_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TU_SANITIZED 1
#endif
#endif
#ifndef TU_SANITIZED
#define TU_SANITIZED 0
#endif

static int tu_failures;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
			        __LINE__, #cond);                              \
			tu_failures++;                                         \
		}                                                              \
	} while (0)

#define CHECK_EQ_U64(a, b)                                                     \
	do {                                                                   \
		uint64_t tu_a = (uint64_t)(a), tu_b = (uint64_t)(b);           \
		if (tu_a != tu_b) {                                            \
			fprintf(stderr,                                        \
			        "%s:%d: %s == %s failed: %" PRIu64             \
			        " != %" PRIu64 "\n",                           \
			        __FILE__, __LINE__, #a, #b, tu_a, tu_b);       \
			tu_failures++;                                         \
		}                                                              \
	} while (0)

#define REQUIRE(cond)                                                          \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: required: %s\n", __FILE__,     \
			        __LINE__, #cond);                              \
			exit(1);                                               \
		}                                                              \
	} while (0)

static int
tu_rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	remove(p);
	return 0; /* one that cannot go must not keep the rest */
}

/* Removes a directory tree. */
static inline void
tu_rmtree(const char *dir)
{
	nftw(dir, tu_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * 1 in a dwork worker: tests start workers from their own executable,
 * so their main runs again there before dw_init takes over, and a temp
 * directory made first would be left behind once per worker.
 */
static inline int
tu_in_worker(void)
{
	char b[4096];
	FILE *f = fopen("/proc/self/cmdline", "r");
	if (!f)
		return 0;
	size_t n = fread(b, 1, sizeof b - 1, f);
	fclose(f);
	for (size_t i = 0; i < n; i += strlen(b + i) + 1) {
		b[n] = 0;
		if (!strcmp(b + i, "--dwork-worker") ||
		    !strcmp(b + i, "--dwork-dial"))
			return 1;
	}
	return 0;
}

/* Makes a fresh directory under $TMPDIR or /tmp; the name is static. */
static inline const char *
tu_tmpdir(const char *tag)
{
	static char path[512];
	if (tu_in_worker()) { /* main runs again in workers: make nothing */
		snprintf(path, sizeof path, "/nonexistent/dwtest-%s-worker",
		         tag);
		return path;
	}
	const char *base = getenv("TMPDIR");
	snprintf(path, sizeof path, "%s/dwtest-%s-XXXXXX", base ? base : "/tmp",
	         tag);
	REQUIRE(mkdtemp(path) != NULL);
	return path;
}

static inline int
tu_report(const char *name)
{
	if (tu_failures) {
		fprintf(stderr, "%s: %d check(s) failed\n", name, tu_failures);
		return 1;
	}
	printf("%s: ok\n", name);
	return 0;
}

#endif
