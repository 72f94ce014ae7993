/*
 * The Chrome trace event writer's events formatted (json_int.h):
 * strings escaped as JSON (bytes that are not UTF-8 replaced), the
 * names of regions cached, and one line each for a slice, an instant,
 * a flow and a metadata event.  json.c says what maps to what.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/json_int.h"
#include "output/labels.h"

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
char *
js_put_esc(char *p, const char *s)
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

dw_err
js_name_frag(js_name *n, const char *head, const char *s, const char *tail)
{
	size_t nh = strlen(head), nt = strlen(tail);
	char *buf = malloc(nh + 6 * JS_NAME_MAX + nt + 32), *e;

	if (!buf)
		return DW_ENOMEM;
	e = js_put_esc(ob_mem(buf, head, nh), s);
	e = ob_mem(e, tail, nt);
	n->len = (uint32_t)(e - buf);
	memset(e, 0, 32);
	n->s = realloc(buf, (n->len + 31) / 32 * 32);
	if (!n->s)
		n->s = buf;
	return DW_OK;
}

/* n's bytes at p, in whole 32-byte pieces (the line's room has them:
 * JS_LINE); returns the end of n's. */
static inline char *
put_name(char *p, const js_name *n)
{
	for (uint32_t k = 0; k < n->len; k += 32)
		memcpy(p + k, n->s + k, 32);
	return p + n->len;
}

/* What follows a region's name: its category by which (below). */
static const char *const cat_tail[] = {
    "\",\"cat\":\"function\"}", "\",\"cat\":\"run\"}", "\",\"cat\":\"batch\"}"};

/* The name of a region: a user function (type 60000019, which = 0), or
 * the value of DW_EV_FUNCTION (1) or DW_EV_BATCH (2), cached by id in
 * *tab (of *ntab entries), as the end of its line. */
static const js_name *
region_name(json_writer *j, js_name **tab, size_t *ntab, int which, uint64_t id)
{
	/* out of memory: the name the line had (padded: js_name) */
#define JS_NONE ",\"name\":\"function\",\"cat\":"
	static char none_s[3][64] = {JS_NONE "\"function\"}",
	                             JS_NONE "\"run\"}", JS_NONE "\"batch\"}"};
	static const js_name none[] = {
	    {none_s[0], sizeof JS_NONE "\"function\"}" - 1},
	    {none_s[1], sizeof JS_NONE "\"run\"}" - 1},
	    {none_s[2], sizeof JS_NONE "\"batch\"}" - 1}};
#undef JS_NONE
	char buf[48];
	const char *s;

	if (id >= *ntab) {
		size_t n = *ntab ? *ntab : 64;
		js_name *v;

		while (n <= id && n < ((size_t)1 << 40))
			n *= 2;
		v = n > id ? realloc(*tab, n * sizeof *v) : NULL;
		if (!v)
			return &none[which];
		memset(v + *ntab, 0, (n - *ntab) * sizeof *v);
		*tab = v;
		*ntab = n;
	}
	if (!(*tab)[id].s) {
		s = which == 0 ? lb_func(j->info, id)
		    : which == 2
		        ? lb_value(lb_type(j->info->labels, LB_TYPE_BATCH), id)
		        : lb_value(lb_type(j->info->labels, LB_TYPE_RUN), id);
		if (!s) {
			snprintf(buf, sizeof buf, "%s %llu",
			         which == 2 ? "batch" : "function",
			         (unsigned long long)id);
			s = buf;
		}
		if (js_name_frag(&(*tab)[id], ",\"name\":\"", s,
		                 cat_tail[which]) != DW_OK)
			return &none[which];
	}
	return &(*tab)[id];
}

static const js_name *
func_name(json_writer *j, uint64_t id)
{
	if (id & NEST_RUN)
		return region_name(j, &j->runs[0], &j->nruns[0], 1,
		                   id & ~NEST_KINDS);
	if (id & NEST_BATCH)
		return region_name(j, &j->runs[1], &j->nruns[1], 2,
		                   id & ~NEST_KINDS);
	return region_name(j, &j->funcs, &j->nfuncs, 0, id);
}

/* ---- Output -------------------------------------------------------------- */

/* The three decimals of a time in microseconds: r ns (below 1000). */
static inline char *
put_frac(const json_writer *j, char *p, unsigned r)
{
	memcpy(p, j->frac[r], 4);
	return p + 4;
}

/* v (below 10000) in decimal at p; returns the end. */
static inline char *
put_small(char *p, unsigned v)
{
	if (v < 10) {
		*p = (char)('0' + v);
		return p + 1;
	}
	if (v < 100) {
		memcpy(p, ob_digits + v * 2, 2);
		return p + 2;
	}
	if (v < 1000) {
		*p = (char)('0' + v / 100);
		memcpy(p + 1, ob_digits + v % 100 * 2, 2);
		return p + 3;
	}
	memcpy(p, ob_digits + v / 100 * 2, 2);
	memcpy(p + 2, ob_digits + v % 100 * 2, 2);
	return p + 4;
}

