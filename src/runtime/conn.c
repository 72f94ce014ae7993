/* Connections: frame reading and the direct-or-queued write path. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <dwork/error.h>

#include "runtime/conn.h"

struct conn *
conn_new(int fd, int peer)
{
	struct conn *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->io_kind = IO_CONN;
	c->fd = fd;
	c->peer = peer;
	c->epfd = -1;
	c->wq_tail = &c->wq;
	c->max_payload = WIRE_MAX_PAYLOAD;
	pthread_mutex_init(&c->wlock, NULL);
	return c;
}

static void
frame_free(struct frame *f)
{
	free(f->own);
	free(f);
}

void
conn_close(struct conn *c)
{
	pthread_mutex_lock(&c->wlock);
	if (!c->closed) {
		c->closed = 1;
		if (c->fd >= 0)
			close(c->fd);
		c->fd = -1;
	}
	struct frame *f = c->wq, *n;
	for (; f; f = n) {
		n = f->next;
		frame_free(f);
	}
	c->wq = NULL;
	c->wq_tail = &c->wq;
	pthread_mutex_unlock(&c->wlock);
	free(c->pay);
	c->pay = NULL;
}

void
conn_free(struct conn *c)
{
	if (!c)
		return;
	conn_close(c);
	pthread_mutex_destroy(&c->wlock);
	free(c);
}

void
frame_init(struct frame *f, uint8_t type, uint64_t ref, const void *prefix,
	   size_t plen, const void *body, size_t blen, int own)
{
	f->next = NULL;
	wire_put_hdr(f->head, type, ref, (uint32_t)(plen + blen));
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

/* Writes as much of f as the socket takes; returns 0 (maybe partial) or
 * -1 on a dead socket. */
static int
frame_write(int fd, struct frame *f)
{
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

static void
conn_arm_out(struct conn *c)
{
	if (c->out_armed || c->epfd < 0)
		return;
	struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
	if (epoll_ctl(c->epfd, EPOLL_CTL_MOD, c->fd, &ev) == 0)
		c->out_armed = 1;
}

int
conn_send(struct conn *c, struct frame *f, int heap)
{
	int err = DW_OK;
	pthread_mutex_lock(&c->wlock);
	if (c->closed) {
		err = DW_ECLOSED;
	} else if (!c->wq && frame_write(c->fd, f) < 0) {
		err = DW_ECLOSED;
	} else if (f->left) {
		struct frame *q = heap ? f : frame_detach(f);
		if (!q) {
			err = DW_ENOMEM;
		} else {
			if (!heap)
				f->own = NULL;
			*c->wq_tail = q;
			c->wq_tail = &q->next;
			conn_arm_out(c);
			heap = 0;
		}
	}
	pthread_mutex_unlock(&c->wlock);
	if (heap)
		frame_free(f);
	else if (f->left == 0 || err != DW_OK)
		free(f->own), f->own = NULL;
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

int
conn_flush(struct conn *c)
{
	int rc = 0;
	pthread_mutex_lock(&c->wlock);
	while (c->wq && !c->closed) {
		struct frame *f = c->wq;
		if (frame_write(c->fd, f) < 0) {
			rc = -1;
			break;
		}
		if (f->left)
			break;
		c->wq = f->next;
		if (!c->wq)
			c->wq_tail = &c->wq;
		frame_free(f);
	}
	if (!c->wq && c->out_armed && !c->closed) {
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
		epoll_ctl(c->epfd, EPOLL_CTL_MOD, c->fd, &ev);
		c->out_armed = 0;
	}
	pthread_mutex_unlock(&c->wlock);
	return rc;
}

/* Reads into buf up to want bytes; returns bytes read, 0 at EAGAIN, -1 at
 * EOF or error. */
static ssize_t
conn_recv(int fd, void *buf, size_t want)
{
	ssize_t r = recv(fd, buf, want, MSG_DONTWAIT);
	if (r > 0)
		return r;
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	return -1;
}

static int
conn_read_header(struct conn *c, char *why, size_t whylen)
{
	ssize_t r = conn_recv(c->fd, c->hbuf + c->hgot, WIRE_HDR - c->hgot);
	if (r < 0) {
		snprintf(why, whylen, c->hgot ? "connection closed inside a "
						"frame header"
					      : "connection closed");
		return -1;
	}
	c->hgot += (size_t)r;
	if (c->hgot < WIRE_HDR)
		return 1; /* wait for the rest */
	if (wire_parse_hdr(c->hbuf, c->max_payload, &c->h, why, whylen) < 0)
		return -1;
	c->pgot = 0;
	c->pay = malloc(c->h.payload ? c->h.payload : 1);
	if (!c->pay) {
		snprintf(why, whylen, "out of memory for a %u-byte frame",
			 c->h.payload);
		return -1;
	}
	return 0;
}

int
conn_read(struct conn *c, conn_frame_fn fn, void *arg, char *why,
	  size_t whylen)
{
	for (int budget = 64; budget > 0; budget--) {
		if (c->hgot < WIRE_HDR) {
			int r = conn_read_header(c, why, whylen);
			if (r != 0)
				return r < 0 ? -1 : 0;
		}
		if (c->pgot < c->h.payload) {
			ssize_t r = conn_recv(c->fd, c->pay + c->pgot,
					      c->h.payload - c->pgot);
			if (r < 0) {
				snprintf(why, whylen,
					 "connection closed inside a frame");
				return -1;
			}
			c->pgot += (size_t)r;
			if (c->pgot < c->h.payload)
				return 0;
		}
		unsigned char *p = c->pay;
		struct wire_hdr h = c->h;
		c->pay = NULL;
		c->hgot = 0;
		fn(arg, c, &h, p);
		if (c->closed)
			return -1;
	}
	return 0;
}
