/*
 * Worker pools: sets of processes that lend an idle member for a call,
 * the default pool that follows the cluster, cached read-only arguments
 * sent once per member, and spawn round-robin.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/rt.h"
#include "runtime/rtrace.h"
#include "runtime/work.h"

struct blob {
	struct blob *next;
	uint64_t handle;
	void *data;
	size_t len;
	int *sent; /* members that have it */
	int nsent, capsent;
};

struct dw_pool {
	int dflt;         /* members follow the cluster */
	int *ids, n, cap; /* members of a pool made by dw_pool_new */
	int *busy, nbusy, capbusy;
	struct blob *blobs;
	pthread_mutex_t lock; /* a leaf: nothing else is taken under it */
	pthread_cond_t cv;
	unsigned rr;
};

static dw_pool default_pool = {
    .dflt = 1,
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .cv = PTHREAD_COND_INITIALIZER,
};
static uint64_t cache_next;

static int
ids_add(int **v, int *n, int *cap, int id)
{
	if (*n == *cap) {
		int c = *cap ? 2 * *cap : 8;
		int *p = realloc(*v, (size_t)c * sizeof *p);
		if (!p)
			return DW_ENOMEM;
		*v = p;
		*cap = c;
	}
	(*v)[(*n)++] = id;
	return DW_OK;
}

static int
ids_has(const int *v, int n, int id)
{
	for (int i = 0; i < n; i++)
		if (v[i] == id)
			return 1;
	return 0;
}

static void
ids_del(int *v, int *n, int id)
{
	for (int i = 0; i < *n; i++)
		if (v[i] == id) {
			v[i] = v[--*n];
			return;
		}
}

DW_API dw_pool *
dw_default_pool(void)
{
	return &default_pool;
}

DW_API int
dw_pool_new(const int *ids, int n, dw_pool **out)
{
	*out = NULL;
	if (n < 0 || (n && !ids))
		return rt_set_err(0, "no ids"), DW_EINVAL;
	dw_pool *p = calloc(1, sizeof *p);
	if (!p)
		return DW_ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cv, NULL);
	for (int i = 0; i < n; i++)
		if (ids[i] < 1 || (!ids_has(p->ids, p->n, ids[i]) &&
		                   ids_add(&p->ids, &p->n, &p->cap, ids[i]))) {
			dw_pool_free(p);
			return rt_set_err(0, "bad id %d", ids[i]), DW_EINVAL;
		}
	*out = p;
	return DW_OK;
}

DW_API int
dw_pool_add(dw_pool *p, int id)
{
	if (!p || p->dflt || id < 1)
		return rt_set_err(0, "cannot add %d to that pool", id),
		       DW_EINVAL;
	pthread_mutex_lock(&p->lock);
	int err = ids_has(p->ids, p->n, id)
	              ? DW_OK
	              : ids_add(&p->ids, &p->n, &p->cap, id);
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->lock);
	return err;
}

DW_API void
dw_pool_free(dw_pool *p)
{
	if (!p || p->dflt)
		return;
	for (struct blob *b = p->blobs, *n; b; b = n) {
		n = b->next;
		unsigned char h[8];
		wire_put_u64(h, b->handle);
		for (int i = 0; i < b->nsent; i++)
			req_post(b->sent[i], REQ_CACHE_DROP, h, 8, NULL, 0);
		free(b->sent);
		free(b->data);
		free(b);
	}
	free(p->ids);
	free(p->busy);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cv);
	free(p);
}

/* Live members: the cluster's workers for the default pool; a made
 * pool's ids, less the workers the master knows have gone. */
int
pool_members(dw_pool *p, int **ids)
{
	if (p->dflt)
		return work_procs(ids, 0);
	pthread_mutex_lock(&p->lock);
	int *v = malloc((size_t)p->n * sizeof *v + 1), n = 0;
	for (int i = 0; v && i < p->n; i++)
		v[n++] = p->ids[i];
	pthread_mutex_unlock(&p->lock);
	if (!v)
		return DW_ENOMEM;
	if (rt.role == RT_MASTER) {
		int m = 0;
		pthread_mutex_lock(&rt.lock);
		for (int i = 0; i < n; i++) {
			struct worker *w = cl_find(v[i]);
			if (v[i] == 1 || (w && w->state == W_ACTIVE))
				v[m++] = v[i];
		}
		pthread_mutex_unlock(&rt.lock);
		n = m;
	}
	*ids = v;
	return n;
}

DW_API int
dw_pool_workers(dw_pool *p, int *ids, int max)
{
	int *v;
	int n = pool_members(p ? p : &default_pool, &v);
	for (int i = 0; i < n && i < max && ids; i++)
		ids[i] = v[i];
	if (n >= 0)
		free(v);
	return n;
}

