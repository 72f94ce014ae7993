/*
 * Kept results (KEEP mode): a worker keeps a call's result, keyed by
 * (caller, call id), from the call's arrival until the caller fetches
 * or frees it and no other holder is left; the owner's side of future
 * references (holds, parked waits) and the FETCH and FREE frames.
 * rt.lock guards the table and every kept result.
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

/* ---- the table: (caller, call id) -> kept result ---- */

/* By call id, each entry the head of a list (kept.next) of the results
 * of calls with that id from different callers (every caller counts its
 * own ids).  Guarded by rt.lock, as is every kept result. */
static struct idmap kept_tab = IDMAP_INIT;
static size_t kept_n;

int
kept_put(struct kept *k)
{
	k->next = idmap_get(&kept_tab, k->id);
	if (idmap_put(&kept_tab, k->id, k) < 0)
		return -1;
	kept_n++;
	return 0;
}

struct kept *
kept_find(int from, uint64_t id)
{
	struct kept *k = idmap_get(&kept_tab, id);
	while (k && k->from != from)
		k = k->next;
	return k;
}

struct kept *
kept_take(int from, uint64_t id)
{
	struct kept *head = idmap_get(&kept_tab, id), **pp = &head;
	while (*pp && (*pp)->from != from)
		pp = &(*pp)->next;
	struct kept *k = *pp;
	if (!k)
		return NULL;
	*pp = k->next;
	if (head) /* replaces an entry: cannot fail */
		idmap_put(&kept_tab, id, head);
	else
		idmap_take(&kept_tab, id);
	kept_n--;
	return k;
}

/* Calls fn on every kept result; fn may free the one it is given. */
static void
kept_walk(void (*fn)(struct kept *k, int pid, uint64_t id), int pid,
          uint64_t id)
{
	size_t pos = 0;
	for (struct kept *k; (k = idmap_next(&kept_tab, &pos, NULL));)
		for (struct kept *n; k; k = n) {
			n = k->next;
			fn(k, pid, id);
		}
}

struct kept *
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

void
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
	kept_take(k->from, k->id);
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
	struct kept *k = kept_find(whence, id);
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
	struct kept *k = kept_find(whence, id);
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
	kept_walk(fn, pid, id);
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
	size_t n = kept_n;
	pthread_mutex_unlock(&rt.lock);
	return n;
}

void
call_fetch_kept(struct conn *c, const struct wire_hdr *h, int drop_only)
{
	pthread_mutex_lock(&rt.lock);
	struct kept *k = kept_find(c->peer, h->ref);
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
		kept_take(k->from, k->id);
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

static void
kept_drop_one(struct kept *k, int pid, uint64_t id)
{
	(void)pid, (void)id;
	kept_take(k->from, k->id);
	kept_free(k);
}

/* The runtime ends: every kept result goes (rt.lock held). */
void
kept_free_all(void)
{
	kept_walk(kept_drop_one, 0, 0);
	idmap_fini(&kept_tab);
}

/* The call of k ran: keep its result (taken from r), or its failure for
 * the other holders, and answer whoever waits.  Takes rt.lock. */
void
kept_finish(struct kept *k, dw_reply *r, int rc, int code)
{
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
}

static void
kept_on_frame(struct conn *c, const struct wire_hdr *h, unsigned char *p)
{
	call_fetch_kept(c, h, h->type == WIRE_FREE);
	free(p);
}

void
kept_attach(void)
{
	disp_on_frame(WIRE_FETCH, kept_on_frame);
	disp_on_frame(WIRE_FREE, kept_on_frame);
}
