/* Distributed.jl's remotecall, @spawnat with a fetch inside, a
 * remotecall_wait and a remote_do.  fill, sum and println are the
 * runtime's Base (dwork_fill, dwork_sum, dwork_println). */
#include <dwork/dwork.h>

/* 1 .+ fetch(r): the future r, passed for "D", arrives as its value */
DW_FUNCTIONF(plus1, D, v)
{
	for (size_t i = 0; i < v.n; i++)
		v.v[i] += 1;
	return dw_reply_pack(r, "D", v.v, v.n);
}

DW_MAIN(argc, argv)
{
	dw_future *r, *s, *w;
	int64_t x[3] = {1, 2, 3};
	dw_exit_if(
	    dw_addprocs(2, NULL, NULL) != 2 ||
	    dw_remotecallf(2, "dwork_fill", &r, "di", 0.5, 4) ||
	    dw_remotecallf(2, "plus1", &s, "F", r) || dw_future_println(s) ||
	    dw_remotecall_waitf(3, "dwork_sum", &w, "L", x, (size_t)3) ||
	    dw_future_println(w) ||
	    dw_remote_dof(3, "dwork_println", "s", "hello from remote_do"));
	dw_future_free(r), dw_future_free(s), dw_future_free(w);
}
