/*
 * The replay's own data, shared by its files (replay.c: the replay and
 * the critical path; waits.c: the causes of waits).  Times are the
 * original ones (ns) unless a name says replayed.
 */
#ifndef DW_MERGE_REPLAY_INT_H
#define DW_MERGE_REPLAY_INT_H

#include "merge/replay.h"

typedef struct rp_burst {
	uint64_t start, end;
	uint32_t state;
} rp_burst;

/* From original time at on, replayed = original - shift. */
typedef struct rp_shift {
	uint64_t at;
	int64_t shift;
	uint64_t ready; /* original time the receiver was ready */
	uint32_t msg;   /* RP_NO_MSG: a wake, or a burst made faster */
	int by_send;    /* the send came last: the path goes to the sender */
	uint32_t from;  /* a wake's waker: its thread, original end */
	uint64_t from_at;
} rp_shift;

/* A wait that no receive ends, and the busy burst of another thread
 * that ended last inside it, its likeliest waker (wake.c). */
typedef struct rp_wake {
	uint32_t thread, from;
	uint64_t at;      /* original end of the wait */
	uint64_t ready;   /* original start of it (of its group) */
	uint64_t from_at; /* original end of the waker */
} rp_wake;

#define RP_NO_MSG UINT32_MAX

typedef struct rp_run_ {
	uint64_t start, end, func;
} rp_frun;

typedef struct rp_thread {
	rp_burst *b;
	size_t nb, capb;
	rp_shift *sh;
	size_t nsh, capsh;
	rp_frun *f;
	size_t nf, capf;
	uint32_t task1;     /* its process + 1; 0: unknown (its own) */
	uint64_t last_recv; /* original time of its last receive */
	int64_t recv_end;   /* replayed time of its last receive */
} rp_thread;

typedef struct rp_m {
	uint32_t from, to;
	uint64_t send, recv;
	int64_t send_new;
	uint32_t tag;
} rp_m;

/* Time a faster function saves on thread at the end of one of its runs. */
typedef struct rp_speed {
	uint32_t thread;
	uint64_t at, saved;
} rp_speed;

enum rp_kind { RP_SPEED, RP_SEND, RP_RECV, RP_WAKE };

typedef struct rp_point {
	uint64_t time;
	uint32_t kind; /* enum rp_kind: at one time in that order */
	uint32_t msg;  /* its message, or its rp_speed */
} rp_point;

struct rp_replay {
	rp_thread *t;
	size_t nthreads;
	rp_m *m;
	size_t nm, capm;
	int64_t end;         /* the replay's end */
	uint32_t end_thread; /* the thread that ends last */
	uint64_t end_at;     /* its original time there */
	rp_fn *fns;
	size_t nfns;
	rp_seg *segs; /* the critical path, from its end back */
	size_t nsegs, capsegs;
	rp_wake *wake; /* found by rp_wakes, in rp_run */
	size_t nwake, capwake;
	rp_speed *speed; /* while rp_faster runs */
	size_t nspeed, capspeed;
	int faster; /* the last replay was rp_faster's */
};

/* Finds r->wake from the sorted bursts and the messages.  0 or -1
 * (out of memory). */
int rp_wakes(rp_replay *r);

/* The first wait of the group wait i of t belongs to (replay.c). */
const rp_burst *rp_wait_group(const rp_thread *t, size_t i);

/* The shift of t at original time x (replayed = x - shift; replay.c). */
int64_t rp_shift_at(const rp_thread *t, uint64_t x);
/* How many bursts of t start before x; how many end at or before x
 * (a thread's bursts are in order and do not overlap). */
size_t rp_bursts_before(const rp_thread *t, uint64_t x);
size_t rp_bursts_ended(const rp_thread *t, uint64_t x);

/* Room for one more element of size in *arr (capacity *cap). */
int rp_grow(void **arr, size_t n, size_t *cap, size_t size);

#endif
