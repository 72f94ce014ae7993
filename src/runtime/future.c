/*
 * Futures: the pending table (call id -> future), waiting for one or
 * many, fetching results kept by a worker, and failing what a process
 * that went had pending.  rt.lock guards every future's fields, the
 * pending table and the ready list.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/call.h"
#include "runtime/idmap.h"
#include "runtime/rt.h"
#include "runtime/rtrace.h"
#include "runtime/work.h"

/* Broadcast whenever any future completes, for dw_future_waitany. */
static pthread_cond_t fut_any_cv;
static pthread_once_t fut_any_once = PTHREAD_ONCE_INIT;

/* Futures whose result is kept remotely and not fetched, in the order
 * their calls completed (rt.lock): a fetch also asks for the ones after
 * it, so that fetching many results costs one round trip, not many. */
static struct dw_future *ready_head, *ready_tail;
#define FETCH_AHEAD 255

/* ---- the pending table: call id -> future (rt.lock) ---- */

/* Futures waiting for a RESULT, DONE or ANSWER frame, by call id; each
 * entry holds a reference to its future.  Guarded by rt.lock. */
static struct idmap pending = IDMAP_INIT;

int
pend_put(struct dw_future *f)
{
	if (idmap_put(&pending, f->id, f) < 0)
		return -1;
	f->refs++;
	return 0;
}

struct dw_future *
pend_take(uint64_t id)
{
	return idmap_take(&pending, id);
}

size_t
pend_count(void)
{
	return pending.n;
}

/* ---- futures ---- */

struct dw_future *
fut_new(int pid, int mode)
{
	struct dw_future *f = calloc(1, sizeof *f);
	if (!f)
		return NULL;
	f->pid = pid;
	f->mode = mode;
	f->refs = 1;
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&f->cv, &a);
	pthread_condattr_destroy(&a);
	return f;
}

void
ready_add(struct dw_future *f)
{
	f->rnext = NULL;
	f->rprev = ready_tail;
	if (ready_tail)
		ready_tail->rnext = f;
	else
		ready_head = f;
	ready_tail = f;
	f->in_ready = 1;
}

void
ready_del(struct dw_future *f)
{
	if (!f->in_ready)
		return;
	if (f->rprev)
		f->rprev->rnext = f->rnext;
	else
		ready_head = f->rnext;
	if (f->rnext)
		f->rnext->rprev = f->rprev;
	else
		ready_tail = f->rprev;
	f->in_ready = 0;
}

/* Drops a reference (rt.lock held). */
void
fut_unref(struct dw_future *f)
{
	if (--f->refs > 0)
		return;
	ready_del(f);
	conn_unref(f->conn);
	pthread_cond_destroy(&f->cv);
	free(f->buf);
	free(f->errmsg);
	free(f);
}

/* Tells whoever asked that f completed, once (rt.lock held). */
static void
fut_any_init(void)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&fut_any_cv, &a);
	pthread_condattr_destroy(&a);
}

void
fut_notify(struct dw_future *f)
{
	pthread_once(&fut_any_once, fut_any_init);
	pthread_cond_broadcast(&fut_any_cv);
	call_notify_fn fn = f->notify;
	if (fn) {
		f->notify = NULL;
		fn(f->notify_ctx, f);
	}
}

void
fut_fail(struct dw_future *f, int err, int pid, const char *msg)
{
	ready_del(f);
	f->state = F_FAILED;
	f->err = err;
	f->errpid = pid;
	free(f->errmsg);
	f->errmsg = strdup(msg);
	f->op = OP_NONE;
	pthread_cond_broadcast(&f->cv);
	fut_notify(f);
}

/*
 * One turn of reading a connection ourselves (the read right is held):
 * waits up to ms for bytes and hands the frames on.  Returns 0, or -1 when
 * the connection ended (it is then reported as lost).
 */
