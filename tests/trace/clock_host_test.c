/*
 * One host, one timeline: NPROC traced processes, released together
 * through a pipe, each read the tick source right before and right after
 * an event at that shared instant and record both reads as event values.
 * After the merge, the difference of two processes' merged times must be
 * the difference of their raw reads (converted with a rate this test
 * measures itself) within 100 ns.  The release instant itself varies
 * with the machine's load; what is compared is the merge against the raw
 * reads of the same instants, so a slow machine cannot fail the test.
 * Every process also carries sync records with microseconds of error, as
 * the runtime's ping-pong gives on one host: the merge must not let them
 * move a process off its host's shared clock.
 *
 * RUNS runs of ROUNDS releases each, in one ctest invocation, so an
 * intermittent disagreement fails the suite.  Prints the figures:
 *   ctest --test-dir build -R clock_host -V
 */
#include <inttypes.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dwork/trace.h>

#include "merge_util.h"
#include "trace/clock.h"

#define NPROC     3
#define ROUNDS    10
#define RUNS      20
#define TOL_NS    100
#define EV_BEFORE 91000001u
#define EV_AFTER  91000002u
#define MAX_GAP   1000 /* ns: a wider read bracket was preempted */

static uint64_t
raw_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Ticks and raw ns at one instant: the narrowest of 9 windows, so that
 * a preemption between the two reads cannot spoil the rate. */
static void
pair(uint64_t *k, uint64_t *n)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 9; i++) {
		uint64_t a = raw_ns(), t = clk_ticks(), b = raw_ns();

		if (b - a < best)
			best = b - a, *k = t, *n = a + (b - a) / 2;
	}
}

/* A child: task `task`, ROUNDS events at the instants the parent gives. */
static int
child(const char *dir, uint32_t task, int go, int ack)
{
	dwt_config c;
	char b;

	dwt_config_defaults(&c);
	c.dir = dir;
	c.program = "clockhost";
	if (dwt_init(&c) != DW_OK)
		return 10;
	dwt_set_task(task);
	dwt_set_ntasks(NPROC);
	/* what the runtime's ping-pong gives on one host: microseconds */
	if (task)
		dwt_sync(0, dwt_now_ns(), (int64_t)task * 3000 - 4500, 20000);
	for (int r = 0; r < ROUNDS; r++) {
		if (read(go, &b, 1) != 1)
			return 11;
		uint64_t t0 = clk_ticks();
		dwt_event(EV_BEFORE, t0);
		uint64_t t1 = clk_ticks();
		dwt_event(EV_AFTER, t1);
		if (write(ack, &b, 1) != 1)
			return 12;
	}
	if (task)
		dwt_sync(0, dwt_now_ns(), (int64_t)task * -2000 + 1000, 30000);
	dwt_fini();
	return 0;
}

struct obs {
	int64_t m;       /* merged time of the EV_BEFORE event, ns */
	uint64_t t0, t1; /* the raw reads around it */
	bool have0, have1;
};

static struct obs obs[NPROC][ROUNDS];

/* Reads the events of the merged .prv into obs. */
static void
read_prv(const char *prefix)
{
	char path[700], *text, *line, *save;
	int seen[NPROC][2] = {{0}};

	memset(obs, 0, sizeof obs);
	snprintf(path, sizeof path, "%s.prv", prefix);
	text = mt_slurp(path);
	REQUIRE(text);
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned cpu, appl, task, thread, type;
		unsigned long long t, v;

		if (sscanf(line, "2:%u:%u:%u:%u:%llu:%u:%llu", &cpu, &appl,
		           &task, &thread, &t, &type, &v) != 7 ||
		    task < 1 || task > NPROC)
			continue;
		if (type == EV_BEFORE && seen[task - 1][0] < ROUNDS) {
			struct obs *o = &obs[task - 1][seen[task - 1][0]++];

			o->m = (int64_t)t, o->t0 = v, o->have0 = true;
		} else if (type == EV_AFTER && seen[task - 1][1] < ROUNDS) {
			struct obs *o = &obs[task - 1][seen[task - 1][1]++];

			o->t1 = v, o->have1 = true;
		}
	}
	free(text);
	for (int i = 0; i < NPROC; i++)
		CHECK(seen[i][0] == ROUNDS && seen[i][1] == ROUNDS);
}

struct figures {
	double worst;      /* ns: merged difference outside the raw bracket */
	double mid;        /* ns: ... from the bracket's middle */
	double width;      /* ns: the widest bracket compared */
	double spread_max; /* ns: largest spread of the merged times */
	int used, skipped; /* rounds compared, rounds preempted */
};

/* How far x lies outside [lo, hi]. */
static double
outside(double x, double lo, double hi)
{
	return x < lo ? lo - x : x > hi ? x - hi : 0;
}

