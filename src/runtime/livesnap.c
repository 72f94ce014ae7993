/*
 * Collection and the snapshot (live.h).  Workers answer each heartbeat
 * PING with a STATS frame; the master keeps the last two of each, and
 * makes of them the snapshot (JSON or a text table) that the control
 * socket (control.c) gives `dwork top`.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/pop.h"
#include "runtime/live.h"
#include "runtime/call.h"
#include "runtime/rt.h"
#include "runtime/rtrace.h"
#include "runtime/wire.h"

#include <dwork/trace.h>

#define LIVE_GONE 64 /* exited workers remembered */

struct live_w {
	int id;
	uint64_t gen; /* the refresh its newest figures answer */
	struct acct_snap cur, prev;
	int have_prev;
	uint64_t cur_ms; /* rt_now_ms when cur arrived */
};

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct live_w *ws;
static size_t nws, ws_cap;
static struct live_w master_w;
static struct {
	int id;
	char why[300];
} gone[LIVE_GONE];
static int ngone;
static pthread_cond_t live_cv = PTHREAD_COND_INITIALIZER;
static uint64_t live_gen;

/* ---- collection ---- */

static uint32_t
live_queue(void)
{
	uint32_t n = 0;
	pthread_mutex_lock(&rt.lock);
	if (rt.role == RT_MASTER)
		n = (uint32_t)pend_count();
	else
		for (struct job *j = rt.jobs; j; j = j->next)
			n++;
	pthread_mutex_unlock(&rt.lock);
	return n;
}

static void
live_send_stats(struct conn *c, uint64_t ref)
{
	unsigned char *b = malloc(ACCT_STATS_MAX + LIVE_TAIL_MAX);
	if (!b)
		return;
	/* the reader was in the state under the frame handling */
	uint32_t self = ACCT_NCLASS;
	int d = rtr_depth;
	if (d >= 2 && d <= RTR_STACK &&
	    (rtr_stack[d - 1] & RTR_STATE) == DWT_STATE_SEND_RECEIVE)
		self = acct_class_of(rtr_stack[d - 2] & RTR_STATE);
	size_t n = acct_encode(b, live_queue(), self);
	n += live_tail_put(b + n);
	struct frame f;
	frame_init(&f, WIRE_STATS, ref, NULL, 0, b, n, 1);
	conn_send(c, &f, 0);
}

static struct live_w *
live_slot(int id)
{
	for (size_t i = 0; i < nws; i++)
		if (ws[i].id == id)
			return &ws[i];
	if (nws == ws_cap) {
		size_t nc = ws_cap ? 2 * ws_cap : 16;
		void *p = realloc(ws, nc * sizeof *ws);
		if (!p)
			return NULL;
		ws = p;
		ws_cap = nc;
	}
	memset(&ws[nws], 0, sizeof ws[nws]);
	ws[nws].id = id;
	return &ws[nws++];
}

/* Keeps s as w's newest figures; the one before becomes the interval's
 * start once it is a heartbeat old (lock held). */
static void
live_roll(struct live_w *w, struct acct_snap *s, uint64_t now)
{
	uint64_t period =
	    (uint64_t)(rt.opts.heartbeat_ms > 0 ? rt.opts.heartbeat_ms : 1000);
	if (w->cur_ms && now - w->cur_ms + 50 >= period) {
		acct_snap_free(&w->prev);
		w->prev = w->cur;
		w->have_prev = 1;
	} else {
		acct_snap_free(&w->cur);
	}
	w->cur = *s;
	w->cur_ms = now;
}

static void
live_sample_master(uint64_t now)
{
	unsigned char *b = malloc(ACCT_STATS_MAX);
	struct acct_snap s;
	char why[128];
	if (b && acct_decode(b, acct_encode(b, live_queue(), ACCT_NCLASS), &s,
	                     why, sizeof why) == 0) {
		snprintf(s.host, sizeof s.host, "%s", live_my_host());
		s.hwc = hwc_totals(&s.cycles, &s.instr);
		live_roll(&master_w, &s, now);
	}
	free(b);
}

