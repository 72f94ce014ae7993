/*
 * Always-on accounting (live.h): per thread, the time in each class of
 * state; per function, calls served and issued; bytes; memory.  Each
 * thread writes only its own slot (its class times under a sequence
 * counter that a reader retries on; its calls and bytes as plain
 * counters), so the hot path takes no lock and makes no atomic
 * read-modify-write.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#define ACCT_HAVE_TSC 1
#endif

#include <dwork/dwork.h>
#include <dwork/trace.h>

#include "runtime/live.h"
#include "runtime/rt.h"
#include "runtime/wire.h"

#define ACCT_VERSION   1u
#define ACCT_HEAD      48u /* fixed part of a STATS payload */
#define ACCT_THR_BYTES 40u
#define ACCT_FN_SENT   128 /* functions in one STATS payload at most */

int acct_on = 1;
static uint64_t acct_t0;
static struct acct_slot slots[ACCT_THREADS];
static uint32_t nslots;
static uint64_t lost_threads; /* threads beyond ACCT_THREADS */
static struct acct_fnc fns[ACCT_FUNCS];
/* frame bytes of threads without a slot: received, sent */
static uint64_t acct_bytes[2];
ACCT_TLS struct acct_slot *acct_me;
#define me acct_me
static ACCT_TLS int me_role;
/* A runtime thread that is not counted (I/O, control): no figure shows
 * its class times, so its state changes read no clock and write
 * nothing (its slot, taken for its counters, stays outside any state). */
static ACCT_TLS int me_untimed;
ACCT_TLS uint32_t acct_cls_now = ACCT_CLS_UNKNOWN;

uint64_t
acct_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The hot path's clock: the TSC when the kernel keeps time with it (it
 * is then invariant and shared by every core), a third of the cost of
 * clock_gettime here; its ticks become ns when the figures are read,
 * at the rate measured since the process began. */
static int acct_tsc;
static uint64_t acct_tsc0;

static inline uint64_t
acct_ticks(void)
{
#ifdef ACCT_HAVE_TSC
	if (__builtin_expect(acct_tsc, 1))
		return __rdtsc();
#endif
	return acct_now();
}

/* ns per tick now (1 without the TSC). */
static double
acct_rate(uint64_t ticks, uint64_t ns)
{
	if (!acct_tsc || ticks <= acct_tsc0 || ns <= acct_t0)
		return 1.0;
	return (double)(ns - acct_t0) / (double)(ticks - acct_tsc0);
}

uint64_t
acct_ns_ticks(uint64_t ns)
{
	uint64_t now = acct_ticks(), now_ns = acct_now();
	if (!acct_tsc || now_ns < acct_t0 + 20000000u) /* rate not known */
		return 0;
	return (uint64_t)((double)ns / acct_rate(now, now_ns));
}

static int
acct_tsc_trusted(void)
{
#ifdef ACCT_HAVE_TSC
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/"
	                "current_clocksource",
	                "r");
	char b[32] = "";
	if (f) {
		if (!fgets(b, sizeof b, f))
			b[0] = 0;
		fclose(f);
	}
	return !strcmp(b, "tsc\n");
#else
	return 0;
#endif
}

static void __attribute__((constructor)) acct_init_env(void)
{
	const char *v = getenv("DWORK_ACCOUNT");
	if (v && (!strcmp(v, "0") || !strcasecmp(v, "off") ||
	          !strcasecmp(v, "no") || !strcasecmp(v, "false")))
		acct_on = 0;
	/* DWORK_ACCOUNT_CLOCK=monotonic: the fallback clock, as where the
	 * TSC is not the kernel's (tests run both) */
	const char *c = getenv("DWORK_ACCOUNT_CLOCK");
	acct_tsc =
	    acct_on && acct_tsc_trusted() && !(c && !strcmp(c, "monotonic"));
	acct_t0 = acct_now();
	acct_tsc0 = acct_ticks();
}