/* Picks an idle member (p->lock held); 0 when none is. */
static int
pool_pick(dw_pool *p, const int *v, int n)
{
	for (int k = 0; k < n; k++) {
		int id = v[(p->rr + (unsigned)k) % (unsigned)n];
		if (!ids_has(p->busy, p->nbusy, id)) {
			if (ids_add(&p->busy, &p->nbusy, &p->capbusy, id))
				return 0;
			p->rr += (unsigned)k + 1;
			return id;
		}
	}
	return 0;
}

DW_API int
dw_pool_take(dw_pool *p, int timeout_ms)
{
	if (!p)
		p = &default_pool;
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	uint64_t end =
	    rt_now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	RTR_WAITS(DWT_STATE_SYNCHRONIZATION);
	for (;;) {
		int *v;
		int n = pool_members(p, &v);
		if (n < 0)
			return n;
		if (n == 0) {
			free(v);
			rt_set_err(0, "the pool has no live process");
			return DW_ENOTFOUND;
		}
		pthread_mutex_lock(&p->lock);
		int id = pool_pick(p, v, n);
		if (!id && timeout_ms != 0) { /* members may change: look
			                         again every 100 ms */
			clock_gettime(CLOCK_REALTIME, &dl);
			dl.tv_nsec += 100000000L;
			if (dl.tv_nsec >= 1000000000L)
				dl.tv_sec++, dl.tv_nsec -= 1000000000L;
			exec_block_begin();
			rt_cond_wait(&p->cv, &p->lock, &dl,
			             DWT_STATE_SYNCHRONIZATION);
			exec_block_end();
			id = pool_pick(p, v, n);
		}
		pthread_mutex_unlock(&p->lock);
		free(v);
		if (id) {
			rtr_event(DW_EV_POOL, (uint64_t)id);
			return id;
		}
		if (timeout_ms >= 0 && rt_now_ms() >= end) {
			rt_set_err(0,
			           "no idle process in the pool within %d "
			           "ms",
			           timeout_ms);
			return DW_ETIMEDOUT;
		}
	}
}

DW_API void
dw_pool_put(dw_pool *p, int id)
{
	if (!p)
		p = &default_pool;
	pthread_mutex_lock(&p->lock);
	ids_del(p->busy, &p->nbusy, id);
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->lock);
	rtr_event(DW_EV_POOL, 0);
}

int
pool_prepare(dw_pool *p, int wid)
{
	struct blob *todo[64];
	int n = 0, err = DW_OK;
	do {
		n = 0;
		pthread_mutex_lock(&p->lock);
		for (struct blob *b = p->blobs; b && n < 64; b = b->next)
			if (!ids_has(b->sent, b->nsent, wid) &&
			    ids_add(&b->sent, &b->nsent, &b->capsent, wid) ==
			        DW_OK)
				todo[n++] = b;
		pthread_mutex_unlock(&p->lock);
		for (int i = 0; i < n; i++) {
			unsigned char h[8];
			wire_put_u64(h, todo[i]->handle);
			int e = req_post(wid, REQ_CACHE_PUT, h, 8,
			                 todo[i]->data, todo[i]->len);
			if (e != DW_OK)
				err = e;
		}
	} while (n == 64);
	return err;
}

DW_API int
dw_pool_remotecall_fetch_timeout(dw_pool *p, const char *fn, const void *arg,
                                 size_t len, void **res, size_t *reslen,
                                 int timeout_ms)
{
	if (!p)
		p = &default_pool;
	*res = NULL;
	*reslen = 0;
	int id = dw_pool_take(p, timeout_ms);
	if (id < 0)
		return id;
	pool_prepare(p, id);
	int err = dw_remotecall_fetch_timeout(id, fn, arg, len, res, reslen,
	                                      timeout_ms);
	dw_pool_put(p, id);
	return err;
}

DW_API int
dw_pool_remotecall_fetch(dw_pool *p, const char *fn, const void *arg,
                         size_t len, void **res, size_t *reslen)
{
	return dw_pool_remotecall_fetch_timeout(p, fn, arg, len, res, reslen,
	                                        -1);
}

/* The call completed: its process is idle again (rt.lock held; the pool's
 * lock is a leaf). */
static void
pool_call_done(void *ctx, dw_future *f)
{
	dw_pool_put(ctx, call_future_pid(f));
}

DW_API int
dw_pool_remotecall(dw_pool *p, const char *fn, const void *arg, size_t len,
                   dw_future **out)
{
	return dw_pool_remotecall_timeout(p, fn, arg, len, out, -1);
}

DW_API int
dw_pool_remotecall_timeout(dw_pool *p, const char *fn, const void *arg,
                           size_t len, dw_future **out, int timeout_ms)
{
	if (!p)
		p = &default_pool;
	*out = NULL;
	int id = dw_pool_take(p, timeout_ms);
	if (id < 0)
		return id;
	pool_prepare(p, id);
	int err = call_async(id, 1, fn, arg, len, pool_call_done, p, out);
	if (err != DW_OK)
		dw_pool_put(p, id);
	return err;
}

