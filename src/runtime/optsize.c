/* The size check of public options structs (optsize.h). */
#include "runtime/optsize.h"
#include "runtime/rt.h"

int
rt_opt_size(const char *name, size_t size, size_t known)
{
	if (size == 0 || size == known)
		return DW_OK;
	return rt_set_err(0,
	                  "%s.size is %zu, but this libdwork's %s has %zu "
	                  "bytes: the program was built against another "
	                  "dwork header (set .size = sizeof(%s), or 0)",
	                  name, size, name, known, name),
	       DW_EINVAL;
}
