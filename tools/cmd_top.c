/*
 * dwork top: attaches to a running master's control socket (the runtime's
 * control.c) and shows its cluster live (docs/tools.md, "dwork top").
 * The socket is found in the user's runtime directory by pid; the link is
 * authenticated by the handshake every dwork link makes, with the cookie
 * the master left beside its socket (mode 0600).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <dwork/error.h>

#include "runtime/handshake.h"
#include "runtime/live.h"
#include "runtime/rt.h"
#include "runtime/wire.h"
#include "tools/cmd.h"
#include "tools/top.h"

#define TOP_MAX_MASTERS 64
#define TOP_REPLY_MAX   (64u << 20)

struct top_opts {
	int pid;
	int once, json;
	int interval_ms;
	long count; /* snapshots to show, 0: until the master ends */
	const char *http;
};

static int
top_usage(void)
{
	fprintf(stderr,
	        "usage: dwork top [--pid PID] [--once] [--json] "
	        "[--interval MS] [--count N] [--http HOST:PORT]\n"
	        "  attaches to this user's running dwork master on this host "
	        "and shows its workers live\n");
	return CMD_USAGE;
}

static int
top_alive(int pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

/* The pids of this user's running masters in dir; stale sockets (their
 * process ended) are skipped. */
static int
top_masters(const char *dir, int *pids, int max)
{
	DIR *d = opendir(dir);
	int n = 0;
	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d)) && n < max;) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (pid > 0 && end != e->d_name && !strcmp(end, ".sock") &&
		    top_alive((int)pid))
			pids[n++] = (int)pid;
	}
	closedir(d);
	return n;
}

static void
top_cmdline(int pid, char *buf, size_t len)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/cmdline", pid);
	FILE *f = fopen(p, "r");
	size_t n = f ? fread(buf, 1, len - 1, f) : 0;
	if (f)
		fclose(f);
	for (size_t i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	buf[n] = 0;
}

/* The master to attach to: opts->pid, or the only one running. */
static int
top_choose(const char *dir, const struct top_opts *o, int *pid)
{
	int pids[TOP_MAX_MASTERS];
	int n = top_masters(dir, pids, TOP_MAX_MASTERS);
	for (int i = 0; o->pid && i < n; i++)
		if (pids[i] == o->pid)
			return *pid = o->pid, CMD_OK;
	if (o->pid) {
		fprintf(
		    stderr,
		    "dwork top: no running dwork master with pid %d of this "
		    "user (looked in %s)\n",
		    o->pid, dir);
		return CMD_FAILED;
	}
	if (n == 1)
		return *pid = pids[0], CMD_OK;
	if (n == 0) {
		fprintf(stderr,
		        "dwork top: no running dwork master of this user on "
		        "this host (looked in %s)\n",
		        dir);
		return CMD_FAILED;
	}
	fprintf(stderr,
	        "dwork top: %d dwork masters are running; choose one "
	        "with --pid PID:\n",
	        n);
	for (int i = 0; i < n; i++) {
		char cmd[200];
		top_cmdline(pids[i], cmd, sizeof cmd);
		fprintf(stderr, "  %8d  %s\n", pids[i], cmd);
	}
	return CMD_USAGE;
}

