/*
 * The cost of tracing a cluster, measured in the same run:
 *
 *   trace.rpc_overhead_ratio  100,000 sequential dw_remotecall_fetch calls
 *                             to one worker with tracing on, divided by
 *                             the same with tracing off, both processes
 *                             pinned to one CPU (taskset -c 0: the stable
 *                             mode, no cross-CPU wake-ups); the median
 *                             of PAIRS interleaved off/on pairs' ratios,
 *                             their spread beside it (target <= 1.05)
 *   trace.rpc_overhead_ratio_unpinned   the same, unpinned
 *   trace.events_per_call     records written per remote call, by all
 *                             processes (caller and callee, all threads),
 *                             pinned as above (unpinned beside it: which
 *                             thread reads a frame then varies)
 *   trace.rpc_added_ns_per_call  pinned, each pair's median call on
 *                             less its median call off (a stretch of
 *                             calls slowed by another process moves a
 *                             total, not a median), the median over the
 *                             pairs; beside it its bound 1.5 x
 *                             events_per_call x trace.event_ns (an
 *                             event's cost measured in this run, in a
 *                             traced process of the same cluster) and
 *                             their ratio (target <= 1)
 *   rpc.fetch_instr_per_call, trace.rpc_instr_per_call  instructions per
 *                             call of every process (caller, callee, all
 *                             threads) from valgrind --tool=callgrind,
 *                             untraced and traced: the difference of a
 *                             run of 1,200 calls and one of 200, so
 *                             start-up and exit cancel; they do not
 *                             change with the machine's load
 *   trace.rpc_added_instr_per_call.target  the same bound in
 *                             instructions: 1.5 x events_per_call x one
 *                             event's instructions in a traced process
 *                             of the cluster (callgrind, 5,000,000 events)
 *   live.account_instr_per_call, live.account_instr_ratio  what the
 *                             always-on accounting adds to an untraced
 *                             call: the same with DWORK_ACCOUNT=0
 *                             beside it (issue 20's target 1.02)
 *
 * Each run is a child process (a cluster is set up once per process).
 * BENCH_QUICK=1 runs a tenth of the calls and no callgrind.
 */
#include <dirent.h>
#include "bench_util.h"
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dwork/dwork.h>
#include <dwork/trace.h>

#include "tracefile/reader.h"

#define CALLS 100000
#define PAIRS 9 /* interleaved off/on pinned runs (5 in BENCH_QUICK) */

static int
echo(const void *arg, size_t len, dw_reply *r)
{
	return dw_reply_set(r, arg, len);
}
DW_REGISTER(echo)

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof v[0], cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Child: a cluster of one worker, n calls; prints the seconds they took
 * and the median call in nanoseconds. */
static int
child(int argc, char **argv, const char *trace, int n, int timed)
{
	dw_options o = {.trace = trace, .no_merge = 1};
	if (dw_init_opts(&argc, &argv, &o) != DW_OK)
		return 1;
	int w;
	if (dw_addprocs(1, NULL, &w) != 1)
		return 1;
	if (n < 0) { /* the cost of one event in this traced process */
		double best = 1e30;
		for (int r = 0; r < 5; r++) {
			double t = now_s();
			for (int i = 0; i < 1000000; i++)
				dwt_event(71999999u, (uint64_t)i);
			t = (now_s() - t) * 1e9 / 1e6;
			best = t < best ? t : best;
		}
		printf("%.6f\n", best);
		fflush(stdout);
		dw_finalize();
		return 0;
	}
	uint64_t v = 1;
	/* timed: each call too (not in the callgrind runs, which count the
	 * calls' instructions alone) */
	double *t = timed ? malloc((size_t)(n > 0 ? n : 1) * sizeof *t) : NULL;
	if (timed && !t)
		return 1;
	double t0 = now_s();
	for (int i = 0; i < n; i++) {
		void *res;
		size_t len;
		double c0 = timed ? now_s() : 0;
		if (dw_remotecall_fetch(w, "echo", &v, 8, &res, &len) != DW_OK)
			return 1;
		if (timed)
			t[i] = now_s() - c0;
		free(res);
	}
	double total = now_s() - t0;
	printf("%.6f %.1f\n", total, timed && n > 0 ? median(t, n) * 1e9 : 0.0);
	free(t);
	fflush(stdout);
	dw_finalize();
	return 0;
}

/* The median call of the last run (ns). */
static double last_median_ns;

static double
run_cmd(const char *pre, const char *self, const char *trace, int n)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "%s%s --timed %s %d", pre, self, trace, n);
	FILE *p = popen(cmd, "r");
	double s = -1;
	last_median_ns = 0;
	if (!p || fscanf(p, "%lf", &s) != 1)
		s = -1;
	else if (fscanf(p, "%lf", &last_median_ns) != 1)
		last_median_ns = 0;
	if (p && pclose(p) != 0)
		s = -1;
	if (s < 0) {
		fprintf(stderr, "bench: '%s' failed\n", cmd);
		exit(1);
	}
	return s;
}

