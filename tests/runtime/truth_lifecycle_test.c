/*
 * Ground truth for the worker lifecycle.  A traced master works 100 ms,
 * adds worker A (id 2), gives it two 60 ms calls, adds worker B (id 3),
 * gives it one 50 ms call, removes B, gives A one 40 ms call, works 30 ms
 * more and finalizes.  The master marks each step with a user event, so
 * the merged trace itself says when each step happened.  From the trace:
 *
 * - useful time (Running on the master's user threads and on executors)
 *   per task is 130 / 160 / 50 ms (what the program measured around its
 *   sleeps, which a loaded machine can only lengthen), within 3 ms, the
 *   master's counted from when dw_init returned;
 * - a worker's threads have no record before the dw_addprocs that made
 *   it, only "Not created" (state 2);
 * - B's threads end inside its dw_rmprocs: "Not created" from then to the
 *   end of the trace, and no record of B after dw_rmprocs returned;
 * - the master waits in dw_addprocs in state 26 (Startup latency) and in
 *   dw_rmprocs in state 5 (Synchronization), never Running;
 * - `dwork stats` reports the same useful time per task, to the ns;
 * - the summary the master printed at its end, `dwork summary` (of the
 *   directory and of the .prv) and `dwork stats` (text and JSON) show
 *   one set of figures, the trace's, within the known answer
 *   (truth_figures.h);
 * - the strict checker passes with every flag.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include "prv_check.h"
#include "rt_util.h"
#include "testutil.h"
#include "truth_figures.h"

#include <dwork/trace.h>

#define TL_MARK 1000u /* user event type: the master's step markers */
enum {
	MK_START = 1, /* dw_init has returned */
	MK_ADD_A,     /* just before dw_addprocs of A */
	MK_ADD_A_DONE,
	MK_ADD_B,
	MK_ADD_B_DONE,
	MK_RM_B,
	MK_RM_B_DONE,
	MK_N
};

#define MS       1000000ull /* ns */
#define TL_MAXT  8          /* tasks */
#define TL_MAXTH 16         /* threads per task */

/* Nominal durations (ms).  A loaded machine can only lengthen a sleep,
 * so the known answer is what the program itself measured around each
 * sleep (CLOCK_MONOTONIC, no tracer involved), never less than nominal;
 * the trace must agree with it within TOL_NS (the runtime's own few
 * microseconds per call on either side of the user function). */
#define MASTER_WORK_1 100
#define MASTER_WORK_2 30
#define A_CALL_1      60
#define A_CALL_2      40
#define B_CALL        50
#define TOL_NS        (3 * MS)

static uint64_t
mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Sleeps ms; returns the ns it slept. */
static uint64_t
nap(int ms)
{
	uint64_t t0 = mono_ns();
	usleep((useconds_t)ms * 1000u);
	return mono_ns() - t0;
}

/* {int ms}: sleeps; replies the uint64 ns it measured. */
static int
tl_nap(const void *arg, size_t len, dw_reply *r)
{
	int ms = 0;
	if (len != sizeof ms)
		return dw_reply_error(r, "tl_nap takes an int");
	memcpy(&ms, arg, sizeof ms);
	uint64_t ns = nap(ms);
	return dw_reply_set(r, &ns, sizeof ns);
}
DW_REGISTER(tl_nap)

/* The master's run-queue wait (tu_queued_ns) at each marker.  A thread
 * preempted on a loaded machine stays in the state it was in, so the
 * trace shows that wait as whatever the thread was doing: between a
 * marker and the runtime's next state change that is Running, which no
 * nap measures. */
static uint64_t mark_queued[MK_N];

static void
mark(uint64_t v)
{
	dwt_event(TL_MARK, v);
	mark_queued[v] = tu_queued_ns();
}

