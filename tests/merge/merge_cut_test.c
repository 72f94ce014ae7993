/*
 * Cutting at merge (dwork merge/convert --from --to --tasks --max-bytes)
 * through the real tool, on golden trace A (tests/view_util.h), whose
 * records are known, and on a random trace: what is kept, what is
 * clipped, what is counted as left out, and that every cut .prv passes
 * the strict checker (states tile each thread's time, no receive before
 * its send).  The same cut of the merged .prv by convert gives the same
 * records.
 */
#include "merge_util.h"
#include "view_util.h"

static char tool[1024];
static char out[800];

static int
run(const char *args)
{
	char cmd[3000];

	snprintf(cmd, sizeof cmd, "'%s' %s", tool, args);
	return vu_sh(cmd, out);
}

/* The .prv's record lines (no header), for comparing two cuts; *buf
 * gets the file, for free. */
static const char *
records(const char *prefix, char **buf)
{
	char path[900];
	char *nl;

	snprintf(path, sizeof path, "%s.prv", prefix);
	*buf = mt_slurp(path);
	REQUIRE(*buf != NULL);
	nl = strchr(*buf, '\n');
	return nl ? nl + 1 : *buf;
}

/*
 * Trace A cut to [300, 700) ns: task 0's Waiting [300,400) stays whole,
 * its Running [400,800) is clipped to [100,400), its Running [0,300)
 * and Idle are left out; task 1's Running [0,900) is clipped to
 * [0,400); both Idle states are left out (3 states out, 2 clipped);
 * the message (sent at 250) is cut; of the events, the function values
 * at 500, 600, 700 (task 0) and 600 (task 1) are kept, the events at
 * 100, 200, 850 (task 0) and 0 (task 1) are left out.
 */
static void
test_window(const char *dir)
{
	char args[2000], prefix[800], conv[800], full[800];
	pc_result r;
	vu_counts c;
	char *fa, *fb;

	snprintf(prefix, sizeof prefix, "%s/w", dir);
	snprintf(args, sizeof args,
	         "merge '%s/a' -o '%s' --from 300ns --to 700ns", dir, prefix);
	CHECK_EQ_U64(run(args), 0);
	CHECK(vu_file_has(out, "cut: 300 ns to 700 ns; left out: 3 state "
	                       "records (and 2 clipped at the window's "
	                       "edges), 4 event records, 1 communications "
	                       "cut"));
	CHECK(vu_file_has(out, "0 tasks (0 threads)"));
	mt_check(prefix, PC_ALL, &r);
	CHECK_EQ_U64(r.ftime, 400);
	CHECK_EQ_U64(r.ntasks, 2);
	CHECK_EQ_U64(r.states, 3);
	CHECK_EQ_U64(r.comms, 0);
	vu_prv_counts(prefix, &c);
	CHECK_EQ_U64(vu_get(&c, "state.3"), 100);
	CHECK_EQ_U64(vu_get(&c, "state.1"), 300 + 400);
	CHECK_EQ_U64(vu_get(&c, "funcs"), 4);
	/* the same cut of the merged trace, by convert */
	snprintf(full, sizeof full, "%s/full", dir);
	snprintf(args, sizeof args, "merge '%s/a' -o '%s' -q", dir, full);
	CHECK_EQ_U64(run(args), 0);
	snprintf(conv, sizeof conv, "%s/conv", dir);
	snprintf(args, sizeof args,
	         "convert '%s.prv' -o '%s' -f prv --from=300ns --to=700ns",
	         full, conv);
	CHECK_EQ_U64(run(args), 0);
	CHECK(vu_file_has(out, "1 communications cut"));
	CHECK(!strcmp(records(prefix, &fa), records(conv, &fb)));
	free(fa);
	free(fb);
}

/* Task 2 only (tracer task 1): its thread, renumbered task 1; task 1's
 * records and the message between them left out. */
