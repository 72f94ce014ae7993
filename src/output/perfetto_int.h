/*
 * The Perfetto writer's state, shared by its two files: perfetto.c (the
 * writer: records, regions, each thread's receives) and perfetto_enc.c
 * (names interned by iid, and the packets encoded).
 */
#ifndef DW_OUTPUT_PERFETTO_INT_H
#define DW_OUTPUT_PERFETTO_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "output/nest.h"
#include "output/outbuf.h"
#include "output/writers.h"

enum { TE_BEGIN = 1, TE_END = 2, TE_INSTANT = 3 };

#define PF_NAME_MAX 1024                /* bytes of a name kept */
#define PF_PACKET   (PF_NAME_MAX + 256) /* room for any one packet */

typedef struct pf_name {
	char *s;
	uint32_t len;
} pf_name;

typedef struct pf_recv {
	uint64_t time, flow;
	uint32_t name; /* iid */
} pf_recv;

/* The iid of the name of a labelled event value ("Type: label"). */
typedef struct pf_pair {
	uint32_t type, iid; /* iid 0: a free slot */
	uint64_t value;
} pf_pair;

typedef struct pf_thread {
	uint64_t last; /* time of the sequence's last packet */
	uint8_t *sent; /* bit per name iid: already interned here */
	size_t nsent;  /* bytes of sent */
	pf_recv *recv; /* receives to write: a min-heap by time */
	uint32_t nrecv, caprecv;
} pf_thread;

typedef struct pf_writer {
	mg_writer base;
	char *path, *tmp;
	ob out;
	bool opened, ended;
	const mg_info *info;
	nest nest;
	pf_thread *th;
	size_t nthreads;
	pf_name *names; /* by iid - 1 */
	uint32_t nnames, capnames;
	uint32_t *state_iid;   /* by state number below PF_BYSTATE */
	uint32_t *type_iid;    /* by index in info->labels->types */
	uint32_t *func_iid[3]; /* user functions, runs, batches: by id */
	size_t nfunc_iid[3];
	uint32_t value_iid; /* the debug annotation "value" */
	pf_pair *pairs;     /* labelled event values: open addressing */
	uint32_t npairs, cappairs;
	uint32_t kind_iid[8]; /* communication kinds by tag; [7]: others */
	bool runtime;
	uint64_t flows;
	uint64_t packets;
} pf_writer;

#define PF_BYSTATE 256

/* What an event packet carries besides its time. */
typedef struct pf_ev {
	int type;       /* TE_* */
	uint32_t name;  /* iid, 0: none */
	bool has_value; /* a debug annotation "value" */
	uint64_t value;
	uint64_t flow, flow_end; /* 0: none */
} pf_ev;

/* The iid of a region's name (a state, or a function, run or batch by
 * nest's id); 0 when out of memory. */
uint32_t pf_slice_iid(pf_writer *w, int kind, uint64_t id);
/* The iid of an event's name; *labelled: its value has a label. */
uint32_t pf_event_iid(pf_writer *w, const mg_pair *pr, bool *labelled);
/* The iid of a communication kind's name by tag. */
uint32_t pf_kind_iid(pf_writer *w, uint32_t tag);
/* Writes one track event packet of thread at t. */
dw_err pf_packet(pf_writer *w, uint32_t thread, uint64_t t, const pf_ev *e);
/* A sequence's first two packets (thread i). */
dw_err pf_sequence_start(pf_writer *w, uint32_t i);
/* The track of task k. */
dw_err pf_process_track(pf_writer *w, uint32_t k);
/* The tables of threads and iids, and the names known at begin. */
dw_err pf_tables(pf_writer *w, const mg_info *info);

#endif
