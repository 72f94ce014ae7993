/*
 * pmap and the distributed loop (everywhere.c: dw_everywhere).  pmap hands out
 * batches of items as processes become free (a couple in flight per process); a
 * batch whose process dies runs again elsewhere, and each result is
 * stored once, so every item's result is delivered exactly once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/rt.h"
#include "runtime/optsize.h"
#include "runtime/wire_err.h"
#include "runtime/rtrace.h"
#include "runtime/work.h"

#define PMAP_DEPTH    2   /* batches in flight per process */
#define PMAP_AUTO_MAX 256 /* largest automatic batch */

/* ---- the remote side: one batch ---- */

struct obuf {
	unsigned char *p;
	size_t n, cap;
};

static int
ob_put(struct obuf *o, const void *d, size_t n)
{
	if (o->n + n > o->cap) {
		size_t c = o->cap ? o->cap : 256;
		while (c < o->n + n)
			c *= 2;
		unsigned char *q = realloc(o->p, c);
		if (!q)
			return -1;
		o->p = q;
		o->cap = c;
	}
	if (n)
		memcpy(o->p + o->n, d, n);
	o->n += n;
	return 0;
}

static int
ob_item(struct obuf *o, int status, const void *d, size_t n)
{
	unsigned char h[8];
	wire_put_u32(h, wire_err_put(status));
	wire_put_u32(h + 4, (uint32_t)n);
	return ob_put(o, h, 8) || ob_put(o, d, n) ? -1 : 0;
}

/* One item of a batch: runs it, or (full) says it was not run.  A
 * result the link cannot carry fails its own item with DW_ETOOBIG; one
 * that no longer fits beside the results before it (and 8 bytes for
 * each item after it) is dropped and the item marked DW_EAGAIN, to run
 * again in another batch; the first item of a batch is always kept, so
 * every batch delivers at least one result. */
static int
pmap_item(struct obuf *out, const char *name, size_t nl, const void *in,
          size_t il, uint64_t idx, int first, uint64_t after_bytes, int *full)
{
	if (*full)
		return ob_item(out, DW_EAGAIN, NULL, 0);
	void *res;
	size_t rl;
	char err[512];
	uint64_t cap = conn_max_payload;
	rtr_event(DW_EV_PMAP_ITEM, idx + 1);
	int rc = call_invoke(name, nl, in, il, &res, &rl, err, sizeof err);
	rtr_event(DW_EV_PMAP_ITEM, 0);
	int st = rc ? DW_EREMOTE : DW_OK;
	if (!rc && 8u + (uint64_t)rl > cap) {
		wire_too_big(err, sizeof err, "a result", rl, cap - 8u);
		st = DW_ETOOBIG;
	}
	const void *d = st == DW_OK ? res : err;
	size_t n = st == DW_OK ? rl : strlen(err);
	if (out->n + 8u + n + after_bytes > cap) {
		*full = 1;
		if (!first) {
			free(res);
			return ob_item(out, DW_EAGAIN, NULL, 0);
		}
	}
	int bad = ob_item(out, st, d, n);
	free(res);
	return bad;
}

/* Arg: u16 name length, name, u32 count, count x (u64 index, u32 length,
 * bytes).  Result: count x (u32 status, u32 length, bytes). */
