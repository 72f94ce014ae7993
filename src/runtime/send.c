/*
 * Sending a call: the CALL frame and its flow control, calls of a
 * process to itself, the dw_remotecall family, and calls with a
 * completion notice (pools, pmap, dw_async).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/call.h"
#include "runtime/rt.h"
#include "runtime/rtrace.h"
#include "runtime/work.h"

/* ---- sending a call ---- */

/* The frame of f could not be sent: f is no longer pending. */
int
call_unsend(struct dw_future *f, struct conn *c)
{
	if (f->reading)
		conn_drop_reader(c);
	f->reading = 0;
	pthread_mutex_lock(&rt.lock);
	if (pend_take(f->id))
		f->refs--;
	f->op = OP_NONE;
	pthread_mutex_unlock(&rt.lock);
	rt_set_err(f->pid, "process %d has exited", f->pid);
	return DW_EEXITED;
}

/* Waits for room to send a CALL of `bytes` on c (flow.c).  send_ms: < 0
 * no limit, 0 not at all (DW_EAGAIN), else a limit (DW_ETIMEDOUT);
 * CALL_SEND_FORCE for the runtime's self-bounded senders. */
#define CALL_SEND_FORCE (-2)
static int
call_flow(struct conn *c, int pid, uint64_t bytes, int send_ms)
{
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	if (send_ms > 0) {
		dl.tv_sec += send_ms / 1000;
		dl.tv_nsec += (long)(send_ms % 1000) * 1000000L;
		if (dl.tv_nsec >= 1000000000L)
			dl.tv_sec++, dl.tv_nsec -= 1000000000L;
	}
	int how = send_ms == CALL_SEND_FORCE ? FLOW_FORCE
	          : send_ms == 0             ? FLOW_NOW
	                                     : FLOW_WAIT;
	int err = flow_acquire(c, bytes, send_ms > 0 ? &dl : NULL, how);
	if (err == DW_ECLOSED)
		return rt_set_err(pid, "process %d has exited", pid),
		       DW_EEXITED;
	if (err != DW_OK)
		rt_set_err(pid,
		           "the link to process %d is full: %llu bytes of "
		           "calls not yet run there (flow control, "
		           "DWORK_JOB_QUEUE), %s",
		           pid, (unsigned long long)conn_job_limit,
		           err == DW_EAGAIN ? "and the call may not wait"
		                            : "for the whole timeout");
	return err;
}

/* Registers f as pending under a new id and sends the frame; *ev is
 * the call's function id once the frame is handed over. */
static int
call_send_in(struct dw_future *f, const char *fn, size_t nl, const void *arg,
             size_t len, int send_ms, uint32_t *ev)
{
	int err;
	struct conn *c = cl_conn_of(f->pid, &err);
	if (!c)
		return err;
	/* before the read right: credits come in through the I/O thread */
	uint64_t bytes = wire_call_prefix(nl) + len;
	exec_block_begin();
	err = call_flow(c, f->pid, bytes, send_ms);
	exec_block_end();
	if (err != DW_OK) {
		conn_unref(c);
		return err;
	}
	unsigned char pre[4 + WIRE_NAME_MAX];
	wire_put_call(pre, (uint8_t)f->mode, fn, nl);
	conn_unref(f->conn);
	f->conn = c; /* the future holds the reference now */
	/* A caller about to wait reads its own reply: take the read right
	 * before the reply can wake the I/O thread. */
	if (f->mode == WIRE_MODE_FETCH && !f->notify)
		f->reading = conn_take_reader(c);
	pthread_mutex_lock(&rt.lock);
	f->id = ++rt.next_call;
	f->op = f->mode == WIRE_MODE_DO ? OP_NONE : OP_CALL;
	if (f->op == OP_CALL && pend_put(f) < 0) {
		pthread_mutex_unlock(&rt.lock);
		flow_credit(c, bytes);
		return DW_ENOMEM;
	}
	pthread_mutex_unlock(&rt.lock);
	call_user_name(f, fn, nl, arg, len);
	rtr_comm(DWT_SEND | DWT_LOGICAL | DWT_PHYSICAL, f->pid, f->id, 0, len);
	err = conn_send_msg(c, WIRE_CALL, f->id, pre, wire_call_prefix(nl), arg,
	                    len);
	if (err != DW_OK)
		flow_credit(c, bytes);
	if (err == DW_OK && RTR_TRACKING)
		*ev = call_event_id(fn, nl, arg, len);
	return err == DW_OK ? DW_OK : call_unsend(f, c);
}

