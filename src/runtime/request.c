/*
 * Requests to the owner of an object (a channel, a kept result, the
 * master's view of the cluster): the owner's side of REQ frames, their
 * answers, and local requests of a process to itself.  Handlers never
 * block: an operation that must wait is parked and answered later.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/call.h"
#include "runtime/rt.h"
#include "runtime/rtrace.h"
#include "runtime/wire_err.h"
#include "runtime/work.h"

/* lw_lock guards every local requester's struct lwait (done, status,
 * data); a leaf, taken under rt.lock or ch_lock by answers. */
static pthread_mutex_t lw_lock = PTHREAD_MUTEX_INITIALIZER;

static void
lw_done(struct lwait *lw, int status, void *data, size_t len)
{
	pthread_mutex_lock(&lw_lock);
	if (lw->done) { /* answered already (a cancel racing an answer) */
		pthread_mutex_unlock(&lw_lock);
		free(data);
		return;
	}
	lw->status = status;
	lw->data = data;
	lw->len = len;
	lw->done = 1;
	pthread_cond_broadcast(&lw->cv);
	pthread_mutex_unlock(&lw_lock);
}

int
lw_wait(struct lwait *lw, int timeout_ms)
{
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	if (timeout_ms > 0) {
		dl.tv_sec += timeout_ms / 1000;
		dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (dl.tv_nsec >= 1000000000L)
			dl.tv_sec++, dl.tv_nsec -= 1000000000L;
	}
	int err = DW_OK;
	pthread_mutex_lock(&lw_lock);
	while (!lw->done) {
		if (timeout_ms < 0) {
			rt_cond_wait(&lw->cv, &lw_lock, NULL,
			             DWT_STATE_WAITING_MESSAGE);
		} else if (timeout_ms == 0 ||
		           rt_cond_wait(&lw->cv, &lw_lock, &dl,
		                        DWT_STATE_WAITING_MESSAGE) != 0) {
			err = lw->done ? DW_OK : DW_ETIMEDOUT;
			break;
		}
	}
	pthread_mutex_unlock(&lw_lock);
	return err;
}

int
req_same(const struct req_src *a, const struct req_src *b)
{
	return a->pid == b->pid && a->id == b->id;
}

static void
req_send_answer(const struct req_src *s, int status, const void *data,
                size_t len, int own)
{
	if ((uint64_t)len + 4 > s->c->max_payload) {
		char msg[200]; /* this request fails, the link lives on */
		wire_too_big(msg, sizeof msg, "an answer", len + 4,
		             s->c->max_payload);
		if (own)
			free((void *)data);
		req_send_answer(s, DW_ETOOBIG, msg, strlen(msg), 0);
		return;
	}
	unsigned char st[4];
	wire_put_u32(st, wire_err_put(status));
	struct frame f;
	rtr_comm(DWT_SEND | DWT_LOGICAL | DWT_PHYSICAL, s->pid, s->id,
	         RTR_TAG_ANSWER, 4 + len);
	frame_init(&f, WIRE_ANSWER, s->id, st, 4, len ? data : NULL, len,
	           own && len);
	conn_send(s->c, &f, 0);
	if (own && !len)
		free((void *)data);
}

void
req_answer(const struct req_src *s, const void *data, size_t len)
{
	if (!s->id)
		return;
	if (s->c) {
		req_send_answer(s, DW_OK, data, len, 0);
		return;
	}
	void *copy = malloc(len ? len : 1);
	if (copy && len)
		memcpy(copy, data, len);
	if (copy)
		lw_done(s->lw, DW_OK, copy, len);
	else
		lw_done(s->lw, DW_ENOMEM, strdup("out of memory"), 13);
}

void
req_answer_take(const struct req_src *s, void *data, size_t len)
{
	if (!s->id) {
		free(data);
		return;
	}
	if (s->c)
		req_send_answer(s, DW_OK, data, len, 1);
	else
		lw_done(s->lw, DW_OK, data ? data : malloc(1), len);
}

void
req_answer_err(const struct req_src *s, int status, const char *fmt, ...)
{
	if (!s->id)
		return;
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	size_t n = strlen(msg);
	if (s->c)
		req_send_answer(s, status, msg, n, 0);
	else
		lw_done(s->lw, status, strdup(msg), n);
}

/* ---- the master's view of the cluster ---- */

