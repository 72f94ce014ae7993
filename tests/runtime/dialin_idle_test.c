/*
 * Idle connections to the dial-in port do not delay a real worker: a
 * hundred TCP connections that never speak are opened first, then a
 * real worker dials in and must join within 1 s of the join time
 * measured without them (it gives up after 10 s).  The idle ones are
 * dropped at their deadline, each with a logged reason.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "rt_util.h"
#include "testutil.h"

#define NIDLE 100

static double
now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static pid_t
dial_start(const char *addr, const char *file)
{
	pid_t pid = fork();
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);
		dup2(nul, 0);
		execl("/proc/self/exe", "dialer", "--dwork-dial", addr,
		      "--dwork-cookie-file", file, (char *)0);
		_exit(127);
	}
	REQUIRE(pid > 0);
	return pid;
}

static int
raw_connect(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	REQUIRE(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
	return fd;
}

/* The time from starting a dialler to its join (ms); *id gets it. */
static double
join_one(const char *addr, const char *file, pid_t *pid, int *id)
{
	double t0 = now_ms();
	*pid = dial_start(addr, file);
	int n = dw_accept_workers(1, 10000, id);
	double t = now_ms() - t0;
	CHECK(n == 1);
	if (n != 1)
		fprintf(stderr, "accept: %s\n", dw_errmsg());
	return t;
}

static void
reap(pid_t pid)
{
	for (int i = 0; i < 500; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Counts the lines of the log file holding what. */
static int
count_lines(const char *path, const char *what)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int n = 0;
	while (f && fgets(line, sizeof line, f))
		n += strstr(line, what) != NULL;
	if (f)
		fclose(f);
	return n;
}

int
main(int argc, char **argv)
{
	REQUIRE(dw_init(&argc, &argv) == DW_OK);
	const char *dir = tu_tmpdir("dialidle");
	char cookie[600], logp[600], addr[300];
	snprintf(cookie, sizeof cookie, "%s/cookie", dir);
	snprintf(logp, sizeof logp, "%s/log", dir);
	REQUIRE(dw_listen("127.0.0.1:0", addr, sizeof addr) == DW_OK);
	REQUIRE(dw_write_cookie_file(cookie) == DW_OK);
	int port = atoi(strrchr(addr, ':') + 1);

	/* the normal join time, nothing else on the port */
	pid_t p0;
	int id0;
	double base = join_one(addr, cookie, &p0, &id0);

	/* the master's log (its stderr) into a file from here on */
	int saved = dup(2), lf = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	REQUIRE(saved >= 0 && lf >= 0 && dup2(lf, 2) == 2);
	close(lf);

	int idle[NIDLE];
	for (int i = 0; i < NIDLE; i++)
		idle[i] = raw_connect(port);
	pid_t p1;
	int id1;
	double with_idle = join_one(addr, cookie, &p1, &id1);
	void *res;
	size_t len;
	CHECK(dw_remotecall_fetch(id1, "whoami", NULL, 0, &res, &len) == DW_OK);
	if (len == 2 * sizeof(int))
		CHECK(((int *)res)[1] == p1);
	free(res);

	/* the idle ones go at their deadline (3 s after their accept),
	 * while the next accept waits */
	double t0 = now_ms();
	CHECK(dw_accept_workers(1, 4000, NULL) == DW_ETIMEDOUT);
	int closed = 0;
	for (int i = 0; i < NIDLE; i++) {
		char b;
		struct pollfd pf = {.fd = idle[i], .events = POLLIN};
		if (poll(&pf, 1, 0) == 1 && recv(idle[i], &b, 1, 0) == 0)
			closed++;
		close(idle[i]);
	}
	double waited = now_ms() - t0;
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	int logged = count_lines(logp, "no handshake message within");

	printf("bench: dialin.join_ms = %.1f ms\n", base);
	printf("bench: dialin.join_ms_100_idle = %.1f ms\n", with_idle);
	printf("idle connections closed by the master: %d of %d (%d logged),"
	       " accept waited %.0f ms\n",
	       closed, NIDLE, logged, waited);
	CHECK(with_idle < base + 1000.0);
	CHECK(closed == NIDLE);
	CHECK(logged == NIDLE);

	int ids[2] = {id0, id1};
	CHECK(dw_rmprocs(ids, 2, 5000) == DW_OK);
	reap(p0);
	reap(p1);
	dw_finalize();
	tu_rmtree(dir);
	return tu_report("dialin_idle");
}
