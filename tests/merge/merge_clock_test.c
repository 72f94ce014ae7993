/*
 * Clock correction: the tick conversion against the reader's, the offset
 * interpolation, and synthetic processes on four hosts with skewed and
 * drifting clocks (sync records on two, a host sharing a synced
 * process's clock, a host aligned by real time only): after the merge no
 * receive precedes its send and message latencies are the true ones
 * within the measurements' error.
 */
#include <inttypes.h>

#include "merge/mg_int.h"
#include "merge_synth.h"
#include "merge_util.h"

enum { RECV = 1, LOG = 2, PHY = 4 };
enum { EV_GOT = 7700, EV_AFTER = 7701, SIZE0 = 1000 };

static int64_t
absdiff(int64_t a, int64_t b)
{
	return a > b ? a - b : b - a;
}

/* ---- Units ------------------------------------------------------------- */

static void
test_tconv(void)
{
	mg_clock k;
	mg_tconv c;
	uint64_t x = 0x9e3779b97f4a7c15ull, worst = 0;

	mg_clock_init(&k, FMT_CLOCK_TSC, 3000000000ull);
	for (uint64_t i = 1; i <= 20; i++) /* slightly uneven rate */
		rd_calib_add(&k.calib, i * 3000000000ull + i * i * 17,
		             1000000000ull + i * 1000000000ull + i * 3);
	rd_calib_finish(&k.calib, NULL, NULL);
	mg_tconv_init(&c, &k);
	for (int i = 0; i < 200000; i++) {
		uint64_t t;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		t = x % 70000000000ull; /* before, within and after the pairs */
		c.last = INT64_MIN;
		uint64_t d = (uint64_t)absdiff(mg_time(&c, t),
		                               rd_calib_to_ns(&k.calib, t));
		worst = d > worst ? d : worst;
	}
	CHECK(worst <= 1);
	mg_clock_free(&k);
}

static void
test_offsets(void)
{
	mg_sync s[] = {
	    {2000, 700, 40, 0}, {1000, 500, 20, 0}, {4000, 600, 60, 0}};
	mg_sync bad[] = {{0, 0, 10, 0}, {100, -80, 10, 0}, {200, 5, 10, 0}};
	rd_errlist errs;
	mg_clock k;
	mg_tconv c;

	rd_errlist_init(&errs, NULL);
	mg_clock_init(&k, FMT_CLOCK_MONO_RAW, 0);
	REQUIRE(mg_clock_from_syncs(&k, s, 3, "p", &errs) == DW_OK);
	k.kind = MG_CLK_SYNC;
	CHECK_EQ_U64(mg_clock_off(&k, 1500), 600);
	CHECK_EQ_U64(mg_clock_off(&k, 3000), 650);
	CHECK_EQ_U64(mg_clock_off(&k, 500), 483); /* first-to-last slope */
	CHECK_EQ_U64(mg_clock_off(&k, 5000), 633);
	/* (mg_clock_err takes a corrected time: local + offset) */
	/* between two records: the larger half round trip (20, 40) */
	CHECK_EQ_U64(mg_clock_err(&k, 1100 + mg_clock_off(&k, 1100)), 20);
	CHECK_EQ_U64(mg_clock_err(&k, 3500 + mg_clock_off(&k, 3500)), 30);
	CHECK_EQ_U64(mg_clock_err(&k, 1000 + mg_clock_off(&k, 1000)), 10);
	/* after the last: 30 + 1000 ns x (30 + 10) / 3000 ns of span */
	CHECK_EQ_U64(mg_clock_err(&k, 5000 + mg_clock_off(&k, 5000)), 43);
	/* before the first: 10 + 600 x 40 / 3000 */
	CHECK_EQ_U64(mg_clock_err(&k, 400 + mg_clock_off(&k, 400)), 18);
	{ /* one record: an offset but no drift: 200 ppm assumed */
		mg_clock one;
		mg_sync s1[] = {{1000, 500, 20, 0}};
		mg_clock_init(&one, FMT_CLOCK_MONO_RAW, 0);
		REQUIRE(mg_clock_from_syncs(&one, s1, 1, "q", &errs) == DW_OK);
		one.kind = MG_CLK_SYNC;
		CHECK(mg_clock_err(&one, 1000 + mg_clock_off(&one, 1000)) ==
		      10);
		CHECK(mg_clock_err(&one, 51000 + mg_clock_off(&one, 51000)) ==
		      20); /* 10 + 50 us x 2e-4 */
		mg_clock_free(&one);
	}
	mg_tconv_init(&c, &k);
	for (int64_t x = 0; x < 6000; x += 7)
		CHECK(absdiff(mg_time(&c, (uint64_t)x),
		              x + mg_clock_off(&k, x)) <= 1);
	CHECK_EQ_U64(rd_errlist_count(&errs), 0);
	/* a measurement that would make time run back is dropped */
	REQUIRE(mg_clock_from_syncs(&k, bad, 3, "p", &errs) == DW_OK);
	CHECK_EQ_U64(k.npts, 2);
	CHECK(mt_said(&errs, "disagrees with the one before it"));
	mg_clock_free(&k);
	rd_errlist_free(&errs);
}

