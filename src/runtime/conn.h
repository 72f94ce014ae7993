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
#include <time.h>

#include "runtime/wire.h"

/* An outgoing frame: a head (header and small prefix, copied) and an
 * optional body, borrowed or owned. */
struct frame {
	struct frame *next;
	struct iovec iov[2];
	int niov;
	size_t left;   /* bytes not yet written */
	size_t qbytes; /* counted in its link's wq_bytes while queued */
	void *own;     /* freed when the frame is done */
	unsigned char head[WIRE_HDR + 4 + WIRE_NAME_MAX + 16];
};

/* What an epoll event's data.ptr points at starts with one of these. */
enum io_kind { IO_CONN = 1, IO_EVENT, IO_TIMER, IO_PIPE, IO_SOURCE };

/* Any other descriptor the loop watches (a listen socket): ready runs on
 * the I/O thread when it is readable. */
struct loop_src {
	int io_kind; /* IO_SOURCE */
	int fd;
	void (*ready)(void);
};

/* A link's share of its process's pool (flowpool.c, under the pool's
 * lock): the window its peer may fill, the bytes run and not yet
 * credited back, the CALL bytes queued or running, what it holds of
 * the pool, an ASK not yet granted, its place among the links waiting. */
struct flow_rx {
	uint64_t win, gone, held, commit, want;
	int open, queued;
	struct conn *next;
};

struct conn {
	int io_kind; /* IO_CONN */
	int fd;
	int peer; /* process id of the other side */
	int refs; /* conn_ref / conn_unref (atomic) */
	int epfd; /* the loop's epoll, for EPOLLOUT */
	/* wlock guards the fields marked (wlock) and every SSL call.  A
	 * leaf: rt.lock, ch_lock or pr_lock may be held when it is taken,
	 * no runtime lock is taken under it */
	pthread_mutex_t wlock;
	struct frame *wq, **wq_tail; /* queued frames (wlock) */
	uint32_t armed; /* epoll events requested, one-shot (wlock) */
	int reader;     /* a thread holds the right to read (wlock) */
	int shut;       /* closed while someone reads: close at release */
	int bad;        /* a frame handler found the peer misbehaving */
	char bad_why[160];
	int closed; /* no more writes (wlock) */
	int hold;   /* batching: frames are queued, not written (wlock) */
	uint32_t max_payload;
	/* flow control, sending (flow.c, wlock): bytes queued here, CALL
	 * bytes sent and not yet credited back by the peer, the window the
	 * peer granted, an ASK unanswered, threads waiting on fcv */
	size_t wq_bytes;
	uint64_t f_out, f_win;
	int f_asked, f_waiters;
	pthread_cond_t fcv;
	struct flow_rx rx; /* receiving (flowpool.c) */
	/* TLS (tls.h): every SSL call holds wlock, reads included; the
	 * holder of the right to read drains what the SSL object buffers
	 * before it drops the right (no epoll event announces it) */
	struct ssl_st *ssl;
	/* reading, I/O thread only: a buffer of incoming bytes, and the
	 * payload of a large frame being read straight into place */
	unsigned char *rbuf;
	size_t rpos, rlen;
	int in_big;
	/* rt_now_ms of the last bytes read (atomic): a peer sending a large
	 * frame is alive before the frame is complete */
	uint64_t rx_ms;
	struct wire_hdr h;
	unsigned char *pay;
	size_t pgot;
};

/* The payload limit of every link once its handshake is done (the
 * master's DWORK_MAX_PAYLOAD or dw_options.max_payload, sent to its
 * workers in CONFIG); new connections start with it. */
extern uint32_t conn_max_payload;

/* Flow control (flow.c sends, flowpool.c receives; docs/runtime.md
 * "Flow control"): a sender keeps the CALL bytes it has on a link and
 * that its peer has not credited back within the window its peer
 * granted, and queues no CALL while conn_send_limit bytes of any frames
 * wait in that link's send queue.  A receiver grants windows out of one
 * pool of conn_job_limit bytes shared by all its links.  Every other
 * frame always flows. */
