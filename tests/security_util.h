/*
 * Helpers for the security tests: a worker started by hand (this binary
 * as --dwork-worker, the cookie on its stdin), a relay that sits between
 * the master and a worker and records every byte each way, and a custom
 * manager that puts the relay in the way.
 */
#ifndef DW_SECURITY_UTIL_H
#define DW_SECURITY_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dwork/dwork.h>

#include "testutil.h"

/* Creates PREFIX.<pid>: the proof that a call ran in that process. */
static int
touch(const void *arg, size_t len, dw_reply *r)
{
	char path[600];
	snprintf(path, sizeof path, "%.*s.%d", (int)len, (const char *)arg,
	         (int)getpid());
	FILE *f = fopen(path, "w");
	if (!f)
		return dw_reply_error(r, "cannot create %s", path);
	fclose(f);
	return dw_reply_set(r, path, strlen(path));
}
DW_REGISTER(touch)

static int
echo(const void *arg, size_t len, dw_reply *r)
{
	return dw_reply_set(r, arg, len);
}
DW_REGISTER(echo)

static int
whoami(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	int v[2] = {dw_myid(), (int)getpid()};
	return dw_reply_set(r, v, sizeof v);
}
DW_REGISTER(whoami)

static inline int
su_exists(const char *prefix, int pid)
{
	char path[600];
	struct stat st;
	snprintf(path, sizeof path, "%.500s.%d", prefix, pid);
	return stat(path, &st) == 0;
}

/* ---- a worker started by hand ---- */

struct su_worker {
	pid_t pid;
	int in, out, err;
	int port;
};

static inline void
su_worker_start(struct su_worker *w, const char *cookie)
{
	int in[2], out[2], err[2];
	REQUIRE(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0 &&
	        pipe2(err, O_CLOEXEC) == 0);
	if ((w->pid = fork()) == 0) {
		dup2(in[0], 0), dup2(out[1], 1), dup2(err[1], 2);
		execl("/proc/self/exe", "worker", "--dwork-worker", (char *)0);
		_exit(127);
	}
	REQUIRE(w->pid > 0);
	close(in[0]), close(out[1]), close(err[1]);
	w->in = in[1], w->out = out[0], w->err = err[0];
	REQUIRE(write(w->in, cookie, strlen(cookie)) > 0);
	REQUIRE(write(w->in, "\n", 1) == 1);
	char line[256] = "";
	size_t k = 0;
	while (k + 1 < sizeof line && read(w->out, line + k, 1) == 1 &&
	       line[k] != '\n')
		k++;
	line[k] = 0;
	char *colon = strrchr(line, ':');
	REQUIRE(strncmp(line, "dwork-worker-address ", 21) == 0 && colon);
	w->port = atoi(colon + 1);
}

/* Ends a worker started by hand (closing its stdin ends one that has no
 * master yet); returns its exit status and what it wrote on stderr. */
static inline int
su_worker_end(struct su_worker *w, char *err, size_t len)
{
	int st = -1;
	close(w->in);
	for (int i = 0; i < 500; i++) {
		if (waitpid(w->pid, &st, WNOHANG) == w->pid)
			break;
		usleep(10000);
	}
	if (waitpid(w->pid, NULL, WNOHANG) == 0) {
		kill(w->pid, SIGKILL);
		waitpid(w->pid, &st, 0);
		st = -1;
	}
	size_t got = 0;
	ssize_t r;
	while (got + 1 < len &&
	       (r = read(w->err, err + got, len - 1 - got)) > 0)
		got += (size_t)r;
	err[got] = 0;
	close(w->out), close(w->err);
	return st;
}