static void
live_store(int id, const unsigned char *p, size_t len, struct conn *c,
           uint64_t gen)
{
	struct acct_snap s;
	char why[160];
	if (acct_decode(p, len, &s, why, sizeof why) < 0) {
		conn_fail(c, "%s", why);
		return;
	}
	live_tail_get(p + s.used, len - s.used, &s);
	uint64_t now = rt_now_ms();
	pthread_mutex_lock(&live_lock);
	struct live_w *w = live_slot(id);
	if (w) {
		live_roll(w, &s, now);
		if (gen > w->gen)
			w->gen = gen;
		pthread_cond_broadcast(&live_cv);
	} else {
		acct_snap_free(&s);
	}
	pthread_mutex_unlock(&live_lock);
}

int
live_on_frame(struct conn *c, const struct wire_hdr *h, unsigned char *p)
{
	if (h->type == WIRE_PING && rt.role == RT_WORKER && c == rt.master &&
	    acct_on)
		live_send_stats(c, 0); /* goes out before the PONG */
	if (h->type != WIRE_STATS)
		return 0;
	if (rt.role == RT_MASTER)
		live_store(c->peer, p, h->payload, c, h->ref);
	else if (c == rt.master && h->payload == 0)
		live_send_stats(c, h->ref); /* a region's fresh sample */
	else
		conn_fail(c, "STATS from process %d, not the master", c->peer);
	free(p);
	return 1;
}

void
live_worker_gone(int id, const char *why)
{
	pthread_mutex_lock(&live_lock);
	for (size_t i = 0; i < nws; i++)
		if (ws[i].id == id) {
			acct_snap_free(&ws[i].cur);
			acct_snap_free(&ws[i].prev);
			ws[i] = ws[--nws];
			break;
		}
	int k =
	    ngone < LIVE_GONE
	        ? ngone++
	        : (memmove(gone, gone + 1, sizeof gone[0] * (LIVE_GONE - 1)),
	           LIVE_GONE - 1);
	gone[k].id = id;
	snprintf(gone[k].why, sizeof gone[k].why, "%s", why);
	pthread_mutex_unlock(&live_lock);
}

static uint64_t live_useful(const struct acct_snap *s, uint32_t *counted);

/* ---- fresh figures (regions) ---- */

static int
live_answered(const int *ids, int n, uint64_t g)
{
	for (int i = 0; i < n; i++) {
		int ok = 0;
		for (size_t k = 0; k < nws && !ok; k++)
			ok = ws[k].id == ids[i] && ws[k].gen >= g;
		int left = 1;
		for (int k = 0; k < ngone && left; k++)
			left = gone[k].id != ids[i];
		if (!ok && left)
			return 0;
	}
	return 1;
}

void
live_refresh(int timeout_ms)
{
	int cap = 64, n = 0;
	int *ids = malloc((size_t)cap * sizeof *ids);
	if (!ids)
		return;
	pthread_mutex_lock(&live_lock);
	uint64_t g = ++live_gen;
	pthread_mutex_unlock(&live_lock);
	pthread_mutex_lock(&rt.lock);
	for (struct worker *w = rt.workers; w; w = w->next) {
		if (w->state != W_ACTIVE)
			continue;
		if (n == cap) {
			int *q = realloc(ids, (size_t)(cap *= 2) * sizeof *ids);
			if (!q)
				break;
			ids = q;
		}
		if (conn_send_msg(w->conn, WIRE_STATS, g, NULL, 0, NULL, 0) ==
		    DW_OK)
			ids[n++] = w->id;
	}
	pthread_mutex_unlock(&rt.lock);
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += timeout_ms / 1000;
	dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L)
		dl.tv_sec++, dl.tv_nsec -= 1000000000L;
	pthread_mutex_lock(&live_lock);
	while (!live_answered(ids, n, g))
		if (rt_cond_wait(&live_cv, &live_lock, &dl,
		                 DWT_STATE_SYNCHRONIZATION) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&live_lock);
	free(ids);
}

