/*
 * The Chrome trace event writer: PREFIX.json, which Perfetto's UI
 * (ui.perfetto.dev) and chrome://tracing open.  docs/merge.md describes
 * the mapping.
 *
 * One process per task (pid = task + 1: Perfetto treats pid 0 as the
 * kernel's), one thread per thread (tid = its global number + 1, unique
 * in the trace), complete events ("X") for functions and state pieces
 * (output/nest.h), instant events ("i") for events, flow events ("s" and
 * "f") for communications.  Times are microseconds with three decimals.
 *
 * Streamed into a buffer: a slice is written when it closes, which is
 * the only thing held, with one exception: a slice that begins when an
 * enclosing one does is held until that one is written, because viewers
 * take slices of equal start in file order and would make the child the
 * parent.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/labels.h"
#include "output/nest.h"
#include "output/outbuf.h"
#include "output/outfile.h"
#include "output/stats.h"
#include "output/writers.h"

#define JS_PRE      48   /* bytes of a thread's "pid":P,"tid":T, */
#define JS_NAME_MAX 1024 /* bytes of a name kept (escaped: 6x at most) */
#define JS_LINE     512  /* room for a line besides its names */

typedef struct js_name {
	char *s; /* escaped, without quotes */
	uint32_t len;
} js_name;

typedef struct js_slice {
	uint64_t id, begin, end;
	int kind;
} js_slice;

/* Per thread: slices held (see above) and, for each open region, how
 * many were held when it opened. */
typedef struct js_thread {
	js_slice *held;
	uint32_t nheld, capheld;
	uint32_t *marks;
	uint32_t nmarks, capmarks;
} js_thread;

#define JS_BYSTATE 256

typedef struct json_writer {
	mg_writer base;
	char *path, *tmp;
	ob out;
	bool opened, ended;
	const mg_info *info; /* between begin and end */
	nest nest;
	js_thread *th;
	size_t nthreads;
	char *pre; /* thread i's prefix at i * JS_PRE */
	uint8_t *pre_len;
	js_name *states; /* by index in info->labels->states */
	size_t nstates;
	/* states[] by state number below JS_BYSTATE (NULL: no label): a
	 * slice's name without a search (a few percent of the writer) */
	const js_name *by_state[JS_BYSTATE];
	js_name *types; /* by index in info->labels->types (at begin) */
	size_t ntypes;
	js_name *funcs; /* by function id, filled when first used */
	size_t nfuncs;
	js_name *runs[2]; /* DW_EV_FUNCTION, DW_EV_BATCH values: the same */
	size_t nruns[2];
	bool runtime; /* the dwork runtime's trace: flows named by kind */
	uint64_t flows;
	bool any;     /* an event was written */
	st_stats *st; /* the figures, written into otherData at the end */
} json_writer;

static dw_err
fail(json_writer *j, dw_err err, const char *what, const char *path)
{
	return of_fail(&j->base, err, what, path, j->out.errnum);
}