/* Runs tl_nap(ms) on worker id; adds the measured ns to *sum. */
static void
call_nap(int id, int ms, uint64_t *sum)
{
	void *res;
	size_t n;
	uint64_t ns = 0;
	REQUIRE(dw_remotecall_fetch(id, "tl_nap", &ms, sizeof ms, &res, &n) ==
	        DW_OK);
	if (n == sizeof ns)
		memcpy(&ns, res, sizeof ns);
	free(res);
	CHECK(ns >= (uint64_t)ms * MS);
	*sum += ns;
}

/* Measured useful time per task (index: task - 1), and the master's
 * wall times: dw_init, dw_init's return to dw_finalize's call, dw_init's
 * call to dw_finalize's return (ns). */
typedef struct tl_known {
	uint64_t useful[3];
	uint64_t init, span_in, span_out;
	uint64_t queued; /* the master's run-queue wait from MK_START on */
} tl_known;

static void
master_run(int *a, int *b, tl_known *k)
{
	dwt_define_type(TL_MARK, "truth_lifecycle: master step");
	mark(MK_START);
	k->useful[0] += nap(MASTER_WORK_1);
	mark(MK_ADD_A);
	REQUIRE(dw_addprocs(1, NULL, a) == 1);
	mark(MK_ADD_A_DONE);
	call_nap(*a, A_CALL_1, &k->useful[1]);
	call_nap(*a, A_CALL_1, &k->useful[1]);
	mark(MK_ADD_B);
	REQUIRE(dw_addprocs(1, NULL, b) == 1);
	mark(MK_ADD_B_DONE);
	call_nap(*b, B_CALL, &k->useful[2]);
	mark(MK_RM_B);
	CHECK(dw_rmprocs(b, 1, 5000) == DW_OK);
	mark(MK_RM_B_DONE);
	call_nap(*a, A_CALL_2, &k->useful[1]);
	k->useful[0] += nap(MASTER_WORK_2);
}

/* ---- the merged trace, read back ---- */

typedef struct tl_state {
	uint64_t b, e;
	uint32_t s;
} tl_state;

typedef struct tl_thread {
	char name[512];
	tl_state *st;
	size_t nst, cap;
	uint64_t first_other; /* first event or comm time; UINT64_MAX: none */
	uint64_t last_other;  /* last event or comm time */
} tl_thread;

typedef struct tl_trace {
	uint64_t ftime;
	uint32_t ntasks, nthreads[TL_MAXT];
	tl_thread th[TL_MAXT][TL_MAXTH];
	uint64_t mark[MK_N];
} tl_trace;

static tl_thread *
tl_get(tl_trace *t, uint64_t task, uint64_t thread)
{
	if (task < 1 || task > t->ntasks || thread < 1 ||
	    thread > t->nthreads[task - 1])
		return NULL;
	return &t->th[task - 1][thread - 1];
}

/* "#Paraver (...):FTIME_ns:NODES(CPUS):1:NTASKS(NTH:NODE,...)" */
static int
tl_header(tl_trace *t, const char *s)
{
	const char *p = strstr(s, "):");
	if (!p)
		return -1;
	char *q;
	t->ftime = strtoull(p + 2, &q, 10);
	if (strncmp(q, "_ns:", 4) || !(p = strchr(q, ')')) || p[1] != ':')
		return -1;
	if (strtoul(p + 2, &q, 10) != 1 || *q != ':') /* one application */
		return -1;
	t->ntasks = (uint32_t)strtoul(q + 1, &q, 10);
	if (*q != '(' || t->ntasks == 0 || t->ntasks > TL_MAXT)
		return -1;
	for (uint32_t i = 0; i < t->ntasks; i++) {
		t->nthreads[i] = (uint32_t)strtoul(q + 1, &q, 10);
		if (*q != ':' || t->nthreads[i] > TL_MAXTH)
			return -1;
		strtoul(q + 1, &q, 10);
		if (*q != (i + 1 < t->ntasks ? ',' : ')'))
			return -1;
	}
	return 0;
}

