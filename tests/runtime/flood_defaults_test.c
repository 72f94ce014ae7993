/*
 * Floods under the default bounds (job_queue_bytes and send_queue_bytes
 * of 256 MiB, docs/runtime.md "Flow control"): a flood of 1 MiB
 * dw_remote_do arguments stays under the bound plus the documented
 * 32 MiB on either side, so far under 1 GiB.  Against a stopped worker
 * (it grants no window) the master sends none and refuses with
 * DW_ETIMEDOUT; against a worker held 1.5 s in its first call the
 * worker really fills its queue to near the bound (the test fails if
 * it does not), drains it, runs every call, and answers heartbeats
 * throughout (a 1.5 s timeout never declares it dead).
 */
#include <signal.h>
#include <time.h>

#include "rt_util.h"
#include "flood_util.h"
#include "testutil.h"

#define BOUND (256u * MIB) /* the default of both bounds */
#define SLACK (32u * MIB)  /* the documented constant */
#define NFAST 400
#define GATE  1500 /* ms the first call holds the worker's executor */

static int
nap(const void *arg, size_t len, dw_reply *r)
{
	int ms = 0;
	(void)r;
	if (len >= sizeof ms)
		memcpy(&ms, arg, sizeof ms);
	usleep((useconds_t)ms * 1000u);
	__atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
	return 0;
}
DW_REGISTER(nap)

static int
within(long kib)
{
	return TU_SANITIZED || kib * 1024L < (long)(BOUND + SLACK);
}

/* A stopped worker: the master holds at most BOUND, then refuses. */
static void
flood_stopped(int w, int pid, char *buf)
{
	long m0 = proc_rss_kb(getpid());
	REQUIRE(stop_proc(pid) == 0);
	int sent = 0, err = DW_OK, ms = 0;
	memcpy(buf, &ms, sizeof ms);
	while (sent < 2 * (int)(BOUND / MIB) &&
	       (err = dw_remote_do_timeout(w, "nap", buf, MIB, 200)) == DW_OK)
		sent++;
	long grew = proc_rss_kb(getpid()) - m0;
	CHECK(err == DW_ETIMEDOUT);
	CHECK(sent == 0); /* a stopped worker grants no window */
	CHECK(within(grew));
	printf("stopped worker, default bounds: %d calls of 1 MiB sent "
	       "before the link was full; master RSS %+ld KiB\n",
	       sent, grew);
	printf("bench: flood.default_stopped_master_rss_growth_kib = %ld\n",
	       grew);
	/* its queue is freed once it is gone: the next phase's baseline */
	kill(pid, SIGKILL);
	for (int i = 0; i < 500 && dw_nworkers() != 1; i++)
		usleep(10000);
	CHECK(dw_nworkers() == 1);
}

/* A worker held GATE ms in its first call: its queue fills, then
 * drains at 1 ms a call. */
static void
flood_gated(int w, int pid, char *buf)
{
	long w0 = proc_rss_kb(pid), m0 = proc_rss_kb(getpid());
	long wmax = w0, mmax = m0;
	int ms = GATE;
	double t0 = now_ms();
	memcpy(buf, &ms, sizeof ms);
	CHECK(dw_remote_do(w, "nap", buf, MIB) == DW_OK);
	ms = 1;
	memcpy(buf, &ms, sizeof ms);
	for (int i = 0; i < NFAST; i++) {
		CHECK(dw_remote_do(w, "nap", buf, MIB) == DW_OK);
		long wk = proc_rss_kb(pid), mk = proc_rss_kb(getpid());
		wmax = wk > wmax ? wk : wmax;
		mmax = mk > mmax ? mk : mmax;
	}
	void *res;
	size_t len;
	CHECK(dw_remotecall_fetch(w, "get_counter", NULL, 0, &res, &len) ==
	      DW_OK);
	CHECK(len == sizeof(int) && *(int *)res == NFAST + 1);
	free(res);
	double total = now_ms() - t0;
	CHECK(total >= GATE + NFAST - 5);
	CHECK(dw_nworkers() == 1); /* it answered heartbeats throughout */
	CHECK(within(wmax - w0));
	CHECK(within(mmax - m0));
	/* the flood really reached the bound: the test can fail */
	CHECK(TU_SANITIZED || (wmax - w0) * 1024L > (long)(BOUND / 2));
	printf("gated worker, default bounds: %d x 1 MiB in %.0f ms; worker "
	       "RSS %+ld KiB, master %+ld KiB (bound %u MiB + %u MiB)\n",
	       NFAST + 1, total, wmax - w0, mmax - m0, BOUND / MIB,
	       SLACK / MIB);
	printf("bench: flood.default_worker_rss_growth_kib = %ld\n", wmax - w0);
	printf("bench: flood.default_master_rss_growth_kib = %ld\n", mmax - m0);
}

int
main(int argc, char **argv)
{
	/* bounds left at 0: the defaults (unless the environment sets
	 * them, which this test must not inherit) */
	unsetenv("DWORK_JOB_QUEUE");
	unsetenv("DWORK_SEND_QUEUE");
	dw_options o = {
	    .procs = 2, .heartbeat_ms = 100, .heartbeat_timeout_ms = 1500};
	REQUIRE(dw_init_opts(&argc, &argv, &o) == DW_OK);
	REQUIRE(dw_nworkers() == 2);
	int ids[2];
	dw_workers(ids, 2);
	int wp[2] = {pid_of(ids[0]), pid_of(ids[1])};
	REQUIRE(wp[0] > 0 && wp[1] > 0);
	char *buf = malloc(MIB);
	REQUIRE(buf);
	memset(buf, 'x', MIB);
	flood_stopped(ids[0], wp[0], buf);
	flood_gated(ids[1], wp[1], buf);
	free(buf);
	dw_finalize();
	return tu_report("flood_defaults");
}
