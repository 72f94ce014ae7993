/*
 * The cost of tracing a cluster, measured in the same run:
 *
 *   trace.rpc_overhead_ratio  CALLS sequential dw_remotecall_fetch calls
 *                             to one worker with tracing on over the same
 *                             with it off, both processes pinned to one
 *                             CPU (taskset -c 0: the stable mode, no
 *                             cross-CPU wake-ups), in CPU time: every
 *                             thread of the master and of the worker
 *                             (CLOCK_PROCESS_CPUTIME_ID of each, read
 *                             around the calls), so that the time another
 *                             process takes on that CPU is not counted;
 *                             the median of PAIRS interleaved off/on
 *                             pairs' ratios (the order alternating, off
 *                             first then on first, so a drift in the
 *                             machine's load cancels), their interquartile
 *                             range and spread beside it (target <= 1.05);
 *                             the same from the runs' wall times beside it
 *                             (trace.rpc_overhead_ratio_wall)
 *   trace.rpc_overhead_ratio_unpinned   wall times, unpinned, best of 3
 *   trace.events_per_call     records written per remote call, by all
 *                             processes (caller and callee, all threads),
 *                             pinned as above (unpinned beside it: which
 *                             thread reads a frame then varies)
 *   trace.rpc_added_ns_per_call  pinned: each pair's CPU time a call on
 *                             less off of every thread but the tracer's
 *                             helpers ("dwtrace-prep"), the median over
 *                             the pairs (.threads, with its interval,
 *                             interquartile range and mean of the middle
 *                             half), plus the helpers' CPU time a call,
 *                             the mean over all traced blocks
 *                             (.segment_prep: it comes in lumps, a 256 KB
 *                             chunk of segment every few blocks, which a
 *                             median sees in some runs and not others);
 *                             _median_all, the median of the whole
 *                             difference (the estimate before session 6);
 *                             beside it its bound 1.5 x events_per_call x
 *                             trace.event_ns_in_cluster (one event's CPU
 *                             time in a traced process of the same
 *                             cluster, this run) and their ratio (target
 *                             <= 1); _alone: the median of the pairs whose
 *                             blocks had the CPU to themselves;
 *                             trace.event_prep_ns_in_cluster: the helper's
 *                             CPU time an event of those loops, which
 *                             event_ns (the thread's) leaves out
 *   trace.rpc_load_avg        the 1-minute load average when the pinned
 *                             pairs began and ended
 *   rpc.fetch_instr_per_call, trace.rpc_instr_per_call  instructions per
 *                             call of every process (caller, callee, all
 *                             threads) from valgrind --tool=callgrind,
 *                             untraced and traced: the difference of a
 *                             run of CG_CALLS + 200 calls and one of 200,
 *                             so start-up and exit cancel (the tracer's
 *                             clock-rate measurement, a 2 ms loop whose
 *                             length in instructions depends on the
 *                             machine's speed, is left out); the untraced
 *                             and traced runs of one length run at the
 *                             same time, so the I/O thread's periodic
 *                             wake-ups (a count per wall second) cost both
 *                             alike; these do not change with the load
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
 * BENCH_QUICK=1 runs a tenth of the calls, fewer pairs and no callgrind;
 * BENCH_BLOCKS=1 prints every pinned block's CPU and wall time a call
 * (ns) on stderr.
 */
#include <dirent.h>
#include <fcntl.h>
#include "bench_pair.h"
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

#define CALLS    100000
#define BLOCK    500   /* calls a block (250 in BENCH_QUICK) */
#define PAIRS    400   /* interleaved off/on blocks (40 in BENCH_QUICK) */
#define CG_CALLS 10000 /* callgrind: this many calls more than 200 */

static int
echo(const void *arg, size_t len, dw_reply *r)
{
	return dw_reply_set(r, arg, len);
}
DW_REGISTER(echo)

