/* Distributed.jl's --machine-file: workers on the hosts a file lists
 * (through ssh), each asked for its host name. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <dwork/dwork.h>

static int
host(const void *arg, size_t len, dw_reply *r)
{
	char h[256] = "";
	(void)arg, (void)len;
	gethostname(h, sizeof h - 1);
	return dw_reply_pack(r, "s", h);
}
DW_REGISTER(host)

int
main(int argc, char **argv)
{
	int ids[64], n;
	char *h;
	if (dw_init(&argc, &argv) || argc < 2 ||
	    (n = dw_addprocs_machinefile(argv[1], NULL, ids, 64)) < 0)
		return fprintf(stderr, "usage: machine_file FILE: %s\n",
		               dw_errmsg()),
		       1;
	for (int i = 0;
	     i < n && !dw_remotecall_fetchf(ids[i], "host", "|s", &h); i++)
		printf("%d %s\n", ids[i], h), dw_free(h);
	return dw_finalize();
}
