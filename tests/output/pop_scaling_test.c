/*
 * Scaling across runs (issue 19 item 2) on synthetic runs whose answers
 * are worked out by hand below: the efficiencies of each run, the
 * computation scalability and global efficiency, strong and weak
 * scaling told apart, through sc_read and through the real
 * `dwork stats --scaling` (text, CSV, JSON and the HTML plot).
 */
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dwork/dwork.h>
#include <dwork/trace.h>

#include "output/scaling.h"
#include "merge_synth.h"
#include "merge_util.h"

#define U    1000000ull /* 1 ms */
#define BASE 1000       /* every trace starts at 1000 ms: time 0 */

static char scratch[512];

static void
near(const char *what, const char *key, double got, double hand)
{
	printf("%-10s %-28s hand %.6f measured %.6f\n", what, key, hand, got);
	if (fabs(got - hand) > 1e-6) {
		fprintf(stderr, "%s: %s is %.6f, not %.6f\n", what, key, got,
		        hand);
		tu_failures++;
	}
}

/* A plain trace (Running counts on every thread) of n tasks, task i
 * running ms[i] from 0 and idle to the end, the longest. */
static void
run_dir(const char *name, const uint64_t *ms, uint32_t n, char *dir, size_t len)
{
	uint64_t end = 0;

	for (uint32_t i = 0; i < n; i++)
		end = ms[i] > end ? ms[i] : end;
	snprintf(dir, len, "%s/%s", scratch, name);
	REQUIRE(mkdir(dir, 0755) == 0);
	for (uint32_t i = 0; i < n; i++) {
		ms_proc p;
		ms_thread t;

		ms_proc_init(&p, dir, 0x100 + i, 100 + i, i);
		ms_proc_end(&p, (BASE + end) * U);
		ms_thread_open(&t, &p, 0);
		ms_push(&t, BASE * U, DWT_STATE_RUNNING);
		ms_pop(&t, (BASE + ms[i]) * U);
		if (ms[i] < end) {
			ms_push(&t, (BASE + ms[i]) * U, DWT_STATE_IDLE);
			ms_pop(&t, (BASE + end) * U);
		}
		ms_thread_close(&t);
		ms_proc_close(&p);
	}
}

typedef struct want {
	size_t procs;
	double lb, comm, pe, comp, ge;
} want;

static void
check_table(const char *what, const sc_table *t, const want *w, bool weak)
{
	CHECK(t->weak == weak);
	CHECK(!t->counters && strstr(t->why, "no instruction"));
	for (size_t i = 0; i < t->n; i++) {
		const sc_run *r = &t->runs[i];

		CHECK_EQ_U64(r->procs, w[i].procs);
		near(what, "load_balance", r->st->pop.lb, w[i].lb);
		near(what, "communication_efficiency", r->st->pop.comm,
		     w[i].comm);
		near(what, "parallel_efficiency", r->st->pop.pe, w[i].pe);
		near(what, "computation_scalability", r->comp, w[i].comp);
		near(what, "global_efficiency", r->global, w[i].ge);
	}
}

static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;
	FILE *m;
	int c;

	if (!f)
		return NULL;
	m = open_memstream(&buf, &len);
	REQUIRE(m != NULL);
	while ((c = fgetc(f)) != EOF)
		fputc(c, m);
	fclose(f);
	fclose(m);
	return buf;
}