extern uint64_t conn_send_limit, conn_job_limit;
#define FLOW_DEFAULT     (256ull << 20)
#define FLOW_FLOOR       (1ull << 20)
#define FLOW_CREDIT_STEP (64u << 10)  /* credit sent at least this often */
#define FLOW_LINK_MIN    (64u << 10)  /* every link's window at its start */
#define FLOW_GRANT_MORE  (4ull << 20) /* most granted beyond an ASK */

/* Waits (state Blocking send) until a CALL payload of `bytes` may go on
 * c, then counts it as sent; asks the peer for the window it lacks.
 * dl: absolute CLOCK_MONOTONIC deadline, NULL none.  how: FLOW_WAIT;
 * FLOW_NOW never waits (DW_EAGAIN); FLOW_FORCE counts it without
 * waiting, for senders that bound themselves (pmap, pools, everywhere:
 * a call or two per worker).  DW_OK, DW_EAGAIN, DW_ETIMEDOUT,
 * DW_ECLOSED. */
enum { FLOW_WAIT = 0, FLOW_NOW, FLOW_FORCE };
int flow_acquire(struct conn *c, uint64_t bytes, const struct timespec *dl,
                 int how);
/* The peer credited `bytes` back (a CREDIT frame), or a CALL counted
 * by flow_acquire was not sent after all. */
void flow_credit(struct conn *c, uint64_t bytes);
void flow_attach(void); /* CREDIT, GRANT, ASK, RETURN frames */
/* The receiving side (flowpool.c).  conn_new opens a link's share (its
 * first FLOW_LINK_MIN), conn_close closes it. */
void flow_rx_open(struct conn *c);
void flow_rx_close(struct conn *c);
/* A CALL of `bytes` arrived on c and is queued. */
void flow_received(struct conn *c, uint64_t bytes);
/* This side ran (or dropped) a CALL of `bytes` received on c: its bytes
 * go back to c at once when `now`, else once FLOW_CREDIT_STEP bytes are
 * due, or, while other links wait, to the first of them.  flags as
 * conn_send's, for c's frames. */
void flow_consumed(struct conn *c, uint64_t bytes, int now, int flags);
/* The peer on c asks for `want` more window (ASK), gives `bytes` of its
 * window back (RETURN). */
void flow_rx_ask(struct conn *c, uint64_t want);
void flow_rx_return(struct conn *c, uint64_t bytes);

#define CONN_RBUF (64u << 10)
#define CONN_MORE 1 /* conn_send flag: more frames follow, do not write yet */

/* A connection on a connected socket fd (owned); with ssl (owned, may
 * be NULL) the link runs under TLS and fd must be non-blocking. */
struct conn *conn_new(int fd, int peer);
struct conn *conn_new_tls(int fd, int peer, struct ssl_st *ssl);
/* Closes the socket and frees queued frames, the read buffer and a
 * half-read frame (at once, or when the thread reading lets go); the
 * struct stays valid for senders racing with it (they get DW_ECLOSED)
 * until its last reference goes. */
void conn_close(struct conn *c);
/* The owner's end: closes c and drops the reference conn_new gave. */
void conn_free(struct conn *c);
/* References.  Whoever keeps c beyond the call that handed it over (a
 * future, a queued job, a parked request, a sender between looking the
 * link up and sending) holds one, so the struct of a lost link is freed
 * as soon as the last of them lets go, not at the end of the runtime.
 * The last conn_unref hands the struct to loop_later (an event of the
 * I/O thread's current batch may still point at it).  Any thread, any
 * lock held. */
void conn_ref(struct conn *c);
void conn_unref(struct conn *c);

/* Builds a frame: header, a copied prefix, and a body (borrowed unless
 * own is set, in which case body is freed with the frame). */
void frame_init(struct frame *f, uint8_t type, uint64_t ref, const void *prefix,
                size_t plen, const void *body, size_t blen, int own);

