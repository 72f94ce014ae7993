/*
 * Credit-based flow control of calls, the sending side (docs/runtime.md,
 * "Flow control"; the receiving side is flowpool.c).  A sender keeps the
 * CALL payloads it has on a link and that its peer has not yet credited
 * back (f_out) within the window its peer granted (f_win).  A link starts
 * with FLOW_LINK_MIN; a call that does not fit asks for more (ASK) and
 * waits for the GRANT; a window over FLOW_LINK_MIN goes back (RETURN) once
 * nothing is outstanding, so an idle link holds nothing of the peer's
 * pool.  Heartbeats, clock sync, trace files, cancellations and the flow
 * frames themselves are not counted and always flow.
 */
#include <errno.h>
#include <stdlib.h>

#include <dwork/error.h>
#include <dwork/trace.h>

#include "runtime/rt.h"

static int
flow_room(const struct conn *c, uint64_t bytes)
{
	if (c->f_out + bytes > c->f_win)
		return 0;
	return c->wq_bytes == 0 || c->wq_bytes < conn_send_limit;
}

static void
flow_tell(struct conn *c, uint8_t type, uint64_t bytes)
{
	struct frame f;
	frame_init(&f, type, bytes, NULL, 0, NULL, 0, 0);
	conn_send(c, &f, 0);
}

/* The window over FLOW_LINK_MIN, when nothing uses or wants it (wlock):
 * the caller sends it back. */
static uint64_t
flow_spare_locked(struct conn *c)
{
	if (c->f_out || c->f_waiters || c->f_asked || c->closed ||
	    c->f_win <= FLOW_LINK_MIN)
		return 0;
	uint64_t spare = c->f_win - FLOW_LINK_MIN;
	c->f_win = FLOW_LINK_MIN;
	return spare;
}

/* Asks for the window a call of `bytes` lacks, once until it is
 * answered (wlock held, dropped while the ASK is sent). */
static void
flow_ask_locked(struct conn *c, uint64_t bytes)
{
	if (c->f_asked || c->f_out + bytes <= c->f_win)
		return;
	c->f_asked = 1;
	uint64_t want = c->f_out + bytes - c->f_win;
	pthread_mutex_unlock(&c->wlock);
	flow_tell(c, WIRE_ASK, want);
	pthread_mutex_lock(&c->wlock);
}

/* Asks, then waits; counted among the waiters throughout, so that a
 * GRANT arriving meanwhile is not taken for spare and sent back. */
static int
flow_wait_locked(struct conn *c, uint64_t bytes, const struct timespec *dl,
                 int how)
{
	int err = DW_OK;
	c->f_waiters++;
	while (!c->closed && !flow_room(c, bytes)) {
		if (!c->f_asked && c->f_out + bytes > c->f_win) {
			flow_ask_locked(c, bytes);
			continue;
		}
		if (how == FLOW_NOW) {
			err = DW_EAGAIN;
			break;
		}
		int r = rt_cond_wait(&c->fcv, &c->wlock, dl,
		                     DWT_STATE_BLOCKING_SEND);
		if (r == ETIMEDOUT && !c->closed && !flow_room(c, bytes)) {
			err = DW_ETIMEDOUT;
			break;
		}
	}
	c->f_waiters--;
	return err;
}

int
flow_acquire(struct conn *c, uint64_t bytes, const struct timespec *dl, int how)
{
	int err = DW_OK;
	pthread_mutex_lock(&c->wlock);
	if (how != FLOW_FORCE)
		err = flow_wait_locked(c, bytes, dl, how);
	if (c->closed)
		err = DW_ECLOSED;
	if (err == DW_OK)
		c->f_out += bytes;
	uint64_t spare = err == DW_OK ? 0 : flow_spare_locked(c);
	pthread_mutex_unlock(&c->wlock);
	if (spare)
		flow_tell(c, WIRE_RETURN, spare);
	return err;
}

void
flow_credit(struct conn *c, uint64_t bytes)
{
	pthread_mutex_lock(&c->wlock);
	c->f_out -= bytes < c->f_out ? bytes : c->f_out;
	if (c->f_waiters)
		pthread_cond_broadcast(&c->fcv);
	uint64_t spare = flow_spare_locked(c);
	pthread_mutex_unlock(&c->wlock);
	if (spare)
		flow_tell(c, WIRE_RETURN, spare);
}

static void
flow_on_credit(struct conn *c, const struct wire_hdr *h, unsigned char *p)
{
	flow_credit(c, h->ref);
	free(p);
}

static void
flow_on_grant(struct conn *c, const struct wire_hdr *h, unsigned char *p)
{
	pthread_mutex_lock(&c->wlock);
	c->f_win += h->ref <= UINT64_MAX - c->f_win ? h->ref : 0;
	c->f_asked = 0;
	if (c->f_waiters)
		pthread_cond_broadcast(&c->fcv);
	uint64_t spare = flow_spare_locked(c);
	pthread_mutex_unlock(&c->wlock);
	if (spare)
		flow_tell(c, WIRE_RETURN, spare);
	free(p);
}

static void
flow_on_ask(struct conn *c, const struct wire_hdr *h, unsigned char *p)
{
	flow_rx_ask(c, h->ref);
	free(p);
}

static void
flow_on_return(struct conn *c, const struct wire_hdr *h, unsigned char *p)
{
	flow_rx_return(c, h->ref);
	free(p);
}

void
flow_attach(void)
{
	disp_on_frame(WIRE_CREDIT, flow_on_credit);
	disp_on_frame(WIRE_GRANT, flow_on_grant);
	disp_on_frame(WIRE_ASK, flow_on_ask);
	disp_on_frame(WIRE_RETURN, flow_on_return);
}
