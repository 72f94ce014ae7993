/*
 * The tool's messages for the mistakes a new user makes (issue 18): each
 * names the cause and what to do, through the real `dwork` tool.  A bad
 * path to summary, an empty trace directory, an empty --from/--to range,
 * a program in the current directory named without ./, a traced program
 * that never starts dwork, and --csv with --json.
 */
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

/* Lines of the output file. */
static size_t
lines(void)
{
	FILE *f = fopen(out, "r");
	size_t n = 0;
	int c;

	if (!f)
		return 0;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static void
test_paths(const char *dir)
{
	char args[2000];

	snprintf(args, sizeof args, "summary '%s/X.prv'", dir);
	CHECK_EQ_U64(run(args), 3);
	CHECK(vu_file_has(out, "X.prv: No such file or directory"));
	CHECK(vu_file_has(out, "give a trace directory"));
	CHECK(vu_file_has(out, "or a merged FILE.prv"));
	CHECK(!vu_file_has(out, "Not a directory"));
	CHECK_EQ_U64(lines(), 2);
	/* an empty directory: one cause, one remedy, for every command */
	snprintf(args, sizeof args, "merge '%s/empty'", dir);
	CHECK_EQ_U64(run(args), 3);
	CHECK(vu_file_has(out, "no trace files (*.dwp, *.dwt)"));
	CHECK(vu_file_has(out, "dwork run --trace="));
	CHECK(!vu_file_has(out, "no such file or directory"));
	CHECK_EQ_U64(lines(), 2);
	snprintf(args, sizeof args, "stats '%s/empty'", dir);
	CHECK_EQ_U64(run(args), 3);
	CHECK(vu_file_has(out, "dwork stats: "));
	CHECK(vu_file_has(out, "no trace files"));
	/* a merged trace given to merge: says to convert it */
	snprintf(args, sizeof args, "merge '%s/a.prv'", dir);
	CHECK_EQ_U64(run(args), 3);
	CHECK(vu_file_has(out, "not a trace directory"));
	CHECK(vu_file_has(out, "dwork convert"));
}

static void
test_options(const char *dir)
{
	char args[2000];

	snprintf(args, sizeof args, "view '%s/a.prv' --from 3s --to 1s", dir);
	CHECK_EQ_U64(run(args), 2);
	CHECK(vu_file_has(out, "--from 3 s is not before --to 1 s"));
	CHECK(!vu_file_has(out, "''"));
	snprintf(args, sizeof args, "stats '%s/a.prv' --csv --json", dir);
	CHECK_EQ_U64(run(args), 2);
	CHECK(vu_file_has(out, "--csv and --json exclude each other"));
	CHECK(!vu_file_has(out, "\"pop\""));
	snprintf(args, sizeof args, "stats '%s/a.prv' --json --json", dir);
	CHECK_EQ_U64(run(args), 0);
}

static void
test_run(const char *dir)
{
	char args[2000], path[3000];
	FILE *f;

	/* a program in the current directory, named without ./ */
	snprintf(path, sizeof path, "%s/a_pmap", dir);
	REQUIRE((f = fopen(path, "w")) != NULL);
	fputs("#!/bin/sh\nexit 0\n", f);
	fclose(f);
	REQUIRE(chmod(path, 0755) == 0);
	snprintf(path, sizeof path,
	         "cd '%s' && PATH=/usr/bin:/bin '%s' run a_pmap", dir, tool);
	CHECK_EQ_U64(vu_sh(path, out), 127);
	CHECK(vu_file_has(out, "'a_pmap' is not on PATH"));
	CHECK(vu_file_has(out, "say ./a_pmap"));
	snprintf(path, sizeof path, "%s/a_pmap.c", dir);
	REQUIRE((f = fopen(path, "w")) != NULL);
	fclose(f);
	snprintf(path, sizeof path,
	         "cd '%s' && PATH=/usr/bin:/bin '%s' run a_pmap.c", dir, tool);
	CHECK_EQ_U64(vu_sh(path, out), 127);
	CHECK(vu_file_has(out, "C source: build it first"));
	/* traced, but the program never starts dwork */
	snprintf(path, sizeof path, "cd '%s' && '%s' run --trace /bin/true",
	         dir, tool);
	CHECK_EQ_U64(vu_sh(path, out), 3);
	CHECK(vu_file_has(out, "'/bin/true' never started dwork"));
	CHECK(vu_file_has(out, "true.trace/"));
	snprintf(args, sizeof args, "run --trace='%s/t' -- sh -c 'exit 7'",
	         dir);
	CHECK_EQ_U64(run(args), 7); /* its own status wins */
	CHECK(vu_file_has(out, "'sh' never started dwork"));
	/* not traced: the tool is the program, as before */
	CHECK_EQ_U64(run("run /bin/true"), 0);
	CHECK_EQ_U64(lines(), 0);
}

int
main(void)
{
	char args[2000], path[900];
	const char *dir;

	if (!vu_tool(tool, sizeof tool)) {
		printf("tool_messages: no dwork tool; skipped\n");
		return TEST_SKIP;
	}
	dir = tu_tmpdir("tool-messages");
	snprintf(out, sizeof out, "%s/out.txt", dir);
	snprintf(path, sizeof path, "%s/empty", dir);
	REQUIRE(mkdir(path, 0755) == 0);
	snprintf(path, sizeof path, "%s/tr", dir);
	REQUIRE(mkdir(path, 0755) == 0);
	vu_trace_a(path);
	snprintf(args, sizeof args, "merge '%s' -o '%s/a' -q", path, dir);
	REQUIRE(run(args) == 0);
	test_paths(dir);
	test_options(dir);
	test_run(dir);
	if (!tu_failures)
		tu_rmtree(dir);
	return tu_report("tool_messages");
}
