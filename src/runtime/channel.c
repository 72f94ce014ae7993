/*
 * Remote channels: a bounded queue of byte values living on its owner
 * process.  The owner serves every operation without blocking: a put on a
 * full channel or a take on an empty one is parked and answered when the
 * channel changes.  The channel lives while a process holds a reference.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt.h"
#include "runtime/rtrace.h"
#include "runtime/work.h"

#define CH_CAP_MAX (1u << 30)
#define CH_BUCKETS 256

struct item {
	struct item *next;
	unsigned char *buf; /* malloc'd; the value is buf[off, off + len) */
	size_t off, len;
};

/* A parked operation; a put carries its value. */
struct cwait {
	struct cwait *next;
	struct req_src src;
	int op;
	struct item *it;
};

struct chan {
	struct chan *next;
	uint64_t id;
	size_t cap, n;
	struct item *head, **tail;
	struct cwait *puts, *gets; /* FIFO each */
	int closed;
	struct holders h;
};

struct dw_channel {
	int owner;
	uint64_t id;
};

/* ch_lock guards the table of channels this process owns and every
 * channel in it (values, parked operations, holders).  Taken with no
 * other runtime lock held; under it only leaf locks are taken (a link's
 * wlock, lw_lock: answers are only queued). */
static pthread_mutex_t ch_lock = PTHREAD_MUTEX_INITIALIZER;
static struct chan *ch_tab[CH_BUCKETS];
static uint64_t ch_next;

static struct chan **
ch_slot(uint64_t id)
{
	struct chan **p = &ch_tab[(id * 0x9e3779b97f4a7c15u) >> 56];
	while (*p && (*p)->id != id)
		p = &(*p)->next;
	return p;
}

/* A parked operation is done with. */
static void
cw_free(struct cwait *w)
{
	conn_unref(w->src.c);
	free(w);
}

static void
cw_append(struct cwait **list, struct cwait *w)
{
	while (*list)
		list = &(*list)->next;
	w->next = NULL;
	*list = w;
}

static void
item_free(struct item *it)
{
	if (it) {
		free(it->buf);
		free(it);
	}
}

/* Hands a taken value to its requester (the buffer goes with it). */
static void
ch_give(const struct req_src *s, struct item *it)
{
	if (s->c) {
		req_answer(s, it->buf + it->off, it->len);
		item_free(it);
		return;
	}
	if (it->off)
		memmove(it->buf, it->buf + it->off, it->len);
	req_answer_take(s, it->buf, it->len);
	free(it);
}

static void
ch_push(struct chan *ch, struct item *it)
{
	it->next = NULL;
	*ch->tail = it;
	ch->tail = &it->next;
	ch->n++;
}

static struct item *
ch_pop(struct chan *ch)
{
	struct item *it = ch->head;
	ch->head = it->next;
	if (!ch->head)
		ch->tail = &ch->head;
	ch->n--;
	return it;
}

/* Moves parked puts into free room, then serves parked takes, fetches
 * and waits while values are there (ch_lock held). */
static void
ch_settle(struct chan *ch)
{
	for (;;) {
		while (ch->puts && ch->n < ch->cap) {
			struct cwait *w = ch->puts;
			ch->puts = w->next;
			ch_push(ch, w->it);
			req_answer(&w->src, NULL, 0);
			cw_free(w);
		}
		if (!ch->gets || ch->n == 0)
			return;
		struct cwait *w = ch->gets;
		ch->gets = w->next;
		if (w->op == REQ_CH_TAKE)
			ch_give(&w->src, ch_pop(ch));
		else if (w->op == REQ_CH_FETCH)
			req_answer(&w->src, ch->head->buf + ch->head->off,
			           ch->head->len);
		else
			req_answer(&w->src, NULL, 0);
		cw_free(w);
	}
}

static void
cw_fail_all(struct cwait **list, int err, const char *msg)
{
	for (struct cwait *w = *list, *n; w; w = n) {
		n = w->next;
		req_answer_err(&w->src, err, "%s", msg);
		item_free(w->it);
		cw_free(w);
	}
	*list = NULL;
}

static void
ch_destroy(struct chan *ch, const char *why)
{
	*ch_slot(ch->id) = ch->next;
	cw_fail_all(&ch->puts, DW_ECLOSED, why);
	cw_fail_all(&ch->gets, DW_ECLOSED, why);
	while (ch->head)
		item_free(ch_pop(ch));
	holders_free(&ch->h);
	free(ch);
}

