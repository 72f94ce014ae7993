/* Distributed.jl's addprocs twice, then rmprocs: the worker list at
 * each step. */
#include <stdio.h>

#include <dwork/dwork.h>

static void
show(void) /* println(workers()) */
{
	for (int w = dw_worker_next(0); w > 0; w = dw_worker_next(w))
		printf("%d%s", w, dw_worker_next(w) > 0 ? " " : "\n");
}

DW_MAIN(argc, argv)
{
	int ids[2];
	dw_exit_if(dw_addprocs(2, NULL, NULL) != 2);
	show();
	dw_exit_if(dw_addprocs(2, NULL, NULL) != 2);
	show();
	dw_exit_if(dw_workers(ids, 2) < 2 || dw_rmprocs(ids, 2, 0));
	show();
	printf("%d\n", dw_nprocs());
}
