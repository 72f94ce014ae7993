/*
 * One pool per process (docs/runtime.md, "Flow control"): a worker
 * flooded at once over three links, by the master and by two other
 * workers, holds at most ONE bound plus the documented 32 MiB, not one
 * bound per link (the bound is 64 MiB, so three per-link bounds, 192
 * MiB, would fail the check).  The flooded worker is held 1.5 s in its
 * first call so that its pool fills (the test fails if it does not);
 * a sampler thread follows its RSS.  Every call runs in the end, and it
 * answers heartbeats throughout.
 */
#include <pthread.h>
#include <time.h>

#include "rt_util.h"
#include "flood_util.h"
#include "testutil.h"

#define BOUND (64u * MIB)
#define SLACK (32u * MIB) /* the documented constant */
#define NEACH 100
#define NPEER 2 /* flooding workers, besides the master */
#define GATE  1500

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

/* On a worker: NEACH calls of nap(1 ms) with 1 MiB arguments to the
 * worker named in arg. */
static int
flood_to(const void *arg, size_t len, dw_reply *r)
{
	int to;
	if (len != sizeof to)
		return dw_reply_error(r, "expected an id");
	memcpy(&to, arg, sizeof to);
	char *buf = calloc(1, MIB);
	if (!buf)
		return dw_reply_error(r, "out of memory");
	int ms = 1, err = DW_OK;
	memcpy(buf, &ms, sizeof ms);
	for (int i = 0; i < NEACH && err == DW_OK; i++)
		err = dw_remote_do(to, "nap", buf, MIB);
	free(buf);
	return err ? dw_reply_error(r, "%s", dw_errmsg()) : 0;
}
DW_REGISTER(flood_to)

static int
ran_on(int w)
{
	int ran = -1;
	void *res = NULL;
	size_t len;
	if (dw_remotecall_fetch(w, "get_counter", NULL, 0, &res, &len) ==
	        DW_OK &&
	    len == sizeof(int))
		ran = *(int *)res;
	free(res);
	return ran;
}

int
main(int argc, char **argv)
{
	dw_options o = {.procs = 1 + NPEER,
	                .heartbeat_ms = 100,
	                .heartbeat_timeout_ms = 1500,
	                .job_queue_bytes = BOUND,
	                .send_queue_bytes = BOUND};
	REQUIRE(dw_init_opts(&argc, &argv, &o) == DW_OK);
	REQUIRE(dw_nworkers() == 1 + NPEER);
	int ids[1 + NPEER];
	dw_workers(ids, 1 + NPEER);
	int a = ids[0], apid = pid_of(a);
	REQUIRE(apid > 0);
	char *buf = calloc(1, MIB);
	REQUIRE(buf);
	struct sampler s = {.pid = apid, .max = proc_rss_kb(apid)};
	long a0 = s.max;
	pthread_t th;
	REQUIRE(pthread_create(&th, NULL, sample, &s) == 0);

	int ms = GATE;
	CHECK(dw_remote_do(a, "nap", &ms, sizeof ms) == DW_OK);
	dw_future *f[NPEER];
	for (int i = 0; i < NPEER; i++)
		CHECK(dw_remotecall(ids[1 + i], "flood_to", &a, sizeof a,
		                    &f[i]) == DW_OK);
	ms = 1;
	memcpy(buf, &ms, sizeof ms);
	for (int i = 0; i < NEACH; i++)
		CHECK(dw_remote_do(a, "nap", buf, MIB) == DW_OK);
	for (int i = 0; i < NPEER; i++) {
		CHECK(dw_future_wait_timeout(f[i], 60000) == DW_OK);
		dw_future_free(f[i]);
	}
	/* the last calls from the peers may still be queued: wait */
	int want = 1 + (1 + NPEER) * NEACH, ran = -1;
	for (int i = 0; i < 1000 && (ran = ran_on(a)) != want; i++)
		usleep(10000);
	CHECK(ran == want);
	s.stop = 1;
	pthread_join(th, NULL);
	long grew = s.max - a0;
	CHECK(dw_nworkers() == 1 + NPEER); /* never declared dead */
	if (!TU_SANITIZED) { /* ASan's quarantine holds freed memory */
		CHECK(grew * 1024L < (long)(BOUND + SLACK));
		CHECK(grew * 1024L > (long)BOUND / 2); /* the pool filled */
	}
	printf("worker flooded over %d links (one pool of %u MiB): its RSS "
	       "%ld -> %ld KiB, %+ld KiB (%.2f bounds; the limit is %u + %u "
	       "MiB)\n",
	       1 + NPEER, BOUND / MIB, a0, s.max, grew,
	       (double)grew * 1024 / BOUND, BOUND / MIB, SLACK / MIB);
	printf("bench: flood.three_links_worker_rss_growth_kib = %ld\n", grew);
	free(buf);
	dw_finalize();
	return tu_report("flood_links");
}