static void
ch_new(const struct req_src *s, const unsigned char *b, size_t len)
{
	uint64_t cap = len >= 8 ? wire_get_u64(b) : 1;
	struct chan *ch = calloc(1, sizeof *ch);
	if (cap == 0)
		cap = 1;
	if (cap > CH_CAP_MAX || !ch || holders_add(&ch->h, s->pid, 1) < 0) {
		free(ch);
		req_answer_err(s, cap > CH_CAP_MAX ? DW_EINVAL : DW_ENOMEM,
		               "cannot make a channel of capacity %llu",
		               (unsigned long long)cap);
		return;
	}
	ch->cap = cap;
	ch->tail = &ch->head;
	ch->id = ++ch_next;
	struct chan **slot = ch_slot(ch->id);
	*slot = ch;
	unsigned char r[8];
	wire_put_u64(r, ch->id);
	req_answer(s, r, 8);
}

/* An operation that may wait: served now or parked. */
static void
ch_op(struct chan *ch, const struct req_src *s, int op, unsigned char *p,
      size_t off, size_t len)
{
	struct cwait *w = calloc(1, sizeof *w);
	struct item *it = op == REQ_CH_PUT ? calloc(1, sizeof *it) : NULL;
	if (!w || (op == REQ_CH_PUT && !it)) {
		free(w);
		free(it);
		free(p);
		req_answer_err(s, DW_ENOMEM, "out of memory");
		return;
	}
	if (it) {
		it->buf = p;
		it->off = off;
		it->len = len - off;
		p = NULL;
	}
	free(p);
	w->src = *s;
	w->op = op;
	w->it = it;
	if (ch->closed && (op == REQ_CH_PUT || ch->n == 0)) {
		req_answer_err(s, DW_ECLOSED,
		               "channel %llu of process %d is "
		               "closed",
		               (unsigned long long)ch->id, rt.myid);
		item_free(it);
		free(w);
		return;
	}
	conn_ref(s->c); /* parked: the answer's way back (cw_free) */
	cw_append(op == REQ_CH_PUT ? &ch->puts : &ch->gets, w);
	ch_settle(ch);
}

static void
ch_close(struct chan *ch, const struct req_src *s)
{
	char why[120];
	ch->closed = 1;
	snprintf(why, sizeof why, "channel %llu of process %d is closed",
	         (unsigned long long)ch->id, rt.myid);
	cw_fail_all(&ch->puts, DW_ECLOSED, why);
	if (ch->n == 0)
		cw_fail_all(&ch->gets, DW_ECLOSED, why);
	req_answer(s, NULL, 0);
}

static void
ch_hold(struct chan *ch, const struct req_src *s, int op,
        const unsigned char *b, size_t len)
{
	if (op == REQ_HOLD) {
		int holder = len >= 17 ? (int)wire_get_u32(b + 13) : s->pid;
		if (holders_add(&ch->h, holder, 1) < 0)
			req_answer_err(s, DW_ENOMEM, "out of memory");
		else
			req_answer(s, NULL, 0);
		return;
	}
	holders_del(&ch->h, s->pid);
	if (ch->h.total == 0)
		ch_destroy(ch, "the channel was freed");
}

void
chan_on_req(const struct req_src *s, int op, unsigned char *p, size_t off,
            size_t len)
{
	const unsigned char *b = p + off;
	size_t bl = len - off;
	int hold = op == REQ_HOLD || op == REQ_RELEASE;
	size_t idoff = hold ? 5 : 0;
	pthread_mutex_lock(&ch_lock);
	if (op == REQ_CH_NEW) {
		ch_new(s, b, bl);
		goto done;
	}
	if (bl < idoff + 8) {
		req_answer_err(s, DW_EPROTO, "channel request of %zu bytes",
		               bl);
		goto done;
	}
	uint64_t id = wire_get_u64(b + idoff);
	struct chan *ch = *ch_slot(id);
	if (!ch) {
		req_answer_err(s, DW_ENOTFOUND,
		               "process %d has no channel %llu (freed?)",
		               rt.myid, (unsigned long long)id);
	} else if (hold) {
		ch_hold(ch, s, op, b, bl);
	} else if (op == REQ_CH_READY) {
		unsigned char r = ch->n > 0;
		req_answer(s, &r, 1);
	} else if (op == REQ_CH_CLOSE) {
		ch_close(ch, s);
	} else {
		ch_op(ch, s, op, p, off + 8, len);
		pthread_mutex_unlock(&ch_lock);
		return;
	}
done:
	pthread_mutex_unlock(&ch_lock);
	free(p);
}

static int
cw_cancel(struct cwait **list, int pid, uint64_t id)
{
	for (; *list; list = &(*list)->next) {
		struct cwait *w = *list;
		if (w->src.pid == pid && w->src.id == id) {
			*list = w->next;
			req_answer_err(&w->src, DW_ETIMEDOUT, "timed out");
			item_free(w->it);
			cw_free(w);
			return 1;
		}
	}
	return 0;
}

