/*
 * The Chrome trace event (JSON) writer: python's json module reads what
 * it wrote on the golden traces of view_util.h, and the counts agree
 * with the regions worked out by hand there and with our own .prv
 * (events, messages, time per state); slices nest the way a viewer takes
 * them; names are escaped; bad input and bad outputs are errors, never
 * partial files.
 */
#include <fcntl.h>

#include "view_util.h"

/* The JSON counts that follow from our .prv, on any trace. */
static void
agree_with_prv(const vu_counts *js, const vu_counts *prv)
{
	static const struct {
		const char *prv, *json;
	} st[] = {{"state.0", "state.Idle"},
	          {"state.1", "state.Running"},
	          {"state.3", "state.Waiting_a_message"},
	          {"state.4", "state.Blocking_Send"},
	          {"state.5", "state.Synchronization"},
	          {"state.6", "state.Test/Probe"}};

	CHECK(js->ok);
	CHECK_EQ_U64(vu_get(js, "ph.i"), vu_get(prv, "events"));
	CHECK_EQ_U64(vu_get(js, "ph.s"), vu_get(prv, "comms"));
	CHECK_EQ_U64(vu_get(js, "ph.f"), vu_get(prv, "comms"));
	CHECK_EQ_U64(vu_get(js, "flows_paired"), vu_get(prv, "comms"));
	CHECK_EQ_U64(vu_get(js, "nested"), 1);
	for (size_t i = 0; i < sizeof st / sizeof st[0]; i++)
		CHECK_EQ_U64(vu_get(js, st[i].json), vu_get(prv, st[i].prv));
	CHECK(vu_get(js, "X.state") >= vu_get(prv, "states"));
}

static void
test_trace_a(void)
{
	const char *dir = tu_tmpdir("view-json-a");
	char prefix[600], json[700];
	vu_counts js, prv;
	rd_errlist errs;
	mg_report rep;

	vu_trace_a(dir);
	snprintf(prefix, sizeof prefix, "%s/out", dir);
	snprintf(json, sizeof json, "%s.json", prefix);
	rd_errlist_init(&errs, stderr);
	CHECK(vu_merge(dir, prefix, "prv,json", &rep, &errs) == DW_OK);
	CHECK_EQ_U64(rd_errlist_count(&errs), 0);
	vu_prv_counts(prefix, &prv);
	REQUIRE(vu_json_counts(json, &js));
	agree_with_prv(&js, &prv);
	CHECK_EQ_U64(vu_get(&js, "X.state"), 11);
	CHECK_EQ_U64(vu_get(&js, "X.function"), 3);
	CHECK_EQ_U64(vu_get(&js, "func.compute"), 2);
	CHECK_EQ_U64(vu_get(&js, "func.inner"), 1);
	CHECK_EQ_U64(vu_get(&js, "state.Running"), 1600);
	CHECK_EQ_U64(vu_get(&js, "state.Waiting_a_message"), 100);
	CHECK_EQ_U64(vu_get(&js, "state.Idle"), 300);
	CHECK_EQ_U64(vu_get(&js, "ph.i"), 2);
	CHECK_EQ_U64(vu_get(&js, "ph.s"), 1);
	CHECK_EQ_U64(vu_get(&js, "M.process_name"), 2);
	CHECK_EQ_U64(vu_get(&js, "M.thread_name"), 2);
	CHECK_EQ_U64(vu_get(&js, "duration_ns"), 1000);
	/* Exact lines: times in us with ns decimals, pid = task + 1, tid
	 * unique, labels escaped, the flow bound to its slices. */
	CHECK(vu_file_has(json,
	                  "{\"ph\":\"X\",\"pid\":1,\"tid\":1,"
	                  "\"ts\":0.200,\"dur\":0.500,\"name\":\"compute\","
	                  "\"cat\":\"function\"}"));
	CHECK(vu_file_has(
	    json, "{\"ph\":\"X\",\"pid\":2,\"tid\":2,"
	          "\"ts\":0.000,\"dur\":0.600,\"name\":\"compute\","
	          "\"cat\":\"function\"},\n{\"ph\":\"X\",\"pid\":2,\"tid\":2,"
	          "\"ts\":0.000,\"dur\":0.600,\"name\":\"Running\""));
	CHECK(vu_file_has(json, "\"name\":\"Phase\",\"cat\":\"event\",\"args\":"
	                        "{\"type\":1000,\"value\":5,\"label\":\"five "
	                        "\\\"5\\\"\"}}"));
	CHECK(vu_file_has(json, "{\"ph\":\"s\",\"id\":1,\"pid\":1,\"tid\":1,"
	                        "\"ts\":0.250,"));
	CHECK(vu_file_has(json, "{\"ph\":\"f\",\"bp\":\"e\",\"id\":1,\"pid\":2,"
	                        "\"tid\":2,\"ts\":0.350,"));
	CHECK(vu_file_has(json, "\"name\":\"thread_name\",\"args\":{\"name\":"
	                        "\"task 1 thread 1 (main)\"}"));
	rd_errlist_free(&errs);
	tu_rmtree(dir);
}