void
acct_init(void)
{
	acct_init_env();
}

/* A thread that ends leaves its slot: its time stops, and what it
 * accounted stays in the process's totals (a new thread adds to them). */
static pthread_key_t acct_key;
static pthread_once_t acct_key_once = PTHREAD_ONCE_INIT;

static void acct_account(struct acct_slot *s, uint64_t now, uint32_t cls);

static void
acct_thread_end(void *arg)
{
	struct acct_slot *s = arg;
	acct_account(s, acct_ticks(), ACCT_NCLASS);
	__atomic_store_n(&s->fn, 0, __ATOMIC_RELAXED);
	me = NULL;
	acct_cls_now = ACCT_CLS_UNKNOWN;
	__atomic_store_n(&s->free, 1, __ATOMIC_RELEASE);
}

static void
acct_key_init(void)
{
	pthread_key_create(&acct_key, acct_thread_end);
}

static struct acct_slot *
acct_reuse(void)
{
	uint32_t n = __atomic_load_n(&nslots, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < n && i < ACCT_THREADS; i++) {
		uint32_t one = 1;
		if (__atomic_load_n(&slots[i].free, __ATOMIC_RELAXED) &&
		    __atomic_compare_exchange_n(&slots[i].free, &one, 0, 0,
		                                __ATOMIC_ACQ_REL,
		                                __ATOMIC_RELAXED))
			return &slots[i];
	}
	return NULL;
}

