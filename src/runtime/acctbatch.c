/*
 * The accounting of a batch's items (live.h, "Batches"; docs/runtime.md,
 * "What an item of a batch costs").  Only the thread itself writes its
 * slot; the class times change under the slot's sequence counter as in
 * account.c, and only grow: a reader adds nothing for a mixed burst in
 * progress (it would not know how to split it), and its end adds each
 * part to its class.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "runtime/call.h"
#include "runtime/live.h"

#define BATCH_KMAX 128 /* items a timed pair stands for, at most */
#define BATCH_RING 8   /* values an item's or a gap's estimate is from */
#define BATCH_WARM 3   /* gaps a thread measures before any is estimated */

#if defined(__x86_64__) || defined(__i386__)
#define batch_ticks() __rdtsc()
#else
#define batch_ticks() acct_now() /* unused: no batch without the TSC */
#endif

ACCT_TLS uint32_t acct_batch, acct_skip;

/* The last BATCH_RING values measured of a figure, and the estimate
 * taken from them: their lower median, so that one item or gap that a
 * preemption or a page fault stretched (they only ever lengthen) moves
 * nothing.  The values are kept in the order they came and sorted, so
 * that a new one replaces the oldest in place (a few moves, not a sort
 * of them all: a timed item or gap adds one). */
struct batch_ring {
	uint64_t v[BATCH_RING];      /* as measured, the oldest at at */
	uint64_t sorted[BATCH_RING]; /* the same n values, ascending */
	uint32_t n, at; /* values held (to BATCH_RING), the next slot */
};

/* The thread's figures of its items: the start of the timed one, the
 * estimates of a timed item and of the gap between two items (0: none
 * measured yet; from the rings) and of what timing adds to a span
 * between two reads (below), the end of the last timed item when the
 * next starts with a read (0: it does not), whether the timed one's gap
 * before it was measured. */
static ACCT_TLS uint64_t item_t0, est_item, est_gap, mean_read, prev_end;
static ACCT_TLS struct batch_ring item_ring, gap_ring;
static ACCT_TLS int gap_taken;
/* the items the mixed burst may hold (its untimed items: skip0 less
 * acct_skip), of those the ones already in the calls served, and the
 * function of the batch's last timed item (the untimed ones' function:
 * a batch runs one) */
static ACCT_TLS uint32_t skip0, counted, bfn, rnd = 2463534242u;

static uint64_t sample_ns = 16000; /* DWORK_ACCOUNT_SAMPLE_US */
static uint64_t sample_ticks;      /* its ticks, once known */
/* What timing adds to a span between two reads is learnt (below), and
 * items of a burst shorter than the timed ones look like it: no more
 * than this is believed (two TSC reads and the slot's stores take tens
 * of ns) */
#define BATCH_READ_MAX_NS 1000
static uint64_t read_max_ticks;

int64_t
acct_sample_parse(const char *us)
{
	char *end;
	if (!us || !*us)
		return 16000;
	if (!isdigit((unsigned char)us[0]))
		return -1; /* strtoull would take "-5" as 2^64 - 5 */
	errno = 0;
	unsigned long long v = strtoull(us, &end, 10);
	if (errno || *end || v > ACCT_SAMPLE_US_MAX)
		return -1;
	return (int64_t)v * 1000;
}

/* A value not valid keeps the default here; dw_init refuses it. */
static void __attribute__((constructor)) batch_init_env(void)
{
	int64_t ns = acct_sample_parse(getenv("DWORK_ACCOUNT_SAMPLE_US"));
	if (ns >= 0)
		sample_ns = (uint64_t)ns;
}

/* x measured: the ring's estimate with it.  x takes the oldest
 * value's place in the sorted values (a new place at the end while the
 * ring fills) and moves to where it belongs. */
static uint64_t
ring_add(struct batch_ring *r, uint64_t x)
{
	uint64_t *s = r->sorted;
	uint32_t n = r->n, i = n;
	if (n == BATCH_RING)
		for (i = 0; s[i] != r->v[r->at]; i++)
			;
	else
		r->n = ++n;
	r->v[r->at] = x;
	r->at = (r->at + 1) % BATCH_RING;
	for (; i > 0 && s[i - 1] > x; i--)
		s[i] = s[i - 1];
	for (; i + 1 < n && s[i + 1] < x; i++)
		s[i] = s[i + 1];
	s[i] = x;
	return s[(n - 1) / 2];
}

