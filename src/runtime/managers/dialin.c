/*
 * Workers that dial in: the master listens; a worker started by anything
 * (a script, a scheduler, another machine) with the address and the
 * cookie connects; the master proves the cookie first, as on every link
 * (docs/wire-protocol.md, "Workers that dial in").
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/safefile.h"
#include "runtime/handshake.h"
#include "runtime/managers/mgr.h"
#include "runtime/rt.h"

/* A worker sends its challenge as soon as it connects: a connection that
 * has sent none within DIAL_IDLE_MS of its accept is dropped; once the
 * challenge is there the rest of the handshake has DIAL_PROOF_MS. */
#define DIAL_IDLE_MS     3000
#define DIAL_IDLE_TXT    "3000 ms"
#define DIAL_PROOF_MS    2000
#define DIAL_PENDING_MAX 1024

static struct {
	pthread_mutex_t lock;
	int fd;
	char addr[300];
} dial = {PTHREAD_MUTEX_INITIALIZER, -1, ""};

/* A connection accepted but not yet handshaken.  Every one has its own
 * deadline and none waits for another: the launch polls them all and
 * runs a handshake only once a whole CHALLENGE frame is there, so idle
 * or slow connections cost a real worker nothing (dial.lock). */
struct dial_pend {
	int fd;
	uint64_t deadline;
	char peer[128];
};
static struct dial_pend dial_pend[DIAL_PENDING_MAX];
static int dial_npend;
static void dial_drop(int i, const char *why);

static void
dial_name(const struct sockaddr *sa, socklen_t sl, char *buf, size_t len)
{
	char host[NI_MAXHOST] = "?", port[NI_MAXSERV] = "?";
	getnameinfo(sa, sl, host, sizeof host, port, sizeof port,
	            NI_NUMERICHOST | NI_NUMERICSERV);
	snprintf(buf, len, strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, port);
}

/* Splits "host:port" / "[v6]:port"; 0 or -1. */
static int
dial_split(const char *addr, char *host, size_t hlen, char *port, size_t plen)
{
	const char *colon = strrchr(addr, ':');
	if (!colon || !colon[1] || strlen(colon + 1) >= plen)
		return -1;
	size_t hl = (size_t)(colon - addr);
	if (hl >= 2 && addr[0] == '[' && addr[hl - 1] == ']')
		addr++, hl -= 2;
	else if (memchr(addr, ':', hl))
		return -1; /* v6 without brackets */
	if (hl == 0 || hl >= hlen)
		return -1;
	memcpy(host, addr, hl);
	host[hl] = 0;
	snprintf(port, plen, "%s", colon + 1);
	return 0;
}

static int
dial_open(const char *addr, char *why, size_t len)
{
	char host[256], port[16];
	if (dial_split(addr, host, sizeof host, port, sizeof port) < 0) {
		snprintf(why, len, "'%s' is not host:port", addr);
		return DW_EINVAL;
	}
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
	                         .ai_flags = AI_PASSIVE},
	                *ai = NULL;
	int e = getaddrinfo(host, port, &hints, &ai);
	if (e) {
		snprintf(why, len, "cannot resolve '%s': %s", addr,
		         gai_strerror(e));
		return DW_EINVAL;
	}
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
	    listen(fd, 128) < 0) {
		e = errno;
		snprintf(why, len, "cannot listen on %s: %s", addr,
		         strerror(e));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return dw_err_from_errno(e);
	}
	freeaddrinfo(ai);
	return fd;
}

DW_API int
dw_listen(const char *addr, char *bound, size_t len)
{
	char why[400];
	if (rt.role != RT_MASTER)
		return rt_set_err(0, "only the master listens for workers"),
		       DW_ESTATE;
	pthread_mutex_lock(&dial.lock);
	int busy = dial.fd >= 0;
	pthread_mutex_unlock(&dial.lock);
	if (busy)
		return rt_set_err(0, "already listening on %s", dial.addr),
		       DW_ESTATE;
	int fd = dial_open(addr ? addr : "127.0.0.1:0", why, sizeof why);
	if (fd < 0)
		return rt_set_err(0, "%s", why), fd;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	pthread_mutex_lock(&dial.lock);
	dial.fd = fd;
	dial_name((struct sockaddr *)&ss, sl, dial.addr, sizeof dial.addr);
	if (bound && len)
		snprintf(bound, len, "%s", dial.addr);
	pthread_mutex_unlock(&dial.lock);
	return DW_OK;
}