/* ---- Four hosts ------------------------------------------------------------
 */

#define NT    6 /* tasks */
#define ITERS 200
#define STEP  100000 /* ns between iterations: drifts add up */
#define REAL0 1700000000000000000ll

static int64_t latency; /* true send-to-receive time */
static int64_t noise;   /* sync measurement error bound */

/* Host clocks (ns) at true time t: A exact, B +50 ppm, C -30 ppm, D. */
static int64_t
mono(int host, int64_t t)
{
	switch (host) {
	case 0:
		return t + 1000000000;
	case 1:
		return t + t / 20000 + 4000000000;
	case 2:
		return t - t * 3 / 100000 + 2000000000;
	default:
		return t + 7000000000;
	}
}

static const int host_of[NT] = {0, 0, 1, 2, 2, 3};
static const uint32_t freq[NT] = {3, 0, 2, 3, 0, 2}; /* GHz; 0: ns */

static uint64_t
ticks(uint32_t task, int64_t t)
{
	int64_t m = mono(host_of[task], t);

	return freq[task] ? (uint64_t)m * freq[task] : (uint64_t)m;
}

static int64_t
jitter(uint64_t i)
{
	return noise ? (int64_t)((i * 7919 + 13) % (uint64_t)(2 * noise + 1)) -
	                   noise
	             : 0;
}

/* One record a thread may write: its true time orders them. */
struct ev {
	int64_t t;
	int kind; /* 0 push, 1 pop, 2 send, 3 recv, 4 sync */
	uint64_t id;
};

static int
ev_cmp(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	return x->t < y->t ? -1 : x->t > y->t;
}

static size_t
events(uint32_t task, struct ev *v)
{
	size_t n = 0;
	uint32_t from = (task + NT - 1) % NT;
	bool synced = host_of[task] == 1 || task == 3;

	for (uint64_t i = 0; i < ITERS; i++) {
		int64_t base = (int64_t)i * STEP;

		v[n++] = (struct ev){base + 1, 0, 0};
		v[n++] = (struct ev){base + 100 * task + 50, 2, i};
		v[n++] = (struct ev){base + 100 * from + 50 + latency, 3, i};
		v[n++] = (struct ev){base + STEP - 1000, 1, 0};
		if (synced && i % 20 == 0)
			v[n++] = (struct ev){base + STEP / 2, 4, i};
	}
	qsort(v, n, sizeof *v, ev_cmp);
	return n;
}

static void
write_ev(ms_thread *th, uint32_t task, const struct ev *e)
{
	uint64_t tk = ticks(task, e->t);
	uint32_t to = (task + 1) % NT, from = (task + NT - 1) % NT;
	int64_t local = mono(host_of[task], e->t);

	switch (e->kind) {
	case 0:
		ms_push(th, tk, 1);
		break;
	case 1:
		ms_pop(th, tk);
		break;
	case 2:
		ms_comm(th, tk, LOG | PHY, to, 5, SIZE0 + e->id, e->id);
		break;
	case 3: /* the receive, its event, and a record right after it */
		ms_comm(th, tk, RECV | LOG | PHY, from, 5, SIZE0 + e->id,
		        e->id);
		ms_event(th, tk, EV_GOT, e->id + 1);
		ms_event(th, tk + 1, EV_AFTER, e->id + 1);
		break;
	default: /* the reference (host A) read mono_A +- noise */
		ms_sync(th, tk, 0, (uint64_t)local,
		        mono(0, e->t) + jitter(e->id + task) - local,
		        (uint32_t)(2 * noise + 100));
	}
}

static void
hosts_trace(const char *dir)
{
	static struct ev v[ITERS * 6];
	static const char *const names[] = {"host-a", "host-b", "host-c",
	                                    "host-d"};

	for (uint32_t task = 0; task < NT; task++) {
		ms_proc p;
		ms_thread th;
		size_t n = events(task, v);

		ms_proc_init(&p, dir, 0x100 + task, 500 + task, task);
		snprintf(p.host, sizeof p.host, "%s", names[host_of[task]]);
		if (freq[task]) {
			p.clock = FMT_CLOCK_TSC;
			p.ticks_per_s = freq[task] * 1000000000ull;
		}
		p.init_ns = (uint64_t)mono(host_of[task], 0);
		p.init_ticks = ticks(task, 0);
		/* hosts b and c: real time 1 ms off (their syncs fix it) */
		p.init_real_ns =
		    (uint64_t)REAL0 +
		    (host_of[task] == 1 || host_of[task] == 2 ? 1000000 : 0);
		p.seg_size = 4096; /* many calibration pairs */
		ms_proc_end(&p, ticks(task, ITERS * STEP + 1000));
		ms_thread_open(&th, &p, 0);
		for (size_t i = 0; i < n; i++)
			write_ev(&th, task, &v[i]);
		ms_thread_close(&th);
		ms_proc_close(&p);
	}
}

