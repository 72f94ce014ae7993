/*
 * Remote calls: the function registry, futures, the frames of a call on
 * both sides, and a worker's executors.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/rt.h"
#include "runtime/rtrace.h"
#include "runtime/work.h"

enum fut_state { F_PENDING = 0, F_READY, F_FAILED };
/* Futures of requests (REQ frames answered by ANSWER), never on the wire
 * as a call mode. */
#define MODE_REQ 16
enum { KEPT_RUNNING = 0, KEPT_DONE, KEPT_FAILED };
enum fut_op { OP_NONE = 0, OP_CALL, OP_FETCH };

struct dw_future {
	uint64_t id;
	int pid;
	int state;
	int op;        /* what the pending table waits for */
	int mode;      /* WIRE_MODE_* of the call */
	int remote;    /* the result is kept by the worker */
	int have;      /* the result is here */
	int user_gone; /* dw_future_free was called */
	int refs;      /* the user's, and the pending table's */
	int err, errpid;
	char *errmsg;
	unsigned char *buf; /* payload holding the result */
	size_t off, len;
	pthread_cond_t cv;
	struct dw_future *hnext;
	struct dw_future *rprev, *rnext; /* ready list: kept remotely */
	int in_ready;
	struct conn *conn;     /* where its frames go (never freed before the
	                          runtime ends) */
	int reading;           /* the calling thread holds conn's read right */
	int whence;            /* an imported reference: the caller's id */
	int imported;          /* its result is fetched from pid as a holder */
	call_notify_fn notify; /* told when it completes (rt.lock held) */
	void *notify_ctx;
	char fn[64]; /* the user function it runs, for a worker's death */
};

/* Broadcast whenever any future completes, for dw_future_waitany. */
static pthread_cond_t fut_any_cv;
static pthread_once_t fut_any_once = PTHREAD_ONCE_INIT;

/* Futures whose result is kept remotely and not fetched, in the order
 * their calls completed (rt.lock): a fetch also asks for the ones after
 * it, so that fetching many results costs one round trip, not many. */
static struct dw_future *ready_head, *ready_tail;
#define FETCH_AHEAD 255

struct dw_reply {
	void *data;
	size_t len;
	int owned;
	char err[512];
	int failed;
	void *keep[8]; /* what dw_args decoded, freed when the call ends */
	int nkeep;
	void **more; /* beyond keep, malloc'd */
	int nmore;
};

/* The process a running function answers to and its name (call_run). */
static __thread int call_caller;
static __thread const char *call_name;
static __thread size_t call_name_len;
/* dw_everywhere_load is running constructors: dw_register is allowed. */
static __thread int call_loading;

/* ---- function registry ---- */

struct fnent {
	struct fnent *next;
	dw_fn fn;
	char name[];
};

static struct fnent *fns;
static pthread_mutex_t fns_lock = PTHREAD_MUTEX_INITIALIZER;

DW_API int
dw_register(const char *name, dw_fn fn)
{
	size_t n = name ? strlen(name) : 0;
	if (!fn || n == 0 || n > WIRE_NAME_MAX)
		return rt_set_err(0,
		                  "dw_register: no function or a name of "
		                  "0 or over %d bytes",
		                  WIRE_NAME_MAX),
		       DW_EINVAL;
	if (rt.role != RT_NONE && !call_loading && !call_lookup(name, n) &&
	    strncmp(name, "dwork:", 6))
		return rt_set_err(
		           0,
		           "dw_register(\"%s\") after dw_init: workers "
		           "already running would not know it; register "
		           "before dw_init (DW_REGISTER), or put it in a "
		           "shared object loaded with "
		           "dw_everywhere_load",
		           name),
		       DW_ESTATE;
	pthread_mutex_lock(&fns_lock);
	int err = DW_OK;
	for (struct fnent *e = fns; e; e = e->next)
		if (!strcmp(e->name, name))
			err = e->fn == fn ? DW_OK : DW_EEXIST;
	struct fnent *e = NULL;
	if (err == DW_OK && !call_lookup(name, n) &&
	    !(e = malloc(sizeof *e + n + 1)))
		err = DW_ENOMEM;
	if (e) {
		memcpy(e->name, name, n + 1);
		e->fn = fn;
		e->next = fns;
		__atomic_store_n(&fns, e, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&fns_lock);
	if (e && rtr_on)
		rtr_label_function(name);
	return err;
}

void
call_set_loading(int on)
{
	call_loading = on;
}

/* Lock-free: entries are only ever prepended. */
dw_fn
call_lookup(const char *name, size_t len)
{
	for (struct fnent *e = __atomic_load_n(&fns, __ATOMIC_ACQUIRE); e;
	     e = e->next)
		if (strlen(e->name) == len && !memcmp(e->name, name, len))
			return e->fn;
	return NULL;
}

void
call_each_function(void (*fn)(const char *name))
{
	for (struct fnent *e = __atomic_load_n(&fns, __ATOMIC_ACQUIRE); e;
	     e = e->next)
		fn(e->name);
}

/* FNV-1a: the same id for the same name in every process. */
DW_API uint32_t
dw_function_id(const char *name)
{
	uint32_t h = 2166136261u;
	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	return h ? h : 1;
}

static uint32_t
call_fn_id(const char *name, size_t len)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 16777619u;
	return h ? h : 1;
}

/* ---- replies ---- */

static void
reply_release(dw_reply *r)
{
	for (int i = 0; i < r->nkeep; i++)
		free(r->keep[i]);
	for (int i = 0; i < r->nmore; i++)
		free(r->more[i]);
	free(r->more);
	r->nkeep = r->nmore = 0;
	r->more = NULL;
}

/* Keeps p until the call ends; -1 (p freed) when out of memory. */
int
call_reply_hold(dw_reply *r, void *p)
{
	if (r->nkeep < 8) {
		r->keep[r->nkeep++] = p;
		return 0;
	}
	void **m = realloc(r->more, (size_t)(r->nmore + 1) * sizeof *m);
	if (!m) {
		free(p);
		return -1;
	}
	r->more = m;
	r->more[r->nmore++] = p;
	return 0;
}

int
call_caller_pid(void)
{
	return call_caller > 0 ? call_caller : rt.myid;
}

/* The running function's name into buf (empty outside one). */
const char *
call_current(char *buf, size_t len)
{
	snprintf(buf, len, "%.*s", (int)call_name_len,
	         call_name ? call_name : "");
	return buf;
}

DW_API int
dw_reply_set(dw_reply *r, const void *data, size_t len)
{
	void *p = malloc(len ? len : 1);
	if (!p)
		return DW_ENOMEM;
	if (len)
		memcpy(p, data, len);
	return dw_reply_take(r, p, len);
}

