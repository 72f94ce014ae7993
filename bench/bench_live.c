/*
 * The cost of the always-on accounting (dwork top), measured in the same
 * run:
 *
 *   live.overhead_ratio       100,000 sequential dw_remotecall_fetch calls
 *                             to one worker with accounting on, divided
 *                             by the same with DWORK_ACCOUNT=0 (target
 *                             <= 1.02), in the stable mode: every process
 *                             pinned to one CPU (taskset -c 0), on and
 *                             off runs interleaved, the median of RUNS
 *                             pairs' ratios (their spread is printed)
 *   live.overhead_ratio.pmap  dw_pmap of 50,000 items over 2 workers,
 *                             PMAP_REPS times a run, the same way with
 *                             PMAP_RUNS pairs (a pmap item is ~1 us: a
 *                             run of one pmap of 20,000 was 20 ms, and
 *                             its pairs spread 0.88-1.20)
 *   live.instr_ratio          instructions of every process per call,
 *                             on over off, from valgrind --tool=callgrind
 *                             (the difference of 1,200 calls and 200, so
 *                             start-up and exit cancel): the figure the
 *                             load cannot move
 *   live.instr_ratio.pmap     the same per pmap item (12,000 items less
 *                             2,000)
 *   live.top_snapshot_ms_256  `dwork top --once --json` against a master
 *                             of 256 local workers: the whole command
 *                             (exec, handshake, one snapshot), best and
 *                             median of 20 (target: one snapshot <= 100)
 *
 * Unpinned, the timing flips with where the scheduler puts the two
 * processes (cross-CPU wake-ups cost tens of microseconds on a VM):
 * 0.87-1.09 across runs, which hid a 2% cost.  Tracing is off in all.
 * Each run is a child process (its workers inherit DWORK_ACCOUNT).
 * Each pair runs off then on, the next on then off, so that a drift of
 * the machine's load falls on both sides alike; NAME.best divides the
 * fastest run on by the fastest off (the load only adds time).
 * BENCH_QUICK=1 runs a tenth of the calls, a fifth of the pmap items,
 * and no callgrind.
 */
#include <dirent.h>
#include "bench_util.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <dwork/dwork.h>

#define CALLS     100000
#define ITEMS     50000
#define PMAP_REPS 4
#define RUNS      7  /* interleaved on/off pairs */
#define PMAP_RUNS 11 /* the same for pmap */

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

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int
child_calls(int w, int n)
{
	uint64_t v = 1, c0 = cpu_ns();
	double t0 = now_s();
	for (int i = 0; i < n; i++) {
		void *res;
		size_t len;
		if (dw_remotecall_fetch(w, "echo", &v, 8, &res, &len) != DW_OK)
			return 1;
		free(res);
	}
	double t = now_s() - t0;
	printf("%.6f %.6f\n", t, (cpu_ns() - c0) * 1e-9);
	return 0;
}

static int
child_pmap(int n)
{
	static uint64_t in[ITEMS];
	static dw_buf items[ITEMS];
	static dw_result out[ITEMS];
	for (int i = 0; i < ITEMS; i++) {
		in[i] = (uint64_t)i;
		items[i] = (dw_buf){&in[i], sizeof in[i]};
	}
	double t = 0, c = 0;
	for (int r = 0; r < PMAP_REPS; r++) {
		uint64_t c0 = cpu_ns();
		double t0 = now_s();
		if (dw_pmap("echo", items, (size_t)n, out, NULL) != DW_OK)
			return 1;
		t += now_s() - t0;
		c += (cpu_ns() - c0) * 1e-9;
		dw_results_free(out, (size_t)n);
	}
	printf("%.6f %.6f\n", t, c);
	return 0;
}

/* --child PMAP N: N calls (PMAP 0) or N pmap items (PMAP 1). */
static int
child(int argc, char **argv, int pmap, int n)
{
	dw_options o = {.trace = "0"};
	if (dw_init_opts(&argc, &argv, &o) != DW_OK)
		return 1;
	int w[2];
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
	int rc = pmap ? child_pmap(n) : child_calls(w[0], n);
	fflush(stdout);
	dw_finalize();
	return rc;
}

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
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
		double t0 = now_s();
		if (system(cmd) != 0)
			return 1;
		t[i] = (now_s() - t0) * 1e3;
	}
	qsort(t, 20, sizeof t[0], cmp_d);
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