/* CPU time of every thread of this process, ns. */
static uint64_t
proc_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time of the tracer's helper thread(s) of this process ("dwtrace-prep":
 * growing, zero-filling and faulting in the mapped segments, unmapping
 * full ones), ns from their schedstat (the run time that
 * CLOCK_PROCESS_CPUTIME_ID sums); 0 untraced. */
static uint64_t
prep_cpu_ns(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	uint64_t sum = 0;
	char path[300], name[32];
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/comm",
		         e->d_name);
		FILE *f = fopen(path, "r");
		int is = f && fgets(name, sizeof name, f) &&
		         !strncmp(name, "dwtrace-prep", 12);
		if (f)
			fclose(f);
		snprintf(path, sizeof path, "/proc/self/task/%s/schedstat",
		         e->d_name);
		unsigned long long v;
		if (is && (f = fopen(path, "r"))) {
			if (fscanf(f, "%llu", &v) == 1)
				sum += v;
			fclose(f);
		}
	}
	if (d)
		closedir(d);
	return sum;
}

/* The worker's CPU time (all its threads) and its helper's, for the
 * timed runs; the helper's is read outside the window (before the
 * process's at a block's start, after it at its end: arg "e"). */
static int
cpu_ns(const void *arg, size_t len, dw_reply *r)
{
	uint64_t v[2];
	if (len == 1 && *(const char *)arg == 'e') {
		v[0] = proc_cpu_ns();
		v[1] = prep_cpu_ns();
	} else {
		v[1] = prep_cpu_ns();
		v[0] = proc_cpu_ns();
	}
	return dw_reply_set(r, v, sizeof v);
}
DW_REGISTER(cpu_ns)

static double
thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Of a sorted v: the mean of its middle half (a quarter cut each end). */
static double
mid_mean(const double *v, int n)
{
	int lo = n / 4, hi = n - n / 4;
	double s = 0;
	for (int i = lo; i < hi; i++)
		s += v[i];
	return s / (hi - lo);
}

/* The worker's CPU time, and its helper's in *prep (may be NULL); end:
 * at a block's end. */
static uint64_t
worker_cpu_ns(int w, uint64_t *prep, int end)
{
	void *res;
	size_t len;
	uint64_t v[2] = {0, 0};
	if (dw_remotecall_fetch(w, "cpu_ns", end ? "e" : "s", 1, &res, &len) ==
	        DW_OK &&
	    len == sizeof v)
		memcpy(v, res, sizeof v);
	free(res);
	if (prep)
		*prep = v[1];
	return v[0];
}

/* The cost of one event in this traced process: the best of 5 rounds of
 * 1,000,000, in this thread's CPU time (ns); *prep: the helper's CPU
 * time an event over the 5 rounds (preparing their 80 MB of segments),
 * which the thread's time leaves out. */
static double
event_ns(double *prep)
{
	double best = 1e30;
	uint64_t p0 = prep_cpu_ns();
	for (int r = 0; r < 5; r++) {
		double t = thread_cpu_s();
		for (int i = 0; i < 1000000; i++)
			dwt_event(71999999u, (uint64_t)i);
		t = (thread_cpu_s() - t) * 1e9 / 1e6;
		best = t < best ? t : best;
	}
	*prep = (double)(prep_cpu_ns() - p0) / 5e6;
	return best;
}

/* Child: a cluster of one worker, n calls.  Timed, it prints the seconds
 * they took and the CPU time of both processes a call (ns); n < 0: the
 * cost of one event.  Untimed (the callgrind runs) it prints nothing
 * and makes n calls only. */
