/*
 * Descriptor exhaustion: a worker at its RLIMIT_NOFILE under a flood of
 * connections to its listen socket.  Its I/O thread must not spin (CPU
 * time from /proc/PID/task/TID/stat stays low over a second), the reason
 * is logged once, and a worker-to-worker call to it works again once
 * descriptors are freed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "rt_util.h"
#include "testutil.h"

#define FLOOD 200

static int hog[4096], nhog;
static struct rlimit saved;

/* Worker: lowers the soft limit just above what is open, then takes
 * every descriptor left. */
static int
fd_squeeze(const void *arg, size_t len, dw_reply *r)
{
	(void)arg, (void)len;
	getrlimit(RLIMIT_NOFILE, &saved);
	struct rlimit lo = saved;
	lo.rlim_cur = 128;
	if (setrlimit(RLIMIT_NOFILE, &lo) < 0)
		return dw_reply_error(r, "setrlimit: %s", strerror(errno));
	int fd;
	while (nhog < 4096 && (fd = open("/dev/null", O_RDONLY)) >= 0)
		hog[nhog++] = fd;
	int e = errno;
	if (e != EMFILE)
		return dw_reply_error(r, "open stopped with %s", strerror(e));
	return dw_reply_set(r, &nhog, sizeof nhog);
}
DW_REGISTER(fd_squeeze)

static int
fd_release(const void *arg, size_t len, dw_reply *r)
{
	(void)arg, (void)len, (void)r;
	while (nhog)
		close(hog[--nhog]);
	setrlimit(RLIMIT_NOFILE, &saved);
	return 0;
}
DW_REGISTER(fd_release)

/* Worker: the port of its listening socket. */
static int
listen_port(const void *arg, size_t len, dw_reply *r)
{
	(void)arg, (void)len;
	for (int fd = 3; fd < 1024; fd++) {
		int acc = 0;
		socklen_t sl = sizeof acc;
		struct sockaddr_in sa;
		socklen_t al = sizeof sa;
		if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &sl) == 0 &&
		    acc && getsockname(fd, (struct sockaddr *)&sa, &al) == 0 &&
		    sa.sin_family == AF_INET) {
			int port = ntohs(sa.sin_port);
			return dw_reply_set(r, &port, sizeof port);
		}
	}
	return dw_reply_error(r, "no listening socket");
}
DW_REGISTER(listen_port)

/* Worker: a call to another worker (a new link between them). */
static int
call_peer(const void *arg, size_t len, dw_reply *r)
{
	int to;
	if (len != sizeof to)
		return dw_reply_error(r, "expected an id");
	memcpy(&to, arg, sizeof to);
	void *res;
	size_t n;
	int err = dw_remotecall_fetch(to, "echo", "ping", 4, &res, &n);
	if (err)
		return dw_reply_error(r, "%s", dw_errmsg());
	free(res);
	return dw_reply_set(r, &err, sizeof err);
}
DW_REGISTER(call_peer)

static void *
call(int w, const char *fn, const void *a, size_t al, size_t *n)
{
	void *res = NULL;
	int err = dw_remotecall_fetch(w, fn, a, al, &res, n);
	if (err) {
		fprintf(stderr, "%s on %d: %s\n", fn, w, dw_errmsg());
		return NULL;
	}
	return res;
}

/* utime + stime (clock ticks) of pid's thread named "dwork-io". */
static long
io_thread_cpu(int pid)
{
	char path[320], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/task", pid);
	DIR *d = opendir(path);
	long t = -1;
	for (struct dirent *e; d && (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/%d/task/%s/comm", pid,
		         e->d_name);
		FILE *f = fopen(path, "r");
		int io = f && fgets(buf, sizeof buf, f) &&
		         !strncmp(buf, "dwork-io", 8);
		if (f)
			fclose(f);
		if (!io)
			continue;
		snprintf(path, sizeof path, "/proc/%d/task/%s/stat", pid,
		         e->d_name);
		f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
		if (f)
			fclose(f);
		buf[n] = 0;
		char *p = strrchr(buf, ')');
		unsigned long ut, st;
		if (p && sscanf(p + 2,
		                "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
		                "%lu %lu",
		                &ut, &st) == 2)
			t = (long)(ut + st);
	}
	if (d)
		closedir(d);
	return t;
}

