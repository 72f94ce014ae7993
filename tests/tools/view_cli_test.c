/*
 * The commands' side of the formats: `dwork merge --format` (the
 * default, several formats, an unknown one) and `dwork convert` (a
 * merged .prv, a trace directory, usage errors, input that is not
 * there, Paraver over its own input).  Runs the real tool (skipped when
 * there is none).
 */
#include "view_util.h"

static char tool[1024];

static int
run(const char *args, const char *out)
{
	char cmd[3000];

	snprintf(cmd, sizeof cmd, "'%s' %s", tool, args);
	return vu_sh(cmd, out);
}

static void
test_merge(const char *dir)
{
	char args[2000], out[800], path[800];

	snprintf(out, sizeof out, "%s/out.txt", dir);
	/* The default: Paraver only. */
	snprintf(args, sizeof args, "merge '%s' -o '%s/a'", dir, dir);
	CHECK_EQ_U64(run(args, out), 0);
	CHECK(vu_file_has(out, "/a.prv: 2 tasks"));
	snprintf(path, sizeof path, "%s/a.json", dir);
	CHECK(!vu_exists(path));
	/* Several, the summary under the first. */
	snprintf(args, sizeof args, "merge '%s' -o '%s/b' --format=json,prv",
	         dir, dir);
	CHECK_EQ_U64(run(args, out), 0);
	CHECK(vu_file_has(out, "/b.json: 2 tasks"));
	CHECK(vu_file_has(out, "  prv: "));
	snprintf(path, sizeof path, "%s/b.pcf", dir);
	CHECK(vu_exists(path));
	/* Unknown: a usage error naming the known formats; nothing written. */
	snprintf(args, sizeof args, "merge '%s' -o '%s/c' -f json,bogus", dir,
	         dir);
	CHECK_EQ_U64(run(args, out), 2);
	CHECK(vu_file_has(out, "unknown format 'bogus' (known: prv, otf2, "
	                       "json"));
	snprintf(path, sizeof path, "%s/c.json", dir);
	CHECK(!vu_exists(path));
	snprintf(args, sizeof args, "merge '%s' -f", dir);
	CHECK_EQ_U64(run(args, out), 2);
	snprintf(args, sizeof args, "merge --help");
	CHECK_EQ_U64(run(args, out), 0);
	CHECK(vu_file_has(out, "-f, --format LIST"));
}

static void
test_convert(const char *dir)
{
	char args[2000], out[800], path[800];
	vu_counts a, b;

	snprintf(out, sizeof out, "%s/out.txt", dir);
	snprintf(args, sizeof args, "merge '%s' -o '%s/m' -f prv,json -q", dir,
	         dir);
	CHECK_EQ_U64(run(args, out), 0);
	/* The default: JSON beside the .prv. */
	snprintf(args, sizeof args, "convert '%s/m.prv'", dir);
	CHECK_EQ_U64(run(args, out), 0);
	CHECK(vu_file_has(out, "/m.json (15 records)"));
	snprintf(path, sizeof path, "%s/m.json", dir);
	REQUIRE(vu_json_counts(path, &a));
	/* A trace directory: merged on the way. */
	snprintf(args, sizeof args, "convert '%s' -o '%s/d' -f json", dir, dir);
	CHECK_EQ_U64(run(args, out), 0);
	snprintf(path, sizeof path, "%s/d.json", dir);
	REQUIRE(vu_json_counts(path, &b));
	CHECK(a.ok && b.ok);
	CHECK_EQ_U64(vu_get(&a, "events"), vu_get(&b, "events"));
	CHECK_EQ_U64(vu_get(&a, "X.state"), 11);
	CHECK_EQ_U64(vu_get(&a, "X.function"), 3);
	/* Errors. */
	snprintf(args, sizeof args, "convert '%s/m.prv' -f prv", dir);
	CHECK_EQ_U64(run(args, out), 2);
	CHECK(vu_file_has(out, "would replace"));
	snprintf(args, sizeof args, "convert '%s/none.prv'", dir);
	CHECK_EQ_U64(run(args, out), 3);
	snprintf(args, sizeof args, "convert");
	CHECK_EQ_U64(run(args, out), 2);
	CHECK(vu_file_has(out, "no TRACE given"));
	snprintf(args, sizeof args, "convert '%s/m.prv' -f svg", dir);
	CHECK_EQ_U64(run(args, out), 2);
	/* A damaged .prv: converted, each bad line reported, exit 1. */
	snprintf(args, sizeof args,
	         "sh -c \"echo 'garbage line' >> '%s/m.prv'\"", dir);
	CHECK_EQ_U64(vu_sh(args, out), 0);
	snprintf(args, sizeof args, "convert '%s/m.prv' -o '%s/e'", dir, dir);
	CHECK_EQ_U64(run(args, out), 1);
	CHECK(vu_file_has(out, "line "));
	snprintf(path, sizeof path, "%s/e.json", dir);
	REQUIRE(vu_json_counts(path, &b));
	CHECK(b.ok);
	CHECK_EQ_U64(vu_get(&b, "X.state"), 11);
	snprintf(args, sizeof args, "convert --help");
	CHECK_EQ_U64(run(args, out), 0);
	CHECK(vu_file_has(out, "usage: dwork convert TRACE"));
}

int
main(void)
{
	const char *dir;

	setenv("TZ", "UTC", 1);
	setenv("PYTHONIOENCODING", "utf-8", 1);
	if (!vu_tool(tool, sizeof tool) || !vu_have("python3")) {
		printf("view_cli: no dwork tool or no python3; skipped\n");
		return TEST_SKIP;
	}
	dir = tu_tmpdir("view-cli");
	vu_trace_a(dir);
	test_merge(dir);
	test_convert(dir);
	if (!tu_failures)
		tu_rmtree(dir);
	return tu_report("view_cli");
}
