/*
 * Flow control is per link (docs/runtime.md, "Flow control"): a worker
 * flooded at once by the master and by another worker holds at most
 * the bound plus the documented 32 MiB for each of the two links.  The
 * flooded worker is held 1.5 s in its first call so that both links
 * fill; a sampler thread follows its RSS.  Every call runs in the end,
 * and it answers heartbeats throughout.
 */
#include <pthread.h>
#include <time.h>

#include "rt_util.h"
#include "testutil.h"

#define MIB   (1u << 20)
#define BOUND (16u * MIB)
#define SLACK (32u * MIB) /* the documented constant, per link */
#define NEACH 60
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

static long
proc_rss_kb(int pid)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", pid);
	FILE *f = fopen(path, "r");
	long kb = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

static int
pid_of(int w)
{
	void *res;
	size_t n;
	int pid = -1;
	if (dw_remotecall_fetch(w, "whoami", NULL, 0, &res, &n) == DW_OK) {
		pid = ((int *)res)[1];
		free(res);
	}
	return pid;
}

struct sampler {
	int pid;
	long max;
	volatile int stop;
};

static void *
sample(void *p)
{
	struct sampler *s = p;
	while (!s->stop) {
		long kb = proc_rss_kb(s->pid);
		s->max = kb > s->max ? kb : s->max;
		usleep(2000);
	}
	return NULL;
}

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
	int a = ids[0], b = ids[1], apid = pid_of(a);
	REQUIRE(apid > 0);
	char *buf = calloc(1, MIB);
	REQUIRE(buf);
	struct sampler s = {.pid = apid, .max = proc_rss_kb(apid)};
	long a0 = s.max;
	pthread_t th;
	REQUIRE(pthread_create(&th, NULL, sample, &s) == 0);

	int ms = GATE;
	CHECK(dw_remote_do(a, "nap", &ms, sizeof ms) == DW_OK);
	dw_future *f;
	CHECK(dw_remotecall(b, "flood_to", &a, sizeof a, &f) == DW_OK);
	ms = 1;
	memcpy(buf, &ms, sizeof ms);
	for (int i = 0; i < NEACH; i++)
		CHECK(dw_remote_do(a, "nap", buf, MIB) == DW_OK);
	CHECK(dw_future_wait_timeout(f, 30000) == DW_OK);
	dw_future_free(f);
	/* the last calls from b may still be queued on a: wait for them */
	int ran = -1;
	for (int i = 0; i < 500 && ran != 1 + 2 * NEACH; i++) {
		void *res = NULL;
		size_t len;
		ran = -1;
		if (dw_remotecall_fetch(a, "get_counter", NULL, 0, &res,
		                        &len) == DW_OK &&
		    len == sizeof(int))
			ran = *(int *)res;
		free(res);
		if (ran != 1 + 2 * NEACH)
			usleep(10000);
	}
	CHECK(ran == 1 + 2 * NEACH);
	s.stop = 1;
	pthread_join(th, NULL);
	long grew = s.max - a0;
	CHECK(dw_nworkers() == 2); /* never declared dead */
	if (!TU_SANITIZED)         /* ASan's quarantine holds freed memory */
		CHECK(grew * 1024L < 2L * (BOUND + SLACK));
	printf("worker flooded over 2 links (bound %u MiB each): its RSS "
	       "%+ld KiB (%.2f bounds)\n",
	       BOUND / MIB, grew, (double)grew * 1024 / BOUND);
	printf("bench: flood.two_links_worker_rss_growth_kib = %ld\n", grew);
	free(buf);
	dw_finalize();
	return tu_report("flood_links");
}
