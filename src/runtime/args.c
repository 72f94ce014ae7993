/*
 * Typed arguments and results (docs/runtime.md, "Typed arguments"): a
 * format string names the values ("ld" = an int64 and a double) and they
 * travel as one MessagePack array, so that a Python or Julia peer reads
 * them with its own library.  Every value read is checked against its
 * letter; a mismatch names its position, the expected and the actual type.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/args.h"
#include "runtime/mpack.h"
#include "runtime/rt.h"

#define ARGS_MAX   64
#define EXT_FUTURE 1
#define EXT_CHAN   2

static const char *
args_want(char c)
{
	switch (c) {
	case 'i':
		return "integer (int)";
	case 'l':
		return "integer (int64)";
	case 'd':
		return "float64";
	case 's':
		return "str";
	case 'b':
		return "bin";
	case 'D':
		return "array of float64";
	case 'L':
		return "array of integers";
	case 'F':
		return "future";
	case 'C':
		return "channel";
	}
	return "?";
}

/* The letters of fmt up to '|' or its end; -1 for an unknown letter. */
int
args_count(const char *fmt, size_t *n)
{
	*n = 0;
	for (; *fmt && *fmt != '|'; fmt++, (*n)++)
		if (!strchr("ildsbDLFC", *fmt) || *n >= ARGS_MAX)
			return -1;
	return 0;
}

static int
args_ref(struct mp_w *w, char c, va_list *ap, int to)
{
	void *b = NULL;
	size_t n = 0;
	int err =
	    c == 'F' ? dw_future_export(va_arg(*ap, dw_future *), to, &b, &n)
	             : dw_channel_export(va_arg(*ap, dw_channel *), to, &b, &n);
	if (err == DW_OK)
		mp_put_ext(w, c == 'F' ? EXT_FUTURE : EXT_CHAN, b, n);
	free(b);
	return err;
}

static int
args_put(struct mp_w *w, char c, va_list *ap, int to)
{
	if (c == 'i') {
		mp_put_int(w, va_arg(*ap, int));
	} else if (c == 'l') {
		mp_put_int(w, va_arg(*ap, int64_t));
	} else if (c == 'd') {
		mp_put_f64(w, va_arg(*ap, double));
	} else if (c == 's') {
		const char *s = va_arg(*ap, const char *);
		mp_put_str(w, s ? s : "", s ? strlen(s) : 0);
	} else if (c == 'b') {
		const void *b = va_arg(*ap, const void *);
		mp_put_bin(w, b, va_arg(*ap, size_t));
	} else if (c == 'D' || c == 'L') {
		const void *v = va_arg(*ap, const void *);
		size_t n = va_arg(*ap, size_t);
		mp_put_array(w, n);
		for (size_t k = 0; k < n && !w->err; k++)
			c == 'D' ? mp_put_f64(w, ((const double *)v)[k])
			         : mp_put_int(w, ((const int64_t *)v)[k]);
	} else {
		if (to < 0)
			return rt_set_err(0,
			                  "a %s reference cannot travel "
			                  "here: pass it in a call's "
			                  "arguments",
			                  args_want(c)),
			       DW_EINVAL;
		return args_ref(w, c, ap, to);
	}
	return DW_OK;
}

int
args_vpack(int to, void **buf, size_t *len, const char *fmt, va_list *ap)
{
	size_t n;
	*buf = NULL;
	*len = 0;
	if (!fmt || args_count(fmt, &n) < 0)
		return rt_set_err(0,
		                  "bad format \"%s\": letters are "
		                  "i l d s b D L F C (at most %d)",
		                  fmt ? fmt : "(null)", ARGS_MAX),
		       DW_EINVAL;
	struct mp_w w = {0};
	mp_put_array(&w, n);
	for (size_t k = 0; k < n; k++) {
		int err = args_put(&w, fmt[k], ap, to);
		if (err != DW_OK) {
			free(w.p);
			return err;
		}
	}
	if (w.err) {
		free(w.p);
		return rt_set_err(0, "out of memory packing \"%s\"", fmt),
		       DW_ENOMEM;
	}
	*buf = w.p;
	*len = w.len;
	return DW_OK;
}

/* ---- unpacking ---- */

/* What one unpack allocated, released if a later value fails. */
struct args_undo {
	char kind[ARGS_MAX];
	void *p[ARGS_MAX];
	int n;
};

