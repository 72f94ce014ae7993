/*
 * Runtime benchmarks, each beside its floor measured in the same run:
 *
 *   rpc.fetch_rtt_us_one_cpu  the headline: dw_remotecall_fetch of 8
 *                      bytes to one worker, median, both processes pinned
 *                      to one CPU (taskset; no cross-CPU wake-up, which on
 *                      this VM costs tens of microseconds a hop); floor: a
 *                      single-threaded TCP ping-pong of 8 bytes between
 *                      two processes over loopback, pinned alike, in
 *                      alternating rounds (target ratio <= 1.25)
 *   rpc.fetch_rtt_us_unpinned  the same unpinned
 *   rpc.fetch_rtt_instr  instructions of one such round trip, every
 *                      process and thread (valgrind --tool=callgrind, the
 *                      difference of 1,200 round trips and 200, so start-up
 *                      and exit cancel); floor: the raw ping-pong's; they
 *                      do not move with the load.  Not under BENCH_QUICK
 *   rpc.calls_per_s    100,000 dw_remotecall back to back, then all
 *                      fetched (target 300,000/s on this 2-core machine)
 *   rpc.bulk_gbps      fetching a 64 MiB result; floor: raw TCP transfer
 *                      of 64 MiB into a fresh buffer
 *   rpc.addprocs8_ms   dw_addprocs(8) until all are ready; floor: 8 x
 *                      fork+exec+connect of this (minimal-work) program
 *   rpc.bulk_gbps_tls  fetching 1 MiB results over a TLS link (DWORK_TLS=1,
 *                      in a child run of this program); floor: the same
 *                      over a plaintext link in this run (target ratio
 *                      >= 0.8)
 *   rpc.fetch_rtt_us_tls  the 8-byte round trip over TLS, median; floor:
 *                      the plaintext one measured the same way
 *   rpc.fetch_rtt_us_tls_one_cpu  the same with both processes pinned to
 *                      one CPU (taskset); floor: the plaintext one pinned
 *
 * "--tls-only" runs just the TLS figures and their floors.
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>
#include "bench_util.h"

#include <dwork/dwork.h>

#define RTT_ITERS 20000
#define BULK      (64u << 20)

static double
now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	return v[n / 2];
}

static void
report(const char *name, double v, const char *unit, double floor)
{
	printf("bench: %s = %.2f %s\n", name, v, unit);
	if (floor > 0) {
		printf("bench: %s.floor = %.2f %s\n", name, floor, unit);
		printf("bench: %s.ratio = %.2f\n", name, v / floor);
	}
	fflush(stdout);
}

/* ---- worker functions ---- */

static int
echo(const void *arg, size_t len, dw_reply *r)
{
	return dw_reply_set(r, arg, len);
}
DW_REGISTER(echo)

static unsigned char *prepared;

static int
prepare_big(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	(void)r;
	free(prepared);
	if (!(prepared = malloc(BULK)))
		return dw_reply_error(r, "out of memory");
	memset(prepared, 0x5a, BULK);
	return 0;
}
DW_REGISTER(prepare_big)

static int
take_big(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	if (!prepared)
		return dw_reply_error(r, "nothing prepared");
	dw_reply_take(r, prepared, BULK);
	prepared = NULL;
	return 0;
}
DW_REGISTER(take_big)

#define MIB 1048576u
static unsigned char one_mib[MIB];

static int
give_1mib(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	return dw_reply_set(r, one_mib, MIB);
}
DW_REGISTER(give_1mib)

/* ---- raw TCP floors ---- */

static int
tcp_listen(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof a;
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) ||
	    listen(fd, 64) || getsockname(fd, (struct sockaddr *)&a, &sl)) {
		perror("listen");
		exit(1);
	}
	*port = ntohs(a.sin_port);
	return fd;
}