DW_API int
dw_pool_cache(dw_pool *p, const void *data, size_t len, uint64_t *handle)
{
	if (!p)
		p = &default_pool;
	if (len > conn_max_payload - REQ_PREFIX - 8) {
		char msg[200];
		wire_too_big(msg, sizeof msg, "a cached argument", len,
		             conn_max_payload - REQ_PREFIX - 8);
		return rt_set_err(0, "%s", msg), DW_ETOOBIG;
	}
	struct blob *b = calloc(1, sizeof *b);
	if (!b || !(b->data = malloc(len ? len : 1))) {
		free(b);
		return DW_ENOMEM;
	}
	if (len)
		memcpy(b->data, data, len);
	b->len = len;
	b->handle = (uint64_t)(uint32_t)dw_myid() << 48 |
	            __atomic_add_fetch(&cache_next, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&p->lock);
	b->next = p->blobs;
	p->blobs = b;
	pthread_mutex_unlock(&p->lock);
	*handle = b->handle;
	return DW_OK;
}

/* ---- the cache every process keeps for the pools that send to it ---- */

struct centry {
	struct centry *next;
	uint64_t handle;
	void *data;
	size_t len;
};

/* cache_lock guards the cache of pool arguments kept here; a leaf. */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct centry *cache;

DW_API int
dw_cached(uint64_t handle, const void **data, size_t *len)
{
	pthread_mutex_lock(&cache_lock);
	struct centry *e = cache;
	while (e && e->handle != handle)
		e = e->next;
	if (e) {
		*data = e->data;
		*len = e->len;
	}
	pthread_mutex_unlock(&cache_lock);
	if (!e)
		rt_set_err(0, "process %d has no cached argument %llx",
		           dw_myid(), (unsigned long long)handle);
	return e ? DW_OK : DW_ENOTFOUND;
}

static void
cache_drop_if(int (*match)(const struct centry *e, uint64_t v), uint64_t v)
{
	pthread_mutex_lock(&cache_lock);
	for (struct centry **pp = &cache; *pp;) {
		struct centry *e = *pp;
		if (!match(e, v)) {
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		free(e->data);
		free(e);
	}
	pthread_mutex_unlock(&cache_lock);
}

static int
cache_is(const struct centry *e, uint64_t h)
{
	return e->handle == h;
}

static int
cache_owned_by(const struct centry *e, uint64_t pid)
{
	return e->handle >> 48 == pid;
}

void
pool_on_req(const struct req_src *s, int op, const unsigned char *b, size_t len)
{
	(void)s;
	if (len < 8)
		return;
	uint64_t h = wire_get_u64(b);
	cache_drop_if(cache_is, h);
	if (op != REQ_CACHE_PUT)
		return;
	struct centry *e = calloc(1, sizeof *e);
	if (!e || !(e->data = malloc(len - 8 + 1))) {
		free(e);
		rt_log("process %d: no memory for a cached argument of %zu "
		       "bytes",
		       rt.myid, len - 8);
		return;
	}
	memcpy(e->data, b + 8, len - 8);
	e->len = len - 8;
	e->handle = h;
	pthread_mutex_lock(&cache_lock);
	e->next = cache;
	cache = e;
	pthread_mutex_unlock(&cache_lock);
}

int
pool_cache_count(void)
{
	int n = 0;
	pthread_mutex_lock(&cache_lock);
	for (struct centry *e = cache; e; e = e->next)
		n++;
	pthread_mutex_unlock(&cache_lock);
	return n;
}

void
pool_gone(int pid)
{
	cache_drop_if(cache_owned_by, (uint64_t)pid);
}

/* ---- spawn ---- */

DW_API int
dw_spawn_timeout(const char *fn, const void *arg, size_t len, dw_future **out,
                 int *pid, int timeout_ms)
{
	static unsigned next;
	*out = NULL;
	RTR_WAITS(DWT_STATE_SCHEDULING);
	int *v;
	int n = pool_members(&default_pool, &v);
	if (n <= 0) {
		if (n == 0)
			free(v);
		rt_set_err(0, "no process to spawn on");
		return n < 0 ? n : DW_ENOTFOUND;
	}
	int id =
	    v[__atomic_fetch_add(&next, 1, __ATOMIC_RELAXED) % (unsigned)n];
	free(v);
	if (pid)
		*pid = id;
	pool_prepare(&default_pool, id);
	size_t clen;
	void *carried = work_carry(fn, arg, len, &clen);
	if (!carried)
		return fn && *fn ? DW_ENOMEM : DW_EINVAL;
	int err =
	    dw_remotecall_timeout(id, SPAWN_FN, carried, clen, out, timeout_ms);
	free(carried);
	return err;
}

DW_API int
dw_spawn(const char *fn, const void *arg, size_t len, dw_future **out, int *pid)
{
	return dw_spawn_timeout(fn, arg, len, out, pid, -1);
}
