/*
 * Calls that keep short programs short (issue 18): a distributed
 * reduction with its typed value, loop bodies as range functions
 * (DW_FOR_I64 / DW_FOR_F64), a future's value read in a remote function
 * (dw_args_fetch), the host name of a process and an exit at the first
 * error.  Built on the public calls and the typed codec; what they save
 * a user is packing, a reducer, unpacking and a message, not any check.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/args.h"
#include "runtime/rt.h"

#define EASY_HOST_FN "dwork_hostname"
#define EASY_POLL    0xfffff /* indices between two interrupt checks */

static const char *const easy_opname[] = {"?", "sum", "min", "max"};

/* The range and the op of a DW_FOR_* run (none: a sum). */
static int
easy_range(const void *arg, size_t len, dw_reply *r, int64_t *lo, int64_t *hi,
           int *op)
{
	const void *u;
	size_t ul;
	*op = DW_SUM;
	if (dw_range_arg(arg, len, lo, hi, &u, &ul) != DW_OK)
		return dw_reply_error(r, "a DW_FOR_* function runs from "
		                         "dw_distributed_reduce_* or "
		                         "dw_distributed_for only");
	if (ul && (dw_unpack(u, ul, "i", op) != DW_OK || *op < DW_SUM ||
	           *op > DW_MAX))
		return dw_reply_error(r, "a DW_FOR_* function got a loop "
		                         "argument that is not a dw_op");
	if (*lo >= *hi && *op != DW_SUM)
		return dw_reply_error(r, "the %s of an empty range",
		                      easy_opname[*op]);
	return 0;
}

static int
easy_stop(dw_reply *r, int64_t lo, int64_t i)
{
	if ((((uint64_t)i - (uint64_t)lo) & EASY_POLL) != 0 ||
	    !dw_interrupted())
		return 0;
	return dw_reply_error(r, "interrupted at i = %" PRId64, i);
}

DW_API int
dw_for_i64(const void *arg, size_t len, dw_reply *r, int64_t (*body)(int64_t))
{
	int64_t lo, hi, acc = 0;
	int op;
	if (easy_range(arg, len, r, &lo, &hi, &op) < 0)
		return -1;
	for (int64_t i = lo; i < hi; i++) {
		int64_t v = body(i);
		if (easy_stop(r, lo, i) < 0)
			return -1;
		if (op == DW_SUM && __builtin_add_overflow(acc, v, &acc))
			return dw_reply_error(r,
			                      "the sum overflows an int64 at "
			                      "i = %" PRId64,
			                      i);
		if (op != DW_SUM &&
		    (i == lo || (op == DW_MIN ? v < acc : v > acc)))
			acc = v;
	}
	return dw_reply_pack(r, "l", acc);
}

DW_API int
dw_for_f64(const void *arg, size_t len, dw_reply *r, double (*body)(int64_t))
{
	int64_t lo, hi;
	double acc = 0;
	int op;
	if (easy_range(arg, len, r, &lo, &hi, &op) < 0)
		return -1;
	for (int64_t i = lo; i < hi; i++) {
		double v = body(i);
		if (easy_stop(r, lo, i) < 0)
			return -1;
		if (op == DW_SUM)
			acc += v;
		else if (i == lo || (op == DW_MIN ? v < acc : v > acc))
			acc = v;
	}
	return dw_reply_pack(r, "d", acc);
}

/* The op's reducer, keeping its message: the loop's own error names
 * only the range where combining failed. */
struct easy_red {
	dw_reduce_fn fn;
	char why[256];
};

static int
easy_combine(void **acc, size_t *acclen, const void *part, size_t partlen,
             void *ctx)
{
	struct easy_red *e = ctx;
	int rc = e->fn(acc, acclen, part, partlen, NULL);
	if (rc != 0 && !e->why[0])
		snprintf(e->why, sizeof e->why, "%s", dw_errmsg());
	return rc;
}

/* The loop with op's reducer; res and n receive its one-number result. */
static int
easy_reduce(const char *fn, int64_t lo, int64_t hi, int op, void **res,
            size_t *n)
{
	static const dw_reduce_fn red[] = {NULL, dw_reduce_sum, dw_reduce_min,
	                                   dw_reduce_max};
	if (!fn || op < DW_SUM || op > DW_MAX || hi < lo)
		return rt_set_err(0, "dw_distributed_reduce: %s",
		                  !fn       ? "no function"
		                  : hi < lo ? "hi is below lo"
		                            : "op is not DW_SUM, DW_MIN "
		                              "or DW_MAX"),
		       DW_EINVAL;
	if (lo == hi && op != DW_SUM)
		return rt_set_err(0,
		                  "dw_distributed_reduce(%s): the %s of an "
		                  "empty range",
		                  fn, easy_opname[op]),
		       DW_EINVAL;
	void *a;
	size_t al;
	int err = dw_pack(0, &a, &al, "i", op);
	if (err != DW_OK)
		return err;
	struct easy_red e = {red[op], ""};
	err = dw_distributed_for(fn, lo, hi, a, al, easy_combine, &e, res, n);
	free(a);
	if (err != DW_OK && e.why[0])
		rt_set_err(
		    0, "dw_distributed_reduce(%s): combining the ranges: %s",
		    fn, e.why);
	return err;
}

