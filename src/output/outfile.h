/*
 * A writer's output file: written under a temporary name (PATH.tmp) and
 * renamed over PATH at the end, so that a reader never sees half a file
 * and a failed merge leaves the previous output in place; and the
 * message a writer leaves in its err when that fails.  What json.c,
 * perfetto.c, prv.c, otf2.c and html.c share.
 */
#ifndef DW_OUTPUT_OUTFILE_H
#define DW_OUTPUT_OUTFILE_H

#include <stdbool.h>

#include "merge/writer.h"

/* *path = prefix + ext, *tmp = that + ".tmp" (malloc'd, the caller
 * frees them with of_names_free).  DW_OK, or DW_ENOMEM with both NULL. */
dw_err of_names(char **path, char **tmp, const char *prefix, const char *ext);

/* Removes tmp when remove_tmp (a writer that did not end), then frees
 * both names; NULLs are ignored. */
void of_names_free(char *path, char *tmp, bool remove_tmp);

/* Replaces path by tmp (path unlinked first); DW_OK, or the mapped errno
 * with "cannot rename to PATH: reason" in w->err. */
dw_err of_commit(mg_writer *w, const char *tmp, const char *path);

/* Leaves "cannot WHAT PATH: reason" in w->err (reason: strerror(errnum)
 * when errnum is set, else dw_strerror(err)), or "out of memory" for
 * DW_ENOMEM; returns err. */
dw_err of_fail(mg_writer *w, dw_err err, const char *what, const char *path,
               int errnum);

#endif
