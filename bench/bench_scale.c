/*
 * Scale: adding, calling on and finalizing 256 and 1024 local workers,
 * beside the floor of starting as many minimal processes the same way
 * (fork + exec of this program, which connects back to a socket and
 * waits).  Each size runs in its own master process.  A size that cannot
 * run (descriptors, processes) prints its figures as missing.
 *
 *   rpc.addprocs_ms_N, rpc.finalize_ms_N, rpc.everywhere_noop_ms_N
 */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dwork/dwork.h>

#include "bench_util.h"

static int
noop(const void *arg, size_t len, dw_reply *r)
{
	(void)arg, (void)len, (void)r;
	return 0;
}
DW_REGISTER(noop)

/* The floor's child: connect to 127.0.0.1:port, wait for EOF. */
static int
floor_child(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET,
	                         .sin_port = htons((uint16_t)port),
	                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
		return 1;
	char b;
	while (read(fd, &b, 1) > 0)
		;
	return 0;
}

/* fork+exec+connect of n processes (ms, or -1), and in *end the time
 * to close their sockets and reap them. */
static double
floor_ms(int n, double *end)
{
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET,
	                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof sa;
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sl) < 0 ||
	    listen(lfd, 4096) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0)
		return -1;
	char exe[4096], port[16];
	ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (el <= 0)
		return -1;
	exe[el] = 0;
	snprintf(port, sizeof port, "%d", ntohs(sa.sin_port));
	int *fds = calloc((size_t)n, sizeof *fds),
	    *pids = calloc((size_t)n, sizeof *pids);
	int ok = 0;
	double t0 = bu_now_s();
	for (int i = 0; fds && pids && i < n; i++) {
		pid_t p = fork();
		if (p == 0) {
			execl(exe, exe, "--floor-child", port, (char *)NULL);
			_exit(127);
		}
		pids[i] = p;
		if (p < 0)
			break;
		ok++;
	}
	int got = 0;
	for (; got < ok; got++)
		if ((fds[got] = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0)
			break;
	double t1 = bu_now_s(), ms = (t1 - t0) * 1e3;
	/* the listener first: children still in its backlog (accept ran
	 * out of descriptors) get a reset instead of waiting forever */
	close(lfd);
	for (int i = 0; i < got; i++)
		close(fds[i]);
	for (int i = 0; i < ok; i++)
		waitpid(pids[i], NULL, 0);
	*end = (bu_now_s() - t1) * 1e3;
	free(fds), free(pids);
	return got == n ? ms : -1;
}

static void
report(const char *what, int n, double ms, double floor)
{
	char name[64];
	snprintf(name, sizeof name, "rpc.%s_ms_%d", what, n);
	if (ms < 0)
		printf("bench: %s = missing\n", name);
	else
		bu_report(name, ms, "ms", floor);
	/* the targets for 1024 workers */
	double target = n != 1024                          ? 0
	                : !strcmp(what, "finalize")        ? 2000
	                : !strcmp(what, "everywhere_noop") ? 200
	                                                   : 0;
	if (target > 0)
		printf("bench: %s.target = %.2f ms\n", name, target);
}

/* One size, in a child master: prints its figures. */
static int
one_size(int n, double floor, double end_floor)
{
	int one = 1;
	char *args[] = {"bench_scale", NULL}, **av = args;
	if (dw_init(&one, &av) != DW_OK)
		return 1;
	dw_local_options lo = {.parallel = 32};
	double t0 = bu_now_s();
	int got = dw_addprocs(n, &lo, NULL);
	double add = (bu_now_s() - t0) * 1e3;
	if (got != n) {
		fprintf(stderr, "bench_scale: %d of %d workers: %s\n", got, n,
		        dw_errmsg());
		report("addprocs", n, -1, 0);
		report("everywhere_noop", n, -1, 0);
		report("finalize", n, -1, 0);
		dw_finalize();
		return 0;
	}
	report("addprocs", n, add, floor);
	double best = -1;
	for (int i = 0; i < 5; i++) {
		t0 = bu_now_s();
		int err = dw_everywhere("noop", NULL, 0);
		double ms = (bu_now_s() - t0) * 1e3;
		if (err == DW_OK && (best < 0 || ms < best))
			best = ms;
	}
	report("everywhere_noop", n, best, 0);
	t0 = bu_now_s();
	dw_finalize();
	report("finalize", n, (bu_now_s() - t0) * 1e3, end_floor);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "--floor-child"))
		return floor_child(atoi(argv[2]));
	if (argc > 1 && !strncmp(argv[1], "--dwork-", 8))
		dw_init(&argc, &argv); /* a worker: never returns */
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
	int sizes[] = {256, 1024};
	for (int i = 0; i < 2; i++) {
		int n = sizes[i];
		double end = 0, fl = floor_ms(n, &end);
		char name[64];
		snprintf(name, sizeof name, "rpc.floor_fork_exec_connect_ms_%d",
		         n);
		if (fl < 0)
			printf("bench: %s = missing\n", name);
		else
			printf("bench: %s = %.2f ms (their end: %.2f ms)\n",
			       name, fl, end);
		fflush(stdout);
		pid_t p = fork();
		if (p == 0) {
			int rc = one_size(n, fl > 0 ? fl : 0, fl > 0 ? end : 0);
			fflush(stdout);
			_exit(rc);
		}
		int st = 0;
		if (p < 0 || waitpid(p, &st, 0) < 0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0) {
			report("addprocs", n, -1, 0);
			report("everywhere_noop", n, -1, 0);
			report("finalize", n, -1, 0);
		}
	}
	return 0;
}
