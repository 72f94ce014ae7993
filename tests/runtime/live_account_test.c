/*
 * The accounting's counters and class times against known answers, in
 * one process (account.c through live.h's hot path, the STATS payload
 * through acct_encode / acct_decode):
 *
 *  - calls served and issued per function: four threads count runs of
 *    two functions and calls to two others in blocks of changing length
 *    (so each moves its own counts into the process's table again and
 *    again) while a reader encodes and decodes the figures: every
 *    reading is at most the final count and never below the one before,
 *    and once the threads end (their slots freed, then taken again by a
 *    second round of threads) the counts are exactly the calls made;
 *  - frame bytes, from threads with a slot and from one without;
 *  - the class times of a thread put in Running, Idle, Waiting a
 *    message and Blocking send for sleeps: each class holds the time
 *    between its switches, as timed around them (run again with
 *    DWORK_ACCOUNT_CLOCK=monotonic: the fallback clock's path), and
 *    none from a runtime thread not counted (I/O), whose frames count.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <dwork/dwork.h>
#include <dwork/events.h>

#include "runtime/live.h"
#include "testutil.h"

#define THREADS 4
#define ROUNDS  20000

static int
nop(const void *arg, size_t len, dw_reply *r)
{
	(void)arg, (void)len, (void)r;
	return 0;
}

static const char *const names[4] = {"acct_run_a", "acct_run_b", "acct_call_c",
                                     "acct_call_d"};
static uint32_t ids[4];
static int stop_reading;

struct counts {
	uint64_t served[2], issued[2];
};

/* The calls thread k makes in one round of threads: runs of a and b in
 * blocks of 1 + (i + k) % 5, a call to c or d after each run. */
static void
plan(int k, struct counts *c)
{
	memset(c, 0, sizeof *c);
	for (int i = 0; i < ROUNDS; i++) {
		int f = (i / (1 + (i + k) % 5)) & 1;
		c->served[f]++;
		c->issued[(i + f) & 1]++;
	}
}

static void *
worker(void *arg)
{
	int k = (int)(intptr_t)arg;
	acct_thread("executor 1");
	acct_enter(DWT_STATE_IDLE);
	for (int i = 0; i < ROUNDS; i++) {
		int f = (i / (1 + (i + k) % 5)) & 1;
		acct_enter(DWT_STATE_RUNNING);
		acct_function(ids[f]);
		acct_function(0);
		acct_enter(DWT_STATE_IDLE);
		acct_issued(ids[2 + ((i + f) & 1)]);
		acct_frame(i & 1, 10);
	}
	return NULL;
}

/* A runtime thread that is not counted: its states keep no time, its
 * frames count. */
static void *
io_thread(void *arg)
{
	(void)arg;
	acct_thread("I/O");
	acct_enter(DWT_STATE_IDLE);
	usleep(20000);
	acct_enter(DWT_STATE_SEND_RECEIVE);
	acct_frame(1, 5);
	usleep(10000);
	acct_enter(DWT_STATE_IDLE);
	return NULL;
}

/* The figures now, by function; 0 when they decode. */
static int
read_counts(struct counts *c, uint64_t *sent, uint64_t *recv)
{
	static unsigned char b[ACCT_STATS_MAX];
	struct acct_snap *s = calloc(1, sizeof *s);
	char why[200];
	memset(c, 0, sizeof *c);
	if (!s || acct_decode(b, acct_encode(b, 0, ACCT_NCLASS), s, why,
	                      sizeof why) < 0) {
		free(s);
		return -1;
	}
	for (uint32_t i = 0; i < s->nfn; i++)
		for (int f = 0; f < 2; f++) {
			if (s->fn[i].id == ids[f])
				c->served[f] += s->fn[i].served;
			if (s->fn[i].id == ids[2 + f])
				c->issued[f] += s->fn[i].issued;
		}
	*sent = s->sent;
	*recv = s->recv;
	acct_snap_free(s);
	free(s);
	return 0;
}

static struct counts want;

static void *
reader(void *arg)
{
	(void)arg;
	struct counts last = {0}, now;
	uint64_t sent, recv;
	int bad = 0, n = 0;
	while (!__atomic_load_n(&stop_reading, __ATOMIC_ACQUIRE)) {
		if (read_counts(&now, &sent, &recv) < 0) {
			bad++;
			break;
		}
		for (int f = 0; f < 2; f++) {
			bad += now.served[f] < last.served[f] ||
			       now.served[f] > want.served[f];
			bad += now.issued[f] < last.issued[f] ||
			       now.issued[f] > want.issued[f];
		}
		last = now;
		n++;
	}
	printf("live_account: %d readings while the threads counted, %d "
	       "wrong\n",
	       n, bad);
	CHECK(bad == 0);
	return NULL;
}

