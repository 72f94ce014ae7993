/*
 * One set of figures and dense ids, on a golden trace with a known
 * answer, through the real `dwork` tool: the merge renumbers dwork's
 * function values 1..N by name, the same in every process, and labels
 * them in the .pcf; `dwork summary` (of the directory and of the .prv),
 * `dwork stats`, the Chrome JSON and the HTML timeline print the same
 * figures; per-function counts and durations match the synthetic runs;
 * a thread file with an impossible task id is reported, not a crash.
 */
#include <stdlib.h>
#include <sys/wait.h>

#include <dwork/dwork.h>
#include <dwork/trace.h>

#include "merge_synth.h"
#include "merge_util.h"

#define U 1000000ull /* the trace's unit: 1 ms */

/* The hashes the processes label (the runtime's would be FNV-1a). */
#define H_ZETA  0x9e000001u
#define H_ALPHA 0x11000002u
#define H_MID   0x55000003u
#define H_ANON  0x00000077u /* labelled by no process */

/* A run of function h on executor t from a to b (units). */
static void
run(ms_thread *t, uint64_t a, uint64_t b, uint32_t h)
{
	ms_push(t, a * U, DWT_STATE_RUNNING);
	ms_event(t, a * U, DW_EV_FUNCTION, h);
	ms_event(t, b * U, DW_EV_FUNCTION, 0);
	ms_pop(t, b * U);
}

/* Thread tid of p named name, idle from 1000 to 2100 around nothing. */
static void
idle_thread(ms_proc *p, uint32_t tid)
{
	ms_thread t;

	ms_thread_open(&t, p, tid);
	ms_push(&t, 1000 * U, DWT_STATE_IDLE);
	ms_pop(&t, 2100 * U);
	ms_thread_close(&t);
}

/*
 * Task 0: "master" runs 1000..1300 and 1900..2000 (400 useful), calls
 * zeta and alpha, waits between; its "dwork I/O" thread runs 1000..1500
 * (not counted).  Task 1 labels zeta, alpha, mid (in that order); its
 * executor runs alpha 1200..1500, zeta 1600..1700, alpha 1750..1850 and
 * an unlabelled hash 1900..1950 (550 useful, 550 idle).  Task 2 labels
 * mid and alpha only; its executor runs mid 1100..1400 and zeta
 * 1500..1800 (600 useful, 500 idle).  Everything ends at 2100: T = 1100.
 * Names by order: 0x00000077 = 1, alpha = 2, mid = 3, zeta = 4.
 */
static void
golden(const char *dir)
{
	ms_proc a, b, d;
	ms_thread t;

	ms_proc_init(&a, dir, 0xa1, 100, 0);
	ms_label_thread(&a, 0, "master");
	ms_label_thread(&a, 1, "dwork I/O");
	ms_label_type(&a, DW_EV_CALL, "dwork: remote call issued");
	ms_label_value(&a, DW_EV_CALL, H_ZETA, "zeta");
	ms_label_value(&a, DW_EV_CALL, H_ALPHA, "alpha");
	ms_proc_end(&a, 2100 * U);
	ms_thread_open(&t, &a, 0);
	ms_push(&t, 1000 * U, DWT_STATE_RUNNING);
	ms_event(&t, 1100 * U, DW_EV_CALL, H_ZETA);
	ms_event(&t, 1150 * U, DW_EV_CALL, H_ALPHA);
	ms_push(&t, 1300 * U, DWT_STATE_WAITING_MESSAGE);
	ms_pop(&t, 1900 * U);
	ms_push(&t, 2000 * U, DWT_STATE_IDLE);
	ms_pop(&t, 2100 * U);
	ms_pop(&t, 2100 * U);
	ms_thread_close(&t);
	ms_thread_open(&t, &a, 1);
	ms_push(&t, 1000 * U, DWT_STATE_RUNNING);
	ms_push(&t, 1500 * U, DWT_STATE_IDLE);
	ms_pop(&t, 2100 * U);
	ms_pop(&t, 2100 * U);
	ms_thread_close(&t);
	ms_proc_close(&a);

	ms_proc_init(&b, dir, 0xb2, 200, 1);
	ms_label_thread(&b, 0, "worker main");
	ms_label_thread(&b, 1, "executor 1");
	ms_label_type(&b, DW_EV_FUNCTION, "dwork: remote function running");
	ms_label_value(&b, DW_EV_FUNCTION, 0, "End");
	ms_label_value(&b, DW_EV_FUNCTION, H_ZETA, "zeta");
	ms_label_value(&b, DW_EV_FUNCTION, H_ALPHA, "alpha");
	ms_label_value(&b, DW_EV_FUNCTION, H_MID, "mid");
	ms_proc_end(&b, 2100 * U);
	idle_thread(&b, 0);
	ms_thread_open(&t, &b, 1);
	ms_push(&t, 1000 * U, DWT_STATE_IDLE);
	run(&t, 1200, 1500, H_ALPHA);
	run(&t, 1600, 1700, H_ZETA);
	run(&t, 1750, 1850, H_ALPHA);
	run(&t, 1900, 1950, H_ANON);
	ms_pop(&t, 2100 * U);
	ms_thread_close(&t);
	ms_proc_close(&b);

	ms_proc_init(&d, dir, 0xd4, 300, 2);
	ms_label_thread(&d, 0, "worker main");
	ms_label_thread(&d, 1, "executor 1");
	ms_label_value(&d, DW_EV_FUNCTION, H_MID, "mid");
	ms_label_value(&d, DW_EV_FUNCTION, H_ALPHA, "alpha");
	ms_proc_end(&d, 2100 * U);
	idle_thread(&d, 0);
	ms_thread_open(&t, &d, 1);
	ms_push(&t, 1000 * U, DWT_STATE_IDLE);
	run(&t, 1100, 1400, H_MID);
	run(&t, 1500, 1800, H_ZETA);
	ms_pop(&t, 2100 * U);
	ms_thread_close(&t);
	ms_proc_close(&d);
}

