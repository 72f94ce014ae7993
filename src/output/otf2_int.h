/*
 * The OTF2 writer's state, shared by its two files: otf2.c (the
 * events, streamed) and otf2_defs.c (the definitions, written at the
 * end).  Only with libotf2 (DW_HAVE_OTF2).
 */
#ifndef DW_OUTPUT_OTF2_INT_H
#define DW_OUTPUT_OTF2_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <otf2/otf2.h>

#include "output/nest.h"
#include "output/writers.h"

/* A location's events: one chunk of 4 MiB, written out when full.  Any
 * smaller write, libotf2 copies into a 4 MiB buffer of the file's own
 * first; a chunk this size goes straight to the file, so 4 MiB a thread
 * is all the memory OTF2 takes. */
#define O2_CHUNK  (4u << 20)
#define O2_CHUNKS 1
#define O2_NONE   UINT32_MAX

/* A receive waiting for its thread's records to reach its time. */
typedef struct o2_recv {
	uint64_t t, seq;
	uint32_t sender, tag;
	uint64_t size;
} o2_recv;

typedef struct o2_loc {
	OTF2_EvtWriter *ew;
	uint64_t nevents;
	o2_recv *heap;
	uint32_t n, cap;
} o2_loc;

/* A small map from 32-bit keys to ids. */
typedef struct o2_map {
	uint32_t *keys, *vals;
	uint32_t cap, n;
} o2_map;

/* A region: a state or a function. */
typedef struct o2_region {
	int kind; /* NEST_STATE or NEST_FUNC */
	uint64_t id;
} o2_region;

typedef struct otf2_writer {
	mg_writer base;
	char *dir, *tmp; /* PREFIX-otf2, PREFIX-otf2.tmp */
	OTF2_Archive *ar;
	bool ended;
	const mg_info *info; /* between begin and end */
	size_t nthreads;
	uint64_t offset; /* global offset: the start in real time */
	nest nest;
	o2_loc *loc;
	o2_region *regions;
	uint32_t nregions, capregions;
	uint32_t *func_region; /* by function id */
	size_t nfunc_region;
	o2_map state_region, metric;
	uint32_t *metric_type; /* metric id -> event type */
	uint32_t nmetrics, capmetrics;
	uint64_t seq;
	uint32_t nstrings, empty; /* strings defined; the id of "" */
} otf2_writer;

/* Reports e (from libotf2) during what; the error to return. */
dw_err o2_fail(otf2_writer *o, OTF2_ErrorCode e, const char *what);

/* Writes the global definitions of the trace, once its events are
 * closed (otf2_defs.c). */
dw_err o2_write_defs(otf2_writer *o, const mg_info *info);

#endif