/* ---- Strings ------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (1 to 4), 0 if invalid. */
static unsigned
utf8_len(const unsigned char *s)
{
	unsigned n, c = s[0];
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	for (unsigned i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return n;
}

/* s escaped for a JSON string at p (at most 6 * JS_NAME_MAX bytes):
 * quotes, backslashes and control characters escaped, bytes that are
 * not UTF-8 replaced by U+FFFD.  Returns the end. */
static char *
put_esc(char *p, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	while (u[i] && i < JS_NAME_MAX) {
		unsigned c = u[i], n;

		if (c == '"' || c == '\\') {
			*p++ = '\\';
			*p++ = (char)c;
			i++;
		} else if (c < 0x20) {
			p = ob_mem(p, "\\u00", 4);
			*p++ = hex[c >> 4];
			*p++ = hex[c & 15];
			i++;
		} else if ((n = utf8_len(u + i)) != 0 && i + n <= JS_NAME_MAX) {
			p = ob_mem(p, u + i, n);
			i += n;
		} else {
			p = ob_mem(p, "\\ufffd", 6);
			i++;
		}
	}
	return p;
}

static dw_err
name_set(js_name *n, const char *s)
{
	char *buf = malloc(6 * JS_NAME_MAX + 1), *e;

	if (!buf)
		return DW_ENOMEM;
	e = put_esc(buf, s);
	n->len = (uint32_t)(e - buf);
	n->s = realloc(buf, n->len + 1);
	if (!n->s)
		n->s = buf;
	return DW_OK;
}

/* The name of a region: a user function (type 60000019), or the value
 * of DW_EV_FUNCTION (which = 0) or DW_EV_BATCH (1), cached by id in
 * *tab (of *ntab entries). */
static const js_name *
region_name(json_writer *j, js_name **tab, size_t *ntab, int which, uint64_t id)
{
	static const js_name none = {"function", 8};
	char buf[48];
	const char *s;

	if (id >= *ntab) {
		size_t n = *ntab ? *ntab : 64;
		js_name *v;

		while (n <= id && n < ((size_t)1 << 40))
			n *= 2;
		v = n > id ? realloc(*tab, n * sizeof *v) : NULL;
		if (!v)
			return &none;
		memset(v + *ntab, 0, (n - *ntab) * sizeof *v);
		*tab = v;
		*ntab = n;
	}
	if (!(*tab)[id].s) {
		s = which < 0 ? lb_func(j->info, id)
		    : which
		        ? lb_value(lb_type(j->info->labels, LB_TYPE_BATCH), id)
		        : lb_value(lb_type(j->info->labels, LB_TYPE_RUN), id);
		if (!s) {
			snprintf(buf, sizeof buf, "%s %llu",
			         which > 0 ? "batch" : "function",
			         (unsigned long long)id);
			s = buf;
		}
		if (name_set(&(*tab)[id], s) != DW_OK)
			return &none;
	}
	return &(*tab)[id];
}

static const js_name *
func_name(json_writer *j, uint64_t id)
{
	if (id & NEST_RUN)
		return region_name(j, &j->runs[0], &j->nruns[0], 0,
		                   id & ~NEST_KINDS);
	if (id & NEST_BATCH)
		return region_name(j, &j->runs[1], &j->nruns[1], 1,
		                   id & ~NEST_KINDS);
	return region_name(j, &j->funcs, &j->nfuncs, -1, id);
}

/* ---- Output -------------------------------------------------------------- */

/* ns as microseconds with three decimals. */
static inline char *
put_us(char *p, uint64_t ns)
{
	unsigned r = (unsigned)(ns % 1000);

	p = ob_u64(p, ns / 1000);
	*p++ = '.';
	*p++ = (char)('0' + r / 100);
	memcpy(p, ob_digits + (r % 100) * 2, 2);
	return p + 2;
}

static inline char *
put_thread(const json_writer *j, char *p, uint32_t thread)
{
	memcpy(p, j->pre + (size_t)thread * JS_PRE, JS_PRE);
	return p + j->pre_len[thread];
}

#define PUT(p, lit) ((p) = ob_mem((p), lit, sizeof lit - 1))

static dw_err
need(json_writer *j, size_t n)
{
	return ob_need(&j->out, n);
}

static dw_err
put_raw(json_writer *j, const char *s, size_t n)
{
	dw_err err = need(j, n);

	if (err == DW_OK)
		ob_commit(&j->out, ob_mem(ob_end(&j->out), s, n));
	return err;
}

static const js_name *
state_name(json_writer *j, uint64_t state)
{
	const mg_labels *lb = j->info->labels;
	const mg_state_label *l;

	if (state < JS_BYSTATE)
		return j->by_state[state];
	l = lb_state(lb, (uint32_t)state);

	return l ? &j->states[l - lb->states] : NULL;
}

static dw_err
slice_put(json_writer *j, uint32_t thread, const js_slice *s)
{
	const js_name *n =
	    s->kind == NEST_FUNC ? func_name(j, s->id) : state_name(j, s->id);
	dw_err err = need(j, JS_LINE + (n ? n->len : 0));
	char *p;

	if (err != DW_OK)
		return err;
	p = ob_end(&j->out);
	PUT(p, ",\n{\"ph\":\"X\",");
	p = put_thread(j, p, thread);
	PUT(p, "\"ts\":");
	p = put_us(p, s->begin);
	PUT(p, ",\"dur\":");
	p = put_us(p, s->end - s->begin);
	PUT(p, ",\"name\":\"");
	if (n) {
		p = ob_mem(p, n->s, n->len);
	} else {
		PUT(p, "State ");
		p = ob_u64(p, s->id);
	}
	if (s->kind == NEST_FUNC && (s->id & NEST_RUN))
		PUT(p, "\",\"cat\":\"run\"}");
	else if (s->kind == NEST_FUNC && (s->id & NEST_BATCH))
		PUT(p, "\",\"cat\":\"batch\"}");
	else if (s->kind == NEST_FUNC)
		PUT(p, "\",\"cat\":\"function\"}");
	else
		PUT(p, "\",\"cat\":\"state\"}");
	ob_commit(&j->out, p);
	return DW_OK;
}

/* ---- Regions (nest callbacks) -------------------------------------------- */

static bool
grow(void **v, uint32_t *cap, size_t size)
{
	uint32_t n = *cap ? *cap * 2 : 8;
	void *w = realloc(*v, n * size);

	if (!w)
		return false;
	*v = w;
	*cap = n;
	return true;
}

static dw_err
js_open(void *ctx, uint32_t thread, int kind, uint64_t id, uint64_t t)
{
	js_thread *th = &((json_writer *)ctx)->th[thread];

	(void)kind, (void)id, (void)t;
	if (th->nmarks == th->capmarks &&
	    !grow((void **)&th->marks, &th->capmarks, sizeof *th->marks))
		return DW_ENOMEM;
	th->marks[th->nmarks++] = th->nheld;
	return DW_OK;
}

static dw_err
js_close(void *ctx, uint32_t thread, int kind, uint64_t id, uint64_t begin,
         uint64_t end, unsigned flags)
{
	json_writer *j = ctx;
	js_thread *th = &j->th[thread];
	js_slice s = {id, begin, end, kind};
	uint32_t mark = th->nmarks ? th->marks[--th->nmarks] : 0;
	dw_err err;

	if (flags & NEST_SAME_BEGIN) {
		if (th->nheld == th->capheld &&
		    !grow((void **)&th->held, &th->capheld, sizeof *th->held))
			return DW_ENOMEM;
		th->held[th->nheld++] = s;
		return DW_OK;
	}
	err = slice_put(j, thread, &s);
	/* What waited for this slice, enclosing ones first. */
	while (err == DW_OK && th->nheld > mark)
		err = slice_put(j, thread, &th->held[--th->nheld]);
	return err;
}

static const nest_ops js_nest_ops = {js_open, js_close};

/* ---- Records ------------------------------------------------------------- */

static const js_name *
type_name(json_writer *j, uint32_t type, const mg_type_label **tl)
{
	const mg_labels *lb = j->info->labels;

	*tl = lb_type(lb, type);
	if (*tl && (size_t)(*tl - lb->types) < j->ntypes)
		return &j->types[*tl - lb->types];
	return NULL;
}

static dw_err
instant(json_writer *j, uint32_t thread, uint64_t t, const mg_pair *pr)
{
	const mg_type_label *tl;
	const js_name *n = type_name(j, pr->type, &tl);
	const char *v = lb_value(tl, pr->value);
	dw_err err =
	    need(j, JS_LINE + (n ? n->len : 0) + (v ? 6 * JS_NAME_MAX : 0));
	char *p;

	if (err != DW_OK)
		return err;
	p = ob_end(&j->out);
	PUT(p, ",\n{\"ph\":\"i\",\"s\":\"t\",");
	p = put_thread(j, p, thread);
	PUT(p, "\"ts\":");
	p = put_us(p, t);
	PUT(p, ",\"name\":\"");
	if (n) {
		p = ob_mem(p, n->s, n->len);
	} else {
		PUT(p, "Event type ");
		p = ob_u64(p, pr->type);
	}
	PUT(p, "\",\"cat\":\"event\",\"args\":{\"type\":");
	p = ob_u64(p, pr->type);
	PUT(p, ",\"value\":");
	p = ob_u64(p, pr->value);
	if (v) {
		PUT(p, ",\"label\":\"");
		p = put_esc(p, v);
		*p++ = '"';
	}
	PUT(p, "}}");
	ob_commit(&j->out, p);
	return DW_OK;
}

static dw_err
events(json_writer *j, const mg_rec *r)
{
	dw_err err = DW_OK;

	for (uint32_t i = 0; err == DW_OK && i < r->u.event.n; i++) {
		const mg_pair *pr = &r->u.event.pairs[i];

		if (pr->type == LB_TYPE_FUNC) {
			err =
			    nest_func(&j->nest, r->thread, r->time, pr->value);
		} else if (pr->type == LB_TYPE_RUN ||
		           pr->type == LB_TYPE_BATCH) {
			err = nest_run(&j->nest, r->thread, r->time,
			               pr->type == LB_TYPE_RUN ? NEST_RUN
			                                       : NEST_BATCH,
			               pr->value);
		} else if (pr->type == LB_TYPE_FUNC_LINE) {
			continue; /* the function's region says it */
		} else {
			err = nest_touch(&j->nest, r->thread, r->time);
			if (err == DW_OK)
				err = instant(j, r->thread, r->time, pr);
		}
	}
	return err;
}

/* The receive's time: when the receiver has the message (the later of
 * its two times; never before the send). */
static uint64_t
recv_time(const mg_rec *r)
{
	uint64_t t = r->u.comm.log_recv > r->u.comm.phy_recv
	                 ? r->u.comm.log_recv
	                 : r->u.comm.phy_recv;

	return t > r->time ? t : r->time;
}

/* A message's name: its kind in a dwork runtime trace ("call", ...). */
static const char *
flow_name(const json_writer *j, uint32_t tag)
{
	const char *k = j->runtime ? lb_comm_kind(tag) : NULL;

	return k ? k : "message";
}

static dw_err
flow(json_writer *j, const mg_rec *r)
{
	dw_err err = nest_touch(&j->nest, r->thread, r->time);
	const char *name = flow_name(j, r->u.comm.tag);
	/* A call, fetch or request starts the receiver's work: its end
	 * binds to the next slice there (the run it starts); a result or
	 * answer to the slice that waits for it. */
	bool next = j->runtime && r->u.comm.tag % 2 == 0 && r->u.comm.tag <= 4;
	char *p;

	if (err == DW_OK)
		err = need(j, 2 * JS_LINE);
	if (err != DW_OK)
		return err;
	j->flows++;
	p = ob_end(&j->out);
	PUT(p, ",\n{\"ph\":\"s\",\"id\":");
	p = ob_u64(p, j->flows);
	*p++ = ',';
	p = put_thread(j, p, r->thread);
	PUT(p, "\"ts\":");
	p = put_us(p, r->time);
	PUT(p, ",\"name\":\"");
	p = ob_mem(p, name, strlen(name));
	PUT(p, "\",\"cat\":\"comm\",\"args\":{\"size\":");
	p = ob_u64(p, r->u.comm.size);
	PUT(p, ",\"tag\":");
	p = ob_u64(p, r->u.comm.tag);
	if (next)
		PUT(p, "}},\n{\"ph\":\"f\",\"id\":");
	else
		PUT(p, "}},\n{\"ph\":\"f\",\"bp\":\"e\",\"id\":");
	p = ob_u64(p, j->flows);
	*p++ = ',';
	p = put_thread(j, p, r->u.comm.recv_thread);
	PUT(p, "\"ts\":");
	p = put_us(p, !next                          ? recv_time(r)
	              : r->u.comm.log_recv > r->time ? r->u.comm.log_recv
	                                             : r->time);
	PUT(p, ",\"name\":\"");
	p = ob_mem(p, name, strlen(name));
	PUT(p, "\",\"cat\":\"comm\"}");
	ob_commit(&j->out, p);
	return DW_OK;
}

/* An error of the figures' writer, as this writer's. */
static dw_err
figures(json_writer *j, dw_err err)
{
	if (err != DW_OK)
		snprintf(j->base.err, sizeof j->base.err, "%s",
		         j->st->base.err);
	return err;
}

static dw_err
json_record(mg_writer *w, const mg_rec *r)
{
	json_writer *j = (json_writer *)w;
	dw_err err;

	if (r->thread >= j->info->nthreads ||
	    (r->kind == MG_COMM && r->u.comm.recv_thread >= j->info->nthreads))
		return DW_OK; /* not in the shape: cannot happen */
	if (r->kind == MG_STATE)
		err = nest_state(&j->nest, r->thread, r->time, r->u.state.end,
		                 r->u.state.state);
	else if (r->kind == MG_EVENT)
		err = events(j, r);
	else
		err = flow(j, r);
	if (err != DW_OK)
		return fail(j, err, "write", j->tmp);
	return figures(j, j->st->base.ops->record(&j->st->base, r));
}

/* ---- Begin --------------------------------------------------------------- */

static dw_err
meta(json_writer *j, const char *kind, uint32_t pid, int64_t tid,
     const char *key, const char *name, uint64_t num)
{
	dw_err err = need(j, JS_LINE + 6 * JS_NAME_MAX);
	char *p;

	if (err != DW_OK)
		return err;
	p = ob_end(&j->out);
	if (j->any)
		*p++ = ',';
	j->any = true;
	PUT(p, "\n{\"ph\":\"M\",\"pid\":");
	p = ob_u64(p, pid);
	if (tid >= 0) {
		PUT(p, ",\"tid\":");
		p = ob_u64(p, (uint64_t)tid);
	}
	PUT(p, ",\"name\":\"");
	p = ob_mem(p, kind, strlen(kind));
	PUT(p, "\",\"args\":{\"");
	p = ob_mem(p, key, strlen(key));
	PUT(p, "\":");
	if (name) {
		*p++ = '"';
		p = put_esc(p, name);
		*p++ = '"';
	} else {
		p = ob_u64(p, num);
	}
	PUT(p, "}}");
	ob_commit(&j->out, p);
	return DW_OK;
}

static dw_err
metadata(json_writer *j, const mg_info *info)
{
	dw_err err = DW_OK;

	for (size_t i = 0; err == DW_OK && i < info->ntasks; i++) {
		uint32_t pid = (uint32_t)i + 1;

		err = meta(j, "process_name", pid, -1, "name",
		           info->tasks[i].name, 0);
		if (err == DW_OK)
			err = meta(j, "process_sort_index", pid, -1,
			           "sort_index", NULL, i);
	}
	for (size_t i = 0; err == DW_OK && i < info->nthreads; i++) {
		const mg_thread *t = &info->threads[i];

		err = meta(j, "thread_name", t->task + 1, (int64_t)i + 1,
		           "name", t->name, 0);
		if (err == DW_OK)
			err = meta(j, "thread_sort_index", t->task + 1,
			           (int64_t)i + 1, "sort_index", NULL, t->num);
	}
	return err;
}

static dw_err
header(json_writer *j, const mg_info *info)
{
	char *p;
	dw_err err = need(j, JS_LINE + 6 * JS_NAME_MAX);

	if (err != DW_OK)
		return err;
	p = ob_end(&j->out);
	PUT(p, "{\"displayTimeUnit\":\"ns\",\n\"traceEvents\":[");
	ob_commit(&j->out, p);
	return metadata(j, info);
}

static dw_err
put_long(json_writer *j, const char *s, size_t n)
{
	dw_err err = DW_OK;

	while (err == DW_OK && n) {
		size_t k = n < 65536 ? n : 65536;

		err = put_raw(j, s, k);
		s += k, n -= k;
	}
	return err;
}

/* otherData, after the events: it carries the figures, known only at
 * the end (the same as `dwork stats`, output/stats.h). */
static dw_err
other_data(json_writer *j, const mg_info *info)
{
	char *buf = NULL, *p;
	size_t len = 0;
	FILE *f;
	dw_err err = need(j, JS_LINE + 6 * JS_NAME_MAX);

	if (err != DW_OK)
		return err;
	p = ob_end(&j->out);
	PUT(p, "\n],\n\"otherData\":{\"program\":\"");
	p = put_esc(p, info->program ? info->program : "");
	PUT(p, "\",\"start_real_ns\":");
	p = ob_u64(
	    p, (uint64_t)(info->start_real_ns > 0 ? info->start_real_ns : 0));
	PUT(p, ",\"duration_ns\":");
	p = ob_u64(p, info->duration);
	PUT(p, ",\"writer\":\"dwork\",\"summary\":");
	ob_commit(&j->out, p);
	if (!(f = open_memstream(&buf, &len)))
		return DW_ENOMEM;
	st_print_figures_json(j->st, f);
	if (fclose(f) != 0) {
		free(buf);
		return DW_ENOMEM;
	}
	err = put_long(j, buf, len);
	free(buf);
	return err == DW_OK ? put_raw(j, "}}\n", 3) : err;
}

static dw_err
tables(json_writer *j, const mg_info *info)
{
	const mg_labels *lb = info->labels;
	dw_err err = DW_OK;

	j->th = calloc(info->nthreads + 1, sizeof *j->th);
	j->pre = calloc(info->nthreads + 1, JS_PRE);
	j->pre_len = calloc(info->nthreads + 1, 1);
	j->states = calloc(lb->nstates + 1, sizeof *j->states);
	j->types = calloc(lb->ntypes + 1, sizeof *j->types);
	if (!j->th || !j->pre || !j->pre_len || !j->states || !j->types)
		return DW_ENOMEM;
	j->ntypes = lb->ntypes;
	j->nstates = lb->nstates;
	j->nthreads = info->nthreads;
	for (size_t i = 0; i < info->nthreads; i++) {
		int n = snprintf(j->pre + i * JS_PRE, JS_PRE,
		                 "\"pid\":%u,\"tid\":%zu,",
		                 info->threads[i].task + 1, i + 1);

		if (n < 0 || n >= JS_PRE)
			return DW_EINVAL;
		j->pre_len[i] = (uint8_t)n;
	}
	for (size_t i = 0; err == DW_OK && i < lb->nstates; i++)
		err = name_set(&j->states[i], lb->states[i].name);
	for (uint32_t st = 0; st < JS_BYSTATE; st++) {
		const mg_state_label *l = lb_state(lb, st);

		j->by_state[st] = l ? &j->states[l - lb->states] : NULL;
	}
	for (size_t i = 0; err == DW_OK && i < lb->ntypes; i++)
		err = name_set(&j->types[i], lb->types[i].name);
	return err;
}

static dw_err
json_begin(mg_writer *w, const mg_info *info)
{
	json_writer *j = (json_writer *)w;
	dw_err err = ob_open(&j->out, j->tmp);

	if (err != DW_OK)
		return fail(j, err, "create", j->tmp);
	j->opened = true;
	j->info = info;
	j->runtime = lb_is_runtime(info->labels);
	err = nest_init(&j->nest, (uint32_t)info->nthreads, &js_nest_ops, j);
	if (err == DW_OK)
		err = tables(j, info);
	if (err == DW_OK)
		err = header(j, info);
	if (err != DW_OK)
		return fail(j, err, "write", j->tmp);
	return figures(j, j->st->base.ops->begin(&j->st->base, info));
}

/* ---- End ----------------------------------------------------------------- */

static dw_err
json_end(mg_writer *w, const mg_info *info)
{
	json_writer *j = (json_writer *)w;
	dw_err err;

	j->info = info;
	err = figures(j, j->st->base.ops->end(&j->st->base, info));
	if (err != DW_OK)
		return err;
	err = nest_finish(&j->nest);
	if (err == DW_OK)
		err = other_data(j, info);
	if (err != DW_OK)
		return fail(j, err, "write", j->tmp);
	j->opened = false;
	err = ob_close(&j->out);
	if (err != DW_OK)
		return fail(j, err, "write", j->tmp);
	err = of_commit(&j->base, j->tmp, j->path);
	if (err != DW_OK)
		return err;
	j->ended = true;
	return DW_OK;
}

static void
json_free(mg_writer *w)
{
	json_writer *j = (json_writer *)w;

	if (j->opened)
		ob_discard(&j->out);
	for (size_t i = 0; j->th && i < j->nthreads; i++) {
		free(j->th[i].held);
		free(j->th[i].marks);
	}
	for (size_t i = 0; j->states && i < j->nstates; i++)
		free(j->states[i].s);
	for (size_t i = 0; j->types && i < j->ntypes; i++)
		free(j->types[i].s);
	for (size_t i = 0; i < j->nfuncs; i++)
		free(j->funcs[i].s);
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < j->nruns[k]; i++)
			free(j->runs[k][i].s);
		free(j->runs[k]);
	}
	nest_free(&j->nest);
	st_stats_free(j->st);
	free(j->th);
	free(j->pre);
	free(j->pre_len);
	free(j->states);
	free(j->types);
	free(j->funcs);
	of_names_free(j->path, j->tmp, !j->ended);
	free(j);
}

static const mg_writer_ops json_ops = {
    .name = "json",
    .begin = json_begin,
    .record = json_record,
    .end = json_end,
    .free = json_free,
};

dw_err
json_writer_new(const char *prefix, mg_writer **out)
{
	json_writer *j = calloc(1, sizeof *j);

	*out = NULL;
	if (!j)
		return DW_ENOMEM;
	j->base.ops = &json_ops;
	j->out.fd = -1;
	if (of_names(&j->path, &j->tmp, prefix, ".json") != DW_OK ||
	    st_stats_new(prefix, &j->st) != DW_OK) {
		j->ended = true;
		json_free(&j->base);
		return DW_ENOMEM;
	}
	*out = &j->base;
	return DW_OK;
}