/* Each communication's physical latency must be within tol of the true
 * one; returns how many lines there were. */
static int64_t worst_lat;             /* ns: the largest latency error */
static uint64_t psend[NT][ITERS + 1]; /* by receiver task and id */

static size_t
check_latencies(const char *prefix, int64_t tol)
{
	char path[700], *text, *line;
	size_t n = 0;

	snprintf(path, sizeof path, "%s.prv", prefix);
	text = mt_slurp(path);
	REQUIRE(text);
	for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		unsigned long long f[15];

		if (line[0] != '3')
			continue;
		REQUIRE(sscanf(line,
		               "3:%llu:%llu:%llu:%llu:%llu:%llu:%llu:%llu:%llu:"
		               "%llu:%llu:%llu:%llu:%llu",
		               &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6],
		               &f[7], &f[8], &f[9], &f[10], &f[11], &f[12],
		               &f[13]) == 14);
		if (f[8] >= 1 && f[8] <= NT && f[12] >= SIZE0 &&
		    f[12] - SIZE0 <= ITERS)
			psend[f[8] - 1][f[12] - SIZE0] = f[5];
		if (absdiff((int64_t)(f[11] - f[5]), latency) > worst_lat)
			worst_lat = absdiff((int64_t)(f[11] - f[5]), latency);
		CHECK(f[10] > f[5] && f[11] > f[5] && f[10] <= f[11]);
		if (absdiff((int64_t)(f[11] - f[5]), latency) > tol &&
		    f[11] > f[5]) {
			fprintf(stderr,
			        "latency %lld (task %llu -> %llu), want "
			        "%lld +- %lld\n",
			        (long long)(f[11] - f[5]), f[2] - 1, f[8] - 1,
			        (long long)latency, (long long)tol);
			tu_failures++;
		}
		n++;
	}
	free(text);
	return n;
}

/* Every receiver's event of the receive and the record after it come
 * after the send; returns how many there were. */
static size_t
check_after_send(const char *prefix)
{
	char path[700], *text, *line;
	size_t n = 0;

	snprintf(path, sizeof path, "%s.prv", prefix);
	text = mt_slurp(path);
	REQUIRE(text);
	for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		unsigned long long task, t, ty, v;
		char *p = line;
		int k = 0;

		if (sscanf(line, "2:%*u:%*u:%llu:%*u:%llu", &task, &t) != 2 ||
		    task < 1 || task > NT)
			continue;
		for (; *p && k < 6; p++)
			k += *p == ':';
		while (sscanf(p, "%llu:%llu", &ty, &v) == 2) {
			if ((ty == EV_GOT || ty == EV_AFTER) && v >= 1 &&
			    v <= ITERS) {
				uint64_t s = psend[task - 1][v - 1];

				if (t <= s) {
					fprintf(
					    stderr,
					    "task %llu: event %llu at %llu, "
					    "not after its send at %llu\n",
					    task, ty, t, (unsigned long long)s);
					tu_failures++;
				}
				n++;
			}
			for (k = 0; *p && k < 2; p++)
				k += *p == ':';
		}
	}
	free(text);
	return n;
}

/* The merge on two threads (the decoding thread and the writer's,
 * decode.h, pipe.h) writes the same bytes as on one: here with moved
 * receives (floors) and clocks of every kind. */
static void
same_on_two_threads(const char *dir, const char *prefix)
{
	static const char *const ext[] = {"prv", "pcf", "row"};
	mg_opts o = {.dir = dir, .threads = 2};
	char two[700], a[800], b[800];
	mg_report rep;
	mg_writer *w;

	snprintf(two, sizeof two, "%s/two", dir);
	REQUIRE(prv_writer_new(two, &w) == DW_OK);
	CHECK(mg_merge(&o, w, NULL, &rep) == DW_OK);
	mg_writer_free(w);
	CHECK(rep.recv_moved > 0 || rep.comms > 0);
	for (int i = 0; i < 3; i++) {
		char *x, *y;

		snprintf(a, sizeof a, "%s.%s", prefix, ext[i]);
		snprintf(b, sizeof b, "%s.%s", two, ext[i]);
		x = mt_slurp(a);
		y = mt_slurp(b);
		CHECK(x && y && strlen(x) > 20 && !strcmp(x, y));
		free(x);
		free(y);
	}
}

