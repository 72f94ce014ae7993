/*
 * Merge core internals, shared by the files of the merge (model, scan,
 * clock, cursor, timeline, comms, outq, names, progress, merge).  Not
 * used by writers: they see only merge/writer.h.
 */
#ifndef DW_MERGE_MG_INT_H
#define DW_MERGE_MG_INT_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "merge/merge.h"
#include "tracefile/reader.h"
#include "merge/writer.h"

#define MG_TASK_MAX          RD_TASK_MAX   /* the reader refuses ids above */
#define MG_THREAD_MAX        RD_THREAD_MAX /* the reader refuses ids above */
#define MG_STACK_MAX         (1u << 16)    /* deeper state pushes are counted */
#define MG_TYPE_FUNC         60000019u     /* user functions (as Extrae) */
#define MG_TYPE_FUNC_LINE    60000119u     /* their source lines (as Extrae) */
#define MG_STATE_IDLE        0u
#define MG_STATE_NOT_CREATED 2u
#define MG_NONE              UINT32_MAX

/* ---- Clocks (clock.c) -------------------------------------------------- */

/* A sync record: at local ns `local` the reference read local + offset. */
typedef struct mg_sync {
	int64_t local;
	int64_t offset;
	uint32_t rtt;
	uint32_t ref; /* reference task */
} mg_sync;

/* How a process's clock reaches the reference timeline. */
enum mg_clk_kind {
	MG_CLK_REF,      /* the reference host's clock, no sync records */
	MG_CLK_SYNC,     /* its own sync records */
	MG_CLK_HOST,     /* no sync records; another process of its host has */
	MG_CLK_REALTIME, /* nothing measured: aligned by CLOCK_REALTIME */
};

/* Offset of the reference clock at host ns x (a correction point). */
typedef struct mg_point {
	int64_t x;
	int64_t off;
	uint32_t rtt; /* round trip of the measurement, 0 when exact */
} mg_point;

/*
 * A slope num / den (den > 0) with its sign, and the same as a 64.64
 * fixed-point number (i + f / 2^64) for the conversions' fast path: a
 * multiply and a shift instead of a chain of floating-point steps.
 */
typedef struct mg_slope {
	uint64_t num, den;
	uint64_t i, f;
	bool neg;
} mg_slope;

/* round(d * (i + f / 2^64)), halves up; d * slope below 2^62. */
static inline uint64_t
mg_fix_mul(uint64_t d, uint64_t i, uint64_t f)
{
	return d * i + (uint64_t)(((unsigned __int128)d * f +
	                           ((unsigned __int128)1 << 63)) >>
	                          64);
}

/*
 * One process's clock: ticks to host ns by the reader's calibration,
 * then ref = x + off(x), off linear between the points and, outside
 * them, along the line from the first to the last point.
 */
typedef struct mg_clock {
	rd_calib calib;
	mg_point *pts; /* sorted by x, owned */
	size_t npts;
	mg_slope out; /* the first-to-last slope */
	int kind;     /* enum mg_clk_kind */
} mg_clock;

void mg_clock_init(mg_clock *k, uint32_t clock, uint64_t ticks_per_s);
void mg_clock_free(mg_clock *k);

/*
 * Sets the correction points from sync records (sorted here).  A point
 * that would make corrected time run backwards is dropped and reported
 * under name.  Returns DW_OK or DW_ENOMEM.
 */
dw_err mg_clock_from_syncs(mg_clock *k, mg_sync *s, size_t n, const char *name,
                           rd_errlist *errs);

/* Copies src's points shifted: off(x) = d + off_src(x + d). */
dw_err mg_clock_borrow(mg_clock *k, const mg_clock *src, int64_t d);

/* off(x), exact to the rounding; for setup and tests. */
int64_t mg_clock_off(const mg_clock *k, int64_t x);