int
call_read_turn(struct conn *c, int ms)
{
	char why[256] = "connection closed";
	int r;
	/* Waiting for bytes and handling them keep the thread's state
	 * (idle, waiting): it reads for itself, its records need no state
	 * of their own (the I/O thread's handling is Send Receive). */
	if (!c->ssl && ms >= CONN_RECV_TIMEOUT_MS && !c->in_big &&
	    c->rlen - c->rpos < WIRE_HDR) {
		/* one blocking recv, as a plain client would do (not under
		 * TLS: conn_read below also drains what the SSL object holds,
		 * which no epoll event would announce) */
		r = conn_recv_blocking(c);
		if (r > 0) {
			conn_hold(c);
			r = conn_parse_buffered(c, disp_frame, NULL, why,
			                        sizeof why);
			conn_release(c);
		}
	} else if ((r = conn_wait_readable(c, ms)) > 0) {
		r = loop_read_conn(c, why, sizeof why) < 0 ? -1 : 0;
	}
	conn_drop_reader_soon(c);
	if (r < 0 && !c->closed)
		loop_conn_lost(c, why);
	return r;
}

static int
ms_left(const struct timespec *dl)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	long long ms = (long long)(dl->tv_sec - now.tv_sec) * 1000 +
	               (dl->tv_nsec - now.tv_nsec) / 1000000;
	return ms < 0 ? 0 : (ms > 1000 ? 1000 : (int)ms);
}

static int
fut_wait_loop(struct dw_future *f, int timeout_ms)
{
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	if (timeout_ms >= 0) {
		dl.tv_sec += timeout_ms / 1000;
		dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (dl.tv_nsec >= 1000000000L)
			dl.tv_sec++, dl.tv_nsec -= 1000000000L;
	}
	while (f->op != OP_NONE) {
		int reading =
		    f->reading || (f->conn && conn_take_reader(f->conn));
		f->reading = 0;
		if (reading) {
			pthread_mutex_unlock(&rt.lock);
			call_read_turn(f->conn,
			               timeout_ms < 0 ? 1000 : ms_left(&dl));
			pthread_mutex_lock(&rt.lock);
		} else if (timeout_ms < 0) {
			rt_cond_wait(&f->cv, &rt.lock, NULL,
			             DWT_STATE_WAITING_MESSAGE);
			continue;
		} else if (rt_cond_wait(&f->cv, &rt.lock, &dl,
		                        DWT_STATE_WAITING_MESSAGE) != 0 &&
		           f->op != OP_NONE) {
			return DW_ETIMEDOUT;
		}
		if (timeout_ms >= 0 && f->op != OP_NONE && ms_left(&dl) == 0)
			return DW_ETIMEDOUT;
	}
	return DW_OK;
}

/*
 * Waits while the future has an operation in flight (rt.lock held).  When
 * nobody else reads its connection, the waiting thread reads the reply
 * itself instead of sleeping until the I/O thread wakes it.
 */
int
fut_wait_locked(struct dw_future *f, int timeout_ms)
{
	if (f->op == OP_NONE)
		return DW_OK;
	/* also over the turns it reads its reply itself */
	int pushed =
	    rtr_wait_begin(DWT_STATE_WAITING_MESSAGE, RTR_WAIT_PRIMITIVE);
	exec_block_begin_locked();
	int err = fut_wait_loop(f, timeout_ms);
	exec_block_end_locked();
	rtr_wait_end(&pushed);
	return err;
}

int
fut_result_err(struct dw_future *f)
{
	if (f->state != F_FAILED)
		return DW_OK;
	rt_set_err(f->errpid, "%s", f->errmsg ? f->errmsg : "failed");
	return f->err;
}

DW_API int
dw_future_wait_timeout(dw_future *f, int timeout_ms)
{
	RTR_WAITS(DWT_STATE_WAITING_MESSAGE);
	if (f->imported)
		return imp_wait(f, timeout_ms);
	pthread_mutex_lock(&rt.lock);
	int was_pending = f->op == OP_CALL;
	int err = fut_wait_locked(f, timeout_ms);
	if (err == DW_ETIMEDOUT)
		rt_set_err(f->pid,
		           "process %d did not complete the call "
		           "within %d ms",
		           f->pid, timeout_ms);
	else
		err = fut_result_err(f);
	if (err == DW_OK && was_pending && f->remote)
		rtr_comm(DWT_RECV | DWT_LOGICAL, f->pid, f->id, 1, 0);
	pthread_mutex_unlock(&rt.lock);
	return err;
}