static void
check_round(int r, double ns_per_tick, struct figures *f)
{
	int64_t lo = INT64_MAX, hi = INT64_MIN;

	for (int i = 0; i < NPROC; i++) {
		const struct obs *o = &obs[i][r];

		if (!o->have0 || !o->have1 || o->t1 < o->t0 ||
		    (double)(o->t1 - o->t0) * ns_per_tick > MAX_GAP) {
			f->skipped++;
			return;
		}
		lo = o->m < lo ? o->m : lo;
		hi = o->m > hi ? o->m : hi;
	}
	f->used++;
	if ((double)(hi - lo) > f->spread_max)
		f->spread_max = (double)(hi - lo);
	for (int i = 0; i < NPROC; i++)
		for (int j = 0; j < NPROC; j++) {
			const struct obs *a = &obs[i][r], *b = &obs[j][r];
			/* the event's own tick lies in [t0, t1] */
			double dlo =
			    ((double)a->t0 - (double)b->t1) * ns_per_tick;
			double dhi =
			    ((double)a->t1 - (double)b->t0) * ns_per_tick;
			double e = outside((double)(a->m - b->m), dlo, dhi);
			double md = (double)(a->m - b->m) - (dlo + dhi) / 2;

			md = md < 0 ? -md : md;
			f->mid = md > f->mid ? md : f->mid;
			f->width = dhi - dlo > f->width ? dhi - dlo : f->width;

			if (e > f->worst && getenv("CLOCK_HOST_DEBUG"))
				fprintf(
				    stderr,
				    "round %d: %d-%d merged %lld raw [%.0f, "
				    "%.0f]\n",
				    r, i, j, (long long)(a->m - b->m), dlo,
				    dhi);
			f->worst = e > f->worst ? e : f->worst;
		}
}

/* One run: NPROC children, ROUNDS releases, a merge, the checks. */
static void
one_run(struct figures *f)
{
	const char *dir = tu_tmpdir("clock-host");
	char prefix[600];
	int go[2], ack[2];
	pid_t pids[NPROC];
	uint64_t k0, n0, k1, n1;
	rd_errlist errs;
	mg_report rep;
	char b = 'g';

	pair(&k0, &n0);
	REQUIRE(pipe(go) == 0 && pipe(ack) == 0);
	for (uint32_t i = 0; i < NPROC; i++) {
		pids[i] = fork();
		REQUIRE(pids[i] >= 0);
		if (pids[i] == 0)
			_exit(child(dir, i, go[0], ack[1]));
	}
	for (int r = 0; r < ROUNDS; r++) {
		char all[NPROC];

		memset(all, 'g', sizeof all);
		usleep(2000);
		REQUIRE(write(go[1], all, NPROC) == NPROC);
		for (int i = 0; i < NPROC; i++)
			REQUIRE(read(ack[0], &b, 1) == 1);
	}
	for (int i = 0; i < NPROC; i++) {
		int st;

		REQUIRE(waitpid(pids[i], &st, 0) == pids[i]);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	close(go[0]), close(go[1]), close(ack[0]), close(ack[1]);
	do
		pair(&k1, &n1);
	while (n1 - n0 < 50000000u);
	snprintf(prefix, sizeof prefix, "%s/out", dir);
	rd_errlist_init(&errs, stderr);
	CHECK(mt_merge(dir, prefix, 0, &rep, &errs) == DW_OK);
	read_prv(prefix);
	if (getenv("CLOCK_HOST_DEBUG"))
		fprintf(stderr, "test rate %.9f\n",
		        (double)(n1 - n0) / (double)(k1 - k0));
	for (int r = 0; r < ROUNDS; r++)
		check_round(r, (double)(n1 - n0) / (double)(k1 - k0), f);
	rd_errlist_free(&errs);
	tu_rmtree(dir);
}

int
main(void)
{
	struct figures f = {0};

	/* the test measures the tick rate; the tracer must use the same
	 * source as clk_ticks here */
	REQUIRE(clk_setup(DWT_CLOCK_AUTO) == DW_OK);
	for (int run = 0; run < RUNS; run++)
		one_run(&f);
	printf("clock_host: %d processes, %d instants compared (%d skipped: "
	       "a read bracket over %d ns)\n",
	       NPROC, f.used, f.skipped, MAX_GAP);
	printf("clock_host: largest spread of the merged times %.0f ns "
	       "(the release's own spread)\n",
	       f.spread_max);
	printf("clock_host: merged differences vs raw tick differences: "
	       "at most %.0f ns outside the read brackets (limit %d), %.0f ns "
	       "from their middles (brackets up to %.0f ns wide)\n",
	       f.worst, TOL_NS, f.mid, f.width);
	CHECK(f.used >= RUNS * ROUNDS / 10);
	CHECK(f.worst <= TOL_NS);
	return tu_report("clock_host");
}
