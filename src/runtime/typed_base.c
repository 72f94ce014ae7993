/*
 * The runtime's Base (issue 18, docs/runtime.md "Short programs"): the
 * few Julia Base functions Distributed programs call on other processes
 * by name -- println, fill, sum (and gethostname, easy.c) -- registered
 * in every process as dwork_println, dwork_fill and dwork_sum, typed and
 * checked like the user's own; and dw_future_println, println(fetch(f)).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/args.h"
#include "runtime/mpack.h"
#include "runtime/rt.h"
#include "runtime/typed_show.h"

#define BASE_FILL_MAX (1 << 26) /* elements: 512 MiB of doubles */

/* Writes b's text on stdout at once (one line is not interleaved). */
static int
base_write(struct show_buf *b)
{
	int bad = fwrite(b->p, 1, b->len, stdout) != b->len;
	bad |= fflush(stdout) != 0;
	free(b->p);
	return bad ? -1 : 0;
}

static int
base_println(const void *arg, size_t len, dw_reply *r)
{
	struct show_buf b = {0};
	if (show_typed(&b, arg, len, 1) < 0) {
		free(b.p);
		return dw_reply_error(r,
		                      "dwork_println: its arguments are not "
		                      "typed values (%zu bytes; send them with "
		                      "a typed call, dw_remote_dof)",
		                      len);
	}
	if (base_write(&b) < 0)
		return dw_reply_error(r,
		                      "dwork_println: writing stdout failed");
	return dw_reply_pack(r, ""); /* nothing, for a typed "|" */
}

/* The MessagePack kind of the first argument (0 if none; its header in
 * *o), and for an array whether each element is an integer. */
static int
base_first(const void *arg, size_t len, int *ints, struct mp_obj *o)
{
	struct mp_r rd = {arg, arg ? len : 0, 0};
	*ints = 1;
	if (mp_next(&rd, o) < 0 || o->kind != MP_ARRAY || !o->n ||
	    mp_next(&rd, o) < 0)
		return 0;
	for (uint32_t k = 0; o->kind == MP_ARRAY && k < o->n && *ints; k++) {
		struct mp_obj e;
		*ints = mp_next(&rd, &e) == 0 && e.kind == MP_INT;
	}
	return o->kind;
}

/* fill(x, n): n copies of x, an int64 or a float64. */
static int
base_fill(const void *arg, size_t len, dw_reply *r)
{
	int ints, n;
	int64_t xi = 0;
	double xd = 0;
	struct mp_obj o;
	int isint = base_first(arg, len, &ints, &o) == MP_INT;
	if (isint ? dw_args(r, arg, len, "li", &xi, &n)
	          : dw_args(r, arg, len, "di", &xd, &n))
		return -1;
	if (n < 0 || n > BASE_FILL_MAX)
		return dw_reply_error(r, "dwork_fill: n = %d is not in 0..%d",
		                      n, BASE_FILL_MAX);
	void *v = malloc(n ? (size_t)n * 8 : 1);
	if (!v)
		return dw_reply_error(r,
		                      "dwork_fill: out of memory for %d "
		                      "elements",
		                      n);
	for (int k = 0; k < n; k++)
		if (isint)
			((int64_t *)v)[k] = xi;
		else
			((double *)v)[k] = xd;
	int rc = dw_reply_pack(r, isint ? "L" : "D", v, (size_t)n);
	free(v);
	return rc;
}

static int
base_sum_ints(const void *arg, size_t len, dw_reply *r)
{
	dw_int64s v;
	int64_t s = 0;
	if (dw_args(r, arg, len, "L", &v.v, &v.n))
		return -1;
	for (size_t k = 0; k < v.n; k++)
		if (__builtin_add_overflow(s, v.v[k], &s))
			return dw_reply_error(r,
			                      "dwork_sum: the sum overflows an "
			                      "int64 at element %zu",
			                      k + 1);
	return dw_reply_pack(r, "l", s);
}

/* sum(v): an array of int64s (an int64, overflow checked) or of
 * float64s; a future given for v is fetched first. */
static int
base_sum(const void *arg, size_t len, dw_reply *r)
{
	int ints;
	struct mp_obj o;
	int kind = base_first(arg, len, &ints, &o);
	if (kind == MP_ARRAY && ints)
		return base_sum_ints(arg, len, r);
	if (kind == MP_EXT && o.ext == 1) { /* its value is our argument */
		void *b;
		size_t n;
		if (args_fetch_ref(o.data, o.n, &b, &n) != DW_OK)
			return dw_reply_error(r,
			                      "dwork_sum: fetching the future "
			                      "given for v: %s",
			                      dw_errmsg());
		int rc = base_sum(b, n, r);
		free(b);
		return rc;
	}
	dw_doubles v;
	double s = 0;
	if (dw_args(r, arg, len, "D", &v.v, &v.n))
		return -1;
	for (size_t k = 0; k < v.n; k++)
		s += v.v[k];
	return dw_reply_pack(r, "d", s);
}

static void __attribute__((constructor)) base_register(void)
{
	dw_register("dwork_println", base_println);
	dw_register("dwork_fill", base_fill);
	dw_register("dwork_sum", base_sum);
}

DW_API int
dw_future_println(dw_future *f)
{
	const void *v;
	size_t n;
	struct show_buf b = {0};
	if (!f)
		return rt_set_err(0, "dw_future_println: no future"), DW_EINVAL;
	int err = dw_future_fetch(f, &v, &n);
	if (err != DW_OK)
		return err;
	if (show_typed(&b, v, n, 0) < 0) {
		free(b.p);
		return rt_set_err(
		           0,
		           "dw_future_println: the future's value is not "
		           "typed values (%zu bytes: a result of the "
		           "byte API, dw_reply_set?)",
		           n),
		       DW_EFORMAT;
	}
	if (base_write(&b) < 0)
		return rt_set_err(0,
		                  "dw_future_println: writing stdout failed"),
		       DW_EIO;
	return DW_OK;
}