static void
undo_add(struct args_undo *u, char kind, void *p)
{
	u->kind[u->n] = kind;
	u->p[u->n++] = p;
}

static void
undo_all(struct args_undo *u)
{
	for (int k = 0; k < u->n; k++)
		if (u->kind[k] == 'F')
			dw_future_free(u->p[k]);
		else if (u->kind[k] == 'C')
			dw_channel_free(u->p[k]);
		else
			free(u->p[k]);
}

/* The context of a message: "argument 2 of 'f'". */
struct args_ctx {
	const char *what; /* "argument", "result", "value" */
	const char *fn;   /* may be NULL */
	size_t k;
	char *msg;
	size_t mlen;
	dw_reply *call; /* in dw_args: futures given for values are fetched */
};

static int args_bad(struct args_ctx *x, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
args_bad(struct args_ctx *x, const char *fmt, ...)
{
	int o = snprintf(x->msg, x->mlen, "%s %zu%s%s%s: ", x->what, x->k + 1,
	                 x->fn ? " of '" : "", x->fn ? x->fn : "",
	                 x->fn ? "'" : "");
	va_list ap;
	va_start(ap, fmt);
	if (o >= 0 && (size_t)o < x->mlen)
		vsnprintf(x->msg + o, x->mlen - (size_t)o, fmt, ap);
	va_end(ap);
	return DW_EFORMAT;
}

static int
args_mismatch(struct args_ctx *x, char c, const struct mp_obj *o)
{
	return args_bad(x, "expected %s, got %s", args_want(c), mp_name(o));
}

static int
args_int(struct args_ctx *x, char c, const struct mp_obj *o, va_list *ap)
{
	if (o->kind == MP_UINT)
		return args_bad(x, "integer %llu does not fit an int64",
		                (unsigned long long)o->u);
	if (o->kind != MP_INT)
		return args_mismatch(x, c, o);
	if (c == 'l') {
		*va_arg(*ap, int64_t *) = o->i;
		return DW_OK;
	}
	if (o->i < INT32_MIN || o->i > INT32_MAX)
		return args_bad(x, "integer %lld does not fit an int",
		                (long long)o->i);
	*va_arg(*ap, int *) = (int)o->i;
	return DW_OK;
}

static int
args_numbers(struct args_ctx *x, char c, struct mp_r *r, const struct mp_obj *o,
             va_list *ap, struct args_undo *u)
{
	if (o->kind != MP_ARRAY)
		return args_mismatch(x, c, o);
	if (o->n > r->len - r->pos) /* each element is a byte at least */
		return args_bad(x, "array of %u elements in %zu bytes", o->n,
		                r->len - r->pos);
	void *v = malloc(o->n ? (size_t)o->n * 8 : 1);
	if (!v)
		return args_bad(x, "out of memory for %u elements", o->n);
	undo_add(u, 'm', v);
	for (uint32_t k = 0; k < o->n; k++) {
		struct mp_obj e;
		if (mp_next(r, &e) < 0)
			return args_bad(x, "element %u is truncated", k + 1);
		if (c == 'D' && e.kind == MP_FLOAT)
			((double *)v)[k] = e.f;
		else if (c == 'L' && e.kind == MP_INT)
			((int64_t *)v)[k] = e.i;
		else
			return args_bad(x, "element %u: expected %s, got %s",
			                k + 1, c == 'D' ? "float64" : "integer",
			                mp_name(&e));
	}
	*va_arg(*ap, void **) = v;
	*va_arg(*ap, size_t *) = o->n;
	return DW_OK;
}

static int
args_bytes(struct args_ctx *x, char c, const struct mp_obj *o, va_list *ap,
           struct args_undo *u, int copy)
{
	if (o->kind != (c == 's' ? MP_STR : MP_BIN))
		return args_mismatch(x, c, o);
	if (c == 's' && memchr(o->data, 0, o->n))
		return args_bad(x, "the string holds a NUL byte");
	if (c == 'b' && !copy) {
		*va_arg(*ap, const void **) = o->data;
		*va_arg(*ap, size_t *) = o->n;
		return DW_OK;
	}
	char *p = malloc((size_t)o->n + 1);
	if (!p)
		return args_bad(x, "out of memory for %u bytes", o->n);
	undo_add(u, 'm', p);
	if (o->n)
		memcpy(p, o->data, o->n);
	p[o->n] = 0;
	*va_arg(*ap, void **) = p;
	if (c == 'b')
		*va_arg(*ap, size_t *) = o->n;
	return DW_OK;
}

static int
args_import(struct args_ctx *x, char c, const struct mp_obj *o, va_list *ap,
            struct args_undo *u)
{
	if (o->kind != MP_EXT || o->ext != (c == 'F' ? EXT_FUTURE : EXT_CHAN))
		return args_mismatch(x, c, o);
	void *p = NULL;
	int err = c == 'F'
	              ? dw_future_import(o->data, o->n, (dw_future **)&p)
	              : dw_channel_import(o->data, o->n, (dw_channel **)&p);
	if (err != DW_OK)
		return args_bad(x, "the %s reference is unusable: %s",
		                args_want(c), dw_errmsg());
	undo_add(u, c, p);
	*va_arg(*ap, void **) = p;
	return DW_OK;
}

static int args_get(struct args_ctx *x, char c, struct mp_r *r, va_list *ap,
                    struct args_undo *u, int copy);

/* A future passed where the function's letter c wants a value: the
 * future's value (one value) read under c, as Ray and Dask hand a task
 * the values of the futures in its arguments.  One level: a future
 * inside that value is not fetched. */
static int
args_resolve(struct args_ctx *x, char c, const struct mp_obj *o, va_list *ap,
             struct args_undo *u, int copy)
{
	void *b;
	size_t n;
	if (args_fetch_ref(o->data, o->n, &b, &n) != DW_OK)
		return args_bad(x, "fetching the future given for %s: %s",
		                args_want(c), dw_errmsg());
	if (call_reply_hold(x->call, b) < 0)
		return args_bad(x, "out of memory");
	struct mp_r r = {b, n, 0};
	struct mp_obj e = {.kind = 0};
	if (mp_next(&r, &e) < 0 || e.kind != MP_ARRAY || e.n != 1)
		return args_bad(x,
		                "the future given for %s holds %s, not one "
		                "typed value",
		                args_want(c),
		                e.kind == MP_ARRAY ? "several or no values"
		                                   : "raw bytes");
	dw_reply *call = x->call;
	x->call = NULL;
	int err = args_get(x, c, &r, ap, u, copy);
	x->call = call;
	return err;
}

static int
args_get(struct args_ctx *x, char c, struct mp_r *r, va_list *ap,
         struct args_undo *u, int copy)
{
	struct mp_obj o;
	if (mp_next(r, &o) < 0)
		return args_bad(x, "truncated (expected %s)", args_want(c));
	if (x->call && o.kind == MP_EXT && o.ext == EXT_FUTURE && c != 'F' &&
	    c != 'C')
		return args_resolve(x, c, &o, ap, u, copy);
	switch (c) {
	case 'i':
	case 'l':
		return args_int(x, c, &o, ap);
	case 'd':
		if (o.kind != MP_FLOAT)
			return args_mismatch(x, c, &o);
		*va_arg(*ap, double *) = o.f;
		return DW_OK;
	case 's':
	case 'b':
		return args_bytes(x, c, &o, ap, u, copy);
	case 'D':
	case 'L':
		return args_numbers(x, c, r, &o, ap, u);
	}
	return args_import(x, c, &o, ap, u);
}

static int args_run(struct args_ctx x, const void *buf, size_t len,
                    const char *fmt, va_list *ap, int copy);

int
args_vunpack(const char *what, const char *fn, const void *buf, size_t len,
             const char *fmt, va_list *ap, int copy, char *msg, size_t mlen)
{
	struct args_ctx x = {what, fn, 0, msg, mlen, NULL};
	return args_run(x, buf, len, fmt, ap, copy);
}

static int
args_run(struct args_ctx x, const void *buf, size_t len, const char *fmt,
         va_list *ap, int copy)
{
	const char *what = x.what, *fn = x.fn;
	char *msg = x.msg;
	size_t n, mlen = x.mlen;
	if (!fmt || args_count(fmt, &n) < 0) {
		snprintf(msg, mlen, "bad format \"%s\"", fmt ? fmt : "(null)");
		return DW_EINVAL;
	}
	struct mp_r r = {buf, buf ? len : 0, 0};
	struct mp_obj o;
	if (mp_next(&r, &o) < 0 || o.kind != MP_ARRAY) {
		snprintf(msg, mlen,
		         "%ss%s%s%s: not typed values (a MessagePack "
		         "array), %zu bytes",
		         what, fn ? " of '" : "", fn ? fn : "", fn ? "'" : "",
		         len);
		return DW_EFORMAT;
	}
	if (o.n != n) {
		snprintf(msg, mlen,
		         "%ss%s%s%s: expected %zu (\"%.*s\"), got %u", what,
		         fn ? " of '" : "", fn ? fn : "", fn ? "'" : "", n,
		         (int)n, fmt, o.n);
		return DW_EFORMAT;
	}
	struct args_undo u = {.n = 0};
	for (x.k = 0; x.k < n; x.k++) {
		int err = args_get(&x, fmt[x.k], &r, ap, &u, copy);
		if (err != DW_OK) {
			undo_all(&u);
			return err;
		}
	}
	return DW_OK;
}

/* ---- the public calls ---- */

DW_API int
dw_pack(int to, void **buf, size_t *len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int err = args_vpack(to > 0 ? to : -1, buf, len, fmt, &ap);
	va_end(ap);
	return err;
}

DW_API int
dw_unpack(const void *buf, size_t len, const char *fmt, ...)
{
	char msg[300];
	va_list ap;
	va_start(ap, fmt);
	int err =
	    args_vunpack("value", NULL, buf, len, fmt, &ap, 0, msg, sizeof msg);
	va_end(ap);
	if (err != DW_OK)
		rt_set_err(0, "%s", msg);
	return err;
}

/* ---- in a remote function ---- */

int
args_hold_all(dw_reply *r, const char *fmt, va_list *ap0)
{
	/* walks the pointers again: strings and arrays belong to the call */
	va_list ap;
	va_copy(ap, *ap0);
	for (; *fmt; fmt++) {
		void **pp = va_arg(ap, void **);
		if (strchr("bDL", *fmt))
			(void)va_arg(ap, size_t *);
		if (strchr("sDL", *fmt) && call_reply_hold(r, *pp) < 0) {
			va_end(ap);
			return -1;
		}
	}
	va_end(ap);
	return 0;
}

DW_API int
dw_args(dw_reply *r, const void *arg, size_t len, const char *fmt, ...)
{
	char msg[400], fn[80];
	va_list ap, again;
	va_start(ap, fmt);
	va_copy(again, ap);
	call_current(fn, sizeof fn);
	struct args_ctx x = {.what = "argument",
	                     .fn = fn[0] ? fn : NULL,
	                     .msg = msg,
	                     .mlen = sizeof msg,
	                     .call = r};
	int err = args_run(x, arg, len, fmt, &ap, 0);
	if (err == DW_OK && args_hold_all(r, fmt, &again) < 0)
		snprintf(msg, sizeof msg, "out of memory"), err = DW_ENOMEM;
	va_end(again);
	va_end(ap);
	return err == DW_OK ? 0 : dw_reply_error(r, "%s", msg);
}

DW_API int
dw_reply_pack(dw_reply *r, const char *fmt, ...)
{
	void *b;
	size_t n;
	va_list ap;
	va_start(ap, fmt);
	int err = args_vpack(call_caller_pid(), &b, &n, fmt, &ap);
	va_end(ap);
	if (err != DW_OK)
		return dw_reply_error(r, "result: %s", dw_errmsg());
	return dw_reply_take(r, b, n) == DW_OK ? 0 : -1;
}

/* ---- calls with typed arguments ---- */

static int
args_result(const char *fn, const void *b, size_t n, const char *fmt,
            va_list *ap, int copy)
{
	char msg[400];
	int err =
	    args_vunpack("result", fn, b, n, fmt, ap, copy, msg, sizeof msg);
	if (err != DW_OK)
		rt_set_err(0, "%s", msg);
	return err;
}

DW_API int
dw_remotecall_fetchf(int pid, const char *fn, const char *fmt, ...)
{
	void *b, *res = NULL;
	size_t n, rn = 0;
	va_list ap;
	va_start(ap, fmt);
	int err = args_vpack(pid, &b, &n, fmt, &ap);
	if (err == DW_OK)
		err = dw_remotecall_fetch(pid, fn, b, n, &res, &rn);
	free(b);
	const char *bar = fmt ? strchr(fmt, '|') : NULL;
	if (err == DW_OK && bar)
		err = args_result(fn, res, rn, bar + 1, &ap, 1);
	va_end(ap);
	free(res);
	return err;
}

/* The three ways of starting a call with packed arguments. */
enum { AS_CALL, AS_WAIT, AS_DO };

static int
args_start(int how, int pid, const char *fn, dw_future **out, const char *fmt,
           va_list *ap)
{
	void *b;
	size_t n;
	int err = args_vpack(pid, &b, &n, fmt, ap);
	if (err != DW_OK)
		return err;
	err = how == AS_DO       ? dw_remote_do(pid, fn, b, n)
	      : how == AS_WAIT   ? dw_remotecall_wait(pid, fn, b, n, out)
	      : pid == dw_myid() ? dw_async(fn, b, n, out)
	                         : dw_remotecall(pid, fn, b, n, out);
	free(b);
	return err;
}

DW_API int
dw_remotecallf(int pid, const char *fn, dw_future **out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int err = args_start(AS_CALL, pid, fn, out, fmt, &ap);
	va_end(ap);
	return err;
}

DW_API int
dw_remotecall_waitf(int pid, const char *fn, dw_future **out, const char *fmt,
                    ...)
{
	va_list ap;
	va_start(ap, fmt);
	int err = args_start(AS_WAIT, pid, fn, out, fmt, &ap);
	va_end(ap);
	return err;
}

DW_API int
dw_remote_dof(int pid, const char *fn, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int err = args_start(AS_DO, pid, fn, NULL, fmt, &ap);
	va_end(ap);
	return err;
}

DW_API int
dw_asyncf(const char *fn, dw_future **out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int err = args_start(AS_CALL, dw_myid(), fn, out, fmt, &ap);
	va_end(ap);
	return err;
}

/* The next worker, round-robin, for dw_spawnf. */
static int
args_next_worker(void)
{
	static unsigned next;
	int ids[1024];
	int n = dw_workers(ids, 1024);
	if (n <= 0)
		return dw_myid();
	unsigned k = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
	return ids[k % (unsigned)(n < 1024 ? n : 1024)];
}

DW_API int
dw_spawnf(const char *fn, dw_future **out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int err = args_start(AS_CALL, args_next_worker(), fn, out, fmt, &ap);
	va_end(ap);
	return err;
}

DW_API int
dw_future_fetchf(dw_future *f, const char *fmt, ...)
{
	const void *b;
	size_t n;
	int err = dw_future_fetch(f, &b, &n);
	if (err != DW_OK)
		return err;
	va_list ap;
	va_start(ap, fmt);
	err = args_result(NULL, b, n, fmt, &ap, 0);
	va_end(ap);
	return err;
}

DW_API int
dw_channel_putf(dw_channel *ch, const char *fmt, ...)
{
	void *b;
	size_t n;
	va_list ap;
	va_start(ap, fmt);
	int err = args_vpack(-1, &b, &n, fmt, &ap);
	va_end(ap);
	if (err == DW_OK)
		err = dw_channel_put(ch, b, n);
	free(b);
	return err;
}

DW_API int
dw_channel_takef(dw_channel *ch, const char *fmt, ...)
{
	void *b;
	size_t n;
	int err = dw_channel_take(ch, &b, &n);
	if (err != DW_OK)
		return err;
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	err = args_vunpack("value", NULL, b, n, fmt, &ap, 1, msg, sizeof msg);
	va_end(ap);
	free(b);
	if (err != DW_OK)
		rt_set_err(0, "%s", msg);
	return err;
}

/* ---- typed pmap and reductions ---- */

static int
pmap_num(const char *fn, const void *in, size_t n, void *out,
         const dw_pmap_options *opts, int dbl)
{
	dw_buf *b = calloc(n ? n : 1, sizeof *b);
	dw_result *res = calloc(n ? n : 1, sizeof *res);
	int err = b && res ? DW_OK : DW_ENOMEM;
	for (size_t k = 0; k < n && err == DW_OK; k++)
		err = dbl ? dw_pack(0, (void **)&b[k].data, &b[k].len, "d",
		                    ((const double *)in)[k])
		          : dw_pack(0, (void **)&b[k].data, &b[k].len, "l",
		                    ((const int64_t *)in)[k]);
	if (err == DW_OK)
		err = dw_pmap(fn, b, n, res, opts);
	for (size_t k = 0; k < n && err == DW_OK; k++) {
		char msg[400];
		err = dbl ? dw_unpack(res[k].data, res[k].len, "d",
		                      (double *)out + k)
		          : dw_unpack(res[k].data, res[k].len, "l",
		                      (int64_t *)out + k);
		if (err != DW_OK) {
			snprintf(msg, sizeof msg, "%s", dw_errmsg());
			rt_set_err(res[k].pid,
			           "item %zu of '%s' on process "
			           "%d: %s",
			           k, fn, res[k].pid, msg);
		}
	}
	for (size_t k = 0; b && k < n; k++)
		free((void *)b[k].data);
	if (res)
		dw_results_free(res, n);
	free(b);
	free(res);
	return err;
}

DW_API int
dw_pmap_f64(const char *fn, const double *in, size_t n, double *out,
            const dw_pmap_options *opts)
{
	return pmap_num(fn, in, n, out, opts, 1);
}

DW_API int
dw_pmap_i64(const char *fn, const int64_t *in, size_t n, int64_t *out,
            const dw_pmap_options *opts)
{
	return pmap_num(fn, in, n, out, opts, 0);
}

/* One number of a reduction: a one-value typed buffer. */
static int
red_get(const void *b, size_t n, int *isint, int64_t *i, double *d)
{
	struct mp_r r = {b, n, 0};
	struct mp_obj o;
	if (mp_next(&r, &o) < 0 || o.kind != MP_ARRAY || o.n != 1 ||
	    mp_next(&r, &o) < 0 || (o.kind != MP_INT && o.kind != MP_FLOAT))
		return rt_set_err(0, "a reduction part is not one number "
		                     "(dw_reply_pack(r, \"l\" or \"d\", v))"),
		       -1;
	*isint = o.kind == MP_INT;
	*i = o.i;
	*d = o.kind == MP_INT ? (double)o.i : o.f;
	return 0;
}

enum { RED_SUM, RED_MIN, RED_MAX };

static int
red_step(void **acc, size_t *acclen, const void *part, size_t partlen, int op)
{
	int pi, ai;
	int64_t pv, av;
	double pd, ad;
	if (red_get(part, partlen, &pi, &pv, &pd) < 0)
		return -1;
	if (!*acc && pi)
		return dw_pack(0, acc, acclen, "l", pv) == DW_OK ? 0 : -1;
	if (!*acc)
		return dw_pack(0, acc, acclen, "d", pd) == DW_OK ? 0 : -1;
	if (red_get(*acc, *acclen, &ai, &av, &ad) < 0)
		return -1;
	free(*acc);
	*acc = NULL;
	int64_t s;
	if (ai && pi) {
		if (op == RED_SUM && __builtin_add_overflow(av, pv, &s))
			return rt_set_err(0, "the sum overflows an int64"), -1;
		s = op == RED_SUM   ? s
		    : op == RED_MIN ? (pv < av ? pv : av)
		                    : (pv > av ? pv : av);
		return dw_pack(0, acc, acclen, "l", s) == DW_OK ? 0 : -1;
	}
	double d = op == RED_SUM   ? ad + pd
	           : op == RED_MIN ? (pd < ad ? pd : ad)
	                           : (pd > ad ? pd : ad);
	return dw_pack(0, acc, acclen, "d", d) == DW_OK ? 0 : -1;
}

DW_API int
dw_reduce_sum(void **acc, size_t *acclen, const void *part, size_t partlen,
              void *ctx)
{
	(void)ctx;
	return red_step(acc, acclen, part, partlen, RED_SUM);
}

DW_API int
dw_reduce_min(void **acc, size_t *acclen, const void *part, size_t partlen,
              void *ctx)
{
	(void)ctx;
	return red_step(acc, acclen, part, partlen, RED_MIN);
}

DW_API int
dw_reduce_max(void **acc, size_t *acclen, const void *part, size_t partlen,
              void *ctx)
{
	(void)ctx;
	return red_step(acc, acclen, part, partlen, RED_MAX);
}
