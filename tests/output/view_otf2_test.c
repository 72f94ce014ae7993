/*
 * The OTF2 writer: otf2-print reads every archive this test writes, and
 * its counts agree with ours: enter and leave records with the regions
 * worked out by hand for the golden traces (and with the JSON writer's
 * slices, the same nesting), messages and metrics with our .prv.
 * Random traces where states and functions cross every way agree too.
 * Damaged input still gives a whole archive; an archive is replaced only
 * where one of ours was.  Skipped (77) when otf2-print is missing;
 * without libotf2 in the build, checks that --format otf2 says so.
 */
#include "view_util.h"

/* otf2-print's counts against ours (the .prv, and the JSON slices). */
static void
agree(const vu_counts *o2, const vu_counts *prv, const vu_counts *js)
{
	CHECK(o2->ok);
	CHECK_EQ_U64(vu_get(o2, "backwards"), 0);
	CHECK_EQ_U64(vu_get(o2, "ENTER"), vu_get(o2, "LEAVE"));
	CHECK_EQ_U64(vu_get(o2, "MPI_SEND"), vu_get(prv, "comms"));
	CHECK_EQ_U64(vu_get(o2, "MPI_RECV"), vu_get(prv, "comms"));
	CHECK_EQ_U64(vu_get(o2, "METRIC"), vu_get(prv, "events"));
	if (js->ok)
		CHECK_EQ_U64(vu_get(o2, "ENTER"),
		             vu_get(js, "X.state") + vu_get(js, "X.function"));
}

/* Merges a golden trace into all three formats and compares; regions,
 * metrics and msgs are the hand-computed counts (UINT64_MAX: unknown). */
static void
golden(const char *tag, void (*make)(const char *), uint64_t regions,
       uint64_t metrics, uint64_t msgs)
{
	const char *dir = tu_tmpdir(tag);
	char prefix[600], path[800];
	vu_counts o2, prv, js;
	rd_errlist errs;
	mg_report rep;

	make(dir);
	snprintf(prefix, sizeof prefix, "%s/out", dir);
	rd_errlist_init(&errs, NULL);
	CHECK(vu_merge(dir, prefix, "otf2,json,prv", &rep, &errs) == DW_OK);
	snprintf(path, sizeof path, "%s-otf2/traces.otf2", prefix);
	CHECK(vu_exists(path));
	snprintf(path, sizeof path, "%s-otf2.tmp", prefix);
	CHECK(!vu_exists(path));
	snprintf(path, sizeof path, "%s-otf2/traces.otf2", prefix);
	REQUIRE(vu_otf2_counts(path, &o2));
	vu_prv_counts(prefix, &prv);
	snprintf(path, sizeof path, "%s.json", prefix);
	vu_json_counts(path, &js);
	agree(&o2, &prv, &js);
	if (regions != UINT64_MAX) {
		CHECK_EQ_U64(vu_get(&o2, "ENTER"), regions);
		CHECK_EQ_U64(vu_get(&o2, "METRIC"), metrics);
		CHECK_EQ_U64(vu_get(&o2, "MPI_SEND"), msgs);
	}
	rd_errlist_free(&errs);
	tu_rmtree(dir);
}

static void
random_a(const char *dir)
{
	vu_trace_random(dir, 11);
}

static void
random_b(const char *dir)
{
	vu_trace_random(dir, 12);
}

/* Definitions: names, clock, system tree, what Vampir shows. */
static void
test_defs(void)
{
	const char *dir = tu_tmpdir("view-otf2-defs");
	char prefix[600], cmd[1400], out[800];
	rd_errlist errs;
	mg_report rep;

	vu_trace_a(dir);
	snprintf(prefix, sizeof prefix, "%s/out", dir);
	snprintf(out, sizeof out, "%s/defs.txt", dir);
	rd_errlist_init(&errs, NULL);
	CHECK(vu_merge(dir, prefix, "otf2", &rep, &errs) == DW_OK);
	snprintf(cmd, sizeof cmd, "otf2-print -G '%s-otf2/traces.otf2'",
	         prefix);
	CHECK_EQ_U64(vu_sh(cmd, out), 0);
	CHECK(vu_file_has(out, "Ticks per Seconds: 1000000000"));
	CHECK(vu_file_has(out, "Global Offset: 1704164645000000000"));
	CHECK(vu_file_has(out, "Length: 1000"));
	CHECK(vu_file_has(out, "\"compute\""));
	CHECK(vu_file_has(out, "\"Waiting a message\""));
	CHECK(vu_file_has(out, "\"task 1 thread 1 (main)\""));
	CHECK(vu_file_has(out, "\"task 2 (pid 200 on node-a)\""));
	CHECK(vu_file_has(out, "\"node-a\""));
	CHECK(vu_file_has(out, "\"Phase\""));
	CHECK(vu_file_has(out, "\"dwork messages\""));
	/* Events: the message and a metric, with their times and values. */
	snprintf(cmd, sizeof cmd, "otf2-print '%s-otf2/traces.otf2'", prefix);
	CHECK_EQ_U64(vu_sh(cmd, out), 0);
	CHECK(vu_file_has(out, "1704164645000000250"));
	CHECK(vu_file_has(out, "Receiver: 1"));
	CHECK(vu_file_has(out, "Value: (\"Phase\" <0>; UINT64; 5)"));
	rd_errlist_free(&errs);
	tu_rmtree(dir);
}