static uint64_t
live_issued(const struct acct_snap *s)
{
	uint64_t n = 0;
	for (uint32_t k = 0; k < s->nfn; k++)
		n += s->fn[k].issued;
	return n;
}

static void
live_fig_of(const struct live_w *w, int id, struct live_fig *o)
{
	uint32_t counted;
	o->id = id;
	o->useful = live_useful(&w->cur, &counted);
	o->issued = live_issued(&w->cur);
	snprintf(o->host, sizeof o->host, "%s", w->cur.host);
	o->hwc = w->cur.hwc;
	o->cycles = w->cur.cycles;
	o->instr = w->cur.instr;
}

size_t
live_figs_all(struct live_fig *out, size_t max)
{
	size_t n = 0;
	pthread_mutex_lock(&live_lock);
	live_sample_master(rt_now_ms());
	if (max)
		live_fig_of(&master_w, 1, &out[n++]);
	for (size_t i = 0; i < nws && n < max; i++)
		live_fig_of(&ws[i], ws[i].id, &out[n++]);
	pthread_mutex_unlock(&live_lock);
	return n;
}

/* ---- the snapshot ---- */

struct live_row {
	int id;
	const char *state;
	double useful, useful_total; /* fractions of the counted threads */
	double f_int, f_tot;         /* useful / elapsed, for the POP */
	double interval_ms; /* the span "useful" covers, up to the figures */
	uint64_t served, issued, rss, sent, recv;
	uint32_t queue, counted;
	double share[ACCT_NCLASS]; /* of the interval's counted time */
	const char *fn, *host;
	uint64_t age_ms;
};

static const char *const class_names[] = {"useful", "waiting", "runtime",
                                          "idle", "-"};

/* The state shown for a process: its busiest counted thread's. */
static const char *
live_state(const struct acct_snap *s)
{
	int best = ACCT_NCLASS;
	static const int rank[] = {0, 1, 2, 3, 4};
	for (uint32_t i = 0; i < s->nthr; i++)
		if (s->thr[i].role != ACCT_NOT_COUNTED &&
		    rank[s->thr[i].cls] < rank[best])
			best = s->thr[i].cls;
	return class_names[best];
}

static uint64_t
live_class(const struct acct_snap *s, int k)
{
	uint64_t v = 0;
	for (uint32_t i = 0; i < s->nthr; i++)
		if (s->thr[i].role != ACCT_NOT_COUNTED)
			v += s->thr[i].ns[k];
	return v;
}

/* Each class's share of the time of w's counted threads, over the last
 * interval (since start before there is one). */
static void
live_shares(const struct live_w *w, double *share)
{
	uint64_t d[ACCT_NCLASS], sum = 0;
	for (int k = 0; k < ACCT_NCLASS; k++) {
		uint64_t a = live_class(&w->cur, k);
		uint64_t b = w->have_prev ? live_class(&w->prev, k) : 0;
		d[k] = a >= b ? a - b : 0;
		sum += d[k];
	}
	for (int k = 0; k < ACCT_NCLASS; k++)
		share[k] = sum ? (double)d[k] / (double)sum : 0;
}

static uint64_t
live_useful(const struct acct_snap *s, uint32_t *counted)
{
	uint64_t u = 0;
	*counted = 0;
	for (uint32_t i = 0; i < s->nthr; i++)
		if (s->thr[i].role != ACCT_NOT_COUNTED) {
			u += s->thr[i].ns[ACCT_USEFUL];
			/* a thread that ended keeps its time, not its place */
			*counted += s->thr[i].cls != ACCT_NCLASS;
		}
	return u;
}

