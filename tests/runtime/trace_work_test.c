/*
 * Tracing of channels, pools, pmap and worker-to-worker calls: a traced
 * cluster runs them, dw_finalize merges, and the Paraver trace passes the
 * strict checker, carries the channel / pool / pmap / link events with
 * their labels, and draws worker-to-worker calls as communications
 * between worker tasks.  The whole run is repeated RUNS times (each a
 * fresh process: dw_init runs once per process) in one ctest invocation,
 * and no message of any run may be received before it was sent: an
 * intermittent clock disagreement fails the suite.
 */
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "prv_check.h"
#include "rt_util.h"
#include "testutil.h"

/* {int target}: calls echo on target (another worker). */
static int
tw_relay(const void *arg, size_t len, dw_reply *r)
{
	int to;
	if (len != sizeof to)
		return dw_reply_error(r, "bad argument");
	memcpy(&to, arg, sizeof to);
	void *res;
	size_t n;
	if (dw_remotecall_fetch(to, "echo", "w2w", 3, &res, &n))
		return dw_reply_error(r, "%s", dw_errmsg());
	return dw_reply_take(r, res, n);
}
DW_REGISTER(tw_relay)

static int
tw_square(const void *arg, size_t len, dw_reply *r)
{
	long x = 0;
	if (len == sizeof x)
		memcpy(&x, arg, sizeof x);
	x *= x;
	return dw_reply_set(r, &x, sizeof x);
}
DW_REGISTER(tw_square)

struct facts {
	uint64_t w2w_comms;  /* sender and receiver both workers */
	uint64_t chan_ev[8]; /* DW_EV_CHANNEL values */
	uint64_t pool_ev, pmap_ev, item_ev_workers, peer_ev;
	uint64_t comms, backwards; /* a receive time before its send time */
	uint64_t lrecv_late;       /* logical receive after the physical */
};

#define RUNS 20

static void
read_facts(const char *prv, struct facts *f)
{
	FILE *fp = fopen(prv, "r");
	REQUIRE(fp);
	char line[8192];
	memset(f, 0, sizeof *f);
	REQUIRE(fgets(line, sizeof line, fp)); /* header */
	while (fgets(line, sizeof line, fp)) {
		uint64_t v[64];
		int n = 0;
		for (char *s = line; n < 64 && *s && *s != '\n';) {
			v[n++] = strtoull(s, &s, 10);
			if (*s != ':')
				break;
			s++;
		}
		if (v[0] == 3 && n >= 15 && v[3] >= 2 && v[9] >= 2 &&
		    v[3] != v[9])
			f->w2w_comms++;
		if (v[0] == 3 && n >= 15) {
			f->comms++;
			f->backwards += v[11] < v[5] || v[12] < v[6] ||
			                v[11] < v[6] || v[12] < v[5];
			f->lrecv_late += v[11] > v[12];
		}
		if (v[0] != 2 || n < 8)
			continue;
		for (int i = 6; i + 1 < n; i += 2) {
			uint64_t t = v[i], val = v[i + 1];
			if (t == DW_EV_CHANNEL && val < 8)
				f->chan_ev[val]++;
			else if (t == DW_EV_POOL)
				f->pool_ev++;
			else if (t == DW_EV_PMAP && val)
				f->pmap_ev++;
			else if (t == DW_EV_PMAP_ITEM && val && v[3] >= 2)
				f->item_ev_workers++;
			else if (t == DW_EV_PEER)
				f->peer_ev++;
		}
	}
	fclose(fp);
}

static int
pcf_has(const char *pcf, const char *label)
{
	FILE *fp = fopen(pcf, "r");
	char line[1024];
	int found = 0;
	while (fp && !found && fgets(line, sizeof line, fp))
		found = strstr(line, label) != NULL;
	if (fp)
		fclose(fp);
	return found;
}

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void
traced_run(void)
{
	double t0 = now_s();
	int ids[3];
	REQUIRE(dw_addprocs(3, NULL, ids) == 3);
	/* a channel owned by a worker, used by the master */
	dw_channel *ch;
	REQUIRE(dw_channel_new(ids[0], 2, &ch) == DW_OK);
	for (int i = 0; i < 4; i++) {
		void *d;
		size_t n;
		CHECK(dw_channel_put(ch, &i, sizeof i) == DW_OK);
		CHECK(dw_channel_isready(ch) == 1);
		CHECK(dw_channel_take(ch, &d, &n) == DW_OK);
		free(d);
	}
	CHECK(dw_channel_close(ch) == DW_OK);
	dw_channel_free(ch);
	/* worker to worker, both ways of opening the link */
	void *res;
	size_t n;
	for (int k = 0; k < 3; k++) {
		CHECK(dw_remotecall_fetch(ids[2], "tw_relay", &ids[0],
		                          sizeof(int), &res, &n) == DW_OK);
		free(res);
		CHECK(dw_remotecall_fetch(ids[0], "tw_relay", &ids[1],
		                          sizeof(int), &res, &n) == DW_OK);
		free(res);
	}
	/* a pool call and a pmap */
	CHECK(dw_pool_remotecall_fetch(NULL, "echo", "p", 1, &res, &n) ==
	      DW_OK);
	free(res);
	static long xs[64];
	static dw_buf in[64];
	static dw_result out[64];
	for (int i = 0; i < 64; i++) {
		xs[i] = i;
		in[i].data = &xs[i];
		in[i].len = sizeof xs[i];
	}
	CHECK(dw_pmap("tw_square", in, 64, out, NULL) == DW_OK);
	dw_results_free(out, 64);
	printf("traced run: %.2f s\n", now_s() - t0);
}

