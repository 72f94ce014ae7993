/* Distributed.jl's pmap with uneven work: items of different lengths
 * are handed out as workers become free (docs/julia.md). */
#include <stdio.h>
#include <unistd.h>

#include <dwork/dwork.h>

DW_FUNCTIONF(work, d, t)
{
	usleep((useconds_t)(t * 1e6));
	return dw_reply_pack(r, "d", 2 * t);
}

DW_MAIN(argc, argv)
{
	double t[8] = {0.05, 0.2, 0.05, 0.1, 0.05, 0.15, 0.05, 0.1}, out[8];
	dw_exit_if(dw_addprocs(4, NULL, NULL) != 4 ||
	           dw_pmap_f64("work", t, 8, out, NULL));
	double sum = 0;
	for (int i = 0; i < 8; i++)
		printf("%g ", out[i]), sum += out[i];
	printf("\ntotal: %g\n", sum);
}