static int
pmap_batch(const void *arg, size_t len, dw_reply *r)
{
	const unsigned char *p = arg;
	if (len < 6)
		return dw_reply_error(r, "malformed pmap batch");
	size_t nl = wire_get_u16(p), o = 2 + nl;
	if (nl == 0 || nl > WIRE_NAME_MAX || o + 4 > len)
		return dw_reply_error(r, "malformed pmap batch");
	const char *name = (const char *)p + 2;
	uint32_t count = wire_get_u32(p + o);
	o += 4;
	struct obuf out = {0};
	int full = 0;
	uint32_t outer = rtr_batch_begin(name, nl); /* its items' accounting */
	for (uint32_t i = 0; i < count; i++) {
		if (o + 12 > len || wire_get_u32(p + o + 8) > len - o - 12) {
			rtr_batch_end(outer);
			free(out.p);
			return dw_reply_error(r, "malformed pmap batch");
		}
		size_t il = wire_get_u32(p + o + 8);
		if (pmap_item(&out, name, nl, p + o + 12, il,
		              wire_get_u64(p + o), i == 0,
		              8u * (uint64_t)(count - i - 1), &full)) {
			rtr_batch_end(outer);
			free(out.p);
			return dw_reply_error(r, "out of memory");
		}
		o += 12 + il;
	}
	rtr_batch_end(outer);
	return dw_reply_take(r, out.p ? out.p : malloc(1), out.n);
}

static int
carry_batch(int kind, const void *arg, size_t len, dw_reply *r)
{
	rtr_event(DW_EV_BATCH, (uint64_t)kind);
	int rc = pmap_batch(arg, len, r);
	rtr_event(DW_EV_BATCH, 0);
	return rc;
}

static int
carry_pmap(const void *arg, size_t len, dw_reply *r)
{
	return carry_batch(DW_BATCH_PMAP, arg, len, r);
}

static int
carry_for(const void *arg, size_t len, dw_reply *r)
{
	return carry_batch(DW_BATCH_FOR, arg, len, r);
}

/* Arg: u16 name length, name, the user's argument; the result is the
 * user function's. */
static int
carry_one(int kind, const void *arg, size_t len, dw_reply *r)
{
	const unsigned char *p = arg;
	size_t nl = len >= 2 ? wire_get_u16(p) : 0;
	if (nl == 0 || nl > WIRE_NAME_MAX || nl > len - 2)
		return dw_reply_error(r, "malformed carried call");
	void *res;
	size_t rl;
	char err[512];
	rtr_event(DW_EV_BATCH, (uint64_t)kind);
	int rc = call_invoke((const char *)p + 2, nl, p + 2 + nl, len - 2 - nl,
	                     &res, &rl, err, sizeof err);
	rtr_event(DW_EV_BATCH, 0);
	if (rc)
		return dw_reply_error(r, "%s", err);
	return res ? dw_reply_take(r, res, rl) : 0;
}

static int
carry_everywhere(const void *arg, size_t len, dw_reply *r)
{
	return carry_one(DW_BATCH_EVERYWHERE, arg, len, r);
}

static int
carry_spawn(const void *arg, size_t len, dw_reply *r)
{
	return carry_one(DW_BATCH_SPAWN, arg, len, r);
}

static void __attribute__((constructor)) pmap_register(void)
{
	dw_register(PMAP_FN, carry_pmap);
	dw_register(FOR_FN, carry_for);
	dw_register(EVERYWHERE_FN, carry_everywhere);
	dw_register(SPAWN_FN, carry_spawn);
}

void *
work_carry(const char *fn, const void *arg, size_t len, size_t *out)
{
	size_t nl = fn ? strlen(fn) : 0;
	if (nl == 0 || nl > WIRE_NAME_MAX) {
		rt_set_err(0, "invalid function name");
		return NULL;
	}
	unsigned char *p = malloc(2 + nl + len);
	if (!p) {
		rt_set_err(0, "out of memory");
		return NULL;
	}
	wire_put_u16(p, (uint16_t)nl);
	memcpy(p + 2, fn, nl);
	if (len)
		memcpy(p + 2 + nl, arg, len);
	*out = 2 + nl + len;
	return p;
}

/* ---- the caller's side ---- */

struct pm_batch {
	struct pm_batch *next, *dnext;
	struct pm *pm;
	struct pm_worker *w;
	size_t *idx;
	int n;
	int done;
	dw_future *f;
};

struct pm_worker {
	int id;
	int inflight;
	int dead;
};