static void
tl_add_state(tl_thread *th, uint64_t b, uint64_t e, uint32_t s)
{
	if (th->nst == th->cap) {
		th->cap = th->cap ? 2 * th->cap : 256;
		th->st = realloc(th->st, th->cap * sizeof *th->st);
		REQUIRE(th->st);
	}
	th->st[th->nst++] = (tl_state){b, e, s};
}

static void
tl_other(tl_thread *th, uint64_t time)
{
	if (time < th->first_other)
		th->first_other = time;
	if (time > th->last_other)
		th->last_other = time;
}

static void
tl_record(tl_trace *t, const uint64_t *v, int n)
{
	tl_thread *th = n >= 6 ? tl_get(t, v[3], v[4]) : NULL;
	REQUIRE(th);
	if (v[0] == 1 && n == 8) {
		tl_add_state(th, v[5], v[6], (uint32_t)v[7]);
		return;
	}
	if (v[0] == 2) {
		tl_other(th, v[5]);
		for (int i = 6; v[3] == 1 && i + 1 < n; i += 2)
			if (v[i] == TL_MARK && v[i + 1] > 0 && v[i + 1] < MK_N)
				t->mark[v[i + 1]] = v[5];
		return;
	}
	if (v[0] == 3 && n == 15) {
		tl_other(th, v[5]);
		tl_thread *to = tl_get(t, v[9], v[10]);
		REQUIRE(to);
		tl_other(to, v[12]);
	}
}

static void
tl_read_prv(tl_trace *t, const char *path)
{
	FILE *f = fopen(path, "r");
	REQUIRE(f);
	static char line[65536];
	REQUIRE(fgets(line, sizeof line, f) && tl_header(t, line) == 0);
	for (uint32_t i = 0; i < t->ntasks; i++)
		for (uint32_t j = 0; j < t->nthreads[i]; j++)
			t->th[i][j].first_other = UINT64_MAX;
	while (fgets(line, sizeof line, f)) {
		uint64_t v[64];
		int n = 0;
		for (char *s = line; n < 64 && *s && *s != '\n';) {
			v[n++] = strtoull(s, &s, 10);
			if (*s != ':')
				break;
			s++;
		}
		if (n && v[0] >= 1 && v[0] <= 3)
			tl_record(t, v, n);
	}
	fclose(f);
}

/* The THREAD block of the .row names the threads in task order. */
static void
tl_read_row(tl_trace *t, const char *path)
{
	FILE *f = fopen(path, "r");
	REQUIRE(f);
	char line[512];
	int in = 0;
	uint32_t task = 0, thread = 0;
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "LEVEL ", 6)) {
			in = !strncmp(line, "LEVEL THREAD ", 13);
			continue;
		}
		if (!in || !*line)
			continue;
		while (task < t->ntasks && thread >= t->nthreads[task]) {
			task++;
			thread = 0;
		}
		REQUIRE(task < t->ntasks);
		snprintf(t->th[task][thread].name,
		         sizeof t->th[task][thread].name, "%s", line);
		thread++;
	}
	fclose(f);
}

/* Useful time is Running on the master's threads other than I/O and on
 * worker executors (STATES.md). */
static int
tl_counted(uint32_t task, const tl_thread *th)
{
	if (strstr(th->name, "I/O"))
		return 0;
	return task == 1 || strstr(th->name, "executor") != NULL;
}

static uint64_t
tl_overlap(const tl_state *s, uint64_t b, uint64_t e)
{
	uint64_t lo = s->b > b ? s->b : b, hi = s->e < e ? s->e : e;
	return hi > lo ? hi - lo : 0;
}

/* ns the thread spends in state `st` within [b, e). */
static uint64_t
tl_in_state(const tl_thread *th, uint32_t st, uint64_t b, uint64_t e)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < th->nst; i++)
		if (th->st[i].s == st)
			sum += tl_overlap(&th->st[i], b, e);
	return sum;
}

static uint64_t
tl_useful(const tl_trace *t, uint32_t task, uint64_t from)
{
	uint64_t sum = 0;
	for (uint32_t j = 0; j < t->nthreads[task - 1]; j++) {
		const tl_thread *th = &t->th[task - 1][j];
		if (tl_counted(task, th))
			sum +=
			    tl_in_state(th, DWT_STATE_RUNNING, from, t->ftime);
	}
	return sum;
}