static void
test_trace_b(void)
{
	const char *dir = tu_tmpdir("view-json-b");
	char prefix[600], json[700];
	vu_counts js, prv;
	rd_errlist errs;
	mg_report rep;

	vu_trace_b(dir);
	snprintf(prefix, sizeof prefix, "%s/out", dir);
	snprintf(json, sizeof json, "%s.json", prefix);
	rd_errlist_init(&errs, NULL);
	CHECK(vu_merge(dir, prefix, "json,prv", &rep, &errs) == DW_OK);
	vu_prv_counts(prefix, &prv);
	REQUIRE(vu_json_counts(json, &js));
	agree_with_prv(&js, &prv);
	CHECK_EQ_U64(vu_get(&js, "X.state"), 8);
	CHECK_EQ_U64(vu_get(&js, "X.function"), 3);
	CHECK_EQ_U64(vu_get(&js, "func.f"), 2);
	CHECK_EQ_U64(vu_get(&js, "func.g\"\xef\xbf\xbd\x01"), 1);
	CHECK_EQ_U64(vu_get(&js, "state.Running"), 500);
	CHECK_EQ_U64(vu_get(&js, "state.Synchronization"), 150);
	CHECK_EQ_U64(vu_get(&js, "ph.i"), 2);
	CHECK_EQ_U64(vu_get(&js, "ph.s"), 0);
	CHECK_EQ_U64(vu_get(&js, "M.process_name"), 3);
	CHECK_EQ_U64(vu_get(&js, "M.thread_name"), 4);
	CHECK(vu_file_has(json, "\"name\":\"g\\\"\\ufffd\\u0001\""));
	rd_errlist_free(&errs);
	tu_rmtree(dir);
}

/* Random traces: slices always nest, and each state's time is the
 * .prv's, however states and functions cross. */
static void
test_random(void)
{
	for (uint64_t seed = 1; seed <= 6; seed++) {
		const char *dir = tu_tmpdir("view-json-rand");
		char prefix[600], json[700];
		vu_counts js, prv;
		rd_errlist errs;
		mg_report rep;

		vu_trace_random(dir, seed);
		snprintf(prefix, sizeof prefix, "%s/out", dir);
		snprintf(json, sizeof json, "%s.json", prefix);
		rd_errlist_init(&errs, NULL);
		CHECK(vu_merge(dir, prefix, "prv,json", &rep, &errs) == DW_OK);
		vu_prv_counts(prefix, &prv);
		REQUIRE(vu_json_counts(json, &js));
		agree_with_prv(&js, &prv);
		CHECK(vu_get(&js, "X.function") > 0);
		if (tu_failures)
			fprintf(stderr, "seed %llu: %s kept\n",
			        (unsigned long long)seed, dir);
		else
			tu_rmtree(dir);
		rd_errlist_free(&errs);
	}
}

