/*
 * A batch's untimed items add nothing to the calls served as they run:
 * the burst's items are added when it ends (acctbatch.c).  This checks
 * that the counts stay exact and go to the right function when a burst
 * ends inside an item: a thread runs batches of short items of function
 * A (most of them untimed, DWORK_ACCOUNT_SAMPLE_US raised), every fifth
 * item running a nested function B inside it and every seventh waiting
 * (a state change), with the known counts: A served exactly the items,
 * B exactly the nested runs; after each batch the counts read so far
 * are exact, and the thread shows no function; most items ran untimed.
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

#define FN_A    "live_nested_a"
#define BATCHES 6
#define ITEMS   200

static uint32_t id_a, id_b;
static int untimed, nested, bad_after, bad_entry, bad_cls;
static uint32_t cls_seen;

/* An untimed item runs on the mirror entry already at its depth
 * (rtrace.h, RTR_ITEM_ENTRY): it must be the item's. */
static void
check_entry(int how)
{
	int d = rtr_depth - 1;
	bad_entry +=
	    how == 2 && d < RTR_STACK && rtr_stack[d] != RTR_ITEM_ENTRY;
}

/* Back from a state inside an item, the thread is useful again. */
static void
check_cls(void)
{
	bad_cls += cls_seen != ACCT_CLS_UNKNOWN && acct_cls_now != ACCT_USEFUL;
}

static void
busy_us(int us)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) <
	       us * 1000L);
}

static void
read_snap(struct acct_snap *s)
{
	static unsigned char b[ACCT_STATS_MAX];
	char why[200];
	REQUIRE(acct_decode(b, acct_encode(b, 0, ACCT_NCLASS), s, why,
	                    sizeof why) == 0);
}

/* Calls served of id (all threads), and whether a thread shows fn. */
static uint64_t
served_of(uint32_t id, int *shown)
{
	struct acct_snap *s = calloc(1, sizeof *s);
	REQUIRE(s);
	read_snap(s);
	uint64_t n = 0;
	for (uint32_t i = 0; i < s->nfn; i++)
		if (s->fn[i].id == id)
			n += s->fn[i].served;
	*shown = 0;
	for (uint32_t i = 0; i < s->nthr; i++)
		*shown |= s->thr[i].fn == id;
	acct_snap_free(s);
	free(s);
	return n;
}

static void
one_batch(void)
{
	rtr_push(DWT_STATE_OVERHEAD); /* the carrier */
	uint32_t outer = rtr_batch_begin(FN_A, strlen(FN_A));
	for (int i = 0; i < ITEMS; i++) {
		busy_us(2);
		int how =
		    rtr_run_begin(DWT_STATE_RUNNING, DW_EV_FUNCTION, id_a);
		untimed += how == 2;
		check_entry(how);
		busy_us(3);
		if (i % 5 == 4) { /* a nested function of its own */
			int h = rtr_run_begin(DWT_STATE_RUNNING, DW_EV_FUNCTION,
			                      id_b);
			busy_us(2);
			rtr_run_end(h, DW_EV_FUNCTION);
			check_cls();
			nested++;
		}
		if (i % 7 == 6) { /* a wait inside it */
			rtr_push(DWT_STATE_WAITING_MESSAGE);
			busy_us(2);
			rtr_pop();
			check_cls();
		}
		rtr_run_end(how, DW_EV_FUNCTION);
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
		one_batch();
		int shown;
		uint64_t a = served_of(id_a, &shown);
		bad_after += a != (uint64_t)(b + 1) * ITEMS || shown;
		if (a != (uint64_t)(b + 1) * ITEMS || shown)
			printf("after batch %d: A served %llu of %d, A shown "
			       "%d\n",
			       b, (unsigned long long)a, (b + 1) * ITEMS,
			       shown);
	}
	rtr_pop();
	return NULL;
}

int
main(int argc, char **argv)
{
	(void)argc;
	/* the threshold is read as the library loads: set it, run again */
	const char *have = getenv("DWORK_ACCOUNT_SAMPLE_US");
	if (!have || strcmp(have, "100000")) {
		setenv("DWORK_ACCOUNT_SAMPLE_US", "100000", 1);
		execv("/proc/self/exe", argv);
		REQUIRE(!"execv of the test itself");
	}
	acct_init();
	REQUIRE(acct_on);
	id_a = dw_function_id(FN_A);
	id_b = dw_function_id("live_nested_b");
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, worker, NULL) == 0);
	pthread_join(t, NULL);
	int shown;
	uint64_t a = served_of(id_a, &shown), b = served_of(id_b, &shown);
	printf("A served %llu of %d, B %llu of %d; untimed items %d; clock "
	       "%s\n",
	       (unsigned long long)a, BATCHES * ITEMS, (unsigned long long)b,
	       nested, untimed,
	       cls_seen == ACCT_CLS_UNKNOWN ? "fallback" : "TSC");
	CHECK_EQ_U64(a, BATCHES * ITEMS);
	CHECK_EQ_U64(b, (uint64_t)nested);
	CHECK(bad_after == 0);
	CHECK(bad_entry == 0);
	CHECK(bad_cls == 0);
	if (cls_seen != ACCT_CLS_UNKNOWN)
		CHECK(untimed > BATCHES * ITEMS / 3);
	return tu_report("live_batch_nested");
}