/* The clock's error in ns at the corrected time x: between two sync
 * points the larger half round trip, outside them growing with the
 * distance (clock.c says how); 0 on the reference; -1 when unknown
 * (real-time aligned). */
int64_t mg_clock_err(const mg_clock *k, int64_t x);

/*
 * Conversion of one stream's ticks, with the current calibration span
 * and offset segment cached.  The cached ranges are chosen so that the
 * fast path cannot overflow (every value stays within 2^62); anything
 * else takes the slow path, which saturates.  Results never decrease.
 */
typedef struct mg_tconv {
	mg_clock *k;
	bool ident;    /* clock kind 2: ticks are host ns */
	bool has_off;  /* the clock has correction points */
	uint64_t c_lo; /* cached span: ticks in [c_lo, c_lo + c_len) */
	uint64_t c_len;
	int64_t c_ns;      /* host ns at c_lo */
	uint64_t c_i, c_f; /* its slope (ns a tick) in 64.64 */
	int64_t o_lo;      /* cached segment: host ns in [o_lo, o_lo + o_len) */
	uint64_t o_len;
	int64_t o_off;     /* offset at o_lo */
	uint64_t o_i, o_f; /* its slope's size in 64.64 ... */
	bool o_neg;        /* ... and sign */
	int64_t last;
} mg_tconv;

#define MG_SAFE (INT64_C(1) << 60) /* bound of the cached fast paths */

void mg_tconv_init(mg_tconv *c, mg_clock *k);
int64_t mg_tconv_host_slow(mg_tconv *c, uint64_t ticks);
int64_t mg_tconv_off_slow(mg_tconv *c, int64_t x);

static inline int64_t
mg_add_sat(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_expect(__builtin_add_overflow(a, b, &r), 0))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* Reference ns of ticks: host ns plus the offset, never decreasing. */
static inline int64_t
mg_time(mg_tconv *c, uint64_t ticks)
{
	int64_t x, y;
	uint64_t d;

	if (c->ident && ticks < (uint64_t)MG_SAFE)
		x = (int64_t)ticks;
	else if ((d = ticks - c->c_lo) < c->c_len)
		x = c->c_ns + (int64_t)mg_fix_mul(d, c->c_i, c->c_f);
	else
		x = mg_tconv_host_slow(c, ticks);
	if (!c->has_off) {
		y = x;
	} else if ((d = (uint64_t)x - (uint64_t)c->o_lo) < c->o_len) {
		int64_t o = (int64_t)mg_fix_mul(d, c->o_i, c->o_f);

		y = x + c->o_off + (c->o_neg ? -o : o);
	} else {
		y = mg_add_sat(x, mg_tconv_off_slow(c, x));
	}
	if (y < c->last)
		y = c->last;
	c->last = y;
	return y;
}

/* ---- The trace's processes and streams (model.c, scan.c) ---------------- */

typedef struct mg_fmap mg_fmap; /* addresses to function ids (names.c) */
typedef struct mg_dmap mg_dmap; /* a class's hashes to dense ids (dense.c) */

#define MG_DENSE_NCLS 1 /* classes of named values: functions */

typedef struct mg_proc {
	const rd_dir_proc *dp;
	rd_proc *labels; /* NULL when its process file is missing or bad */
	rd_header hdr;
	const char *name; /* for messages: a file of the process */
	uint32_t task;
	uint32_t node;
	uint32_t thread_base; /* its thread 0 within its task */
	uint32_t thread_span; /* highest thread id + 1 */
	bool skip;            /* left out of the merge */
	bool ended;
	uint64_t end_ticks; /* when ended */
	mg_clock clk;
	const struct mg_proc *clock_lead; /* first process of its clock */
	mg_sync *syncs;                   /* from the scan */
	size_t nsyncs, capsyncs;
	mg_fmap *fmap;
	mg_dmap *dmap[MG_DENSE_NCLS];
} mg_proc;

