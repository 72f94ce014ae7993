/*
 * Where the dwork tool is, for the merge at the end (docs/tracing.md,
 * "Which dwork merges").  No build path is compiled in: an installed
 * library must never run a binary left in some build tree.
 */
#ifndef DW_RUNTIME_TOOLPATH_H
#define DW_RUNTIME_TOOLPATH_H

#include <stddef.h>

/* The tool to run: $DWORK_TOOL; else the dwork installed beside this
 * library (DW_TOOL_FROM_LIB, relative to the library's directory, as
 * dladdr finds it), or in the same directory; else "dwork", which
 * execvp looks up in PATH.  buf receives a found path. */
const char *tool_find(char *buf, size_t len);

#endif
