/*
 * Workers that dial in: started by hand (fork/exec of this binary, as a
 * script or scheduler would), with the cookie in a file or on stdin;
 * wrong cookies, garbage and silent connections rejected without taking
 * an id; a worker started before the master listens; timeouts; removal.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "rt_util.h"
#include "testutil.h"

struct dialer {
	pid_t pid;
	int err; /* its stderr */
};

/* Starts this binary as `--dwork-dial addr`, the cookie from file, or
 * (file NULL) written on its stdin. */
static struct dialer
dial_start(const char *addr, const char *file, const char *stdin_cookie)
{
	int in[2], er[2];
	REQUIRE(pipe(in) == 0 && pipe(er) == 0);
	struct dialer d = {.pid = fork()};
	if (d.pid == 0) {
		dup2(in[0], 0), dup2(er[1], 2);
		close(in[1]), close(er[0]);
		if (file)
			execl("/proc/self/exe", "dialer", "--dwork-dial", addr,
			      "--dwork-cookie-file", file, (char *)0);
		else
			execl("/proc/self/exe", "dialer", "--dwork-dial", addr,
			      (char *)0);
		_exit(127);
	}
	REQUIRE(d.pid > 0);
	close(in[0]), close(er[1]);
	if (stdin_cookie) {
		REQUIRE(write(in[1], stdin_cookie, strlen(stdin_cookie)) > 0);
		REQUIRE(write(in[1], "\n", 1) == 1);
	}
	close(in[1]); /* a dial-in worker does not need stdin afterwards */
	d.err = er[0];
	return d;
}