/*
 * Sends a stack frame (any thread).  When nothing is queued and nobody
 * holds the connection, it is written straight away; what the socket does
 * not take is queued (a borrowed body is copied, an owned one handed over)
 * and the I/O thread finishes it.  With CONN_MORE, or while the connection
 * is held, the frame is queued for one writev with the frames after it.
 * A frame whose payload is over the connection's limit is refused whole,
 * before a byte is written: DW_ETOOBIG (the link stays usable).
 * Returns DW_OK, DW_ECLOSED, DW_ENOMEM or DW_ETOOBIG.
 */
int conn_send(struct conn *c, struct frame *f, int flags);

/* Convenience: sends a header + prefix + body. */
int conn_send_msg(struct conn *c, uint8_t type, uint64_t ref,
                  const void *prefix, size_t plen, const void *body,
                  size_t blen);

/* Tracing hook: told of every frame handed to the socket or received
 * whose type is marked in conn_frame_tell (all zero when not tracing;
 * the frames a communication record tells are not marked): one table
 * read inline, so that a call's frames make no call to it. */
extern void (*conn_frame_hook)(int sent, unsigned type, size_t bytes);
extern unsigned char conn_frame_tell[256];
static inline void
conn_tell_frame(int sent, uint8_t type, size_t bytes)
{
	if (__builtin_expect(conn_frame_tell[type], 0))
		conn_frame_hook(sent, type, bytes);
}

/* For a frame handler: the frame was malformed; reading stops and the
 * connection is dropped with this reason. */
void conn_fail(struct conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Batching: while held, sends only queue; the last release writes
 * everything queued in one go.  conn_kick writes what is queued. */
void conn_hold(struct conn *c);
void conn_release(struct conn *c);
void conn_kick(struct conn *c);

/* I/O thread: writes queued frames on EPOLLOUT.  Returns 0 or -1 on a
 * write error (the connection is dead). */
int conn_flush(struct conn *c);

/*
 * The right to read.  The I/O thread reads a connection unless another
 * thread holds this right: a caller waiting for its reply, or an idle
 * executor, may read the socket itself and save two thread wake-ups.
 * The socket is registered one-shot; releasing re-arms it so the I/O
 * thread takes over.  conn_take_reader returns 1 when taken.  Under TLS
 * the holder reads with conn_read, which drains the SSL object, never
 * with conn_recv_blocking (plaintext only).
 */
int conn_take_reader(struct conn *c);
void conn_drop_reader(struct conn *c);
/* The same after a read turn on the call path: while calls flow back to
 * back the interest may stay off for up to REARM_DEFER_MS (rearm.c). */
void conn_drop_reader_soon(struct conn *c);
#define REARM_DEFER_MS 1
/* rearm.c: c->wlock held; 1 when c may stay off (see above). */
int rearm_defer(struct conn *c);
/* Requests the events the I/O thread must handle now: 1 done; 0 when
 * !wait and a writer holds wlock (try again). */
int conn_rearm_now(struct conn *c, int wait);
/* The I/O thread got an event: clears the one-shot arming; returns 1 if
 * it may read (and then holds the right). */
int conn_event(struct conn *c, uint32_t events);
/* Waits up to ms for bytes (the caller holds the right): 1 readable,
 * 0 timeout, -1 error. */
int conn_wait_readable(struct conn *c, int ms);

/* I/O thread: reads what is available.  For each whole frame calls
 * fn(arg, c, hdr, payload) — payload is malloc'd and handed over.
 * Returns 0 while the connection is usable, -1 at EOF or error, with the
 * reason in why (a malformed frame names what was wrong). */
typedef void (*conn_frame_fn)(void *arg, struct conn *c,
                              const struct wire_hdr *h, unsigned char *payload);
int conn_read(struct conn *c, conn_frame_fn fn, void *arg, char *why,
              size_t whylen);

/* Blocks up to CONN_RECV_TIMEOUT_MS in one recv into the read buffer (the
 * caller holds the right; no frame is being read in place; not on a TLS
 * link): 1 bytes came, 0 timeout, -1 closed. */
#define CONN_RECV_TIMEOUT_MS 1000
int conn_recv_blocking(struct conn *c);
/* Hands on the complete frames already buffered (no reading). */
int conn_parse_buffered(struct conn *c, conn_frame_fn fn, void *arg, char *why,
                        size_t whylen);

#endif
