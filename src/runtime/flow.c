/*
 * Credit-based flow control of calls (docs/runtime.md, "Flow control").
 * A sender may have at most conn_job_limit bytes of CALL payloads on a
 * link that its peer has not yet run; the peer runs them and sends the
 * bytes back in CREDIT frames.  So the receiver's job queue and the
 * sender's send queue both stay within that bound, without the receiver
 * ever leaving a link unread: heartbeats, clock sync, trace files,
 * cancellations and credits are not counted and always flow.  A call
 * larger than the bound goes alone, when nothing else is outstanding.
 */
#include <errno.h>
#include <stdlib.h>

#include <dwork/error.h>
#include <dwork/trace.h>

#include "runtime/rt.h"

static int
flow_room(const struct conn *c, uint64_t bytes)
{
	if (c->f_out > 0 && c->f_out + bytes > conn_job_limit)
		return 0;
	return c->wq_bytes == 0 || c->wq_bytes < conn_send_limit;
}

int
flow_acquire(struct conn *c, uint64_t bytes, const struct timespec *dl, int how)
{
	int err = DW_OK;
	pthread_mutex_lock(&c->wlock);
	while (how != FLOW_FORCE && !c->closed && !flow_room(c, bytes)) {
		if (how == FLOW_NOW) {
			err = DW_EAGAIN;
			break;
		}
		c->f_waiters++;
		int r = rt_cond_wait(&c->fcv, &c->wlock, dl,
		                     DWT_STATE_BLOCKING_SEND);
		c->f_waiters--;
		if (r == ETIMEDOUT && !c->closed && !flow_room(c, bytes)) {
			err = DW_ETIMEDOUT;
			break;
		}
	}
	if (c->closed)
		err = DW_ECLOSED;
	if (err == DW_OK)
		c->f_out += bytes;
	pthread_mutex_unlock(&c->wlock);
	return err;
}

void
flow_credit(struct conn *c, uint64_t bytes)
{
	pthread_mutex_lock(&c->wlock);
	c->f_out -= bytes < c->f_out ? bytes : c->f_out;
	if (c->f_waiters)
		pthread_cond_broadcast(&c->fcv);
	pthread_mutex_unlock(&c->wlock);
}

void
flow_consumed(struct conn *c, uint64_t bytes, int now, int flags)
{
	pthread_mutex_lock(&c->wlock);
	c->f_due += bytes;
	uint64_t due = 0;
	if (now || c->f_due >= FLOW_CREDIT_STEP) {
		due = c->f_due;
		c->f_due = 0;
	}
	pthread_mutex_unlock(&c->wlock);
	if (!due)
		return;
	struct frame f;
	frame_init(&f, WIRE_CREDIT, due, NULL, 0, NULL, 0, 0);
	conn_send(c, &f, flags);
}

static void
flow_on_credit(struct conn *c, const struct wire_hdr *h, unsigned char *p)
{
	flow_credit(c, h->ref);
	free(p);
}

void
flow_attach(void)
{
	disp_on_frame(WIRE_CREDIT, flow_on_credit);
}