static int
child(int argc, char **argv, const char *trace, int n, int timed)
{
	dw_options o = {.trace = trace, .no_merge = 1};
	if (dw_init_opts(&argc, &argv, &o) != DW_OK)
		return 1;
	int w;
	if (dw_addprocs(1, NULL, &w) != 1)
		return 1;
	if (n < 0) {
		double prep;
		double ev = event_ns(&prep);
		printf("%.6f %.3f\n", ev, prep);
		fflush(stdout);
		dw_finalize();
		return 0;
	}
	uint64_t v = 1, wc0 = timed ? worker_cpu_ns(w, NULL, 0) : 0;
	uint64_t mc0 = proc_cpu_ns();
	double t0 = bu_now_s();
	for (int i = 0; i < n; i++) {
		void *res;
		size_t len;
		if (dw_remotecall_fetch(w, "echo", &v, 8, &res, &len) != DW_OK)
			return 1;
		free(res);
	}
	double total = bu_now_s() - t0;
	uint64_t mc1 = proc_cpu_ns(),
	         wc1 = timed ? worker_cpu_ns(w, NULL, 1) : 0;
	if (timed)
		printf("%.6f %.1f\n", total,
		       n > 0 ? (double)(mc1 - mc0 + wc1 - wc0) / n : 0.0);
	fflush(stdout);
	dw_finalize();
	return 0;
}

/* Server: a cluster of one worker that runs a block of calls each time
 * it reads a count on fd rfd and writes the block's wall and CPU time a
 * call (ns, both processes) and its tracer helpers' share of that CPU
 * time on wfd; 0 ends it.  Two of them, one traced,
 * alive at once and pinned to one CPU, let the blocks alternate every
 * few milliseconds, so that both modes meet the same machine. */
static int
serve(int argc, char **argv, const char *trace, int rfd, int wfd)
{
	fcntl(rfd, F_SETFD, FD_CLOEXEC); /* not the worker's */
	fcntl(wfd, F_SETFD, FD_CLOEXEC);
	FILE *in = fdopen(rfd, "r"), *out = fdopen(wfd, "w");
	dw_options o = {.trace = trace, .no_merge = 1};
	int w;
	if (!in || !out || dw_init_opts(&argc, &argv, &o) != DW_OK)
		return 1;
	if (dw_addprocs(1, NULL, &w) != 1)
		return 1;
	char line[64];
	uint64_t v = 1;
	while (fgets(line, sizeof line, in)) {
		int n = atoi(line);
		if (n <= 0)
			break;
		uint64_t wp0, wp1, mp0 = prep_cpu_ns();
		uint64_t wc0 = worker_cpu_ns(w, &wp0, 0), mc0 = proc_cpu_ns();
		double t0 = bu_now_s();
		for (int i = 0; i < n; i++) {
			void *res;
			size_t len;
			if (dw_remotecall_fetch(w, "echo", &v, 8, &res, &len) !=
			    DW_OK)
				return 1;
			free(res);
		}
		double wall = bu_now_s() - t0;
		uint64_t mc1 = proc_cpu_ns(), mp1 = prep_cpu_ns();
		uint64_t wc1 = worker_cpu_ns(w, &wp1, 1);
		fprintf(out, "%.1f %.1f %.1f\n", wall * 1e9 / n,
		        (double)(mc1 - mc0 + wc1 - wc0) / n,
		        (double)(mp1 - mp0 + wp1 - wp0) / n);
		fflush(out);
	}
	dw_finalize();
	return 0;
}

/* The CPU time a call of the last run (ns, both processes). */
static double last_cpu_ns;

static double
run_cmd(const char *pre, const char *self, const char *trace, int n)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "%s%s --timed %s %d", pre, self, trace, n);
	FILE *p = popen(cmd, "r");
	double s = -1;
	last_cpu_ns = 0;
	if (!p || fscanf(p, "%lf", &s) != 1)
		s = -1;
	else if (fscanf(p, "%lf", &last_cpu_ns) != 1)
		last_cpu_ns = 0;
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

/* One run of n calls under callgrind: its command, its output files in
 * base/cg<k>.  The tracer's clock-rate measurement (clk_setup: a 2 ms
 * loop, as many instructions as the machine is fast) is left out. */
static void
cg_cmd(char *cmd, size_t cap, const char *self, const char *base, int k,
       const char *env, const char *trace, int n)
{
	snprintf(
	    cmd, cap,
	    "(DWORK_HEARTBEAT_MS=600000 DWORK_HEARTBEAT_TIMEOUT_MS=1200000 "
	    "%s valgrind --tool=callgrind --trace-children=yes "
	    "--toggle-collect=clk_setup --collect-atstart=yes "
	    "--callgrind-out-file=%s/cg%d/cg.%%p %s --child %s %d "
	    ">/dev/null 2>&1 || echo x >%s/cg%d/failed)",
	    env, base, k, self, trace, n, base, k);
}