/* ---- Running the tool ---------------------------------------------- */

static char scratch[512];

/* Runs `dwork ARGS` with stdout in out (and stderr in out.err);
 * its exit code, -1 when it did not exit (a crash). */
static int
tool(const char *args, const char *out)
{
	char cmd[4096];
	int st;

	snprintf(cmd, sizeof cmd, "%s %s >%s 2>%s.err", DWORK_TOOL_PATH, args,
	         out, out);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The output of `dwork ARGS`, which must exit 0; owned by the caller. */
static char *
tool_out(const char *args)
{
	char out[700];
	char *got;

	snprintf(out, sizeof out, "%s/out.txt", scratch);
	CHECK_EQ_U64(tool(args, out), 0);
	got = mt_slurp(out);
	REQUIRE(got != NULL);
	return got;
}

static void
expect_has(const char *what, const char *got, const char *s)
{
	if (strstr(got, s))
		return;
	fprintf(stderr, "%s: no \"%s\" in:\n%s\n", what, s, got);
	tu_failures++;
}

/* The text after `key` in s up to the next character of `stop`. */
static void
field(const char *s, const char *key, const char *stop, char *buf, size_t len)
{
	const char *p = strstr(s, key);
	size_t n;

	buf[0] = '\0';
	if (!p) {
		fprintf(stderr, "no %s\n", key);
		tu_failures++;
		return;
	}
	p += strlen(key);
	n = strcspn(p, stop);
	snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), p);
}

static void
expect_field(const char *what, const char *s, const char *key, const char *stop,
             const char *want)
{
	char got[128];

	field(s, key, stop, got, sizeof got);
	if (strcmp(got, want)) {
		fprintf(stderr, "%s: %s is \"%s\", not \"%s\"\n", what, key,
		        got, want);
		tu_failures++;
	}
}

/* ---- Dense ids ------------------------------------------------------ */

static const char pcf_values[] = "0      End\n"
                                 "1      0x00000077\n"
                                 "2      alpha\n"
                                 "3      mid\n"
                                 "4      zeta\n";

/* The values of type in the .prv's event records of Paraver task
 * ptask, in order, as a string "v,v,...". */
