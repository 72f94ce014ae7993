/*
 * -finstrument-functions: a program built with it (instrument_prog) gets
 * its call tree recorded with the right names and nesting; name and
 * duration filters keep what they should.
 */
#include <sys/wait.h>

#include "tracefile/reader.h"
#include "testutil.h"

struct call {
	int depth;
	char name[64];
	int enter;
};

/* Runs the program with extra environment; returns its records. */
static int
run_prog(const char *dir, const char *env, struct call *out, int max)
{
	pid_t pid = fork();
	if (pid == 0) {
		setenv("DWT_DIR", dir, 1);
		setenv("DWT_PROGRAM", "instr", 1);
		if (env)
			putenv((char *)env);
		execl(INSTRUMENT_PROG, "instrument_prog", (char *)NULL);
		_exit(127);
	}
	int st;
	REQUIRE(pid > 0 && waitpid(pid, &st, 0) == pid);
	REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	rd_errlist errs;
	rd_errlist_init(&errs, stderr);
	rd_dir *d;
	REQUIRE(rd_dir_open(dir, &errs, &d) == DW_OK);
	rd_proc *p;
	REQUIRE(rd_proc_open(d->procs[0].proc_path, &errs, &p) == DW_OK);
	rd_thread *t;
	REQUIRE(rd_thread_open(d->procs[0].thread_paths[0], &errs, &t) ==
	        DW_OK);
	int n = 0, depth = 0;
	rd_rec r;
	while (rd_thread_next(t, &r) && n < max) {
		if (r.kind != FMT_R_FUNC_ENTER && r.kind != FMT_R_FUNC_EXIT)
			continue;
		int in = r.kind == FMT_R_FUNC_ENTER;
		const char *nm = rd_proc_func_name(p, r.u.func.addr);
		out[n].enter = in;
		out[n].depth = in ? depth++ : --depth;
		snprintf(out[n].name, sizeof out[n].name, "%s", nm ? nm : "?");
		n++;
	}
	rd_thread_close(t);
	rd_proc_close(p);
	rd_dir_close(d);
	CHECK_EQ_U64(rd_errlist_count(&errs), 0);
	rd_errlist_free(&errs);
	return n;
}

static int
count(const struct call *c, int n, const char *name)
{
	int k = 0;
	for (int i = 0; i < n; i++)
		k += c[i].enter && !strcmp(c[i].name, name);
	return k;
}

int
main(void)
{
	static struct call c[4096];
	char base[512], dir[600];
	snprintf(base, sizeof base, "%s", tu_tmpdir("instr"));

	snprintf(dir, sizeof dir, "%s/all", base);
	int n = run_prog(dir, NULL, c, 4096);
	/* level1 > level2 > level3, then leaf_short inside level2 */
	static const char *want[] = {"level1", "level2",     "level3",
	                             "level3", "leaf_short", "leaf_short",
	                             "level2", "level1"};
	REQUIRE(n >= 8);
	for (int i = 0; i < 8; i++)
		if (strcmp(c[i].name, want[i])) {
			fprintf(stderr, "record %d is %s, expected %s\n", i,
			        c[i].name, want[i]);
			tu_failures++;
		}
	CHECK(c[2].depth == 2 && c[2].enter && c[3].depth == 2 && !c[3].enter);
	CHECK_EQ_U64(count(c, n, "leaf_short"), 1001);
	CHECK(c[n - 1].depth == 0); /* balanced */

	snprintf(dir, sizeof dir, "%s/excl", base);
	n = run_prog(dir, "DWT_INSTRUMENT_EXCLUDE=leaf_*", c, 4096);
	CHECK_EQ_U64(count(c, n, "leaf_short"), 0);
	CHECK_EQ_U64(count(c, n, "level3"), 1);

	snprintf(dir, sizeof dir, "%s/incl", base);
	n = run_prog(dir, "DWT_INSTRUMENT_INCLUDE=level2,level3", c, 4096);
	CHECK_EQ_U64(n, 4);
	CHECK_EQ_U64(count(c, n, "level1"), 0);

	snprintf(dir, sizeof dir, "%s/min", base);
	n = run_prog(dir, "DWT_INSTRUMENT_MIN_NS=500000", c, 4096);
	/* the 2 ms call and its callers stay; the short leaves go */
	CHECK_EQ_U64(count(c, n, "level3"), 1);
	CHECK_EQ_U64(count(c, n, "level1"), 1);
	CHECK_EQ_U64(count(c, n, "leaf_short"), 0);
	tu_rmtree(base);
	return tu_report("trace_instrument");
}
