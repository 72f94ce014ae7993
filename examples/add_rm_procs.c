/* Distributed.jl's addprocs twice, then rmprocs: the worker list at
 * each step. */
#include <stdio.h>

#include <dwork/dwork.h>

static void
show(void)
{
	int ids[16], n = dw_workers(ids, 16);
	for (int i = 0; i < n; i++)
		printf("%d%s", ids[i], i + 1 < n ? " " : "\n");
}

int
main(int argc, char **argv)
{
	int ids[16];
	if (dw_init(&argc, &argv) || dw_addprocs(2, NULL, NULL) != 2)
		return fprintf(stderr, "%s\n", dw_errmsg()), 1;
	show();
	if (dw_addprocs(2, NULL, NULL) != 2)
		return fprintf(stderr, "%s\n", dw_errmsg()), 1;
	show();
	dw_workers(ids, 16);
	dw_rmprocs(ids, 2, 0);
	show();
	printf("%d\n", dw_nprocs());
	return dw_finalize();
}
