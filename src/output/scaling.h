/*
 * Scaling across runs (docs/tracing.md, "Scaling"): the POP tree of
 * traces of one program at different numbers of processes, with the
 * computation scalability (strong or weak, detected from the useful
 * time) and the global efficiency, for `dwork stats --scaling`.
 */
#ifndef DW_MERGE_SCALING_H
#define DW_MERGE_SCALING_H

#include <stdbool.h>
#include <stdio.h>

#include "output/stats.h"

typedef struct sc_run {
	st_stats *st;   /* its statistics; owned */
	size_t procs;   /* tasks with records: the POP "processes" */
	size_t workers; /* procs less the master in a runtime trace */
	double useful;  /* ns: the sum of the tasks' useful time */
	double comp;    /* computation scalability against the reference */
	double global;  /* global efficiency: PE x comp */
	double ins_scal, ipc_scal; /* when every run has counters */
} sc_run;

typedef struct sc_table {
	sc_run *runs; /* by procs, the reference (fewest) first */
	size_t n;
	bool weak;     /* weak scaling: the useful time grows with procs */
	bool forced;   /* weak was given, not detected */
	bool counters; /* every run has instruction and cycle counters */
	char why[200]; /* when !counters: why not */
} sc_table;

enum sc_mode { SC_AUTO, SC_STRONG, SC_WEAK };

/*
 * Reads the n traces (directories or merged .prv) into t; mode says
 * strong or weak scaling, or SC_AUTO to detect it.  Problems
 * with an input go to errs; a run that cannot be read, or has no useful
 * time, is an error with a message naming it in err.  DW_OK, DW_EINVAL
 * (fewer than one trace, an unreadable one) or DW_ENOMEM.
 */
dw_err sc_read(const char *const *traces, size_t n, enum sc_mode mode,
               rd_errlist *errs, sc_table *t, char *err, size_t errlen);

void sc_free(sc_table *t);

/* The table as text (with the formulas), CSV (header first), JSON. */
void sc_print_text(const sc_table *t, FILE *out);
void sc_print_csv(const sc_table *t, FILE *out);
void sc_print_json(const sc_table *t, FILE *out);

/* A self-contained HTML page: the table and an SVG plot of every
 * efficiency against the number of workers. */
void sc_print_html(const sc_table *t, FILE *out);

#endif
