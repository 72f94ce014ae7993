/*
 * The Chrome trace event writer's state, shared by its two files:
 * json.c (the writer: regions, records, begin and end) and json_put.c
 * (the events formatted: names escaped, slices, instants, flows,
 * metadata).
 */
#ifndef DW_OUTPUT_JSON_INT_H
#define DW_OUTPUT_JSON_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "output/nest.h"
#include "output/outbuf.h"
#include "output/outpipe.h"
#include "output/stats.h"
#include "output/writers.h"

/* Bytes of each of a thread's line beginnings (JS_PRE_*), copied
 * whole: up to ,\n{"ph":"i","s":"t","pid":P,"tid":T,"ts": */
#define JS_PRE      64
#define JS_NAME_MAX 1024 /* bytes of a name kept (escaped: 6x at most) */
#define JS_LINE     512  /* room for a line besides its names */

/* A name as the bytes of a line around it: an escaped name with what
 * comes before and after it (js_name_frag), in a buffer padded to a
 * multiple of 32 bytes so that it is copied in whole 32-byte pieces
 * (js_put_name). */
typedef struct js_name {
	char *s;
	uint32_t len;
} js_name;

/* The line beginnings of each thread (pre, at (3 * thread + k) *
 * JS_PRE): "pid":P,"tid":T,"ts": alone, after a complete event's
 * ,\n{"ph":"X", and after an instant's. */
enum { JS_PRE_PLAIN, JS_PRE_X, JS_PRE_I };

/* Last types looked up (lb_type's binary search, once an instant). */
#define JS_TYPE_CACHE 64

enum {
	JS_TYPE_EMPTY = -1, /* a free slot */
	JS_TYPE_NONE = -2,  /* the type has no label */
	JS_TYPE_LATE = -3,  /* a label added after begin: no name kept */
};

typedef struct js_type_slot {
	uint32_t type;
	int32_t index; /* in info->labels->types, or JS_TYPE_* */
} js_type_slot;

typedef struct js_slice {
	uint64_t id, begin, end;
	int kind;
} js_slice;

/* Per thread: slices held (see above) and, for each open region, how
 * many were held when it opened. */
typedef struct js_thread {
	js_slice *held;
	uint32_t nheld, capheld;
	uint32_t *marks;
	uint32_t nmarks, capmarks;
} js_thread;

#define JS_BYSTATE    256
#define JS_FLOW_KINDS 7 /* lb_comm_kind's six and "message" */

typedef struct json_writer {
	mg_writer base;
	char *path, *tmp;
	ob out;     /* the file: the pipe's thread writes it */
	opipe pipe; /* where the lines are made (output/outpipe.h) */
	bool opened, ended;
	const mg_info *info; /* between begin and end */
	nest nest;
	js_thread *th;
	size_t nthreads;
	char *pre; /* the threads' line beginnings (JS_PRE_*, above) */
	uint8_t *pre_len;
	/* A state's: ,"name":"N","cat":"state"} */
	js_name *states; /* by index in info->labels->states */
	size_t nstates;
	/* states[] by state number below JS_BYSTATE (NULL: no label): a
	 * slice's name without a search (a few percent of the writer) */
	const js_name *by_state[JS_BYSTATE];
	/* A type's: ,"name":"N","cat":"event","args":{"type":T,"value": */
	js_name *types; /* by index in info->labels->types (at begin) */
	size_t ntypes;
	js_type_slot tcache[JS_TYPE_CACHE]; /* by type % JS_TYPE_CACHE */
	/* the labels of each type's values, escaped when first used: by
	 * type index, then value index (NULL: none used yet); a value's
	 * ,"label":"L"}} */
	js_name **vals;
	size_t *nvals; /* vals[k]'s entries */
	/* a region's: ,"name":"N","cat":"function"} (or "run", "batch") */
	js_name *funcs; /* by function id, filled when first used */
	size_t nfuncs;
	js_name *runs[2]; /* DW_EV_FUNCTION, DW_EV_BATCH values: the same */
	size_t nruns[2];
	bool runtime; /* the dwork runtime's trace: flows named by kind */
	/* the ends of a flow's lines by kind (tag; the last: any other),
	 * ,"name":"K","cat":"comm","args":{"size": and
	 * ,"name":"K","cat":"comm"} */
	js_name flow_s[JS_FLOW_KINDS], flow_f[JS_FLOW_KINDS];
	uint64_t flows;
	bool any; /* an event was written */
	/* the last time written, in microseconds: the next one in the
	 * same 10 ms is a copy and two digit pairs (outbuf.h) */
	ob_near ts;
	char frac[1000][4]; /* .ddd: the three decimals of r ns */
	st_stats *st;       /* the figures, written into otherData at the end */
} json_writer;

#define PUT(p, lit) ((p) = ob_mem((p), lit, sizeof lit - 1))

/* s escaped for a JSON string at p (at most 6 * JS_NAME_MAX bytes);
 * returns the end. */
char *js_put_esc(char *p, const char *s);
/* n gets head, s escaped and tail, malloc'd (padded: js_name). */
dw_err js_name_frag(js_name *n, const char *head, const char *s,
                    const char *tail);
/* Room for n more bytes in the output (inline: once a line). */
static inline dw_err
js_need(json_writer *j, size_t n)
{
	return op_need(&j->pipe, n);
}
/* n bytes of s written as they are. */
dw_err js_put_raw(json_writer *j, const char *s, size_t n);
/* A complete event ("X") for slice s of thread. */
dw_err js_slice_put(json_writer *j, uint32_t thread, const js_slice *s);
/* An instant event ("i") for one pair of an event record. */
dw_err js_instant(json_writer *j, uint32_t thread, uint64_t t,
                  const mg_pair *pr);
/* A communication's flow events ("s" and "f"). */
dw_err js_flow(json_writer *j, const mg_rec *r);
/* A metadata event ("M"): a name (or num when name is NULL) for a
 * process (tid < 0) or thread. */
dw_err js_meta(json_writer *j, const char *kind, uint32_t pid, int64_t tid,
               const char *key, const char *name, uint64_t num);

#endif