/* The master's useful time counts from MK_START: what dw_init does after
 * it started the tracer is recorded as Running and is no work of the
 * program's (printed, not asserted: it is the runtime's own CPU time,
 * which a loaded machine stretches). */
static void
check_useful(const tl_trace *t, uint32_t task, uint64_t nominal_ms,
             uint64_t known, uint64_t queued)
{
	uint64_t from = task == 1 ? t->mark[MK_START] : 0;
	uint64_t got = tl_useful(t, task, from);
	printf("task %u: useful %.3f ms in the trace, %.3f ms measured by the "
	       "program (nominal %llu ms)\n",
	       task, got / 1e6, known / 1e6, (unsigned long long)nominal_ms);
	if (task == 1)
		printf("task 1: %.3f ms Running inside dw_init, not counted\n",
		       (tl_useful(t, 1, 0) - got) / 1e6);
	if (queued)
		printf("task %u: %.3f ms preempted (on the run queue), allowed "
		       "over\n",
		       task, queued / 1e6);
	CHECK(known >= nominal_ms * MS);
	CHECK(got + TOL_NS >= known);
	CHECK(got <= known + TOL_NS + queued);
}

static const tl_thread *
tl_master(const tl_trace *t)
{
	for (uint32_t j = 0; j < t->nthreads[0]; j++)
		if (strstr(t->th[0][j].name, "master") &&
		    !strstr(t->th[0][j].name, "I/O"))
			return &t->th[0][j];
	return NULL;
}

/* The master's wait between markers a and b is state `st`, never Running
 * (beyond half a millisecond and the time the master thread sat on a run
 * queue between the markers: a run at load 5 had it preempted 2.1 ms
 * between MK_ADD_B's marker and dw_addprocs's first state change, shown
 * Running as a preempted thread's state stays what it was);
 * clock-sync rounds nested in it show as Synchronization (STATES.md), so
 * `nested` (or st itself) may share the interval. */
static void
check_wait(const tl_trace *t, int a, int b, uint32_t st, uint32_t nested,
           const char *what)
{
	const tl_thread *m = tl_master(t);
	REQUIRE(m);
	uint64_t lo = t->mark[a], hi = t->mark[b], len = hi - lo;
	uint64_t in = tl_in_state(m, st, lo, hi);
	uint64_t sub = nested == st ? 0 : tl_in_state(m, nested, lo, hi);
	uint64_t run = tl_in_state(m, DWT_STATE_RUNNING, lo, hi);
	uint64_t queued = mark_queued[b] - mark_queued[a];
	printf("%s: %.3f ms, %.3f ms in state %u, %.3f ms in state %u, "
	       "%.3f ms Running, %.3f ms preempted\n",
	       what, len / 1e6, in / 1e6, st, sub / 1e6, nested, run / 1e6,
	       queued / 1e6);
	CHECK(in > 0);
	CHECK((in + sub) * 10 + queued * 10 >= len * 9);
	CHECK(run < MS / 2 + queued);
}

/* A worker that joined at marker `join`: before it, its threads are Not
 * created and carry no event or communication; it has started by the
 * time dw_addprocs returns (marker `done`), though a thread of it may
 * start later. */
static void
check_joined(const tl_trace *t, uint32_t task, int join, int done)
{
	uint64_t task_first = UINT64_MAX;
	for (uint32_t j = 0; j < t->nthreads[task - 1]; j++) {
		const tl_thread *th = &t->th[task - 1][j];
		uint64_t first = UINT64_MAX;
		for (size_t i = 0; i < th->nst; i++)
			if (th->st[i].s != DWT_STATE_NOT_CREATED &&
			    th->st[i].b < first)
				first = th->st[i].b;
		printf("task %u thread %u (%s): first record %.3f ms, "
		       "dw_addprocs %.3f..%.3f ms\n",
		       task, j + 1, th->name, first / 1e6, t->mark[join] / 1e6,
		       t->mark[done] / 1e6);
		CHECK(first >= t->mark[join]);
		CHECK(th->first_other == UINT64_MAX ||
		      th->first_other >= t->mark[join]);
		if (first < task_first)
			task_first = first;
	}
	CHECK(task_first <= t->mark[done]);
}

