/* Connections: frame reading and the direct-or-queued write path. */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <dwork/error.h>

#include "runtime/conn.h"
#include "runtime/rt.h"
#include "runtime/live.h"
#include "runtime/tls.h"

void (*conn_frame_hook)(int sent, unsigned type, size_t bytes);
unsigned char conn_frame_tell[256];
uint32_t conn_max_payload = WIRE_MAX_PAYLOAD;
uint64_t conn_send_limit = FLOW_DEFAULT, conn_job_limit = FLOW_DEFAULT;

struct conn *
conn_new(int fd, int peer)
{
	struct conn *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->io_kind = IO_CONN;
	c->fd = fd;
	c->peer = peer;
	c->refs = 1;
	c->epfd = -1;
	c->wq_tail = &c->wq;
	c->max_payload = conn_max_payload;
	c->f_win = FLOW_LINK_MIN;
	flow_rx_open(c);
	pthread_mutex_init(&c->wlock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->fcv, &ca);
	pthread_condattr_destroy(&ca);
	struct timeval tv = {CONN_RECV_TIMEOUT_MS / 1000,
	                     (CONN_RECV_TIMEOUT_MS % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	return c;
}

struct conn *
conn_new_tls(int fd, int peer, struct ssl_st *ssl)
{
	struct conn *c = conn_new(fd, peer);
	if (c && ssl) {
		c->ssl = ssl;
		tls_read_ahead(ssl);
	}
	return c;
}

/* A queued frame is done (wlock): senders waiting for room are told. */
static void
frame_free(struct conn *c, struct frame *f)
{
	c->wq_bytes -= f->qbytes;
	if (c->f_waiters)
		pthread_cond_broadcast(&c->fcv);
	free(f->own);
	free(f);
}

/* The read side's memory, at once when the link ends (wlock held, nobody
 * reading): a half-read large frame can be hundreds of megabytes. */
static void
conn_free_rbufs(struct conn *c)
{
	free(c->pay);
	free(c->rbuf);
	c->pay = c->rbuf = NULL;
	c->in_big = 0;
	c->rpos = c->rlen = c->pgot = 0;
}

void
conn_close(struct conn *c)
{
	flow_rx_close(c);
	pthread_mutex_lock(&c->wlock);
	if (!c->closed) {
		c->closed = 1;
		if (c->fd >= 0 && c->epfd >= 0)
			epoll_ctl(c->epfd, EPOLL_CTL_DEL, c->fd, NULL);
		if (c->reader) { /* a reader polls it: wake it, close later */
			shutdown(c->fd, SHUT_RDWR);
			c->shut = 1;
		} else if (c->fd >= 0) {
			close(c->fd);
			c->fd = -1;
		}
	}
	if (!c->reader)
		conn_free_rbufs(c);
	struct frame *f = c->wq, *n;
	for (; f; f = n) {
		n = f->next;
		frame_free(c, f);
	}
	c->wq = NULL;
	c->wq_tail = &c->wq;
	pthread_cond_broadcast(&c->fcv); /* blocked senders see it closed */
	pthread_mutex_unlock(&c->wlock);
}

static void
conn_destroy(void *p)
{
	struct conn *c = p;
	conn_close(c);
	conn_free_rbufs(c);
	if (c->ssl)
		tls_free(c->ssl);
	pthread_mutex_destroy(&c->wlock);
	pthread_cond_destroy(&c->fcv);
	free(c);
}

void
conn_ref(struct conn *c)
{
	if (c)
		__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
}

void
conn_unref(struct conn *c)
{
	if (c && __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0)
		loop_later(conn_destroy, c);
}

void
conn_free(struct conn *c)
{
	if (!c)
		return;
	conn_close(c);
	conn_unref(c);
}

void
frame_init(struct frame *f, uint8_t type, uint64_t ref, const void *prefix,
           size_t plen, const void *body, size_t blen, int own)
{
	assert(plen <= sizeof f->head - WIRE_HDR); /* a prefix is small */
	f->next = NULL;
	/* a length the header cannot hold is written as 0; conn_send
	 * refuses the frame by f->left before anything leaves */
	uint64_t pl = (uint64_t)plen + blen;
	wire_put_hdr(f->head, type, ref,
	             pl <= WIRE_PAYLOAD_CEIL ? (uint32_t)pl : 0);
	if (plen)
		memcpy(f->head + WIRE_HDR, prefix, plen);
	f->iov[0].iov_base = f->head;
	f->iov[0].iov_len = WIRE_HDR + plen;
	f->niov = 1;
	if (blen) {
		f->iov[1].iov_base = (void *)body;
		f->iov[1].iov_len = blen;
		f->niov = 2;
	}
	f->left = WIRE_HDR + plen + blen;
	f->own = own ? (void *)body : NULL;
}

/* Advances f's vectors past w written bytes. */
static void
frame_advance(struct frame *f, size_t w)
{
	f->left -= w;
	for (int i = 0; i < f->niov && w > 0; i++) {
		size_t k = w < f->iov[i].iov_len ? w : f->iov[i].iov_len;
		f->iov[i].iov_base = (char *)f->iov[i].iov_base + k;
		f->iov[i].iov_len -= k;
		w -= k;
	}
}

/* Under TLS (wlock held): the head is sent in one record with as much of
 * the body as fits (a small frame is one record, one send, one read on
 * the other side), the rest of the body straight from its buffer.  A
 * short write leaves f as it was: the retry builds the same bytes, as
 * OpenSSL requires (SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER lets them move). */
static int
frame_write_tls(struct conn *c, struct frame *f, int more)
{
	while (f->left) {
		const void *p;
		size_t n;
		unsigned char one[TLS_RECORD];
		if (f->iov[0].iov_len && f->niov == 2 && f->iov[1].iov_len) {
			size_t h = f->iov[0].iov_len, b = f->iov[1].iov_len;
			if (b > sizeof one - h)
				b = sizeof one - h;
			memcpy(one, f->iov[0].iov_base, h);
			memcpy(one + h, f->iov[1].iov_base, b);
			p = one;
			n = h + b;
		} else {
			int i = f->iov[0].iov_len ? 0 : 1;
			p = f->iov[i].iov_base;
			n = f->iov[i].iov_len;
		}
		ssize_t w = tls_write(c->ssl, p, n, more || n < f->left);
		if (w <= 0)
			return (int)w;
		frame_advance(f, (size_t)w);
	}
	return 0;
}

/* Writes as much of f as the socket takes; returns 0 (maybe partial) or
 * -1 on a dead socket. */
static int
frame_write(struct conn *c, struct frame *f)
{
	int fd = c->fd;
	if (c->ssl)
		return frame_write_tls(c, f, 0);
	while (f->left) {
		struct iovec *v = f->iov;
		int n = f->niov;
		while (n && v->iov_len == 0)
			v++, n--;
		struct msghdr m = {.msg_iov = v, .msg_iovlen = (size_t)n};
		ssize_t w = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		f->left -= (size_t)w;
		for (int i = 0; i < f->niov && w > 0; i++) {
			size_t k = (size_t)w < f->iov[i].iov_len
			               ? (size_t)w
			               : f->iov[i].iov_len;
			f->iov[i].iov_base = (char *)f->iov[i].iov_base + k;
			f->iov[i].iov_len -= k;
			w -= (ssize_t)k;
		}
	}
	return 0;
}

/* A heap copy of what is left of f; the body is taken over when f owns
 * it, copied when borrowed. */
static struct frame *
frame_detach(struct frame *f)
{
	struct frame *q = malloc(sizeof *q);
	if (!q)
		return NULL;
	size_t hl = f->iov[0].iov_len;
	memcpy(q->head, f->iov[0].iov_base, hl);
	q->iov[0].iov_base = q->head;
	q->iov[0].iov_len = hl;
	q->niov = 1;
	q->own = NULL;
	q->next = NULL;
	q->left = f->left;
	if (f->niov == 2 && f->iov[1].iov_len) {
		void *body = f->iov[1].iov_base;
		if (!f->own) {
			if (!(body = malloc(f->iov[1].iov_len))) {
				free(q);
				return NULL;
			}
			memcpy(body, f->iov[1].iov_base, f->iov[1].iov_len);
			q->own = body;
		} else {
			q->own = f->own;
			f->own = NULL;
		}
		q->iov[1].iov_base = body;
		q->iov[1].iov_len = f->iov[1].iov_len;
		q->niov = 2;
	}
	return q;
}

/* Requests the events the I/O thread must handle now (wlock held): input
 * unless another thread reads, output while frames are queued. */
static void
conn_rearm(struct conn *c)
{
	if (c->epfd < 0 || c->fd < 0 || c->closed)
		return;
	uint32_t want = (c->reader ? 0 : EPOLLIN) | (c->wq ? EPOLLOUT : 0);
	if (want == c->armed)
		return;
	/* events = EPOLLONESHOT alone keeps the socket registered, silent */
	struct epoll_event ev = {.events = want | EPOLLONESHOT, .data.ptr = c};
	if (epoll_ctl(c->epfd, EPOLL_CTL_MOD, c->fd, &ev) == 0)
		c->armed = want;
}

int
conn_event(struct conn *c, uint32_t events)
{
	pthread_mutex_lock(&c->wlock);
	c->armed = 0;
	int can = (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !c->reader &&
	          !c->closed;
	if (can)
		c->reader = 1;
	conn_rearm(c);
	pthread_mutex_unlock(&c->wlock);
	return can;
}

int
conn_take_reader(struct conn *c)
{
	pthread_mutex_lock(&c->wlock);
	int ok = !c->reader && !c->closed;
	if (ok) {
		c->reader = 1;
		conn_rearm(c); /* the I/O thread must not wake for input */
	}
	pthread_mutex_unlock(&c->wlock);
	return ok;
}

void
conn_drop_reader(struct conn *c)
{
	pthread_mutex_lock(&c->wlock);
	c->reader = 0;
	if (c->shut && c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
	if (c->closed)
		conn_free_rbufs(c);
	conn_rearm(c);
	pthread_mutex_unlock(&c->wlock);
}

void
conn_drop_reader_soon(struct conn *c)
{
	pthread_mutex_lock(&c->wlock);
	if (c->shut || c->closed || c->wq || c->armed || c->epfd < 0 ||
	    !rearm_defer(c)) {
		pthread_mutex_unlock(&c->wlock);
		conn_drop_reader(c);
		return;
	}
	c->reader = 0; /* the interest stays off: rearm_tick turns it on */
	pthread_mutex_unlock(&c->wlock);
}

int
conn_rearm_now(struct conn *c, int wait)
{
	/* the I/O thread need not wait for a writer: on one CPU that is a
	 * futex sleep until the writer runs again */
	if (!wait && pthread_mutex_trylock(&c->wlock) != 0)
		return 0;
	if (wait)
		pthread_mutex_lock(&c->wlock);
	conn_rearm(c);
	pthread_mutex_unlock(&c->wlock);
	return 1;
}

static int conn_pending(struct conn *c);

int
conn_wait_readable(struct conn *c, int ms)
{
	struct pollfd p = {.fd = c->fd, .events = POLLIN};
	if (c->rlen - c->rpos >= WIRE_HDR)
		return 1; /* frames already buffered */
	if (conn_pending(c))
		return 1; /* bytes inside the SSL object: poll would not see
		             them */
	int r = poll(&p, 1, ms);
	if (r < 0)
		return errno == EINTR ? 0 : -1;
	return r;
}

/* Writes queued frames, many per sendmsg (wlock held).  Returns -1 when
 * the socket is dead. */
static int
conn_write_queue_tls(struct conn *c)
{
	while (c->wq && !c->closed) {
		struct frame *f = c->wq;
		if (frame_write_tls(c, f, f->next != NULL) < 0)
			return -1;
		if (f->left)
			break;
		c->wq = f->next;
		if (!c->wq)
			c->wq_tail = &c->wq;
		frame_free(c, f);
	}
	conn_rearm(c);
	return 0;
}

static int
conn_write_queue(struct conn *c)
{
	if (c->ssl)
		return conn_write_queue_tls(c);
	while (c->wq && !c->closed) {
		struct iovec v[128];
		int n = 0;
		for (struct frame *f = c->wq; f && n < 127; f = f->next)
			for (int i = 0; i < f->niov; i++)
				if (f->iov[i].iov_len)
					v[n++] = f->iov[i];
		struct msghdr m = {.msg_iov = v, .msg_iovlen = (size_t)n};
		ssize_t w = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (w < 0)
			return -1;
		while (w > 0 || (c->wq && c->wq->left == 0)) {
			struct frame *f = c->wq;
			for (int i = 0; i < f->niov && w > 0; i++) {
				size_t k = (size_t)w < f->iov[i].iov_len
				               ? (size_t)w
				               : f->iov[i].iov_len;
				f->iov[i].iov_base =
				    (char *)f->iov[i].iov_base + k;
				f->iov[i].iov_len -= k;
				f->left -= k;
				w -= (ssize_t)k;
			}
			if (f->left)
				break;
			c->wq = f->next;
			if (!c->wq)
				c->wq_tail = &c->wq;
			frame_free(c, f);
		}
	}
	conn_rearm(c);
	return 0;
}

static int
conn_enqueue(struct conn *c, struct frame *f)
{
	struct frame *q = frame_detach(f);
	if (!q)
		return DW_ENOMEM;
	*c->wq_tail = q;
	c->wq_tail = &q->next;
	q->qbytes = q->left;
	c->wq_bytes += q->qbytes;
	return DW_OK;
}

int
conn_send(struct conn *c, struct frame *f, int flags)
{
	int err = DW_OK;
	if ((uint64_t)f->left - WIRE_HDR > c->max_payload) {
		free(f->own); /* never written: nothing can wrap or be cut */
		f->own = NULL;
		return DW_ETOOBIG;
	}
	conn_tell_frame(1, f->head[4], f->left - WIRE_HDR);
	acct_frame(1, f->left - WIRE_HDR);
	pthread_mutex_lock(&c->wlock);
	int batch = c->hold || (flags & CONN_MORE);
	if (c->closed) {
		err = DW_ECLOSED;
	} else if (!c->wq && !batch) {
		if (frame_write(c, f) < 0)
			err = DW_ECLOSED;
		else if (f->left && (err = conn_enqueue(c, f)) == DW_OK)
			conn_rearm(c);
	} else if ((err = conn_enqueue(c, f)) == DW_OK && !batch &&
	           conn_write_queue(c) < 0) {
		err = DW_ECLOSED;
	}
	pthread_mutex_unlock(&c->wlock);
	free(f->own);
	f->own = NULL;
	return err;
}

int
conn_send_msg(struct conn *c, uint8_t type, uint64_t ref, const void *prefix,
              size_t plen, const void *body, size_t blen)
{
	struct frame f;
	frame_init(&f, type, ref, prefix, plen, body, blen, 0);
	return conn_send(c, &f, 0);
}

void
conn_fail(struct conn *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->bad_why, sizeof c->bad_why, fmt, ap);
	va_end(ap);
	c->bad = 1;
}

void
conn_hold(struct conn *c)
{
	pthread_mutex_lock(&c->wlock);
	c->hold++;
	pthread_mutex_unlock(&c->wlock);
}

void
conn_release(struct conn *c)
{
	pthread_mutex_lock(&c->wlock);
	if (--c->hold == 0 && c->wq && !c->closed)
		conn_write_queue(c);
	pthread_mutex_unlock(&c->wlock);
}

void
conn_kick(struct conn *c)
{
	pthread_mutex_lock(&c->wlock);
	if (!c->hold && c->wq && !c->closed)
		conn_write_queue(c);
	pthread_mutex_unlock(&c->wlock);
}

int
conn_flush(struct conn *c)
{
	pthread_mutex_lock(&c->wlock);
	int rc = c->closed ? 0 : conn_write_queue(c);
	pthread_mutex_unlock(&c->wlock);
	return rc;
}

/* Under TLS the read takes wlock: an SSL object is single-threaded. */
static ssize_t
conn_recv_tls(struct conn *c, void *buf, size_t want)
{
	pthread_mutex_lock(&c->wlock);
	ssize_t r = c->closed ? -1 : tls_read(c->ssl, buf, want);
	pthread_mutex_unlock(&c->wlock);
	return r;
}

static void
conn_heard(struct conn *c)
{
	__atomic_store_n(&c->rx_ms, rt_now_ms(), __ATOMIC_RELAXED);
}

/* Bytes already decrypted inside the SSL object (none without TLS). */
static int
conn_pending(struct conn *c)
{
	if (!c->ssl)
		return 0;
	pthread_mutex_lock(&c->wlock);
	int p = !c->closed && tls_pending(c->ssl);
	pthread_mutex_unlock(&c->wlock);
	return p;
}

/* Reads into buf up to want bytes; returns bytes read, 0 at EAGAIN, -1 at
 * EOF or error. */
static ssize_t
conn_recv(struct conn *c, void *buf, size_t want)
{
	ssize_t r = c->ssl ? conn_recv_tls(c, buf, want)
	                   : recv(c->fd, buf, want, MSG_DONTWAIT);
	if (r > 0)
		conn_heard(c);
	if (r > 0 || c->ssl)
		return r;
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	return -1;
}

/* Hands every complete frame of the read buffer to fn; starts reading a
 * large frame straight into its own buffer.  Returns -1 on a malformed
 * frame or a closed connection. */
static int
conn_parse(struct conn *c, conn_frame_fn fn, void *arg, char *why,
           size_t whylen)
{
	while (!c->in_big && c->rlen - c->rpos >= WIRE_HDR) {
		struct wire_hdr h;
		if (wire_parse_hdr(c->rbuf + c->rpos, c->max_payload, &h, why,
		                   whylen) < 0)
			return -1;
		size_t avail = c->rlen - c->rpos - WIRE_HDR;
		if (avail < h.payload && h.payload <= CONN_RBUF - WIRE_HDR)
			break; /* the rest fits the buffer: read more */
		unsigned char *p = malloc(h.payload ? h.payload : 1);
		if (!p) {
			snprintf(why, whylen,
			         "out of memory for a %u-byte "
			         "frame",
			         h.payload);
			return -1;
		}
		size_t take = avail < h.payload ? avail : h.payload;
		memcpy(p, c->rbuf + c->rpos + WIRE_HDR, take);
		c->rpos += WIRE_HDR + take;
		if (take < h.payload) {
			c->in_big = 1;
			c->h = h;
			c->pay = p;
			c->pgot = take;
			break;
		}
		conn_tell_frame(0, h.type, h.payload);
		acct_frame(0, h.payload);
		fn(arg, c, &h, p);
		if (c->bad) {
			snprintf(why, whylen, "%s", c->bad_why);
			return -1;
		}
		if (c->closed)
			return -1;
	}
	if (c->rpos == c->rlen)
		c->rpos = c->rlen = 0;
	return 0;
}

/* Reads the rest of a large frame into place; 1 when it is complete. */
static int
conn_read_big(struct conn *c, conn_frame_fn fn, void *arg, char *why,
              size_t whylen)
{
	ssize_t r;
	do { /* TLS gives at most a record (16 KiB) per read */
		r = conn_recv(c, c->pay + c->pgot, c->h.payload - c->pgot);
		if (r < 0) {
			snprintf(why, whylen,
			         "connection closed inside a frame");
			return -1;
		}
		c->pgot += (size_t)r;
	} while (c->ssl && r > 0 && c->pgot < c->h.payload);
	if (c->pgot < c->h.payload)
		return r == 0 ? 0 : 2;
	unsigned char *p = c->pay;
	c->pay = NULL;
	c->in_big = 0;
	conn_tell_frame(0, c->h.type, c->h.payload);
	acct_frame(0, c->h.payload);
	fn(arg, c, &c->h, p);
	if (c->bad)
		snprintf(why, whylen, "%s", c->bad_why);
	return c->closed || c->bad ? -1 : 1;
}

int
conn_read(struct conn *c, conn_frame_fn fn, void *arg, char *why, size_t whylen)
{
	if (!c->rbuf && !(c->rbuf = malloc(CONN_RBUF))) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	/* Bytes inside the SSL object wake no epoll: read them all. */
	for (int budget = 16; budget > 0 || conn_pending(c); budget--) {
		if (conn_parse(c, fn, arg, why, whylen) < 0)
			return -1;
		if (c->in_big) {
			int r = conn_read_big(c, fn, arg, why, whylen);
			if (r <= 0)
				return r;
			continue;
		}
		if (c->rpos) {
			memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
			c->rlen -= c->rpos;
			c->rpos = 0;
		}
		ssize_t r =
		    conn_recv(c, c->rbuf + c->rlen, CONN_RBUF - c->rlen);
		if (r < 0) {
			snprintf(why, whylen,
			         c->rlen ? "connection closed "
			                   "inside a frame"
			                 : "connection closed");
			return -1;
		}
		if (r == 0)
			return 0;
		c->rlen += (size_t)r;
		/* the socket had no more: done (a TLS read stops at the end
		 * of a record, so it reads on to EAGAIN) */
		if (c->rlen < CONN_RBUF && !c->ssl)
			return conn_parse(c, fn, arg, why, whylen);
	}
	return conn_parse(c, fn, arg, why, whylen);
}

int
conn_recv_blocking(struct conn *c)
{
	if (c->ssl)
		return -1; /* would read ciphertext: call_read_turn never does
		            */
	if (!c->rbuf && !(c->rbuf = malloc(CONN_RBUF)))
		return -1;
	if (c->rpos) {
		memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
		c->rlen -= c->rpos;
		c->rpos = 0;
	}
	ssize_t r = recv(c->fd, c->rbuf + c->rlen, CONN_RBUF - c->rlen, 0);
	if (r > 0) {
		conn_heard(c);
		c->rlen += (size_t)r;
		return 1;
	}
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	return -1;
}

int
conn_parse_buffered(struct conn *c, conn_frame_fn fn, void *arg, char *why,
                    size_t whylen)
{
	return conn_parse(c, fn, arg, why, whylen);
}