int
work_procs(int **ids, int with_master)
{
	*ids = NULL;
	if (rt.role == RT_MASTER) {
		for (;;) {
			int n = with_master ? dw_procs(NULL, 0)
			                    : dw_workers(NULL, 0);
			int *v = malloc((size_t)n * sizeof *v + 1);
			if (!v)
				return DW_ENOMEM;
			int m = with_master ? dw_procs(v, n) : dw_workers(v, n);
			if (m <= n) {
				*ids = v;
				return m;
			}
			free(v);
		}
	}
	void *r;
	size_t len;
	int err = req_call(1, REQ_PROCS, NULL, 0, NULL, 0, 30000, &r, &len);
	if (err != DW_OK)
		return err;
	int n = 0, *v = malloc(len + sizeof(int));
	if (!v) {
		free(r);
		return DW_ENOMEM;
	}
	for (size_t i = 0; i + 4 <= len; i += 4) {
		int id = (int)wire_get_u32((unsigned char *)r + i);
		if (with_master || id != 1)
			v[n++] = id;
	}
	if (n == 0)
		v[n++] = 1; /* no workers: the master serves as one */
	free(r);
	*ids = v;
	return n;
}

static void
req_procs(const struct req_src *s)
{
	if (rt.role != RT_MASTER) {
		req_answer_err(s, DW_ESTATE, "process %d is not the master",
		               rt.myid);
		return;
	}
	int *ids;
	int n = work_procs(&ids, 1);
	unsigned char *b = n > 0 ? malloc((size_t)n * 4) : NULL;
	if (!b) {
		free(ids);
		req_answer_err(s, DW_ENOMEM, "out of memory");
		return;
	}
	for (int i = 0; i < n; i++)
		wire_put_u32(b + 4 * i, (uint32_t)ids[i]);
	free(ids);
	req_answer_take(s, b, (size_t)n * 4);
}

/* ---- dispatch ---- */

static void
req_dispatch(const struct req_src *s, unsigned char *p, size_t len)
{
	int op = p[0];
	const unsigned char *b = p + REQ_PREFIX;
	size_t bl = len - REQ_PREFIX;
	switch (op) {
	case REQ_CH_NEW:
	case REQ_CH_PUT:
	case REQ_CH_TAKE:
	case REQ_CH_FETCH:
	case REQ_CH_READY:
	case REQ_CH_WAIT:
	case REQ_CH_CLOSE:
		chan_on_req(s, op, p, REQ_PREFIX, len);
		return;
	case REQ_HOLD:
	case REQ_RELEASE:
		if (bl >= 1 && b[0] == REF_CHANNEL) {
			chan_on_req(s, op, p, REQ_PREFIX, len);
			return;
		}
		if (bl >= 1 && b[0] == REF_FUTURE)
			call_on_ref_req(s, op, b, bl);
		else
			req_answer_err(s, DW_EPROTO, "unknown reference kind");
		break;
	case REQ_FUT_FETCH:
	case REQ_FUT_WAIT:
	case REQ_FUT_READY:
		call_on_ref_req(s, op, b, bl);
		break;
	case REQ_WHERE:
	case REQ_DIAL:
	case REQ_GONE:
		peer_on_req(s, op, b, bl);
		break;
	case REQ_PROCS:
		req_procs(s);
		break;
	case REQ_CACHE_PUT:
	case REQ_CACHE_DROP:
		pool_on_req(s, op, b, bl);
		break;
	}
	free(p);
}

void
req_on_frame(struct conn *c, uint64_t id, unsigned char *p, size_t len)
{
	if (len < REQ_PREFIX || p[0] == 0 || p[0] > REQ_OP_MAX || p[1] ||
	    p[2] || p[3]) {
		conn_fail(c, "malformed request (%zu bytes, op %u)", len,
		          len ? p[0] : 0u);
		free(p);
		return;
	}
	struct req_src s = {.c = c, .id = id, .pid = c->peer};
	if (id) /* a request wanting no answer is not drawn */
		rtr_comm(DWT_RECV | DWT_LOGICAL | DWT_PHYSICAL, c->peer, id,
		         RTR_TAG_REQUEST, len);
	req_dispatch(&s, p, len);
}

void
req_on_local(const struct req_src *s, unsigned char *p, size_t len)
{
	req_dispatch(s, p, len);
}

void
req_on_cancel(int pid, uint64_t id)
{
	chan_on_cancel(pid, id);
	call_on_ref_cancel(pid, id);
}

/* ---- the end ---- */

void
work_shutdown(void)
{
	chan_shutdown();
	call_stop_executors();
}
/* ---- requests: the requester's side ---- */