/* A state stack (nested states of one thread). */
typedef struct mg_stack {
	uint32_t *v;
	uint32_t n, cap;
	uint32_t over;     /* pushes beyond MG_STACK_MAX, popped first */
	uint64_t bad_pops; /* pops of an empty stack */
} mg_stack;

/* A reader of a stream with its time conversion. */
/* A receive that must not precede its send: from record index on, the
 * stream's corrected times are at least t (causal.c). */
typedef struct mg_floor {
	uint64_t index;
	int64_t t;
} mg_floor;

typedef struct mg_cursor {
	rd_thread *rd;
	mg_tconv tc;
	uint64_t next;          /* index of the record it reads next */
	const mg_floor *floors; /* the stream's, by index */
	size_t nfloors, fi;     /* ... and the next one to apply */
	uint64_t fat;           /* fi's index (UINT64_MAX: none; 0: not
	                           looked up yet) */
	mg_stack st;            /* the states entered by its records so far */
	uint32_t shown;         /* st's innermost state (stack_shown) */
} mg_cursor;

/* A decoded record and its corrected time. */
typedef struct mg_ent {
	rd_rec rec;
	int64_t t;
	uint32_t shown;   /* the state shown once this record is applied */
	uint32_t bad_pop; /* 1: a state exit without an entry */
	/* On the last record of the first group of a run of groups that
	 * leave one state shown: the time of the next group that leaves
	 * another, what lookahead_next would find, once the stream's
	 * decoding (cursor_fill: a decoding thread's or the merge's own)
	 * has read that far; MG_NEXT_UNKNOWN until then. */
	_Atomic int64_t next;
} mg_ent;

#define MG_NEXT_UNKNOWN INT64_MIN

/* The decoding's view of a stream's groups (records of one time) and
 * runs of groups that leave one state shown (mg_ent.next). */
typedef struct mg_run {
	bool group, run; /* a group, a run begun */
	int64_t gt;      /* the current group's time */
	uint32_t shown;  /* what the run's groups leave shown */
	uint64_t first;  /* the last record of the run's first group */
} mg_run;

enum mg_phase { MG_RUN, MG_FINISH, MG_DONE };

/*
 * A stream being merged.  One reader decodes its records into a ring;
 * the merge takes them from the ring, and the state lookahead reads
 * ahead in it (decoding more) to find where the state shown now ends.
 * Only a state that outlasts the whole ring needs a second reader.
 */
typedef struct mg_stream {
	mg_proc *proc;
	const char *path;
	uint32_t tid;     /* tracer thread id */
	uint32_t gthread; /* global output thread index */
	bool skip;
	uint64_t nrec; /* from the scan */
	uint64_t first_ticks, last_ticks;
	bool thread_end; /* its last record is a THREAD_END: it ended there */
	int64_t first, end; /* reference ns */
	mg_cursor fill;     /* decodes records into the ring */
	mg_ent *ring;
	uint64_t rmask;     /* ring size - 1 (a power of two) */
	uint64_t pos, tail; /* merge's next record; one past the last decoded */
	bool eof;           /* fill has no more */
	mg_run run;         /* fill's groups and runs (cursor_fill) */
	bool fill_one;      /* one record a fill (a decoding thread comes) */
	uint64_t bad_pops;  /* state exits without an entry, up to pos */
	uint64_t la_pos;    /* lookahead: next record it reads (>= pos) */
	mg_cursor la;       /* second reader, for states longer than the ring */
	mg_ent la_ent;
	bool la_eof;
	uint32_t shown;       /* state shown now */
	uint32_t fn;          /* depth of user functions entered */
	uint64_t fcache_addr; /* last function looked up */
	uint32_t fcache_id, fcache_lid;
	int phase;        /* enum mg_phase */
	int64_t key;      /* its first time, then the last time taken */
	mg_floor *floors; /* receives moved after their send (causal.c) */
	size_t nfloors;
	struct mg_dec *dec;       /* its decoding thread (decode.h), or NULL */
	struct mg_decslot *dslot; /* ... and what they share */
} mg_stream;

