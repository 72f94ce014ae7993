/*
 * The cost of the always-on accounting (dwork top), measured in the same
 * run:
 *
 *   live.overhead_ratio       sequential dw_remotecall_fetch calls to one
 *                             worker with accounting on over the same
 *                             with DWORK_ACCOUNT=0 (target <= 1.02), as
 *                             bench_trace_rpc measures tracing: a cluster
 *                             with accounting off and one with it on,
 *                             alive at once, every process pinned to CPU
 *                             0; PAIRS pairs of blocks of BLOCK calls
 *                             alternating between them (off first, then
 *                             on first, so a drift of the load falls on
 *                             both alike), each block in CPU time of
 *                             every thread of its master and workers
 *                             (/proc schedstat: another process's time
 *                             on the CPU is not counted); the median of
 *                             the pairs' ratios with its 95% interval,
 *                             interquartile range and spread.  .cpu: the
 *                             median block on over the median off (us a
 *                             call beside it); .wall: the same pairs'
 *                             wall times
 *   live.overhead_ratio.pmap  the same for dw_pmap over 2 workers, a
 *                             block one pmap of PMAP_BLOCK items
 *   live.instr_ratio          instructions of every process per call,
 *                             on over off, from valgrind --tool=callgrind
 *                             (the difference of 1,200 calls and 200, so
 *                             start-up and exit cancel): the figure the
 *                             load cannot move
 *   live.instr_ratio.pmap     the same per pmap item (42,000 items less
 *                             2,000)
 *   live.top_snapshot_ms_256  `dwork top --once --json` against a master
 *                             of 256 local workers: the whole command
 *                             (exec, handshake, one snapshot), best and
 *                             median of 20 (target: one snapshot <= 100)
 *
 * Unpinned, the timing flips with where the scheduler puts the
 * processes (cross-CPU wake-ups cost tens of microseconds on a VM);
 * separate runs a pair (the method before) spread 0.82-1.57 for pmap.
 * Tracing is off in all; the workers inherit DWORK_ACCOUNT and the pin.
 * BENCH_QUICK=1 runs a tenth of the pairs and no callgrind;
 * BENCH_BLOCKS=1 prints every block's CPU and wall time an item (ns);
 * BENCH_LIVE_SAME=0 (or 1) runs both clusters with accounting off (on):
 * the method's own bias, which should come out 1.000.
 */
#include <dirent.h>
#include <fcntl.h>
#include "bench_pair.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dwork/dwork.h>

#define CALLS      100000
#define ITEMS      50000
#define PMAP_REPS  4
#define BLOCK      500   /* calls a block */
#define PMAP_BLOCK 20000 /* pmap items a block (one pmap) */
#define PAIRS      400   /* interleaved off/on blocks of calls */
#define PMAP_PAIRS 800   /* the same of pmaps */

static int
echo(const void *arg, size_t len, dw_reply *r)
{
	return dw_reply_set(r, arg, len);
}
DW_REGISTER(echo)

static int
mypid(const void *arg, size_t len, dw_reply *r)
{
	(void)arg, (void)len;
	int v = (int)getpid();
	return dw_reply_set(r, &v, sizeof v);
}
DW_REGISTER(mypid)

/* ns on a CPU of every thread of the master and its workers, from
 * /proc/PID/task/TID/schedstat: the work itself, whatever else the
 * machine runs (the wall time also holds the waits for the CPU). */
static int wpid[2], nwpid;

static uint64_t
cpu_ns_of(int pid)
{
	char p[64], f[600];
	snprintf(p, sizeof p, "/proc/%d/task", pid);
	DIR *d = opendir(p);
	struct dirent *e;
	uint64_t ns = 0;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(f, sizeof f, "%s/%s/schedstat", p, e->d_name);
		FILE *fp = fopen(f, "r");
		unsigned long long v = 0;
		if (fp && fscanf(fp, "%llu", &v) == 1)
			ns += v;
		if (fp)
			fclose(fp);
	}
	if (d)
		closedir(d);
	return ns;
}

static uint64_t
cpu_ns(void)
{
	uint64_t ns = cpu_ns_of((int)getpid());
	for (int i = 0; i < nwpid; i++)
		ns += cpu_ns_of(wpid[i]);
	return ns;
}

