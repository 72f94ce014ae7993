/* Distributed.jl's @distributed (+): coin flips counted in parallel,
 * each range on one worker, the parts added up. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <dwork/dwork.h>

static int
flips(const void *arg, size_t len, dw_reply *r) /* Int(rand(Bool)) */
{
	int64_t lo, hi, heads = 0;
	if (dw_range_arg(arg, len, &lo, &hi, NULL, NULL))
		return -1;
	for (uint64_t i = (uint64_t)lo; i < (uint64_t)hi; i++)
		heads += (i * 0x9e3779b97f4a7c15u) >> 63; /* a hash, as rand */
	return dw_reply_pack(r, "l", heads);
}
DW_REGISTER(flips)

int
main(int argc, char **argv)
{
	void *res;
	size_t n;
	int64_t heads;
	if (dw_init(&argc, &argv) || dw_addprocs(4, NULL, NULL) != 4 ||
	    dw_distributed_for("flips", 1, 20000001, NULL, 0, dw_reduce_sum,
	                       NULL, &res, &n) ||
	    dw_unpack(res, n, "l", &heads))
		return fprintf(stderr, "%s\n", dw_errmsg()), 1;
	printf("%" PRId64 "\n", heads);
	dw_free(res);
	return dw_finalize();
}