DW_API int
dw_distributed_reduce_i64(const char *fn, int64_t lo, int64_t hi, int op,
                          int64_t *out)
{
	void *res = NULL;
	size_t n = 0;
	if (!out)
		return rt_set_err(0, "dw_distributed_reduce_i64: no out"),
		       DW_EINVAL;
	int err = easy_reduce(fn, lo, hi, op, &res, &n);
	if (err == DW_OK && (err = dw_unpack(res, n, "l", out)) != DW_OK)
		rt_set_err(0, "dw_distributed_reduce_i64(%s): %s", fn,
		           dw_errmsg());
	free(res);
	return err;
}

DW_API int
dw_distributed_reduce_f64(const char *fn, int64_t lo, int64_t hi, int op,
                          double *out)
{
	void *res = NULL;
	size_t n = 0;
	int64_t v;
	if (!out)
		return rt_set_err(0, "dw_distributed_reduce_f64: no out"),
		       DW_EINVAL;
	int err = easy_reduce(fn, lo, hi, op, &res, &n);
	if (err == DW_OK && dw_unpack(res, n, "l", &v) == DW_OK)
		*out = (double)v; /* every part was an int64 */
	else if (err == DW_OK && (err = dw_unpack(res, n, "d", out)) != DW_OK)
		rt_set_err(0, "dw_distributed_reduce_f64(%s): %s", fn,
		           dw_errmsg());
	free(res);
	return err;
}

static int
easy_host(const void *arg, size_t len, dw_reply *r)
{
	char h[256] = "";
	(void)arg, (void)len;
	if (gethostname(h, sizeof h - 1) != 0)
		return dw_reply_error(r, "gethostname: %s", strerror(errno));
	return dw_reply_pack(r, "s", h);
}

static void __attribute__((constructor)) easy_register(void)
{
	dw_register(EASY_HOST_FN, easy_host);
}

DW_API int
dw_hostname(int pid, char *buf, size_t len)
{
	char *h = NULL;
	if (!buf || !len)
		return rt_set_err(0, "dw_hostname: no buffer"), DW_EINVAL;
	*buf = 0;
	int err = dw_remotecall_fetchf(pid, EASY_HOST_FN, "|s", &h);
	if (err != DW_OK)
		return err;
	size_t n = strlen(h);
	if (n >= len)
		rt_set_err(0,
		           "dw_hostname: the host name of process %d (%zu "
		           "bytes) does not fit in %zu",
		           pid, n, len),
		    err = DW_ETOOBIG;
	else
		memcpy(buf, h, n + 1);
	free(h);
	return err;
}

DW_API void
dw_exit_if(int failed)
{
	if (!failed)
		return;
	const char *m = dw_errmsg();
	fprintf(stderr, "%s: %s\n", program_invocation_short_name,
	        m && *m ? m : "failed (no dwork call left a message)");
	exit(1);
}

DW_API int
dw_args_fetch(dw_reply *r, dw_future *f, const char *fmt, ...)
{
	char msg[400], fn[80] = "";
	const void *b;
	size_t n;
	call_current(fn, sizeof fn);
	if (!f || !fmt)
		return dw_reply_error(r, "%s: dw_args_fetch without a %s", fn,
		                      f ? "format" : "future");
	if (dw_future_fetch(f, &b, &n) != DW_OK)
		return dw_reply_error(r, "%s: fetching its future: %s", fn,
		                      dw_errmsg());
	va_list ap, again;
	va_start(ap, fmt);
	va_copy(again, ap);
	int err = args_vunpack("fetched value", fn[0] ? fn : NULL, b, n, fmt,
	                       &ap, 0, msg, sizeof msg);
	if (err == DW_OK && args_hold_all(r, fmt, &again) < 0)
		snprintf(msg, sizeof msg, "out of memory"), err = DW_ENOMEM;
	va_end(again);
	va_end(ap);
	return err == DW_OK ? 0 : dw_reply_error(r, "%s", msg);
}
