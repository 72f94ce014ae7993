/* Distributed.jl's @distributed (+): coin flips counted in parallel,
 * each range on one worker, the parts added up. */
#include <stdio.h>

#include <dwork/dwork.h>

DW_FOR_I64(flips, i) /* Int(rand(Bool)): a hash of i, so the sum is known */
{
	return ((uint64_t)i * 0x9e3779b97f4a7c15u) >> 63;
}

DW_MAIN(argc, argv)
{
	int64_t heads;
	dw_exit_if(dw_addprocs(4, NULL, NULL) != 4);
	dw_exit_if(
	    dw_distributed_reduce_i64("flips", 1, 20000001, DW_SUM, &heads));
	printf("%lld\n", (long long)heads);
}
