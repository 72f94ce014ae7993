/*
 * A worker's life: read the cookie from stdin, listen, print the address
 * line, authenticate the master, serve calls until told to exit or the
 * master goes away.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "runtime/handshake.h"
#include "runtime/rt.h"
#include "runtime/rtrace.h"
#include "runtime/tls.h"
#include "runtime/work.h"

#define WORKER_FLAG "--dwork-worker"
#define DIAL_FLAG   "--dwork-dial"

/* Set by worker_args: the port to listen on, and for a worker that
 * dials in (docs/managers.md), the master's address and the cookie file. */
static const char *w_port = "0", *w_dial, *w_cookie_file;

int
worker_is_worker(int argc, char **argv)
{
	return argc > 1 && (strcmp(argv[1], WORKER_FLAG) == 0 ||
	                    strcmp(argv[1], DIAL_FLAG) == 0);
}

static void
worker_die(const char *fmt, const char *arg)
{
	fprintf(stderr, "dwork worker: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(2);
}

/* The cookie is the first line of stdin, or of the cookie file. */
static void
worker_read_cookie(void)
{
	size_t n = 0;
	int fd = w_cookie_file ? open(w_cookie_file, O_RDONLY | O_CLOEXEC) : 0;
	const char *src = w_cookie_file ? w_cookie_file : "stdin";
	if (fd < 0)
		worker_die("cannot open the cookie file '%s'", w_cookie_file);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	while (n < WIRE_COOKIE_MAX) {
		if (poll(&p, 1, 10000) <= 0)
			worker_die("no cookie on %s within 10 s", src);
		char ch;
		ssize_t r = read(fd, &ch, 1);
		if (r <= 0 && !(w_cookie_file && r == 0 && n))
			worker_die("%s ended before the cookie", src);
		if (r <= 0 || ch == '\n')
			break;
		rt.cookie[n++] = ch;
	}
	rt.cookie[n] = 0;
	if (fd > 0)
		close(fd);
	if (n == 0)
		worker_die("empty cookie on %s", src);
}

static int
worker_listen(const char *bind_addr)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
	                         .ai_flags = AI_PASSIVE},
	                *ai = NULL;
	if (getaddrinfo(bind_addr, w_port, &hints, &ai) != 0)
		worker_die("cannot resolve bind address '%s'", bind_addr);
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
	    listen(fd, 16) < 0)
		worker_die("cannot listen on '%s'", bind_addr);
	freeaddrinfo(ai);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	char host[NI_MAXHOST], port[NI_MAXSERV];
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	getnameinfo((struct sockaddr *)&ss, sl, host, sizeof host, port,
	            sizeof port, NI_NUMERICHOST | NI_NUMERICSERV);
	snprintf(rt.my_addr, sizeof rt.my_addr,
	         strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, port);
	return fd;
}

static int
worker_read_full(int fd, void *buf, size_t n, int ms)
{
	size_t done = 0;
	while (done < n) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, ms) <= 0)
			return -1;
		ssize_t r = recv(fd, (char *)buf + done, n - done, 0);
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

/* Answers a connecting peer's handshake; returns 0 when it proved to be
 * our master (its HELLO's id and flags in r). */
static int
worker_handshake(int fd, struct hs_result *r, char *why, size_t wl)
{
	struct hs_side me = {
	    .cookie = rt.cookie, .role = AUTH_WORKER, .addr = rt.my_addr};
	return hs_answer(fd, &me, rt_now_ms() + 10000, r, why, wl) ? -1 : 0;
}

/* Waits for the master; gives up when stdin (the master's pipe) closes
 * or after 60 s. */
static int
worker_accept_master(int lfd, struct hs_result *h)
{
	for (;;) {
		struct pollfd p[2] = {{.fd = lfd, .events = POLLIN},
		                      {.fd = 0, .events = POLLIN}};
		int r = poll(p, 2, 60000);
		if (r == 0)
			worker_die("%s", "no master connected within 60 s");
		if (r < 0 && errno == EINTR)
			continue;
		if (p[1].revents) {
			char ch;
			if (read(0, &ch, 1) <= 0)
				exit(0); /* the master is gone */
		}
		if (!(p[0].revents & POLLIN))
			continue;
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		char why[300];
		if (worker_handshake(fd, h, why, sizeof why) == 0)
			return fd;
		fprintf(stderr, "dwork worker: rejected a connection: %s\n",
		        why);
		close(fd);
	}
}