/* ---- Labels (names.c) --------------------------------------------------- */

typedef struct mg_strtab mg_strtab;

/* The names of one class of dense ids: id k names names[k - 1]. */
typedef struct mg_dclass {
	const char **names; /* sorted; the strings belong to labels or shape */
	uint32_t n;
} mg_dclass;

/* Names given ids 1, 2, ... in the order they were met. */
typedef struct mg_idnames {
	char **names; /* by id - 1 */
	size_t n, cap;
} mg_idnames;

enum { MG_IDS_FUNC, MG_IDS_LINE, MG_IDS_N }; /* 60000019, 60000119 */

typedef struct mg_names {
	mg_labels labels;
	mg_idnames tab[MG_IDS_N];
	mg_strtab *ids[MG_IDS_N]; /* name -> id */
	bool used_funcs;
	mg_dclass dense[MG_DENSE_NCLS];
} mg_names;

/* ---- Communications (comms.c) ------------------------------------------ */

typedef struct mg_msg mg_msg;

typedef struct mg_comms {
	mg_msg *pool; /* messages by index */
	uint32_t npool, cappool, free;
	uint32_t *slots; /* open addressing: pool index + 1, 0 empty */
	uint32_t nslots, used;
	uint32_t reported; /* detailed unmatched lines so far */
} mg_comms;

/* ---- Output queue (outq.c) --------------------------------------------- */

/*
 * The records behind a message still waiting, in order: their entries
 * (pipe.h's format) in a buffer of bytes, and beside it the marks, one
 * for each message placed among them (and for each record too large for
 * the writer's ring), with the byte where it stands and its entry's
 * number.  So the records between two marks go to the writer's ring by
 * one copy.  Bytes and entries are counted from the queue's start
 * (pos, idx); base is the position of buf[0].
 */
typedef struct oq_mark {
	uint64_t pos; /* the bytes before it */
	uint64_t idx; /* the entries before it */
	uint32_t msg; /* its message, or MG_NONE: the large record at pos */
} oq_mark;

typedef struct mg_outq {
	uint8_t *buf;
	uint64_t cap, base, rd, wr; /* rd, wr: positions (base + offset) */
	oq_mark *m;
	size_t mcap, mhead, nm;
	uint64_t pushed; /* entries queued since the start */
	size_t n;        /* entries (records and messages) in the queue */
	uint32_t soft, hard;
	uint32_t wait; /* the head's message (MG_NONE: the queue is empty) */
	bool kick;     /* the head's message completed: it is writable */
} mg_outq;

/* ---- Progress (progress.c) --------------------------------------------- */

typedef struct mg_progress {
	FILE *out;
	double start, last;
	uint64_t total;
	const char *what;
	bool shown;
} mg_progress;

void mg_progress_start(mg_progress *p, FILE *out, const char *what,
                       uint64_t total);
void mg_progress_update(mg_progress *p, uint64_t done);
void mg_progress_end(mg_progress *p);

/* ---- Message parts for the causal pass (causal.c) ------------------------ */

/*
 * Where a scanning thread puts the message parts it notes.  The merge's
 * own (mg_ctx.xs) reports when the limit is passed; a second scanning
 * thread's (scan.c) defers that report, keeping the number of problems
 * found before each part, so that xsink_join can place it where one
 * thread would have.
 */
typedef struct mg_xsink {
	struct mg_xpart *v;
	size_t n, cap;
	size_t tried;     /* parts noted (kept or not) */
	size_t limit;     /* parts kept at most */
	bool full;        /* the limit was passed */
	bool defer;       /* the report waits for xsink_join */
	uint32_t *ecount; /* defer: problems found before part i was noted */
	size_t ecap;
	rd_errlist *errs; /* where the report goes */
} mg_xsink;

