/*
 * The accounting of a batch's items (live.h "Batches", acctbatch.c)
 * against known answers, in one process, through the calls pmap's
 * carrier and call_run make (rtr_batch_begin, rtr_run_begin/_end):
 * a thread runs four batches of 50 items that sleep 1 ms, with 100 us
 * of the carrier's own work (a busy loop) between two items, and the
 * test times every item and gap itself.  With DWORK_ACCOUNT_SAMPLE_US
 * at 100000 (the test sets it and runs itself again) most items run
 * untimed (the test counts them: most must, where the TSC is the
 * clock); with --exact it is 0 and every item is timed.  Either way:
 *
 *  - calls served: exactly the items run;
 *  - useful: the items' time, between the sum of their insides and the
 *    sum of their outsides, within 1% and 1 ms and the gaps' distance
 *    from their median (the gaps are what is estimated, docs/runtime.md:
 *    a gap the load stretches counts as useful when it falls between
 *    untimed items, and a stretched pair's gap shortens the others;
 *    quiet, that distance is under a millisecond, and without the gaps'
 *    estimate useful would be 20 ms more), and at the low end the
 *    gaps' share of the thread's wait on the run queue (a loaded
 *    machine's wake-ups stretch the items' sleeps, and a burst over
 *    twice its estimate is split as a preemption would be);
 *  - useful and runtime together: the time of the batches.
 *
 * The first gap the thread measures (before the first batch's second
 * item) lasts 3 ms, a preemption at the worst moment: an estimate
 * seeded by it (as a running mean once was) counts tens of ms of
 * useful time as runtime.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <dwork/dwork.h>
#include <dwork/events.h>

#include "runtime/live.h"
#include "runtime/rtrace.h"
#include "testutil.h"

#define ITEM_FN    "live_batch_item"
#define BATCHES    4
#define ITEMS      50
#define ITEM_US    1000
#define GAP_US     100
#define STRETCH_US 3000

static uint64_t
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint32_t fn_id;
static uint64_t in_lo, in_hi, span, queued, gaps[BATCHES * ITEMS];
static int ngaps, untimed, bad_entry;
static uint32_t cls_seen;

static void
busy_us(int us)
{
	uint64_t end = now_ns() + (uint64_t)us * 1000u;
	while (now_ns() < end)
		;
}

static void
one_batch(int first)
{
	rtr_push(DWT_STATE_OVERHEAD); /* the carrier */
	uint32_t outer = rtr_batch_begin(ITEM_FN, strlen(ITEM_FN));
	uint64_t last = 0;
	for (int i = 0; i < ITEMS; i++) {
		/* the thread's first measured gap (before its second item)
		 * stretched, as a preemption there would: it must not stand
		 * for the gaps of the items left untimed */
		busy_us(first && i == 1 ? STRETCH_US : GAP_US);
		uint64_t a = now_ns();
		if (last)
			gaps[ngaps++] = a - last;
		int how =
		    rtr_run_begin(DWT_STATE_RUNNING, DW_EV_FUNCTION, fn_id);
		uint64_t b = now_ns();
		untimed += how == 2;
		/* an untimed item runs on the entry already at its depth
		 * (rtrace.h, RTR_ITEM_ENTRY), also in a batch that starts
		 * with untimed items */
		bad_entry += how == 2 && rtr_depth - 1 < RTR_STACK &&
		             rtr_stack[rtr_depth - 1] != RTR_ITEM_ENTRY;
		usleep(ITEM_US);
		uint64_t c = now_ns();
		rtr_run_end(how, DW_EV_FUNCTION);
		uint64_t d = now_ns();
		in_lo += c - b;
		in_hi += d - a;
		last = d;
	}
	rtr_batch_end(outer);
	rtr_pop();
}

static void *
worker(void *arg)
{
	(void)arg;
	acct_thread("executor 1");
	rtr_push(DWT_STATE_IDLE);
	cls_seen = acct_cls_now;
	usleep(30000); /* the TSC's rate is known after 20 ms */
	for (int b = 0; b < BATCHES; b++) {
		uint64_t q0 = tu_queued_ns(), t0 = now_ns();
		one_batch(b == 0);
		uint64_t t1 = now_ns();
		span += t1 - t0;
		queued += tu_queued_ns() - q0;
		usleep(2000); /* Idle between batches */
	}
	rtr_pop();
	return NULL;
}