/* Connects to HOST:PORT ([v6]:PORT), retrying while the master is not
 * listening yet, for up to 60 s. */
static int
worker_connect(const char *addr)
{
	char host[256];
	const char *colon = strrchr(addr, ':');
	size_t hl = colon ? (size_t)(colon - addr) : 0;
	if (hl && addr[0] == '[' && addr[hl - 1] == ']')
		addr++, hl -= 2;
	if (!colon || !hl || hl >= sizeof host || !colon[1])
		worker_die("'%s' is not HOST:PORT", addr);
	memcpy(host, addr, hl);
	host[hl] = 0;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	int e = getaddrinfo(host, colon + 1, &hints, &ai);
	if (e)
		worker_die("cannot resolve the master's address: %s",
		           gai_strerror(e));
	int fd = -1;
	uint64_t deadline = rt_now_ms() + 60000;
	for (int wait = 50;; wait = wait < 1000 ? wait * 2 : 1000) {
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		e = errno;
		if (fd >= 0)
			close(fd);
		fd = -1;
		if ((e != ECONNREFUSED && e != ENETUNREACH &&
		     e != EHOSTUNREACH && e != ETIMEDOUT && e != EINTR) ||
		    rt_now_ms() >= deadline)
			break;
		usleep((useconds_t)wait * 1000u);
	}
	freeaddrinfo(ai);
	if (fd < 0)
		worker_die("cannot connect to the master: %s", strerror(e));
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

/* A worker that dials in answers the same handshake: the master proves
 * first, so whoever listens at addr learns nothing from this worker
 * unless it knows the cookie (docs/wire-protocol.md). */
static int
worker_dial(const char *addr, struct hs_result *h)
{
	int fd = worker_connect(addr);
	char why[300];
	if (worker_handshake(fd, h, why, sizeof why) < 0) {
		fprintf(stderr, "dwork worker: %s\n", why);
		worker_die("the master at %s did not accept this worker", addr);
	}
	return fd;
}

/* Takes the link limit and the flow-control bounds, CONFIG's last u32
 * and two u64, off the payload. */
static int
worker_config_limit(const unsigned char *p, uint32_t *len, char *why,
                    size_t whylen)
{
	uint32_t v = *len >= 20 ? wire_get_u32(p + *len - 20) : 0;
	uint64_t jq = *len >= 20 ? wire_get_u64(p + *len - 16) : 0;
	uint64_t sq = *len >= 20 ? wire_get_u64(p + *len - 8) : 0;
	if (jq < FLOW_FLOOR || sq < FLOW_FLOOR) {
		snprintf(why, whylen,
		         "the master's settings carry bad flow-control "
		         "bounds (%llu, %llu)",
		         (unsigned long long)jq, (unsigned long long)sq);
		return -1;
	}
	conn_job_limit = jq;
	conn_send_limit = sq;
	if (v < WIRE_PAYLOAD_FLOOR || v > WIRE_PAYLOAD_CEIL) {
		snprintf(why, whylen,
		         "the master's settings carry a bad link limit (%u)",
		         v);
		return -1;
	}
	conn_max_payload = v;
	*len -= 20;
	return 0;
}

static int
worker_read_link(int fd, struct ssl_st *ssl, void *buf, size_t n)
{
	if (ssl)
		return tls_io_full(ssl, fd, buf, n, 0, rt_now_ms() + 10000);
	return worker_read_full(fd, buf, n, 10000);
}

/* The settings the master sends right after the handshake (inside TLS
 * when the master announced it). */
static void
worker_read_config(int fd, struct ssl_st *ssl)
{
	unsigned char *buf = malloc(WIRE_HDR + RTR_CONFIG_MAX);
	struct wire_hdr h;
	char why[200] = "no settings from the master";
	if (buf && worker_read_link(fd, ssl, buf, WIRE_HDR) == 0 &&
	    wire_parse_hdr(buf, RTR_CONFIG_MAX, &h, why, sizeof why) == 0 &&
	    h.type == WIRE_CONFIG &&
	    worker_read_link(fd, ssl, buf, h.payload) == 0 &&
	    worker_config_limit(buf, &h.payload, why, sizeof why) == 0 &&
	    rtr_worker_config(buf, h.payload, rt.myid, why, sizeof why) == 0) {
		free(buf);
		return;
	}
	free(buf);
	worker_die("%s", why);
}

void call_note_interrupt(void);

static void
worker_on_sigint(int sig)
{
	(void)sig;
	call_note_interrupt();
}

/* Removes the runtime's own arguments; returns the bind address. */
static const char *
worker_args(int *argc, char ***argv, int *execs)
{
	const char *bind = "127.0.0.1";
	char **v = *argv;
	int j = 1;
	for (int i = 1; i < *argc; i++) {
		if (i == 1 && !strcmp(v[i], WORKER_FLAG))
			continue;
		if (!strcmp(v[i], "--dwork-bind") && i + 1 < *argc)
			bind = v[++i];
		else if (!strcmp(v[i], "--dwork-port") && i + 1 < *argc)
			w_port = v[++i];
		else if (!strcmp(v[i], DIAL_FLAG) && i + 1 < *argc)
			w_dial = v[++i];
		else if (!strcmp(v[i], "--dwork-cookie-file") && i + 1 < *argc)
			w_cookie_file = v[++i];
		else if (!strcmp(v[i], "--dwork-executors") && i + 1 < *argc)
			*execs = atoi(v[++i]);
		else
			v[j++] = v[i];
	}
	v[j] = NULL;
	*argc = j;
	return bind;
}

int
worker_main(int *argc, char ***argv)
{
	int execs = 1;
	const char *bind = worker_args(argc, argv, &execs);
	setvbuf(stdout, NULL, _IOLBF, 0);
	worker_read_cookie();
	int lfd = worker_listen(bind);
	struct hs_result h;
	int fd;
	if (w_dial) {
		fd = worker_dial(w_dial, &h);
	} else {
		printf("dwork-worker-address %s\n", rt.my_addr);
		fflush(stdout);
		fd = worker_accept_master(lfd, &h);
	}
	rt.myid = (int)h.id;
	rt.role = RT_WORKER;
	rt.opts.tls = (h.flags & AUTH_FLAG_TLS) != 0;
	struct ssl_st *ssl = NULL;
	char why[300];
	if (rt.opts.tls && !(ssl = tls_start(fd, 0, h.key, rt_now_ms() + 10000,
	                                     why, sizeof why)))
		worker_die("%s", why);
	OPENSSL_cleanse(h.key, sizeof h.key);
	worker_read_config(fd, ssl);
	/* The main thread is thread 1 of every task, then I/O, executors. */
	rtr_thread_start("main", DWT_STATE_IDLE);
	signal(SIGINT, worker_on_sigint);
	rt.master = conn_new_tls(fd, 1, ssl);
	rt.opts.heartbeat_ms = 1000; /* the timer drops silent peers */
	rt_attach();
	if (!rt.master || loop_start() != DW_OK ||
	    call_start_executors(execs < 1 ? 1 : execs) != DW_OK ||
	    loop_add_conn(rt.master) != DW_OK)
		worker_die("%s", "cannot start the runtime threads");
	peer_start(lfd); /* other workers dial in here (peer.c) */
	pthread_mutex_lock(&rt.lock);
	while (!rt.exiting)
		rt_cond_wait(&rt.cv, &rt.lock, NULL, DWT_STATE_IDLE);
	pthread_mutex_unlock(&rt.lock);
	call_drain(1000);
	rtr_worker_exit(rt.master);
	exit(0);
}

/* ---- what a worker's transport calls up to ---- */

static void
worker_on_exit(struct conn *c, const struct wire_hdr *h, unsigned char *p)
{
	(void)h;
	free(p);
	if (rt.role != RT_WORKER || c != rt.master) {
		conn_fail(c, "EXIT from process %d, not the master", c->peer);
		return;
	}
	pthread_mutex_lock(&rt.lock);
	rt.exiting = 1;
	pthread_cond_broadcast(&rt.cv);
	pthread_cond_broadcast(&rt.jobs_cv);
	pthread_mutex_unlock(&rt.lock);
}

/* A link ended: the master's ends the worker, a peer's is peer.c's. */
static void
worker_conn_lost(struct conn *c, const char *why)
{
	if (c != rt.master) {
		peer_conn_lost(c, why);
		return;
	}
	pthread_mutex_lock(&rt.lock);
	if (!rt.exiting)
		rt_log("worker %d: link to the master lost (%s); exiting",
		       rt.myid, why);
	rt.exiting = 1;
	pthread_cond_broadcast(&rt.cv);
	pthread_cond_broadcast(&rt.jobs_cv);
	pthread_mutex_unlock(&rt.lock);
}

void
worker_attach(void)
{
	disp_on_frame(WIRE_EXIT, worker_on_exit);
	if (rt.role == RT_WORKER)
		disp_on_lost(worker_conn_lost);
}
