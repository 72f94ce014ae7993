/*
 * A state change at a time the caller read (dwt_state_push_event_tsc,
 * dwt_state_pop_event_tsc: dwork's accounting hands over its TSC read at
 * a change of class): with the TSC as the tracer's clock the record
 * carries exactly that value, not a later read of its own (a push given
 * a value read 2 ms before the call is 2 ms before the event recorded
 * just after it); with the clock source the value is ignored and the
 * records are still in order.  Fields as with the plain calls.
 */
#include <stdio.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>

#include <dwork/trace.h>

#include "tracefile/reader.h"
#include "testutil.h"

static void
nap_ms(int ms)
{
	struct timespec ts = {0, ms * 1000000L};
	nanosleep(&ts, NULL);
}

/* Writes: push at t0 (read 2 ms before), event, pop at t1 (read 2 ms
 * before), event; returns t0 and t1. */
static void
write_records(const char *dir, int clock, uint64_t t[2])
{
	dwt_config c;
	dwt_config_defaults(&c);
	c.dir = dir;
	c.program = "tsc";
	c.clock = clock;
	REQUIRE(dwt_init(&c) == DW_OK);
	dwt_event(1, 1); /* the thread's first record: registers it */
	t[0] = __rdtsc();
	nap_ms(2);
	dwt_state_push_event_tsc(t[0], DWT_STATE_RUNNING, 71000001, 42);
	dwt_event(1, 2);
	t[1] = __rdtsc();
	nap_ms(2);
	dwt_state_pop_event_tsc(t[1], 71000001, 0);
	dwt_event(1, 3);
	dwt_fini();
}

static void
check(const char *dir, const uint64_t t[2])
{
	rd_errlist errs;
	rd_errlist_init(&errs, stderr);
	rd_dir *d = NULL;
	REQUIRE(rd_dir_open(dir, &errs, &d) == DW_OK);
	REQUIRE(d->nprocs == 1 && d->procs[0].nthreads == 1);
	rd_thread *th;
	REQUIRE(rd_thread_open(d->procs[0].thread_paths[0], &errs, &th) ==
	        DW_OK);
	int tsc = rd_thread_header(th)->clock == FMT_CLOCK_TSC;
	rd_rec r[8];
	size_t n = 0;
	while (n < 8 && rd_thread_next(th, &r[n]))
		n++;
	/* event, push + its event, event, event + pop, event, thread end */
	REQUIRE(n >= 7);
	CHECK_EQ_U64(r[1].kind, FMT_R_STATE_PUSH);
	CHECK_EQ_U64(r[1].u.state.state, DWT_STATE_RUNNING);
	CHECK_EQ_U64(r[2].u.event.type, 71000001);
	CHECK_EQ_U64(r[2].u.event.value, 42);
	CHECK_EQ_U64(r[4].u.event.type, 71000001);
	CHECK_EQ_U64(r[4].u.event.value, 0);
	CHECK_EQ_U64(r[5].kind, FMT_R_STATE_POP);
	for (size_t i = 1; i < n; i++)
		CHECK(r[i].ticks >= r[i - 1].ticks);
	if (tsc) {
		CHECK_EQ_U64(r[1].ticks, t[0]);
		CHECK_EQ_U64(r[5].ticks, t[1]);
		/* 2 ms of ticks between the given time and the next event */
		uint64_t two_ms = rd_thread_header(th)->ticks_per_s / 500;
		CHECK(r[3].ticks - r[1].ticks >= two_ms);
		CHECK(r[6].ticks - r[5].ticks >= two_ms);
	}
	rd_thread_close(th);
	rd_dir_close(d);
	rd_errlist_free(&errs);
}

int
main(void)
{
	char dir[512];
	snprintf(dir, sizeof dir, "%s", tu_tmpdir("tsc"));
	int clocks[] = {DWT_CLOCK_AUTO, DWT_CLOCK_MONOTONIC_RAW};
	for (int i = 0; i < 2; i++) {
		char sub[600];
		uint64_t t[2];
		snprintf(sub, sizeof sub, "%s/c%d", dir, i);
		write_records(sub, clocks[i], t);
		check(sub, t);
	}
	tu_rmtree(dir);
	return tu_report("trace_tsc");
}
#else
int
main(void)
{
	printf("trace_tsc: no TSC on this machine: skipped\n");
	return 0;
}
#endif
