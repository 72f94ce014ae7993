/* Scratch names under $TMPDIR (libdwtestutil, testutil.c), alone so
 * that tests with checks of their own (and fuzz targets) can use it
 * without testutil.h. */
#ifndef DW_TU_TMP_H
#define DW_TU_TMP_H

#include <stddef.h>

/* Writes "$TMPDIR/NAME-XXXXXX" (/tmp when TMPDIR is unset or empty)
 * into buf[len], a template for mkdtemp or mkstemp, and returns buf;
 * exits the test with a message when it does not fit. */
char *tu_tmp_template(char *buf, size_t len, const char *name);

#endif