/* Waits for it to exit; returns its status, its stderr in buf. */
static int
dial_end(struct dialer *d, char *buf, size_t len)
{
	int st = -1;
	for (int i = 0; i < 1000; i++) {
		if (waitpid(d->pid, &st, WNOHANG) == d->pid)
			break;
		usleep(10000);
		st = -1;
	}
	if (st == -1) {
		kill(d->pid, SIGKILL);
		waitpid(d->pid, NULL, 0);
	}
	ssize_t n = read(d->err, buf, len - 1);
	buf[n > 0 ? n : 0] = 0;
	close(d->err);
	return st;
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

static int
free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof a;
	REQUIRE(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
	getsockname(fd, (struct sockaddr *)&a, &sl);
	close(fd);
	return ntohs(a.sin_port);
}

static int
whoami_pid(int w)
{
	void *res;
	size_t n;
	int pid = -1;
	if (dw_remotecall_fetch(w, "whoami", NULL, 0, &res, &n) == DW_OK) {
		pid = ((int *)res)[0] == w ? ((int *)res)[1] : -2;
		free(res);
	}
	return pid;
}

int
main(int argc, char **argv)
{
	REQUIRE(dw_init(&argc, &argv) == DW_OK);
	const char *dir = tu_tmpdir("dial");
	char cookie_file[600], bad_file[600], addr[300], ckbuf[128];
	snprintf(cookie_file, sizeof cookie_file, "%s/cookie", dir);
	snprintf(bad_file, sizeof bad_file, "%s/bad-cookie", dir);

	CHECK(dw_accept_workers(1, 100, NULL) == DW_ESTATE);
	CHECK(strstr(dw_errmsg(), "dw_listen") != NULL);
	CHECK(dw_listen("nonsense", addr, sizeof addr) == DW_EINVAL);
	CHECK(strstr(dw_errmsg(), "'nonsense' is not host:port") != NULL);
	REQUIRE(dw_listen("127.0.0.1:0", addr, sizeof addr) == DW_OK);
	CHECK(strncmp(addr, "127.0.0.1:", 10) == 0);
	CHECK(dw_listen("127.0.0.1:0", NULL, 0) == DW_ESTATE);
	int port = atoi(strrchr(addr, ':') + 1);

	/* the cookie file: 0600, one line */
	REQUIRE(dw_write_cookie_file(cookie_file) == DW_OK);
	struct stat st;
	CHECK(stat(cookie_file, &st) == 0 && (st.st_mode & 0777) == 0600);
	FILE *f = fopen(cookie_file, "r");
	REQUIRE(f && fgets(ckbuf, sizeof ckbuf, f));
	fclose(f);
	ckbuf[strcspn(ckbuf, "\n")] = 0;
	CHECK(strlen(ckbuf) == 32);
	f = fopen(bad_file, "w");
	REQUIRE(f);
	fputs("0123456789abcdef0123456789abcdef\n", f);
	fclose(f);

	/* Impostors first: a worker with the wrong cookie, a peer that
	 * sends garbage, one that connects and leaves.  None takes an id. */
	struct dialer bad = dial_start(addr, bad_file, NULL);
	int junk = raw_connect(port);
	CHECK(send(junk, "GET / HTTP/1.0\r\n\r\n", 18, 0) == 18);
	int quiet = raw_connect(port);
	close(quiet);
	/* then three real ones: cookie in a file, twice; on stdin, once */
	struct dialer good[3];
	good[0] = dial_start(addr, cookie_file, NULL);
	good[1] = dial_start(addr, cookie_file, NULL);
	good[2] = dial_start(addr, NULL, ckbuf);
	int ids[3] = {0, 0, 0};
	CHECK(dw_accept_workers(3, 20000, ids) == 3);
	CHECK(ids[0] == 2 && ids[1] == 3 && ids[2] == 4);
	CHECK(dw_nworkers() == 3);
	int pids[3];
	for (int i = 0; i < 3; i++) {
		pids[i] = whoami_pid(ids[i]);
		CHECK(pids[i] > 0);
	}
	/* each id is one of the processes started above, once */
	for (int i = 0; i < 3; i++) {
		int found = 0;
		for (int k = 0; k < 3; k++)
			found += pids[i] == good[k].pid;
		CHECK(found == 1);
	}
	char err[4096];
	int s = dial_end(&bad, err, sizeof err);
	CHECK(WIFEXITED(s) && WEXITSTATUS(s) == 2);
	CHECK(strstr(err, "did not accept this worker") != NULL);
	close(junk);

	/* nobody dials: a timeout naming the count */
	CHECK(dw_accept_workers(1, 300, NULL) == DW_ETIMEDOUT);
	CHECK(strstr(dw_errmsg(), "0 of 1 workers dialled in within 300 ms"));

	/* removal: the workers exit */
	CHECK(dw_rmprocs(ids, 3, 5000) == DW_OK);
	for (int i = 0; i < 3; i++) {
		s = dial_end(&good[i], err, sizeof err);
		CHECK(WIFEXITED(s) && WEXITSTATUS(s) == 0);
		if (!WIFEXITED(s) || WEXITSTATUS(s) != 0)
			fprintf(stderr, "worker %d said:\n%s\n", ids[i], err);
	}
	CHECK(dw_nworkers() == 1);

	/* a worker started before the master listens keeps trying */
	CHECK(dw_listen_close() == DW_OK);
	int p2 = free_port();
	char addr2[64];
	snprintf(addr2, sizeof addr2, "127.0.0.1:%d", p2);
	struct dialer early = dial_start(addr2, cookie_file, NULL);
	usleep(300000);
	REQUIRE(dw_listen(addr2, NULL, 0) == DW_OK);
	int id;
	CHECK(dw_accept_workers(1, 20000, &id) == 1);
	CHECK(whoami_pid(id) == early.pid);

	/* a worker whose master is gone exits */
	dw_finalize();
	s = dial_end(&early, err, sizeof err);
	CHECK(WIFEXITED(s) && WEXITSTATUS(s) == 0);
	if (!WIFEXITED(s) || WEXITSTATUS(s) != 0)
		fprintf(stderr, "the early worker said:\n%s\n", err);
	CHECK(dw_write_cookie_file(cookie_file) == DW_ESTATE);
	tu_rmtree(dir);
	return tu_report("manager_dialin");
}