DW_API int
dw_future_wait(dw_future *f)
{
	return dw_future_wait_timeout(f, -1);
}

DW_API int
dw_future_isready(dw_future *f)
{
	if (f->imported)
		return imp_isready(f);
	pthread_mutex_lock(&rt.lock);
	int r = f->op == OP_NONE || (f->op == OP_FETCH);
	pthread_mutex_unlock(&rt.lock);
	return r;
}

/* Marks f and up to FETCH_AHEAD later ready futures of the same process
 * as being fetched; returns how many (rt.lock held). */
static int
fut_gather_fetch(struct dw_future *f, uint64_t *ids, int max)
{
	int n = 0;
	for (struct dw_future *g = f; g && n < max; g = g->rnext) {
		if (g != f &&
		    (g->pid != f->pid || g->op != OP_NONE || g->user_gone))
			continue;
		if (pend_put(g) < 0)
			break;
		g->op = OP_FETCH;
		ids[n++] = g->id;
	}
	return n;
}

/* Asks the worker for a kept result, and the results after it (rt.lock
 * held; released while sending).  The ids are the caller's own: no lock
 * may be held across the release, since cl_conn_of takes rt.lock again
 * (a shared array behind its own lock deadlocked two fetchers, one
 * holding rt.lock waiting for that lock, one holding it in cl_conn_of). */
static int
fut_request_fetch(struct dw_future *f)
{
	uint64_t ids[FETCH_AHEAD + 1];
	int err = DW_OK;
	int n = fut_gather_fetch(f, ids, FETCH_AHEAD + 1);
	if (n == 0)
		return DW_ENOMEM;
	pthread_mutex_unlock(&rt.lock);
	struct conn *c = cl_conn_of(f->pid, &err);
	if (c) {
		conn_hold(c);
		for (int i = 0; i < n && err == DW_OK; i++) {
			rtr_comm(DWT_SEND | DWT_LOGICAL | DWT_PHYSICAL, f->pid,
			         ids[i], 2, 0);
			err = conn_send_msg(c, WIRE_FETCH, ids[i], NULL, 0,
			                    NULL, 0);
		}
		conn_release(c);
		conn_unref(c);
	}
	pthread_mutex_lock(&rt.lock);
	if (err != DW_OK)
		call_fail_peer_locked(f->pid, DW_EEXITED, "worker has exited");
	return DW_OK;
}

DW_API int
dw_future_fetch_timeout(dw_future *f, const void **res, size_t *len,
                        int timeout_ms)
{
	RTR_WAITS(DWT_STATE_WAITING_MESSAGE);
	if (f->imported && imp_fetch(f, timeout_ms) == DW_ETIMEDOUT)
		return DW_ETIMEDOUT;
	pthread_mutex_lock(&rt.lock);
	int fetched_here = 0;
	int err = fut_wait_locked(f, timeout_ms);
	if (err == DW_OK && f->op == OP_FETCH)
		fetched_here = 1; /* read ahead by an earlier fetch */
	if (err == DW_OK && f->state == F_READY && !f->have && f->remote &&
	    f->op == OP_NONE) {
		fetched_here = 1;
		if (!f->in_ready)
			ready_add(f);
		err = fut_request_fetch(f);
		if (err == DW_OK)
			err = fut_wait_locked(f, timeout_ms);
	}
	if (err == DW_ETIMEDOUT)
		rt_set_err(f->pid, "no result from process %d within %d ms",
		           f->pid, timeout_ms);
	else if (err == DW_OK)
		err = fut_result_err(f);
	if (err == DW_OK) {
		*res = f->buf ? f->buf + f->off : NULL;
		*len = f->len;
		if (fetched_here)
			rtr_comm(DWT_RECV | DWT_LOGICAL, f->pid, f->id, 3,
			         f->len);
	}
	pthread_mutex_unlock(&rt.lock);
	return err;
}

