/*
 * The paired on/off method of the cluster benchmarks (bench_live,
 * bench_trace_rpc): two servers, one in each mode, alive at once and
 * pinned to CPU 0, run blocks in turn (off first, then on first, so that
 * a drift of the load falls on both alike), each block's figures read
 * back from the server; then the median of the pairs' ratios with a 95%
 * interval from the order statistics, the quartiles and the spread.
 */
#ifndef DW_BENCH_PAIR_H
#define DW_BENCH_PAIR_H

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

#define BP_FIGS 3 /* figures a block, at most */

/* A server: a child running SELF --serve ARG RFD WFD, which reads a
 * count on RFD, runs a block of it and writes the block's figures on
 * WFD (0 ends it). */
struct bp_srv {
	pid_t pid;
	FILE *to, *from;
};

/* Starts a server pinned to CPU 0 (its workers inherit the pin), with
 * env (may be NULL) set to val in its environment. */
static inline int BU_NI
bp_srv_start(struct bp_srv *sv, const char *self, const char *arg,
             const char *env, const char *val)
{
	int a[2], b[2];
	if (pipe(a) != 0 || pipe(b) != 0)
		return -1;
	sv->pid = fork();
	if (sv->pid < 0)
		return -1;
	if (sv->pid == 0) {
		char r[16], w[16];
		close(a[1]);
		close(b[0]);
		snprintf(r, sizeof r, "%d", a[0]);
		snprintf(w, sizeof w, "%d", b[1]);
		if (env)
			setenv(env, val, 1);
		cpu_set_t cs;
		CPU_ZERO(&cs);
		CPU_SET(0, &cs);
		if (sched_setaffinity(0, sizeof cs, &cs) != 0)
			_exit(1);
		execl(self, self, "--serve", arg, r, w, (char *)NULL);
		_exit(1);
	}
	close(a[0]);
	close(b[1]);
	sv->to = fdopen(a[1], "w");
	sv->from = fdopen(b[0], "r");
	return sv->to && sv->from ? 0 : -1;
}

/* One block of n: its k figures into fig (exits when the server fails). */
static inline void BU_NI
bp_srv_block(struct bp_srv *sv, int n, double *fig, int k)
{
	fprintf(sv->to, "%d\n", n);
	fflush(sv->to);
	for (int i = 0; i < k; i++)
		if (fscanf(sv->from, "%lf", &fig[i]) != 1) {
			fprintf(stderr, "bench: a server's block failed\n");
			exit(1);
		}
}

static inline void BU_NI
bp_srv_stop(struct bp_srv *sv)
{
	fprintf(sv->to, "0\n");
	fclose(sv->to);
	fclose(sv->from);
	waitpid(sv->pid, NULL, 0);
}

/* After warm blocks of each, pairs pairs of blocks of n: pair r's k
 * figures in offf[r] and onf[r], the order of each pair the other than
 * the one before.  BENCH_BLOCKS=1 prints every block's figures 1 and 0
 * (the servers' CPU and wall time an item) on stderr. */
static inline void BU_NI
bp_pairs(struct bp_srv *off, struct bp_srv *on, int n, int warm, int pairs,
         int k, double (*offf)[BP_FIGS], double (*onf)[BP_FIGS])
{
	for (int r = 0; r < warm; r++) {
		bp_srv_block(off, n, offf[0], k);
		bp_srv_block(on, n, onf[0], k);
	}
	for (int r = 0; r < pairs; r++) {
		for (int j = 0; j < 2; j++) {
			if ((j == 0) == (r % 2 == 0))
				bp_srv_block(off, n, offf[r], k);
			else
				bp_srv_block(on, n, onf[r], k);
		}
		if (getenv("BENCH_BLOCKS"))
			fprintf(stderr, "block %d off %.0f %.0f on %.0f %.0f\n",
			        r, offf[r][1], offf[r][0], onf[r][1],
			        onf[r][0]);
	}
}

static inline int BU_NI
bp_cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Sorts v. */
static inline double BU_NI
bp_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof v[0], bp_cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Of a sorted v: the value a fraction q of the way (interpolated). */
static inline double BU_NI
bp_quantile(const double *v, int n, double q)
{
	double x = q * (n - 1);
	int i = (int)x;
	return i + 1 < n ? v[i] + (x - i) * (v[i + 1] - v[i]) : v[n - 1];
}

/* Of a sorted v: a 95% interval of its median from the order statistics
 * (ranks n/2 -+ 0.98 sqrt(n), rounded to the nearest: the largest d with
 * (d - 1/2)^2 <= 0.9604 n, no libm needed). */
static inline void BU_NI
bp_median_ci(const double *v, int n, double *lo, double *hi)
{
	int d = 0;
	while ((d + 0.5) * (d + 0.5) <= 0.9604 * n)
		d++;
	int a = n / 2 - d, b = (n - 1) / 2 + d;
	*lo = v[a < 0 ? 0 : a];
	*hi = v[b >= n ? n - 1 : b];
}

/* The 1-minute load average (-1 unknown), printed beside the timings,
 * which depend on it. */
static inline double BU_NI
bp_load_avg(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");
	if (f && fscanf(f, "%lf", &l) != 1)
		l = -1;
	if (f)
		fclose(f);
	return l;
}

#endif