/* RUNS fresh processes of this test, one after the other. */
static int
run_all(char **argv)
{
	int bad = 0;

	setenv("DW_TW_RUN", "1", 1);
	for (int i = 0; i < RUNS; i++) {
		int st;
		pid_t p = fork();

		REQUIRE(p >= 0);
		if (p == 0) {
			execv("/proc/self/exe", argv);
			_exit(127);
		}
		REQUIRE(waitpid(p, &st, 0) == p);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "trace_work: run %d of %d failed\n",
			        i + 1, RUNS);
			bad++;
		}
	}
	printf("trace_work: %d runs, %d failed\n", RUNS, bad);
	return bad ? 1 : 0;
}

int
main(int argc, char **argv)
{
	char dir[600];
	if (argc == 1 && !getenv("DW_TW_RUN"))
		return run_all(argv);
	snprintf(dir, sizeof dir, "%s", tu_tmpdir("trace-work"));
	dw_options o = {.trace = dir, .no_merge = 0};
	if (dw_init_opts(&argc, &argv, &o) != DW_OK)
		return 1;
	traced_run();
	fflush(stdout);
	CHECK(dw_finalize() == DW_OK);
	char prefix[700], prv[800], pcf[800], err[1024];
	snprintf(prefix, sizeof prefix, "%s/trace", dir);
	snprintf(prv, sizeof prv, "%s.prv", prefix);
	snprintf(pcf, sizeof pcf, "%s.pcf", prefix);
	pc_result r;
	if (prv_check(prefix, PC_ALL, &r, err, sizeof err) != 0) {
		fprintf(stderr, "strict checker: %s\n", err);
		tu_failures++;
	}
	struct facts f;
	read_facts(prv, &f);
	printf("trace: %" PRIu64 " worker-to-worker communications, channel "
	       "ops put %" PRIu64 " take %" PRIu64 " isready %" PRIu64
	       " close %" PRIu64 ", %" PRIu64 " pmap batches, %" PRIu64
	       " items on workers, %" PRIu64 " links\n",
	       f.w2w_comms, f.chan_ev[DW_CHAN_PUT], f.chan_ev[DW_CHAN_TAKE],
	       f.chan_ev[DW_CHAN_READY], f.chan_ev[DW_CHAN_CLOSE], f.pmap_ev,
	       f.item_ev_workers, f.peer_ev);
	printf("trace: %" PRIu64 " communications, %" PRIu64
	       " received before their send, %" PRIu64
	       " with the logical receive after the physical\n",
	       f.comms, f.backwards, f.lrecv_late);
	CHECK(f.backwards == 0);
	/* 6 relayed calls: a call and a result each */
	CHECK(f.w2w_comms >= 12);
	CHECK(f.chan_ev[DW_CHAN_PUT] == 4 && f.chan_ev[DW_CHAN_TAKE] == 4);
	CHECK(f.chan_ev[DW_CHAN_READY] == 4 && f.chan_ev[DW_CHAN_CLOSE] == 1);
	CHECK(f.chan_ev[0] >= 13); /* each operation ends */
	CHECK(f.pool_ev >= 2);
	CHECK(f.pmap_ev >= 1);
	CHECK(f.item_ev_workers == 64);
	CHECK(f.peer_ev >= 4); /* two links, seen from both ends */
	CHECK(pcf_has(pcf, "dwork: channel operation"));
	CHECK(pcf_has(pcf, "dwork: pmap batch sent"));
	CHECK(pcf_has(pcf, "dwork: worker-to-worker link opened"));
	CHECK(pcf_has(pcf, "REQ") && pcf_has(pcf, "ANSWER"));
	if (!tu_failures)
		tu_rmtree(dir);
	else
		fprintf(stderr, "trace kept in %s\n", dir);
	return tu_report("trace_work");
}