static inline int
su_listen(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)*port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof a;
	REQUIRE(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
	        listen(fd, 8) == 0 &&
	        getsockname(fd, (struct sockaddr *)&a, &sl) == 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static inline int
su_connect(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	REQUIRE(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
	struct timeval tv = {5, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	return fd;
}

/* Reads until the peer closes (or 5 s of silence); returns the bytes. */
static inline size_t
su_read_all(int fd, unsigned char *buf, size_t cap)
{
	size_t got = 0;
	ssize_t r;
	while (got < cap && (r = recv(fd, buf + got, cap - got, 0)) > 0)
		got += (size_t)r;
	return got;
}

/* ---- the relay ---- */

#define SU_REC (4u << 20)

struct su_relay {
	int lfd, port, target;
	pthread_t t;
	unsigned char *m2w, *w2m; /* what the master sent, the worker sent */
	size_t n_m2w, n_w2m;
};

static inline void
su_record(unsigned char *rec, size_t *n, const unsigned char *b, size_t k)
{
	size_t room = SU_REC - *n;
	memcpy(rec + *n, b, k < room ? k : room);
	*n += k < room ? k : room;
}

static inline void *
su_relay_main(void *arg)
{
	struct su_relay *R = arg;
	int m = accept4(R->lfd, NULL, NULL, SOCK_CLOEXEC);
	int w = m >= 0 ? su_connect(R->target) : -1;
	unsigned char b[65536];
	struct pollfd p[2] = {{.fd = m, .events = POLLIN},
	                      {.fd = w, .events = POLLIN}};
	while (m >= 0 && poll(p, 2, -1) > 0) {
		int from = p[0].revents ? 0 : 1;
		ssize_t k = recv(p[from].fd, b, sizeof b, 0);
		if (k <= 0)
			break;
		if (send(p[!from].fd, b, (size_t)k, MSG_NOSIGNAL) != k)
			break;
		if (from == 0)
			su_record(R->m2w, &R->n_m2w, b, (size_t)k);
		else
			su_record(R->w2m, &R->n_w2m, b, (size_t)k);
	}
	if (m >= 0)
		close(m);
	if (w >= 0)
		close(w);
	return NULL;
}

static inline void
su_relay_start(struct su_relay *R, int target)
{
	memset(R, 0, sizeof *R);
	R->target = target;
	R->m2w = malloc(SU_REC);
	R->w2m = malloc(SU_REC);
	REQUIRE(R->m2w && R->w2m);
	R->lfd = su_listen(&R->port);
	REQUIRE(pthread_create(&R->t, NULL, su_relay_main, R) == 0);
}

static inline void
su_relay_join(struct su_relay *R)
{
	pthread_join(R->t, NULL);
	close(R->lfd);
	free(R->m2w);
	free(R->w2m);
}

/* ---- a custom manager: a hand-started worker behind a relay ---- */

struct su_mgr {
	struct su_worker w;
	struct su_relay relay;
	const char *cookie; /* NULL: the cluster's */
	int relayed;        /* 0: connect to the worker directly */
};

static inline int
su_launch(void *self, int n, dw_launch *l)
{
	struct su_mgr *M = self;
	(void)n;
	su_worker_start(&M->w, M->cookie ? M->cookie : dw_launch_cookie(l));
	int port = M->w.port;
	if (M->relayed) {
		su_relay_start(&M->relay, M->w.port);
		port = M->relay.port;
	}
	dw_worker_config wc = {.id = dw_launch_id(l, 0),
	                       .port = port,
	                       .fd = -1,
	                       .pid = M->w.pid,
	                       .out_fd = -1,
	                       .err_fd = -1,
	                       .data = M};
	snprintf(wc.host, sizeof wc.host, "127.0.0.1");
	return dw_launched(l, &wc);
}

static inline int
su_kill(void *self, dw_worker_config *wc)
{
	(void)self;
	return kill(wc->pid, SIGKILL) == 0 ? DW_OK : DW_EIO;
}

static inline int
su_add(struct su_mgr *M, int *id)
{
	dw_manager m = {
	    .name = "by hand", .launch = su_launch, .kill = su_kill, .self = M};
	return dw_addprocs_with(&m, 1, id);
}

#endif
