/*
 * The cost of tracing a cluster, measured in the same run:
 *
 *   trace.rpc_overhead_ratio  100,000 sequential dw_remotecall_fetch calls
 *                             to one worker with tracing on, divided by
 *                             the same with tracing off (target <= 1.10);
 *                             runs alternate, best of 3 each
 *   trace.events_per_call     records written per remote call, by all
 *                             processes (caller and callee, all threads)
 *
 * Each run is a child process (a cluster is set up once per process).
 */
#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dwork/dwork.h>

#include "tracefile/reader.h"

#define CALLS 100000

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

/* Child: a cluster of one worker, n calls; prints the seconds they took. */
static int
child(int argc, char **argv, const char *trace, int n)
{
	dw_options o = {.trace = trace, .no_merge = 1};
	if (dw_init_opts(&argc, &argv, &o) != DW_OK)
		return 1;
	int w;
	if (dw_addprocs(1, NULL, &w) != 1)
		return 1;
	uint64_t v = 1;
	double t0 = now_s();
	for (int i = 0; i < n; i++) {
		void *res;
		size_t len;
		if (dw_remotecall_fetch(w, "echo", &v, 8, &res, &len) != DW_OK)
			return 1;
		free(res);
	}
	printf("%.6f\n", now_s() - t0);
	fflush(stdout);
	dw_finalize();
	return 0;
}

static double
run(const char *self, const char *trace, int n)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "%s --child %s %d", self, trace, n);
	FILE *p = popen(cmd, "r");
	double s = -1;
	if (!p || fscanf(p, "%lf", &s) != 1)
		s = -1;
	if (p && pclose(p) != 0)
		s = -1;
	if (s < 0) {
		fprintf(stderr, "bench: '%s' failed\n", cmd);
		exit(1);
	}
	return s;
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
			while (rd_thread_next(th, &r))
				n++;
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
records_for(const char *self, const char *base, int n)
{
	char dir[600];
	snprintf(dir, sizeof dir, "%s/calls%d", base, n);
	run(self, dir, n);
	uint64_t r = count_records(dir);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return r;
}

int
main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "--child"))
		return child(argc, argv, argv[2], atoi(argv[3]));
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
	double off = 1e30, on = 1e30;
	for (int r = 0; r < 3; r++) {
		double v = run(self, "0", CALLS);
		off = v < off ? v : off;
		v = run(self, dir, CALLS);
		on = v < on ? v : on;
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	}
	printf("bench: trace.rpc_overhead_ratio = %.3f\n", on / off);
	printf("bench: trace.rpc_overhead_ratio.on_us_per_call = %.2f us\n",
	       on / CALLS * 1e6);
	printf("bench: trace.rpc_overhead_ratio.off_us_per_call = %.2f us\n",
	       off / CALLS * 1e6);
	printf("bench: trace.rpc_overhead_ratio.target = 1.10\n");
	uint64_t r1 = records_for(self, base, 1000);
	uint64_t r2 = records_for(self, base, 11000);
	printf("bench: trace.events_per_call = %.2f records\n",
	       (double)(r2 - r1) / 10000.0);
	nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