struct pm {
	const char *fn;
	const char *carrier; /* PMAP_FN or FOR_FN */
	const dw_buf *in;
	size_t n;
	dw_result *out;
	unsigned char *delivered;
	int *tries;
	size_t next;           /* next item never sent */
	size_t *retry, nretry; /* items to send again */
	size_t left;           /* items without a result */
	struct pm_worker *ws;
	int nw, nlive;
	struct pm_batch *flight; /* batches in flight */
	struct pm_batch *dhead;  /* completed, not yet handled (rt.lock) */
	pthread_cond_t cv;       /* (rt.lock) */
	int batch, on_error, max_tries;
	int stop, first_err, first_pid;
	char first_msg[600];
};

static void
pm_notify(void *ctx, dw_future *f)
{
	(void)f;
	struct pm_batch *b = ctx;
	b->done = 1;
	b->dnext = b->pm->dhead;
	b->pm->dhead = b;
	pthread_cond_signal(&b->pm->cv);
}

static void
pm_set(struct pm *pm, size_t i, int err, int pid, const void *d, size_t n)
{
	if (pm->delivered[i])
		return; /* exactly once */
	dw_result *r = &pm->out[i];
	r->err = err;
	r->pid = pid;
	r->len = n;
	r->data = malloc(n + 1);
	if (r->data) {
		if (n)
			memcpy(r->data, d, n);
		((char *)r->data)[n] = 0;
	} else {
		r->err = DW_ENOMEM;
		r->len = 0;
	}
	if (err == DW_OK && !r->data)
		err = DW_ENOMEM;
	pm->delivered[i] = 1;
	pm->left--;
	if (err != DW_OK && pm->on_error == DW_PMAP_STOP && !pm->stop) {
		pm->stop = 1;
		pm->first_err = err;
		pm->first_pid = pid;
		snprintf(pm->first_msg, sizeof pm->first_msg, "item %zu: %.*s",
		         i, (int)(n > 500 ? 500 : n), (const char *)d);
	}
}

static void
pm_set_msg(struct pm *pm, size_t i, int err, int pid, const char *msg)
{
	pm_set(pm, i, err, pid, msg, strlen(msg));
}

/* The batch size: fixed, or a share of what is left that shrinks as the
 * items run out (guided self-scheduling). */
static size_t
pm_batch_size(const struct pm *pm)
{
	if (pm->batch > 0)
		return (size_t)pm->batch;
	size_t rest = pm->n - pm->next + pm->nretry;
	size_t b = rest / (4u * (size_t)(pm->nlive ? pm->nlive : 1));
	return b < 1 ? 1 : (b > PMAP_AUTO_MAX ? PMAP_AUTO_MAX : b);
}

static int
pm_has_work(const struct pm *pm)
{
	return !pm->stop && (pm->nretry || pm->next < pm->n);
}

static int
pm_encode(const struct pm *pm, const struct pm_batch *b, unsigned char **out,
          size_t *len)
{
	size_t nl = strlen(pm->fn), n = 2 + nl + 4;
	for (int i = 0; i < b->n; i++)
		n += 12 + pm->in[b->idx[i]].len;
	unsigned char *p = malloc(n), *q;
	if (!p)
		return DW_ENOMEM;
	wire_put_u16(p, (uint16_t)nl);
	memcpy(p + 2, pm->fn, nl);
	wire_put_u32(p + 2 + nl, (uint32_t)b->n);
	q = p + 6 + nl;
	for (int i = 0; i < b->n; i++) {
		const dw_buf *it = &pm->in[b->idx[i]];
		wire_put_u64(q, b->idx[i]);
		wire_put_u32(q + 8, (uint32_t)it->len);
		if (it->len)
			memcpy(q + 12, it->data, it->len);
		q += 12 + it->len;
	}
	*out = p;
	*len = n;
	return DW_OK;
}