/* Registers f as pending and sends a REQ frame. */
static int
req_send(struct dw_future *f, int op, const void *body, size_t blen,
         const void *data, size_t dlen)
{
	int err;
	unsigned char pre[REQ_PREFIX + 64];
	if (blen > 64)
		return DW_EINVAL;
	struct conn *c = cl_conn_of(f->pid, &err);
	if (!c)
		return err;
	pre[0] = (unsigned char)op;
	pre[1] = 0;
	wire_put_u16(pre + 2, 0);
	if (blen)
		memcpy(pre + REQ_PREFIX, body, blen);
	conn_unref(f->conn);
	f->conn = c; /* the future holds the reference now */
	f->reading = conn_take_reader(c);
	pthread_mutex_lock(&rt.lock);
	f->id = ++rt.next_call;
	f->op = OP_CALL;
	if (pend_put(f) < 0) {
		f->op = OP_NONE;
		pthread_mutex_unlock(&rt.lock);
		if (f->reading)
			conn_drop_reader(c);
		f->reading = 0;
		return DW_ENOMEM;
	}
	pthread_mutex_unlock(&rt.lock);
	rtr_comm(DWT_SEND | DWT_LOGICAL | DWT_PHYSICAL, f->pid, f->id,
	         RTR_TAG_REQUEST, REQ_PREFIX + blen + dlen);
	err = conn_send_msg(c, WIRE_REQ, f->id, pre, REQ_PREFIX + blen, data,
	                    dlen);
	return err == DW_OK ? DW_OK : call_unsend(f, c);
}

static int
req_call_local(int op, const void *body, size_t blen, const void *data,
               size_t dlen, int timeout_ms, void **res, size_t *reslen)
{
	size_t n = REQ_PREFIX + blen + dlen;
	unsigned char *p = malloc(n);
	if (!p)
		return DW_ENOMEM;
	p[0] = (unsigned char)op;
	p[1] = p[2] = p[3] = 0;
	if (blen)
		memcpy(p + REQ_PREFIX, body, blen);
	if (dlen)
		memcpy(p + REQ_PREFIX + blen, data, dlen);
	struct lwait lw = {.done = 0};
	pthread_cond_init(&lw.cv, NULL);
	struct req_src s = {.lw = &lw, .pid = rt.myid};
	pthread_mutex_lock(&rt.lock);
	s.id = ++rt.next_call;
	pthread_mutex_unlock(&rt.lock);
	req_on_local(&s, p, n);
	exec_block_begin();
	int err = lw_wait(&lw, timeout_ms);
	if (err == DW_ETIMEDOUT) { /* withdraw it, unless it was answered */
		req_on_cancel(rt.myid, s.id);
		lw_wait(&lw, -1);
	}
	exec_block_end();
	pthread_cond_destroy(&lw.cv);
	if (lw.status != DW_OK) {
		rt_set_err(rt.myid, "%.*s", (int)lw.len, (char *)lw.data);
		free(lw.data);
		return lw.status;
	}
	if (res)
		*res = lw.data;
	else
		free(lw.data);
	if (reslen)
		*reslen = lw.len;
	return DW_OK;
}

int
req_call(int pid, int op, const void *body, size_t blen, const void *data,
         size_t dlen, int timeout_ms, void **res, size_t *reslen)
{
	if (res)
		*res = NULL;
	if (reslen)
		*reslen = 0;
	if (rt.role == RT_NONE)
		return rt_set_err(0, "dw_init has not been called"), DW_ESTATE;
	/* checked for local owners too: a value any link could not carry
	 * would be stuck in a channel that others take from */
	if (dlen > conn_max_payload - REQ_PREFIX - 64) {
		char msg[200];
		wire_too_big(msg, sizeof msg, "a value", dlen,
		             conn_max_payload - REQ_PREFIX - 64);
		return rt_set_err(0, "%s", msg), DW_ETOOBIG;
	}
	if (pid == rt.myid)
		return req_call_local(op, body, blen, data, dlen, timeout_ms,
		                      res, reslen);
	struct dw_future *f = fut_new(pid, MODE_REQ);
	if (!f)
		return DW_ENOMEM;
	int err = req_send(f, op, body, blen, data, dlen);
	pthread_mutex_lock(&rt.lock);
	if (err != DW_OK)
		goto out;
	err = fut_wait_locked(f, timeout_ms);
	if (f->reading) {
		conn_drop_reader(f->conn);
		f->reading = 0;
	}
	if (err == DW_ETIMEDOUT) { /* withdraw it, unless it was answered */
		pthread_mutex_unlock(&rt.lock);
		conn_send_msg(f->conn, WIRE_CANCEL, f->id, NULL, 0, NULL, 0);
		pthread_mutex_lock(&rt.lock);
		err = fut_wait_locked(f, 30000);
		if (err == DW_ETIMEDOUT) {
			if (pend_take(f->id))
				f->refs--;
			f->op = OP_NONE;
		}
		if (err == DW_ETIMEDOUT ||
		    (f->state == F_FAILED && f->err == DW_ETIMEDOUT)) {
			rt_set_err(pid,
			           "no answer from process %d within %d "
			           "ms",
			           pid, timeout_ms);
			err = DW_ETIMEDOUT;
			goto out;
		}
	}
	if (err == DW_OK)
		err = fut_result_err(f);
	if (err == DW_OK) {
		if (reslen)
			*reslen = f->len;
		if (res) {
			memmove(f->buf, f->buf + f->off, f->len);
			*res = f->buf;
			f->buf = NULL;
		}
	}
out:
	fut_unref(f);
	pthread_mutex_unlock(&rt.lock);
	return err;
}