DW_API int
dw_future_fetch(dw_future *f, const void **res, size_t *len)
{
	return dw_future_fetch_timeout(f, res, len, -1);
}

DW_API void
dw_future_free(dw_future *f)
{
	if (!f)
		return;
	if (f->imported)
		imp_release(f);
	pthread_mutex_lock(&rt.lock);
	int drop =
	    f->remote && !f->have && f->state == F_READY && f->op == OP_NONE;
	f->user_gone = 1;
	f->notify = NULL;
	ready_del(f);
	int pid = f->pid;
	uint64_t id = f->id;
	fut_unref(f);
	pthread_mutex_unlock(&rt.lock);
	int err;
	struct conn *c = drop ? cl_conn_of(pid, &err) : NULL;
	if (c)
		conn_send_msg(c, WIRE_FREE, id, NULL, 0, NULL, 0);
	conn_unref(c);
}

/* ---- waiting on many, local async ---- */

static void
dl_after(struct timespec *dl, int ms)
{
	clock_gettime(CLOCK_MONOTONIC, dl);
	dl->tv_sec += ms / 1000;
	dl->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (dl->tv_nsec >= 1000000000L)
		dl->tv_sec++, dl->tv_nsec -= 1000000000L;
}

static int
dl_passed(const struct timespec *dl)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > dl->tv_sec ||
	       (now.tv_sec == dl->tv_sec && now.tv_nsec >= dl->tv_nsec);
}

/* The first completed future (rt.lock held); -1 none, -2 none given.
 * *imported: some are imported (asked of their owner, unlocked). */
static int
fut_first_ready(dw_future *const *fs, int n, int *imported)
{
	int live = 0;
	*imported = 0;
	for (int i = 0; i < n; i++) {
		if (!fs[i])
			continue;
		live++;
		if (fs[i]->imported)
			*imported = 1;
		else if (fs[i]->op == OP_NONE || fs[i]->op == OP_FETCH)
			return i;
	}
	return live ? -1 : -2;
}

static int
fut_first_imported(dw_future *const *fs, int n)
{
	for (int i = 0; i < n; i++)
		if (fs[i] && fs[i]->imported && imp_isready(fs[i]) == 1)
			return i;
	return -1;
}

/* One sleep of waitany until a completion, the deadline, or (imported
 * futures are asked, not told) 20 ms (rt.lock held). */
static void
fut_any_sleep(const struct timespec *dl, int imported)
{
	struct timespec d = *dl, s;
	if (imported) {
		dl_after(&s, 20);
		if (!dl->tv_sec || s.tv_sec < d.tv_sec ||
		    (s.tv_sec == d.tv_sec && s.tv_nsec < d.tv_nsec))
			d = s;
	}
	pthread_once(&fut_any_once, fut_any_init);
	rt_cond_wait(&fut_any_cv, &rt.lock, d.tv_sec ? &d : NULL,
	             DWT_STATE_WAITING_MESSAGE);
}

DW_API int
dw_future_waitany(dw_future *const *fs, int n, int timeout_ms)
{
	RTR_WAITS(DWT_STATE_WAITING_MESSAGE);
	struct timespec dl = {0, 0};
	if (timeout_ms >= 0)
		dl_after(&dl, timeout_ms);
	int imported, i;
	pthread_mutex_lock(&rt.lock);
	exec_block_begin_locked();
	while ((i = fs && n > 0 ? fut_first_ready(fs, n, &imported) : -2) ==
	       -1) {
		if (imported) {
			pthread_mutex_unlock(&rt.lock);
			i = fut_first_imported(fs, n);
			pthread_mutex_lock(&rt.lock);
			if (i >= 0)
				break;
		}
		if (timeout_ms >= 0 && dl_passed(&dl))
			break;
		fut_any_sleep(&dl, imported);
	}
	exec_block_end_locked();
	pthread_mutex_unlock(&rt.lock);
	if (i == -2)
		return rt_set_err(0, "dw_future_waitany: no future given "
		                     "(every entry NULL, or n <= 0)"),
		       DW_EINVAL;
	if (i < 0)
		return rt_set_err(0,
		                  "none of %d futures completed within "
		                  "%d ms",
		                  n, timeout_ms),
		       DW_ETIMEDOUT;
	return i;
}