static int
tcp_connect(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a)) {
		perror("connect");
		exit(1);
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

static int
io_all(int fd, void *buf, size_t n, int wr)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = wr ? write(fd, (char *)buf + done, n - done)
		               : read(fd, (char *)buf + done, n - done);
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

/* A child process: echo 8-byte messages, or send bulk transfers. */
static pid_t
floor_server(int lfd, int bulk)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	int fd = accept(lfd, NULL, NULL);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	unsigned char b[8];
	unsigned char *big = bulk ? malloc(BULK) : NULL;
	if (big)
		memset(big, 0x5a, BULK);
	while (io_all(fd, b, 8, 0) == 0)
		if (io_all(fd, bulk ? (void *)big : b, bulk ? BULK : 8, 1))
			break;
	_exit(0);
}

/* The RTT figure and its floor are measured in alternating rounds so that
 * a burst of load from elsewhere hits both alike. */
#define RTT_ROUNDS 20
static double rtt_floor_t[RTT_ITERS], rtt_rpc_t[RTT_ITERS];

static void
floor_rtt_round(int fd, int base)
{
	unsigned char b[8] = {1};
	for (int i = 0; i < RTT_ITERS / RTT_ROUNDS; i++) {
		double t0 = now_us();
		io_all(fd, b, 8, 1);
		io_all(fd, b, 8, 0);
		rtt_floor_t[base + i] = now_us() - t0;
	}
}

static void
rpc_rtt_round(int w, int base)
{
	uint64_t v = 42;
	for (int i = 0; i < RTT_ITERS / RTT_ROUNDS; i++) {
		void *res;
		size_t n;
		double t0 = now_us();
		if (dw_remotecall_fetch(w, "echo", &v, 8, &res, &n) != DW_OK) {
			fprintf(stderr, "bench: call failed: %s\n",
			        dw_errmsg());
			exit(1);
		}
		rtt_rpc_t[base + i] = now_us() - t0;
		free(res);
	}
}

static void
bench_rtt(int w, const char *name)
{
	int port, lfd = tcp_listen(&port);
	pid_t pid = floor_server(lfd, 0);
	int fd = tcp_connect(port);
	for (int r = 0; r < RTT_ROUNDS; r++) {
		floor_rtt_round(fd, r * (RTT_ITERS / RTT_ROUNDS));
		rpc_rtt_round(w, r * (RTT_ITERS / RTT_ROUNDS));
	}
	close(fd);
	close(lfd);
	waitpid(pid, NULL, 0);
	report(name, median(rtt_rpc_t, RTT_ITERS), "us",
	       median(rtt_floor_t, RTT_ITERS));
}

static double
floor_bulk(void)
{
	int port, lfd = tcp_listen(&port);
	pid_t pid = floor_server(lfd, 1);
	int fd = tcp_connect(port);
	double best = 0;
	unsigned char b[8] = {0};
	for (int i = 0; i < 5; i++) {
		double t0 = now_us();
		io_all(fd, b, 8, 1);
		unsigned char *dst = malloc(BULK);
		io_all(fd, dst, BULK, 0);
		double gbps = BULK * 8.0 / ((now_us() - t0) * 1e3);
		free(dst);
		if (gbps > best)
			best = gbps;
	}
	close(fd);
	close(lfd);
	waitpid(pid, NULL, 0);
	return best;
}

static double
floor_spawn8(const char *self)
{
	int port, lfd = tcp_listen(&port);
	char ps[16];
	snprintf(ps, sizeof ps, "%d", port);
	double t0 = now_us();
	pid_t pids[8];
	for (int i = 0; i < 8; i++) {
		if ((pids[i] = fork()) == 0) {
			execl(self, self, "--floor-connect", ps, (char *)NULL);
			_exit(127);
		}
	}
	for (int i = 0; i < 8; i++)
		close(accept(lfd, NULL, NULL));
	double ms = (now_us() - t0) / 1e3;
	for (int i = 0; i < 8; i++)
		waitpid(pids[i], NULL, 0);
	close(lfd);
	return ms;
}

/* ---- instructions per round trip (callgrind) ---- */

