/*
 * Trace statistics: what `dwork stats` prints.  A writer (merge/writer.h)
 * that keeps counts instead of writing a file, so the same figures come
 * from a trace directory (through the merger, clocks corrected) and from
 * a merged Paraver trace (through prvread.h):
 *
 *  - per thread: time and bursts per state, events per type, calls per
 *    remote function (DW_EV_FUNCTION: the function's id while it runs, 0
 *    when it ends) with their mean and maximum duration, messages and
 *    bytes sent and received;
 *  - per task: useful time, and the POP efficiency metrics
 *    (docs/tracing.md).
 *
 * Memory grows with threads x (states + event types + functions), never
 * with the number of records, except for the ideal-network replay behind
 * the POP tree (merge/replay.h), which keeps every state and message:
 * st_stats_figures_only leaves it out.
 */
#ifndef DW_OUTPUT_STATS_H
#define DW_OUTPUT_STATS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tracefile/reader.h"
#include "merge/replay.h"
#include "merge/writer.h"

/* ---- Which threads count (shared with `dwork summary`) -------------- */

enum st_role {
	ST_NOT_COUNTED = 0, /* I/O threads, a worker's main thread */
	ST_USER = 1,        /* the master's user threads: Running is useful */
	ST_EXECUTOR = 2,    /* executors: Running is useful, Idle is idle */
};

/*
 * The role of a thread from its label (the name the runtime gave it:
 * "master", "main", "I/O", "executor 1", and before 1.1 "dwork I/O",
 * "worker main"; NULL when it has
 * none) and its task: useful time is Running on executor threads and on
 * the master's (task 0) user threads; I/O threads are not counted.
 */
enum st_role st_thread_role(const char *label, uint32_t task);

/*
 * The label in a merged thread name: "task 2 thread 1 (compute)" or
 * "task 2 thread 1 pid 77 (compute)" gives "compute"; a dwork process's
 * "worker 3 executor 1" gives "executor 1", "master" gives "master".  A
 * pointer into name and its length in *len; NULL when there is none.
 */
const char *st_name_label(const char *name, size_t *len);

/* POP metrics of n tasks' useful times over an elapsed time T (any unit). */
typedef struct st_pop {
	double mean, max, elapsed;
	double lb;   /* load balance: mean / max */
	double comm; /* communication efficiency: max / elapsed */
	double pe;   /* parallel efficiency: lb x comm = mean / elapsed */
	bool valid;  /* n > 0, max > 0 and elapsed > 0 */
	/* the ideal network (replay.h), set by st_pop_ideal */
	double ideal; /* elapsed time of the replay */
	double ser;   /* serialization efficiency: max / ideal */
	double trf;   /* transfer efficiency: comm / ser = ideal / elapsed */
	bool ideal_valid; /* valid and ideal > 0 */
} st_pop;

void st_pop_compute(const double *useful, size_t n, double elapsed,
                    st_pop *out);

/* Splits out->comm by the elapsed time ideal of the ideal-network
 * replay: SerE = max / ideal, TrfE = CommE / SerE. */
void st_pop_ideal(st_pop *out, double ideal);

/* ---- The statistics writer ------------------------------------------ */

/* Instructions and cycles of the counted threads, where the trace has
 * them (Extrae's PAPI_TOT_INS / PAPI_TOT_CYC events, perf_event); when
 * it has none, why (the merging machine's own perf_event_open answer). */
typedef struct st_counters {
	bool valid;
	uint64_t ins, cyc;
	double ipc;
	char why[160]; /* when !valid */
} st_counters;

typedef struct st_state {
	uint32_t state;
	uint64_t ns, bursts, max_ns;
} st_state;

typedef struct st_event {
	uint32_t type;
	uint64_t count;
} st_event;

typedef struct st_call {
	uint64_t func; /* the function's id */
	uint64_t calls, total_ns, max_ns;
} st_call;

typedef struct st_thread {
	uint32_t task, num;
	char *name;  /* the merged name; owned */
	char *label; /* its label, or NULL; owned */
	enum st_role role;
	bool active;      /* has a record other than "Not created" */
	st_state *states; /* sorted by state */
	size_t nstates;
	st_event *events; /* sorted by type */
	size_t nevents;
	st_call *calls; /* sorted by function id */
	size_t ncalls;
	uint64_t sent, sent_bytes, recv, recv_bytes;
	uint64_t ins, cyc; /* counter increments (PAPI_TOT_INS, _CYC) */
	/* while reading */
	uint64_t run_func, run_since, last;
	bool running;
} st_thread;

typedef struct st_task {
	bool active;     /* one of its threads is */
	uint64_t useful; /* ns: Running on its counted threads */
	uint64_t idle;   /* ns: Idle on its executor threads */
	uint64_t calls;  /* DW_EV_FUNCTION runs on its counted threads */
	uint32_t first_thread, nthreads;
} st_task;