static int
cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return (a > b) - (a < b);
}

static void
read_snap(struct acct_snap *s)
{
	static unsigned char b[ACCT_STATS_MAX];
	char why[200];
	REQUIRE(acct_decode(b, acct_encode(b, 0, ACCT_NCLASS), s, why,
	                    sizeof why) == 0);
}

int
main(int argc, char **argv)
{
	/* the threshold is read as the library loads: set it, run again */
	int exact = argc > 1 && !strcmp(argv[1], "--exact");
	const char *want = exact ? "0" : "100000";
	const char *have = getenv("DWORK_ACCOUNT_SAMPLE_US");
	if (!have || strcmp(have, want)) {
		setenv("DWORK_ACCOUNT_SAMPLE_US", want, 1);
		execv("/proc/self/exe", argv);
		REQUIRE(!"execv of the test itself");
	}
	acct_init();
	REQUIRE(acct_on);
	fn_id = dw_function_id(ITEM_FN);
	struct acct_snap *before = calloc(1, sizeof *before),
	                 *after = calloc(1, sizeof *after);
	REQUIRE(before && after);
	read_snap(before);
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, worker, NULL) == 0);
	pthread_join(t, NULL);
	read_snap(after);

	uint64_t got[ACCT_NCLASS] = {0};
	for (uint32_t i = 0; i < after->nthr; i++)
		for (int k = 0; k < ACCT_NCLASS; k++)
			got[k] += after->thr[i].ns[k] -
			          (i < before->nthr ? before->thr[i].ns[k] : 0);
	uint64_t served = 0;
	for (uint32_t i = 0; i < after->nfn; i++)
		if (after->fn[i].id == fn_id)
			served += after->fn[i].served;

	qsort(gaps, (size_t)ngaps, sizeof gaps[0], cmp_u64);
	uint64_t med = gaps[ngaps / 2], dev = 0;
	for (int i = 0; i < ngaps; i++)
		dev += gaps[i] > med ? gaps[i] - med : med - gaps[i];
	uint64_t tol = in_lo / 100 + 1000000u;
	/* a burst the load stretched past twice its estimate is split as
	 * its gaps and items would share it (acctbatch.c): of the thread's
	 * wait on the run queue, the gaps' share is counted as runtime
	 * where the sleeps' wake-ups put it in the items.  That share is
	 * (n + 1) gaps to n items of at least ITEM_US, under twice the gap
	 * to one item */
	uint64_t item_ns = ITEM_US * 1000u,
	         waited = (uint64_t)((double)queued * 2.0 * (double)med /
	                             (double)(item_ns + 2 * med));
	printf("served %llu of %d; untimed items %d; useful %.3f ms (items "
	       "%.3f-%.3f ms, the gaps' distance from their median %.3f ms); "
	       "runtime %.3f ms; batches %.3f ms; waited on the run queue "
	       "%.3f ms (the gaps' share %.3f ms); clock %s\n",
	       (unsigned long long)served, BATCHES * ITEMS, untimed,
	       got[ACCT_USEFUL] / 1e6, in_lo / 1e6, in_hi / 1e6, dev / 1e6,
	       got[ACCT_RUNTIME] / 1e6, span / 1e6, queued / 1e6, waited / 1e6,
	       cls_seen == ACCT_CLS_UNKNOWN ? "fallback" : "TSC");
	CHECK_EQ_U64(served, BATCHES * ITEMS);
	CHECK(bad_entry == 0);
	if (cls_seen != ACCT_CLS_UNKNOWN && !exact)
		CHECK(untimed > BATCHES * ITEMS / 2);
	else /* every item timed: asked, or the fallback clock */
		CHECK(untimed == 0);
	CHECK(got[ACCT_USEFUL] + tol + dev + waited >= in_lo);
	CHECK(got[ACCT_USEFUL] <= in_hi + tol + dev);
	/* every ns of the batches is in one of the two classes (to the
	 * TSC's rate as measured) */
	uint64_t both = got[ACCT_USEFUL] + got[ACCT_RUNTIME];
	CHECK(both <= span + 1000000u && both + 1000000u >= span);
	acct_snap_free(before);
	acct_snap_free(after);
	free(before);
	free(after);
	return tu_report("live_batch");
}