static void
pm_requeue(struct pm *pm, struct pm_batch *b, const char *why)
{
	int again = 0;
	for (int i = 0; i < b->n; i++) {
		size_t k = b->idx[i];
		if (pm->delivered[k])
			continue;
		if (++pm->tries[k] >= pm->max_tries) {
			char msg[400];
			snprintf(msg, sizeof msg,
			         "ran %d times on processes "
			         "that died (last: %s)",
			         pm->tries[k], why);
			pm_set_msg(pm, k, DW_EEXITED, b->w->id, msg);
			continue;
		}
		pm->retry[pm->nretry++] = k;
		again++;
	}
	if (again)
		rtr_event(DW_EV_PMAP_RETRY, (uint64_t)again);
}

static void
pm_worker_dead(struct pm *pm, struct pm_worker *w)
{
	if (!w->dead) {
		w->dead = 1;
		pm->nlive--;
	}
}

/* Sends one batch to w; 0, or -1 when w turned out dead. */
static int
pm_send(struct pm *pm, struct pm_worker *w)
{
	struct pm_batch *b = calloc(1, sizeof *b);
	size_t want = pm_batch_size(pm);
	if (!b || !(b->idx = malloc(want * sizeof *b->idx))) {
		free(b);
		pm->stop = 1;
		pm->first_err = DW_ENOMEM;
		snprintf(pm->first_msg, sizeof pm->first_msg, "out of memory");
		return 0;
	}
	while ((size_t)b->n < want && pm->nretry)
		b->idx[b->n++] = pm->retry[--pm->nretry];
	while ((size_t)b->n < want && pm->next < pm->n)
		b->idx[b->n++] = pm->next++;
	b->pm = pm;
	b->w = w;
	unsigned char *arg;
	size_t len;
	int err = pm_encode(pm, b, &arg, &len);
	if (err == DW_OK) {
		rtr_event(DW_EV_PMAP, (uint64_t)b->n);
		w->inflight++;
		b->next = pm->flight;
		pm->flight = b;
		err = call_async(w->id, 0, pm->carrier, arg, len, pm_notify, b,
		                 &b->f);
		free(arg);
		if (err == DW_OK)
			return 0;
		pm->flight = b->next;
		w->inflight--;
	}
	pm_worker_dead(pm, w);
	pm_requeue(pm, b, dw_errmsg());
	free(b->idx);
	free(b);
	return -1;
}

static void
pm_dispatch(struct pm *pm)
{
	for (int round = 0; round < PMAP_DEPTH; round++)
		for (int i = 0; i < pm->nw && pm_has_work(pm); i++) {
			struct pm_worker *w = &pm->ws[i];
			if (!w->dead && w->inflight <= round)
				pm_send(pm, w);
		}
}

/* Stores a batch's results (the future has completed). */
static void
pm_handle(struct pm *pm, struct pm_batch *b)
{
	const void *res;
	size_t len;
	int err = call_result(b->f, &res, &len);
	b->w->inflight--;
	if (err == DW_EEXITED) {
		pm_worker_dead(pm, b->w);
		pm_requeue(pm, b, dw_errmsg());
		return;
	}
	if (err != DW_OK) {
		for (int i = 0; i < b->n; i++)
			pm_set_msg(pm, b->idx[i], err, b->w->id, dw_errmsg());
		return;
	}
	const unsigned char *p = res;
	size_t o = 0;
	int deferred = 0;
	for (int i = 0; i < b->n; i++) {
		int st = o + 8 <= len
		             ? wire_err_get(wire_get_u32(p + o), DW_EREMOTE)
		             : DW_EPROTO;
		size_t n = o + 8 <= len ? wire_get_u32(p + o + 4) : 0;
		if (o + 8 > len || n > len - o - 8) {
			pm_set_msg(pm, b->idx[i], DW_EPROTO, b->w->id,
			           "malformed pmap results");
			continue;
		}
		if (st == DW_EAGAIN) { /* not run: the batch was full */
			pm->retry[pm->nretry++] = b->idx[i];
			deferred++;
		} else if (st != DW_OK) {
			char msg[600];
			snprintf(msg, sizeof msg, "worker %d: %.*s", b->w->id,
			         (int)(n > 500 ? 500 : n),
			         (const char *)p + o + 8);
			pm_set_msg(pm, b->idx[i], st, b->w->id, msg);
		} else {
			pm_set(pm, b->idx[i], DW_OK, b->w->id, p + o + 8, n);
		}
		o += 8 + n;
	}
	if (deferred)
		rtr_event(DW_EV_PMAP_RETRY, (uint64_t)deferred);
}