/* "--cg-fetch N" / "--cg-floor N": N round trips and nothing else. */
static int
cg_part(int floor, int n)
{
	if (floor) {
		int port, lfd = tcp_listen(&port);
		pid_t pid = floor_server(lfd, 0);
		int fd = tcp_connect(port);
		unsigned char b[8] = {1};
		for (int i = 0; i < n; i++)
			if (io_all(fd, b, 8, 1) || io_all(fd, b, 8, 0))
				return 1;
		close(fd);
		close(lfd);
		waitpid(pid, NULL, 0);
		return 0;
	}
	int w;
	if (dw_addprocs(1, NULL, &w) != 1)
		return 1;
	uint64_t v = 42;
	for (int i = 0; i < n; i++) {
		void *res;
		size_t len;
		if (dw_remotecall_fetch(w, "echo", &v, 8, &res, &len) != DW_OK)
			return 1;
		free(res);
	}
	dw_finalize();
	return 0;
}

/* Instructions of every process of a part run under callgrind (summed
 * over its output files), 0 when it failed. */
static uint64_t
cg_total(const char *self, const char *part, int n)
{
	char dir[] = "/tmp/dwbench-cg-XXXXXX", cmd[4400];
	if (!mkdtemp(dir))
		return 0;
	snprintf(cmd, sizeof cmd,
	         "DWORK_HEARTBEAT_MS=600000 DWORK_HEARTBEAT_TIMEOUT_MS=1200000 "
	         "valgrind --tool=callgrind --trace-children=yes "
	         "--callgrind-out-file=%s/cg.%%p %s %s %d >/dev/null 2>&1",
	         dir, self, part, n);
	int ok = system(cmd) == 0;
	uint64_t total = bu_cg_dir(dir, "");
	rmdir(dir);
	return ok ? total : 0;
}

static double
cg_per_trip(const char *self, const char *part)
{
	uint64_t a = cg_total(self, part, 200), b = cg_total(self, part, 1200);
	return a && b > a ? (double)(b - a) / 1000.0 : -1;
}

static void
bench_instr(const char *self)
{
	const char *q = getenv("BENCH_QUICK");
	if (q && *q && strcmp(q, "0")) {
		printf("bench: rpc.fetch_rtt_instr: BENCH_QUICK (missing)\n");
		return;
	}
	if (system("valgrind --version >/dev/null 2>&1") != 0) {
		printf("bench: rpc.fetch_rtt_instr: no valgrind (missing)\n");
		return;
	}
	double fetch = cg_per_trip(self, "--cg-fetch"),
	       floor = cg_per_trip(self, "--cg-floor");
	if (fetch <= 0 || floor <= 0) {
		printf("bench: rpc.fetch_rtt_instr: callgrind run failed "
		       "(missing)\n");
		return;
	}
	report("rpc.fetch_rtt_instr", fetch, "instructions", floor);
}

/* ---- the runtime ---- */

static double
rpc_calls_per_s(int w)
{
	enum { N = 100000 };
	static dw_future *f[N];
	uint64_t v = 7;
	double t0 = now_us();
	for (int i = 0; i < N; i++)
		if (dw_remotecall(w, "echo", &v, 8, &f[i]) != DW_OK)
			exit(1);
	for (int i = 0; i < N; i++) {
		const void *r;
		size_t n;
		if (dw_future_fetch(f[i], &r, &n) != DW_OK)
			exit(1);
		dw_future_free(f[i]);
	}
	return N / ((now_us() - t0) * 1e-6);
}

static double
rpc_bulk(int w)
{
	double best = 0;
	for (int i = 0; i < 5; i++) {
		void *res;
		size_t n;
		if (dw_remotecall_fetch(w, "prepare_big", NULL, 0, &res, &n))
			exit(1);
		free(res);
		double t0 = now_us();
		if (dw_remotecall_fetch(w, "take_big", NULL, 0, &res, &n) ||
		    n != BULK)
			exit(1);
		double gbps = BULK * 8.0 / ((now_us() - t0) * 1e3);
		free(res);
		if (gbps > best)
			best = gbps;
	}
	return best;
}