static double
run(const char *self, const char *trace, int n)
{
	return run_cmd("", self, trace, n);
}

static double
run_pinned(const char *self, const char *trace, int n)
{
	return run_cmd("taskset -c 0 ", self, trace, n);
}

static uint64_t
count_records(const char *dir)
{
	rd_errlist errs;
	rd_errlist_init(&errs, NULL);
	rd_dir *d;
	uint64_t n = 0;
	if (rd_dir_open(dir, &errs, &d) != DW_OK)
		return 0;
	for (size_t p = 0; p < d->nprocs; p++)
		for (size_t t = 0; t < d->procs[p].nthreads; t++) {
			rd_thread *th;
			rd_rec r;
			if (rd_thread_open(d->procs[p].thread_paths[t], &errs,
			                   &th) != DW_OK)
				continue;
			/* stored records: a state push or pop carrying an
			 * event is read as two records at one offset */
			uint64_t at = UINT64_MAX;
			while (rd_thread_next(th, &r))
				if (r.offset != at)
					at = r.offset, n++;
			rd_thread_close(th);
		}
	rd_dir_close(d);
	rd_errlist_free(&errs);
	return n;
}

static int
rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

static uint64_t
records_for(const char *self, const char *base, int n, int pinned)
{
	char dir[600];
	snprintf(dir, sizeof dir, "%s/calls%d", base, n);
	if (pinned)
		run_pinned(self, dir, n);
	else
		run(self, dir, n);
	uint64_t r = count_records(dir);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return r;
}

/* Instructions of every process of a run of n calls under callgrind
 * (its totals summed over the output files of all processes); 0 when
 * valgrind is missing or the run failed. */
static uint64_t
instructions(const char *self, const char *base, const char *env,
             const char *trace, int n)
{
	char cmd[2048], path[700];
	uint64_t total;

	snprintf(path, sizeof path, "%s/cg", base);
	mkdir(path, 0700);
	snprintf(cmd, sizeof cmd,
	         "DWORK_HEARTBEAT_MS=600000 DWORK_HEARTBEAT_TIMEOUT_MS=1200000 "
	         "%s valgrind --tool=callgrind --trace-children=yes "
	         "--callgrind-out-file=%s/cg.%%p %s --child %s %d "
	         ">/dev/null 2>&1",
	         env, path, self, trace, n);
	if (system(cmd) != 0)
		return 0;
	total = bu_cg_dir(path, "cg.");
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return total;
}

/* Instructions per call: the difference of 1,200 calls and 200. */
static double
instr_per_call(const char *self, const char *base, const char *env,
               const char *trace)
{
	uint64_t a = instructions(self, base, env, trace, 200);
	uint64_t b = instructions(self, base, env, trace, 1200);

	return a && b > a ? (double)(b - a) / 1000.0 : -1;
}

