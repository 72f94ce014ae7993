/*
 * What the two files of the Paraver reader share: prvread.c (the
 * header, the records, the run) and prvread_side.c (the .pcf labels and
 * the .row names beside a .prv).
 */
#ifndef DW_MERGE_PRVREAD_INT_H
#define DW_MERGE_PRVREAD_INT_H

#include <stdio.h>
#include <sys/types.h>

#include "merge/prvread.h"
#include "tracefile/reader_int.h"

typedef struct pr_ctx {
	const char *path;
	rd_errlist *errs;
	FILE *f;
	char *line;
	size_t cap;
	uint64_t lineno;
	uint64_t unit; /* ns per unit of the trace's times */
	uint64_t records;
	bool other_appl; /* reported once */
	mg_info info;
	mg_node *nodes;
	mg_task *tasks;
	mg_thread *threads;
	mg_labels labels;
	char **names; /* every string the info points to, for freeing */
	size_t nnames, capnames;
	mg_pair *pairs;
	size_t cappairs;
} pr_ctx;

/* ---- Small parsers (prvread.c) ---- */
/* A decimal number at *p (moved past it); false when none or too big. */
bool pr_num(const char **p, uint64_t *v);
/* True when only blanks are left at p. */
bool pr_eol(const char *p);
/* A copy of n bytes of s, freed with c; NULL when out of memory. */
char *pr_keep(pr_ctx *c, const char *s, size_t n);
/* A line of f into c->line without its end-of-line characters. */
ssize_t pr_next_line(pr_ctx *c, FILE *f);

/* ---- The side files (prvread_side.c) ---- */
/* Reads the .pcf's states, colours, event types and values. */
dw_err pr_pcf_read(pr_ctx *c, FILE *f);
/* Names the states without one and sorts the labels. */
void pr_labels_finish(pr_ctx *c);
/* Reads the .row's names of nodes, the application, tasks, threads. */
dw_err pr_row_read(pr_ctx *c, FILE *f);
/* Names what the .row did not. */
dw_err pr_default_names(pr_ctx *c);
/* Reads PREFIX.EXT beside the .prv with read, when it is there. */
dw_err pr_side_file(pr_ctx *c, const char *ext,
                    dw_err (*read)(pr_ctx *, FILE *));

#endif
