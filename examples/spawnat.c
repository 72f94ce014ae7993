/* Distributed.jl's remotecall, @spawnat with a fetch inside, a
 * remotecall_wait and a remote_do. */
#include <stdio.h>
#include <stdlib.h>

#include <dwork/dwork.h>

static int
filled(const void *arg, size_t len, dw_reply *r) /* fill(x, n) */
{
	double x, v[16];
	int n;
	if (dw_args(r, arg, len, "di", &x, &n) || n < 0 || n > 16)
		return -1;
	for (int i = 0; i < n; i++)
		v[i] = x;
	return dw_reply_pack(r, "D", v, (size_t)n);
}
DW_REGISTER(filled)

static int
plus1(const void *arg, size_t len, dw_reply *r) /* 1 .+ fetch(f) */
{
	dw_future *f;
	double *v;
	size_t n;
	if (dw_args(r, arg, len, "F", &f) || dw_future_fetchf(f, "D", &v, &n))
		return dw_reply_error(r, "plus1: %s", dw_errmsg());
	for (size_t i = 0; i < n; i++)
		v[i] += 1;
	int rc = dw_reply_pack(r, "D", v, n);
	dw_free(v), dw_future_free(f);
	return rc;
}
DW_REGISTER(plus1)

static int
sum(const void *arg, size_t len, dw_reply *r)
{
	int64_t *v, s = 0;
	size_t n;
	if (dw_args(r, arg, len, "L", &v, &n))
		return -1;
	for (size_t i = 0; i < n; i++)
		s += v[i];
	return dw_reply_pack(r, "l", s);
}
DW_REGISTER(sum)

static int
say(const void *arg, size_t len, dw_reply *r)
{
	char *s;
	if (dw_args(r, arg, len, "s", &s))
		return -1;
	return printf("%s\n", s), fflush(stdout), 0;
}
DW_REGISTER(say)

int
main(int argc, char **argv)
{
	dw_future *a, *b, *c;
	double *v;
	size_t n;
	int64_t s, x[3] = {1, 2, 3};
	if (dw_init(&argc, &argv) || dw_addprocs(2, NULL, NULL) != 2 ||
	    dw_remotecallf(2, "filled", &a, "di", 0.5, 4) ||
	    dw_remotecallf(2, "plus1", &b, "F", a) ||
	    dw_future_fetchf(b, "D", &v, &n) ||
	    dw_remotecall_waitf(3, "sum", &c, "L", x, (size_t)3) ||
	    dw_future_fetchf(c, "l", &s))
		return fprintf(stderr, "%s\n", dw_errmsg()), 1;
	printf("%g %g %g %g\n%lld\n", v[0], v[1], v[2], v[3], (long long)s);
	dw_remote_dof(3, "say", "s", "hello from remote_do");
	dw_free(v), dw_future_free(a), dw_future_free(b), dw_future_free(c);
	return dw_finalize();
}