void
chan_on_cancel(int pid, uint64_t id)
{
	pthread_mutex_lock(&ch_lock);
	for (int i = 0; i < CH_BUCKETS; i++)
		for (struct chan *ch = ch_tab[i]; ch; ch = ch->next)
			if (cw_cancel(&ch->puts, pid, id) ||
			    cw_cancel(&ch->gets, pid, id))
				goto out;
out:
	pthread_mutex_unlock(&ch_lock);
}

static void
cw_drop_pid(struct cwait **list, int pid)
{
	while (*list) {
		struct cwait *w = *list;
		if (w->src.pid != pid) {
			list = &w->next;
			continue;
		}
		*list = w->next;
		item_free(w->it);
		cw_free(w);
	}
}

/* A process has gone: its holds and parked operations go too. */
void
chan_gone(int pid)
{
	pthread_mutex_lock(&ch_lock);
	for (int i = 0; i < CH_BUCKETS; i++)
		for (struct chan *ch = ch_tab[i], *n; ch; ch = n) {
			n = ch->next;
			cw_drop_pid(&ch->puts, pid);
			cw_drop_pid(&ch->gets, pid);
			holders_drop(&ch->h, pid);
			if (ch->h.total == 0)
				ch_destroy(ch, "the channel was freed");
			else
				ch_settle(ch);
		}
	pthread_mutex_unlock(&ch_lock);
}

int
chan_count(void)
{
	int n = 0;
	pthread_mutex_lock(&ch_lock);
	for (int i = 0; i < CH_BUCKETS; i++)
		for (struct chan *ch = ch_tab[i]; ch; ch = ch->next)
			n++;
	pthread_mutex_unlock(&ch_lock);
	return n;
}

void
chan_shutdown(void)
{
	pthread_mutex_lock(&ch_lock);
	for (int i = 0; i < CH_BUCKETS; i++)
		while (ch_tab[i])
			ch_destroy(ch_tab[i], "the runtime has ended");
	pthread_mutex_unlock(&ch_lock);
}

/* ---- the user's side ---- */

static int
ch_call(dw_channel *ch, int op, const void *data, size_t dlen, int timeout_ms,
        void **res, size_t *reslen)
{
	if (!ch)
		return rt_set_err(0, "no channel"), DW_EINVAL;
	unsigned char b[8];
	wire_put_u64(b, ch->id);
	static const int evs[] = {
	    [REQ_CH_PUT] = DW_CHAN_PUT,     [REQ_CH_TAKE] = DW_CHAN_TAKE,
	    [REQ_CH_FETCH] = DW_CHAN_FETCH, [REQ_CH_READY] = DW_CHAN_READY,
	    [REQ_CH_WAIT] = DW_CHAN_WAIT,   [REQ_CH_CLOSE] = DW_CHAN_CLOSE};
	/* a put waits for room, the others for a value or an answer */
	RTR_WAITS(op == REQ_CH_PUT ? DWT_STATE_BLOCKING_SEND
	                           : DWT_STATE_WAITING_MESSAGE);
	rtr_event(DW_EV_CHANNEL, (uint64_t)evs[op]);
	int err =
	    req_call(ch->owner, op, b, 8, data, dlen, timeout_ms, res, reslen);
	rtr_event(DW_EV_CHANNEL, 0);
	return err;
}

DW_API int
dw_channel_new(int pid, size_t capacity, dw_channel **out)
{
	return dw_channel_new_timeout(pid, capacity, out, 30000);
}

DW_API int
dw_channel_new_timeout(int pid, size_t capacity, dw_channel **out,
                       int timeout_ms)
{
	*out = NULL;
	if (capacity > CH_CAP_MAX)
		return rt_set_err(0, "capacity %zu is over %u", capacity,
		                  CH_CAP_MAX),
		       DW_EINVAL;
	struct dw_channel *ch = malloc(sizeof *ch);
	if (!ch)
		return DW_ENOMEM;
	unsigned char b[8];
	wire_put_u64(b, capacity);
	void *r;
	size_t n;
	RTR_WAITS(DWT_STATE_WAITING_MESSAGE);
	int err = req_call(pid, REQ_CH_NEW, b, 8, NULL, 0, timeout_ms, &r, &n);
	if (err == DW_OK && n != 8)
		err = DW_EPROTO;
	if (err != DW_OK) {
		if (err == DW_EPROTO)
			rt_set_err(pid, "bad answer from process %d", pid);
		free(ch);
		if (err == DW_OK)
			free(r);
		return err;
	}
	ch->owner = pid;
	ch->id = wire_get_u64(r);
	free(r);
	*out = ch;
	return DW_OK;
}