DW_API int
dw_listen_close(void)
{
	pthread_mutex_lock(&dial.lock);
	if (dial.fd >= 0)
		close(dial.fd);
	dial.fd = -1;
	while (dial_npend > 0)
		dial_drop(0, "the master stopped listening");
	dial.addr[0] = 0;
	pthread_mutex_unlock(&dial.lock);
	return DW_OK;
}

DW_API int
dw_write_cookie_file(const char *path)
{
	if (rt.role != RT_MASTER)
		return rt_set_err(0, "only the master has the cookie to give"),
		       DW_ESTATE;
	struct stat st;
	if (lstat(path, &st) == 0 &&
	    (!S_ISREG(st.st_mode) || st.st_uid != geteuid()))
		return rt_set_err(0,
		                  "cannot write the cookie file '%s': it "
		                  "exists and is %s: refused",
		                  path,
		                  S_ISREG(st.st_mode) ? "owned by another user"
		                                      : "not a regular file"),
		       DW_EACCES;
	/* a new file (mode 0600 from its creation), renamed into place:
	 * no one else's file or link is ever written through */
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
		return rt_set_err(0, "the cookie file path is too long"),
		       DW_EINVAL;
	int fd = sf_create(tmp, 0600);
	int e = fd < 0 ? errno : 0;
	char line[WIRE_COOKIE_MAX + 2];
	int n = snprintf(line, sizeof line, "%s\n", rt.cookie);
	if (!e && (fchmod(fd, 0600) < 0 || write(fd, line, (size_t)n) != n))
		e = errno ? errno : EIO;
	if (fd >= 0 && close(fd) < 0 && !e)
		e = errno;
	if (!e && rename(tmp, path) < 0)
		e = errno;
	if (e) {
		if (fd >= 0)
			unlink(tmp);
		rt_set_err(0, "cannot write the cookie file '%s': %s", path,
		           strerror(e));
		return dw_err_from_errno(e);
	}
	return DW_OK;
}

/* ---- the master's side of a dial-in ---- */

int
dial_check_proof(int fd, int id, uint64_t deadline, struct hs_result *r,
                 char *why, size_t whylen)
{
	struct hs_side me = {.cookie = rt.cookie,
	                     .role = AUTH_MASTER,
	                     .id = 1,
	                     .give_id = (uint32_t)id,
	                     .flags = rt.opts.tls ? AUTH_FLAG_TLS : 0};
	return hs_prove(fd, &me, deadline, r, why, whylen) ? -1 : 0;
}

struct dial_launch {
	int timeout_ms;
	int rejected;
	char last[400];
};

static void
dial_drop(int i, const char *why)
{
	rt_log("dropped a connection dialling in from %s: %s",
	       dial_pend[i].peer, why);
	close(dial_pend[i].fd);
	dial_pend[i] = dial_pend[--dial_npend];
}