/* v moves 1/2^sh of the way to x (an exponential mean). */
static uint64_t
ema(uint64_t v, uint64_t x, int sh)
{
	return x >= v ? v + ((x - v) >> sh) : v - ((v - x) >> sh);
}

static uint32_t skip_for(uint64_t item);
static void batch_carry(struct acct_slot *s, uint32_t skip);

uint32_t
acct_batch_begin(int depth, const char *fn, size_t nl)
{
	uint32_t outer = acct_batch;
	/* the TSC inline path (a slot, the TSC clock) in a plain class */
	if (!sample_ns || acct_cls_now > ACCT_NCLASS)
		return outer;
	if (!__atomic_load_n(&sample_ticks, __ATOMIC_RELAXED)) {
		uint64_t t = acct_ns_ticks(sample_ns);
		if (!t)
			return outer; /* the process is too young for the rate
			               */
		__atomic_store_n(&read_max_ticks,
		                 acct_ns_ticks(BATCH_READ_MAX_NS),
		                 __ATOMIC_RELAXED);
		__atomic_store_n(&sample_ticks, t, __ATOMIC_RELAXED);
	}
	acct_batch = (uint32_t)depth + 1;
	acct_skip = skip0 = counted = 0;
	prev_end = 0;
	struct acct_slot *s = acct_me;
	uint32_t skip;
	if (s && acct_cls_now < ACCT_NCLASS && est_item && est_gap &&
	    (skip = skip_for(est_item)) != 0 && s->sid == call_fn_id(fn, nl))
		batch_carry(s, skip);
	return outer;
}

void
acct_batch_end(uint32_t outer)
{
	struct acct_slot *s = acct_me;
	if (acct_cls_now == ACCT_CLS_MIXED && s)
		acct_switch_slow(s->base);
	if (s && bfn) /* the last burst showed its function */
		__atomic_store_n(&s->fn, 0, __ATOMIC_RELAXED);
	acct_batch = outer;
	acct_skip = skip0 = counted = bfn = 0;
	prev_end = 0;
}

void
acct_batch_served(struct acct_slot *s)
{
	uint32_t started = skip0 - acct_skip;
	if (started > counted)
		__atomic_store_n(&s->served, s->served + (started - counted),
		                 __ATOMIC_RELAXED);
	counted = started;
}

void
acct_item_begin(uint32_t id)
{
	struct acct_slot *s = acct_me;
	bfn = 0;
	if (!s || acct_cls_now > ACCT_NCLASS)
		return;
	bfn = id;
	item_t0 = s->since;
	/* the gap before it, timed at both ends */
	gap_taken = prev_end && item_t0 > prev_end;
	if (gap_taken)
		est_gap = ring_add(&gap_ring, item_t0 - prev_end);
	prev_end = 0;
}

/* Untimed items until the next timed one: about one timed pair per
 * sample_ticks of item time, at random so that no pattern in the items'
 * lengths lines up with the choice.  Timed items come in pairs, the gap
 * between them measured: the estimate of the untimed ones' gaps. */
static uint32_t
skip_for(uint64_t item)
{
	uint64_t st = __atomic_load_n(&sample_ticks, __ATOMIC_RELAXED);
	if (!st || item >= st || gap_ring.n < BATCH_WARM)
		return 0; /* the first gaps all timed: no estimate from one */
	uint64_t k = st / (item + 1);
	if (k > BATCH_KMAX)
		k = BATCH_KMAX;
	if (k < 2)
		return 0;
	rnd ^= rnd << 13;
	rnd ^= rnd >> 17;
	rnd ^= rnd << 5;
	return rnd % (uint32_t)(2 * k - 1); /* k - 1 on average */
}

/* After a timed item: only once the gap before it was measured (a pair). */
static uint32_t
next_skip(uint64_t item)
{
	return gap_taken ? skip_for(item) : 0;
}

/* The burst since the slot's last read ends at now, in class old; the
 * thread goes on in cls (ACCT_CLS_MIXED: untimed items between
 * stretches of base), under the sequence counter. */