DW_API int
dw_reply_take(dw_reply *r, void *data, size_t len)
{
	if (r->owned)
		free(r->data);
	r->data = data;
	r->len = len;
	r->owned = 1;
	return DW_OK;
}

DW_API int
dw_reply_error(dw_reply *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->err, sizeof r->err, fmt, ap);
	va_end(ap);
	r->failed = 1;
	return -1;
}

int
call_is_carrier(const char *name, size_t len)
{
	return len > 6 && !memcmp(name, "dwork:", 6);
}

/* The function a call is for in the trace: a carrier's user function. */
static uint32_t
call_event_id(const char *fn, size_t nl, const void *arg, size_t len)
{
	const unsigned char *p = arg;
	if (!call_is_carrier(fn, nl) || len < 2)
		return call_fn_id(fn, nl);
	size_t un = wire_get_u16(p);
	return un && un <= len - 2 ? call_fn_id((const char *)p + 2, un)
	                           : call_fn_id(fn, nl);
}

/* The user function a call runs (a carrier's inner one), kept so that
 * a worker's death can name what it was running. */
static void
call_user_name(struct dw_future *f, const char *fn, size_t nl, const void *arg,
               size_t len)
{
	const unsigned char *p = arg;
	size_t un = call_is_carrier(fn, nl) && len >= 2 ? wire_get_u16(p) : 0;
	if (un && un <= len - 2)
		snprintf(f->fn, sizeof f->fn, "%.*s", (int)un,
		         (const char *)p + 2);
	else
		snprintf(f->fn, sizeof f->fn, "%.*s", (int)nl, fn);
}

/*
 * Runs a registered function; on failure *msg is set.  Every run of a
 * user function, whatever carried it, passes here: it is Running and
 * carries its name (DW_EV_FUNCTION).  A carrier (dwork:pmap, …) is the
 * runtime's own work around the user functions it runs: Overhead, and
 * the carrier marks itself with DW_EV_BATCH.
 */
static int
call_run(const struct wire_call *c, dw_reply *r)
{
	dw_fn fn = call_lookup(c->name, c->name_len);
	memset(r, 0, sizeof *r);
	if (!fn) {
		snprintf(r->err, sizeof r->err,
		         "function '%.*s' is not registered", (int)c->name_len,
		         c->name);
		return -1;
	}
	int carrier = call_is_carrier(c->name, c->name_len);
	uint32_t id = carrier ? 0 : call_fn_id(c->name, c->name_len);
	rtr_push(carrier ? DWT_STATE_OVERHEAD : DWT_STATE_RUNNING);
	if (id)
		rtr_event(DW_EV_FUNCTION, id);
	const char *oname = call_name;
	size_t olen = call_name_len;
	if (!carrier)
		call_name = c->name, call_name_len = c->name_len;
	int rc = fn(c->arg, c->arg_len, r);
	call_name = oname, call_name_len = olen;
	reply_release(r);
	if (id)
		rtr_event(DW_EV_FUNCTION, 0);
	rtr_pop();
	if (rc != 0 && !r->err[0])
		snprintf(r->err, sizeof r->err, "function '%.*s' failed (%d)",
		         (int)c->name_len, c->name, rc);
	return rc != 0 ? -1 : 0;
}

/* ---- the pending table: call id -> future (rt.lock) ---- */

static size_t
fm_slot(const struct futmap *m, uint64_t id)
{
	return (size_t)((id * 0x9e3779b97f4a7c15u) >> 20) & (m->nb - 1);
}

static int
fm_grow(struct futmap *m)
{
	size_t nb = m->nb ? m->nb * 2 : 1024;
	struct dw_future **b = calloc(nb, sizeof *b);
	if (!b)
		return -1;
	struct futmap nm = {b, nb, m->n};
	for (size_t i = 0; i < m->nb; i++)
		for (struct dw_future *f = m->b[i], *n; f; f = n) {
			n = f->hnext;
			size_t s = fm_slot(&nm, f->id);
			f->hnext = b[s];
			b[s] = f;
		}
	free(m->b);
	*m = nm;
	return 0;
}

static int
fm_put(struct futmap *m, struct dw_future *f)
{
	if (m->n + 1 > 2 * m->nb && fm_grow(m) < 0)
		return -1;
	size_t s = fm_slot(m, f->id);
	f->hnext = m->b[s];
	m->b[s] = f;
	m->n++;
	f->refs++;
	return 0;
}

static struct dw_future *
fm_take(struct futmap *m, uint64_t id)
{
	if (!m->nb)
		return NULL;
	for (struct dw_future **p = &m->b[fm_slot(m, id)]; *p;
	     p = &(*p)->hnext) {
		struct dw_future *f = *p;
		if (f->id == id) {
			*p = f->hnext;
			m->n--;
			return f;
		}
	}
	return NULL;
}

/* ---- kept results (callee side): (caller, call id) -> result (rt.lock)
 * ---- */

static size_t
km_slot(size_t nb, int from, uint64_t id)
{
	uint64_t key = id ^ ((uint64_t)(uint32_t)from << 40);
	return (size_t)((key * 0x9e3779b97f4a7c15u) >> 20) & (nb - 1);
}

static int
km_put(struct keptmap *m, struct kept *k)
{
	if (m->n + 1 > 2 * m->nb) {
		size_t nb = m->nb ? 2 * m->nb : 1024;
		struct kept **b = calloc(nb, sizeof *b);
		if (!b)
			return -1;
		for (size_t i = 0; i < m->nb; i++)
			for (struct kept *e = m->b[i], *n; e; e = n) {
				n = e->next;
				size_t s = km_slot(nb, e->from, e->id);
				e->next = b[s];
				b[s] = e;
			}
		free(m->b);
		m->b = b;
		m->nb = nb;
	}
	size_t s = km_slot(m->nb, k->from, k->id);
	k->next = m->b[s];
	m->b[s] = k;
	m->n++;
	return 0;
}

static struct kept **
km_slot_of(struct keptmap *m, int from, uint64_t id)
{
	if (!m->nb)
		return NULL;
	for (struct kept **p = &m->b[km_slot(m->nb, from, id)]; *p;
	     p = &(*p)->next)
		if ((*p)->id == id && (*p)->from == from)
			return p;
	return NULL;
}

static struct kept *
km_find(struct keptmap *m, int from, uint64_t id)
{
	struct kept **p = km_slot_of(m, from, id);
	return p ? *p : NULL;
}

static struct kept *
km_take(struct keptmap *m, int from, uint64_t id)
{
	struct kept **p = km_slot_of(m, from, id);
	if (!p)
		return NULL;
	struct kept *k = *p;
	*p = k->next;
	m->n--;
	return k;
}