/* ns as microseconds with three decimals (a duration). */
static inline char *
put_us(const json_writer *j, char *p, uint64_t ns)
{
	uint64_t us = ns / 1000;

	p = us < 10000 ? put_small(p, (unsigned)us) : ob_u64(p, us);
	return put_frac(j, p, (unsigned)(ns % 1000));
}

/* The same for a time: times come close to each other, so the
 * microseconds' digits are mostly the last time's with the last four
 * changed (ob_u64_near); the first 10 ms have four digits at most.
 * Stores up to 36 bytes at p.  Inlined: gcc kept it out of line, a call
 * for every time. */
static inline __attribute__((always_inline)) char *
put_ts(json_writer *j, char *p, uint64_t ns)
{
	uint64_t us = ns / 1000;

	p = us < 10000 ? put_small(p, (unsigned)us)
	               : ob_u64_near(&j->ts, p, us);
	return put_frac(j, p, (unsigned)(ns % 1000));
}

/* Thread's line beginning k (JS_PRE_*), up to its "ts":. */
static inline char *
put_thread(const json_writer *j, char *p, uint32_t thread, unsigned k)
{
	size_t i = (size_t)thread * 3 + k;

	memcpy(p, j->pre + i * JS_PRE, JS_PRE);
	return p + j->pre_len[i];
}

dw_err
js_put_raw(json_writer *j, const char *s, size_t n)
{
	dw_err err = js_need(j, n);

	if (err == DW_OK)
		ob_commit(&j->pipe.cur, ob_mem(ob_end(&j->pipe.cur), s, n));
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

dw_err
js_slice_put(json_writer *j, uint32_t thread, const js_slice *s)
{
	const js_name *n =
	    s->kind == NEST_FUNC ? func_name(j, s->id) : state_name(j, s->id);
	dw_err err = js_need(j, JS_LINE + (n ? n->len : 0));
	char *p;

	if (err != DW_OK)
		return err;
	p = put_thread(j, ob_end(&j->pipe.cur), thread, JS_PRE_X);
	p = put_ts(j, p, s->begin);
	PUT(p, ",\"dur\":");
	p = put_us(j, p, s->end - s->begin);
	if (n) {
		p = put_name(p, n);
	} else { /* a state without a label */
		PUT(p, ",\"name\":\"State ");
		p = ob_u64(p, s->id);
		PUT(p, "\",\"cat\":\"state\"}");
	}
	ob_commit(&j->pipe.cur, p);
	return DW_OK;
}

/* ---- Records ------------------------------------------------------------- */

/* The name of type and (*tl) its label, NULL when it has none; by the
 * cache of the last types (the labels' types do not change while the
 * records come). */
static const js_name *
type_name(json_writer *j, uint32_t type, const mg_type_label **tl)
{
	const mg_labels *lb = j->info->labels;
	js_type_slot *c = &j->tcache[type % JS_TYPE_CACHE];

	if (c->index == JS_TYPE_EMPTY || c->type != type) {
		const mg_type_label *l = lb_type(lb, type);

		c->type = type;
		c->index = !l ? JS_TYPE_NONE
		           : (size_t)(l - lb->types) < j->ntypes
		               ? (int32_t)(l - lb->types)
		               : JS_TYPE_LATE;
	}
	if (c->index >= 0) {
		*tl = &lb->types[c->index];
		return &j->types[c->index];
	}
	*tl = c->index == JS_TYPE_LATE ? lb_type(lb, type) : NULL;
	return NULL;
}

/* The label of value of type tl, escaped once and kept; NULL when it
 * has none, or (*raw set to it, to escape here) when out of memory. */
static const js_name *
label_name(json_writer *j, const mg_type_label *tl, uint64_t value,
           const char **raw)
{
	size_t k, lo = 0, hi = tl ? tl->nvalues : 0;

	*raw = NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (tl->values[mid].value == value) {
			lo = mid;
			break;
		}
		if (tl->values[mid].value < value)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= hi)
		return NULL;
	k = (size_t)(tl - j->info->labels->types);
	*raw = tl->values[lo].name;
	if (k >= j->ntypes)
		return NULL;
	if (!j->vals[k]) {
		if (!(j->vals[k] = calloc(tl->nvalues, sizeof *j->vals[k])))
			return NULL;
		j->nvals[k] = tl->nvalues;
	}
	if (lo >= j->nvals[k] ||
	    (!j->vals[k][lo].s &&
	     js_name_frag(&j->vals[k][lo], ",\"label\":\"", tl->values[lo].name,
	                  "\"}}") != DW_OK))
		return NULL;
	*raw = NULL;
	return &j->vals[k][lo];
}

