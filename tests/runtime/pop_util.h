/*
 * What the real-run POP tests share (pop_real, pop_whatif, pop_netem):
 * the clock, running the test's own binary as a traced master whose
 * merged trace is then read by `dwork stats`'s library, the known-answer
 * check that prints what it compared, and the critical path's entry of
 * a function.
 */
#ifndef DW_TEST_POP_UTIL_H
#define DW_TEST_POP_UTIL_H

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dwork/trace.h>

#include "output/stats.h"
#include "testutil.h"

static inline uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline double
ms_of(uint64_t ns)
{
	return (double)ns / 1e6;
}

/* Fails the test unless lo <= got <= hi; prints the comparison. */
static inline void
within(const char *what, double got, double lo, double hi)
{
	printf("%-44s %9.4f (known: %.4f .. %.4f)\n", what, got, lo, hi);
	if (got < lo || got > hi) {
		fprintf(stderr, "%s: %.4f, not in %.4f .. %.4f\n", what, got,
		        lo, hi);
		tu_failures++;
	}
}

/* Waits for the master pid, which must exit 0 leaving the merged
 * DIR/trace.prv, and returns that trace's statistics (read with no
 * problem). */
static inline st_stats *
master_stats(pid_t pid, const char *dir)
{
	char prv[720];
	st_stats *s;
	rd_errlist errs;
	int st;

	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	snprintf(prv, sizeof prv, "%s/trace.prv", dir);
	rd_errlist_init(&errs, stderr);
	REQUIRE(st_stats_new(prv, &s) == DW_OK);
	REQUIRE(st_stats_read(prv, s, &errs) == DW_OK);
	CHECK_EQ_U64(errs.n, 0);
	rd_errlist_free(&errs);
	return s;
}

/* Runs `self flag [name] DIR` in a new scratch directory (its name in
 * dir; stdout to DIR/master.out), which must exit 0 leaving the merged
 * DIR/trace.prv, and returns that trace's statistics. */
static inline st_stats *
run_master(const char *self, const char *tag, const char *flag,
           const char *name, char *dir, size_t len)
{
	char out[700];

	snprintf(dir, len, "%s", tu_tmpdir(tag));
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		snprintf(out, sizeof out, "%s/master.out", dir);
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(127);
		close(fd);
		if (name)
			execl(self, self, flag, name, dir, (char *)NULL);
		else
			execl(self, self, flag, dir, (char *)NULL);
		_exit(127);
	}
	return master_stats(pid, dir);
}

/* The index of fn's entry on the critical path; s->npath when it is
 * not on it. */
static inline size_t
path_index(const st_stats *s, const char *fn)
{
	size_t i = 0;

	for (; i < s->npath; i++) {
		const char *n =
		    st_value_name(s, DW_EV_FUNCTION, s->path[i].func);

		if (n && !strcmp(n, fn))
			break;
	}
	return i;
}

#endif
