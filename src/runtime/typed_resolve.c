/*
 * A future given as a typed argument where the remote function expects
 * a value (args.c, args_resolve): its value, fetched for the call.  The
 * caller's future stays the caller's; the copy imported here is the
 * call's and is released before the function runs.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/args.h"
#include "runtime/rt.h"

int
args_fetch_ref(const void *ref, size_t n, void **buf, size_t *len)
{
	dw_future *f;
	const void *b;
	size_t bn;
	int err = dw_future_import(ref, n, &f);
	if (err != DW_OK)
		return err;
	err = dw_future_fetch(f, &b, &bn);
	*buf = err == DW_OK ? malloc(bn ? bn : 1) : NULL;
	if (err == DW_OK && !*buf)
		rt_set_err(0, "out of memory for %zu bytes", bn),
		    err = DW_ENOMEM;
	if (*buf) {
		memcpy(*buf, b, bn);
		*len = bn;
	}
	dw_future_free(f);
	return err;
}
