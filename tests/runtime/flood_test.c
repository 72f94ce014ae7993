/*
 * Floods of dw_remote_do with 1 MiB arguments stay bounded (flow
 * control, docs/runtime.md): a stopped worker (SIGSTOP) grants nothing,
 * so the master sends no 1 MiB call and only the 1 KiB calls that fit
 * in a link's first window (64 KiB), and the _timeout variant gives
 * DW_ETIMEDOUT (0 ms: DW_EAGAIN); against a slow worker (a 50 ms
 * function) neither side's RSS grows past the bound plus the documented
 * constant, and the worker keeps answering heartbeats (a short heartbeat
 * timeout never declares it dead).
 */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "rt_util.h"
#include "flood_util.h"
#include "testutil.h"

#define BOUND   (16u * MIB)
#define SLACK   (32u * MIB) /* the documented constant */
#define NSLOW   120
#define SLOW_MS 50

static int
slow_sink(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	(void)r;
	usleep(SLOW_MS * 1000);
	__atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
	return 0;
}
DW_REGISTER(slow_sink)

int
main(int argc, char **argv)
{
	dw_options o = {.procs = 2,
	                .heartbeat_ms = 100,
	                .heartbeat_timeout_ms = 1500,
	                .job_queue_bytes = BOUND,
	                .send_queue_bytes = BOUND};
	REQUIRE(dw_init_opts(&argc, &argv, &o) == DW_OK);
	REQUIRE(dw_nworkers() == 2);
	int ids[2];
	dw_workers(ids, 2);
	int wp[2] = {pid_of(ids[0]), pid_of(ids[1])};
	REQUIRE(wp[0] > 0 && wp[1] > 0);
	char *buf1m = malloc(MIB);
	REQUIRE(buf1m);
	memset(buf1m, 'x', MIB);
	long m0 = proc_rss_kb(getpid());

	/* a stopped worker: room for BOUND, then the caller would block */
	REQUIRE(stop_proc(wp[0]) == 0);
	int sent = 0, err = DW_OK;
	double t0 = now_ms();
	while (sent < 200 &&
	       (err = dw_remote_do_timeout(ids[0], "slow_sink", buf1m, MIB,
	                                   200)) == DW_OK)
		sent++;
	double took = now_ms() - t0;
	long m_stop = proc_rss_kb(getpid());
	CHECK(err == DW_ETIMEDOUT);
	CHECK(strstr(dw_errmsg(), "flow control") != NULL);
	CHECK(dw_remote_do_timeout(ids[0], "slow_sink", buf1m, MIB, 0) ==
	      DW_EAGAIN);
	CHECK(sent == 0); /* nobody there to grant a window */
	CHECK(took < 5000);
	/* calls of 1 KiB: as many as the link's first window holds */
	int small = 0;
	while (small < 200 && dw_remote_do_timeout(ids[0], "slow_sink", buf1m,
	                                           1024, 0) == DW_OK)
		small++;
	CHECK(small == (64 << 10) / (4 + 9 + 1024));
	printf("stopped worker: %d calls of 1 KiB fit the first window\n",
	       small);
	if (!TU_SANITIZED) /* ASan's quarantine holds freed memory */
		CHECK((m_stop - m0) * 1024L < (long)(BOUND + SLACK));
	printf("stopped worker: %d calls of 1 MiB sent before the link was "
	       "full; master RSS %+ld KiB\n",
	       sent, m_stop - m0);
	printf("bench: flood.stopped_master_rss_growth_kib = %ld\n",
	       m_stop - m0);
	/* it is declared dead after the heartbeat timeout; a blocked
	 * caller then fails with DW_EEXITED */
	t0 = now_ms();
	err = dw_remote_do(ids[0], "slow_sink", buf1m, MIB);
	CHECK(err == DW_EEXITED);
	printf("blocked caller released after %.0f ms: %s\n", now_ms() - t0,
	       dw_errmsg());
	kill(wp[0], SIGKILL);

	/* a slow worker: the flood runs at its pace, both sides bounded */
	long w0 = proc_rss_kb(wp[1]), wmax = w0, mmax = proc_rss_kb(getpid());
	m0 = mmax;
	t0 = now_ms();
	for (int i = 0; i < NSLOW; i++) {
		CHECK(dw_remote_do(ids[1], "slow_sink", buf1m, MIB) == DW_OK);
		long w = proc_rss_kb(wp[1]), m = proc_rss_kb(getpid());
		wmax = w > wmax ? w : wmax;
		mmax = m > mmax ? m : mmax;
	}
	void *res;
	size_t len;
	CHECK(dw_remotecall_fetch(ids[1], "get_counter", NULL, 0, &res, &len) ==
	      DW_OK);
	CHECK(len == sizeof(int) && *(int *)res == NSLOW);
	free(res);
	double total = now_ms() - t0;
	CHECK(total >= NSLOW * SLOW_MS - 5);
	CHECK(dw_nworkers() == 1); /* the slow one was never declared dead */
	if (!TU_SANITIZED)         /* ASan's quarantine holds freed memory */
		CHECK((wmax - w0) * 1024L < (long)(BOUND + SLACK));
	if (!TU_SANITIZED) /* ASan's quarantine holds freed memory */
		CHECK((mmax - m0) * 1024L < (long)(BOUND + SLACK));
	printf("slow worker: %d x 1 MiB in %.0f ms; worker RSS %+ld KiB, "
	       "master %+ld KiB (bound %u MiB + %u MiB)\n",
	       NSLOW, total, wmax - w0, mmax - m0, BOUND / MIB, SLACK / MIB);
	printf("bench: flood.slow_worker_rss_growth_kib = %ld\n", wmax - w0);
	printf("bench: flood.slow_master_rss_growth_kib = %ld\n", mmax - m0);
	free(buf1m);
	dw_finalize();
	return tu_report("flood");
}
