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
#include "output/outpipe.h"
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
	/* Where packets are written: &pipe.cur, a block that the pipe's
	 * thread compresses into one packet of the file, or writes as it is
	 * (perfetto_z.c, output/outpipe.h) */
	ob *pk;
	opipe pipe;
	struct pf_z *z;  /* the compressor (the pipe's thread's) */
	uint64_t chunks; /* compressed packets written (at the end) */
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

/* ---- Compressed chunks (perfetto_z.c) ---- */

/* Whether this build compresses (libdeflate was found). */
bool pf_z_available(void);
/* Starts w's pipe (w->pk is its block): each block of packets becomes
 * one compressed packet in the file, unless the build cannot or
 * DWORK_PERFETTO_PLAIN is set (not to "0"); then the packets go into
 * the file as they are.  The compression and the writes run on the
 * pipe's thread.  After ob_open, before the first packet.  DW_OK or
 * DW_ENOMEM. */
dw_err pf_z_start(pf_writer *w);
/* Writes the last block and stops the pipe; before ob_close.  DW_OK or
 * the output's first error. */
dw_err pf_z_finish(pf_writer *w);
/* Stops the pipe and frees what pf_z_start made (also after a failed
 * start). */
void pf_z_free(pf_writer *w);

/* Room for n bytes (at most a packet's) at ob_end(w->pk): a full block
 * is handed to the pipe (a compressed packet's packets are the block's,
 * so where a block ends stays where it ended without the thread). */
static inline dw_err
pf_need(pf_writer *w, size_t n)
{
	return w->pk->cap - w->pk->len >= n ? DW_OK : op_submit(&w->pipe);
}

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
