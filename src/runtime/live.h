/*
 * Live watching of a running cluster (docs/runtime.md, "Watching a
 * running program"): always-on accounting of every process (account.c),
 * its figures carried to the master on the heartbeat (STATS frames,
 * docs/wire-protocol.md), collected and made a snapshot (livesnap.c),
 * the master's control socket that `dwork top` attaches to (control.c),
 * and regions (region.c).
 */
#ifndef DW_RUNTIME_LIVE_H
#define DW_RUNTIME_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include <dwork/events.h>

struct conn;
struct wire_hdr;

/* What a thread's time is spent on, from the Paraver state it is in:
 * Running is useful, Idle is idle, the runtime's blocking states are
 * waiting, everything else (Send Receive, Overhead, startup) runtime. */
enum acct_class {
	ACCT_USEFUL = 0,
	ACCT_WAITING = 1,
	ACCT_RUNTIME = 2,
	ACCT_IDLE = 3,
	ACCT_NCLASS = 4,
};

/* Which threads count in the efficiencies, as `dwork stats` counts them
 * (merge/stats.h, st_thread_role): executors and the master's user
 * threads; I/O threads and a worker's main thread do not. */
enum acct_role { ACCT_NOT_COUNTED = 0, ACCT_USER = 1, ACCT_EXECUTOR = 2 };

#define ACCT_THREADS   256        /* threads accounted per process */
#define ACCT_FUNCS     512        /* functions counted per process */
#define ACCT_STATE_OFF UINT32_MAX /* a thread outside any state */

/* On unless DWORK_ACCOUNT is 0/off (read once, at the first use). */
extern int acct_on;
void acct_init(void);

/* Thread-locals of the hot path: initial-exec, so that reading one is a
 * load, not a call to __tls_get_addr (libdwork is linked, not dlopen'd;
 * the few bytes come from the static TLS space). */
#define ACCT_TLS __thread __attribute__((tls_model("initial-exec")))

/* The class of a Paraver state (ACCT_STATE_OFF: ACCT_NCLASS); inline,
 * so that a constant state's class is a constant. */
static inline uint32_t
acct_class_of(uint32_t state)
{
	switch (state) {
	case ACCT_STATE_OFF:
		return ACCT_NCLASS;
	case DWT_STATE_RUNNING:
		return ACCT_USEFUL;
	case DWT_STATE_IDLE:
		return ACCT_IDLE;
	case DWT_STATE_WAITING_MESSAGE:
	case DWT_STATE_BLOCKING_SEND:
	case DWT_STATE_SYNCHRONIZATION:
	case DWT_STATE_SCHEDULING:
	case DWT_STATE_WAIT_ALL:
	case DWT_STATE_BLOCKED:
	case DWT_STATE_TEST_PROBE:
	case DWT_STATE_STARTUP_LATENCY:
		return ACCT_WAITING;
	default:
		return ACCT_RUNTIME;
	}
}

/* A function's counters in the process's table (account.c); a thread
 * adds its own to them when it moves on to another function. */
struct acct_fnc {
	uint32_t id; /* set once, 0: a free entry */
	uint64_t served, issued;
};

/*
 * A thread's slot: only its thread writes it, so nothing in it is an
 * atomic read-modify-write (relaxed stores, read by relaxed loads; the
 * class times under a sequence counter a reader retries on).  One cache
 * line or two of its own, so that two threads never share one.
 */
struct acct_slot {
	uint32_t seq;  /* odd while its thread writes the class times */
	uint32_t cls;  /* ACCT_NCLASS: outside any state */
	uint32_t fn;   /* the function running, 0 none */
	uint32_t role; /* enum acct_role */
	uint32_t free; /* its thread ended: another may take it */
	uint32_t fseq; /* odd while it moves its calls into the table */
	uint32_t base; /* cls ACCT_CLS_MIXED: the class between its items */
	uint64_t since;
	uint64_t ns[ACCT_NCLASS + 1]; /* [ACCT_NCLASS]: outside, not sent */
	uint64_t bytes[2];            /* frame payload: received, sent */
	/* calls served of function sid and issued to iid not yet in the
	 * process's table of functions (moved when the function changes) */
	uint32_t sid, iid;
	uint64_t served, issued;
	struct acct_fnc *sf, *isf; /* their entries in that table */
} __attribute__((aligned(64)));

