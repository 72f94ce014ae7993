/* Finding the dwork tool (toolpath.h). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/toolpath.h"

/* name in the directory of the object that holds this code (libdwork.so,
 * or the program when it linked libdwork statically). */
static int
tool_beside(const char *name, char *buf, size_t len)
{
	Dl_info di;
	if (!dladdr((void *)tool_beside, &di) || !di.dli_fname ||
	    !strchr(di.dli_fname, '/'))
		return 0;
	const char *slash = strrchr(di.dli_fname, '/');
	int n = snprintf(buf, len, "%.*s/%s", (int)(slash - di.dli_fname),
	                 di.dli_fname, name);
	return n > 0 && (size_t)n < len && access(buf, X_OK) == 0;
}

const char *
tool_find(char *buf, size_t len)
{
	const char *e = getenv("DWORK_TOOL");
	if (e && *e)
		return e;
#ifdef DW_TOOL_FROM_LIB
	if (tool_beside(DW_TOOL_FROM_LIB, buf, len))
		return buf;
#endif
	if (tool_beside("dwork", buf, len))
		return buf;
	return "dwork";
}
