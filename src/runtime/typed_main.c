/*
 * A program's frame (issue 18): DW_MAIN's dw_main, dw_init before the
 * body and dw_finalize after it, and dw_worker_next, `for w in
 * workers()` without an array of ids.  Public calls only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/rt.h"

DW_API int
dw_main(int *argc, char ***argv, void (*body)(int argc, char **argv))
{
	if (!argc || !argv || !body) {
		fprintf(stderr, "dw_main: no %s\n",
		        !body ? "body" : "argc or argv");
		return 1;
	}
	dw_exit_if(dw_init(argc, argv)); /* a worker never returns */
	body(*argc, *argv);
	if (dw_finalize() == DW_OK)
		return 0;
	fprintf(stderr, "%s: dw_finalize: %s\n", program_invocation_short_name,
	        dw_errmsg());
	return 1;
}

DW_API int
dw_worker_next(int after)
{
	int buf[256], *ids = buf, cap = 256, n = dw_workers(buf, cap), next = 0;
	if (n > cap) {
		cap = n;
		if (!(ids = malloc((size_t)cap * sizeof *ids)))
			return rt_set_err(0,
			                  "dw_worker_next: out of memory for "
			                  "%d ids",
			                  cap),
			       DW_ENOMEM;
		n = dw_workers(ids, cap);
	}
	for (int k = 0; k < n && k < cap && !next; k++) /* increasing ids */
		if (ids[k] > after)
			next = ids[k];
	if (ids != buf)
		free(ids);
	return next;
}
