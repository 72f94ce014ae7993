/*
 * Deferred re-arming (src/runtime/rearm.c): after a stream of fetches
 * the links' I/O interest is left off between read turns, and the I/O
 * threads turn it back on within a millisecond.  What nobody else reads
 * must still be read:
 *
 *   - the worker's link during a 3 s call that follows the stream: the
 *     master pings every 100 ms and declares the worker dead after
 *     1.5 s of silence, so the worker's I/O thread must answer;
 *   - the master's link while the master sleeps 3 s outside dwork right
 *     after the stream: the pongs must be read there, or the worker is
 *     declared dead;
 *   - an interrupt sent 200 ms into a 5 s call that follows a stream: the
 *     call ends with DW_EINTR well before its 5 s.
 *
 * Each stream of 3,000 calls starts the mode (32 re-arms within 10 ms).
 */
#include <time.h>

#include "rt_util.h"
#include "testutil.h"

static double
now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void
stream(int w)
{
	for (int i = 0; i < 3000; i++) {
		void *res = NULL;
		size_t n = 0;
		int v = -1;
		REQUIRE(dw_remotecall_fetch(w, "echo", &i, sizeof i, &res,
		                            &n) == DW_OK);
		if (n == sizeof v)
			memcpy(&v, res, sizeof v);
		free(res);
		if (v != i) {
			CHECK((v) == i);
			return;
		}
	}
}

/* A 3 s call after the stream: the worker answers the pings meanwhile
 * (the timeout is half of it: a loaded machine may starve a process for
 * a few hundred ms, never for the whole call). */
static void
test_long_call(int w)
{
	stream(w);
	int ms = 3000;
	void *res = NULL;
	size_t n = 0;
	CHECK(dw_remotecall_fetch(w, "sleeper", &ms, sizeof ms, &res, &n) ==
	      DW_OK);
	CHECK((n) == sizeof ms);
	free(res);
}

/* The master sleeps outside dwork after the stream: its I/O thread reads
 * the pongs. */
static void
test_master_away(int w)
{
	stream(w);
	usleep(3000000);
	void *res = NULL;
	size_t n = 0;
	int v = 7;
	CHECK(dw_remotecall_fetch(w, "echo", &v, sizeof v, &res, &n) == DW_OK);
	free(res);
}

/* An interrupt 200 ms into a 5 s call after the stream. */
static void
test_interrupt(int w)
{
	dw_future *f;
	stream(w);
	REQUIRE(dw_remotecall(w, "until_interrupted", NULL, 0, &f) == DW_OK);
	usleep(200000);
	double t0 = now_ms();
	CHECK(dw_interrupt(&w, 1) == DW_OK);
	CHECK((dw_future_wait_timeout(f, 20000)) == DW_EINTR);
	double took = now_ms() - t0;
	CHECK(took < 4000); /* the call alone runs 5 s */
	dw_future_free(f);
	void *res = NULL;
	size_t n = 0;
	int v = 8;
	CHECK(dw_remotecall_fetch(w, "echo", &v, sizeof v, &res, &n) == DW_OK);
	free(res);
}

int
main(int argc, char **argv)
{
	dw_options o = {.heartbeat_ms = 100, .heartbeat_timeout_ms = 1500};
	int w;

	if (dw_init_opts(&argc, &argv, &o) != DW_OK)
		return 1;
	REQUIRE(dw_addprocs(1, NULL, &w) == 1);
	test_long_call(w);
	test_master_away(w);
	test_interrupt(w);
	CHECK(dw_finalize() == DW_OK);
	return tu_report("runtime_rearm");
}
