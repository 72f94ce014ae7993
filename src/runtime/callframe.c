/*
 * The frames of a call on both sides: RESULT and DONE arriving at the
 * caller, CALL arriving at the callee (queued for an executor), and the
 * callee's replies.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/call.h"
#include "runtime/rt.h"
#include "runtime/wire_err.h"
#include "runtime/rtrace.h"
#include "runtime/work.h"

/* ---- frames arriving at the caller: RESULT, DONE ---- */

/* A successful result of dw_remotecall_fetch, whose caller records the
 * logical receive when it takes it (send.c). */
static int
call_fetch_result(const struct dw_future *f, const struct wire_hdr *h)
{
	return f->mode == WIRE_MODE_FETCH && !f->notify && f->op == OP_CALL &&
	       h->type == WIRE_RESULT && !(h->flags & WIRE_FLAG_ERROR);
}

void
call_complete(struct conn *c, const struct wire_hdr *h, unsigned char *p)
{
	pthread_mutex_lock(&rt.lock);
	struct dw_future *f = pend_take(h->ref);
	if (!f) { /* abandoned: timed out or freed */
		pthread_mutex_unlock(&rt.lock);
		if (h->type == WIRE_DONE)
			conn_send_msg(c, WIRE_FREE, h->ref, NULL, 0, NULL, 0);
		free(p);
		return;
	}
	/* The arrival: not for a fetch's result, whose caller records the
	 * receive as it takes it (the merge puts the physical receive
	 * there anyway: docs/merge.md, Communications). */
	if (!call_fetch_result(f, h))
		rtr_comm(DWT_RECV | DWT_PHYSICAL, c->peer, h->ref,
		         f->op == OP_FETCH ? 3 : 1, h->payload);
	if (h->type == WIRE_DONE) {
		f->state = F_READY;
		f->remote = 1;
		if (!f->user_gone)
			ready_add(f);
	} else if (h->flags & WIRE_FLAG_ERROR) {
		char msg[600];
		int err = DW_EREMOTE;
		size_t o = 0;
		if (h->flags & WIRE_FLAG_CODE) {
			uint32_t st = h->payload >= 4 ? wire_get_u32(p) : 0;
			err = st ? wire_err_get(st, DW_EPROTO) : DW_EPROTO;
			o = h->payload >= 4 ? 4 : h->payload;
		}
		int n = h->payload - o > 500 ? 500 : (int)(h->payload - o);
		snprintf(msg, sizeof msg, "worker %d: %.*s", c->peer, n,
		         (const char *)p + o);
		fut_fail(f, err, c->peer, msg);
	} else { /* the payload is the result: no copy, malloc-aligned */
		free(f->buf);
		f->buf = p;
		f->off = 0;
		f->len = h->payload;
		f->have = 1;
		f->state = F_READY;
		f->remote = 0;
		ready_del(f);
		p = NULL;
	}
	int drop = h->type == WIRE_DONE && f->user_gone;
	f->op = OP_NONE;
	pthread_cond_broadcast(&f->cv);
	fut_notify(f);
	fut_unref(f);
	pthread_mutex_unlock(&rt.lock);
	if (drop)
		conn_send_msg(c, WIRE_FREE, h->ref, NULL, 0, NULL, 0);
	free(p);
}

/* Fails every operation pending on pid (rt.lock held). */

/* ---- frames arriving at the callee ---- */

/* A failed call's RESULT; an error other than DW_EREMOTE travels as a
 * code before the message. */
void
call_reply_code(struct conn *c, uint64_t id, int err, const char *msg)
{
	struct frame f;
	unsigned char st[4];
	wire_put_u32(st, wire_err_put(err));
	int coded = err != DW_EREMOTE;
	frame_init(&f, WIRE_RESULT, id, st, coded ? 4 : 0, msg, strlen(msg), 0);
	f.head[5] = WIRE_FLAG_ERROR | (coded ? WIRE_FLAG_CODE : 0);
	conn_send(c, &f, 0);
}

void
call_reply_error(struct conn *c, uint64_t id, const char *msg)
{
	call_reply_code(c, id, DW_EREMOTE, msg);
}

/* Sends a result, or DW_ETOOBIG naming its size when the link cannot
 * carry it: that call fails, the link and the worker live on. */
void
call_send_result(struct conn *c, uint64_t id, void *data, size_t len, int own,
                 int flags)
{
	if ((uint64_t)len > c->max_payload) {
		char msg[200];
		wire_too_big(msg, sizeof msg, "a result", len, c->max_payload);
		if (own)
			free(data);
		call_reply_code(c, id, DW_ETOOBIG, msg);
		return;
	}
	struct frame f;
	frame_init(&f, WIRE_RESULT, id, NULL, 0, data, len, own);
	conn_send(c, &f, flags);
}

void
call_enqueue(struct conn *c, const struct wire_hdr *h, unsigned char *p)
{
	char why[128];
	struct job *j = malloc(sizeof *j);
	if (!j || wire_parse_call(p, h->payload, &j->call, why, sizeof why)) {
		if (j)
			conn_fail(c, "malformed call: %s", why);
		free(j);
		free(p);
		return;
	}
	flow_received(c, h->payload);
	j->next = NULL;
	j->from = c;
	j->id = h->ref;
	j->payload = p;
	j->len = h->payload;
	j->kept = NULL;
	/* no arrival record: the executor records the receive as it starts
	 * the call, where the merge puts the physical receive anyway */
	if (j->call.mode == WIRE_MODE_KEEP &&
	    !(j->kept = kept_new(c->peer, h->ref))) {
		flow_consumed(c, h->payload, 1, CONN_MORE);
		call_reply_error(c, h->ref, "out of memory keeping the result");
		free(p);
		free(j);
		return;
	}
	pthread_mutex_lock(&rt.lock);
	if (j->kept && kept_put(j->kept) < 0) {
		pthread_mutex_unlock(&rt.lock);
		flow_consumed(c, h->payload, 1, CONN_MORE);
		call_reply_error(c, h->ref, "out of memory keeping the result");
		free(j->kept);
		free(p);
		free(j);
		return;
	}
	conn_ref(c); /* the job's, dropped when it has run */
	if (!rt.jobs_tail)
		rt.jobs_tail = &rt.jobs;
	*rt.jobs_tail = j;
	rt.jobs_tail = &j->next;
	exec_ensure_locked(c);
	pthread_cond_signal(&rt.jobs_cv);
	pthread_mutex_unlock(&rt.lock);
}

/* The frames of calls, at both ends. */
void
call_attach(void)
{
	disp_on_frame(WIRE_RESULT, call_complete);
	disp_on_frame(WIRE_DONE, call_complete);
	disp_on_frame(WIRE_CALL, call_enqueue);
}
