/* Distributed.jl's --machine-file: `machine_file --machine-file FILE`
 * starts the workers FILE lists (through ssh, in dw_init), and each is
 * asked for its host name. */
#include <stdio.h>

#include <dwork/dwork.h>

int
main(int argc, char **argv)
{
	int ids[64], n;
	char h[256];
	dw_exit_if(dw_init(&argc, &argv));
	n = dw_workers(ids, 64);
	for (int i = 0; i < n && i < 64; i++) {
		dw_exit_if(dw_hostname(ids[i], h, sizeof h));
		printf("%d %s\n", ids[i], h);
	}
	return dw_finalize();
}