/* The calling thread's slot (NULL before its first state, and when the
 * accounting is off) and the class it is in there: ACCT_CLS_UNKNOWN
 * while it has no slot or the TSC is not its clock, so that the inline
 * switch below is taken only when it has both. */
#define ACCT_CLS_UNKNOWN 0xffu
/* In a batch whose items run untimed (below): since the last clock read
 * the thread ran untimed items between stretches of its base class. */
#define ACCT_CLS_MIXED 0xfeu
extern ACCT_TLS struct acct_slot *acct_me;
extern ACCT_TLS uint32_t acct_cls_now;
void acct_switch_slow(uint32_t cls);

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
/* The burst that ends now goes to the class the thread was in, the next
 * one starts: a TSC read and six stores, inline where the state
 * changes. */
static inline __attribute__((always_inline)) void
acct_switch_fast(uint32_t old, uint32_t cls)
{
	struct acct_slot *s = acct_me;
	uint64_t now = __rdtsc();
	uint32_t q = s->seq + 1;
	__atomic_store_n(&s->seq, q, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&s->ns[old], s->ns[old] + (now - s->since),
	                 __ATOMIC_RELAXED);
	__atomic_store_n(&s->cls, cls, __ATOMIC_RELAXED);
	__atomic_store_n(&s->since, now, __ATOMIC_RELAXED);
	__atomic_store_n(&s->seq, q + 1, __ATOMIC_RELEASE);
	acct_cls_now = cls;
}
#else
static inline void
acct_switch_fast(uint32_t old, uint32_t cls)
{
	(void)old;
	acct_switch_slow(cls);
}
#endif

/* The thread is now in class cls (from a state push or pop). */
static inline __attribute__((always_inline)) void
acct_switch(uint32_t cls)
{
	uint32_t old = acct_cls_now;
	if (__builtin_expect(cls == old, 1))
		return;
	if (__builtin_expect(old <= ACCT_NCLASS, 1))
		acct_switch_fast(old, cls);
	else /* no slot yet, the fallback clock, or a mixed burst to split */
		acct_switch_slow(cls);
}

/*
 * Batches (pmap, dw_for: one function over many items, docs/runtime.md
 * "What an item of a batch costs").  Timing an item takes two clock
 * reads; where items are short that is most of what the accounting
 * costs, so a batch of short items times only some of them, picked at
 * random, about one per DWORK_ACCOUNT_SAMPLE_US of item time (16 us;
 * 0: every item).  Between two reads the untimed items and the gaps
 * between them form one mixed burst: the gaps (the runtime's own work
 * between items, the same each time) are estimated from the timed ones
 * and the rest of the burst is useful.  Items are still counted one by
 * one (calls served, the function shown).
 *
 * acct_batch: the mirror depth + 1 at which the items of the thread's
 * batch run (0: not in one); acct_skip: the items to run untimed before
 * the next timed one (only while the thread is in a mixed burst).
 */
extern ACCT_TLS uint32_t acct_batch, acct_skip;
/* A timed item of function id (0: none) has started (after its switch
 * to Running) / ends, the thread returning to class below: its switch,
 * the next items' choice, and (fn) the function shown.  An untimed item
 * changes nothing but acct_skip and the mirror: the burst's items are
 * added to the calls served when it ends (at most one burst, ~16 us of
 * items, late), and the slot shows the function throughout. */
void acct_item_begin(uint32_t id);
void acct_item_end(uint32_t below, int fn);
/* Adds the untimed items of the mixed burst so far to the calls served
 * (s is the thread's slot; before its function changes). */
void acct_batch_served(struct acct_slot *s);
/* The batch carrier starts (at mirror depth depth, accounting alone;
 * its items run function fn, nl bytes of its name) / ends: the mixed
 * burst it is in is split; returns / takes the outer batch's
 * acct_batch.  A batch of the function the thread's slot counts, whose
 * items and gaps the thread has already estimated, starts inside a
 * mixed burst: its first items run untimed (acctbatch.c). */