static int
flood_one(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET,
	                         .sin_port = htons((uint16_t)port),
	                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (fd >= 0)
		connect(fd, (struct sockaddr *)&sa, sizeof sa);
	return fd;
}

static int
count_in(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int n = 0;
	while (f && fgets(line, sizeof line, f))
		n += strstr(line, needle) != NULL;
	if (f)
		fclose(f);
	return n;
}

int
main(int argc, char **argv)
{
	if (argc > 1 && !strncmp(argv[1], "--dwork-", 8))
		dw_init(&argc, &argv); /* a worker: never returns */
	const char *dir = tu_tmpdir("emfile");
	char log[600];
	snprintf(log, sizeof log, "%s/stderr", dir);
	fflush(stderr);
	int saved_err = dup(2), lf = open(log, O_WRONLY | O_CREAT, 0600);
	REQUIRE(saved_err >= 0 && lf >= 0 && dup2(lf, 2) == 2);
	close(lf);
	REQUIRE(dw_init(&argc, &argv) == DW_OK);
	int ids[2];
	REQUIRE(dw_addprocs(2, NULL, ids) == 2);
	size_t n;
	int *who = call(ids[0], "whoami", NULL, 0, &n);
	int *port = call(ids[0], "listen_port", NULL, 0, &n);
	REQUIRE(who && port);
	int pid = who[1];
	int *got = call(ids[0], "fd_squeeze", NULL, 0, &n);
	CHECK(got != NULL);
	free(got);

	int fl[FLOOD], nf = 0;
	long c0 = io_thread_cpu(pid);
	for (int i = 0; i < FLOOD; i++)
		if ((fl[nf] = flood_one(*port)) >= 0)
			nf++;
	usleep(1000000);
	long c1 = io_thread_cpu(pid);
	long hz = sysconf(_SC_CLK_TCK);
	CHECK(c0 >= 0 && c1 >= 0);
	/* a spinning I/O thread would use the whole second */
	CHECK(c1 - c0 <= hz / 10);
	printf("emfile: %d connections to a worker out of descriptors: its "
	       "I/O thread used %.0f ms of CPU in 1 s\n",
	       nf, (c1 - c0) * 1000.0 / hz);
	for (int i = 0; i < nf; i++)
		close(fl[i]);

	free(call(ids[0], "fd_release", NULL, 0, &n));
	/* a new link into the freed worker.  The flood's connections still
	 * queued on its listen socket (closed by now) are accepted first,
	 * 16 handshakes at a time, the rest refused (docs/wire-protocol.md):
	 * the dial may meet that refusal until they are through, so it is
	 * tried again, for 10 s at most */
	int *ok = NULL, tries = 0;
	for (; tries < 100 && !(ok && *ok == 0); tries++) {
		if (tries)
			usleep(100000);
		free(ok);
		ok = call(ids[1], "call_peer", &ids[0], sizeof ids[0], &n);
	}
	CHECK(ok && *ok == 0);
	printf("emfile: a worker-to-worker call worked again at try %d\n",
	       tries);
	free(ok);
	free(who), free(port);
	dw_finalize();
	fflush(stderr);
	dup2(saved_err, 2);
	close(saved_err);
	int logged = count_in(log, "is out of descriptors");
	CHECK(logged == 1);
	if (tu_failures) { /* the checks' messages went there too */
		FILE *f = fopen(log, "r");
		char line[1024];
		while (f && fgets(line, sizeof line, f))
			fputs(line, stderr);
		if (f)
			fclose(f);
	}
	tu_rmtree(dir);
	return tu_report("runtime_emfile");
}