typedef struct st_stats {
	mg_writer base;
	char *source;      /* what was read, for the output */
	uint64_t duration; /* ns */
	st_task *tasks;
	size_t ntasks;
	st_thread *threads;
	size_t nthreads;
	mg_labels labels; /* a copy, made at end; owned */
	st_call *funcs;   /* calls per function over all threads */
	size_t nfuncs;
	bool runtime; /* a dwork runtime trace (threads named by it) */
	st_pop pop;
	rp_replay *replay; /* while reading; freed at end */
	uint64_t ideal;    /* ns: the elapsed time on an ideal network */
	rp_fn *path;       /* ns per function on its critical path; owned */
	size_t npath;
	uint64_t path_other;    /* ns of the path in no function */
	uint64_t path_length;   /* ns of busy bursts on it (<= ideal) */
	uint64_t path_messages; /* messages on it */
	/* the rest of the POP tree (stats_pop.c) */
	double faster_k;       /* the what-if speed-up, 2 unless set */
	uint64_t *path_faster; /* T_ideal with path[i].func k x faster */
	rp_seg *path_segs;     /* the path on the threads; owned */
	size_t npath_segs;
	uint64_t *task_waits; /* ntasks x RP_NCAUSES ns; owned */
	rp_wait *func_waits;  /* per function (thread 0); owned */
	size_t nfunc_waits;
	st_counters ctr;
	bool figures_only; /* no replay: st_stats_figures_only */
	bool ended;
} st_stats;

/*
 * A statistics writer; source names the input in the outputs.  Give
 * &s->base to mg_merge or prvread_run; the figures are complete when it
 * ended.  Returns DW_OK or DW_ENOMEM.
 */
dw_err st_stats_new(const char *source, st_stats **out);

/*
 * Before s is given its first record: keep only what
 * st_print_figures_json and st_print_figures_line print (the counts, the
 * useful times, load balance, communication and parallel efficiency, the
 * calls per function), without the ideal-network replay and what comes
 * from it (T_ideal, serialization and transfer efficiency, the critical
 * path, wait causes, the what-ifs; left zero).  Memory then stays
 * threads x (states + types + functions) whatever the trace's length:
 * the Chrome JSON's otherData.summary uses it.
 */
void st_stats_figures_only(st_stats *s);

/* Frees s; NULL is ignored. */
void st_stats_free(st_stats *s);

/*
 * Reads trace into s: a trace directory through the merger (clocks
 * corrected), anything else as a merged Paraver trace (FILE.prv with its
 * .pcf and .row).  Problems with the input are added to errs.  Returns
 * DW_OK, or an error with a message in s->base.err when it has one.
 * Every figure dwork prints (stats, summary, the end-of-run summary, the
 * figures of the JSON and HTML outputs) comes from an st_stats filled
 * this way or given every record of a merge.
 */
dw_err st_stats_read(const char *trace, st_stats *s, rd_errlist *errs);

/* The name of a state, an event type or a function (type DW_EV_FUNCTION
 * value) from the trace's labels; NULL when unlabelled. */
const char *st_state_name(const st_stats *s, uint32_t state);
const char *st_type_name(const st_stats *s, uint32_t type);
const char *st_value_name(const st_stats *s, uint32_t type, uint64_t value);

/* The rest of the POP tree at the end of a read (stats_pop.c): wait
 * causes, the what-ifs of the path's functions, the counters.  Called
 * with s->replay run and its path taken.  DW_OK or DW_ENOMEM. */
dw_err st_pop_tree(st_stats *s);
void st_pop_tree_free(st_stats *s);

/* The POP tree's extra parts as text and JSON members (stats_pop.c). */
void st_print_pop_text(const st_stats *s, FILE *out);
void st_print_pop_json(const st_stats *s, FILE *out);
void st_print_pop_csv(const st_stats *s, FILE *out);

/* ---- Output (stats_out.c) ------------------------------------------- */

/* A readable report: tables per task and thread, the POP metrics with
 * their formulas. */
void st_print_text(const st_stats *s, FILE *out);

/*
 * One CSV table for scripts, header line first; every row is
 * "table,task,thread,key,name,count,value,max":
 *   thread,T,t,,NAME,,,            a thread and its name
 *   state,T,t,STATE,NAME,BURSTS,NS,MAX_NS
 *   event,T,t,TYPE,NAME,COUNT,,
 *   call,T,t,FUNC_ID,NAME,CALLS,TOTAL_NS,MAX_NS
 *   sent,T,t,,,MESSAGES,BYTES,
 *   received,T,t,,,MESSAGES,BYTES,
 *   useful,T,,,,,NS,               tasks with records
 *   metric,,,KEY,NAME,,VALUE,      elapsed_ns, useful_mean_ns,
 *                                  useful_max_ns, load_balance,
 *                                  communication_efficiency,
 *                                  parallel_efficiency
 * Names are quoted when they hold a comma, a quote or a newline.
 */
void st_print_csv(const st_stats *s, FILE *out);

/* The same as one JSON object (docs/tools.md shows its shape). */
void st_print_json(const st_stats *s, FILE *out);

/*
 * The summary `dwork summary` and the end of a traced run print: per
 * task useful time, calls served and idle time (s, 3 decimals), then the
 * load balance, communication efficiency and parallel efficiency (2
 * decimals).
 */
void st_print_summary(const st_stats *s, FILE *out);

/*
 * The figures as one JSON object on one line, for the outputs that
 * carry them (Chrome JSON's otherData.summary): elapsed_ns, the rule of
 * useful time, per task useful_ns, idle_ns and calls, the POP metrics
 * (6 decimals, as --json) and calls per function.
 */
void st_print_figures_json(const st_stats *s, FILE *out);

/*
 * The figures as one line of plain text (the HTML timeline shows it):
 * useful time per task and the three metrics, as the summary prints
 * them.
 */
void st_print_figures_line(const st_stats *s, FILE *out);

#endif