static int
calls(int w, int n)
{
	uint64_t v = 1;
	for (int i = 0; i < n; i++) {
		void *res;
		size_t len;
		if (dw_remotecall_fetch(w, "echo", &v, 8, &res, &len) != DW_OK)
			return 1;
		free(res);
	}
	return 0;
}

/* One dw_pmap of n items (n <= ITEMS). */
static int
pmap_once(int n)
{
	static uint64_t in[ITEMS];
	static dw_buf items[ITEMS];
	static dw_result out[ITEMS];
	for (int i = 0; i < n; i++) {
		in[i] = (uint64_t)i;
		items[i] = (dw_buf){&in[i], sizeof in[i]};
	}
	if (dw_pmap("echo", items, (size_t)n, out, NULL) != DW_OK)
		return 1;
	dw_results_free(out, (size_t)n);
	return 0;
}

/* A cluster of one worker (calls) or two (pmap); their pids in wpid. */
static int
start(int argc, char **argv, int pmap, int *w)
{
	dw_options o = {.trace = "0"};
	if (dw_init_opts(&argc, &argv, &o) != DW_OK)
		return 1;
	if (dw_addprocs(pmap ? 2 : 1, NULL, w) != (pmap ? 2 : 1))
		return 1;
	for (nwpid = 0; nwpid < (pmap ? 2 : 1); nwpid++) {
		void *res;
		size_t len;
		if (dw_remotecall_fetch(w[nwpid], "mypid", NULL, 0, &res,
		                        &len) != DW_OK)
			return 1;
		memcpy(&wpid[nwpid], res, sizeof wpid[0]);
		free(res);
	}
	return 0;
}

/* --child PMAP N (the callgrind runs): N calls (PMAP 0), or PMAP_REPS
 * pmaps of N items (PMAP 1). */
static int
child(int argc, char **argv, int pmap, int n)
{
	int w[2], rc = start(argc, argv, pmap, w);
	for (int r = 0; !rc && r < (pmap ? PMAP_REPS : 1); r++)
		rc = pmap ? pmap_once(n) : calls(w[0], n);
	dw_finalize();
	return rc;
}

/* Server: a cluster (one worker for calls, two for pmap) that runs a
 * block each time it reads a count on fd rfd (n calls, or one pmap of n
 * items) and writes the block's wall and CPU time an item (ns, every
 * thread of every process) on wfd; 0 ends it.  Two of them, accounting
 * off and on, alive at once and pinned to one CPU, let the blocks
 * alternate every few milliseconds, so both modes meet the same
 * machine. */
static int
serve(int argc, char **argv, int pmap, int rfd, int wfd)
{
	fcntl(rfd, F_SETFD, FD_CLOEXEC); /* not the workers' */
	fcntl(wfd, F_SETFD, FD_CLOEXEC);
	FILE *in = fdopen(rfd, "r"), *out = fdopen(wfd, "w");
	int w[2];
	if (!in || !out || start(argc, argv, pmap, w) != 0)
		return 1;
	char line[64];
	while (fgets(line, sizeof line, in)) {
		int n = atoi(line);
		if (n <= 0)
			break;
		uint64_t c0 = cpu_ns();
		double t0 = bu_now_s();
		if (pmap ? pmap_once(n) : calls(w[0], n))
			return 1;
		double wall = bu_now_s() - t0;
		fprintf(out, "%.2f %.2f\n", wall * 1e9 / n,
		        (double)(cpu_ns() - c0) / n);
		fflush(out);
	}
	dw_finalize();
	return 0;
}

/* A master of n workers timing dwork top against itself. */
static int
child_top(int argc, char **argv, int n)
{
	dw_options o = {.trace = "0", .heartbeat_ms = 500};
	if (dw_init_opts(&argc, &argv, &o) != DW_OK ||
	    dw_addprocs(n, NULL, NULL) != n)
		return 1;
	usleep(1500000); /* every worker's STATS has arrived */
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "%s top --once --json --pid %d >/dev/null",
	         DWORK_TOOL_PATH, (int)getpid());
	double t[20];
	for (int i = 0; i < 20; i++) {
		double t0 = bu_now_s();
		if (system(cmd) != 0)
			return 1;
		t[i] = (bu_now_s() - t0) * 1e3;
	}
	qsort(t, 20, sizeof t[0], bp_cmp_d);
	/* the snapshot holds every process */
	snprintf(cmd, sizeof cmd, "%s top --once --json --pid %d",
	         DWORK_TOOL_PATH, (int)getpid());
	FILE *p = popen(cmd, "r");
	int procs = 0, c, prev = 0;
	while (p && (c = fgetc(p)) != EOF) {
		procs += prev == '{' && c == '"' && fgetc(p) == 'i';
		prev = c;
	}
	if (p)
		pclose(p);
	printf("bench: live.top_processes_shown = %d of %d\n", procs - 1,
	       n + 1);
	printf("bench: live.top_snapshot_ms_%d = %.1f ms (median %.1f ms; "
	       "the whole dwork top command)\n",
	       n, t[0], t[10]);
	fflush(stdout);
	dw_finalize();
	return 0;
}