/* Instructions of every process (callgrind's totals summed over their
 * files) of two runs of n calls made at the same time, so that the I/O
 * threads' periodic wake-ups, which follow the wall clock, fall alike on
 * both (trace1 NULL: the first alone); 0 when valgrind is missing or a
 * run failed. */
static void
instructions2(const char *self, const char *base, const char *env0,
              const char *trace0, const char *env1, const char *trace1, int n,
              uint64_t out[2])
{
	char a[1200], b[1200], cmd[2600], path[700];
	for (int k = 0; k < 2; k++) {
		snprintf(path, sizeof path, "%s/cg%d", base, k);
		mkdir(path, 0700);
	}
	cg_cmd(a, sizeof a, self, base, 0, env0, trace0, n);
	if (trace1) {
		cg_cmd(b, sizeof b, self, base, 1, env1, trace1, n);
		snprintf(cmd, sizeof cmd, "%s & %s; wait", a, b);
	} else {
		snprintf(cmd, sizeof cmd, "%s", a);
	}
	int ok = system(cmd) == 0;
	for (int k = 0; k < 2; k++) {
		snprintf(path, sizeof path, "%s/cg%d/failed", base, k);
		ok = ok && access(path, F_OK) != 0;
		snprintf(path, sizeof path, "%s/cg%d", base, k);
		out[k] = bu_cg_dir(path, "cg.");
		nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	}
	if (!ok)
		out[0] = out[1] = 0;
}

/* Instructions per call of two configurations, each the difference of
 * 200 + CG_CALLS calls and 200 (start-up and exit cancel). */
static void
instr_per_call2(const char *self, const char *base, const char *env0,
                const char *trace0, const char *env1, const char *trace1,
                double out[2])
{
	uint64_t a[2], b[2];
	instructions2(self, base, env0, trace0, env1, trace1, 200, a);
	instructions2(self, base, env0, trace0, env1, trace1, 200 + CG_CALLS,
	              b);
	for (int k = 0; k < 2; k++)
		out[k] =
		    a[k] && b[k] > a[k] ? (double)(b[k] - a[k]) / CG_CALLS : -1;
}