static int
tool(const char *args, const char *out)
{
	char cmd[4400];
	int st;

	snprintf(cmd, sizeof cmd, "%s stats --scaling %s >%s 2>%s.err",
	         DWORK_TOOL_PATH, args, out, out);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * Strong scaling: 120 ms of work on 1 task (T 120), on 2 tasks as 70 +
 * 50 (T 70), on 4 tasks as 33 each (T 33, 132 ms in all: 10% more
 * work).  The total grows 1.1x on 4x the tasks (< sqrt 4): strong.
 *   1: LB 1, CommE 1, PE 1, CompScal 1, GE 1
 *   2: LB 60/70, CommE 1, PE 60/70, CompScal 120/120 = 1, GE 60/70
 *   4: LB 1, CommE 1, PE 1, CompScal 120/132, GE 120/132
 */
static void
test_strong(char dirs[3][700])
{
	static const uint64_t a[] = {120}, b[] = {70, 50},
	                      c[] = {33, 33, 33, 33};
	const want w[] = {
	    {1, 1, 1, 1, 1, 1},
	    {2, 60.0 / 70, 1, 60.0 / 70, 1, 60.0 / 70},
	    {4, 1, 1, 1, 120.0 / 132, 120.0 / 132},
	};
	const char *runs[3];
	sc_table t;
	rd_errlist errs;
	char err[512];

	run_dir("strong4", c, 4, dirs[2], sizeof dirs[2]);
	run_dir("strong1", a, 1, dirs[0], sizeof dirs[0]);
	run_dir("strong2", b, 2, dirs[1], sizeof dirs[1]);
	/* given out of order: the table sorts by processes */
	runs[0] = dirs[2];
	runs[1] = dirs[0];
	runs[2] = dirs[1];
	rd_errlist_init(&errs, stderr);
	REQUIRE(sc_read(runs, 3, SC_AUTO, &errs, &t, err, sizeof err) == DW_OK);
	CHECK_EQ_U64(errs.n, 0);
	check_table("strong", &t, w, false);
	sc_free(&t);
	rd_errlist_free(&errs);
}

/*
 * Weak scaling: 30 ms per task on 1, 2 and 4 tasks, one of the 4 taking
 * 36 (T 36).  The total grows 4.2x on 4x the tasks: weak.
 *   4: mean 31.5, LB 31.5/36 = 0.875, CommE 1, PE 0.875,
 *      CompScal (30/1) / (126/4) = 0.952381, GE 0.833333
 */
static void
test_weak(void)
{
	static const uint64_t a[] = {30}, b[] = {30, 30},
	                      c[] = {30, 30, 30, 36};
	const want w[] = {
	    {1, 1, 1, 1, 1, 1},
	    {2, 1, 1, 1, 1, 1},
	    {4, 0.875, 1, 0.875, 30 / 31.5, 0.875 * 30 / 31.5},
	};
	char dirs[3][700];
	const char *runs[3] = {dirs[0], dirs[1], dirs[2]};
	sc_table t;
	rd_errlist errs;
	char err[512];

	run_dir("weak1", a, 1, dirs[0], sizeof dirs[0]);
	run_dir("weak2", b, 2, dirs[1], sizeof dirs[1]);
	run_dir("weak4", c, 4, dirs[2], sizeof dirs[2]);
	rd_errlist_init(&errs, stderr);
	REQUIRE(sc_read(runs, 3, SC_AUTO, &errs, &t, err, sizeof err) == DW_OK);
	check_table("weak", &t, w, true);
	sc_free(&t);
	rd_errlist_free(&errs);
}

/* The real command on the strong runs: every format carries the
 * hand-computed figures; bad input is refused with its reason. */
static void
test_command(char dirs[3][700])
{
	char args[3200], out[600], html[600];
	char *got;

	snprintf(out, sizeof out, "%s/out", scratch);
	snprintf(html, sizeof html, "%s/scaling.html", scratch);
	snprintf(args, sizeof args, "%s %s %s --csv --html %s", dirs[0],
	         dirs[1], dirs[2], html);
	CHECK_EQ_U64(tool(args, out), 0);
	got = slurp(out);
	REQUIRE(got != NULL);
	CHECK(strstr(got, "trace,scaling,workers,processes,elapsed_ns,"
	                  "useful_ns,parallel_efficiency,") == got);
	CHECK(strstr(got, ",strong,4,4,33000000,132000000,1.000000,1.000000,"
	                  "1.000000,1.000000,1.000000,0.909091,0.909091,,\n"));
	CHECK(strstr(got, ",strong,2,2,70000000,120000000,0.857143,0.857143,"
	                  "1.000000,"));
	free(got);
	got = slurp(html);
	REQUIRE(got != NULL);
	CHECK(strstr(got, "data-k=\"global_efficiency\"") != NULL);
	CHECK(strstr(got, "<title>GE 4 workers: 0.91</title>") != NULL);
	CHECK(strstr(got, "unavailable (") != NULL);
	free(got);

	snprintf(args, sizeof args, "%s %s %s --json", dirs[0], dirs[1],
	         dirs[2]);
	CHECK_EQ_U64(tool(args, out), 0);
	got = slurp(out);
	REQUIRE(got != NULL);
	CHECK(strstr(got, "\"scaling\": \"strong\"") != NULL);
	CHECK(strstr(got, "\"computation_scalability\": 0.909091, "
	                  "\"global_efficiency\": 0.909091") != NULL);
	CHECK(strstr(got, "\"counters\": {\"available\": false, "
	                  "\"reason\": \"") != NULL);
	free(got);

	CHECK_EQ_U64(tool(dirs[0], out), 0);
	got = slurp(out);
	REQUIRE(got != NULL);
	CHECK(strstr(got, "strong scaling") != NULL);
	free(got);

	/* forced weak on the strong runs: CompScal of 4 = (120/1)/(132/4) */
	snprintf(args, sizeof args, "%s %s %s --json --weak", dirs[0], dirs[1],
	         dirs[2]);
	CHECK_EQ_U64(tool(args, out), 0);
	got = slurp(out);
	REQUIRE(got != NULL);
	CHECK(strstr(got, "\"scaling\": \"weak\"") != NULL);
	CHECK(strstr(got, "\"computation_scalability\": 3.636364") != NULL);
	free(got);
	snprintf(args, sizeof args, "%s --weak --strong", dirs[0]);
	CHECK_EQ_U64(tool(args, out), 2);
	CHECK_EQ_U64(tool("", out), 2);
	snprintf(args, sizeof args, "%s/nothing", scratch);
	CHECK_EQ_U64(tool(args, out), 3);
	snprintf(args, sizeof args, "%s --csv --json", dirs[0]);
	CHECK_EQ_U64(tool(args, out), 2);
}

int
main(void)
{
	char dirs[3][700];

	snprintf(scratch, sizeof scratch, "%s", tu_tmpdir("pop_scaling"));
	test_strong(dirs);
	test_weak();
	test_command(dirs);
	if (!getenv("KEEP"))
		tu_rmtree(scratch);
	return tu_report("pop_scaling");
}