uint32_t acct_batch_begin(int depth, const char *fn, size_t nl);
void acct_batch_end(uint32_t outer);
/* The useful part of a mixed burst of span ticks that ends (acctbatch.c,
 * for account.c's switch); ns as ticks of the TSC (0: rate not known). */
uint64_t acct_mixed_useful(uint64_t span);
uint64_t acct_ns_ticks(uint64_t ns);
/* DWORK_ACCOUNT_SAMPLE_US's text (NULL or empty: the default, 16 us) as
 * ns, or -1 when it is not whole microseconds from 0 to the maximum. */
#define ACCT_SAMPLE_US_MAX 10000000u
int64_t acct_sample_parse(const char *us);

/*
 * The hot path (rtrace.h calls these at the state changes and events
 * the runtime already records): no lock, no allocation and no atomic
 * read-modify-write after a thread's first call.  A change between two
 * states of one class (waiting to blocking send and back) reads no
 * clock and writes nothing.
 */
static inline void
acct_enter(uint32_t state) /* the thread is now in state */
{
	acct_switch(acct_class_of(state));
}
void acct_function_slow(uint32_t id);
void acct_issued_slow(uint32_t id);
static inline void
acct_function(uint32_t id) /* DW_EV_FUNCTION: id runs, 0 ended */
{
	struct acct_slot *s = acct_me;
	if (__builtin_expect(s && (!id || id == s->sid), 1)) {
		__atomic_store_n(&s->fn, id, __ATOMIC_RELAXED);
		if (id)
			__atomic_store_n(&s->served, s->served + 1,
			                 __ATOMIC_RELAXED);
		return;
	}
	acct_function_slow(id);
}
static inline void
acct_issued(uint32_t id) /* DW_EV_CALL: a call to id issued */
{
	struct acct_slot *s = acct_me;
	if (__builtin_expect(s && id == s->iid, 1))
		__atomic_store_n(&s->issued, s->issued + 1, __ATOMIC_RELAXED);
	else if (id)
		acct_issued_slow(id);
}
/* A frame's payload bytes, sent (1) or received (0), counted where conn.c
 * hands it over: inline, in the thread's own slot (a thread without one,
 * in the process's counters). */
void acct_frame_slow(int sent, size_t bytes);
static inline void
acct_frame(int sent, size_t bytes)
{
	struct acct_slot *s = acct_me;
	if (__builtin_expect(s != NULL, 1))
		__atomic_store_n(&s->bytes[sent != 0],
		                 s->bytes[sent != 0] + bytes, __ATOMIC_RELAXED);
	else if (__builtin_expect(acct_on, 0))
		acct_frame_slow(sent, bytes);
}
/* The calling thread's name (rtr_thread_start, dw_init's "master"). */
void acct_thread(const char *name);
/* The calling thread is a master user thread. */
void acct_user_thread(void);

/* Nanoseconds of CLOCK_MONOTONIC. */
uint64_t acct_now(void);

/* This process's figures as a STATS payload (docs/wire-protocol.md);
 * queue is the calls waiting for an executor (worker) or in flight
 * (master); self_cls, when < ACCT_NCLASS, is the calling
 * thread's state now (a thread answering a PING shows the state it was
 * in before it read it).  Returns the length written into p (at most
 * ACCT_STATS_MAX). */
#define ACCT_STATS_MAX 60000u
size_t acct_encode(unsigned char *p, uint32_t queue, uint32_t self_cls);
/* ---- a decoded STATS payload ---- */
struct acct_fn {
	uint32_t id;
	uint64_t served, issued;
	char name[256];
};
struct acct_thr {
	uint8_t role, cls; /* cls ACCT_NCLASS: outside any state */
	uint32_t fn;       /* the function running, 0 none */
	uint64_t ns[ACCT_NCLASS];
};
struct acct_snap {
	uint64_t at;         /* ns since the process's accounting began */
	uint64_t rss;        /* bytes */
	uint64_t sent, recv; /* payload bytes of frames */
	uint32_t queue;
	uint32_t nthr, nfn;
	struct acct_thr thr[ACCT_THREADS];
	struct acct_fn *fn; /* nfn, malloc'd */
	size_t used;        /* bytes of the payload decoded */
	/* the payload's tail (livehost.c): its host, and its counted
	 * threads' user-mode cycles and instructions when hwc is 0 (else
	 * the errno that stopped them, -1: not told) */
	char host[64];
	int hwc;
	uint64_t cycles, instr;
};
/* Decodes p; 0, or -1 with the reason in why. */
int acct_decode(const unsigned char *p, size_t len, struct acct_snap *s,
                char *why, size_t wl);