/* The pairs' ratios v (sorted here): the median, its 95% interval, the
 * interquartile range and the spread. */
static void
print_ratio(const char *name, double *v, int n, const char *what)
{
	double m = bp_median(v, n), lo, hi;
	bp_median_ci(v, n, &lo, &hi);
	printf("bench: %s = %.3f (%s; 95%% interval of the median "
	       "%.3f-%.3f, interquartile %.3f-%.3f, spread %.3f-%.3f)\n",
	       name, m, what, lo, hi, bp_quantile(v, n, 0.25),
	       bp_quantile(v, n, 0.75), v[0], v[n - 1]);
}

/* The pinned pairs: a cluster with accounting off and one with it on
 * alive at once on CPU 0, blocks of `block` calls (pmap items)
 * alternating between them, the order of each pair alternating too;
 * each block in CPU time of every thread of its processes. */
static void
overhead(const char *self, int pmap, int block, int pairs)
{
	enum { MAXP = PAIRS > PMAP_PAIRS ? PAIRS : PMAP_PAIRS };
	static double ratio[MAXP], wratio[MAXP], onv[MAXP], offv[MAXP],
	    onf[MAXP][BP_FIGS], offf[MAXP][BP_FIGS];
	struct bp_srv s_off, s_on;
	double load0 = bp_load_avg();
	char m[4];
	snprintf(m, sizeof m, "%d", pmap);
	/* BENCH_LIVE_SAME: an A/A check */
	const char *aa = getenv("BENCH_LIVE_SAME");
	if (bp_srv_start(&s_off, self, m, "DWORK_ACCOUNT",
	                 aa && *aa ? aa : "0") != 0 ||
	    bp_srv_start(&s_on, self, m, "DWORK_ACCOUNT",
	                 aa && *aa ? aa : "1") != 0) {
		fprintf(stderr, "bench: cannot start the clusters\n");
		exit(1);
	}
	/* each block's wall and CPU time an item */
	bp_pairs(&s_off, &s_on, block, 2, pairs, 2, offf, onf);
	bp_srv_stop(&s_off);
	bp_srv_stop(&s_on);
	for (int r = 0; r < pairs; r++) {
		offv[r] = offf[r][1];
		onv[r] = onf[r][1];
		ratio[r] = onv[r] / offv[r];
		wratio[r] = onf[r][0] / offf[r][0];
	}
	const char *name =
	    pmap ? "live.overhead_ratio.pmap" : "live.overhead_ratio";
	const char *unit = pmap ? "item" : "call";
	char what[400], nm[80];
	snprintf(what, sizeof what,
	         "one CPU, CPU time of every thread of both clusters, median "
	         "of %d interleaved pairs of blocks of %d %ss, a cluster with "
	         "accounting off and one with it on alive at once%s; load "
	         "%.2f -> %.2f",
	         pairs, block, unit,
	         getenv("BENCH_LIVE_SAME") ? " (BENCH_LIVE_SAME: both alike)"
	                                   : "",
	         load0, bp_load_avg());
	print_ratio(name, ratio, pairs, what);
	double con = bp_median(onv, pairs), coff = bp_median(offv, pairs);
	printf("bench: %s.cpu = %.3f (the median block on over the median "
	       "off, CPU: %.3f us, %.3f us per %s)\n",
	       name, con / coff, con / 1e3, coff / 1e3, unit);
	snprintf(nm, sizeof nm, "%s.wall", name);
	print_ratio(nm, wratio, pairs, "the same blocks' wall times");
}

