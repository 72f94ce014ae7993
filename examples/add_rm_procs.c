/* Distributed.jl's addprocs twice, then rmprocs: the worker list at
 * each step. */
#include <stdio.h>

#include <dwork/dwork.h>

static void
show(void) /* println(workers()) */
{
	int ids[16], n = dw_workers(ids, 16);
	for (int i = 0; i < n && i < 16; i++)
		printf("%d%s", ids[i], i + 1 < n ? " " : "\n");
}

int
main(int argc, char **argv)
{
	int ids[16];
	dw_exit_if(dw_init(&argc, &argv));
	dw_exit_if(dw_addprocs(2, NULL, NULL) != 2);
	show();
	dw_exit_if(dw_addprocs(2, NULL, NULL) != 2);
	show();
	dw_exit_if(dw_workers(ids, 16) < 2 || dw_rmprocs(ids, 2, 0));
	show();
	printf("%d\n", dw_nprocs());
	return dw_finalize();
}