/* Gbit/s fetching 1 MiB results back to back, best of 5 rounds of 64. */
static double
rpc_bulk_1mib(int w)
{
	double best = 0;
	for (int r = 0; r < 6; r++) {
		double t0 = now_us();
		for (int i = 0; i < 64; i++) {
			void *res;
			size_t n;
			if (dw_remotecall_fetch(w, "give_1mib", NULL, 0, &res,
			                        &n) ||
			    n != MIB)
				exit(1);
			free(res);
		}
		double gbps = 64.0 * MIB * 8 / ((now_us() - t0) * 1e3);
		if (r > 0 && gbps > best) /* the first round warms up */
			best = gbps;
	}
	return best;
}

/* Median round trip of an 8-byte call, in microseconds. */
static double
rpc_rtt_median(int w)
{
	enum { N = 5000 };
	static double t[N];
	uint64_t v = 42;
	for (int i = 0; i < N; i++) {
		void *res;
		size_t n;
		double t0 = now_us();
		if (dw_remotecall_fetch(w, "echo", &v, 8, &res, &n) != DW_OK)
			exit(1);
		t[i] = now_us() - t0;
		free(res);
	}
	return median(t, N);
}

/* The TLS parts: this program again with DWORK_TLS=1 (the switch is read
 * at dw_init), printing its figures on one line; "--tls-part-one-cpu" runs
 * pinned to one CPU and measures the round trip only. */
static int
tls_part(int one_cpu)
{
	int w;
	if (dw_addprocs(1, NULL, &w) != 1)
		return 1;
	if (one_cpu) {
		printf("tls1 %.6f\n", rpc_rtt_median(w));
	} else {
		double gbps = rpc_bulk_1mib(w);
		printf("tls %.6f %.6f\n", gbps, rpc_rtt_median(w));
	}
	dw_finalize();
	return 0;
}

/* Runs cmd and returns the first number after the prefix tag on a line
 * of its output (lines starting with "bench:" are passed on), or -1. */
static double
run_child(const char *cmd, const char *tag, double *second)
{
	char line[256], fmt[64];
	double v = -1, v2 = 0;
	snprintf(fmt, sizeof fmt, "%s %%lf %%lf", tag);
	fflush(stdout);
	FILE *p = popen(cmd, "r");
	while (p && fgets(line, sizeof line, p)) {
		if (!strncmp(line, "bench:", 6))
			fputs(line, stdout);
		else if (v < 0 && sscanf(line, fmt, &v, &v2) >= 1 && second)
			*second = v2;
	}
	if (!p || pclose(p) != 0)
		return -1;
	return v;
}

/* The one-CPU round trips: the plaintext one (with its raw TCP floor)
 * and the TLS one, each in a pinned child run. */
static void
bench_one_cpu(const char *self)
{
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "taskset -c 0 %s --rtt-one-cpu", self);
	double plain = run_child(cmd, "plain1", NULL);
	snprintf(cmd, sizeof cmd,
	         "DWORK_TLS=1 taskset -c 0 %s --tls-part-one-cpu", self);
	double tls = run_child(cmd, "tls1", NULL);
	if (plain <= 0 || tls <= 0) {
		fprintf(stderr, "bench: a one-CPU run failed\n");
		return;
	}
	report("rpc.fetch_rtt_us_tls_one_cpu", tls, "us", plain);
}