static void
slot_switch(struct acct_slot *s, uint64_t now, uint32_t old, uint32_t base,
            uint32_t cls)
{
	uint32_t q = s->seq + 1;
	__atomic_store_n(&s->seq, q, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&s->ns[old], s->ns[old] + (now - s->since),
	                 __ATOMIC_RELAXED);
	__atomic_store_n(&s->base, base, __ATOMIC_RELAXED);
	__atomic_store_n(&s->cls, cls, __ATOMIC_RELAXED);
	__atomic_store_n(&s->since, now, __ATOMIC_RELAXED);
	__atomic_store_n(&s->seq, q + 1, __ATOMIC_RELEASE);
	acct_cls_now = cls;
}

/* A batch of the function the slot counts, whose items and gaps the
 * thread has estimates of (its last batches': the rings are warm),
 * starts with a mixed burst of skip untimed items instead of a timed
 * pair: the clock is read once here (the carrier's steps before it are
 * timed as such) and the burst's first gap is the one before its first
 * item. */
static void
batch_carry(struct acct_slot *s, uint32_t skip)
{
	uint32_t old = acct_cls_now;
	__atomic_store_n(&s->fn, s->sid, __ATOMIC_RELAXED);
	slot_switch(s, batch_ticks(), old, old, ACCT_CLS_MIXED);
	acct_skip = skip0 = skip;
	bfn = s->sid;
}

void
acct_item_end(uint32_t below, int fn)
{
	struct acct_slot *s = acct_me;
	uint32_t old = acct_cls_now;
	if (fn)
		acct_function(0);
	if (!s || old > ACCT_NCLASS) {
		acct_switch(below);
		return;
	}
	uint64_t now = batch_ticks(), item = now - item_t0;
	/* untimed items only where their calls go to the function the
	 * slot counts (a nested call of another may have moved it) */
	uint32_t skip = gap_taken && bfn && bfn == s->sid ? next_skip(item) : 0;
	if (skip) /* shown while the burst runs */
		__atomic_store_n(&s->fn, bfn, __ATOMIC_RELAXED);
	est_item = ring_add(&item_ring, item);
	slot_switch(s, now, old, below, skip ? ACCT_CLS_MIXED : below);
	acct_skip = skip0 = skip;
	counted = 0;
	prev_end = skip ? 0 : now;
}

/* What timing adds to a span between two reads (the reads themselves,
 * partly inside it): one mixed burst of n items, n + 1 gaps, one such
 * addition, against the timed item and gap that have one each. */
static void
learn_read(uint64_t n, uint64_t span)
{
	uint64_t raw = n * est_item + (n + 1) * est_gap;
	uint64_t r = raw > span ? (raw - span) / (2 * n) : 0;
	uint64_t top = est_item < est_gap ? est_item : est_gap,
	         max = __atomic_load_n(&read_max_ticks, __ATOMIC_RELAXED);
	top = top < max ? top : max;
	mean_read = ema(mean_read, r < top ? r : top, 3);
}

/*
 * A mixed burst of span ticks ends (account.c, under the sequence
 * counter): n = skip0 - acct_skip untimed items ran in it, and one more
 * gap than items.  The gaps are the runtime's own steps, alike each
 * time, so they are what is estimated (from the pairs of timed items,
 * less what timing added to them), and the rest is useful: the items'
 * own differences in length go where they belong.  A burst over twice
 * as long as its items and gaps would take by their estimates was
 * likely preempted (a thread that shares its CPU), and the gap estimate
 * would give all that wait to the items: such a burst is split as its
 * items and gaps would share it, as a timed thread's preemption falls
 * on whatever it was in.
 */
uint64_t
acct_mixed_useful(uint64_t span)
{
	uint64_t n = skip0 - acct_skip;
	if (acct_me)
		acct_batch_served(acct_me);
	acct_skip = skip0 = counted = 0;
	prev_end = 0;
	if (!est_item || !est_gap)
		return 0;
	int outlier = span > 2 * (n * est_item + (n + 1) * est_gap);
	if (n && !outlier)
		learn_read(n, span);
	uint64_t r = mean_read; /* under both estimates, which move */
	r = r < est_item ? r : est_item;
	r = r < est_gap ? r : est_gap;
	uint64_t items = n * (est_item - r), gaps = (n + 1) * (est_gap - r) + r;
	if (outlier)
		return (uint64_t)((double)span * (double)items /
		                  (double)(items + gaps));
	return span > gaps ? span - gaps : 0;
}
