/*
 * States and user functions as properly nested regions, for the formats
 * whose regions must nest (OTF2 enter/leave, Chrome complete events).
 *
 * A thread's states tile its time and its functions nest, but the two do
 * not nest in each other: a state can begin inside a function and end
 * after it.  Here functions are the outer levels and the state shown is
 * the innermost one, split where a function is entered or left:
 *
 *   functions  [ f                     ]
 *   states  [R][R ][Waiting][R         ][Idle]
 *
 * so a function's calls, and its inclusive time, are exact, and the time
 * of each state is the sum of its pieces.  "Not created" (2) is no
 * region.  Empty pieces are never reported.
 *
 * Functions come as the merge gives them, values of type 60000019 as
 * Extrae writes them: a nonzero id is an entry, 0 leaves the top one
 * (the caller's id, the one below the top, is read as a leave too, as
 * traces merged before 0 was written at every exit have it).  (Recursion to the
 * same function is ambiguous in that encoding: f inside f, then the
 * caller's f again, reads as a leave.)
 *
 * The callbacks come in time order per thread as long as the writer calls
 * nest_touch before anything else it writes on that thread: a piece is
 * opened lazily, when something later than its start happens on its
 * thread, so that it is never opened and closed at one time.
 */
#ifndef DW_OUTPUT_NEST_H
#define DW_OUTPUT_NEST_H

#include <stdbool.h>
#include <stdint.h>

#include <dwork/error.h>

enum nest_kind { NEST_STATE = 1, NEST_FUNC = 2 };

/* close's flags: an enclosing region, still open, began at the same
 * time (a writer that writes regions when they close may have to write
 * that one first). */
#define NEST_SAME_BEGIN 1u

typedef struct nest_ops {
	dw_err (*open)(void *ctx, uint32_t thread, int kind, uint64_t id,
	               uint64_t t);
	dw_err (*close)(void *ctx, uint32_t thread, int kind, uint64_t id,
	                uint64_t begin, uint64_t end, unsigned flags);
} nest_ops;

typedef struct nest_frame {
	uint64_t id, begin;
} nest_frame;

typedef struct nest_thread {
	uint32_t state; /* the state shown; NEST_NONE: none */
	bool opened;    /* its current piece was reported open */
	uint64_t since; /* the current piece's start */
	uint64_t until; /* the state's end */
	uint64_t last;  /* the latest time seen on this thread */
	uint64_t end;   /* the thread's end so far */
	nest_frame *stack;
	uint32_t depth, cap;
	uint32_t over; /* entries beyond NEST_DEPTH_MAX, not reported */
} nest_thread;

#define NEST_NONE      UINT32_MAX
#define NEST_DEPTH_MAX (1u << 16)

typedef struct nest {
	nest_thread *t;
	uint32_t n;
	const nest_ops *ops;
	void *ctx;
} nest;

/* Every thread starts with no state and no function.  DW_OK or
 * DW_ENOMEM. */
dw_err nest_init(nest *n, uint32_t nthreads, const nest_ops *ops, void *ctx);
void nest_free(nest *n);

/* A state record [t, end) of thread. */
dw_err nest_state(nest *n, uint32_t thread, uint64_t t, uint64_t end,
                  uint32_t state);

/* A value of the user function type on thread at t. */
dw_err nest_func(nest *n, uint32_t thread, uint64_t t, uint64_t value);

/*
 * A run of kind (NEST_RUN or NEST_BATCH: a bit set in the region's id)
 * on thread at t: a value of a type that names what runs while it runs
 * and is 0 when it ends (dwork's DW_EV_FUNCTION, DW_EV_BATCH).  A value
 * enters a region of id value | kind (or, when it is the id below the
 * top, returns to it); 0 leaves the innermost region of that kind and
 * whatever was entered inside it.
 */
#define NEST_RUN   (UINT64_C(1) << 63)
#define NEST_BATCH (UINT64_C(1) << 62)
#define NEST_KINDS (NEST_RUN | NEST_BATCH)
dw_err nest_run(nest *n, uint32_t thread, uint64_t t, uint64_t kind,
                uint64_t value);

/* Something else is written on thread at t: what must come before it
 * (the current piece's open, or its close when the state ended) is
 * reported now. */
dw_err nest_touch(nest *n, uint32_t thread, uint64_t t);

/* Closes every thread's regions: the piece at its state's end, the
 * functions still entered at the thread's end (its last state that is
 * not "Not created", or the latest time seen). */
dw_err nest_finish(nest *n);

/* The enclosing open function of thread, for writers: depth 0 is none. */
static inline uint32_t
nest_depth(const nest *n, uint32_t thread)
{
	return n->t[thread].depth;
}

#endif