void xsink_init(mg_xsink *k, rd_errlist *errs, bool defer);
void xsink_free(mg_xsink *k);

/* The part limit report of `from`, placed among its problems: from's
 * problems (in `held`, found on another thread) are added to `to`'s
 * list in their order with the report among them where one thread
 * would have made it, as if from's parts had come after to's.  Then
 * from goes on live (limit and report exact, into to->errs).  Returns
 * nothing; call xsink_append after from's thread is done. */
void xsink_flush(mg_xsink *to, mg_xsink *from, rd_errlist *held);

/* Appends from's kept parts to `to` (after xsink_flush).  DW_ENOMEM. */
dw_err xsink_append(mg_xsink *to, mg_xsink *from);

/* ---- The merge ------------------------------------------------------------
 */

typedef struct mg_ctx {
	const mg_opts *o;
	rd_errlist *errs;
	mg_report rep;
	rd_dir *dir;
	mg_proc *procs;
	size_t nprocs;
	mg_stream *streams;
	size_t nstreams;
	int64_t t0;
	uint64_t duration;
	/* shape */
	mg_node *nodes;
	size_t nnodes;
	mg_task *tasks;
	size_t ntasks;
	mg_thread *threads;
	size_t nthreads;
	uint32_t ncpus;
	char **strs; /* names owned by the shape */
	size_t nstrs, capstrs;
	mg_info info;
	mg_names names;
	/* merge */
	mg_writer *w;
	struct mg_pipe *pipe; /* the writer's thread (pipe.h), or NULL */
	dw_err werr;
	mg_outq q;
	mg_comms cm;
	mg_progress prog;
	uint64_t done;
	mg_pair *pairs; /* the event group being built */
	uint32_t npairs, cappairs;
	rd_rec *parts; /* the comm records of the group */
	uint32_t nparts, capparts;
	/* causal.c: message parts between clocks not shared, from the scan */
	mg_xsink xs;
	const mg_proc **task_procs; /* by task, for the scan */
	bool clocks_many;           /* more than one clock in the trace */
	size_t ntask_procs;
} mg_ctx;

/* model.c: processes and streams of the directory; then the shape. */
dw_err model_load(mg_ctx *c);
dw_err model_shape(mg_ctx *c);
void model_free(mg_ctx *c);
char *model_strdup(mg_ctx *c, const char *s); /* owned by the shape */

/* scan.c: the first pass. */
dw_err scan_all(mg_ctx *c);

/* clock_setup.c: every process's correction once the scan is done. */
dw_err clocks_setup(mg_ctx *c);

/* clock_setup.c: which processes share a clock (before the scan). */
void clocks_group(mg_ctx *c);

/*
 * causal.c: the scan notes each part of a message between processes
 * that do not share a clock (record number index of stream s); after
 * clocks_setup, causal_setup finds the receives that would precede
 * their send and gives their streams floors: from that record on, the
 * thread's times are at least the send + 1 ns, so the receive, its
 * events and the records after it move together, in order.  Counts the
 * moves in c->rep.  causal_free releases what is left.
 */
dw_err causal_begin(mg_ctx *c); /* before the scan: its task map */
dw_err causal_note(mg_ctx *c, mg_xsink *k, const mg_stream *s, const rd_rec *r,
                   uint64_t index);
dw_err causal_setup(mg_ctx *c);
void causal_free(mg_ctx *c);

/* True when a and b tick on one clock: the same host name and boot id
 * (the name alone when either file predates the boot id), neither with
 * the test skew hook's own clock. */
bool mg_same_clock(const mg_proc *a, const mg_proc *b);

/* names.c */
dw_err names_build(mg_ctx *c);
/* The function id (60000019) of addr in p, and its line id (60000119) in
 * *lid; 0 when out of memory. */
uint32_t names_func(mg_ctx *c, mg_proc *p, uint64_t addr, uint32_t *lid);
dw_err names_finish(mg_ctx *c);
void names_free(mg_ctx *c);
const char *names_func_name(const mg_info *info, uint64_t id); /* func_name */