int
req_post_conn(struct conn *c, int op, const void *body, size_t blen,
              const void *data, size_t dlen)
{
	unsigned char pre[REQ_PREFIX + 64];
	if (blen > 64)
		return DW_EINVAL;
	pre[0] = (unsigned char)op;
	pre[1] = 0;
	wire_put_u16(pre + 2, 0);
	if (blen)
		memcpy(pre + REQ_PREFIX, body, blen);
	return conn_send_msg(c, WIRE_REQ, 0, pre, REQ_PREFIX + blen, data,
	                     dlen);
}

int
req_post(int pid, int op, const void *body, size_t blen, const void *data,
         size_t dlen)
{
	if (rt.role == RT_NONE)
		return DW_ESTATE;
	if (pid == rt.myid) {
		size_t n = REQ_PREFIX + blen + dlen;
		unsigned char *p = malloc(n);
		if (!p)
			return DW_ENOMEM;
		p[0] = (unsigned char)op;
		p[1] = p[2] = p[3] = 0;
		if (blen)
			memcpy(p + REQ_PREFIX, body, blen);
		if (dlen)
			memcpy(p + REQ_PREFIX + blen, data, dlen);
		struct req_src s = {.pid = rt.myid};
		req_on_local(&s, p, n);
		return DW_OK;
	}
	int err;
	struct conn *c = cl_conn_of(pid, &err);
	if (!c)
		return err;
	err = req_post_conn(c, op, body, blen, data, dlen);
	conn_unref(c);
	return err;
}

/* ---- frames arriving at a requester: ANSWER ---- */

void
call_answer(struct conn *c, const struct wire_hdr *h, unsigned char *p)
{
	if (h->payload < 4) {
		conn_fail(c, "answer of %u bytes is too short", h->payload);
		free(p);
		return;
	}
	int st = wire_err_get(wire_get_u32(p), DW_EPROTO);
	pthread_mutex_lock(&rt.lock);
	struct dw_future *f = pend_take(h->ref);
	if (!f) {
		pthread_mutex_unlock(&rt.lock);
		free(p);
		return;
	}
	rtr_comm(DWT_RECV | DWT_PHYSICAL | DWT_LOGICAL, c->peer, h->ref,
	         RTR_TAG_ANSWER, h->payload);
	if (st != DW_OK) {
		char msg[600];
		int n = h->payload - 4 > 500 ? 500 : (int)(h->payload - 4);
		snprintf(msg, sizeof msg, "%.*s", n, (const char *)p + 4);
		fut_fail(f, st, c->peer, msg);
	} else {
		free(f->buf);
		f->buf = p;
		f->off = 4;
		f->len = h->payload - 4;
		f->have = 1;
		f->state = F_READY;
		p = NULL;
	}
	f->op = OP_NONE;
	pthread_cond_broadcast(&f->cv);
	fut_notify(f);
	fut_unref(f);
	pthread_mutex_unlock(&rt.lock);
	free(p);
}

static void
req_on_req_frame(struct conn *c, const struct wire_hdr *h, unsigned char *p)
{
	req_on_frame(c, h->ref, p, h->payload);
}

static void
req_on_cancel_frame(struct conn *c, const struct wire_hdr *h, unsigned char *p)
{
	req_on_cancel(c->peer, h->ref);
	free(p);
}

void
req_attach(void)
{
	disp_on_frame(WIRE_REQ, req_on_req_frame);
	disp_on_frame(WIRE_ANSWER, call_answer);
	disp_on_frame(WIRE_CANCEL, req_on_cancel_frame);
}
