/* Joining a worker: blocking socket I/O on a deadline, the master's side
 * of the handshake, TLS and the settings sent before anything else. */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "runtime/handshake.h"
#include "runtime/idmap.h"
#include "runtime/rt.h"
#include "runtime/tls.h"
#include "runtime/rtrace.h"
#include "runtime/work.h"

int
cl_connect(const char *host, const char *port, uint64_t deadline, char *why,
           size_t len)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	int e = getaddrinfo(host, port, &hints, &ai);
	if (e) {
		snprintf(why, len, "cannot resolve '%.200s': %s", host,
		         gai_strerror(e));
		return -1;
	}
	int fd = socket(ai->ai_family,
	                SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int rc = fd < 0 ? -1 : connect(fd, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	if (rc < 0 && fd >= 0 && errno == EINPROGRESS) {
		e = ETIMEDOUT;
		socklen_t sl = sizeof e;
		if (cl_wait_fd(fd, POLLOUT, deadline) == 0)
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl);
		rc = e ? -1 : 0;
		errno = e;
	}
	if (rc < 0) {
		snprintf(why, len, "cannot connect to %.200s:%s: %s", host,
		         port, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

/* Under TLS (the handshake asked for it) the settings and everything
 * after travel inside it; the master is the TLS server. */
static int
cl_send_config(int fd, struct ssl_st *ssl, int id, uint64_t deadline, char *why,
               size_t len)
{
	/* The worker's settings (tracing) come before anything else. */
	unsigned char cfg[WIRE_HDR + RTR_CONFIG_MAX];
	size_t cl = rtr_config_payload(cfg + WIRE_HDR, id);
	/* the last fields: the link limit, the flow-control bounds */
	wire_put_u32(cfg + WIRE_HDR + cl, conn_max_payload);
	wire_put_u64(cfg + WIRE_HDR + cl + 4, conn_job_limit);
	wire_put_u64(cfg + WIRE_HDR + cl + 12, conn_send_limit);
	cl += 20;
	wire_put_hdr(cfg, WIRE_CONFIG, 0, (uint32_t)cl);
	int r = ssl ? tls_io_full(ssl, fd, cfg, WIRE_HDR + cl, 1, deadline)
	            : cl_io_full(fd, cfg, WIRE_HDR + cl, 1, deadline);
	if (r < 0) {
		snprintf(why, len,
		         "the worker closed the connection before "
		         "its settings");
		return DW_ECLOSED;
	}
	return DW_OK;
}

/* Master side of the handshake (the master proves first), on a blocking
 * deadline. */
int
cl_handshake(int fd, int id, uint64_t deadline, struct hs_result *r, char *why,
             size_t len)
{
	struct hs_side me = {.cookie = rt.cookie,
	                     .role = AUTH_MASTER,
	                     .id = 1,
	                     .give_id = (uint32_t)id,
	                     .flags = rt.opts.tls ? AUTH_FLAG_TLS : 0};
	return hs_prove(fd, &me, deadline, r, why, len);
}

/* TLS when the handshake announced it, then the worker's settings. */
int
cl_secure(int fd, struct hs_result *ack, struct ssl_st **ssl, uint64_t deadline,
          int id, char *why, size_t len)
{
	*ssl = NULL;
	if ((ack->flags & AUTH_FLAG_TLS) &&
	    !(*ssl = tls_start(fd, 1, ack->key, deadline, why, len)))
		return DW_EPROTO;
	OPENSSL_cleanse(ack->key, sizeof ack->key);
	int err = cl_send_config(fd, *ssl, id, deadline, why, len);
	if (err) {
		tls_free(*ssl);
		*ssl = NULL;
	}
	return err;
}