static int
rm_cg(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char f[1200];
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(f, sizeof f, "%s/%s", dir, e->d_name);
			unlink(f);
		}
	if (d)
		closedir(d);
	return rmdir(dir);
}

/* Instructions of every process of a run of n calls under callgrind
 * (the totals of all its output files); 0 when the run failed. */
static uint64_t
instructions(const char *self, const char *dir, int on, int pmap, int n)
{
	char cmd[5000];
	/* valgrind runs the items far slower: the item time below which
	 * a batch's items are sampled (16 us) raised, so that the period
	 * does not limit the pairs (the cap of 128 items and the batches'
	 * starts do, as in a run without valgrind) */
	snprintf(cmd, sizeof cmd,
	         "DWORK_ACCOUNT=%d DWORK_HEARTBEAT_MS=600000 "
	         "DWORK_ACCOUNT_SAMPLE_US=20000 "
	         "DWORK_HEARTBEAT_TIMEOUT_MS=1200000 valgrind --tool=callgrind "
	         "--trace-children=yes --callgrind-out-file=%s/cg.%%p "
	         "%s --child %d %d >/dev/null 2>&1",
	         on, dir, self, pmap, n);
	if (system(cmd) != 0)
		return 0;
	return bu_cg_dir(dir, "cg.");
}

/* Instructions a call (a pmap item): the difference of two runs, so
 * that start-up and exit cancel (a pmap child runs PMAP_REPS pmaps). */
static double
instr_per_call(const char *self, const char *dir, int on, int pmap)
{
	int n0 = pmap ? 500 : 200, n1 = pmap ? 10500 : 1200;
	uint64_t a = instructions(self, dir, on, pmap, n0);
	uint64_t b = instructions(self, dir, on, pmap, n1);
	double k = (double)(n1 - n0) * (pmap ? PMAP_REPS : 1);
	return a && b > a ? (double)(b - a) / k : -1;
}

static void
instr_ratio(const char *self)
{
	char dir[600];
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/dwlive-XXXXXX", tmp ? tmp : "/tmp");
	if (system("valgrind --version >/dev/null 2>&1") != 0 ||
	    !mkdtemp(dir)) {
		printf("bench: live.instr_ratio: no valgrind (missing)\n");
		return;
	}
	for (int pmap = 0; pmap < 2; pmap++) {
		const char *name =
		    pmap ? "live.instr_ratio.pmap" : "live.instr_ratio";
		double off = instr_per_call(self, dir, 0, pmap);
		double on = instr_per_call(self, dir, 1, pmap);
		if (off > 0 && on > 0)
			printf("bench: %s = %.3f (callgrind, all processes: "
			       "%.0f instructions a%s on, %.0f off, +%.0f)\n",
			       name, on / off, on,
			       pmap ? " pmap item" : " call", off, on - off);
		else
			printf("bench: %s: callgrind run failed (missing)\n",
			       name);
	}
	rm_cg(dir);
}

int
main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "--child"))
		return child(argc, argv, atoi(argv[2]), atoi(argv[3]));
	if (argc >= 5 && !strcmp(argv[1], "--serve"))
		return serve(argc, argv, atoi(argv[2]), atoi(argv[3]),
		             atoi(argv[4]));
	if (argc >= 3 && !strcmp(argv[1], "--top"))
		return child_top(argc, argv, atoi(argv[2]));
	if (argc > 1 && !strcmp(argv[1], "--dwork-worker")) {
		dw_init(&argc, &argv); /* a worker: never returns */
		return 1;
	}
	char self[4096];
	ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
	self[k > 0 ? k : 0] = 0;
	const char *q = getenv("BENCH_QUICK");
	int quick = q && *q && strcmp(q, "0");
	overhead(self, 0, BLOCK, quick ? PAIRS / 10 : PAIRS);
	overhead(self, 1, PMAP_BLOCK, quick ? PMAP_PAIRS / 10 : PMAP_PAIRS);
	printf("bench: live.overhead_ratio.target = 1.02\n");
	if (!quick)
		instr_ratio(self);
	else
		printf("bench: live.instr_ratio: BENCH_QUICK (missing)\n"
		       "bench: live.instr_ratio.pmap: BENCH_QUICK "
		       "(missing)\n");
	fflush(stdout);
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "%s --top 256", self);
	return system(cmd) == 0 ? 0 : 1;
}