/* Takes one connection off the listener into the pending set. */
static void
dial_accept_one(int lfd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	int fd = loop_accept(lfd, (struct sockaddr *)&ss, &sl);
	if (fd == -1 && (errno == EMFILE || errno == ENFILE))
		usleep(100000); /* nothing to refuse with: back off */
	if (fd < 0)
		return;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	char peer[128];
	dial_name((struct sockaddr *)&ss, sl, peer, sizeof peer);
	if (dial_npend == DIAL_PENDING_MAX) {
		rt_log("refused a connection dialling in from %s: %d "
		       "connections already wait for their handshake",
		       peer, DIAL_PENDING_MAX);
		close(fd);
		return;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	struct dial_pend *p = &dial_pend[dial_npend++];
	p->fd = fd;
	p->deadline = rt_now_ms() + DIAL_IDLE_MS;
	snprintf(p->peer, sizeof p->peer, "%s", peer);
}

/* 1 when a whole first frame is buffered on fd, 0 not yet, -1 closed or
 * not a dwork frame. */
static int
dial_frame_ready(int fd)
{
	unsigned char b[WIRE_HDR + WIRE_HELLO_MAX];
	ssize_t n = recv(fd, b, sizeof b, MSG_PEEK | MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		return -1;
	if (n < (ssize_t)WIRE_HDR)
		return 0;
	uint32_t len = wire_get_u32(b);
	if (len < 12 || len - 12u > WIRE_HELLO_MAX)
		return 1; /* the handshake names what is wrong */
	return (size_t)n >= WIRE_HDR + (len - 12u);
}

/* Waits until some pending connection has its first frame (its index),
 * accepting new ones meanwhile; drops the ones past their deadline.
 * -1 at the launch's deadline. */
static int
dial_next(int lfd, uint64_t deadline)
{
	struct pollfd pf[DIAL_PENDING_MAX + 1];
	for (;;) {
		uint64_t now = rt_now_ms(), wake = deadline;
		if (now >= deadline)
			return -1;
		int np = 0, partial = 0;
		pf[np++] = (struct pollfd){.fd = lfd, .events = POLLIN};
		for (int i = 0; i < dial_npend;) {
			int r = dial_frame_ready(dial_pend[i].fd);
			if (r > 0)
				return i;
			if (r < 0) {
				dial_drop(i, "it closed before its handshake");
				continue;
			}
			if (now >= dial_pend[i].deadline) {
				dial_drop(i,
				          "no handshake message within "
				          "its deadline (" DIAL_IDLE_TXT ")");
				continue;
			}
			if (dial_pend[i].deadline < wake)
				wake = dial_pend[i].deadline;
			/* a frame begun but not whole: look again soon
			 * rather than poll a socket that stays readable */
			char b;
			if (recv(dial_pend[i].fd, &b, 1,
			         MSG_PEEK | MSG_DONTWAIT) == 1)
				partial = 1;
			else
				pf[np++] = (struct pollfd){
				    .fd = dial_pend[i].fd, .events = POLLIN};
			i++;
		}
		int ms = (int)(wake - now);
		if (partial && ms > 10)
			ms = 10;
		int r = poll(pf, (nfds_t)np, ms);
		if (r < 0 && errno != EINTR)
			return -1;
		if (r > 0 && (pf[0].revents & POLLIN))
			dial_accept_one(lfd);
	}
}

/* Hands pending connection i over as a blocking socket. */
static int
dial_take(int i, char *peer, size_t plen)
{
	int fd = dial_pend[i].fd;
	snprintf(peer, plen, "%s", dial_pend[i].peer);
	dial_pend[i] = dial_pend[--dial_npend];
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

static int
dial_launch(void *self, int n, dw_launch *l)
{
	struct dial_launch *D = self;
	uint64_t deadline = rt_now_ms() + (uint64_t)D->timeout_ms;
	int joined = 0;
	pthread_mutex_lock(&dial.lock);
	for (int i = 0; i < n && dial.fd >= 0;) {
		char peer[128], why[300];
		struct hs_result hr;
		int k = dial_next(dial.fd, deadline);
		if (k < 0)
			break;
		int fd = dial_take(k, peer, sizeof peer);
		/* its challenge is here: what is left is one round trip */
		uint64_t pd = rt_now_ms() + DIAL_PROOF_MS;
		if (dial_check_proof(fd, dw_launch_id(l, i),
		                     pd < deadline ? pd : deadline, &hr, why,
		                     sizeof why) < 0) {
			rt_log("rejected a worker dialling in from %s: %s",
			       peer, why);
			snprintf(D->last, sizeof D->last, "%.200s from %.128s",
			         why, peer);
			D->rejected++;
			close(fd);
			continue;
		}
		dw_worker_config wc = {.id = dw_launch_id(l, i),
		                       .fd = fd,
		                       .out_fd = -1,
		                       .err_fd = -1};
		snprintf(wc.host, sizeof wc.host, "%s", peer);
		pthread_mutex_unlock(&dial.lock);
		int ok = cl_launched(l, &wc, &hr) == DW_OK;
		pthread_mutex_lock(&dial.lock);
		if (ok)
			i++, joined++;
	}
	pthread_mutex_unlock(&dial.lock);
	if (joined < n) {
		char extra[500] = "";
		if (D->rejected)
			snprintf(extra, sizeof extra,
			         "; %d connection(s) rejected, the last: %s",
			         D->rejected, D->last);
		cl_launch_error(l, DW_ETIMEDOUT,
		                "%d of %d workers dialled in within %d ms%s",
		                joined, n, D->timeout_ms, extra);
		return DW_ETIMEDOUT;
	}
	return DW_OK;
}

DW_API int
dw_accept_workers(int n, int timeout_ms, int *ids)
{
	if (dial.fd < 0)
		return rt_set_err(0, "not listening: call dw_listen first"),
		       DW_ESTATE;
	struct dial_launch D = {.timeout_ms =
	                            timeout_ms > 0 ? timeout_ms : 60000};
	dw_manager m = {.name = "dial-in", .launch = dial_launch, .self = &D};
	return dw_addprocs_with(&m, n, ids);
}