static void
pm_unlink(struct pm *pm, struct pm_batch *b)
{
	for (struct pm_batch **pp = &pm->flight; *pp; pp = &(*pp)->next)
		if (*pp == b) {
			*pp = b->next;
			return;
		}
}

static void
pm_free_batch(struct pm_batch *b)
{
	dw_future_free(b->f);
	free(b->idx);
	free(b);
}

/* Waits for completed batches and handles them; 0, or DW_ETIMEDOUT. */
static int
pm_wait(struct pm *pm, uint64_t deadline)
{
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	uint64_t now = rt_now_ms();
	uint64_t ms = deadline ? (deadline > now ? deadline - now : 0) : 1000;
	if (ms > 1000)
		ms = 1000;
	dl.tv_sec += (time_t)(ms / 1000);
	dl.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L)
		dl.tv_sec++, dl.tv_nsec -= 1000000000L;
	exec_block_begin();
	pthread_mutex_lock(&rt.lock);
	if (!pm->dhead)
		rt_cond_wait(&pm->cv, &rt.lock, &dl, DWT_STATE_SCHEDULING);
	struct pm_batch *d = pm->dhead;
	pm->dhead = NULL;
	pthread_mutex_unlock(&rt.lock);
	exec_block_end();
	for (struct pm_batch *n; d; d = n) {
		n = d->dnext;
		pm_unlink(pm, d);
		pm_handle(pm, d);
		pm_free_batch(d);
	}
	return deadline && rt_now_ms() >= deadline ? DW_ETIMEDOUT : DW_OK;
}

/* Drops the batches still in flight: their results are discarded. */
static void
pm_abandon(struct pm *pm)
{
	for (struct pm_batch *b = pm->flight; b; b = b->next)
		dw_future_free(b->f), b->f = NULL; /* no notice after this */
	pthread_mutex_lock(&rt.lock);
	pm->dhead = NULL;
	pthread_mutex_unlock(&rt.lock);
	for (struct pm_batch *b = pm->flight, *n; b; b = n) {
		n = b->next;
		pm_free_batch(b);
	}
	pm->flight = NULL;
}

static int
pm_setup(struct pm *pm, const dw_pmap_options *o)
{
	dw_pool *pool = o && o->pool ? o->pool : dw_default_pool();
	int *ids;
	int nw = pool_members(pool, &ids);
	if (nw <= 0) {
		if (nw == 0)
			free(ids);
		rt_set_err(0, "no process to run pmap on");
		return nw < 0 ? nw : DW_ENOTFOUND;
	}
	pm->ws = calloc((size_t)nw, sizeof *pm->ws);
	pm->delivered = calloc(pm->n + 1, 1);
	pm->tries = calloc(pm->n + 1, sizeof *pm->tries);
	pm->retry = malloc((pm->n + 1) * sizeof *pm->retry);
	if (!pm->ws || !pm->delivered || !pm->tries || !pm->retry) {
		free(ids);
		return DW_ENOMEM;
	}
	for (int i = 0; i < nw; i++) {
		pm->ws[i].id = ids[i];
		pool_prepare(pool, ids[i]);
	}
	free(ids);
	pm->nw = pm->nlive = nw;
	pm->left = pm->n;
	pm->batch = o ? o->batch_size : 0;
	pm->on_error = o ? o->on_error : DW_PMAP_STOP;
	pm->max_tries = o && o->max_tries > 0 ? o->max_tries : 4;
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&pm->cv, &a);
	pthread_condattr_destroy(&a);
	return DW_OK;
}