static int
call_send(struct dw_future *f, const char *fn, const void *arg, size_t len,
          int send_ms)
{
	size_t nl = fn ? strlen(fn) : 0;
	if (nl == 0 || nl > WIRE_NAME_MAX)
		return rt_set_err(0, "invalid function name"), DW_EINVAL;
	if (len > conn_max_payload - wire_call_prefix(nl)) {
		char msg[200];
		wire_too_big(msg, sizeof msg, "an argument", len,
		             conn_max_payload - wire_call_prefix(nl));
		return rt_set_err(0, "%s", msg), DW_ETOOBIG;
	}
	rtr_user_thread();
	/* the whole send, opening a link to a worker included; "call
	 * issued" (DW_EV_CALL) is in the record that ends it */
	int pushed = rtr_wait_begin(DWT_STATE_BLOCKING_SEND, RTR_WAIT_PUSH);
	uint32_t ev = 0;
	int err = call_send_in(f, fn, nl, arg, len, send_ms, &ev);
	rtr_wait_end_ev(&pushed, ev ? DW_EV_CALL : 0, ev);
	return err;
}

/* A call of this process to itself runs here, in the calling thread. */
static int
call_local(struct dw_future *f, const char *fn, const void *arg, size_t len)
{
	size_t nl = fn ? strlen(fn) : 0;
	struct wire_call c = {.mode = (uint8_t)f->mode,
	                      .name_len = (uint16_t)nl,
	                      .name = fn,
	                      .arg = arg,
	                      .arg_len = len};
	dw_reply r;
	if (call_run(&c, &r) != 0) {
		if (f->mode == WIRE_MODE_DO)
			rt_log("process %d: %s", rt.myid, r.err);
		free(r.owned ? r.data : NULL);
		pthread_mutex_lock(&rt.lock);
		fut_fail(f, DW_EREMOTE, rt.myid, r.err);
		pthread_mutex_unlock(&rt.lock);
		return DW_OK;
	}
	f->buf = r.data;
	f->off = 0;
	f->len = r.len;
	f->have = 1;
	f->state = F_READY;
	return DW_OK;
}

int
call_start(int pid, int mode, const char *fn, const void *arg, size_t len,
           dw_future **out, int send_ms)
{
	*out = NULL;
	if (rt.role == RT_NONE)
		return rt_set_err(0, "dw_init has not been called"), DW_ESTATE;
	struct dw_future *f = fut_new(pid, mode);
	if (!f)
		return DW_ENOMEM;
	int err = pid == rt.myid ? call_local(f, fn, arg, len)
	                         : call_send(f, fn, arg, len, send_ms);
	if (err != DW_OK) {
		pthread_mutex_lock(&rt.lock);
		fut_unref(f);
		pthread_mutex_unlock(&rt.lock);
		return err;
	}
	*out = f;
	return DW_OK;
}

DW_API int
dw_remotecall(int pid, const char *fn, const void *arg, size_t len,
              dw_future **out)
{
	return call_start(pid, WIRE_MODE_KEEP, fn, arg, len, out, -1);
}

DW_API int
dw_remotecall_wait(int pid, const char *fn, const void *arg, size_t len,
                   dw_future **out)
{
	RTR_WAITS(DWT_STATE_WAITING_MESSAGE);
	int err = call_start(pid, WIRE_MODE_KEEP, fn, arg, len, out, -1);
	if (err == DW_OK && (err = dw_future_wait(*out)) != DW_OK) {
		dw_future_free(*out);
		*out = NULL;
	}
	return err;
}

DW_API int
dw_remote_do_timeout(int pid, const char *fn, const void *arg, size_t len,
                     int timeout_ms)
{
	dw_future *f;
	int err = call_start(pid, WIRE_MODE_DO, fn, arg, len, &f,
	                     timeout_ms < 0 ? -1 : timeout_ms);
	if (err == DW_OK)
		dw_future_free(f);
	return err;
}

DW_API int
dw_remote_do(int pid, const char *fn, const void *arg, size_t len)
{
	return dw_remote_do_timeout(pid, fn, arg, len, -1);
}

DW_API int
dw_remotecall_fetch_timeout(int pid, const char *fn, const void *arg,
                            size_t len, void **res, size_t *reslen,
                            int timeout_ms)
{
	RTR_WAITS(DWT_STATE_WAITING_MESSAGE);
	dw_future *f;
	*res = NULL;
	*reslen = 0;
	uint64_t t0 = rt_now_ms();
	int err = call_start(pid, WIRE_MODE_FETCH, fn, arg, len, &f,
	                     timeout_ms < 0 ? -1 : timeout_ms);
	if (err != DW_OK)
		return err;
	if (timeout_ms >= 0) { /* what the send left of it */
		uint64_t spent = rt_now_ms() - t0;
		timeout_ms =
		    spent >= (uint64_t)timeout_ms ? 0 : timeout_ms - (int)spent;
	}
	pthread_mutex_lock(&rt.lock);
	err = fut_wait_locked(f, timeout_ms);
	if (f->reading) {
		conn_drop_reader(f->conn);
		f->reading = 0;
	}
	if (err == DW_ETIMEDOUT) {
		if (pend_take(f->id))
			f->refs--;
		f->op = OP_NONE;
		rt_set_err(pid, "no result from process %d within %d ms", pid,
		           timeout_ms);
	} else if ((err = fut_result_err(f)) == DW_OK) {
		if (f->conn) /* not a call to this process itself */
			rtr_comm(DWT_RECV | DWT_LOGICAL, pid, f->id, 1, f->len);
		*reslen = f->len;
		if (f->off == 0) {
			*res = f->buf;
			f->buf = NULL;
		} else if ((*res = malloc(f->len ? f->len : 1))) {
			memcpy(*res, f->buf + f->off, f->len);
		} else {
			err = DW_ENOMEM;
		}
	}
	fut_unref(f);
	pthread_mutex_unlock(&rt.lock);
	return err;
}