/* A worker removed between markers rm and done: each thread ends there,
 * Not created from its end to the end of the trace, nothing after. */
static void
check_removed(const tl_trace *t, uint32_t task, int rm, int done)
{
	for (uint32_t j = 0; j < t->nthreads[task - 1]; j++) {
		const tl_thread *th = &t->th[task - 1][j];
		REQUIRE(th->nst > 0);
		const tl_state *last = &th->st[th->nst - 1];
		uint64_t end =
		    last->s == DWT_STATE_NOT_CREATED ? last->b : last->e;
		printf("task %u thread %u (%s): ends %.3f ms in state %u, "
		       "dw_rmprocs %.3f..%.3f ms\n",
		       task, j + 1, th->name, end / 1e6, last->s,
		       t->mark[rm] / 1e6, t->mark[done] / 1e6);
		CHECK(last->s == DWT_STATE_NOT_CREATED);
		CHECK(last->e == t->ftime);
		CHECK(end >= t->mark[rm] && end <= t->mark[done]);
		CHECK(th->last_other <= t->mark[done]);
	}
}

/* `dwork stats --csv` on the same trace: its "useful" rows (one a task,
 * in task order) must be the Running time counted above, to the ns. */
static void
check_stats(const tl_trace *t, const char *prv)
{
	char cmd[1200];
	snprintf(cmd, sizeof cmd, "'%s' stats --csv '%s'", DWORK_TOOL_PATH,
	         prv);
	FILE *p = popen(cmd, "r");
	REQUIRE(p);
	char line[1024];
	uint32_t task = 0;
	while (fgets(line, sizeof line, p)) {
		unsigned long long ns;
		if (strncmp(line, "useful,", 7) ||
		    sscanf(line, "useful,%*u,,,,,%llu", &ns) != 1)
			continue;
		task++;
		REQUIRE(task <= t->ntasks);
		printf("task %u: dwork stats useful %.3f ms\n", task, ns / 1e6);
		CHECK_EQ_U64(ns, tl_useful(t, task, 0));
	}
	CHECK(pclose(p) == 0);
	CHECK(task == t->ntasks);
}

/* One set of figures.  The master's known useful time may also hold the
 * Running inside dw_init (the runtime's, not counted by check_useful but
 * by every figure), at most dw_init's wall time. */
static void
check_figures(const tl_trace *t, const char *dir, const char *out,
              const tl_known *k)
{
	struct tf_in in = {.dir = dir, .master_out = out, .ntasks = 3};
	for (int i = 0; i < 3; i++) {
		in.useful_ns[i] = tl_useful(t, (uint32_t)i + 1, 0);
		in.lo_ms[i] = (double)(k->useful[i] - TOL_NS) / 1e6;
		in.hi_ms[i] = (double)(k->useful[i] + TOL_NS) / 1e6;
	}
	in.hi_ms[0] += (double)(k->init + k->queued) / 1e6;
	in.t_lo_ms = (double)k->span_in / 1e6;
	in.t_hi_ms = (double)k->span_out / 1e6;
	tf_check(&in);
}