static int
pm_run(struct pm *pm, int timeout_ms)
{
	uint64_t deadline =
	    timeout_ms > 0 ? rt_now_ms() + (uint64_t)timeout_ms : 0;
	int err = DW_OK;
	for (;;) {
		pm_dispatch(pm);
		if (!pm->flight)
			break;
		if ((err = pm_wait(pm, deadline)) != DW_OK || pm->stop)
			break;
	}
	pm_abandon(pm);
	rtr_event(DW_EV_PMAP, 0);
	return err;
}

/* Items with no result: never run (stopped, timed out, no process). */
static void
pm_fill(struct pm *pm, int err)
{
	const char *msg = err == DW_ETIMEDOUT ? "pmap timed out"
	                  : pm->nlive == 0
	                      ? "no process left to run it"
	                      : "not run: pmap stopped at an error";
	int e = err == DW_ETIMEDOUT ? DW_ETIMEDOUT
	        : pm->nlive == 0    ? DW_EEXITED
	                            : DW_ECLOSED;
	int keep = pm->stop;
	for (size_t i = 0; i < pm->n; i++)
		if (!pm->delivered[i])
			pm_set_msg(pm, i, e, 0, msg);
	pm->stop = keep;
}

static int pm_main(const char *carrier, const char *fn, const dw_buf *in,
                   size_t n, dw_result *out, const dw_pmap_options *opts);

DW_API int
dw_pmap(const char *fn, const dw_buf *in, size_t n, dw_result *out,
        const dw_pmap_options *opts)
{
	return pm_main(PMAP_FN, fn, in, n, out, opts);
}

static int
pm_main(const char *carrier, const char *fn, const dw_buf *in, size_t n,
        dw_result *out, const dw_pmap_options *opts)
{
	size_t nl = fn ? strlen(fn) : 0;
	if (nl == 0 || nl > WIRE_NAME_MAX || (n && (!in || !out)))
		return rt_set_err(0, "bad pmap arguments"), DW_EINVAL;
	if (opts && rt_opt_size("dw_pmap_options", opts->size, sizeof *opts))
		return DW_EINVAL;
	memset(out, 0, n * sizeof *out);
	if (n == 0)
		return DW_OK;
	RTR_WAITS(DWT_STATE_SCHEDULING);
	struct pm pm = {
	    .fn = fn, .carrier = carrier, .in = in, .n = n, .out = out};
	int err = pm_setup(&pm, opts);
	if (err == DW_OK) {
		err = pm_run(&pm, opts ? opts->timeout_ms : 0);
		int stopped = pm.stop;
		pm_fill(&pm, err);
		pthread_cond_destroy(&pm.cv);
		if (err == DW_OK && stopped && pm.first_err) {
			err = pm.first_err;
			rt_set_err(pm.first_pid, "%s", pm.first_msg);
		} else if (err == DW_OK && pm.nlive == 0 &&
		           pm.on_error == DW_PMAP_STOP) {
			for (size_t i = 0; i < n && err == DW_OK; i++)
				if (out[i].err)
					err = out[i].err;
			rt_set_err(0, "every process of the pool died");
		} else if (err == DW_ETIMEDOUT) {
			rt_set_err(0, "pmap did not finish within %d ms",
			           opts->timeout_ms);
		}
	} else {
		for (size_t i = 0; i < n; i++)
			out[i].err = err;
	}
	free(pm.ws);
	free(pm.delivered);
	free(pm.tries);
	free(pm.retry);
	return err;
}

