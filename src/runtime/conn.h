/*
 * A connection to another process: frame reading (I/O thread only) and a
 * write path any thread may use.  A sender writes its own frame straight
 * to the socket when nothing is queued (no hand-off, no wake-up); what
 * the socket does not take is queued and the I/O thread finishes it on
 * EPOLLOUT.
 */
#ifndef DW_RUNTIME_CONN_H
#define DW_RUNTIME_CONN_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "runtime/wire.h"

/* An outgoing frame: a head (header and small prefix, copied) and an
 * optional body, borrowed or owned. */
struct frame {
	struct frame *next;
	struct iovec iov[2];
	int niov;
	size_t left;          /* bytes not yet written */
	void *own;            /* freed when the frame is done */
	unsigned char head[WIRE_HDR + 4 + WIRE_NAME_MAX + 16];
};

/* What an epoll event's data.ptr points at starts with one of these. */
enum io_kind { IO_CONN = 1, IO_EVENT, IO_TIMER, IO_PIPE };

struct conn {
	int io_kind; /* IO_CONN */
	int fd;
	int peer;        /* process id of the other side */
	int epfd;        /* the loop's epoll, for EPOLLOUT */
	pthread_mutex_t wlock;
	struct frame *wq, **wq_tail; /* queued frames (wlock) */
	int out_armed;   /* EPOLLOUT requested (wlock) */
	int closed;      /* no more writes (wlock) */
	uint32_t max_payload;
	/* reading, I/O thread only */
	unsigned char hbuf[WIRE_HDR];
	size_t hgot;
	struct wire_hdr h;
	unsigned char *pay;
	size_t pgot;
};

/* A connection on a connected non-blocking socket fd (owned). */
struct conn *conn_new(int fd, int peer);
/* Closes the socket and frees queued frames; the struct stays valid for
 * senders racing with it (they get DW_ECLOSED) until conn_free. */
void conn_close(struct conn *c);
void conn_free(struct conn *c);

/* Builds a frame: header, a copied prefix, and a body (borrowed unless
 * own is set, in which case body is freed with the frame). */
void frame_init(struct frame *f, uint8_t type, uint64_t ref,
		const void *prefix, size_t plen, const void *body, size_t blen,
		int own);

/*
 * Sends a frame (any thread).  If it cannot all be written now and
 * `borrowed` bodies must not outlive the call, set copy: the unsent part
 * is copied.  f is consumed (freed here or by the queue) when heap is 1;
 * a stack frame (heap 0) is copied if it must be queued.  Returns DW_OK
 * or DW_ECLOSED.
 */
int conn_send(struct conn *c, struct frame *f, int heap);

/* Convenience: sends a header + prefix + body, copying what must wait. */
int conn_send_msg(struct conn *c, uint8_t type, uint64_t ref,
		  const void *prefix, size_t plen, const void *body,
		  size_t blen);

/* I/O thread: writes queued frames on EPOLLOUT.  Returns 0 or -1 on a
 * write error (the connection is dead). */
int conn_flush(struct conn *c);

/* I/O thread: reads what is available.  For each whole frame calls
 * fn(arg, c, hdr, payload) — payload is malloc'd and handed over.
 * Returns 0 while the connection is usable, -1 at EOF or error, with the
 * reason in why (a malformed frame names what was wrong). */
typedef void (*conn_frame_fn)(void *arg, struct conn *c,
			      const struct wire_hdr *h, unsigned char *payload);
int conn_read(struct conn *c, conn_frame_fn fn, void *arg, char *why,
	      size_t whylen);

#endif
