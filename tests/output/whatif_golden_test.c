/*
 * The what-if on hand-written bursts (ns) shaped like a pmap's master,
 * whose results its I/O thread takes in (docs/tracing.md, "What-if"):
 * the replay must tie the master's next hand-out to the result it
 * waited for, through the I/O thread, so that faster work moves it.
 */
#include <dwork/events.h>

#include "merge/replay.h"
#include "testutil.h"

#define H_WORK 7

/*
 * A result read while the I/O thread handles it.  Thread 2 (a worker's
 * executor, process 1) runs "work" 0..20 and sends its result at 20;
 * thread 1 (the master's I/O thread, process 0) idles 0..30, handles a
 * frame 30..32 and records the receive at 31, inside that handling;
 * thread 0 (the master, process 0) waits in pmap 0..33, then runs
 * 33..40.  The receive ends the idle (the I/O thread woke for it): on
 * the ideal network it comes at 20 + 1 (the handling before it kept),
 * the handling ends at 22, the master, woken 1 after it, runs 23..30:
 * T_ideal = 30 (40 if the receive ended no wait).  "work" 2x faster:
 * the result at 10, the master runs 13..20: 20 (40 before).
 */
static void
test_read_in_handling(void)
{
	rp_replay *r;
	rp_path p;
	uint64_t ideal, fast;

	REQUIRE(rp_new(3, &r) == DW_OK);
	REQUIRE(rp_state(r, 0, 0, 33, DWT_STATE_SCHEDULING) == DW_OK);
	REQUIRE(rp_state(r, 0, 33, 40, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 1, 0, 30, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_state(r, 1, 30, 32, DWT_STATE_SEND_RECEIVE) == DW_OK);
	REQUIRE(rp_state(r, 1, 32, 40, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_state(r, 2, 0, 20, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 2, 20, 40, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_msg(r, 2, 1, 20, 31, 1) == DW_OK);
	REQUIRE(rp_func(r, 2, 0, 20, H_WORK) == DW_OK);
	for (uint32_t i = 0; i < 3; i++)
		rp_thread_task(r, i, i < 2 ? 0 : 1);
	REQUIRE(rp_run(r, &ideal) == DW_OK);
	CHECK_EQ_U64(ideal, 30);
	REQUIRE(rp_critical_path(r, &p) == DW_OK);
	CHECK(p.nfns == 1 && p.fns[0].ns == 20);
	CHECK_EQ_U64(p.messages, 1);
	REQUIRE(rp_faster(r, H_WORK, 2, &fast) == DW_OK);
	CHECK_EQ_U64(fast, 20);
	printf("read_in_handling  T_ideal hand 30 measured %" PRIu64
	       "; work 2x faster hand 20 measured %" PRIu64 "\n",
	       ideal, fast);
	rp_free(r);
}

/* The trace of test_own_waker on r; tasks: set the processes. */
static void
own_waker_trace(rp_replay *r, int tasks)
{
	REQUIRE(rp_state(r, 0, 0, 24, DWT_STATE_SCHEDULING) == DW_OK);
	REQUIRE(rp_state(r, 0, 24, 30, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 1, 0, 20, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_state(r, 1, 20, 22, DWT_STATE_SEND_RECEIVE) == DW_OK);
	REQUIRE(rp_state(r, 1, 22, 30, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_state(r, 2, 0, 20, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 2, 20, 30, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_state(r, 3, 0, 23, DWT_STATE_SEND_RECEIVE) == DW_OK);
	REQUIRE(rp_state(r, 3, 23, 30, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_msg(r, 2, 1, 20, 21, 1) == DW_OK);
	REQUIRE(rp_func(r, 2, 0, 20, H_WORK) == DW_OK);
	for (uint32_t i = 0; i < 4 && tasks; i++)
		rp_thread_task(r, i, i < 2 ? 0 : i - 1);
}

/*
 * The master's wake goes to its own I/O thread's receive, not to a
 * burst of another process that ended later.  Thread 2 (process 1)
 * runs "work" 0..20 and sends at 20; thread 1 (the master's I/O
 * thread) idles 0..20, handles the frame 20..22 (the receive at 21);
 * thread 3 (process 2, unrelated) works 0..23; the master (thread 0)
 * waits in pmap 0..24 and runs 24..30.  T_ideal = 30.  "work" 2x
 * faster: the result at 10, the handling ends at 12, the master woken
 * 2 later runs 14..20, thread 3 still ends at 23: 23.  Tied to thread
 * 3's end instead (the rule for a wait nothing of its own process
 * explains, and what the replay does when it is not told the
 * processes), the master would not move: 30.
 */
static void
test_own_waker(void)
{
	rp_replay *r;
	uint64_t ideal, fast;

	REQUIRE(rp_new(4, &r) == DW_OK);
	own_waker_trace(r, 1);
	REQUIRE(rp_run(r, &ideal) == DW_OK);
	CHECK_EQ_U64(ideal, 30);
	REQUIRE(rp_faster(r, H_WORK, 2, &fast) == DW_OK);
	CHECK_EQ_U64(fast, 23);
	printf("own_waker         work 2x faster hand 23 measured %" PRIu64
	       "\n",
	       fast);
	rp_free(r);

	REQUIRE(rp_new(4, &r) == DW_OK);
	own_waker_trace(r, 0);
	REQUIRE(rp_run(r, &ideal) == DW_OK);
	CHECK_EQ_U64(ideal, 30);
	REQUIRE(rp_faster(r, H_WORK, 2, &fast) == DW_OK);
	CHECK_EQ_U64(fast, 30);
	rp_free(r);
}

/*
 * An Idle wait (an I/O thread between frames) is not tied to a receive
 * of its own process: it is woken by frames from elsewhere.  Thread 1
 * (process 0) receives from thread 2 (process 1, "work" 0..20) at 20
 * inside its wait 0..21 and runs 21..22; thread 0 (process 0) idles
 * 0..40, woken by thread 3 (process 2), whose frame handling ends at
 * 38, and handles one 40..41.  "work" 2x faster moves thread 1, not
 * thread 0: T_ideal stays 41.
 */
static void
test_idle_not_own(void)
{
	rp_replay *r;
	uint64_t ideal, fast;

	REQUIRE(rp_new(4, &r) == DW_OK);
	REQUIRE(rp_state(r, 0, 0, 40, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_state(r, 0, 40, 41, DWT_STATE_SEND_RECEIVE) == DW_OK);
	REQUIRE(rp_state(r, 1, 0, 21, DWT_STATE_WAITING_MESSAGE) == DW_OK);
	REQUIRE(rp_state(r, 1, 21, 22, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 1, 22, 41, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_state(r, 2, 0, 20, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 2, 20, 41, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_state(r, 3, 0, 38, DWT_STATE_SEND_RECEIVE) == DW_OK);
	REQUIRE(rp_state(r, 3, 38, 41, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_msg(r, 2, 1, 20, 21, 1) == DW_OK);
	REQUIRE(rp_func(r, 2, 0, 20, H_WORK) == DW_OK);
	for (uint32_t i = 0; i < 4; i++)
		rp_thread_task(r, i, i < 2 ? 0 : i - 1);
	REQUIRE(rp_run(r, &ideal) == DW_OK);
	CHECK_EQ_U64(ideal, 41);
	REQUIRE(rp_faster(r, H_WORK, 2, &fast) == DW_OK);
	CHECK_EQ_U64(fast, 41);
	rp_free(r);
}

int
main(void)
{
	test_read_in_handling();
	test_own_waker();
	test_idle_not_own();
	return tu_report("whatif_golden");
}
