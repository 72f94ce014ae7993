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
js_name_set(js_name *n, const char *s)
{
	char *buf = malloc(6 * JS_NAME_MAX + 1), *e;

	if (!buf)
		return DW_ENOMEM;
	e = js_put_esc(buf, s);
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
		if (js_name_set(&(*tab)[id], s) != DW_OK)
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

/* The three decimals of a time in microseconds: r ns (below 1000). */
static inline char *
put_frac(char *p, unsigned r)
{
	*p++ = '.';
	*p++ = (char)('0' + r / 100);
	memcpy(p, ob_digits + (r % 100) * 2, 2);
	return p + 2;
}

/* ns as microseconds with three decimals (a duration). */
static inline char *
put_us(char *p, uint64_t ns)
{
	return put_frac(ob_u64(p, ns / 1000), (unsigned)(ns % 1000));
}

/* The same for a time: times come close to each other, so the
 * microseconds' digits are mostly the last time's with the last four
 * changed (ob_u64_near).  Stores up to 36 bytes at p.  Inlined: gcc
 * kept it out of line, a call for every time. */
static inline __attribute__((always_inline)) char *
put_ts(json_writer *j, char *p, uint64_t ns)
{
	return put_frac(ob_u64_near(&j->ts, p, ns / 1000),
	                (unsigned)(ns % 1000));
}

static inline char *
put_thread(const json_writer *j, char *p, uint32_t thread)
{
	memcpy(p, j->pre + (size_t)thread * JS_PRE, JS_PRE);
	return p + j->pre_len[thread];
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
	p = ob_end(&j->pipe.cur);
	PUT(p, ",\n{\"ph\":\"X\",");
	p = put_thread(j, p, thread);
	PUT(p, "\"ts\":");
	p = put_ts(j, p, s->begin);
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
	ob_commit(&j->pipe.cur, p);
	return DW_OK;
}

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
	     js_name_set(&j->vals[k][lo], tl->values[lo].name) != DW_OK))
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
	p = ob_end(&j->pipe.cur);
	PUT(p, ",\n{\"ph\":\"i\",\"s\":\"t\",");
	p = put_thread(j, p, thread);
	PUT(p, "\"ts\":");
	p = put_ts(j, p, t);
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
	if (lv || v) {
		PUT(p, ",\"label\":\"");
		p = lv ? ob_mem(p, lv->s, lv->len) : js_put_esc(p, v);
		*p++ = '"';
	}
	PUT(p, "}}");
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

dw_err
js_flow(json_writer *j, const mg_rec *r)
{
	dw_err err = nest_touch(&j->nest, r->thread, r->time);
	const char *name = flow_name(j, r->u.comm.tag);
	size_t nlen = strlen(name);
	/* A call, fetch or request starts the receiver's work: its end
	 * binds to the next slice there (the run it starts); a result or
	 * answer to the slice that waits for it. */
	bool next = j->runtime && r->u.comm.tag % 2 == 0 && r->u.comm.tag <= 4;
	char *p;

	if (err == DW_OK)
		err = js_need(j, 2 * JS_LINE);
	if (err != DW_OK)
		return err;
	j->flows++;
	p = ob_end(&j->pipe.cur);
	PUT(p, ",\n{\"ph\":\"s\",\"id\":");
	p = ob_u64(p, j->flows);
	*p++ = ',';
	p = put_thread(j, p, r->thread);
	PUT(p, "\"ts\":");
	p = put_ts(j, p, r->time);
	PUT(p, ",\"name\":\"");
	p = ob_mem(p, name, nlen);
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
	p = put_ts(j, p,
	           !next                          ? recv_time(r)
	           : r->u.comm.log_recv > r->time ? r->u.comm.log_recv
	                                          : r->time);
	PUT(p, ",\"name\":\"");
	p = ob_mem(p, name, nlen);
	PUT(p, "\",\"cat\":\"comm\"}");
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