DW_API int
dw_future_waitall(dw_future *const *fs, int n, int timeout_ms)
{
	RTR_WAITS(DWT_STATE_WAITING_MESSAGE);
	struct timespec dl;
	dl_after(&dl, timeout_ms > 0 ? timeout_ms : 0);
	int first = DW_OK;
	for (int i = 0; fs && i < n; i++) {
		if (!fs[i])
			continue;
		int ms = -1;
		if (timeout_ms >= 0) {
			struct timespec now;
			clock_gettime(CLOCK_MONOTONIC, &now);
			long long l =
			    (long long)(dl.tv_sec - now.tv_sec) * 1000 +
			    (dl.tv_nsec - now.tv_nsec) / 1000000;
			ms = l < 0 ? 0 : (int)l;
		}
		int err = dw_future_wait_timeout(fs[i], ms);
		if (err == DW_ETIMEDOUT)
			return rt_set_err(
			           fs[i]->pid,
			           "future %d of %d (process %d) did not "
			           "complete within %d ms",
			           i, n, fs[i]->pid, timeout_ms),
			       DW_ETIMEDOUT;
		if (err != DW_OK && first == DW_OK)
			first = err;
	}
	if (first != DW_OK)
		for (int i = 0; i < n; i++)
			if (fs[i] && dw_future_wait_timeout(fs[i], 0) != DW_OK)
				return first; /* its message is the one set */
	return first;
}

int
call_result(dw_future *f, const void **res, size_t *len)
{
	if (f->state == F_FAILED) {
		rt_set_err(f->errpid, "%s", f->errmsg ? f->errmsg : "failed");
		return f->err;
	}
	*res = f->buf ? f->buf + f->off : NULL;
	*len = f->len;
	return DW_OK;
}

int
call_future_pid(const dw_future *f)
{
	return f->pid;
}

void *
call_take_result(dw_future *f, size_t *len)
{
	void *p = f->buf;
	*len = f->len;
	if (p && f->off)
		memmove(p, f->buf + f->off, f->len);
	f->buf = NULL;
	f->len = 0;
	return p ? p : malloc(1);
}

/* Fails every operation pending on pid (rt.lock held). */
void
call_fail_peer_locked(int pid, int err, const char *msg)
{
	size_t pos = 0;
	uint64_t id;
	for (struct dw_future *f; (f = idmap_next(&pending, &pos, &id));) {
		if (f->pid != pid)
			continue;
		idmap_take(&pending, id);
		char m[400];
		if (f->op == OP_CALL && f->fn[0])
			snprintf(m, sizeof m, "%s while running '%s'", msg,
			         f->fn);
		fut_fail(f, err, pid, f->op == OP_CALL && f->fn[0] ? m : msg);
		fut_unref(f);
	}
	for (struct dw_future *f = ready_head, *n; f; f = n) {
		n = f->rnext;
		if (f->pid == pid)
			fut_fail(f, err, pid, msg);
	}
}

/* Fails every operation pending on pid (rt.lock not held). */
void
call_fail_peer(int pid, int err, const char *msg)
{
	pthread_mutex_lock(&rt.lock);
	call_fail_peer_locked(pid, err, msg);
	pthread_mutex_unlock(&rt.lock);
}

void
call_fail_all(void)
{
	pthread_mutex_lock(&rt.lock);
	size_t pos = 0;
	uint64_t id;
	for (struct dw_future *f; (f = idmap_next(&pending, &pos, &id));) {
		idmap_take(&pending, id);
		fut_fail(f, DW_EEXITED, f->pid, "the runtime has ended");
		fut_unref(f);
	}
	idmap_fini(&pending);
	pthread_mutex_unlock(&rt.lock);
}