static const char *
live_fn_now(const struct acct_snap *s)
{
	for (uint32_t i = 0; i < s->nthr; i++)
		if (s->thr[i].role != ACCT_NOT_COUNTED && s->thr[i].fn)
			for (uint32_t k = 0; k < s->nfn; k++)
				if (s->fn[k].id == s->thr[i].fn)
					return s->fn[k].name;
	return "";
}

static void
live_row_of(const struct live_w *w, uint64_t now_ms, double elapsed_ns,
            struct live_row *r)
{
	const struct acct_snap *s = &w->cur;
	memset(r, 0, sizeof *r);
	r->id = w->id;
	r->state = live_state(s);
	uint64_t u = live_useful(s, &r->counted);
	double n = r->counted ? r->counted : 1;
	r->useful_total = s->at ? u / (s->at * n) : 0;
	r->f_tot = elapsed_ns > 0 ? u / elapsed_ns : 0;
	r->useful = r->useful_total;
	r->f_int = r->useful_total * n;
	r->interval_ms = (double)s->at * 1e-6;
	if (w->have_prev && s->at > w->prev.at) {
		uint32_t pc;
		uint64_t pu = live_useful(&w->prev, &pc);
		double dt = (double)(s->at - w->prev.at);
		r->interval_ms = dt * 1e-6;
		r->f_int = u >= pu ? (u - pu) / dt : 0;
		r->useful = r->f_int / n;
	}
	for (uint32_t k = 0; k < s->nfn; k++) {
		r->served += s->fn[k].served;
		r->issued += s->fn[k].issued;
	}
	r->rss = s->rss;
	r->sent = s->sent;
	r->recv = s->recv;
	r->queue = s->queue;
	r->fn = live_fn_now(s);
	r->host = s->host;
	live_shares(w, r->share);
	r->age_ms = now_ms - w->cur_ms;
}