static void
prv_values(const char *prv, unsigned ptask, uint32_t type, char *buf,
           size_t len)
{
	char *s = mt_slurp(prv), *line, *save;
	size_t n = 0;

	REQUIRE(s != NULL);
	buf[0] = '\0';
	for (line = strtok_r(s, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned cpu, app, task, th;
		unsigned long long t;
		int off = 0;
		char *p;

		if (sscanf(line, "2:%u:%u:%u:%u:%llu%n", &cpu, &app, &task, &th,
		           &t, &off) != 5 ||
		    task != ptask)
			continue;
		for (p = line + off; *p == ':';) {
			unsigned long long ty, v;
			int k = 0;

			if (sscanf(p, ":%llu:%llu%n", &ty, &v, &k) != 2)
				break;
			if (ty == type)
				n +=
				    (size_t)snprintf(buf + n, len - n, "%s%llu",
				                     n ? "," : "", v);
			p += k;
		}
	}
	free(s);
}

static void
expect_values(const char *prv, unsigned ptask, uint32_t type, const char *want)
{
	char got[256];

	prv_values(prv, ptask, type, got, sizeof got);
	if (strcmp(got, want)) {
		fprintf(stderr, "task %u type %u: values %s, not %s\n", ptask,
		        type, got, want);
		tu_failures++;
	}
}

static void
test_dense(const char *prefix)
{
	char path[1100], key[64];
	char *pcf;

	snprintf(path, sizeof path, "%s.pcf", prefix);
	pcf = mt_slurp(path);
	REQUIRE(pcf != NULL);
	/* Both types name functions: one set of ids, sorted by name. */
	snprintf(key, sizeof key, "%u   dwork: remote function running\n",
	         DW_EV_FUNCTION);
	expect_has("pcf", pcf, key);
	for (uint32_t type = DW_EV_FUNCTION; type <= DW_EV_CALL; type++) {
		const char *p;

		snprintf(key, sizeof key, "0    %-10u ", type);
		p = strstr(pcf, key);
		CHECK(p != NULL);
		if (p) { /* only the executors label 0 ("End") */
			const char *v =
			    type == DW_EV_CALL ? pcf_values + 11 : pcf_values;

			p = strchr(p, '\n') + 1;
			CHECK(!strncmp(p, "VALUES\n", 7));
			CHECK(!strncmp(p + 7, v, strlen(v)));
		}
	}
	free(pcf);
	/* The same name gets the same id in every process (Paraver tasks
	 * count from 1). */
	snprintf(path, sizeof path, "%s.prv", prefix);
	expect_values(path, 1, DW_EV_CALL, "4,2");
	expect_values(path, 2, DW_EV_FUNCTION, "2,0,4,0,2,0,1,0");
	expect_values(path, 3, DW_EV_FUNCTION, "3,0,4,0");
	mt_check(prefix, 0, NULL);
}

/* ---- One set of figures ---------------------------------------------- */

static const char want_summary[] =
    "summary: 3 tasks over 1.100 s\n"
    "  task  useful (s)  calls served  idle (s)\n"
    "     1       0.400             0     0.000\n"
    "     2       0.550             4     0.550\n"
    "     3       0.600             2     0.500\n"
    "  load balance 0.86 = mean(useful) / max(useful)\n"
    "  communication efficiency 0.55 = max(useful) / elapsed\n"
    "  parallel efficiency 0.47 = load balance x communication "
    "efficiency\n";

/* Per function over all threads: id, name, calls, total, max (ns). */
static const char want_calls[] = "call,,,1,0x00000077,1,50000000,50000000\n"
                                 "call,,,2,alpha,2,400000000,300000000\n"
                                 "call,,,3,mid,1,300000000,300000000\n"
                                 "call,,,4,zeta,2,400000000,300000000\n";

static void
test_figures(const char *dir, const char *prefix)
{
	char args[2048], path[1100];
	char *sum_dir, *sum_prv, *csv, *sjson, *cjson, *html;

	snprintf(args, sizeof args, "summary %s", dir);
	sum_dir = tool_out(args);
	snprintf(args, sizeof args, "summary %s.prv", prefix);
	sum_prv = tool_out(args);
	CHECK(!strcmp(sum_dir, want_summary));
	if (strcmp(sum_dir, want_summary))
		fprintf(stderr, "summary:\n%s\nwanted:\n%s", sum_dir,
		        want_summary);
	CHECK(!strcmp(sum_prv, sum_dir));

	snprintf(args, sizeof args, "stats --csv %s", dir);
	csv = tool_out(args);
	expect_has("stats csv", csv, want_calls);
	expect_has("stats csv", csv,
	           "useful,1,,,,,400000000,\nuseful,2,,,,,550000000,\n"
	           "useful,3,,,,,600000000,\n");
	expect_has("stats csv", csv,
	           "metric,,,load_balance,mean(U_i) / max(U_i),,0.861111,\n");
	snprintf(args, sizeof args, "stats --json %s", dir);
	sjson = tool_out(args);
	expect_has("stats json", sjson,
	           "{\"function\": 2, \"name\": \"alpha\", \"calls\": 2, "
	           "\"total_ns\": 400000000, \"mean_ns\": 200000000, "
	           "\"max_ns\": 300000000}");

	expect_has("stats json", sjson,
	           "{\"task\": 2, \"records\": true, \"useful_ns\": "
	           "550000000, \"idle_ns\": 550000000, \"calls\": 4,");

	/* The Chrome JSON and the HTML timeline carry the same figures. */
	snprintf(args, sizeof args, "convert %s -f json,html -o %s/conv -q",
	         dir, scratch);
	free(tool_out(args));
	snprintf(path, sizeof path, "%s/conv.json", scratch);
	cjson = mt_slurp(path);
	snprintf(path, sizeof path, "%s/conv.html", scratch);
	html = mt_slurp(path);
	REQUIRE(cjson != NULL && html != NULL);
	expect_has("chrome json", cjson,
	           "{\"task\":2,\"useful_ns\":550000000,\"idle_ns\":550000000,"
	           "\"calls\":4}");
	expect_has("chrome json", cjson,
	           "{\"function\":4,\"name\":\"zeta\",\"calls\":2,"
	           "\"total_ns\":400000000,\"mean_ns\":200000000,\"max_ns\":"
	           "300000000}");
	for (int k = 0; k < 3; k++) {
		static const char *const keys[][3] = {
		    {"\"load_balance\": ", "\"load_balance\":",
		     "data-load-balance=\""},
		    {"\"communication_efficiency\": ",
		     "\"communication_efficiency\":",
		     "data-communication-efficiency=\""},
		    {"\"parallel_efficiency\": ", "\"parallel_efficiency\":",
		     "data-parallel-efficiency=\""},
		};
		static const char *const want[] = {"0.861111", "0.545455",
		                                   "0.469697"};

		expect_field("stats json", sjson, keys[k][0], ",}\n", want[k]);
		expect_field("chrome json", cjson, keys[k][1], ",}", want[k]);
		expect_field("html", html, keys[k][2], "\"", want[k]);
	}
	expect_has("html", html,
	           "useful time (s): task 1 0.400, task 2 0.550, task 3 "
	           "0.600; load balance 0.86, communication efficiency 0.55, "
	           "parallel efficiency 0.47</text>");
	free(sum_dir);
	free(sum_prv);
	free(csv);
	free(sjson);
	free(cjson);
	free(html);
}

/* ---- Impossible task ids ----------------------------------------------- */

/* A thread file whose header claims task `task` (its process, if it has
 * a file, says 0). */
static void
bad_task(const char *dir, uint32_t task, bool proc_file)
{
	ms_proc p;
	ms_thread t;
	char path[2200];

	ms_proc_init(&p, dir, 0xe5, 500, 0);
	ms_label_thread(&p, 0, "master");
	ms_proc_end(&p, 2000);
	ms_thread_open(&t, &p, 0);
	ms_push(&t, 1000, DWT_STATE_RUNNING);
	ms_pop(&t, 2000);
	p.task = task;
	ms_thread_close(&t);
	p.task = 0;
	ms_proc_close(&p);
	if (!proc_file) {
		ms_path(&p, path, sizeof path, -1);
		REQUIRE(unlink(path) == 0);
	}
}

static void
test_bad_task(void)
{
	static const uint32_t tasks[] = {3000000000u, UINT32_MAX, 5000};
	char dir[700], out[700], args[800];

	snprintf(out, sizeof out, "%s/bad.txt", scratch);
	for (int k = 0; k < 5; k++) { /* 5000 is a task only when wrong */
		char *err;
		int rc;

		snprintf(dir, sizeof dir, "%s/bad%d.trace", scratch, k);
		REQUIRE(mkdir(dir, 0755) == 0);
		bad_task(dir, tasks[k / 2], k % 2 == 0);
		snprintf(args, sizeof args, "summary %s", dir);
		rc = tool(args, out);
		snprintf(args, sizeof args, "%s.err", out);
		err = mt_slurp(args);
		REQUIRE(err != NULL);
		/* Reported, never a crash. */
		CHECK(rc == 1 || rc == 3);
		if (rc != 1 && rc != 3)
			fprintf(stderr, "task %u: exit %d\n", tasks[k / 2], rc);
		expect_has("bad task", err, "task");
		free(err);
		if (!getenv("KEEP"))
			tu_rmtree(dir);
	}
}

int
main(void)
{
	const char *base = tu_tmpdir("figures");
	char dir[700], prefix[700];
	rd_errlist errs;

	snprintf(scratch, sizeof scratch, "%s", base);
	snprintf(dir, sizeof dir, "%s/gold.trace", scratch);
	snprintf(prefix, sizeof prefix, "%s/gold", scratch);
	REQUIRE(mkdir(dir, 0755) == 0);
	golden(dir);
	rd_errlist_init(&errs, stderr);
	REQUIRE(mt_merge(dir, prefix, 0, NULL, &errs) == DW_OK);
	CHECK_EQ_U64(errs.n, 0);
	rd_errlist_free(&errs);
	test_dense(prefix);
	test_figures(dir, prefix);
	test_bad_task();
	if (!getenv("KEEP"))
		tu_rmtree(scratch);
	return tu_report("figures");
}