/*
 * dense.c: dwork's event types whose values name something (71000xxx:
 * DW_EV_FUNCTION, DW_EV_CALL) carry 32-bit hashes of the names in the
 * process files; the merge gives every name of a class an id 1..N in
 * name order, the same in every process.  dense_class: the class of a
 * type, -1 for types left as they are.  The scan calls dense_seen for
 * every non-zero value it reads; names_build calls dense_build, which
 * also labels the ids; the merge then maps values with dense_id.
 */
int dense_class_slow(uint32_t type);
dw_err dense_seen(mg_proc *p, int cls, uint64_t value);
dw_err dense_build(mg_ctx *c);
uint64_t dense_id(mg_proc *p, int cls, uint64_t value);
void dense_free(mg_ctx *c);

/* The types dense_class may give a class: MG_DENSE_LO + [0, SPAN). */
#define MG_DENSE_LO   71000000u
#define MG_DENSE_SPAN 1000u

static inline int
dense_class(uint32_t type)
{
	return type - MG_DENSE_LO < MG_DENSE_SPAN ? dense_class_slow(type) : -1;
}

/* cursor.c: stream reading, state stacks and the state lookahead. */
dw_err stream_open_ring(mg_stream *s, size_t ring);
void stream_close(mg_stream *s);
bool stream_fill(mg_stream *s); /* decodes one more record */
void cursor_close(mg_cursor *u);
void dec_pos(mg_stream *s); /* decode.h */
void stack_free(mg_stack *s);
void stack_push_slow(mg_stack *s, uint32_t state);
void cursor_floors(mg_cursor *u); /* applies the floors due at u->next */
int64_t lookahead_next(mg_stream *s, int64_t t, uint32_t shown);

/* Applies a state record (a push or a pop); 1 for a pop of an empty
 * stack (counted in bad_pops), else 0. */
static inline uint32_t
stack_apply(mg_stack *s, const rd_rec *r)
{
	if (r->kind == FMT_R_STATE_PUSH) {
		if (s->n < s->cap && !s->over)
			s->v[s->n++] = r->u.state.state;
		else
			stack_push_slow(s, r->u.state.state);
	} else if (s->over) {
		s->over--;
	} else if (s->n) {
		s->n--;
	} else {
		s->bad_pops++;
		return 1;
	}
	return 0;
}

/* The innermost state; Idle when none is entered. */
static inline uint32_t
stack_shown(const mg_stack *s)
{
	return s->n ? s->v[s->n - 1] : MG_STATE_IDLE;
}

/* Decodes the cursor's next record into e; false at the end.  Inline:
 * the decoding thread calls it for every record. */
static inline bool
cursor_decode(mg_cursor *u, mg_ent *e)
{
	uint32_t bad = 0;

	if (!u->rd || !rd_thread_next(u->rd, &e->rec))
		return false;
	/* a moved receive: it and what follows it start at its floor */
	if (__builtin_expect(u->next >= u->fat, 0))
		cursor_floors(u);
	e->t = mg_time(&u->tc, e->rec.ticks);
	/* every reader of the stream applies the same records from the
	 * first, so each gives a record the same state shown */
	_Static_assert(FMT_R_STATE_POP == FMT_R_STATE_PUSH + 1, "one range");
	if (e->rec.kind - FMT_R_STATE_PUSH <= 1u) { /* a push or a pop */
		bad = stack_apply(&u->st, &e->rec);
		u->shown = stack_shown(&u->st);
	}
	e->shown = u->shown;
	e->bad_pop = bad;
	atomic_store_explicit(&e->next, MG_NEXT_UNKNOWN, memory_order_relaxed);
	u->next++;
	return true;
}