static struct acct_slot *
acct_claim(void)
{
	if (!acct_on)
		return NULL;
	pthread_once(&acct_key_once, acct_key_init);
	struct acct_slot *r = acct_reuse();
	if (r) {
		__atomic_store_n(&r->role, (uint32_t)me_role, __ATOMIC_RELEASE);
		me = r;
		pthread_setspecific(acct_key, r);
		return r;
	}
	uint32_t i = __atomic_fetch_add(&nslots, 1, __ATOMIC_RELAXED);
	if (i >= ACCT_THREADS) {
		__atomic_store_n(&nslots, ACCT_THREADS, __ATOMIC_RELAXED);
		__atomic_fetch_add(&lost_threads, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	struct acct_slot *s = &slots[i];
	__atomic_store_n(&s->cls, ACCT_NCLASS, __ATOMIC_RELAXED);
	__atomic_store_n(&s->role, (uint32_t)me_role, __ATOMIC_RELEASE);
	me = s;
	pthread_setspecific(acct_key, s);
	return s;
}

/* Adds the burst that ends at now to s and starts cls's: the writer's
 * side of the sequence counter around it (only this thread writes s);
 * live.h's acct_switch_fast is the same, inline. */
static void
acct_account(struct acct_slot *s, uint64_t now, uint32_t cls)
{
	uint32_t q = s->seq + 1;
	__atomic_store_n(&s->seq, q, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	uint32_t old = s->cls;
	uint64_t d = now - s->since;
	if (old == ACCT_CLS_MIXED) {
		uint64_t u = acct_mixed_useful(d);
		__atomic_store_n(&s->ns[ACCT_USEFUL], s->ns[ACCT_USEFUL] + u,
		                 __ATOMIC_RELAXED);
		d -= u;
		old = s->base;
	}
	__atomic_store_n(&s->ns[old], s->ns[old] + d, __ATOMIC_RELAXED);
	__atomic_store_n(&s->cls, cls, __ATOMIC_RELAXED);
	__atomic_store_n(&s->since, now, __ATOMIC_RELAXED);
	__atomic_store_n(&s->seq, q + 1, __ATOMIC_RELEASE);
}

/* The thread's first state (it claims its slot), or a state change
 * without the TSC: out of the inline path.  With the TSC the thread's
 * class goes into acct_cls_now, and the inline path takes the next
 * change; without it acct_cls_now stays unknown and every change comes
 * here. */
void
acct_switch_slow(uint32_t cls)
{
	if (me_untimed)
		return;
	struct acct_slot *s = me ? me : acct_claim();
	if (__builtin_expect(!s, 0))
		return;
	if (!acct_tsc && s->cls == cls)
		return;
	acct_account(s, acct_ticks(), cls);
	if (acct_tsc)
		acct_cls_now = cls;
}

void
acct_frame_slow(int sent, size_t bytes)
{
	struct acct_slot *s = acct_claim(); /* once a thread */
	if (s)
		acct_frame(sent, bytes);
	else
		__atomic_fetch_add(&acct_bytes[sent != 0], bytes,
		                   __ATOMIC_RELAXED);
}

static struct acct_fnc *
acct_fn_find(uint32_t id)
{
	uint32_t i = id % ACCT_FUNCS;
	for (int n = 0; n < ACCT_FUNCS; n++, i = (i + 1) % ACCT_FUNCS) {
		uint32_t cur = __atomic_load_n(&fns[i].id, __ATOMIC_ACQUIRE);
		if (cur == id)
			return &fns[i];
		if (cur == 0 && __atomic_compare_exchange_n(
		                    &fns[i].id, &cur, id, 0, __ATOMIC_ACQ_REL,
		                    __ATOMIC_ACQUIRE))
			return &fns[i];
		if (cur == id)
			return &fns[i];
	}
	return NULL; /* more functions than ACCT_FUNCS: not counted */
}

/* The thread moves on to counting function id (issued: calls to it,
 * else runs of it): the calls it counted for the last one go into the
 * process's table, under fseq, so that a reader adding the table and
 * the slots' own counts sees each call once. */
static void
acct_move(struct acct_slot *s, int issued, uint32_t id)
{
	struct acct_fnc *f = acct_fn_find(id);
	uint32_t q = s->fseq + 1;
	__atomic_store_n(&s->fseq, q, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	struct acct_fnc **at = issued ? &s->isf : &s->sf;
	uint64_t *n = issued ? &s->issued : &s->served;
	if (*at && *n)
		__atomic_fetch_add(issued ? &(*at)->issued : &(*at)->served, *n,
		                   __ATOMIC_RELAXED);
	__atomic_store_n(n, 0, __ATOMIC_RELAXED);
	__atomic_store_n(at, f, __ATOMIC_RELAXED);
	/* a function the table has no room for is not counted */
	__atomic_store_n(issued ? &s->iid : &s->sid, id, __ATOMIC_RELAXED);
	__atomic_store_n(&s->fseq, q + 1, __ATOMIC_RELEASE);
}

void
acct_function_slow(uint32_t id)
{
	struct acct_slot *s = me ? me : acct_claim();
	if (!s)
		return;
	if (id && id != s->sid) {
		acct_batch_served(s); /* a batch's items are of sid */
		acct_move(s, 0, id);
	}
	acct_function(id);
}

void
acct_issued_slow(uint32_t id)
{
	struct acct_slot *s = me ? me : acct_claim();
	if (!s)
		return;
	acct_move(s, 1, id);
	acct_issued(id);
}

static void
acct_set_role(int role)
{
	me_role = role;
	if (role == ACCT_NOT_COUNTED && me && me->cls != ACCT_NCLASS)
		acct_account(me, acct_ticks(), ACCT_NCLASS);
	me_untimed = role == ACCT_NOT_COUNTED;
	acct_cls_now = ACCT_CLS_UNKNOWN;
	if (me)
		__atomic_store_n(&me->role, (uint32_t)role, __ATOMIC_RELAXED);
	if (role != ACCT_NOT_COUNTED && acct_on)
		hwc_thread_counted(); /* once a thread, not the hot path */
}

void
acct_thread(const char *name)
{
	if (!strncmp(name, "executor", 8))
		acct_set_role(ACCT_EXECUTOR);
	else if (!strcmp(name, "master"))
		acct_set_role(ACCT_USER);
	else
		acct_set_role(ACCT_NOT_COUNTED);
}

void
acct_user_thread(void)
{
	if (rt.role == RT_MASTER && me_role == ACCT_NOT_COUNTED &&
	    (!me || me->role == ACCT_NOT_COUNTED))
		acct_set_role(ACCT_USER);
}

/* ---- reading the slots ---- */

static void
acct_read_slot(struct acct_slot *s, uint64_t now, double rate,
               struct acct_thr *t)
{
	uint32_t a, b, cls, base;
	uint64_t since;
	do {
		a = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		t->role = (uint8_t)__atomic_load_n(&s->role, __ATOMIC_RELAXED);
		cls = __atomic_load_n(&s->cls, __ATOMIC_RELAXED);
		base = __atomic_load_n(&s->base, __ATOMIC_RELAXED);
		t->fn = __atomic_load_n(&s->fn, __ATOMIC_RELAXED);
		since = __atomic_load_n(&s->since, __ATOMIC_RELAXED);
		for (int k = 0; k < ACCT_NCLASS; k++)
			t->ns[k] = __atomic_load_n(&s->ns[k], __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		b = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
	} while ((a & 1) || a != b);
	if (cls < ACCT_NCLASS && now > since)
		t->ns[cls] += now - since; /* the burst it is in */
	/* a batch's mixed burst is split when it ends (acctbatch.c); its
	 * thread is in an item while it shows one */
	if (cls == ACCT_CLS_MIXED)
		cls = t->fn ? ACCT_USEFUL : base;
	t->cls = (uint8_t)(cls > ACCT_NCLASS ? ACCT_NCLASS : cls);
	for (int k = 0; k < ACCT_NCLASS; k++)
		t->ns[k] = (uint64_t)((double)t->ns[k] * rate);
	if (t->cls != ACCT_USEFUL)
		t->fn = 0;
}

static uint64_t
acct_rss(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long long size = 0, res = 0;
	if (f) {
		if (fscanf(f, "%llu %llu", &size, &res) != 2)
			res = 0;
		fclose(f);
	}
	return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Function names, from the registry (the ids are hashes of them). */
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uint32_t id;
	const char *name;
} * names;
static size_t nnames, names_cap;

static void
acct_name_one(const char *name)
{
	if (nnames == names_cap) {
		size_t nc = names_cap ? 2 * names_cap : 64;
		void *p = realloc(names, nc * sizeof *names);
		if (!p)
			return;
		names = p;
		names_cap = nc;
	}
	names[nnames].id = dw_function_id(name);
	names[nnames++].name = name;
}

static const char *
acct_name_of(uint32_t id)
{
	for (size_t i = 0; i < nnames; i++)
		if (names[i].id == id)
			return names[i].name;
	return "";
}

static unsigned char *
acct_put_fn(unsigned char *q, uint32_t id, uint64_t served, uint64_t issued)
{
	const char *nm = acct_name_of(id);
	size_t nl = strlen(nm);
	if (nl > 255)
		nl = 255;
	wire_put_u32(q, id);
	wire_put_u64(q + 4, served);
	wire_put_u64(q + 12, issued);
	q[20] = (unsigned char)nl;
	memcpy(q + 21, nm, nl);
	return q + 21 + nl;
}

/* Whether id is already among the n functions written from start. */
static int
acct_fn_listed(const unsigned char *start, uint32_t n, uint32_t id)
{
	const unsigned char *q = start;
	for (uint32_t i = 0; i < n; i++) {
		if (wire_get_u32(q) == id)
			return 1;
		q += 21 + q[20];
	}
	return 0;
}

/* The calls of each function of the table (by its index): the table's
 * counts and those the slots hold of their current functions, read
 * between two reads of every slot's fseq so that a call a thread moves
 * from its slot into the table meanwhile is not seen twice or missed
 * (moves are rare: a thread's function changes; a reader that keeps
 * meeting them yields to the movers between tries).  Returns 0 when no
 * try was clean: then served and issued hold nothing to show. */
static int
acct_fn_counts(uint32_t nt, uint64_t *served, uint64_t *issued)
{
	uint32_t f0[ACCT_THREADS];
	for (int tries = 0; tries < 1024; tries++) {
		if (tries >= 16)
			sched_yield();
		int moved = 0;
		for (uint32_t i = 0; i < nt; i++) {
			f0[i] =
			    __atomic_load_n(&slots[i].fseq, __ATOMIC_ACQUIRE);
			moved |= f0[i] & 1;
		}
		for (int k = 0; k < ACCT_FUNCS; k++) {
			served[k] =
			    __atomic_load_n(&fns[k].served, __ATOMIC_RELAXED);
			issued[k] =
			    __atomic_load_n(&fns[k].issued, __ATOMIC_RELAXED);
		}
		for (uint32_t i = 0; i < nt; i++) {
			struct acct_slot *s = &slots[i];
			struct acct_fnc *f =
			    __atomic_load_n(&s->sf, __ATOMIC_RELAXED);
			if (f)
				served[f - fns] += __atomic_load_n(
				    &s->served, __ATOMIC_RELAXED);
			f = __atomic_load_n(&s->isf, __ATOMIC_RELAXED);
			if (f)
				issued[f - fns] += __atomic_load_n(
				    &s->issued, __ATOMIC_RELAXED);
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		for (uint32_t i = 0; i < nt; i++)
			moved |= __atomic_load_n(&slots[i].fseq,
			                         __ATOMIC_RELAXED) != f0[i];
		if (!moved)
			return 1;
	}
	return 0;
}

/* The frame bytes of every slot and of the threads without one. */
static uint64_t
acct_bytes_of(uint32_t nt, int sent)
{
	uint64_t n = __atomic_load_n(&acct_bytes[sent], __ATOMIC_RELAXED);
	for (uint32_t i = 0; i < nt; i++)
		n += __atomic_load_n(&slots[i].bytes[sent], __ATOMIC_RELAXED);
	return n;
}

size_t
acct_encode(unsigned char *p, uint32_t queue, uint32_t self_cls)
{
	uint64_t now = acct_ticks(), now_ns = acct_now();
	double rate = acct_rate(now, now_ns);
	uint32_t nt = __atomic_load_n(&nslots, __ATOMIC_ACQUIRE);
	if (nt > ACCT_THREADS)
		nt = ACCT_THREADS;
	unsigned char *q = p + ACCT_HEAD;
	uint32_t running[ACCT_THREADS];
	for (uint32_t i = 0; i < nt; i++, q += ACCT_THR_BYTES) {
		struct acct_thr t;
		acct_read_slot(&slots[i], now, rate, &t);
		if (&slots[i] == me && self_cls < ACCT_NCLASS)
			t.cls = (uint8_t)self_cls;
		running[i] = t.fn;
		q[0] = t.role;
		q[1] = t.cls;
		wire_put_u16(q + 2, 0);
		wire_put_u32(q + 4, t.fn);
		for (int k = 0; k < ACCT_NCLASS; k++)
			wire_put_u64(q + 8 + 8 * k, t.ns[k]);
	}
	/* the last clean reading, kept for a reader that meets a mover at
	 * every try: what it shows never goes back nor counts a call twice */
	static uint64_t served[ACCT_FUNCS], issued[ACCT_FUNCS];
	static uint64_t try_served[ACCT_FUNCS], try_issued[ACCT_FUNCS];
	pthread_mutex_lock(&names_lock); /* also guards those four */
	if (acct_fn_counts(nt, try_served, try_issued)) {
		memcpy(served, try_served, sizeof served);
		memcpy(issued, try_issued, sizeof issued);
	}
	nnames = 0;
	call_each_function(acct_name_one);
	unsigned char *fstart = q;
	uint32_t nf = 0;
	for (int i = 0; i < ACCT_FUNCS && nf < ACCT_FN_SENT; i++) {
		uint32_t id = __atomic_load_n(&fns[i].id, __ATOMIC_ACQUIRE);
		if (id)
			q = acct_put_fn(q, id, served[i], issued[i]), nf++;
	}
	for (uint32_t i = 0; i < nt && nf < ACCT_FN_SENT; i++)
		if (running[i] && !acct_fn_listed(fstart, nf, running[i]))
			q = acct_put_fn(q, running[i], 0, 0), nf++;
	pthread_mutex_unlock(&names_lock);
	wire_put_u32(p, ACCT_VERSION);
	wire_put_u32(p + 4, nt);
	wire_put_u32(p + 8, nf);
	wire_put_u32(p + 12, queue);
	wire_put_u64(p + 16, now_ns - acct_t0);
	wire_put_u64(p + 24, acct_rss());
	wire_put_u64(p + 32, acct_bytes_of(nt, 1));
	wire_put_u64(p + 40, acct_bytes_of(nt, 0));
	return (size_t)(q - p);
}

int
acct_decode(const unsigned char *p, size_t len, struct acct_snap *s, char *why,
            size_t wl)
{
	memset(s, 0, sizeof *s);
	if (len < ACCT_HEAD || wire_get_u32(p) != ACCT_VERSION) {
		snprintf(why, wl,
		         "STATS payload of %zu bytes is not version %u", len,
		         ACCT_VERSION);
		return -1;
	}
	uint32_t nt = wire_get_u32(p + 4), nf = wire_get_u32(p + 8);
	if (nt > ACCT_THREADS || nf > ACCT_FUNCS ||
	    ACCT_HEAD + (uint64_t)nt * ACCT_THR_BYTES > len) {
		snprintf(why, wl,
		         "STATS payload: %u threads, %u functions do "
		         "not fit %zu bytes",
		         nt, nf, len);
		return -1;
	}
	s->queue = wire_get_u32(p + 12);
	s->at = wire_get_u64(p + 16);
	s->rss = wire_get_u64(p + 24);
	s->sent = wire_get_u64(p + 32);
	s->recv = wire_get_u64(p + 40);
	const unsigned char *q = p + ACCT_HEAD, *end = p + len;
	for (uint32_t i = 0; i < nt; i++, q += ACCT_THR_BYTES) {
		struct acct_thr *t = &s->thr[i];
		t->role = q[0];
		t->cls = q[1] > ACCT_NCLASS ? ACCT_NCLASS : q[1];
		t->fn = wire_get_u32(q + 4);
		for (int k = 0; k < ACCT_NCLASS; k++)
			t->ns[k] = wire_get_u64(q + 8 + 8 * k);
	}
	s->nthr = nt;
	s->fn = calloc(nf ? nf : 1, sizeof *s->fn);
	if (!s->fn) {
		snprintf(why, wl, "out of memory for a STATS payload");
		return -1;
	}
	for (uint32_t i = 0; i < nf; i++) {
		if (end - q < 21 || end - q < 21 + q[20]) {
			snprintf(why, wl,
			         "STATS payload cut inside function %u", i);
			acct_snap_free(s);
			return -1;
		}
		struct acct_fn *f = &s->fn[i];
		f->id = wire_get_u32(q);
		f->served = wire_get_u64(q + 4);
		f->issued = wire_get_u64(q + 12);
		memcpy(f->name, q + 21, q[20]);
		f->name[q[20]] = 0;
		q += 21 + q[20];
	}
	s->nfn = nf;
	s->used = (size_t)(q - p);
	return 0;
}

void
acct_snap_free(struct acct_snap *s)
{
	free(s->fn);
	s->fn = NULL;
	s->nfn = 0;
}
