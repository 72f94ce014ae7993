/* Distributed.jl's --machine-file: `machine_file --machine-file FILE`
 * starts the workers FILE lists (through ssh, in dw_init), and each is
 * asked for its host name. */
#include <stdio.h>

#include <dwork/dwork.h>

DW_MAIN(argc, argv)
{
	char h[256];
	for (int w = dw_worker_next(0); w > 0; w = dw_worker_next(w)) {
		dw_exit_if(dw_hostname(w, h, sizeof h));
		printf("%d %s\n", w, h);
	}
}
