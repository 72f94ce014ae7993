/*
 * Output writers: the one interface between the merge core and the trace
 * formats it produces (Paraver, OTF2, Chrome JSON, the HTML timeline:
 * the table of output/writers.c).  A writer is begun once with the
 * trace's shape, then given every record in time order, then ended;
 * each format lives in its own files and nothing in the merge core
 * knows about any of them.
 *
 * Records arrive sorted by time (a state by its begin, an event by its
 * time, a communication by its logical send), and at one time in the
 * order the merge produced them.  Times are nanoseconds since time 0,
 * the earliest record of the trace, and never exceed info->duration.
 * Per thread, states tile the thread's time from 0 to the duration: no
 * gap, no overlap, no empty state.
 */
#ifndef DW_MERGE_WRITER_H
#define DW_MERGE_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dwork/error.h>

/* ---- The trace's shape ------------------------------------------------ */

/* A host.  Its CPUs are numbered first_cpu .. first_cpu + ncpus - 1. */
typedef struct mg_node {
	const char *name;
	uint32_t ncpus;
	uint32_t first_cpu; /* global CPU index, from 0 */
} mg_node;

/*
 * A task (tracer task id = its index).  A task id that never traced is
 * declared with one thread and no records (traced = false).
 */
typedef struct mg_task {
	uint32_t nthreads;
	uint32_t first_thread; /* global thread index of its thread 0 */
	uint32_t node;         /* index into mg_info.nodes */
	bool traced;
	const char *name; /* "task 2 (pid 123 on host)" */
} mg_task;

/* A thread.  Global thread indices run task by task. */
typedef struct mg_thread {
	uint32_t task;    /* tracer task id */
	uint32_t num;     /* thread number within its task, from 0 */
	uint32_t cpu;     /* global CPU index */
	const char *name; /* "task 2 thread 1" plus the thread's label */
} mg_thread;

typedef struct mg_state_label {
	uint32_t state;
	uint32_t rgb; /* 0xRRGGBB */
	const char *name;
} mg_state_label;

typedef struct mg_value_label {
	uint64_t value;
	const char *name;
} mg_value_label;

typedef struct mg_type_label {
	uint32_t type;
	const char *name;
	mg_value_label *values; /* sorted by value */
	size_t nvalues;
} mg_type_label;

/* Every label of the trace: states (with Paraver's standard ones),
 * event types with their values (user functions are one type). */
typedef struct mg_labels {
	mg_state_label *states; /* sorted by state */
	size_t nstates;
	mg_type_label *types; /* sorted by type */
	size_t ntypes;
} mg_labels;

typedef struct mg_info {
	uint64_t duration;     /* ns: the end of the last thread */
	int64_t start_real_ns; /* CLOCK_REALTIME of the trace's start */
	const char *program;   /* the traced program's name */
	const mg_node *nodes;
	size_t nnodes;
	const mg_task *tasks; /* tasks[0 .. ntasks-1], by tracer task id */
	size_t ntasks;
	const mg_thread *threads;
	size_t nthreads;
	uint32_t ncpus;
	/* Complete when end() is called; before, function names found
	 * during the merge may still be missing. */
	const mg_labels *labels;
	/* The name of user function id (a value of type 60000019) while
	 * the merge runs: every id a record has carried so far is named
	 * ("End" for 0).  NULL for an unknown id.  May be NULL itself. */
	const char *(*func_name)(const struct mg_info *info, uint64_t id);
	const void *func_ctx; /* func_name's */
} mg_info;

/* ---- Records ---------------------------------------------------------- */

enum mg_rec_kind { MG_STATE = 1, MG_EVENT = 2, MG_COMM = 3 };

typedef struct mg_pair {
	uint32_t type;
	uint64_t value;
} mg_pair;

/*
 * One output record.  thread is a global thread index.  A state covers
 * [time, end).  An event record holds every event of its thread at its
 * time (at least one).  A communication goes from thread at time (the
 * logical send) to recv_thread; phy_recv is never before phy_send.
 */
typedef struct mg_rec {
	uint32_t kind; /* enum mg_rec_kind */
	uint32_t thread;
	uint64_t time;
	union {
		struct {
			uint64_t end;
			uint32_t state;
		} state;
		struct {
			const mg_pair *pairs; /* valid during the call */
			uint32_t n;
		} event;
		struct {
			uint32_t recv_thread;
			uint32_t tag;
			uint64_t phy_send, log_recv, phy_recv;
			uint64_t size;
		} comm;
	} u;
} mg_rec;

/* ---- Writers ---------------------------------------------------------- */

typedef struct mg_writer mg_writer;

/*
 * A format.  Each call returns DW_OK or an error (DW_EIO, DW_ENOSPC, ...)
 * with a message in w->err; after an error the merge stops and calls
 * free.  begin may write headers; end completes the outputs (and, for
 * writers that write beside a final name, renames them into place).
 * free releases the writer and removes partial outputs when end did not
 * succeed.
 */
typedef struct mg_writer_ops {
	const char *name;
	dw_err (*begin)(mg_writer *w, const mg_info *info);
	dw_err (*record)(mg_writer *w, const mg_rec *r);
	dw_err (*end)(mg_writer *w, const mg_info *info);
	void (*free)(mg_writer *w);
} mg_writer_ops;

struct mg_writer {
	const mg_writer_ops *ops;
	char err[512]; /* what went wrong, for the caller to print */
};

/*
 * The Paraver writer: PREFIX.prv, PREFIX.pcf and PREFIX.row (see
 * docs/merge.md).  Files are written under temporary names and renamed
 * by end.  Returns DW_OK with *out set, or DW_ENOMEM.  Files are created
 * by begin (errors there name the file).
 */
dw_err prv_writer_new(const char *prefix, mg_writer **out);

/* Frees any writer; NULL is ignored. */
static inline void
mg_writer_free(mg_writer *w)
{
	if (w)
		w->ops->free(w);
}

#endif
