/*
 * The Paraver writer's parts: prv.c writes the .prv and drives the
 * other two, pcf.c the .pcf (labels), row.c the .row (names).
 */
#ifndef DW_OUTPUT_PRV_INT_H
#define DW_OUTPUT_PRV_INT_H

#include <stdio.h>

#include "merge/writer.h"

/* The .pcf of the trace: default options, states, their colours, event
 * types with their values.  Errors show in ferror(f). */
void pcf_write(FILE *f, const mg_info *info);

/* The .row: names of the CPUs, nodes, application, tasks and threads. */
void row_write(FILE *f, const mg_info *info);

/* Writes a name on one line: control characters become spaces. */
void prv_put_name(FILE *f, const char *s);

#endif