static void
check_counts(void)
{
	for (int k = 0; k < THREADS; k++) {
		struct counts c;
		plan(k, &c);
		for (int f = 0; f < 2; f++) {
			want.served[f] += 2 * c.served[f];
			want.issued[f] += 2 * c.issued[f];
		}
	}
	pthread_t r, t[THREADS];
	REQUIRE(pthread_create(&r, NULL, reader, NULL) == 0);
	for (int round = 0; round < 2; round++) { /* the second reuses slots */
		for (int k = 0; k < THREADS; k++)
			REQUIRE(pthread_create(&t[k], NULL, worker,
			                       (void *)(intptr_t)k) == 0);
		for (int k = 0; k < THREADS; k++)
			pthread_join(t[k], NULL);
	}
	__atomic_store_n(&stop_reading, 1, __ATOMIC_RELEASE);
	pthread_join(r, NULL);
	acct_frame(1, 7); /* this thread has no slot yet */
	struct counts c;
	uint64_t sent = 0, recv = 0;
	CHECK(read_counts(&c, &sent, &recv) == 0);
	for (int f = 0; f < 2; f++) {
		CHECK_EQ_U64(c.served[f], want.served[f]);
		CHECK_EQ_U64(c.issued[f], want.issued[f]);
	}
	uint64_t frames = 2ull * THREADS * ROUNDS / 2;
	CHECK_EQ_U64(sent, frames * 10 + 7);
	CHECK_EQ_U64(recv, frames * 10);
	printf("live_account: served %llu + %llu, issued %llu + %llu, "
	       "bytes %llu sent, %llu received: as made\n",
	       (unsigned long long)c.served[0], (unsigned long long)c.served[1],
	       (unsigned long long)c.issued[0], (unsigned long long)c.issued[1],
	       (unsigned long long)sent, (unsigned long long)recv);
}

static uint64_t
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The timed thread's steps: a state and a sleep in it; each switch is
 * timed just before and just after it, so that whatever the load, the
 * time of step i in its class lies between the end of switch i and the
 * start of switch i + 1, and the start of i and the end of i + 1. */
static const struct {
	uint32_t state;
	int ms;
} steps[] = {{DWT_STATE_RUNNING, 60},         {DWT_STATE_IDLE, 40},
             {DWT_STATE_WAITING_MESSAGE, 30}, {DWT_STATE_RUNNING, 20},
             {DWT_STATE_BLOCKING_SEND, 10},   {ACCT_STATE_OFF, 0}};
#define NSTEPS (sizeof steps / sizeof steps[0])
static uint64_t lo[ACCT_NCLASS], hi[ACCT_NCLASS];
static uint32_t cls_seen; /* acct_cls_now in the first step */

static void *
timed(void *arg)
{
	(void)arg;
	uint64_t a[NSTEPS], b[NSTEPS];
	acct_thread("executor 2");
	for (size_t i = 0; i < NSTEPS; i++) {
		a[i] = now_ns();
		acct_enter(steps[i].state);
		b[i] = now_ns();
		if (i == 0)
			cls_seen = acct_cls_now;
		usleep((useconds_t)steps[i].ms * 1000);
	}
	for (size_t i = 0; i + 1 < NSTEPS; i++) {
		uint32_t k = acct_class_of(steps[i].state);
		lo[k] += a[i + 1] - b[i];
		hi[k] += b[i + 1] - a[i];
	}
	return NULL;
}

static void
check_classes(void)
{
	static unsigned char b[ACCT_STATS_MAX];
	struct acct_snap *before = calloc(1, sizeof *before),
	                 *after = calloc(1, sizeof *after);
	char why[200];
	REQUIRE(before && after);
	REQUIRE(acct_decode(b, acct_encode(b, 0, ACCT_NCLASS), before, why,
	                    sizeof why) == 0);
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, timed, NULL) == 0);
	pthread_join(t, NULL);
	REQUIRE(pthread_create(&t, NULL, io_thread, NULL) == 0);
	pthread_join(t, NULL);
	REQUIRE(acct_decode(b, acct_encode(b, 0, ACCT_NCLASS), after, why,
	                    sizeof why) == 0);
	/* the new time is in the slot the thread took (a freed one) */
	uint64_t got[ACCT_NCLASS] = {0};
	for (uint32_t i = 0; i < after->nthr; i++)
		for (int k = 0; k < ACCT_NCLASS; k++)
			got[k] += after->thr[i].ns[k] -
			          (i < before->nthr ? before->thr[i].ns[k] : 0);
	/* the I/O thread's 20 ms idle and 10 ms runtime are not there */
	CHECK_EQ_U64(after->sent - before->sent, 5);
	static const char *cls[] = {"useful", "waiting", "runtime", "idle"};
	for (int k = 0; k < ACCT_NCLASS; k++) {
		printf("live_account: %s %.3f ms, between %.3f and %.3f\n",
		       cls[k], got[k] / 1e6, lo[k] / 1e6, hi[k] / 1e6);
		/* 20 us: the TSC's ticks become ns at the rate measured */
		CHECK(got[k] + 20000 >= lo[k]);
		CHECK(got[k] <= hi[k] + 20000);
	}
	/* the fallback clock leaves every change to account.c */
	const char *c = getenv("DWORK_ACCOUNT_CLOCK");
	if (c && !strcmp(c, "monotonic"))
		CHECK(cls_seen == ACCT_CLS_UNKNOWN);
	else
		printf("live_account: the inline switch is %s\n",
		       cls_seen == ACCT_USEFUL ? "on (TSC)" : "off");
	acct_snap_free(before);
	acct_snap_free(after);
	free(before);
	free(after);
}

int
main(void)
{
	if (!acct_on) {
		printf(
		    "live_account: DWORK_ACCOUNT is off: nothing to check\n");
		return TEST_SKIP;
	}
	for (int f = 0; f < 4; f++) {
		REQUIRE(dw_register(names[f], nop) == DW_OK);
		ids[f] = dw_function_id(names[f]);
	}
	check_counts();
	check_classes();
	return tu_report("live_account");
}
