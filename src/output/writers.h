/*
 * The output formats: one table (writers.c) of every format a merge or a
 * conversion can write, by the name `--format` takes, and a writer that
 * feeds several formats from one merge.
 */
#ifndef DW_OUTPUT_WRITERS_H
#define DW_OUTPUT_WRITERS_H

#include <stddef.h>

#include "merge/writer.h"

/* A format: its name, the files it writes (a printf pattern of the
 * prefix), and its writer.  create is NULL when this build lacks what
 * the format needs; missing then says what. */
typedef struct mg_format {
	const char *name;
	const char *outputs;
	dw_err (*create)(const char *prefix, mg_writer **out);
	const char *missing;
} mg_format;

/* The table; *n gets its length. */
const mg_format *mg_formats(size_t *n);

/* The format called name, or NULL. */
const mg_format *mg_format_find(const char *name);

/*
 * The formats of a comma-separated list ("prv,json"): their table
 * entries in list order, each once, in fmts (room for max).  Returns the
 * count, or 0 with a message in err: an empty list or name, an unknown
 * name (the message lists the known ones), a format this build cannot
 * write (the message says why).
 */
size_t mg_formats_parse(const char *list, const mg_format **fmts, size_t max,
                        char *err, size_t errlen);

/*
 * One writer for the formats of fmts (n >= 1) with outputs under prefix:
 * the format's own writer when n is 1, else one that gives every call to
 * each of them in turn (the first error stops it, with that writer's
 * message).  Returns DW_OK with *out set, or DW_ENOMEM.
 */
dw_err mg_writers_new(const mg_format *const *fmts, size_t n,
                      const char *prefix, mg_writer **out);

/* The writers of the formats (each in its own files). */
dw_err json_writer_new(const char *prefix, mg_writer **out);
dw_err otf2_writer_new(const char *prefix, mg_writer **out);
/* Perfetto's protobuf trace, PREFIX.pftrace (output/perfetto.c). */
dw_err perfetto_writer_new(const char *prefix, mg_writer **out);

#endif