static void call_fail_peer_locked(int pid, int err, const char *msg);
static void exec_block_begin_locked(void);
static void exec_block_end_locked(void);
static int call_read_turn(struct conn *c, int ms);

/* ---- futures ---- */

static struct dw_future *
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

static void
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

static void
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
static void
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

static void
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

static void
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
static int
call_read_turn(struct conn *c, int ms)
{
	char why[256] = "connection closed";
	int r;
	/* Waiting for bytes keeps the thread's state (idle, waiting);
	 * handling them is Send Receive. */
	if (!c->ssl && ms >= CONN_RECV_TIMEOUT_MS && !c->in_big &&
	    c->rlen - c->rpos < WIRE_HDR) {
		/* one blocking recv, as a plain client would do (not under
		 * TLS: conn_read below also drains what the SSL object holds,
		 * which no epoll event would announce) */
		r = conn_recv_blocking(c);
		if (r > 0) {
			rtr_push(DWT_STATE_SEND_RECEIVE);
			conn_hold(c);
			r = conn_parse_buffered(c, call_on_frame, NULL, why,
			                        sizeof why);
			conn_release(c);
			rtr_pop();
		}
	} else if ((r = conn_wait_readable(c, ms)) > 0) {
		rtr_push(DWT_STATE_SEND_RECEIVE);
		r = loop_read_conn(c, why, sizeof why) < 0 ? -1 : 0;
		rtr_pop();
	}
	conn_drop_reader(c);
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
static int
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

static int
fut_result_err(struct dw_future *f)
{
	if (f->state != F_FAILED)
		return DW_OK;
	rt_set_err(f->errpid, "%s", f->errmsg ? f->errmsg : "failed");
	return f->err;
}

/* ---- sending a call ---- */

/* The frame of f could not be sent: f is no longer pending. */
static int
call_unsend(struct dw_future *f, struct conn *c)
{
	if (f->reading)
		conn_drop_reader(c);
	f->reading = 0;
	pthread_mutex_lock(&rt.lock);
	if (fm_take(&rt.pending, f->id))
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

/* Registers f as pending under a new id and sends the frame. */
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
	/* the whole send, opening a link to a worker included */
	RTR_IN(DWT_STATE_BLOCKING_SEND);
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
	if (f->op == OP_CALL && fm_put(&rt.pending, f) < 0) {
		pthread_mutex_unlock(&rt.lock);
		flow_credit(c, bytes);
		return DW_ENOMEM;
	}
	pthread_mutex_unlock(&rt.lock);
	call_user_name(f, fn, nl, arg, len);
	rtr_event(DW_EV_CALL, call_event_id(fn, nl, arg, len));
	rtr_comm(DWT_SEND | DWT_LOGICAL | DWT_PHYSICAL, f->pid, f->id, 0, len);
	err = conn_send_msg(c, WIRE_CALL, f->id, pre, wire_call_prefix(nl), arg,
	                    len);
	if (err != DW_OK)
		flow_credit(c, bytes);
	return err == DW_OK ? DW_OK : call_unsend(f, c);
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

static int
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
		if (fm_take(&rt.pending, f->id))
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

static int imp_wait(dw_future *f, int timeout_ms);
static int imp_fetch(dw_future *f, int timeout_ms);
static int imp_isready(dw_future *f);
static void imp_release(dw_future *f);

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
		if (fm_put(&rt.pending, g) < 0)
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
		       -DW_EINVAL;
	if (i < 0)
		return rt_set_err(0,
		                  "none of %d futures completed within "
		                  "%d ms",
		                  n, timeout_ms),
		       -DW_ETIMEDOUT;
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

DW_API int
dw_async(const char *fn, const void *arg, size_t len, dw_future **out)
{
	if (!out)
		return DW_EINVAL;
	return call_async(rt.myid, 1, fn, arg, len, NULL, NULL, out);
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
	if (fm_put(&rt.pending, f) < 0) {
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
			if (fm_take(&rt.pending, f->id))
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

/* ---- calls with a completion notice, for pools and pmap ---- */

/* A local job: an asynchronous call of this process to itself, run by
 * an executor so that the caller can wait for it with a timeout. */
struct ljob {
	struct job j; /* j.from is NULL */
	struct dw_future *f;
};

static void exec_ensure_locked(struct conn *from);

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
static void
call_local_done(struct ljob *l, int rc, dw_reply *r)
{
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

int
call_invoke(const char *name, size_t nlen, const void *arg, size_t len,
            void **res, size_t *reslen, char *err, size_t errlen)
{
	struct wire_call c = {.mode = WIRE_MODE_FETCH,
	                      .name_len = (uint16_t)nlen,
	                      .name = name,
	                      .arg = arg,
	                      .arg_len = len};
	dw_reply r;
	*res = NULL;
	*reslen = 0;
	if (call_run(&c, &r) != 0) {
		snprintf(err, errlen, "%s", r.err);
		if (r.owned)
			free(r.data);
		return -1;
	}
	if (r.owned) {
		*res = r.data;
		*reslen = r.len;
	}
	return 0;
}

/* ---- futures as references that travel ---- */

static int
imp_req(dw_future *f, int op, int timeout_ms, void **res, size_t *len)
{
	unsigned char b[12];
	wire_put_u32(b, (uint32_t)f->whence);
	wire_put_u64(b + 4, f->id);
	return req_call(f->pid, op, b, sizeof b, NULL, 0, timeout_ms, res, len);
}

/* Records a final failure of an imported future. */
static int
imp_settle(dw_future *f, int err)
{
	if (err == DW_OK || err == DW_ETIMEDOUT)
		return err;
	pthread_mutex_lock(&rt.lock);
	if (f->state != F_FAILED)
		fut_fail(f, err, dw_errpid(), dw_errmsg());
	pthread_mutex_unlock(&rt.lock);
	return err;
}

static int
imp_wait(dw_future *f, int timeout_ms)
{
	pthread_mutex_lock(&rt.lock);
	int st = f->state;
	int err = fut_result_err(f);
	pthread_mutex_unlock(&rt.lock);
	if (st != F_PENDING)
		return err;
	err = imp_settle(f, imp_req(f, REQ_FUT_WAIT, timeout_ms, NULL, NULL));
	if (err == DW_OK) {
		pthread_mutex_lock(&rt.lock);
		if (f->state == F_PENDING)
			f->state = F_READY;
		pthread_mutex_unlock(&rt.lock);
	}
	return err;
}

static int
imp_fetch(dw_future *f, int timeout_ms)
{
	pthread_mutex_lock(&rt.lock);
	int have = f->have || f->state == F_FAILED;
	pthread_mutex_unlock(&rt.lock);
	if (have)
		return DW_OK;
	void *r;
	size_t n;
	int err = imp_settle(f, imp_req(f, REQ_FUT_FETCH, timeout_ms, &r, &n));
	if (err != DW_OK)
		return err;
	pthread_mutex_lock(&rt.lock);
	if (!f->have) {
		free(f->buf);
		f->buf = r;
		r = NULL;
		f->off = 0;
		f->len = n;
		f->have = 1;
		f->state = F_READY;
	}
	pthread_mutex_unlock(&rt.lock);
	free(r);
	return DW_OK;
}

static int
imp_isready(dw_future *f)
{
	pthread_mutex_lock(&rt.lock);
	int done = f->state != F_PENDING;
	pthread_mutex_unlock(&rt.lock);
	if (done)
		return 1;
	void *r = NULL;
	size_t n = 0;
	int ready = imp_req(f, REQ_FUT_READY, 10000, &r, &n) == DW_OK &&
	            n == 1 && ((unsigned char *)r)[0];
	free(r);
	return ready;
}

static void
imp_release(dw_future *f)
{
	unsigned char b[13];
	b[0] = REF_FUTURE;
	wire_put_u32(b + 1, (uint32_t)f->whence);
	wire_put_u64(b + 5, f->id);
	req_post(f->pid, REQ_RELEASE, b, sizeof b, NULL, 0);
}

/* Registers `to` as a holder of the result at its owner. */
static int
fut_hold(int where, int whence, uint64_t id, int to)
{
	unsigned char b[17];
	b[0] = REF_FUTURE;
	wire_put_u32(b + 1, (uint32_t)whence);
	wire_put_u64(b + 5, id);
	wire_put_u32(b + 13, (uint32_t)to);
	return req_call(where, REQ_HOLD, b, sizeof b, NULL, 0, 30000, NULL,
	                NULL);
}

/* Encodes a future whose value (or error) is here. */
static int
fut_export_value(dw_future *f, int to, void **bytes, size_t *len)
{
	struct ref r = {.kind = REF_FUTURE,
	                .where = rt.myid,
	                .whence = rt.myid,
	                .to = to,
	                .has_value = 1};
	pthread_mutex_lock(&rt.lock);
	if (f->state == F_FAILED) {
		r.err = f->err;
		r.value = (const unsigned char *)(f->errmsg ? f->errmsg : "");
		r.vlen = strlen((const char *)r.value);
	} else {
		r.value = f->buf ? f->buf + f->off : NULL;
		r.vlen = f->len;
	}
	int err = ref_encode(&r, bytes, len);
	pthread_mutex_unlock(&rt.lock);
	return err;
}

DW_API int
dw_future_export(dw_future *f, int to, void **bytes, size_t *len)
{
	*bytes = NULL;
	*len = 0;
	if (!f || to < 1 || f->mode == WIRE_MODE_DO)
		return rt_set_err(0, "not a future that can travel"), DW_EINVAL;
	pthread_mutex_lock(&rt.lock);
	int local = f->have || f->state == F_FAILED;
	struct ref r = {.kind = REF_FUTURE,
	                .where = f->pid,
	                .id = f->id,
	                .whence = f->imported ? f->whence : rt.myid,
	                .to = to};
	pthread_mutex_unlock(&rt.lock);
	if (local)
		return fut_export_value(f, to, bytes, len);
	int err = fut_hold(r.where, r.whence, r.id, to);
	if (err == DW_ENOTFOUND && !f->imported) {
		/* the call failed and its error is on the way here */
		if (dw_future_wait_timeout(f, 30000) != DW_ETIMEDOUT &&
		    f->state == F_FAILED)
			return fut_export_value(f, to, bytes, len);
	}
	if (err != DW_OK)
		return err;
	err = ref_encode(&r, bytes, len);
	if (err != DW_OK) { /* give the hold back */
		unsigned char b[13];
		b[0] = REF_FUTURE;
		wire_put_u32(b + 1, (uint32_t)r.whence);
		wire_put_u64(b + 5, r.id);
		req_post(r.where, REQ_RELEASE, b, sizeof b, NULL, 0);
	}
	return err;
}

DW_API int
dw_future_import(const void *bytes, size_t len, dw_future **out)
{
	struct ref r;
	*out = NULL;
	int err = ref_decode(bytes, len, REF_FUTURE, &r);
	if (err != DW_OK)
		return err;
	struct dw_future *f = fut_new(r.where, WIRE_MODE_KEEP);
	if (!f)
		return DW_ENOMEM;
	f->id = r.id;
	f->whence = r.whence;
	if (r.has_value && r.err) {
		char msg[600];
		snprintf(msg, sizeof msg, "%.*s",
		         (int)(r.vlen > 500 ? 500 : r.vlen),
		         (const char *)r.value);
		pthread_mutex_lock(&rt.lock);
		fut_fail(f, r.err, r.where, msg);
		pthread_mutex_unlock(&rt.lock);
	} else if (r.has_value) {
		if (!(f->buf = malloc(r.vlen ? r.vlen : 1))) {
			pthread_mutex_lock(&rt.lock);
			fut_unref(f);
			pthread_mutex_unlock(&rt.lock);
			return DW_ENOMEM;
		}
		if (r.vlen)
			memcpy(f->buf, r.value, r.vlen);
		f->len = r.vlen;
		f->have = 1;
		f->state = F_READY;
	} else {
		f->imported = 1;
	}
	*out = f;
	return DW_OK;
}

/* ---- frames arriving at the caller: RESULT, DONE ---- */

static void
call_complete(struct conn *c, const struct wire_hdr *h, unsigned char *p)
{
	pthread_mutex_lock(&rt.lock);
	struct dw_future *f = fm_take(&rt.pending, h->ref);
	if (!f) { /* abandoned: timed out or freed */
		pthread_mutex_unlock(&rt.lock);
		if (h->type == WIRE_DONE)
			conn_send_msg(c, WIRE_FREE, h->ref, NULL, 0, NULL, 0);
		free(p);
		return;
	}
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
			err = st && st < DW_ERR_COUNT ? (int)st : DW_EPROTO;
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
static void
call_fail_peer_locked(int pid, int err, const char *msg)
{
	for (size_t i = 0; i < rt.pending.nb; i++) {
		struct dw_future **pp = &rt.pending.b[i];
		while (*pp) {
			struct dw_future *f = *pp;
			if (f->pid != pid) {
				pp = &f->hnext;
				continue;
			}
			*pp = f->hnext;
			rt.pending.n--;
			char m[400];
			if (f->op == OP_CALL && f->fn[0])
				snprintf(m, sizeof m, "%s while running '%s'",
				         msg, f->fn);
			fut_fail(f, err, pid,
			         f->op == OP_CALL && f->fn[0] ? m : msg);
			fut_unref(f);
		}
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
	for (size_t i = 0; i < rt.pending.nb; i++)
		while (rt.pending.b[i]) {
			struct dw_future *f = rt.pending.b[i];
			rt.pending.b[i] = f->hnext;
			fut_fail(f, DW_EEXITED, f->pid,
			         "the runtime has ended");
			fut_unref(f);
		}
	rt.pending.n = 0;
	free(rt.pending.b);
	rt.pending.b = NULL;
	rt.pending.nb = 0;
	pthread_mutex_unlock(&rt.lock);
}

/* ---- frames arriving at the callee ---- */

/* A failed call's RESULT; an error other than DW_EREMOTE travels as a
 * code before the message. */
static void
call_reply_code(struct conn *c, uint64_t id, int err, const char *msg)
{
	struct frame f;
	unsigned char st[4];
	wire_put_u32(st, (uint32_t)err);
	int coded = err != DW_EREMOTE;
	frame_init(&f, WIRE_RESULT, id, st, coded ? 4 : 0, msg, strlen(msg), 0);
	f.head[5] = WIRE_FLAG_ERROR | (coded ? WIRE_FLAG_CODE : 0);
	conn_send(c, &f, 0);
}

static void
call_reply_error(struct conn *c, uint64_t id, const char *msg)
{
	call_reply_code(c, id, DW_EREMOTE, msg);
}

/* Sends a result, or DW_ETOOBIG naming its size when the link cannot
 * carry it: that call fails, the link and the worker live on. */
static void
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

/* Executors: at least the configured number; more while some block in
 * dwork calls and jobs wait (rt.lock). */
static int exec_idle, exec_blocked, exec_reading, exec_running;
static __thread int exec_thread;
#define EXEC_MAX 256

static void *exec_main(void *arg);

static int
exec_spawn_locked(void)
{
	pthread_t *v = realloc(rt.execs, (size_t)(rt.nexecs + 1) * sizeof *v);
	if (!v)
		return DW_ENOMEM;
	rt.execs = v;
	if (!rt.jobs_tail)
		rt.jobs_tail = &rt.jobs;
	if (pthread_create(&rt.execs[rt.nexecs], NULL, exec_main,
	                   (void *)(intptr_t)(rt.nexecs + 1)) != 0)
		return DW_ENOMEM;
	rtr_thread_wait_started(); /* it takes no lock before it says so */
	rt.nexecs++;
	exec_idle++; /* counted idle until it takes a job */
	return DW_OK;
}

/* A job read from link `from` (NULL: a local one) was queued (rt.lock
 * held): make sure some executor will run it.  An idle executor reading
 * the master's link only sees jobs when its read turn ends, so a job from
 * elsewhere needs an executor that waits for jobs. */
static void
exec_ensure_locked(struct conn *from)
{
	int base = rt.opts.executors > 0 ? rt.opts.executors : 1;
	if (rt.exiting || exec_idle - exec_reading > 0)
		return;
	if (exec_reading > 0 && from && from == rt.master)
		return; /* the executor reading that link read this job */
	if (rt.nexecs < base ||
	    ((exec_blocked > 0 || exec_reading > 0) && rt.nexecs < EXEC_MAX))
		exec_spawn_locked();
}

static void
exec_block_begin_locked(void)
{
	if (!exec_thread)
		return;
	exec_blocked++;
	if (rt.jobs)
		exec_ensure_locked(NULL);
}

static void
exec_block_end_locked(void)
{
	if (exec_thread)
		exec_blocked--;
}

void
exec_block_begin(void)
{
	if (!exec_thread)
		return;
	pthread_mutex_lock(&rt.lock);
	exec_block_begin_locked();
	pthread_mutex_unlock(&rt.lock);
}

void
exec_block_end(void)
{
	if (!exec_thread)
		return;
	pthread_mutex_lock(&rt.lock);
	exec_block_end_locked();
	pthread_mutex_unlock(&rt.lock);
}

static struct kept *
kept_new(int from, uint64_t id)
{
	struct kept *k = calloc(1, sizeof *k);
	if (k) {
		k->from = from;
		k->id = id;
		k->state = KEPT_RUNNING;
	}
	return k;
}

static void
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
	j->next = NULL;
	j->from = c;
	j->id = h->ref;
	j->payload = p;
	j->len = h->payload;
	j->kept = NULL;
	rtr_comm(DWT_RECV | DWT_PHYSICAL, c->peer, h->ref, 0, h->payload);
	if (j->call.mode == WIRE_MODE_KEEP &&
	    !(j->kept = kept_new(c->peer, h->ref))) {
		flow_consumed(c, h->payload, 1, CONN_MORE);
		call_reply_error(c, h->ref, "out of memory keeping the result");
		free(p);
		free(j);
		return;
	}
	pthread_mutex_lock(&rt.lock);
	if (j->kept && km_put(&rt.kept, j->kept) < 0) {
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

/* ---- the owner's side of future references: holders other than the
 * caller, and requests parked until the call completes ---- */

struct kwait {
	struct kwait *next;
	struct req_src src;
	int op;
};

struct kext {
	struct holders h;
	struct kwait *waiters;
	char *errmsg;
	int errcode;     /* the failure's dw_err (0: DW_EREMOTE) */
	int whence_done; /* the caller fetched or freed its copy */
};

static struct kext *
kept_ext(struct kept *k)
{
	if (!k->ext)
		k->ext = calloc(1, sizeof(struct kext));
	return k->ext;
}

static void
kept_free(struct kept *k)
{
	struct kext *x = k->ext;
	if (x) {
		holders_free(&x->h);
		free(x->errmsg);
		free(x);
	}
	free(k->data);
	free(k);
}

/* Frees k when nobody holds it any more (rt.lock held). */
static void
kept_maybe_free(struct kept *k)
{
	struct kext *x = k->ext;
	if (k->state == KEPT_RUNNING || (x && (!x->whence_done || x->h.total)))
		return;
	if (!x && k->state == KEPT_DONE)
		return; /* the caller still holds it */
	km_take(&rt.kept, k->from, k->id);
	kept_free(k);
}

/* Answers one parked or immediate reference request (rt.lock held: the
 * answer only copies and queues). */
static void
kept_answer(struct kept *k, const struct req_src *s, int op)
{
	struct kext *x = k->ext;
	if (op == REQ_FUT_READY) {
		unsigned char r = k->state != KEPT_RUNNING;
		req_answer(s, &r, 1);
	} else if (k->state == KEPT_FAILED) {
		req_answer_err(s, x && x->errcode ? x->errcode : DW_EREMOTE,
		               "process %d: %s", rt.myid,
		               x && x->errmsg ? x->errmsg : "the call failed");
	} else if (op == REQ_FUT_WAIT) {
		req_answer(s, NULL, 0);
	} else {
		req_answer(s, k->data, k->len);
	}
}

/* The call of k completed: answer whoever waits (rt.lock held). */
static void
kept_completed(struct kept *k)
{
	struct kext *x = k->ext;
	struct kwait *w = x ? x->waiters : NULL, *n;
	if (x)
		x->waiters = NULL;
	for (; w; w = n) {
		n = w->next;
		kept_answer(k, &w->src, w->op);
		conn_unref(w->src.c);
		free(w);
	}
}

static void
kept_on_hold(const struct req_src *s, int op, int whence, uint64_t id,
             int holder)
{
	struct kept *k = km_find(&rt.kept, whence, id);
	struct kext *x = k ? kept_ext(k) : NULL;
	if (!k ||
	    (x && x->whence_done && !x->h.total && k->state != KEPT_FAILED)) {
		if (op == REQ_HOLD)
			req_answer_err(
			    s, DW_ENOTFOUND,
			    "process %d keeps no result of call %llu "
			    "of process %d (fetched or freed)",
			    rt.myid, (unsigned long long)id, whence);
		return;
	}
	if (!x) {
		if (op == REQ_HOLD)
			req_answer_err(s, DW_ENOMEM, "out of memory");
		return;
	}
	if (op == REQ_HOLD) {
		if (holders_add(&x->h, holder, 1) < 0)
			req_answer_err(s, DW_ENOMEM, "out of memory");
		else
			req_answer(s, NULL, 0);
		return;
	}
	holders_del(&x->h, s->pid);
	kept_maybe_free(k);
}

void
call_on_ref_req(const struct req_src *s, int op, const unsigned char *b,
                size_t len)
{
	int hold = op == REQ_HOLD || op == REQ_RELEASE;
	size_t need = hold ? (op == REQ_HOLD ? 17u : 13u) : 12u;
	if (len < need) {
		req_answer_err(s, DW_EPROTO,
		               "request of %zu bytes is too short", len);
		return;
	}
	const unsigned char *q = hold ? b + 1 : b;
	int whence = (int)wire_get_u32(q);
	uint64_t id = wire_get_u64(q + 4);
	pthread_mutex_lock(&rt.lock);
	if (hold) {
		kept_on_hold(s, op, whence, id,
		             op == REQ_HOLD ? (int)wire_get_u32(b + 13) : 0);
		pthread_mutex_unlock(&rt.lock);
		return;
	}
	struct kept *k = km_find(&rt.kept, whence, id);
	struct kwait *w = NULL;
	if (!k) {
		req_answer_err(s, DW_ENOTFOUND,
		               "process %d keeps no result of call %llu of "
		               "process %d",
		               rt.myid, (unsigned long long)id, whence);
	} else if (k->state != KEPT_RUNNING || op == REQ_FUT_READY) {
		kept_answer(k, s, op);
	} else if (!kept_ext(k) || !(w = malloc(sizeof *w))) {
		req_answer_err(s, DW_ENOMEM, "out of memory");
	} else {
		struct kext *x = k->ext;
		w->src = *s;
		conn_ref(s->c); /* parked: the answer's way back */
		w->op = op;
		w->next = x->waiters;
		x->waiters = w;
	}
	pthread_mutex_unlock(&rt.lock);
}

/* Drops parked waiters matching (pid, id) or all of pid (id 0). */
static void
kept_drop_waiters(struct kept *k, int pid, uint64_t id, int answer)
{
	struct kext *x = k->ext;
	if (!x)
		return;
	for (struct kwait **pp = &x->waiters; *pp;) {
		struct kwait *w = *pp;
		if (w->src.pid != pid || (id && w->src.id != id)) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		if (answer)
			req_answer_err(&w->src, DW_ETIMEDOUT,
			               "the call had not completed in time");
		conn_unref(w->src.c);
		free(w);
	}
}

static void
kept_each(void (*fn)(struct kept *k, int pid, uint64_t id), int pid,
          uint64_t id)
{
	pthread_mutex_lock(&rt.lock);
	for (size_t i = 0; i < rt.kept.nb; i++)
		for (struct kept *k = rt.kept.b[i], *n; k; k = n) {
			n = k->next;
			fn(k, pid, id);
		}
	pthread_mutex_unlock(&rt.lock);
}

static void
kept_cancel_one(struct kept *k, int pid, uint64_t id)
{
	kept_drop_waiters(k, pid, id, 1);
}

void
call_on_ref_cancel(int pid, uint64_t id)
{
	kept_each(kept_cancel_one, pid, id);
}

static void
kept_gone_one(struct kept *k, int pid, uint64_t id)
{
	(void)id;
	kept_drop_waiters(k, pid, 0, 0);
	struct kext *x = k->ext;
	if (x)
		holders_drop(&x->h, pid);
	if (k->from == pid) {
		if (!(x = kept_ext(k)))
			return;
		x->whence_done = 1;
	}
	kept_maybe_free(k);
}

/* A process has gone: its holds, waits and own results go too. */
void
call_refs_gone(int pid)
{
	kept_each(kept_gone_one, pid, 0);
}

size_t
call_kept_count(void)
{
	pthread_mutex_lock(&rt.lock);
	size_t n = rt.kept.n;
	pthread_mutex_unlock(&rt.lock);
	return n;
}

static void
call_fetch_kept(struct conn *c, const struct wire_hdr *h, int drop_only)
{
	pthread_mutex_lock(&rt.lock);
	struct kept *k = km_find(&rt.kept, c->peer, h->ref);
	struct kext *x = k ? k->ext : NULL;
	void *data = NULL;
	size_t len = 0;
	int ok = k && k->state == KEPT_DONE && !(x && x->whence_done);
	if (ok && x && x->h.total) { /* others hold it: a copy */
		x->whence_done = 1;
		len = k->len;
		if (!drop_only && (data = malloc(len ? len : 1)))
			memcpy(data, k->data, len);
		ok = drop_only || data;
	} else if (ok) {
		km_take(&rt.kept, k->from, k->id);
		data = k->data;
		len = k->len;
		k->data = NULL;
		kept_free(k);
	}
	pthread_mutex_unlock(&rt.lock);
	if (!drop_only)
		rtr_comm(DWT_RECV | DWT_LOGICAL | DWT_PHYSICAL, c->peer, h->ref,
		         2, 0);
	if (drop_only || !ok) {
		if (!drop_only)
			call_reply_error(c, h->ref,
			                 "no result is kept for "
			                 "this call");
		free(data);
		return;
	}
	rtr_comm(DWT_SEND | DWT_LOGICAL | DWT_PHYSICAL, c->peer, h->ref, 3,
	         len);
	call_send_result(c, h->ref, data, len, 1, 0);
}

/* ---- frames arriving at a requester: ANSWER ---- */

static void
call_answer(struct conn *c, const struct wire_hdr *h, unsigned char *p)
{
	if (h->payload < 4) {
		conn_fail(c, "answer of %u bytes is too short", h->payload);
		free(p);
		return;
	}
	uint32_t st = wire_get_u32(p);
	pthread_mutex_lock(&rt.lock);
	struct dw_future *f = fm_take(&rt.pending, h->ref);
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
		fut_fail(f, st < DW_ERR_COUNT ? (int)st : DW_EPROTO, c->peer,
		         msg);
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

void
call_on_frame(void *arg, struct conn *c, const struct wire_hdr *h,
              unsigned char *p)
{
	(void)arg;
	if (rt.role == RT_MASTER) {
		pthread_mutex_lock(&rt.lock);
		struct worker *w = cl_find(c->peer);
		if (w)
			w->last_heard = rt_now_ms();
		pthread_mutex_unlock(&rt.lock);
	}
	switch (h->type) {
	case WIRE_RESULT:
	case WIRE_DONE:
		call_complete(c, h, p);
		return;
	case WIRE_CALL:
		call_enqueue(c, h, p);
		return;
	case WIRE_REQ:
		req_on_frame(c, h->ref, p, h->payload);
		return;
	case WIRE_ANSWER:
		call_answer(c, h, p);
		return;
	case WIRE_CANCEL:
		req_on_cancel(c->peer, h->ref);
		break;
	case WIRE_FETCH:
	case WIRE_FREE:
		call_fetch_kept(c, h, h->type == WIRE_FREE);
		break;
	case WIRE_PING:
		conn_send_msg(c, WIRE_PONG, h->ref, p, h->payload, NULL, 0);
		break;
	case WIRE_PONG:
		break;
	case WIRE_CREDIT:
		flow_credit(c, h->ref);
		break;
	case WIRE_INTERRUPT:
		if (rt.role == RT_WORKER && c == rt.master)
			call_note_interrupt();
		else
			conn_fail(c,
			          "INTERRUPT from process %d, not the master",
			          c->peer);
		break;
	case WIRE_CLOCK_PING:
		rtr_on_clock_ping(c, h->ref, p, h->payload);
		break;
	case WIRE_CLOCK_PONG:
		if (rt.role == RT_MASTER)
			rtr_on_pong(c, p, h->payload);
		break;
	case WIRE_SYNC:
		if (rt.role == RT_WORKER && c == rt.master)
			rtr_on_sync(p, h->payload);
		break;
	case WIRE_FILE:
		if (rt.role == RT_MASTER)
			rtr_on_file(c, h->ref, p, h->payload);
		break;
	case WIRE_EXIT:
		if (rt.role != RT_WORKER || c != rt.master) {
			conn_fail(c, "EXIT from process %d, not the master",
			          c->peer);
			break;
		}
		pthread_mutex_lock(&rt.lock);
		rt.exiting = 1;
		pthread_cond_broadcast(&rt.cv);
		pthread_cond_broadcast(&rt.jobs_cv);
		pthread_mutex_unlock(&rt.lock);
		break;
	default:
		conn_fail(c, "unexpected frame type %d", h->type);
	}
	free(p);
}

/* ---- executors ---- */

/* Interrupts (dw_interrupt: an INTERRUPT frame from the master, or
 * SIGINT) count up a generation; a remote call was interrupted when the
 * generation moved while it ran.  Each executor remembers the one its
 * call started in, so a call starting elsewhere clears nothing. */
static unsigned interrupt_gen;
static __thread unsigned exec_gen;
static __thread int exec_in_call;

DW_API int
dw_interrupted(void)
{
	return exec_in_call &&
	       __atomic_load_n(&interrupt_gen, __ATOMIC_RELAXED) != exec_gen;
}

void
call_note_interrupt(void)
{
	__atomic_fetch_add(&interrupt_gen, 1, __ATOMIC_RELAXED);
}

/* The call that ran was interrupted: its result (if any) is dropped and
 * its caller gets DW_EINTR. */
static int
exec_was_interrupted(const struct job *j, dw_reply *r, int *rc)
{
	exec_in_call = 0;
	if (__atomic_load_n(&interrupt_gen, __ATOMIC_RELAXED) == exec_gen ||
	    j->call.mode == WIRE_MODE_DO)
		return 0;
	if (r->owned)
		free(r->data);
	r->owned = 0;
	r->data = NULL;
	r->len = 0;
	snprintf(r->err, sizeof r->err,
	         "the call of '%.*s' was interrupted (dw_interrupt)",
	         (int)j->call.name_len, j->call.name);
	*rc = -1;
	return 1;
}

/* Replies wait for one write while more jobs are queued.  Each executor
 * remembers the links it left replies queued on and writes them before
 * it goes idle or when no job is left (jobs come from several links). */
static __thread struct conn *exec_deferred[8];
static __thread int exec_ndeferred;

static int
exec_more(void)
{
	return __atomic_load_n(&rt.jobs, __ATOMIC_RELAXED) != NULL ? CONN_MORE
	                                                           : 0;
}

static int
exec_defer(struct conn *c)
{
	if (!exec_more())
		return 0;
	for (int i = 0; i < exec_ndeferred; i++)
		if (exec_deferred[i] == c)
			return CONN_MORE;
	if (exec_ndeferred == 8)
		return 0;
	conn_ref(c); /* kept past its job (exec_kick_all drops it) */
	exec_deferred[exec_ndeferred++] = c;
	return CONN_MORE;
}

static void
exec_kick_all(void)
{
	for (int i = 0; i < exec_ndeferred; i++) {
		conn_kick(exec_deferred[i]);
		conn_unref(exec_deferred[i]);
	}
	exec_ndeferred = 0;
}

/* The kept call ran: keep its result (or its failure for other holders)
 * and tell the caller. */
static void
exec_keep(struct job *j, dw_reply *r, int rc, int code)
{
	struct kept *k = j->kept;
	if (rc == 0 && (uint64_t)r->len > j->from->max_payload) {
		/* no link could fetch it: fail the call now, keep nothing */
		wire_too_big(r->err, sizeof r->err, "a result", r->len,
		             j->from->max_payload);
		rc = -1;
		code = DW_ETOOBIG;
	}
	pthread_mutex_lock(&rt.lock);
	struct kext *x = k->ext;
	if (rc == 0) {
		k->data = r->data;
		k->len = r->len;
		r->owned = 0;
		k->state = KEPT_DONE;
	} else {
		k->state = KEPT_FAILED;
		if (x) {
			x->whence_done = 1; /* the caller gets the error */
			free(x->errmsg);
			x->errmsg = strdup(r->err);
			x->errcode = code;
		}
	}
	kept_completed(k);
	kept_maybe_free(k); /* a failure, or a caller that died meanwhile */
	pthread_mutex_unlock(&rt.lock);
	if (rc != 0) {
		call_reply_code(j->from, j->id, code, r->err);
		return;
	}
	struct frame f;
	frame_init(&f, WIRE_DONE, j->id, NULL, 0, NULL, 0, 0);
	conn_send(j->from, &f, exec_defer(j->from));
}

static void
exec_job(struct job *j)
{
	dw_reply r;
	call_caller = j->from ? j->from->peer : rt.myid;
	if (!j->from) { /* a local job */
		int rc = call_run(&j->call, &r);
		call_local_done((struct ljob *)j, rc, &r);
		if (r.owned)
			free(r.data);
		return;
	}
	exec_gen = __atomic_load_n(&interrupt_gen, __ATOMIC_RELAXED);
	exec_in_call = 1;
	rtr_comm(DWT_RECV | DWT_LOGICAL, j->from->peer, j->id, 0, j->len);
	int rc = call_run(&j->call, &r);
	int code = exec_was_interrupted(j, &r, &rc) ? DW_EINTR : DW_EREMOTE;
	/* its bytes go back to the sender, before (and with) its reply */
	flow_consumed(j->from, j->len, !exec_more(),
	              j->call.mode == WIRE_MODE_DO ? exec_defer(j->from)
	                                           : CONN_MORE);
	if (j->call.mode != WIRE_MODE_DO)
		rtr_comm(
		    DWT_SEND | DWT_LOGICAL | DWT_PHYSICAL, j->from->peer, j->id,
		    1, rc == 0 && j->call.mode == WIRE_MODE_FETCH ? r.len : 0);
	if (j->call.mode == WIRE_MODE_KEEP) {
		exec_keep(j, &r, rc, code);
	} else if (rc != 0) {
		if (j->call.mode == WIRE_MODE_DO)
			rt_log("process %d: remote_do: %s", rt.myid, r.err);
		else
			call_reply_code(j->from, j->id, code, r.err);
	} else if (j->call.mode == WIRE_MODE_FETCH) {
		int own = r.owned;
		r.owned = 0;
		call_send_result(j->from, j->id, r.data, r.len, own,
		                 exec_defer(j->from));
	}
	if (r.owned)
		free(r.data);
	if (!exec_more()) {
		exec_kick_all();
		conn_kick(j->from);
	}
	conn_unref(j->from);
	free(j->payload);
	free(j);
}

/* An idle executor reads the master's link itself when nobody else does,
 * so a call wakes one thread, not two.  Not once the worker has links to
 * other workers: their jobs would wait for the end of its read turn.
 * Returns 1 if it took a turn. */
static int
exec_idle_read(void)
{
	struct conn *c = rt.master;
	if (!c || peer_links() || !conn_take_reader(c))
		return 0;
	exec_reading++;
	pthread_mutex_unlock(&rt.lock);
	call_read_turn(c, 1000);
	pthread_mutex_lock(&rt.lock);
	exec_reading--;
	return 1;
}

static void *
exec_main(void *arg)
{
	char name[32];
	snprintf(name, sizeof name, "executor %d", (int)(intptr_t)arg);
	rtr_thread_start(name, DWT_STATE_IDLE);
	rtr_thread_started();
	exec_thread = 1;
	pthread_mutex_lock(&rt.lock);
	for (;;) {
		while (!rt.jobs && !rt.exiting) {
			if (exec_ndeferred) { /* before going idle */
				pthread_mutex_unlock(&rt.lock);
				exec_kick_all();
				pthread_mutex_lock(&rt.lock);
				continue;
			}
			if (!exec_idle_read())
				rt_cond_wait(&rt.jobs_cv, &rt.lock, NULL,
				             DWT_STATE_IDLE);
		}
		struct job *j = rt.jobs;
		if (!j)
			break;
		rt.jobs = j->next;
		if (!rt.jobs)
			rt.jobs_tail = &rt.jobs;
		exec_idle--;
		exec_running++;
		pthread_mutex_unlock(&rt.lock);
		exec_job(j);
		pthread_mutex_lock(&rt.lock);
		exec_running--;
		exec_idle++;
	}
	exec_idle--;
	pthread_mutex_unlock(&rt.lock);
	return NULL;
}

/* A worker told to exit: lets the calls already running or queued end
 * (a remote_do sent just before the exit, its trace records with it),
 * for up to ms. */
void
call_drain(int ms)
{
	for (int i = 0; i < ms; i++) {
		pthread_mutex_lock(&rt.lock);
		int busy = exec_running > 0 || rt.jobs != NULL;
		pthread_mutex_unlock(&rt.lock);
		if (!busy)
			return;
		usleep(1000);
	}
}

int
call_start_executors(int n)
{
	pthread_mutex_lock(&rt.lock);
	rt.jobs_tail = &rt.jobs;
	if (rt.opts.executors < n)
		rt.opts.executors = n;
	int err = DW_OK;
	for (int i = 0; i < n && err == DW_OK; i++)
		err = exec_spawn_locked();
	pthread_mutex_unlock(&rt.lock);
	return err;
}

/* The master's executors end with the runtime (a worker's end with the
 * process).  Calls still queued are dropped. */
void
call_stop_executors(void)
{
	pthread_mutex_lock(&rt.lock);
	rt.exiting = 1;
	pthread_cond_broadcast(&rt.jobs_cv);
	int n = rt.nexecs;
	pthread_t *v = rt.execs;
	rt.execs = NULL;
	rt.nexecs = 0;
	pthread_mutex_unlock(&rt.lock);
	for (int i = 0; i < n; i++)
		pthread_join(v[i], NULL);
	free(v);
	pthread_mutex_lock(&rt.lock);
	struct job *jobs = rt.jobs;
	rt.jobs = NULL;
	rt.jobs_tail = &rt.jobs;
	for (struct job *j = jobs, *nx; j; j = nx) {
		nx = j->next;
		if (!j->from) {
			pthread_mutex_unlock(&rt.lock);
			call_local_done((struct ljob *)j, -1, NULL);
			pthread_mutex_lock(&rt.lock);
			continue;
		}
		if (j->kept && km_take(&rt.kept, j->kept->from, j->kept->id))
			kept_free(j->kept);
		conn_unref(j->from);
		free(j->payload);
		free(j);
	}
	for (size_t i = 0; i < rt.kept.nb; i++)
		for (struct kept *k = rt.kept.b[i], *nx; k; k = nx) {
			nx = k->next;
			kept_free(k);
		}
	free(rt.kept.b);
	memset(&rt.kept, 0, sizeof rt.kept);
	exec_idle = exec_blocked = exec_reading = 0;
	rt.exiting = 0;
	pthread_mutex_unlock(&rt.lock);
}