/* One pinned run: its wall time, and its CPU time into *cpu. */
static double
run(const char *self, int on, int pmap, int n, double *cpu)
{
	char cmd[4200];
	snprintf(cmd, sizeof cmd,
	         "DWORK_ACCOUNT=%d taskset -c 0 %s --child %d %d", on, self,
	         pmap, n);
	FILE *p = popen(cmd, "r");
	double s = -1;
	if (!p || fscanf(p, "%lf %lf", &s, cpu) != 2)
		s = -1;
	if (p && pclose(p) != 0)
		s = -1;
	if (s < 0) {
		fprintf(stderr, "bench: '%s' failed\n", cmd);
		exit(1);
	}
	return s;
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof v[0], cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* runs interleaved off/on pairs, pinned; prints the median ratio. */
static void
overhead(const char *self, int pmap, int n)
{
	enum { MAXR = RUNS > PMAP_RUNS ? RUNS : PMAP_RUNS };
	int runs = pmap ? PMAP_RUNS : RUNS, per = pmap ? n * PMAP_REPS : n;
	double off[MAXR], on[MAXR], ratio[MAXR], coff[MAXR], con[MAXR],
	    cratio[MAXR];
	for (int r = 0; r < runs; r++) {
		if (r & 1) {
			on[r] = run(self, 1, pmap, n, &con[r]);
			off[r] = run(self, 0, pmap, n, &coff[r]);
		} else {
			off[r] = run(self, 0, pmap, n, &coff[r]);
			on[r] = run(self, 1, pmap, n, &con[r]);
		}
		ratio[r] = on[r] / off[r];
		cratio[r] = con[r] / coff[r];
	}
	double cm = median(cratio, runs), clo = cratio[0],
	       chi = cratio[runs - 1];
	double m = median(ratio, runs), lo = ratio[0], hi = ratio[runs - 1];
	double mon = median(on, runs), moff = median(off, runs);
	const char *name =
	    pmap ? "live.overhead_ratio.pmap" : "live.overhead_ratio";
	printf("bench: %s = %.3f (one CPU, median of %d interleaved pairs "
	       "of %d %s, spread %.3f-%.3f; on %.3f us, off %.3f us per "
	       "%s)\n",
	       name, m, runs, per, pmap ? "items" : "calls", lo, hi,
	       mon / per * 1e6, moff / per * 1e6, pmap ? "item" : "call");
	double mcon = median(con, runs), mcoff = median(coff, runs);
	printf("bench: %s.cpu = %.3f (CPU time of every thread of the run, "
	       "median of the same pairs, spread %.3f-%.3f; on %.3f us, off "
	       "%.3f us per %s)\n",
	       name, cm, clo, chi, mcon / per * 1e6, mcoff / per * 1e6,
	       pmap ? "item" : "call");
	/* the load only adds time: the fastest run of each side is the
	 * one it disturbed least (on[], off[] are sorted by median) */
	printf("bench: %s.best = %.3f (the fastest run on over the fastest "
	       "off, wall: %.3f us, %.3f us per %s; CPU: %.3f)\n",
	       name, on[0] / off[0], on[0] / per * 1e6, off[0] / per * 1e6,
	       pmap ? "item" : "call", con[0] / coff[0]);
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
	/* valgrind runs the items ~50x slower: the item time below which
	 * a batch's items are sampled (16 us) scaled alike, so that they
	 * are sampled as in a run without it (one timed pair in 128) */
	snprintf(cmd, sizeof cmd,
	         "DWORK_ACCOUNT=%d DWORK_HEARTBEAT_MS=600000 "
	         "DWORK_ACCOUNT_SAMPLE_US=1000 "
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
	int n0 = pmap ? 500 : 200, n1 = pmap ? 3000 : 1200;
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
	overhead(self, 0, quick ? CALLS / 10 : CALLS);
	overhead(self, 1, quick ? ITEMS / 5 : ITEMS);
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