/*
 * Record j, at time t, starts a new group: the group before it (ending
 * at j - 1) is complete.  If that group leaves another state shown than
 * its run, it is the first group of a new run and its time is where the
 * run before ends: what lookahead_next finds for the run's first group,
 * the one where the merge asks (the state shown changes there).  That
 * is written to the first group's last record while its slot still
 * holds it (the ring has not wrapped since), else left unknown and the
 * merge looks ahead itself.  after: the state shown after record j - 1
 * (the cursor's before it decoded j, so the ring is not read again).
 */
static inline void
run_group(mg_ent *ring, uint64_t mask, mg_run *r, uint64_t j, int64_t t,
          uint32_t after)
{
	if (r->group) {
		if (!r->run || after != r->shown) {
			if (r->run && j - r->first <= mask)
				atomic_store_explicit(
				    &ring[r->first & mask].next, r->gt,
				    memory_order_relaxed);
			r->run = true;
			r->shown = after;
			r->first = j - 1;
		}
	}
	r->group = true;
	r->gt = t;
}

/* Decodes u's next records into ring[t .. end) (free room), following
 * the groups and runs in r; returns the new tail, and sets *eof when the
 * cursor has no more. */
static inline uint64_t
cursor_fill(mg_cursor *u, mg_ent *ring, uint64_t mask, mg_run *r, uint64_t t,
            uint64_t end, bool *eof)
{
	for (; t < end; t++) {
		mg_ent *e = &ring[t & mask];
		uint32_t before = u->shown; /* ring[t - 1]'s */

		if (!cursor_decode(u, e)) {
			*eof = true;
			break;
		}
		if (e->t != r->gt || !r->group)
			run_group(ring, mask, r, t, e->t, before);
	}
	return t;
}

/* The merge's next record of the stream, or NULL at its end. */
static inline const mg_ent *
stream_peek(mg_stream *s)
{
	if (s->pos == s->tail && !stream_fill(s))
		return NULL;
	return &s->ring[s->pos & s->rmask];
}

/* Takes the record stream_peek gave. */
static inline void
stream_take(mg_stream *s)
{
	if (s->la_pos == s->pos) /* the lookahead keeps up */
		s->la_pos++;
	s->pos++;
	/* with a decoding thread: half the ring is free again */
	if (s->dec && !(s->pos & (s->rmask >> 1)))
		dec_pos(s);
}

/* timeline.c: the k-way merge. */
dw_err timeline_run(mg_ctx *c);

/* comms.c */
void comms_init(mg_comms *cm);
void comms_free(mg_comms *cm);
dw_err comms_part(mg_ctx *c, mg_stream *s, const rd_rec *r, int64_t t);
int comms_head(mg_ctx *c, uint32_t m, int pressed, bool final);
void comms_rec(mg_ctx *c, uint32_t m, mg_rec *r);
void comms_release(mg_ctx *c, uint32_t m);
void comms_finish(mg_ctx *c);

/* outq.c */
void oq_init(mg_outq *q, uint32_t window);
void oq_free(mg_outq *q);
dw_err oq_queue(mg_ctx *c, const mg_rec *r);
dw_err oq_place(mg_ctx *c, uint32_t msg);
dw_err oq_flush(mg_ctx *c, bool final);
dw_err mg_write(mg_ctx *c, const mg_rec *r); /* pipe.c: counts, puts */
dw_err mg_put(mg_ctx *c, const mg_rec *r);   /* pipe.c: to the writer */

/* Counts a record written, by kind (mg_report). */
static inline void
mg_count(mg_ctx *c, uint32_t kind)
{
	if (kind == MG_STATE)
		c->rep.states++;
	else if (kind == MG_EVENT)
		c->rep.events++;
	else
		c->rep.comms++;
}

/* Writes r, or queues it behind a communication still waiting. */
static inline dw_err
oq_emit(mg_ctx *c, const mg_rec *r)
{
	return c->q.n ? oq_queue(c, r) : mg_write(c, r);
}

#endif
