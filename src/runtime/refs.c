/*
 * References that travel: the owner's count of holders per process, and
 * the bytes a reference becomes when it is handed to another process
 * (docs/wire-protocol.md, "References").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/call.h"
#include "runtime/rt.h"
#include "runtime/wire_err.h"
#include "runtime/work.h"

#define REF_MAGIC     "DWRF"
#define REF_VALUE_MAX (1u << 30)

int
holders_add(struct holders *h, int pid, int n)
{
	for (int i = 0; i < h->n; i++)
		if (h->pid[i] == pid) {
			h->cnt[i] += n;
			h->total += n;
			return 0;
		}
	if (h->n == h->cap) {
		int cap = h->cap ? 2 * h->cap : 4;
		int *p = realloc(h->pid, (size_t)cap * sizeof *p);
		if (p)
			h->pid = p;
		int *c = p ? realloc(h->cnt, (size_t)cap * sizeof *c) : NULL;
		if (!c)
			return -1;
		h->cnt = c;
		h->cap = cap;
	}
	h->pid[h->n] = pid;
	h->cnt[h->n++] = n;
	h->total += n;
	return 0;
}

static void
holders_remove(struct holders *h, int i)
{
	h->total -= h->cnt[i];
	h->n--;
	h->pid[i] = h->pid[h->n];
	h->cnt[i] = h->cnt[h->n];
}

int
holders_del(struct holders *h, int pid)
{
	for (int i = 0; i < h->n; i++)
		if (h->pid[i] == pid) {
			if (h->cnt[i] == 1)
				holders_remove(h, i);
			else
				h->cnt[i]--, h->total--;
			return 0;
		}
	return -1;
}

void
holders_drop(struct holders *h, int pid)
{
	for (int i = 0; i < h->n; i++)
		if (h->pid[i] == pid) {
			holders_remove(h, i);
			return;
		}
}

void
holders_free(struct holders *h)
{
	free(h->pid);
	free(h->cnt);
	memset(h, 0, sizeof *h);
}

/*
 * Layout: "DWRF", u8 kind, u8 flags (1 value follows, 2 it is an error),
 * u16 0, u32 where, u32 whence, u64 id, u32 to, u32 error code, then the
 * value (or the error message).
 */
int
ref_encode(const struct ref *r, void **bytes, size_t *len)
{
	size_t vl = r->has_value ? r->vlen : 0;
	unsigned char *p = malloc(REF_BYTES + vl);
	if (!p)
		return DW_ENOMEM;
	memcpy(p, REF_MAGIC, 4);
	p[4] = (unsigned char)r->kind;
	p[5] = (unsigned char)((r->has_value ? 1 : 0) | (r->err ? 2 : 0));
	wire_put_u16(p + 6, 0);
	wire_put_u32(p + 8, (uint32_t)r->where);
	wire_put_u32(p + 12, (uint32_t)r->whence);
	wire_put_u64(p + 16, r->id);
	wire_put_u32(p + 24, (uint32_t)r->to);
	wire_put_u32(p + 28, wire_err_put(r->err));
	if (vl)
		memcpy(p + REF_BYTES, r->value, vl);
	*bytes = p;
	*len = REF_BYTES + vl;
	return DW_OK;
}

int
ref_decode(const void *bytes, size_t len, int kind, struct ref *r)
{
	const unsigned char *p = bytes;
	memset(r, 0, sizeof *r);
	if (!p || len < REF_BYTES || memcmp(p, REF_MAGIC, 4) || p[4] != kind ||
	    (p[5] & ~3u) || wire_get_u16(p + 6) ||
	    len - REF_BYTES > REF_VALUE_MAX) {
		rt_set_err(0, "not a dwork %s reference (%zu bytes)",
		           kind == REF_CHANNEL ? "channel" : "future", len);
		return DW_EFORMAT;
	}
	r->kind = kind;
	r->has_value = p[5] & 1;
	r->where = (int)wire_get_u32(p + 8);
	r->whence = (int)wire_get_u32(p + 12);
	r->id = wire_get_u64(p + 16);
	r->to = (int)wire_get_u32(p + 24);
	r->err =
	    (p[5] & 2) ? wire_err_get(wire_get_u32(p + 28), DW_EREMOTE) : 0;
	r->value = p + REF_BYTES;
	r->vlen = len - REF_BYTES;
	if ((p[5] & 2) && r->err == DW_OK)
		r->err = DW_EREMOTE;
	if (r->where < 1 || (!r->has_value && r->vlen)) {
		rt_set_err(0, "malformed reference");
		return DW_EFORMAT;
	}
	if (r->to != dw_myid()) {
		rt_set_err(0,
		           "this reference was handed to process %d, not "
		           "to process %d",
		           r->to, dw_myid());
		return DW_EINVAL;
	}
	return DW_OK;
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

int
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

int
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

int
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

void
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