void acct_snap_free(struct acct_snap *s);

/* ---- collection (livesnap.c) ---- */
/* Every frame received passes here first (conn.c): STATS frames are
 * taken (1: p is freed), a worker answers a PING with its STATS first
 * (0: the frame goes on to call_on_frame). */
int live_on_frame(struct conn *c, const struct wire_hdr *h, unsigned char *p);
/* The master forgets worker id, keeping why it left. */
void live_worker_gone(int id, const char *why);
/* Master: opens the control socket (after the I/O thread started), and
 * closes it, removing its files, at dw_finalize (control.c). */
void live_start(void);
void live_stop(void);
/* The snapshot the control socket answers with, in format 0 (JSON) or 1
 * (text); malloc'd, *len bytes; NULL when out of memory. */
char *live_snapshot(int fmt, size_t *len);
/* The directory of the control sockets (DWORK_RUNTIME_DIR, else
 * $XDG_RUNTIME_DIR/dwork, else /tmp/dwork-UID), created 0700 and checked
 * to be this user's alone; 0, or -1 with the reason. */
int live_dir(char *dir, size_t len, char *why, size_t wl);

/* Master: asks every worker for its figures now and waits up to
 * timeout_ms for their answers (those that leave are not waited for). */
void live_refresh(int timeout_ms);
/* Master: each process's figures as last heard (the master's own now):
 * useful ns of its counted threads, calls issued, its host; returns how
 * many of max were written. */
struct live_fig {
	int id;
	uint64_t useful, issued;
	char host[64];
	int hwc; /* as acct_snap's */
	uint64_t cycles, instr;
};
size_t live_figs_all(struct live_fig *out, size_t max);

/* ---- the host tail of a STATS payload (livehost.c) ---- */
/* After acct_encode's bytes a process appends 'H', u8 n, n bytes of its
 * host name, then 'C', u8 0 or the errno that stopped its counters, u64
 * cycles, u64 instructions (docs/wire-protocol.md); a payload without
 * them (an older worker) leaves host "" and hwc -1. */
#define LIVE_TAIL_MAX 84u
size_t live_tail_put(unsigned char *p);
void live_tail_get(const unsigned char *p, size_t len, struct acct_snap *s);
/* This host's name, read once. */
const char *live_my_host(void);

/* ---- hardware counters (hwcount.c) ---- */
/* The calling thread is counted: opens its cycles and instructions
 * counters once (acct_set_role). */
void hwc_thread_counted(void);
/* This process's counted threads' user-mode cycles and instructions
 * (those that ended included); 0, or the errno that stopped them. */
int hwc_totals(uint64_t *cycles, uint64_t *instr);

/* ---- regions (region.c) ---- */
/* dw_finalize: closes the regions still entered and writes them all as
 * TALP JSON to DWORK_TALP_FILE when it is set (docs/runtime.md). */
void region_finish(void);
/* The regions as a JSON array / text lines, for dwork top. */
#include <stdio.h>
void region_json(FILE *f);
void region_text(FILE *f);

/* Writes s as a JSON string, quoted and escaped (livesnap.c). */
void live_json_str(FILE *f, const char *s);

/* ---- the TALP document (talp.c) ---- */
struct talp_proc {
	int id;
	uint64_t useful_ns, issued;
	const char *host;
	int hwc; /* 0: cycles and instr were counted, else why not */
	uint64_t cycles, instr;
};
struct talp_region {
	const char *name;
	uint64_t elapsed_ns;
	int runs;
	size_t np;
	const struct talp_proc *p;
};
/* Writes n regions as the JSON that DLB's TALP 3.5 writes (docs/
 * runtime.md gives the mapping). */
void talp_write(FILE *f, const struct talp_region *r, int n);

#endif