static void
test_hosts(int64_t lat, int64_t err, bool expect_moved)
{
	const char *dir = tu_tmpdir("clock-hosts");
	char prefix[600];
	rd_errlist errs;
	mg_report rep;

	latency = lat;
	noise = err;
	hosts_trace(dir);
	snprintf(prefix, sizeof prefix, "%s/out", dir);
	rd_errlist_init(&errs, stderr);
	CHECK(mt_merge(dir, prefix, 0, &rep, &errs) == DW_OK);
	CHECK(mt_said(&errs, "host host-d: no clock sync records"));
	CHECK_EQ_U64(rd_errlist_count(&errs), 1);
	CHECK_EQ_U64(rep.hosts_unsynced, 1);
	mt_check(prefix, PC_ALL, NULL);
	worst_lat = 0;
	memset(psend, 0, sizeof psend);
	CHECK_EQ_U64(check_latencies(prefix, 2 * err + 4), NT * ITERS);
	CHECK_EQ_U64(check_after_send(prefix), 2 * NT * ITERS);
	printf("merge_clock: latency %lld ns, sync error +-%lld ns: worst "
	       "latency error %lld ns; %llu receives moved, at most %llu ns, "
	       "%llu ns in all, %llu beyond the round trips\n",
	       (long long)lat, (long long)err, (long long)worst_lat,
	       (unsigned long long)rep.recv_moved,
	       (unsigned long long)rep.recv_max_shift,
	       (unsigned long long)rep.recv_total_shift,
	       (unsigned long long)rep.recv_beyond);
	CHECK_EQ_U64(rep.comms, NT * ITERS);
	CHECK_EQ_U64(rep.unmatched_sends + rep.unmatched_recvs, 0);
	if (expect_moved)
		CHECK(rep.recv_moved > 0);
	else
		CHECK_EQ_U64(rep.recv_moved, 0);
	CHECK(rep.recv_max_shift <= (uint64_t)(2 * err));
	CHECK_EQ_U64(rep.recv_beyond, 0);
	same_on_two_threads(dir, prefix);
	rd_errlist_free(&errs);
	tu_rmtree(dir);
}

/* Two processes of one host: task 1's sync records (a bad measurement
 * far beyond its round trip) are ignored and reported; one tick is one
 * time in both, whatever their own calibration pairs say. */
static void
test_one_host(void)
{
	const char *dir = tu_tmpdir("clock-one-host");
	char prefix[600], *text, *line;
	rd_errlist errs;
	mg_report rep;
	uint64_t t[2] = {0, 0};

	for (uint32_t task = 0; task < 2; task++) {
		ms_proc p;
		ms_thread th;

		ms_proc_init(&p, dir, 0x200 + task, 600 + task, task);
		snprintf(p.host, sizeof p.host, "one-host");
		p.clock = FMT_CLOCK_TSC;
		p.ticks_per_s = 3000000000ull;
		p.init_ticks = 3000000000ull * (task + 1);
		p.init_ns = 1000000000ull * (task + 1);
		ms_proc_end(&p, 30000000000ull);
		ms_thread_open(&th, &p, 0);
		if (task)
			ms_sync(&th, 6000000000ull, 0, 2000000000ull, 50000,
			        1000);
		ms_event(&th, 9000000000ull, 7702, 1); /* the same instant */
		ms_thread_close(&th);
		ms_proc_close(&p);
	}
	snprintf(prefix, sizeof prefix, "%s/out", dir);
	rd_errlist_init(&errs, NULL);
	CHECK(mt_merge(dir, prefix, 0, &rep, &errs) == DW_OK);
	CHECK(mt_said(&errs, "shares task 0's host and boot"));
	snprintf(prefix + strlen(prefix), 8, ".prv");
	text = mt_slurp(prefix);
	REQUIRE(text);
	for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		unsigned task;
		unsigned long long when;

		if (sscanf(line, "2:%*u:%*u:%u:%*u:%llu:7702:1", &task,
		           &when) == 2 &&
		    task >= 1 && task <= 2)
			t[task - 1] = when;
	}
	CHECK(t[0] && t[0] == t[1]);
	free(text);
	rd_errlist_free(&errs);
	tu_rmtree(dir);
}

int
main(void)
{
	test_one_host();
	test_tconv();
	test_offsets();
	test_hosts(2000, 150, false); /* latency well above the error */
	test_hosts(20, 150, true);    /* below it: some receives moved */
	return tu_report("merge_clock");
}