int
main(int argc, char **argv)
{
	if (argc >= 4 &&
	    (!strcmp(argv[1], "--child") || !strcmp(argv[1], "--timed")))
		return child(argc, argv, argv[2], atoi(argv[3]),
		             !strcmp(argv[1], "--timed"));
	if (argc >= 5 && !strcmp(argv[1], "--serve"))
		return serve(argc, argv, argv[2], atoi(argv[3]), atoi(argv[4]));
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
	/* pinned: an untraced and a traced cluster alive at once on one
	 * CPU, blocks of calls alternating between them (the order of each
	 * pair alternating too), so that a pair's two blocks meet the same
	 * machine within milliseconds; each block in CPU time of both its
	 * processes (another process's time on the CPU is not counted);
	 * the median of the pairs' ratios and differences */
	int block = quick ? BLOCK / 2 : BLOCK;
	int pairs = quick ? PAIRS / 10 : PAIRS;
	double ratio[PAIRS], wratio[PAIRS], added_w[PAIRS], onv[PAIRS],
	    offv[PAIRS], onw[PAIRS], offw[PAIRS], onp[PAIRS], offp[PAIRS],
	    added_t[PAIRS], added_all[PAIRS];
	static double onf[PAIRS][BP_FIGS], offf[PAIRS][BP_FIGS];
	double uoff = 1e30, uon = 1e30, ev = 1e30, ev_prep = 0, alone[PAIRS];
	int nalone = 0;
	struct bp_srv s_off, s_on;
	double load0 = bp_load_avg();
	if (bp_srv_start(&s_off, self, "0", NULL, NULL) != 0 ||
	    bp_srv_start(&s_on, self, dir, NULL, NULL) != 0)
		return 1;
	/* each block's wall and CPU time a call and the helpers' part */
	bp_pairs(&s_off, &s_on, block, 1, pairs, 3, offf, onf);
	bp_srv_stop(&s_off);
	bp_srv_stop(&s_on);
	for (int r = 0; r < pairs; r++) {
		offw[r] = offf[r][0], offv[r] = offf[r][1],
		offp[r] = offf[r][2];
		onw[r] = onf[r][0], onv[r] = onf[r][1], onp[r] = onf[r][2];
		ratio[r] = onv[r] / offv[r];
		wratio[r] = onw[r] / offw[r];
		added_all[r] = onv[r] - offv[r];
		/* the threads that make and serve the calls, the helpers'
		 * lumps (a 256 KB chunk every few blocks) left out */
		added_t[r] = (onv[r] - onp[r]) - (offv[r] - offp[r]);
		added_w[r] = onw[r] - offw[r];
		/* both blocks ran alone on the CPU: wall within 5% of CPU */
		if (onw[r] < 1.05 * onv[r] && offw[r] < 1.05 * offv[r])
			alone[nalone++] = added_all[r];
	}
	double load1 = bp_load_avg();
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	for (int r = 0; r < 3; r++) {
		double v = run(self, "0", calls);
		uoff = v < uoff ? v : uoff;
		v = run(self, dir, calls);
		uon = v < uon ? v : uon;
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		v = run_pinned(self, dir, -1);
		if (v < ev)
			ev = v, ev_prep = last_cpu_ns;
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	}
	double m = bp_median(ratio, pairs), clo, chi;
	bp_median_ci(ratio, pairs, &clo, &chi);
	printf("bench: trace.rpc_overhead_ratio = %.3f (one CPU, CPU time of "
	       "every thread of both processes, median of %d interleaved "
	       "pairs of blocks of %d calls, an untraced and a traced cluster "
	       "alive at once; 95%% interval of the median %.3f-%.3f, "
	       "interquartile %.3f-%.3f, spread %.3f-%.3f)\n",
	       m, pairs, block, clo, chi, bp_quantile(ratio, pairs, 0.25),
	       bp_quantile(ratio, pairs, 0.75), ratio[0], ratio[pairs - 1]);
	printf("bench: trace.rpc_overhead_ratio.on_us_per_call = %.2f us (CPU; "
	       "wall %.2f)\n",
	       bp_median(onv, pairs) / 1e3, bp_median(onw, pairs) / 1e3);
	printf("bench: trace.rpc_overhead_ratio.off_us_per_call = %.2f us "
	       "(CPU; wall %.2f)\n",
	       bp_median(offv, pairs) / 1e3, bp_median(offw, pairs) / 1e3);
	printf("bench: trace.rpc_overhead_ratio.target = 1.05\n");
	printf("bench: trace.rpc_load_avg = %.2f (1-minute load average when "
	       "the pairs began; %.2f when they ended)\n",
	       load0, load1);
	double mw = bp_median(wratio, pairs);
	printf("bench: trace.rpc_overhead_ratio_wall = %.3f (the same blocks' "
	       "wall times, interquartile %.3f-%.3f, spread %.3f-%.3f)\n",
	       mw, bp_quantile(wratio, pairs, 0.25),
	       bp_quantile(wratio, pairs, 0.75), wratio[0], wratio[pairs - 1]);
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
	printf(
	    "bench: trace.event_ns_in_cluster = %.2f ns (thread CPU time, "
	    "best of 3 x 5 rounds of 1,000,000 in a traced master, pinned)\n",
	    ev);
	printf("bench: trace.event_prep_ns_in_cluster = %.2f ns (the tracer "
	       "helper's CPU time an event in the same runs, preparing their "
	       "segments; event_ns leaves it out)\n",
	       ev_prep);
	/* The added time: the calling threads' difference, a median over
	 * the pairs (robust to the noise, which is symmetric between the
	 * two modes), plus the helpers' mean a call: their work comes in
	 * lumps (a 256 KB chunk of segment for every ~1,100 calls of a
	 * process) that fall in one block of a few, so a median of the
	 * whole difference sees them in some runs and not in others. */
	double prep_on = 0, prep_off = 0;
	for (int r = 0; r < pairs; r++)
		prep_on += onp[r], prep_off += offp[r];
	prep_on /= pairs, prep_off /= pairs;
	double prep = prep_on - prep_off;
	double tm = bp_median(added_t, pairs), tlo, thi;
	bp_median_ci(added_t, pairs, &tlo, &thi);
	double bound = 1.5 * epc * ev, am = tm + prep;
	printf("bench: trace.rpc_added_ns_per_call = %.0f ns (one CPU, CPU "
	       "time a call on - off: the calling threads' median over the "
	       "%d pairs plus the tracer helpers' mean; 95%% interval of the "
	       "median %.0f-%.0f plus that mean)\n",
	       am, pairs, tlo + prep, thi + prep);
	printf("bench: trace.rpc_added_ns_per_call.threads = %.0f ns (every "
	       "thread but the helpers, each pair on - off, median; 95%% "
	       "interval %.0f-%.0f, interquartile %.0f-%.0f, mean of the "
	       "middle half %.0f)\n",
	       tm, tlo, thi, bp_quantile(added_t, pairs, 0.25),
	       bp_quantile(added_t, pairs, 0.75), mid_mean(added_t, pairs));
	qsort(onp, (size_t)pairs, sizeof onp[0], bp_cmp_d);
	printf("bench: trace.rpc_added_ns_per_call.segment_prep = %.0f ns (the "
	       "helpers' CPU time a call, 'dwtrace-prep' of both processes, "
	       "mean over the %d traced blocks; their median %.0f, 3rd "
	       "quartile %.0f: lumps)\n",
	       prep, pairs, bp_quantile(onp, pairs, 0.5),
	       bp_quantile(onp, pairs, 0.75));
	double amed = bp_median(added_all, pairs), alo, ahi;
	bp_median_ci(added_all, pairs, &alo, &ahi);
	printf("bench: trace.rpc_added_ns_per_call_median_all = %.0f ns (the "
	       "estimate before session 6: the median of the pairs' whole "
	       "difference, 95%% interval %.0f-%.0f, interquartile "
	       "%.0f-%.0f; from wall times %.0f)\n",
	       amed, alo, ahi, bp_quantile(added_all, pairs, 0.25),
	       bp_quantile(added_all, pairs, 0.75), bp_median(added_w, pairs));
	if (nalone > 0)
		printf(
		    "bench: trace.rpc_added_ns_per_call_alone = %.0f ns (the "
		    "median of the whole difference of the %d pairs whose two "
		    "blocks had the CPU to themselves, wall within 5%% of CPU "
		    "time)\n",
		    bp_median(alone, nalone), nalone);
	printf("bench: trace.rpc_added_ns_per_call.target = %.0f ns (1.5 x "
	       "events_per_call x event_ns, this run)\n",
	       bound);
	printf("bench: trace.rpc_added_ns_per_call.ratio = %.2f (target <= "
	       "1)\n",
	       am / bound);
	if (!quick && system("valgrind --version >/dev/null 2>&1") == 0) {
		double io[2], ina[2];
		instr_per_call2(self, base, "", "0", "", dir, io);
		instr_per_call2(self, base, "DWORK_ACCOUNT=0", "0",
		                "DWORK_ACCOUNT=0", dir, ina);
		double i_off = io[0], i_on = io[1], i_na = ina[0],
		       i_onna = ina[1];

		/* one event's instructions in a traced process of the
		 * cluster: 5,000,000 events less the same run without */
		uint64_t e[2];
		instructions2(self, base, "", dir, "", NULL, 0, e);
		uint64_t e0 = e[0];
		instructions2(self, base, "", dir, "", NULL, -1, e);
		uint64_t e1 = e[0];
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