dw_err
js_instant(json_writer *j, uint32_t thread, uint64_t t, const mg_pair *pr)
{
	const mg_type_label *tl;
	const js_name *n = type_name(j, pr->type, &tl);
	const char *v;
	const js_name *lv = label_name(j, tl, pr->value, &v);
	dw_err err = js_need(j, JS_LINE + (n ? n->len : 0) +
	                            (lv  ? lv->len
	                             : v ? 6 * JS_NAME_MAX
	                                 : 0));
	char *p;

	if (err != DW_OK)
		return err;
	p = put_thread(j, ob_end(&j->pipe.cur), thread, JS_PRE_I);
	p = put_ts(j, p, t);
	if (n) {
		p = put_name(p, n);
	} else {
		PUT(p, ",\"name\":\"Event type ");
		p = ob_u64(p, pr->type);
		PUT(p, "\",\"cat\":\"event\",\"args\":{\"type\":");
		p = ob_u64(p, pr->type);
		PUT(p, ",\"value\":");
	}
	p = ob_u64(p, pr->value);
	if (lv) {
		p = put_name(p, lv);
	} else if (v) {
		PUT(p, ",\"label\":\"");
		p = js_put_esc(p, v);
		PUT(p, "\"}}");
	} else {
		PUT(p, "}}");
	}
	ob_commit(&j->pipe.cur, p);
	return DW_OK;
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

/* The ends of a flow's two lines for tag, made the first time (*fs
 * after the start's name, *ff after the finish's); false when out of
 * memory. */
static bool
flow_tails(json_writer *j, uint32_t tag, const js_name **fs, const js_name **ff)
{
	const char *name = flow_name(j, tag);
	uint32_t k = j->runtime && tag < JS_FLOW_KINDS - 1 && lb_comm_kind(tag)
	                 ? tag
	                 : JS_FLOW_KINDS - 1;

	if (!j->flow_s[k].s &&
	    (js_name_frag(&j->flow_s[k], ",\"name\":\"", name,
	                  "\",\"cat\":\"comm\",\"args\":{\"size\":") != DW_OK ||
	     js_name_frag(&j->flow_f[k], ",\"name\":\"", name,
	                  "\",\"cat\":\"comm\"}") != DW_OK))
		return false;
	*fs = &j->flow_s[k];
	*ff = &j->flow_f[k];
	return true;
}

dw_err
js_flow(json_writer *j, const mg_rec *r)
{
	dw_err err = nest_touch(&j->nest, r->thread, r->time);
	const js_name *fs, *ff;
	/* A call, fetch or request starts the receiver's work: its end
	 * binds to the next slice there (the run it starts); a result or
	 * answer to the slice that waits for it. */
	bool next = j->runtime && r->u.comm.tag % 2 == 0 && r->u.comm.tag <= 4;
	char *p;

	if (err == DW_OK && !flow_tails(j, r->u.comm.tag, &fs, &ff))
		err = DW_ENOMEM;
	if (err == DW_OK)
		err = js_need(j, 2 * JS_LINE);
	if (err != DW_OK)
		return err;
	j->flows++;
	p = ob_end(&j->pipe.cur);
	PUT(p, ",\n{\"ph\":\"s\",\"id\":");
	p = ob_u64(p, j->flows);
	*p++ = ',';
	p = put_thread(j, p, r->thread, JS_PRE_PLAIN);
	p = put_ts(j, p, r->time);
	p = put_name(p, fs);
	p = ob_u64(p, r->u.comm.size);
	PUT(p, ",\"tag\":");
	p = ob_u64(p, r->u.comm.tag);
	if (next)
		PUT(p, "}},\n{\"ph\":\"f\",\"id\":");
	else
		PUT(p, "}},\n{\"ph\":\"f\",\"bp\":\"e\",\"id\":");
	p = ob_u64(p, j->flows);
	*p++ = ',';
	p = put_thread(j, p, r->u.comm.recv_thread, JS_PRE_PLAIN);
	p = put_ts(j, p,
	           !next                          ? recv_time(r)
	           : r->u.comm.log_recv > r->time ? r->u.comm.log_recv
	                                          : r->time);
	p = put_name(p, ff);
	ob_commit(&j->pipe.cur, p);
	return DW_OK;
}

dw_err
js_meta(json_writer *j, const char *kind, uint32_t pid, int64_t tid,
        const char *key, const char *name, uint64_t num)
{
	dw_err err = js_need(j, JS_LINE + 6 * JS_NAME_MAX);
	char *p;

	if (err != DW_OK)
		return err;
	p = ob_end(&j->pipe.cur);
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
		p = js_put_esc(p, name);
		*p++ = '"';
	} else {
		p = ob_u64(p, num);
	}
	PUT(p, "}}");
	ob_commit(&j->pipe.cur, p);
	return DW_OK;
}
