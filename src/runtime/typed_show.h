/* Typed values as Julia's println shows them (typed_show.c). */
#ifndef DW_RUNTIME_TYPED_SHOW_H
#define DW_RUNTIME_TYPED_SHOW_H

#include <stddef.h>

/* A growing, NUL-terminated text; err is sticky (out of memory). */
struct show_buf {
	char *p;
	size_t len, cap;
	int err;
};

/* Appends the typed values buf/len (one MessagePack array) and a
 * newline to b: as println's arguments when args (each printed, strings
 * bare, one after the other), else as one value (several: a tuple;
 * none: nothing).  0, or -1 when buf is not typed values, is truncated,
 * nests over 32 levels, or memory ran out. */
int show_typed(struct show_buf *b, const void *buf, size_t len, int args);

#endif