static int
live_row_cmp(const void *a, const void *b)
{
	const struct live_row *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

struct live_pop {
	double lb, comm, pe;
	int valid;
};

/* The POP metrics of n processes' useful fractions of one elapsed time
 * (common/pop.h's formulas with the elapsed time as unit). */
static struct live_pop
live_pop(const struct live_row *r, size_t n, int interval)
{
	struct pop_basic b = {0};
	for (size_t i = 0; i < n; i++)
		pop_add(&b, interval ? r[i].f_int : r[i].f_tot);
	pop_finish(&b, 1.0);
	return (struct live_pop){b.lb, b.comm, b.pe, b.valid};
}

void
live_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void
live_json_pop(FILE *f, const char *name, struct live_pop p)
{
	if (p.valid)
		fprintf(f,
		        "\"%s\":{\"load_balance\":%.4f,"
		        "\"communication_efficiency\":%.4f,"
		        "\"parallel_efficiency\":%.4f}",
		        name, p.lb, p.comm, p.pe);
	else
		fprintf(f, "\"%s\":null", name);
}

static void
live_json(FILE *f, const struct live_row *r, size_t n, double up_s)
{
	fprintf(f, "{\"pid\":%d,\"uptime_s\":%.3f,\"heartbeat_ms\":%d,",
	        (int)getpid(), up_s, rt.opts.heartbeat_ms);
	fputs("\"processes\":[", f);
	for (size_t i = 0; i < n; i++) {
		fprintf(f,
		        "%s{\"id\":%d,\"state\":\"%s\",\"useful\":%.4f,"
		        "\"useful_since_start\":%.4f,\"served\":%llu,"
		        "\"issued\":%llu,\"function\":",
		        i ? "," : "", r[i].id, r[i].state, r[i].useful,
		        r[i].useful_total, (unsigned long long)r[i].served,
		        (unsigned long long)r[i].issued);
		live_json_str(f, r[i].fn);
		fprintf(f,
		        ",\"time\":{\"useful\":%.4f,\"waiting\":%.4f,"
		        "\"runtime\":%.4f,\"idle\":%.4f}",
		        r[i].share[0], r[i].share[1], r[i].share[2],
		        r[i].share[3]);
		fputs(",\"host\":", f);
		live_json_str(f, r[i].host);
		fprintf(f,
		        ",\"queue\":%u,\"rss_bytes\":%llu,\"bytes_sent\":%llu,"
		        "\"bytes_received\":%llu,\"interval_ms\":%.3f,"
		        "\"age_ms\":%llu}",
		        r[i].queue, (unsigned long long)r[i].rss,
		        (unsigned long long)r[i].sent,
		        (unsigned long long)r[i].recv, r[i].interval_ms,
		        (unsigned long long)r[i].age_ms);
	}
	fputs("],\"exited\":[", f);
	for (int i = 0; i < ngone; i++) {
		fprintf(f, "%s{\"id\":%d,\"reason\":", i ? "," : "",
		        gone[i].id);
		live_json_str(f, gone[i].why);
		fputc('}', f);
	}
	fputs("],\"cluster\":{", f);
	live_json_pop(f, "interval", live_pop(r, n, 1));
	fputc(',', f);
	live_json_pop(f, "since_start", live_pop(r, n, 0));
	fputs("}", f);
}

static void
live_text(FILE *f, const struct live_row *r, size_t n, double up_s)
{
	fprintf(f,
	        "dwork top: pid %d, up %.1f s, %zu processes (figures up to "
	        "%d ms old)\n",
	        (int)getpid(), up_s, n, rt.opts.heartbeat_ms);
	fprintf(f, "%5s  %-8s %8s %8s %9s  %-20s %6s %9s  %s\n", "id", "state",
	        "useful%", "total%", "served", "function", "queue", "rss",
	        "host");
	for (size_t i = 0; i < n; i++)
		fprintf(f,
		        "%5d  %-8s %8.1f %8.1f %9llu  %-20.20s %6u %8.1fM  "
		        "%.32s\n",
		        r[i].id, r[i].state, 100 * r[i].useful,
		        100 * r[i].useful_total,
		        (unsigned long long)r[i].served, r[i].fn, r[i].queue,
		        r[i].rss / 1048576.0, r[i].host[0] ? r[i].host : "-");
	struct live_pop a = live_pop(r, n, 1), b = live_pop(r, n, 0);
	fprintf(f, "%-24s %9s %12s\n", "cluster", "interval", "since start");
	fprintf(f, "%-24s %9.3f %12.3f\n", "load balance", a.lb, b.lb);
	fprintf(f, "%-24s %9.3f %12.3f\n", "communication efficiency", a.comm,
	        b.comm);
	fprintf(f, "%-24s %9.3f %12.3f\n", "parallel efficiency", a.pe, b.pe);
	for (int i = 0; i < ngone; i++)
		fprintf(f, "exited: %s\n", gone[i].why);
}

/* The snapshot in format 0 (JSON) or 1 (text); malloc'd, *len bytes. */
char *
live_snapshot(int fmt, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	uint64_t now = rt_now_ms();
	pthread_mutex_lock(&live_lock);
	live_sample_master(now);
	master_w.id = 1;
	struct live_row *r = calloc(nws + 1, sizeof *r);
	double elapsed = (double)master_w.cur.at;
	size_t n = 0;
	if (r) {
		live_row_of(&master_w, now, elapsed, &r[n++]);
		for (size_t i = 0; i < nws; i++)
			live_row_of(&ws[i], now, elapsed, &r[n++]);
		qsort(r, n, sizeof *r, live_row_cmp);
		if (fmt == 1)
			live_text(f, r, n, elapsed * 1e-9);
		else
			live_json(f, r, n, elapsed * 1e-9);
	}
	pthread_mutex_unlock(&live_lock);
	if (fmt != 1) {
		fputs(",\"regions\":", f);
		region_json(f);
		fputs("}\n", f);
	} else {
		region_text(f);
	}
	free(r);
	fclose(f);
	return buf;
}