static void
bench_tls(const char *self, int w)
{
	double plain = rpc_bulk_1mib(w), plain_rtt = rpc_rtt_median(w);
	char cmd[4200];
	double rtt = 0;
	snprintf(cmd, sizeof cmd, "DWORK_TLS=1 %s --tls-part", self);
	double gbps = run_child(cmd, "tls", &rtt);
	if (gbps <= 0) {
		fprintf(stderr, "bench: the TLS run failed\n");
		return;
	}
	report("rpc.bulk_gbps_1mib", plain, "Gbit/s", 0);
	report("rpc.bulk_gbps_tls", gbps, "Gbit/s", plain);
	printf("bench: rpc.bulk_gbps_tls.target = 0.80\n");
	report("rpc.fetch_rtt_us_tls", rtt, "us", plain_rtt);
}

static double
rpc_addprocs8(void)
{
	int ids[8];
	double best = 1e30;
	for (int r = 0; r < 3; r++) {
		double t0 = now_us();
		if (dw_addprocs(8, NULL, ids) != 8) {
			fprintf(stderr, "bench: addprocs: %s\n", dw_errmsg());
			exit(1);
		}
		double ms = (now_us() - t0) / 1e3;
		dw_rmprocs(ids, 8, 5000);
		if (ms < best)
			best = ms;
	}
	return best;
}

int
main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--floor-connect")) {
		close(tcp_connect(atoi(argv[2])));
		return 0;
	}
	if (argc == 3 && (!strcmp(argv[1], "--cg-fetch") ||
	                  !strcmp(argv[1], "--cg-floor"))) {
		int floor = !strcmp(argv[1], "--cg-floor"), n = atoi(argv[2]);
		if (!floor && dw_init(&argc, &argv) != DW_OK)
			return 1;
		return cg_part(floor, n);
	}
	int pinned = argc >= 2 && !strcmp(argv[argc - 1], "--rtt-one-cpu");
	const char *last = argc >= 2 ? argv[argc - 1] : "";
	int tls = !strcmp(last, "--tls-part"),
	    tls1 = !strcmp(last, "--tls-part-one-cpu"),
	    tls_only = !strcmp(last, "--tls-only");
	if (dw_init(&argc, &argv) != DW_OK)
		return 1;
	if (tls || tls1)
		return tls_part(tls1);
	if (!strcmp(last, "--bulk-1mib-only")) { /* for perf stat */
		int w;
		if (dw_addprocs(1, NULL, &w) != 1)
			return 1;
		printf("bulk %.2f\n", rpc_bulk_1mib(w));
		dw_finalize();
		return 0;
	}
	if (pinned) {
		/* Both processes on one CPU (taskset): no cross-CPU wake-up,
		 * which on this VM costs tens of microseconds a hop. */
		int w1;
		if (dw_addprocs(1, NULL, &w1) != 1)
			return 1;
		bench_rtt(w1, "rpc.fetch_rtt_us_one_cpu");
		printf("plain1 %.6f\n", rpc_rtt_median(w1));
		dw_finalize();
		return 0;
	}
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	self[n > 0 ? n : 0] = 0;
	int w;
	if (dw_addprocs(1, NULL, &w) != 1)
		return 1;
	if (tls_only) { /* just the TLS figures and their floors */
		bench_tls(self, w);
		bench_one_cpu(self);
		dw_finalize();
		return 0;
	}
	bench_one_cpu(self); /* the headline first, its TLS twin with it */
	bench_rtt(w, "rpc.fetch_rtt_us_unpinned");
	bench_instr(self);
	double cps = rpc_calls_per_s(w);
	report("rpc.calls_per_s", cps, "calls/s", 0);
	printf("bench: rpc.calls_per_s.target = 300000.00 calls/s\n");
	double fb = floor_bulk();
	report("rpc.bulk_gbps", rpc_bulk(w), "Gbit/s", fb);
	bench_tls(self, w);
	dw_rmprocs(&w, 1, 5000);
	double fs = 1e30;
	for (int r = 0; r < 3; r++) {
		double v = floor_spawn8(self);
		fs = v < fs ? v : fs;
	}
	report("rpc.addprocs8_ms", rpc_addprocs8(), "ms", fs);
	printf("bench: rpc.addprocs8_ms.target = 100.00 ms\n");
	dw_finalize();
	return 0;
}
