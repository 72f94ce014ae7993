/*
 * Scale (ctest label `slow`; with no arguments, --join 64):
 *   --join N  N local workers join, each serves a call, dw_finalize, and
 *             no child process of the master is left (waitpid and a
 *             /proc scan for processes whose parent is the master);
 *   --w2w N   N workers, 10,000 random worker-to-worker calls all
 *             succeed, each worker holds no more descriptors than
 *             its links need, and the master's stay what its N workers
 *             need (the calls between workers add none).
 */
#include <dirent.h>
#include <errno.h>
#include <sys/wait.h>
#include <time.h>

#include "rt_util.h"
#include "testutil.h"

#define CALLS 10000
#define BATCH 1000
/* a local worker's link and its three pipes (docs/runtime.md) */
#define MASTER_FDS_PER_WORKER 4

static double
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static double
cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int
count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n - 1;
}

/* Worker: its open descriptors. */
static int
nfds(const void *arg, size_t len, dw_reply *r)
{
	(void)arg, (void)len;
	int n = count_fds();
	return dw_reply_set(r, &n, sizeof n);
}
DW_REGISTER(nfds)

/* Worker: calls echo on the worker named in arg. */
static int
relay(const void *arg, size_t len, dw_reply *r)
{
	int to;
	if (len != sizeof to)
		return dw_reply_error(r, "expected an id");
	memcpy(&to, arg, sizeof to);
	void *res;
	size_t n;
	if (dw_remotecall_fetch(to, "echo", &to, sizeof to, &res, &n))
		return dw_reply_error(r, "%s", dw_errmsg());
	int ok = n == sizeof to && !memcmp(res, &to, n);
	free(res);
	return ok ? dw_reply_set(r, &to, sizeof to)
	          : dw_reply_error(r, "wrong echo");
}
DW_REGISTER(relay)

/* Processes whose parent is this one, from /proc. */
static int
children_in_proc(void)
{
	DIR *d = opendir("/proc");
	int n = 0, me = (int)getpid();
	for (struct dirent *e; d && (e = readdir(d));) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char path[300], buf[512];
		snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
		FILE *f = fopen(path, "r");
		size_t k = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
		if (f)
			fclose(f);
		buf[k] = 0;
		char *p = strrchr(buf, ')');
		int ppid = 0;
		if (p && sscanf(p + 2, "%*c %d", &ppid) == 1 && ppid == me)
			n++;
	}
	if (d)
		closedir(d);
	return n;
}

static void
test_join(int n)
{
	int *ids = malloc(sizeof *ids * (size_t)n);
	REQUIRE(ids);
	dw_local_options lo = {.parallel = 8};
	double t0 = now_ms();
	int got = dw_addprocs(n, &lo, ids);
	double t1 = now_ms();
	if (got != n)
		fprintf(stderr, "addprocs: %d: %s\n", got, dw_errmsg());
	REQUIRE(got == n);
	CHECK(children_in_proc() == n);
	CHECK(dw_everywhere("echo", "x", 1) == DW_OK);
	printf("scale: %d workers joined and served; finalizing\n", n);
	fflush(stdout);
	double t2 = now_ms(), c2 = cpu_ms();
	CHECK(dw_finalize() == DW_OK);
	double t3 = now_ms(), c3 = cpu_ms();
	int left = children_in_proc();
	CHECK(left == 0);
	CHECK(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD);
	printf("scale: %d workers: join %.0f ms, everywhere %.0f ms, "
	       "finalize %.0f ms (master CPU %.0f ms), %d children left\n",
	       n, t1 - t0, t2 - t1, t3 - t2, c3 - c2, left);
	free(ids);
}

static void
test_w2w(int n)
{
	int *ids = malloc(sizeof *ids * (size_t)n);
	REQUIRE(ids);
	dw_local_options lo = {.parallel = 8};
	int mfd0 = count_fds();
	REQUIRE(dw_addprocs(n, &lo, ids) == n);
	int mfd1 = count_fds();
	void *res;
	size_t len;
	REQUIRE(dw_remotecall_fetch(ids[0], "nfds", NULL, 0, &res, &len) ==
	        DW_OK);
	int base = *(int *)res; /* no link to another worker yet */
	free(res);
	/* the partners of each worker, to know the links it needs */
	unsigned char *linked = calloc((size_t)n * (size_t)n, 1);
	REQUIRE(linked);
	srand(14);
	int failed = 0;
	double t0 = now_ms();
	for (int done = 0; done < CALLS; done += BATCH) {
		dw_future *f[BATCH];
		for (int i = 0; i < BATCH; i++) {
			int a = rand() % n, b = rand() % (n - 1);
			b += b >= a;
			linked[(size_t)a * (size_t)n + (size_t)b] = 1;
			linked[(size_t)b * (size_t)n + (size_t)a] = 1;
			if (dw_remotecall(ids[a], "relay", &ids[b],
			                  sizeof ids[b], &f[i]) != DW_OK)
				f[i] = NULL;
		}
		for (int i = 0; i < BATCH; i++) {
			const void *v;
			size_t vl;
			int err = f[i] ? dw_future_fetch(f[i], &v, &vl) : -1;
			if (err && failed++ < 3)
				fprintf(stderr, "call failed: %s\n",
				        dw_errmsg());
			if (f[i])
				dw_future_free(f[i]);
		}
	}
	double t1 = now_ms();
	CHECK(failed == 0);
	int worst = 0, over = 0;
	for (int a = 0; a < n; a++) {
		int need = 0;
		for (int b = 0; b < n; b++)
			need += linked[(size_t)a * (size_t)n + (size_t)b];
		if (dw_remotecall_fetch(ids[a], "nfds", NULL, 0, &res, &len)) {
			over++;
			continue;
		}
		int have = *(int *)res;
		free(res);
		over += have > base + need;
		if (have - base - need > worst)
			worst = have - base - need;
	}
	CHECK(over == 0);
	/* the master's: its workers' links and pipes, none for their
	 * links to each other */
	int mfd2 = count_fds();
	CHECK(mfd2 == mfd1);
	CHECK(mfd1 - mfd0 <= MASTER_FDS_PER_WORKER * n);
	printf("scale: %d workers: %d random worker-to-worker calls in %.0f "
	       "ms, %d failed; descriptors beyond base + links: worst %d; "
	       "master %d -> %d -> %d (%.2f a worker)\n",
	       n, CALLS, t1 - t0, failed, worst, mfd0, mfd1, mfd2,
	       (double)(mfd1 - mfd0) / n);
	free(linked);
	free(ids);
	dw_finalize();
}

int
main(int argc, char **argv)
{
	if (argc > 1 && !strncmp(argv[1], "--dwork-", 8))
		dw_init(&argc, &argv); /* a worker: never returns */
	/* no arguments: a small join for the normal suite */
	const char *mode = argc > 2 ? argv[1] : "--join";
	int n = argc > 2 ? atoi(argv[2]) : 64;
	int one = 1;
	char *args[] = {argv[0], NULL}, **av = args;
	REQUIRE(n > 1 && dw_init(&one, &av) == DW_OK);
	if (!strcmp(mode, "--join"))
		test_join(n);
	else
		test_w2w(n);
	return tu_report("runtime_scale");
}