DW_API void
dw_results_free(dw_result *r, size_t n)
{
	for (size_t i = 0; r && i < n; i++) {
		free(r[i].data);
		r[i].data = NULL;
	}
}

/* ---- the distributed loop ---- */

#define RANGE_MAGIC "DWRG"

DW_API int
dw_range_arg(const void *arg, size_t len, int64_t *lo, int64_t *hi,
             const void **user, size_t *ulen)
{
	const unsigned char *p = arg;
	if (!p || len < 20 || memcmp(p, RANGE_MAGIC, 4))
		return DW_EFORMAT;
	*lo = (int64_t)wire_get_u64(p + 4);
	*hi = (int64_t)wire_get_u64(p + 12);
	if (user)
		*user = p + 20;
	if (ulen)
		*ulen = len - 20;
	return DW_OK;
}

/* The reducer is the user's code: Running, inside the loop's wait. */
static int
for_reduce(dw_reduce_fn reduce, void **res, size_t *reslen,
           const dw_result *part, void *ctx)
{
	RTR_IN(DWT_STATE_RUNNING);
	return reduce(res, reslen, part->data, part->len, ctx);
}

DW_API int
dw_distributed_for(const char *fn, int64_t lo, int64_t hi, const void *arg,
                   size_t len, dw_reduce_fn reduce, void *ctx, void **res,
                   size_t *reslen)
{
	return dw_distributed_for_timeout(fn, lo, hi, arg, len, reduce, ctx,
	                                  res, reslen, 0);
}

DW_API int
dw_distributed_for_timeout(const char *fn, int64_t lo, int64_t hi,
                           const void *arg, size_t len, dw_reduce_fn reduce,
                           void *ctx, void **res, size_t *reslen,
                           int timeout_ms)
{
	if (res)
		*res = NULL;
	if (reslen)
		*reslen = 0;
	if (hi < lo || (reduce && (!res || !reslen)))
		return rt_set_err(0, "bad loop arguments"), DW_EINVAL;
	RTR_WAITS(DWT_STATE_SCHEDULING);
	int nw = dw_pool_workers(dw_default_pool(), NULL, 0);
	if (nw <= 0)
		return rt_set_err(0, "no process to run on"), DW_ENOTFOUND;
	uint64_t span = (uint64_t)(hi - lo);
	size_t parts =
	    span < (uint64_t)nw ? (size_t)(span ? span : 1) : (size_t)nw;
	unsigned char *args = malloc(parts * (20 + len) + 1);
	dw_buf *in = calloc(parts, sizeof *in);
	dw_result *out = calloc(parts, sizeof *out);
	int err = args && in && out ? DW_OK : DW_ENOMEM;
	for (size_t i = 0; err == DW_OK && i < parts; i++) {
		unsigned char *p = args + i * (20 + len);
		memcpy(p, RANGE_MAGIC, 4);
		wire_put_u64(p + 4, (uint64_t)lo + span * i / parts);
		wire_put_u64(p + 12, (uint64_t)lo + span * (i + 1) / parts);
		if (len)
			memcpy(p + 20, arg, len);
		in[i].data = p;
		in[i].len = 20 + len;
	}
	dw_pmap_options o = {.batch_size = 1,
	                     .on_error = DW_PMAP_STOP,
	                     .timeout_ms = timeout_ms};
	if (err == DW_OK)
		err = pm_main(FOR_FN, fn, in, parts, out, &o);
	for (size_t i = 0; err == DW_OK && reduce && i < parts; i++)
		if (for_reduce(reduce, res, reslen, &out[i], ctx) != 0) {
			rt_set_err(0, "the reduction failed at range %zu", i);
			err = DW_EINVAL;
		}
	if (err != DW_OK && res && *res) {
		free(*res);
		*res = NULL;
		*reslen = 0;
	}
	if (out)
		dw_results_free(out, parts);
	free(out);
	free(in);
	free(args);
	return err;
}