DW_API int
dw_channel_put_timeout(dw_channel *ch, const void *data, size_t len,
                       int timeout_ms)
{
	return ch_call(ch, REQ_CH_PUT, data, len, timeout_ms, NULL, NULL);
}

DW_API int
dw_channel_put(dw_channel *ch, const void *data, size_t len)
{
	return dw_channel_put_timeout(ch, data, len, -1);
}

DW_API int
dw_channel_take_timeout(dw_channel *ch, void **data, size_t *len,
                        int timeout_ms)
{
	return ch_call(ch, REQ_CH_TAKE, NULL, 0, timeout_ms, data, len);
}

DW_API int
dw_channel_take(dw_channel *ch, void **data, size_t *len)
{
	return dw_channel_take_timeout(ch, data, len, -1);
}

DW_API int
dw_channel_fetch_timeout(dw_channel *ch, void **data, size_t *len,
                         int timeout_ms)
{
	return ch_call(ch, REQ_CH_FETCH, NULL, 0, timeout_ms, data, len);
}

DW_API int
dw_channel_fetch(dw_channel *ch, void **data, size_t *len)
{
	return dw_channel_fetch_timeout(ch, data, len, -1);
}

DW_API int
dw_channel_wait_timeout(dw_channel *ch, int timeout_ms)
{
	return ch_call(ch, REQ_CH_WAIT, NULL, 0, timeout_ms, NULL, NULL);
}

DW_API int
dw_channel_wait(dw_channel *ch)
{
	return dw_channel_wait_timeout(ch, -1);
}

DW_API int
dw_channel_isready(dw_channel *ch)
{
	return dw_channel_isready_timeout(ch, 30000);
}

DW_API int
dw_channel_isready_timeout(dw_channel *ch, int timeout_ms)
{
	void *r = NULL;
	size_t n = 0;
	int err = ch_call(ch, REQ_CH_READY, NULL, 0, timeout_ms, &r, &n);
	int ready = err == DW_OK && n == 1 && ((unsigned char *)r)[0];
	free(r);
	return err != DW_OK ? err : ready;
}

DW_API int
dw_channel_close(dw_channel *ch)
{
	return dw_channel_close_timeout(ch, 30000);
}

DW_API int
dw_channel_close_timeout(dw_channel *ch, int timeout_ms)
{
	return ch_call(ch, REQ_CH_CLOSE, NULL, 0, timeout_ms, NULL, NULL);
}

DW_API int
dw_channel_owner(const dw_channel *ch)
{
	return ch ? ch->owner : 0;
}

DW_API void
dw_channel_free(dw_channel *ch)
{
	if (!ch)
		return;
	unsigned char b[13];
	b[0] = REF_CHANNEL;
	wire_put_u32(b + 1, 0);
	wire_put_u64(b + 5, ch->id);
	if (rt.role != RT_NONE)
		req_post(ch->owner, REQ_RELEASE, b, sizeof b, NULL, 0);
	free(ch);
}

DW_API int
dw_channel_export(dw_channel *ch, int to, void **bytes, size_t *len)
{
	return dw_channel_export_timeout(ch, to, bytes, len, 30000);
}

DW_API int
dw_channel_export_timeout(dw_channel *ch, int to, void **bytes, size_t *len,
                          int timeout_ms)
{
	*bytes = NULL;
	*len = 0;
	if (!ch || to < 1)
		return rt_set_err(0, "no channel or no process"), DW_EINVAL;
	unsigned char b[17];
	b[0] = REF_CHANNEL;
	wire_put_u32(b + 1, 0);
	wire_put_u64(b + 5, ch->id);
	wire_put_u32(b + 13, (uint32_t)to);
	int err = req_call(ch->owner, REQ_HOLD, b, sizeof b, NULL, 0,
	                   timeout_ms, NULL, NULL);
	if (err != DW_OK)
		return err;
	struct ref r = {
	    .kind = REF_CHANNEL, .where = ch->owner, .id = ch->id, .to = to};
	err = ref_encode(&r, bytes, len);
	if (err != DW_OK) /* give the hold back */
		req_post(ch->owner, REQ_RELEASE, b, 13, NULL, 0);
	return err;
}

DW_API int
dw_channel_import(const void *bytes, size_t len, dw_channel **out)
{
	struct ref r;
	*out = NULL;
	int err = ref_decode(bytes, len, REF_CHANNEL, &r);
	if (err != DW_OK)
		return err;
	struct dw_channel *ch = malloc(sizeof *ch);
	if (!ch)
		return DW_ENOMEM;
	ch->owner = r.where;
	ch->id = r.id;
	*out = ch;
	return DW_OK;
}