static void
check_trace(const char *prefix, int a, int b, const tl_known *k)
{
	static tl_trace t;
	char path[800];
	snprintf(path, sizeof path, "%s.prv", prefix);
	tl_read_prv(&t, path);
	snprintf(path, sizeof path, "%s.row", prefix);
	tl_read_row(&t, path);
	REQUIRE(a == 2 && b == 3 && t.ntasks == 3);
	for (int i = 1; i < MK_N; i++) {
		REQUIRE(t.mark[i] > 0);
		REQUIRE(i == 1 || t.mark[i] >= t.mark[i - 1]);
	}
	check_useful(&t, 1, MASTER_WORK_1 + MASTER_WORK_2, k->useful[0],
	             k->queued);
	check_useful(&t, 2, 2 * A_CALL_1 + A_CALL_2, k->useful[1], 0);
	check_useful(&t, 3, B_CALL, k->useful[2], 0);
	check_joined(&t, 2, MK_ADD_A, MK_ADD_A_DONE);
	check_joined(&t, 3, MK_ADD_B, MK_ADD_B_DONE);
	check_removed(&t, 3, MK_RM_B, MK_RM_B_DONE);
	check_wait(&t, MK_ADD_A, MK_ADD_A_DONE, DWT_STATE_STARTUP_LATENCY,
	           DWT_STATE_SYNCHRONIZATION, "dw_addprocs (A)");
	check_wait(&t, MK_ADD_B, MK_ADD_B_DONE, DWT_STATE_STARTUP_LATENCY,
	           DWT_STATE_SYNCHRONIZATION, "dw_addprocs (B)");
	check_wait(&t, MK_RM_B, MK_RM_B_DONE, DWT_STATE_SYNCHRONIZATION,
	           DWT_STATE_SYNCHRONIZATION, "dw_rmprocs (B)");
	snprintf(path, sizeof path, "%s.prv", prefix);
	check_stats(&t, path);
	char dir[800], out[820];
	snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(prefix, '/') - prefix),
	         prefix);
	snprintf(out, sizeof out, "%s/master.out", dir);
	check_figures(&t, dir, out, k);
	for (uint32_t i = 0; i < t.ntasks; i++)
		for (uint32_t j = 0; j < t.nthreads[i]; j++)
			free(t.th[i][j].st);
}

/* dw_finalize with this process's stdout (where the master prints its
 * end-of-run summary) in the file out, shown after. */
static int
finalize_into(const char *out)
{
	fflush(stdout);
	int saved = dup(1);
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	REQUIRE(saved >= 0 && fd >= 0 && dup2(fd, 1) == 1);
	close(fd);
	int rc = dw_finalize();
	fflush(stdout);
	REQUIRE(dup2(saved, 1) == 1);
	close(saved);
	fputs(tf_slurp(out), stdout);
	return rc;
}

int
main(int argc, char **argv)
{
	/* a worker (this program, started by dw_addprocs): no directory */
	if (argc > 1 && !strncmp(argv[1], "--dwork-", 8))
		return dw_init(&argc, &argv) == DW_OK ? 0 : 2;
	char dir[600], out[700];
	snprintf(dir, sizeof dir, "%s", tu_tmpdir("truth-lifecycle"));
	snprintf(out, sizeof out, "%s/master.out", dir);
	dw_options o = {.trace = dir, .no_merge = 0};
	tl_known k = {{0}, 0, 0, 0, 0};
	uint64_t t0 = mono_ns();
	if (dw_init_opts(&argc, &argv, &o) != DW_OK)
		return 1;
	uint64_t t_ready = mono_ns();
	k.init = t_ready - t0;
	int a = 0, b = 0;
	master_run(&a, &b, &k);
	k.queued = tu_queued_ns() - mark_queued[MK_START];
	k.span_in = mono_ns() - t_ready;
	CHECK(finalize_into(out) == DW_OK);
	k.span_out = mono_ns() - t0;
	char prefix[700], err[1024];
	snprintf(prefix, sizeof prefix, "%s/trace", dir);
	pc_result r;
	if (prv_check(prefix, PC_ALL, &r, err, sizeof err) != 0) {
		fprintf(stderr, "strict checker: %s\n", err);
		tu_failures++;
	}
	check_trace(prefix, a, b, &k);
	if (!tu_failures)
		tu_rmtree(dir);
	else
		fprintf(stderr, "trace kept in %s\n", dir);
	return tu_report("truth_lifecycle");
}
