/*
 * Watching a running program: regions with live POP metrics over the
 * whole cluster (docs/runtime.md, "Watching a running program").
 * Included by dwork/dwork.h.
 */
#ifndef DWORK_LIVE_H
#define DWORK_LIVE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The POP metrics of a region over every process of the cluster, as
 * `dwork stats` computes them for a whole trace: per process, useful
 * time is the time its executors (the master: its user threads) spent
 * running user code inside the region; elapsed is the master's wall time
 * inside it. */
typedef struct dw_region_info {
	double elapsed_s;    /* wall time inside the region (all its runs) */
	double useful_s;     /* useful time of all processes inside it */
	double max_useful_s; /* of the busiest process */
	int processes;       /* processes measured */
	int runs;            /* begin..end pairs completed */
	int open;            /* 1 while the region is entered */
	double load_balance; /* mean / max useful */
	double communication_efficiency; /* max useful / elapsed */
	double parallel_efficiency;      /* mean useful / elapsed */
} dw_region_info;

/*
 * Enters the region called name (at most 127 bytes; created at its first
 * use) on the master: the figures of every process are sampled now (a
 * round trip to each worker, at most a second for those that do not
 * answer, which are then taken from their last heartbeat).  Regions may
 * nest or overlap; entering an entered region is DW_ESTATE.  Returns
 * DW_OK, DW_EINVAL (no name, or too long), DW_ESTATE (not the master, or
 * already entered), DW_ENOMEM.
 */
DW_API int dw_region_begin(const char *name);
/* Leaves it (DW_ESTATE when it is not entered, DW_ENOENT for an unknown
 * name); its figures now include this run. */
DW_API int dw_region_end(const char *name);
/*
 * The region's metrics so far, the run in progress included (sampled
 * from the workers' last heartbeat, so up to one period old).  At
 * dw_finalize every region is written as JSON in the format of DLB's
 * TALP to DWORK_TALP_FILE when it is set.  Returns DW_OK, DW_EINVAL,
 * DW_ENOENT (no such region), DW_ESTATE (not the master).
 */
DW_API int dw_region_metrics(const char *name, dw_region_info *out);

#ifdef __cplusplus
}
#endif
#endif
