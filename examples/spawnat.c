/* Distributed.jl's remotecall, @spawnat with a fetch inside, a
 * remotecall_wait and a remote_do. */
#include <stdio.h>
#include <stdlib.h>

#include <dwork/dwork.h>

DW_FUNCTIONF(filled, d, x, i, n) /* fill(x, n) */
{
	double v[16];
	if (n < 0 || n > 16)
		return dw_reply_error(r, "filled: n = %d is not in 0..16", n);
	for (int i = 0; i < n; i++)
		v[i] = x;
	return dw_reply_pack(r, "D", v, (size_t)n);
}

DW_FUNCTIONF(plus1, F, f) /* 1 .+ fetch(f) */
{
	dw_doubles v;
	int rc = dw_args_fetch(r, f, "D", &v.v, &v.n);
	dw_future_free(f);
	for (size_t i = 0; rc == 0 && i < v.n; i++)
		v.v[i] += 1;
	return rc ? -1 : dw_reply_pack(r, "D", v.v, v.n);
}

DW_FUNCTIONF(sum, L, v)
{
	int64_t s = 0;
	for (size_t i = 0; i < v.n; i++)
		s += v.v[i];
	return dw_reply_pack(r, "l", s);
}

DW_FUNCTIONF(say, s, s) /* println */
{
	return printf("%s\n", s), fflush(stdout), 0;
}

int
main(int argc, char **argv)
{
	dw_future *a, *c;
	double *v;
	size_t n;
	int64_t s, x[3] = {1, 2, 3};
	dw_exit_if(dw_init(&argc, &argv) || dw_addprocs(2, NULL, NULL) != 2 ||
	           dw_remotecallf(2, "filled", &a, "di", 0.5, 4) ||
	           dw_remotecall_fetchf(2, "plus1", "F|D", a, &v, &n) ||
	           dw_remotecall_waitf(3, "sum", &c, "L", x, (size_t)3) ||
	           dw_future_fetchf(c, "l", &s) ||
	           dw_remote_dof(3, "say", "s", "hello from remote_do"));
	printf("%g %g %g %g\n%lld\n", v[0], v[1], v[2], v[3], (long long)s);
	dw_free(v), dw_future_free(a), dw_future_free(c);
	return dw_finalize();
}
