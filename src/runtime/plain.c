/* Public calls for bindings: plain forms of variadic calls, and the
 * one way to release what the library allocated. */
#include <stdlib.h>

#include "runtime/rt.h"

DW_API void
dw_free(void *p)
{
	free(p); /* the library allocates with malloc: free() works too */
}

DW_API int
dw_reply_error_str(dw_reply *r, const char *msg)
{
	return dw_reply_error(r, "%s", msg ? msg : "");
}
