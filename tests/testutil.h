/* Small helpers shared by the tests: checks, temp dirs (libdwtestutil,
 * testutil.c). */
#ifndef DW_TESTUTIL_H
#define DW_TESTUTIL_H

#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tu_tmp.h"

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

/* Checks that failed so far (testutil.c); tu_report prints it. */
extern int tu_failures;

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

/* Removes a directory tree. */
void tu_rmtree(const char *dir);

/*
 * 1 in a dwork worker: tests start workers from their own executable,
 * so their main runs again there before dw_init takes over, and a temp
 * directory made first would be left behind once per worker.
 */
int tu_in_worker(void);

/* Makes a fresh directory under $TMPDIR or /tmp; the name is static. */
const char *tu_tmpdir(const char *tag);

/* ns the calling thread has waited on a run queue (the second field of
 * /proc/thread-self/schedstat), 0 where the kernel does not say: what
 * a loaded machine added to what a test times. */
unsigned long long tu_queued_ns(void);

/* Prints "name: ok", or the number of failed checks; the exit code. */
int tu_report(const char *name);

#endif