/* A cut file still gives a whole archive; a bad output place is an
 * error that leaves nothing; a directory that is not an archive of ours
 * is never removed. */
static void
test_bad(void)
{
	const char *dir = tu_tmpdir("view-otf2-bad");
	char prefix[600], path[1200], keep[1200];
	vu_counts o2;
	rd_errlist errs;
	mg_report rep;
	FILE *f;

	vu_trace_a(dir);
	snprintf(path, sizeof path, "%s/gold.100.00000000000000a1.0.dwt", dir);
	REQUIRE(truncate(path, FMT_HEADER_PAGE + 64 + 5 * 16 + 3) == 0);
	snprintf(prefix, sizeof prefix, "%s/out", dir);
	rd_errlist_init(&errs, NULL);
	CHECK(vu_merge(dir, prefix, "otf2", &rep, &errs) == DW_OK);
	CHECK(rd_errlist_count(&errs) > 0);
	snprintf(path, sizeof path, "%s-otf2/traces.otf2", prefix);
	REQUIRE(vu_otf2_counts(path, &o2));
	CHECK(o2.ok);
	CHECK_EQ_U64(vu_get(&o2, "ENTER"), vu_get(&o2, "LEAVE"));
	/* Merged again: the old archive is replaced. */
	CHECK(vu_merge(dir, prefix, "otf2", &rep, &errs) == DW_OK);
	REQUIRE(vu_otf2_counts(path, &o2));
	CHECK(o2.ok);
	/* Not an archive of ours where ours would go: kept, an error. */
	snprintf(prefix, sizeof prefix, "%s/mine", dir);
	snprintf(path, sizeof path, "%s-otf2", prefix);
	REQUIRE(mkdir(path, 0755) == 0);
	snprintf(keep, sizeof keep, "%s-otf2/notes.txt", prefix);
	f = fopen(keep, "w");
	REQUIRE(f != NULL);
	fputs("mine\n", f);
	fclose(f);
	snprintf(path, sizeof path, "%s-otf2/traces.otf2", prefix);
	f = fopen(path, "w");
	REQUIRE(f != NULL);
	fclose(f);
	CHECK(vu_merge(dir, prefix, "otf2", &rep, &errs) != DW_OK);
	CHECK(vu_exists(keep));
	CHECK(vu_exists(path));
	snprintf(path, sizeof path, "%s-otf2.tmp", prefix);
	CHECK(!vu_exists(path));
	/* An output that cannot be created. */
	snprintf(prefix, sizeof prefix, "%s/no/such/dir/out", dir);
	CHECK(vu_merge(dir, prefix, "otf2", &rep, &errs) != DW_OK);
	rd_errlist_free(&errs);
	tu_rmtree(dir);
}

int
main(void)
{
	const mg_format *f[2];
	char err[512];

	setenv("TZ", "UTC", 1);
	setenv("PYTHONIOENCODING", "utf-8", 1);
	if (!vu_have_otf2()) {
		CHECK_EQ_U64(mg_formats_parse("otf2", f, 2, err, sizeof err),
		             0);
		CHECK(strstr(err, "built without libotf2") != NULL);
		printf("view_otf2: this build has no libotf2; skipped\n");
		return tu_failures ? 1 : TEST_SKIP;
	}
	if (!vu_have("otf2-print")) {
		printf("view_otf2: no otf2-print; skipped\n");
		return TEST_SKIP;
	}
	golden("view-otf2-a", vu_trace_a, 14, 2, 1);
	golden("view-otf2-b", vu_trace_b, 11, 2, 0);
	golden("view-otf2-r1", random_a, UINT64_MAX, 0, 0);
	golden("view-otf2-r2", random_b, UINT64_MAX, 0, 0);
	test_defs();
	test_bad();
	return tu_report("view_otf2");
}