static int
top_read_cookie(const char *dir, int pid, char *cookie, size_t len)
{
	char p[300];
	snprintf(p, sizeof p, "%s/%d.cookie", dir, pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n = fd < 0 ? -1 : read(fd, cookie, len - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0) {
		fprintf(stderr, "dwork top: cannot read %s: %s\n", p,
		        n < 0 ? strerror(errno) : "empty");
		return -1;
	}
	cookie[n] = 0;
	return 0;
}

static int
top_attach(const char *dir, int pid, const char *cookie)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int n =
	    snprintf(sa.sun_path, sizeof sa.sun_path, "%s/%d.sock", dir, pid);
	if (n < 0 || (size_t)n >= sizeof sa.sun_path) {
		fprintf(stderr, "dwork top: %s is too long for a socket\n",
		        dir);
		return -1;
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		fprintf(stderr, "dwork top: cannot connect to %s: %s\n",
		        sa.sun_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	struct hs_side me = {.cookie = cookie, .role = AUTH_WORKER};
	struct hs_result r;
	char why[256];
	int err = hs_answer(fd, &me, rt_now_ms() + 5000, &r, why, sizeof why);
	if (err != DW_OK) {
		fprintf(stderr, "dwork top: the master %d refused: %s\n", pid,
		        why);
		close(fd);
		return -1;
	}
	return fd;
}

char *
top_request(int fd, int fmt, size_t *len)
{
	unsigned char hdr[WIRE_HDR];
	struct wire_hdr h;
	char why[128];
	wire_put_hdr(hdr, WIRE_STATS, (uint64_t)fmt, 0);
	if (cl_io_full(fd, hdr, WIRE_HDR, 1, rt_now_ms() + 5000) < 0 ||
	    cl_io_full(fd, hdr, WIRE_HDR, 0, rt_now_ms() + 5000) < 0 ||
	    wire_parse_hdr(hdr, TOP_REPLY_MAX, &h, why, sizeof why) < 0 ||
	    h.type != WIRE_STATS)
		return NULL;
	char *s = malloc((size_t)h.payload + 1);
	if (!s || cl_io_full(fd, s, h.payload, 0, rt_now_ms() + 5000) < 0) {
		free(s);
		return NULL;
	}
	s[h.payload] = 0;
	*len = h.payload;
	return s;
}

static int
top_show(int fd, const struct top_opts *o)
{
	int tty = isatty(STDOUT_FILENO) && !o->json && !o->once;
	for (long i = 0; !o->count || i < o->count; i++) {
		size_t len;
		char *s = top_request(fd, o->json ? 0 : 1, &len);
		if (!s) {
			if (i == 0)
				fprintf(stderr,
				        "dwork top: the master closed the "
				        "control socket\n");
			else
				printf("dwork top: the master ended\n");
			return i == 0 ? CMD_FAILED : CMD_OK;
		}
		if (tty)
			fputs("\033[H\033[2J", stdout);
		fwrite(s, 1, len, stdout);
		if (!o->json && !tty)
			fputc('\n', stdout);
		fflush(stdout);
		free(s);
		if (o->once)
			break;
		usleep((useconds_t)o->interval_ms * 1000u);
	}
	return CMD_OK;
}

static int
top_int(const char *s, long lo, long hi, long *v)
{
	char *end;
	errno = 0;
	*v = strtol(s, &end, 10);
	return !errno && end != s && !*end && *v >= lo && *v <= hi;
}

static int
top_parse(int argc, char **argv, struct top_opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		long v;
		int more = i + 1 < argc;
		if (!strcmp(a, "--once"))
			o->once = 1;
		else if (!strcmp(a, "--json"))
			o->json = 1;
		else if (!strcmp(a, "--pid") && more &&
		         top_int(argv[++i], 1, INT32_MAX, &v))
			o->pid = (int)v;
		else if (!strcmp(a, "--interval") && more &&
		         top_int(argv[++i], 10, 3600000, &v))
			o->interval_ms = (int)v;
		else if (!strcmp(a, "--count") && more &&
		         top_int(argv[++i], 1, INT32_MAX, &v))
			o->count = v;
		else if (!strcmp(a, "--http") && more)
			o->http = argv[++i];
		else {
			fprintf(stderr, "dwork top: bad argument '%s'%s\n", a,
			        more || a[0] != '-' ? ""
			                            : " (it needs a value)");
			return top_usage();
		}
	}
	return CMD_OK;
}

int
cmd_top(int argc, char **argv)
{
	struct top_opts o = {.interval_ms = 1000};
	int rc = top_parse(argc, argv, &o);
	if (rc != CMD_OK)
		return rc;
	char dir[256], why[300], cookie[WIRE_COOKIE_MAX + 1];
	int pid;
	if (live_dir(dir, sizeof dir, why, sizeof why) < 0) {
		fprintf(stderr, "dwork top: %s\n", why);
		return CMD_FAILED;
	}
	if ((rc = top_choose(dir, &o, &pid)) != CMD_OK)
		return rc;
	if (top_read_cookie(dir, pid, cookie, sizeof cookie) < 0)
		return CMD_FAILED;
	int fd = top_attach(dir, pid, cookie);
	if (fd < 0)
		return CMD_FAILED;
	rc = o.http ? top_http(fd, o.http) : top_show(fd, &o);
	close(fd);
	return rc;
}
