/*
 * The cost of the always-on accounting (dwork top), measured in the same
 * run:
 *
 *   live.overhead_ratio       100,000 sequential dw_remotecall_fetch calls
 *                             to one worker with accounting on, divided
 *                             by the same with DWORK_ACCOUNT=0 (target
 *                             <= 1.02); runs alternate, best of 5 each
 *   live.overhead_ratio.pmap  dw_pmap of 20,000 items over 2 workers,
 *                             the same way
 *   live.top_snapshot_ms_256  `dwork top --once --json` against a master
 *                             of 256 local workers: the whole command
 *                             (exec, handshake, one snapshot), best and
 *                             median of 20 (target: one snapshot <= 100)
 *
 * Tracing is off in both.  Each run is a child process (a cluster is set
 * up once per process, and its workers inherit DWORK_ACCOUNT).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <dwork/dwork.h>

#define CALLS 100000
#define ITEMS 20000
#define RUNS  5

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
child_calls(int w)
{
	uint64_t v = 1;
	double t0 = now_s();
	for (int i = 0; i < CALLS; i++) {
		void *res;
		size_t len;
		if (dw_remotecall_fetch(w, "echo", &v, 8, &res, &len) != DW_OK)
			return 1;
		free(res);
	}
	printf("%.6f\n", now_s() - t0);
	return 0;
}

static int
child_pmap(void)
{
	static uint64_t in[ITEMS];
	static dw_buf items[ITEMS];
	static dw_result out[ITEMS];
	for (int i = 0; i < ITEMS; i++) {
		in[i] = (uint64_t)i;
		items[i] = (dw_buf){&in[i], sizeof in[i]};
	}
	double t0 = now_s();
	if (dw_pmap("echo", items, ITEMS, out, NULL) != DW_OK)
		return 1;
	printf("%.6f\n", now_s() - t0);
	dw_results_free(out, ITEMS);
	return 0;
}

static int
child(int argc, char **argv, int pmap)
{
	dw_options o = {.trace = "0"};
	if (dw_init_opts(&argc, &argv, &o) != DW_OK)
		return 1;
	int w[2];
	if (dw_addprocs(pmap ? 2 : 1, NULL, w) != (pmap ? 2 : 1))
		return 1;
	int rc = pmap ? child_pmap() : child_calls(w[0]);
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

static double
run(const char *self, int on, int pmap)
{
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "DWORK_ACCOUNT=%d %s --child %d", on, self,
	         pmap);
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

int
main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "--child"))
		return child(argc, argv, atoi(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "--top"))
		return child_top(argc, argv, atoi(argv[2]));
	if (argc > 1 && !strcmp(argv[1], "--dwork-worker")) {
		dw_init(&argc, &argv); /* a worker: never returns */
		return 1;
	}
	char self[4096];
	ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
	self[k > 0 ? k : 0] = 0;
	for (int pmap = 0; pmap < 2; pmap++) {
		double off = 1e30, on = 1e30;
		for (int r = 0; r < RUNS; r++) {
			double v = run(self, 0, pmap);
			off = v < off ? v : off;
			v = run(self, 1, pmap);
			on = v < on ? v : on;
		}
		int n = pmap ? ITEMS : CALLS;
		const char *name =
		    pmap ? "live.overhead_ratio.pmap" : "live.overhead_ratio";
		printf("bench: %s = %.3f (on %.2f us, off %.2f us per %s)\n",
		       name, on / off, on / n * 1e6, off / n * 1e6,
		       pmap ? "item" : "call");
	}
	printf("bench: live.overhead_ratio.target = 1.02\n");
	fflush(stdout);
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "%s --top 256", self);
	return system(cmd) == 0 ? 0 : 1;
}