static void
test_tasks(const char *dir)
{
	char args[2000], prefix[800];
	pc_result r;
	vu_counts c;

	snprintf(prefix, sizeof prefix, "%s/t", dir);
	snprintf(args, sizeof args, "merge '%s/a' -o '%s' --tasks 2", dir,
	         prefix);
	CHECK_EQ_U64(run(args), 0);
	CHECK(vu_file_has(out, "cut: 0 ns to 1 us, tasks 2; left out: 4 "
	                       "state records (and 0 clipped"));
	CHECK(vu_file_has(out, "1 communications cut"));
	CHECK(vu_file_has(out, "1 tasks (1 threads)"));
	mt_check(prefix, PC_ALL, &r);
	CHECK_EQ_U64(r.ntasks, 1);
	CHECK_EQ_U64(r.nthreads, 1);
	CHECK_EQ_U64(r.ftime, 1000);
	CHECK_EQ_U64(r.comms, 0);
	vu_prv_counts(prefix, &c);
	CHECK_EQ_U64(vu_get(&c, "state.1"), 900);
	CHECK_EQ_U64(vu_get(&c, "state.0"), 100);
	snprintf(args, sizeof args, "merge '%s/a' -o '%s' --tasks 1,3-4", dir,
	         prefix);
	CHECK_EQ_U64(run(args), 3);
	CHECK(vu_file_has(out, "task 4 is not in the trace (its tasks are 1 "
	                       "to 2)"));
}

/* A byte cap on a random trace: the .prv stays under it, is valid, and
 * the report says where the window ends. */
static void
test_cap(const char *dir)
{
	char args[2000], prefix[800], path[900], rnd[800];
	struct stat st;
	pc_result r, whole;

	snprintf(rnd, sizeof rnd, "%s/r", dir);
	REQUIRE(mkdir(rnd, 0755) == 0);
	vu_trace_random(rnd, 42);
	snprintf(prefix, sizeof prefix, "%s/whole", dir);
	snprintf(args, sizeof args, "merge '%s' -o '%s' -q", rnd, prefix);
	CHECK_EQ_U64(run(args), 0);
	mt_check(prefix, PC_ALL, &whole);
	snprintf(path, sizeof path, "%s.prv", prefix);
	REQUIRE(stat(path, &st) == 0);
	REQUIRE(st.st_size > 8000);
	snprintf(prefix, sizeof prefix, "%s/cap", dir);
	snprintf(args, sizeof args, "merge '%s' -o '%s' --max-bytes 4k", rnd,
	         prefix);
	CHECK_EQ_U64(run(args), 0);
	CHECK(vu_file_has(out, "--max-bytes 4000: the window ends at "));
	mt_check(prefix, PC_ALL, &r);
	snprintf(path, sizeof path, "%s.prv", prefix);
	REQUIRE(stat(path, &st) == 0);
	CHECK(st.st_size <= 4000);
	CHECK(st.st_size > 3000); /* a cap, not a guess far below it */
	CHECK(r.ftime < whole.ftime);
	CHECK(r.states + r.events + r.comms <
	      whole.states + whole.events + whole.comms);
}

/* Bad values name what is expected. */
static void
test_usage(const char *dir)
{
	char args[2000];

	snprintf(args, sizeof args, "merge '%s/a' --from 3s --to 1s", dir);
	CHECK_EQ_U64(run(args), 2);
	CHECK(vu_file_has(out, "--from 3 s is not before --to 1 s"));
	snprintf(args, sizeof args, "merge '%s/a' --tasks 0,x", dir);
	CHECK_EQ_U64(run(args), 2);
	CHECK(vu_file_has(out, "task numbers: 1,3-5"));
	snprintf(args, sizeof args, "convert '%s/a' --max-bytes lots", dir);
	CHECK_EQ_U64(run(args), 2);
	CHECK(vu_file_has(out, "bytes: 1000000, 500k"));
	snprintf(args, sizeof args, "merge '%s/a' -o '%s/x' --from 9s", dir,
	         dir);
	CHECK_EQ_U64(run(args), 3);
	CHECK(vu_file_has(out, "--from 9 s is not before the end of the "
	                       "trace"));
}

int
main(void)
{
	const char *dir;
	char path[900];

	setenv("TZ", "UTC", 1);
	if (!vu_tool(tool, sizeof tool)) {
		printf("merge_cut: no dwork tool; skipped\n");
		return TEST_SKIP;
	}
	dir = tu_tmpdir("merge-cut");
	snprintf(out, sizeof out, "%s/out.txt", dir);
	snprintf(path, sizeof path, "%s/a", dir);
	REQUIRE(mkdir(path, 0755) == 0);
	vu_trace_a(path);
	test_window(dir);
	test_tasks(dir);
	test_cap(dir);
	test_usage(dir);
	if (!tu_failures)
		tu_rmtree(dir);
	return tu_report("merge_cut");
}
