/*
 * The size field that starts every public options struct
 * (docs/runtime.md, "Options structs"): 0 means the layout of the header
 * this library was built with; any other value must be a size the
 * library knows.  Today that is only its own sizeof; a version that
 * grows a struct will also accept each size it shipped before, reading
 * the fields those hold and taking defaults for the rest.
 */
#ifndef DW_RUNTIME_OPTSIZE_H
#define DW_RUNTIME_OPTSIZE_H

#include <stddef.h>

/* DW_OK when size is 0 or known, else DW_EINVAL with dw_errmsg naming
 * the struct (name) and both sizes. */
int rt_opt_size(const char *name, size_t size, size_t known);

#endif