/* A cut thread file is merged up to the cut: still valid JSON. */
static void
test_damaged(void)
{
	const char *dir = tu_tmpdir("view-json-bad");
	char prefix[600], json[700], path[1200];
	vu_counts js;
	rd_errlist errs;
	mg_report rep;

	vu_trace_a(dir);
	snprintf(path, sizeof path, "%s/gold.100.00000000000000a1.0.dwt", dir);
	REQUIRE(truncate(path, FMT_HEADER_PAGE + 64 + 3 * 16 + 5) == 0);
	snprintf(prefix, sizeof prefix, "%s/out", dir);
	snprintf(json, sizeof json, "%s.json", prefix);
	rd_errlist_init(&errs, NULL);
	CHECK(vu_merge(dir, prefix, "json", &rep, &errs) == DW_OK);
	CHECK(rd_errlist_count(&errs) > 0);
	REQUIRE(vu_json_counts(json, &js));
	CHECK(js.ok);
	CHECK_EQ_U64(vu_get(&js, "nested"), 1);
	CHECK(vu_get(&js, "X.state") > 0);
	rd_errlist_free(&errs);
	tu_rmtree(dir);
}

static void
test_bad_outputs(void)
{
	const char *dir = tu_tmpdir("view-json-out");
	char prefix[600], path[700];
	rd_errlist errs;
	mg_report rep;

	vu_trace_a(dir);
	rd_errlist_init(&errs, NULL);
	/* A directory that does not exist: nothing merged, nothing left. */
	snprintf(prefix, sizeof prefix, "%s/out", dir);
	CHECK(vu_merge("/nonexistent/dir.trace", prefix, "json", &rep, &errs) ==
	      DW_ENOENT);
	snprintf(path, sizeof path, "%s.json", prefix);
	CHECK(!vu_exists(path));
	snprintf(path, sizeof path, "%s.json.tmp", prefix);
	CHECK(!vu_exists(path));
	/* An output that cannot be created: the error, no Paraver left. */
	snprintf(prefix, sizeof prefix, "%s/no/such/dir/out", dir);
	CHECK(vu_merge(dir, prefix, "prv,json", &rep, &errs) != DW_OK);
	snprintf(prefix, sizeof prefix, "%s/out", dir);
	snprintf(path, sizeof path, "%s.prv", prefix);
	CHECK(!vu_exists(path));
	rd_errlist_free(&errs);
	tu_rmtree(dir);
}

static void
test_format_list(void)
{
	const mg_format *f[8];
	char err[512];

	CHECK_EQ_U64(mg_formats_parse("json", f, 8, err, sizeof err), 1);
	CHECK(!strcmp(f[0]->name, "json"));
	CHECK_EQ_U64(mg_formats_parse("prv,json,prv", f, 8, err, sizeof err),
	             2);
	CHECK_EQ_U64(mg_formats_parse("prv,,json", f, 8, err, sizeof err), 0);
	CHECK(strstr(err, "empty format name") != NULL);
	CHECK_EQ_U64(mg_formats_parse("", f, 8, err, sizeof err), 0);
	CHECK_EQ_U64(mg_formats_parse("prv,svgz", f, 8, err, sizeof err), 0);
	CHECK(strstr(err, "unknown format 'svgz' (known: prv, otf2, json") !=
	      NULL);
	if (!vu_have_otf2()) {
		CHECK_EQ_U64(mg_formats_parse("otf2", f, 8, err, sizeof err),
		             0);
		CHECK(strstr(err, "without libotf2") != NULL);
	}
}

int
main(void)
{
	setenv("TZ", "UTC", 1);
	setenv("PYTHONIOENCODING", "utf-8", 1);
	if (!vu_have("python3")) {
		printf("view_json: no python3; skipped\n");
		return TEST_SKIP;
	}
	test_format_list();
	test_trace_a();
	test_trace_b();
	test_random();
	test_damaged();
	test_bad_outputs();
	return tu_report("view_json");
}