int
main(int argc, char **argv)
{
	if (argc >= 4 &&
	    (!strcmp(argv[1], "--child") || !strcmp(argv[1], "--timed")))
		return child(argc, argv, argv[2], atoi(argv[3]),
		             !strcmp(argv[1], "--timed"));
	if (argc > 1 && !strcmp(argv[1], "--dwork-worker")) {
		dw_init(&argc, &argv); /* a worker: never returns */
		return 1;
	}
	char self[4096];
	ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
	self[k > 0 ? k : 0] = 0;
	char base[256];
	const char *tmp = getenv("TMPDIR");
	snprintf(base, sizeof base, "%s/dwbench-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(base))
		return 1;
	char dir[600];
	snprintf(dir, sizeof dir, "%s/on", base);
	const char *q = getenv("BENCH_QUICK");
	int quick = q && *q && strcmp(q, "0");
	int calls = quick ? CALLS / 10 : CALLS;
	/* pinned: interleaved off/on pairs, the median of their ratios and
	 * of their added time (per-call medians, which a preempted stretch
	 * of calls cannot move); unpinned beside it, best of 3 each */
	int pairs = quick ? 5 : PAIRS;
	double ratio[PAIRS], added[PAIRS], added_tot[PAIRS], onv[PAIRS],
	    offv[PAIRS];
	double uoff = 1e30, uon = 1e30, ev = 1e30;
	for (int r = 0; r < pairs; r++) {
		offv[r] = run_pinned(self, "0", calls);
		double moff = last_median_ns;
		onv[r] = run_pinned(self, dir, calls);
		double mon = last_median_ns;
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		ratio[r] = onv[r] / offv[r];
		added[r] = mon - moff;
		added_tot[r] = (onv[r] - offv[r]) / calls * 1e9;
		if (r < 3) {
			double v = run(self, "0", calls);
			uoff = v < uoff ? v : uoff;
			v = run(self, dir, calls);
			uon = v < uon ? v : uon;
			nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
			v = run_pinned(self, dir, -1);
			ev = v < ev ? v : ev;
			nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		}
	}
	double m = median(ratio, pairs);
	printf("bench: trace.rpc_overhead_ratio = %.3f (one CPU, median of %d "
	       "interleaved pairs, spread %.3f-%.3f)\n",
	       m, pairs, ratio[0], ratio[pairs - 1]);
	printf("bench: trace.rpc_overhead_ratio.on_us_per_call = %.2f us\n",
	       median(onv, pairs) / calls * 1e6);
	printf("bench: trace.rpc_overhead_ratio.off_us_per_call = %.2f us\n",
	       median(offv, pairs) / calls * 1e6);
	printf("bench: trace.rpc_overhead_ratio.target = 1.05\n");
	printf("bench: trace.rpc_overhead_ratio_unpinned = %.3f (%.2f vs %.2f "
	       "us a call, best of 3 each)\n",
	       uon / uoff, uon / calls * 1e6, uoff / calls * 1e6);
	uint64_t r1 = records_for(self, base, 1000, 1);
	uint64_t r2 = records_for(self, base, 11000, 1);
	double epc = (double)(r2 - r1) / 10000.0;
	printf("bench: trace.events_per_call = %.2f records (one CPU)\n", epc);
	r1 = records_for(self, base, 1000, 0);
	r2 = records_for(self, base, 11000, 0);
	printf("bench: trace.events_per_call_unpinned = %.2f records\n",
	       (double)(r2 - r1) / 10000.0);
	printf("bench: trace.events_per_call.target = 12.00 records\n");
	printf("bench: trace.event_ns_in_cluster = %.2f ns\n", ev);
	double bound = 1.5 * epc * ev, am = median(added, pairs);
	printf("bench: trace.rpc_added_ns_per_call = %.0f ns (one CPU, median "
	       "call on - off, median of the %d pairs, spread %.0f-%.0f; "
	       "from the runs' totals %.0f ns)\n",
	       am, pairs, added[0], added[pairs - 1], median(added_tot, pairs));
	printf("bench: trace.rpc_added_ns_per_call.target = %.0f ns (1.5 x "
	       "events_per_call x event_ns, this run)\n",
	       bound);
	printf("bench: trace.rpc_added_ns_per_call.ratio = %.2f (target <= "
	       "1)\n",
	       am / bound);
	if (!quick && system("valgrind --version >/dev/null 2>&1") == 0) {
		double i_off = instr_per_call(self, base, "", "0");
		double i_on = instr_per_call(self, base, "", dir);
		double i_na =
		    instr_per_call(self, base, "DWORK_ACCOUNT=0", "0");
		double i_onna =
		    instr_per_call(self, base, "DWORK_ACCOUNT=0", dir);

		/* one event's instructions in a traced process of the
		 * cluster: 5,000,000 events less the same run without */
		uint64_t e0 = instructions(self, base, "", dir, 0);
		uint64_t e1 = instructions(self, base, "", dir, -1);
		double i_ev = e0 && e1 > e0 ? (double)(e1 - e0) / 5e6 : -1;

		if (i_off > 0 && i_on > 0 && i_na > 0 && i_onna > 0 &&
		    i_ev > 0) {
			printf("bench: rpc.fetch_instr_per_call = %.0f "
			       "instructions (callgrind, all processes)\n",
			       i_off);
			printf("bench: trace.rpc_instr_per_call = %.0f "
			       "instructions (+%.0f traced, %.0f a record)\n",
			       i_on, i_on - i_off, (i_on - i_off) / epc);
			printf("bench: trace.event_instr_in_cluster = %.1f "
			       "instructions\n",
			       i_ev);
			printf("bench: trace.rpc_added_instr_per_call.target = "
			       "%.0f instructions (1.5 x events_per_call x "
			       "event_instr)\n",
			       1.5 * epc * i_ev);
			printf("bench: live.account_instr_per_call = %.0f "
			       "instructions (untraced, accounting on; off: "
			       "%.0f; traced with it off: %.0f)\n",
			       i_off - i_na, i_na, i_onna);
			printf("bench: live.account_instr_ratio = %.3f "
			       "(untraced call, accounting on / off; target "
			       "1.02)\n",
			       i_off / i_na);
		} else {
			printf("bench: rpc.fetch_instr_per_call: callgrind "
			       "run failed (missing)\n");
		}
	} else {
		printf("bench: rpc.fetch_instr_per_call: %s (missing)\n",
		       quick ? "BENCH_QUICK" : "no valgrind");
	}
	nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