DW_API int
dw_remotecall_fetch(int pid, const char *fn, const void *arg, size_t len,
                    void **res, size_t *reslen)
{
	return dw_remotecall_fetch_timeout(pid, fn, arg, len, res, reslen, -1);
}

DW_API int
dw_async(const char *fn, const void *arg, size_t len, dw_future **out)
{
	if (!out)
		return DW_EINVAL;
	return call_async(rt.myid, 1, fn, arg, len, NULL, NULL, out);
}

/* ---- calls with a completion notice, for pools and pmap ---- */

/* A local job: an asynchronous call of this process to itself, run by
 * an executor so that the caller can wait for it with a timeout. */
struct ljob {
	struct job j; /* j.from is NULL */
	struct dw_future *f;
};

static int
call_queue_local(struct dw_future *f, const char *fn, const void *arg,
                 size_t len)
{
	size_t nl = fn ? strlen(fn) : 0;
	if (nl == 0 || nl > WIRE_NAME_MAX)
		return rt_set_err(0, "invalid function name"), DW_EINVAL;
	struct ljob *l = calloc(1, sizeof *l);
	unsigned char *p = malloc(wire_call_prefix(nl) + len);
	if (!l || !p) {
		free(l);
		free(p);
		return DW_ENOMEM;
	}
	wire_put_call(p, WIRE_MODE_FETCH, fn, nl);
	if (len)
		memcpy(p + wire_call_prefix(nl), arg, len);
	wire_parse_call(p, wire_call_prefix(nl) + len, &l->j.call, NULL, 0);
	l->j.payload = p;
	l->j.len = wire_call_prefix(nl) + len;
	l->f = f;
	pthread_mutex_lock(&rt.lock);
	f->refs++;
	f->op = OP_CALL;
	if (!rt.jobs_tail)
		rt.jobs_tail = &rt.jobs;
	*rt.jobs_tail = &l->j;
	rt.jobs_tail = &l->j.next;
	exec_ensure_locked(NULL);
	pthread_cond_signal(&rt.jobs_cv);
	pthread_mutex_unlock(&rt.lock);
	return DW_OK;
}

/* An executor ran a local job (or the runtime ends: rc < 0, r NULL). */
void
call_local_done(struct job *j, int rc, dw_reply *r)
{
	struct ljob *l = (struct ljob *)j;
	struct dw_future *f = l->f;
	pthread_mutex_lock(&rt.lock);
	if (!r) {
		fut_fail(f, DW_EEXITED, rt.myid, "the runtime has ended");
	} else if (rc != 0) {
		fut_fail(f, DW_EREMOTE, rt.myid, r->err);
	} else {
		free(f->buf);
		f->buf = r->owned ? r->data : NULL;
		r->owned = 0;
		f->off = 0;
		f->len = f->buf ? r->len : 0;
		f->have = 1;
		f->state = F_READY;
		f->op = OP_NONE;
		pthread_cond_broadcast(&f->cv);
		fut_notify(f);
	}
	fut_unref(f);
	pthread_mutex_unlock(&rt.lock);
	free(l->j.payload);
	free(l);
}

int
call_async(int pid, int keep, const char *fn, const void *arg, size_t len,
           call_notify_fn notify, void *ctx, dw_future **out)
{
	*out = NULL;
	if (rt.role == RT_NONE)
		return rt_set_err(0, "dw_init has not been called"), DW_ESTATE;
	rtr_user_thread();
	struct dw_future *f =
	    fut_new(pid, keep ? WIRE_MODE_KEEP : WIRE_MODE_FETCH);
	if (!f)
		return DW_ENOMEM;
	f->notify = notify;
	f->notify_ctx = ctx;
	int err = pid == rt.myid ? call_queue_local(f, fn, arg, len)
	                         : call_send(f, fn, arg, len, CALL_SEND_FORCE);
	if (err != DW_OK) {
		pthread_mutex_lock(&rt.lock);
		fut_unref(f);
		pthread_mutex_unlock(&rt.lock);
		return err;
	}
	*out = f;
	return DW_OK;
}

/* rt.lock held (a notice) or not (the owner of a completed future). */
