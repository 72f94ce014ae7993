/*
 * dwork stats on hand-computed golden traces: the same figures from the
 * trace directory (through the merger) and from the merged .prv (through
 * prvread), in every output format; a trace that is not the runtime's;
 * a damaged .prv; the command's exit codes.
 */
#include <stdlib.h>
#include <sys/wait.h>

#include <dwork/dwork.h>
#include <dwork/trace.h>

#include "merge/prvread.h"
#include "output/stats.h"
#include "merge_synth.h"
#include "merge_util.h"

enum { RECV = 1, LOG = 2, PHY = 4 };

/*
 * Task 0: "master" runs, sends a call (100 bytes) to task 1, waits for
 * the result (40 bytes), runs again, then idles; its "dwork I/O" thread
 * handles frames for 200 ns.  Task 1: "worker main" idles; "executor 1"
 * runs function 7 twice (200 ns each) and function 9 once (50 ns): the
 * merge renumbers them by name, 9 "other, ..." to 1 and 7 "work" to 2.
 * Task 2 never traced.  Task 3: an executor that only idles.
 * Time 0 is 1000, every process ends at 2100: T = 1100 ns.
 */
static void
golden(const char *dir)
{
	ms_proc a, b, d;
	ms_thread a0, a1, b0, b1, d0;

	ms_proc_init(&a, dir, 0xa1, 100, 0);
	ms_label_thread(&a, 0, "master");
	ms_label_thread(&a, 1, "dwork I/O");
	ms_proc_end(&a, 2100);
	ms_thread_open(&a0, &a, 0);
	ms_push(&a0, 1000, DWT_STATE_RUNNING);
	ms_push(&a0, 1200, DWT_STATE_WAITING_MESSAGE);
	ms_comm(&a0, 1200, LOG | PHY, 1, 0, 100, 1);
	ms_comm(&a0, 1600, RECV | LOG | PHY, 1, 1, 40, 2);
	ms_pop(&a0, 1600);
	ms_pop(&a0, 1700);
	ms_thread_close(&a0);
	ms_thread_open(&a1, &a, 1);
	ms_push(&a1, 1100, DWT_STATE_SEND_RECEIVE);
	ms_pop(&a1, 1300);
	ms_thread_close(&a1);
	ms_proc_close(&a);

	ms_proc_init(&b, dir, 0xb2, 200, 1);
	ms_label_thread(&b, 0, "worker main");
	ms_label_thread(&b, 1, "executor 1");
	ms_label_type(&b, DW_EV_FUNCTION, "dwork: remote function running");
	ms_label_value(&b, DW_EV_FUNCTION, 7, "work");
	ms_label_value(&b, DW_EV_FUNCTION, 9, "other, \"quoted\"");
	ms_proc_end(&b, 2100);
	ms_thread_open(&b0, &b, 0);
	ms_push(&b0, 1050, DWT_STATE_IDLE);
	ms_pop(&b0, 2050);
	ms_thread_close(&b0);
	ms_thread_open(&b1, &b, 1);
	ms_push(&b1, 1100, DWT_STATE_IDLE);
	ms_comm(&b1, 1250, RECV | LOG | PHY, 0, 0, 100, 1);
	ms_push(&b1, 1250, DWT_STATE_RUNNING);
	ms_event(&b1, 1250, DW_EV_FUNCTION, 7);
	ms_event(&b1, 1450, DW_EV_FUNCTION, 0);
	ms_pop(&b1, 1450);
	ms_comm(&b1, 1500, LOG | PHY, 0, 1, 40, 2);
	ms_push(&b1, 1700, DWT_STATE_RUNNING);
	ms_event(&b1, 1700, DW_EV_FUNCTION, 9);
	ms_event(&b1, 1750, DW_EV_FUNCTION, 0);
	ms_event(&b1, 1800, DW_EV_FUNCTION, 7);
	ms_event(&b1, 2000, DW_EV_FUNCTION, 0);
	ms_pop(&b1, 2000);
	ms_pop(&b1, 2050);
	ms_thread_close(&b1);
	ms_proc_close(&b);

	ms_proc_init(&d, dir, 0xd4, 400, 3);
	ms_label_thread(&d, 0, "executor 1");
	ms_proc_end(&d, 2100);
	ms_thread_open(&d0, &d, 0);
	ms_push(&d0, 1000, DWT_STATE_IDLE);
	ms_pop(&d0, 2000);
	ms_thread_close(&d0);
	ms_proc_close(&d);
}

/* Worked out by hand from the records above (times relative to 1000). */
static const char golden_csv[] =
    "table,task,thread,key,name,count,value,max\n"
    "thread,1,1,,task 1 thread 1 (master),,,\n"
    "state,1,1,0,Idle,1,400,400\n"    /* 700..1100 */
    "state,1,1,1,Running,2,300,200\n" /* 0..200, 600..700 */
    "state,1,1,3,Waiting a message,1,400,400\n"
    "sent,1,1,,,1,100,\n"
    "received,1,1,,,1,40,\n"
    "thread,1,2,,task 1 thread 2 (dwork I/O),,,\n"
    "state,1,2,0,Idle,1,800,800\n"
    "state,1,2,2,Not created,1,100,100\n"
    "state,1,2,16,Send Receive,1,200,200\n"
    "thread,2,1,,task 2 thread 1 (worker main),,,\n"
    "state,2,1,0,Idle,1,1050,1050\n"
    "state,2,1,2,Not created,1,50,50\n"
    "thread,2,2,,task 2 thread 2 (executor 1),,,\n"
    "state,2,2,0,Idle,3,500,250\n"    /* 150 + 250 + 100 */
    "state,2,2,1,Running,2,500,300\n" /* 200 + 300 */
    "state,2,2,2,Not created,1,100,100\n"
    "event,2,2,71000001,dwork: remote function running,6,,\n"
    "call,2,2,1,\"other, \"\"quoted\"\"\",1,50,50\n"
    "call,2,2,2,work,2,400,200\n"
    "sent,2,2,,,1,40,\n"
    "received,2,2,,,1,100,\n"
    "thread,3,1,,task 3 thread 1,,,\n"
    "thread,4,1,,task 4 thread 1 (executor 1),,,\n"
    "state,4,1,0,Idle,1,1100,1100\n"
    "call,,,1,\"other, \"\"quoted\"\"\",1,50,50\n"
    "call,,,2,work,2,400,200\n"
    "useful,1,,,,,300,\n" /* the master's Running; I/O not counted */
    "useful,2,,,,,500,\n" /* the executor's Running */
    "useful,4,,,,,0,\n"   /* task 3 has no records: left out */
    "metric,,,elapsed_ns,elapsed,,1100,\n"
    /* wait causes: the master waits 200..600 for the result sent at
     * 500 (work 300, network 100), idles 700..1100 (none 400) */
    "wait,1,,master,,,0,\n"
    "wait,1,,work,,,300,\n"
    "wait,1,,network,,,100,\n"
    "wait,1,,producer,,,0,\n"
    "wait,1,,sender,,,0,\n"
    "wait,1,,none,,,400,\n"
    /* the executor idles 100..250 for the call sent at 200 (master
     * 100, network 50), then 450..700 and 1000..1100 (none 350) */
    "wait,2,,master,,,100,\n"
    "wait,2,,work,,,0,\n"
    "wait,2,,network,,,50,\n"
    "wait,2,,producer,,,0,\n"
    "wait,2,,sender,,,0,\n"
    "wait,2,,none,,,350,\n"
    /* task 4's executor idles 0..1100 */
    "wait,4,,master,,,0,\n"
    "wait,4,,work,,,0,\n"
    "wait,4,,network,,,0,\n"
    "wait,4,,producer,,,0,\n"
    "wait,4,,sender,,,0,\n"
    "wait,4,,none,,,1100,\n"
    /* per function: the call and the result were for "work" (id 2) */
    "wait_function,,,master,work,2,100,\n"
    "wait_function,,,work,work,2,300,\n"
    "wait_function,,,network,work,2,150,\n"
    "wait_function,,,producer,work,2,0,\n"
    "wait_function,,,sender,work,2,0,\n"
    "wait_function,,,none,work,2,0,\n"
    "wait_function,,,master,(no function),0,0,\n"
    "wait_function,,,work,(no function),0,0,\n"
    "wait_function,,,network,(no function),0,0,\n"
    "wait_function,,,producer,(no function),0,0,\n"
    "wait_function,,,sender,(no function),0,0,\n"
    "wait_function,,,none,(no function),0,1850,\n"
    /* what-ifs on the ideal network: the executor gets the call at
     * 200 instead of 250 (it runs 200..400); its idle 450..700 ends
     * no receive, and the master's run that ended inside it, at 700
     * (550 on the ideal network: its result came at 450), is taken to
     * have woken it, with the lag after it (0): it runs 550..850 =
     * T_ideal.  "other" 2x faster saves 25: 825; "work" 2x faster
     * saves 100 in its first run (the result sent at 350, the master
     * runs 350..450, the executor from 450) and 100 in its second:
     * 450 + 300 - 100 = 650 */
    "what_if,,,1,\"other, \"\"quoted\"\"\",,825,\n"
    "what_if,,,2,work,,650,\n"
    "metric,,,useful_mean_ns,mean(U_i),,266.666667,\n"
    "metric,,,useful_max_ns,max(U_i),,500.000000,\n"
    "metric,,,load_balance,mean(U_i) / max(U_i),,0.533333,\n"
    "metric,,,communication_efficiency,max(U_i) / T,,0.454545,\n"
    "metric,,,parallel_efficiency,mean(U_i) / T,,0.242424,\n"
    "metric,,,ideal_elapsed_ns,T_ideal,,850.000000,\n"
    "metric,,,serialization_efficiency,max(U_i) / T_ideal,,0.588235,\n"
    "metric,,,transfer_efficiency,T_ideal / T,,0.772727,\n";

typedef void (*printer)(const st_stats *, FILE *);

static char *
render(const st_stats *s, printer p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	REQUIRE(f != NULL);
	p(s, f);
	fclose(f);
	return buf;
}

static void
expect_text(const char *what, const char *got, const char *want)
{
	size_t i = 0, line = 1;

	while (got[i] && got[i] == want[i])
		line += got[i++] == '\n';
	if (!got[i] && !want[i])
		return;
	fprintf(stderr, "%s: differs at line %zu\n--- got:\n%s--- want:\n%s",
	        what, line, got, want);
	tu_failures++;
}

static void
expect_has(const char *what, const char *got, const char *s)
{
	if (strstr(got, s))
		return;
	fprintf(stderr, "%s: no \"%s\" in:\n%s\n", what, s, got);
	tu_failures++;
}

/* Stats of a trace directory or a .prv (only the figures, without the
 * replay, when figures_only); NULL when it failed. */
static st_stats *
stats_opt(const char *trace, rd_errlist *errs, bool figures_only)
{
	st_stats *s;
	dw_err err;

	REQUIRE(st_stats_new(trace, &s) == DW_OK);
	if (figures_only)
		st_stats_figures_only(s);
	if (prvread_is_prv(trace)) {
		err = prvread_run(trace, &s->base, errs, NULL);
	} else {
		mg_opts o = {.dir = trace};

		err = mg_merge(&o, &s->base, errs, NULL);
	}
	if (err != DW_OK) {
		fprintf(stderr, "stats of %s: %s %s\n", trace, dw_strerror(err),
		        s->base.err);
		st_stats_free(s);
		return NULL;
	}
	return s;
}

static st_stats *
stats_of(const char *trace, rd_errlist *errs)
{
	return stats_opt(trace, errs, false);
}

/* The figures the Chrome JSON and the HTML carry are the same without
 * the replay (which the JSON leaves out, to keep its memory bounded),
 * and nothing of the replay is made. */
static void
test_figures_only(const char *dir)
{
	rd_errlist errs;
	st_stats *full, *fig;
	char *a, *b;

	rd_errlist_init(&errs, stderr);
	full = stats_of(dir, &errs);
	fig = stats_opt(dir, &errs, true);
	REQUIRE(full != NULL && fig != NULL);
	CHECK(full->ideal > 0 && full->pop.ideal_valid);
	CHECK(fig->ideal == 0 && !fig->pop.ideal_valid);
	CHECK(fig->npath == 0 && fig->npath_segs == 0 && !fig->task_waits);
	CHECK(fig->replay == NULL);
	a = render(full, st_print_figures_json);
	b = render(fig, st_print_figures_json);
	expect_text("figures json without the replay", b, a);
	expect_has("figures json", b, "\"load_balance\":0.533333");
	free(a);
	free(b);
	a = render(full, st_print_figures_line);
	b = render(fig, st_print_figures_line);
	expect_text("figures line without the replay", b, a);
	free(a);
	free(b);
	st_stats_free(full);
	st_stats_free(fig);
	rd_errlist_free(&errs);
}

static void
test_golden(const char *dir, const char *prefix)
{
	char prv[1100];
	rd_errlist errs;
	st_stats *s;
	char *out;

	rd_errlist_init(&errs, stderr);
	s = stats_of(dir, &errs);
	REQUIRE(s != NULL);
	CHECK_EQ_U64(errs.n, 0);
	out = render(s, st_print_csv);
	expect_text("csv from the directory", out, golden_csv);
	free(out);

	out = render(s, st_print_text);
	expect_has("text", out, "4 tasks (3 with records), 6 threads");
	expect_has("text", out,
	           "Running on executor threads and on the "
	           "master's user threads");
	expect_has("text", out, "LB    = mean(U_i) / max(U_i) = ");
	expect_has("text", out, " = 0.53\n");
	expect_has("text", out, "CommE = max(U_i) / T");
	expect_has("text", out, " = 0.45\n");
	expect_has("text", out, "PE    = LB x CommE = mean(U_i) / T = 0.24");
	expect_has("text", out,
	           "work                            2       "
	           "0.000       0.000    0.000000");
	expect_has("text", out, "     3  (no records)");
	free(out);

	out = render(s, st_print_json);
	expect_has("json", out, "\"duration_ns\": 1100");
	expect_has("json", out, "\"load_balance\": 0.533333");
	expect_has("json", out, "\"parallel_efficiency\": 0.242424");
	expect_has("json", out,
	           "{\"function\": 1, \"name\": \"other, "
	           "\\\"quoted\\\"\", \"calls\": 1, \"total_ns\": "
	           "50, \"mean_ns\": 50, \"max_ns\": 50}");
	expect_has("json", out, "{\"task\": 3, \"records\": false");
	expect_has("json", out,
	           "\"label\": \"executor 1\", \"role\": "
	           "\"executor\"");
	free(out);
	st_stats_free(s);

	/* The merged trace gives the same figures. */
	REQUIRE(mt_merge(dir, prefix, 0, NULL, &errs) == DW_OK);
	snprintf(prv, sizeof prv, "%s.prv", prefix);
	s = stats_of(prv, &errs);
	REQUIRE(s != NULL);
	CHECK_EQ_U64(errs.n, 0);
	out = render(s, st_print_csv);
	expect_text("csv from the .prv", out, golden_csv);
	free(out);
	st_stats_free(s);
	rd_errlist_free(&errs);
}

/* A program traced without the runtime: Running counts on every thread. */
static void
test_plain(const char *dir)
{
	ms_proc a;
	ms_thread t0, t1;
	rd_errlist errs;
	st_stats *s;
	char *out;

	ms_proc_init(&a, dir, 0x77, 700, 0);
	ms_label_thread(&a, 0, "main");
	ms_proc_end(&a, 1000);
	ms_thread_open(&t0, &a, 0);
	ms_push(&t0, 0, DWT_STATE_RUNNING);
	ms_pop(&t0, 600);
	ms_thread_close(&t0);
	ms_thread_open(&t1, &a, 1);
	ms_push(&t1, 0, DWT_STATE_RUNNING);
	ms_pop(&t1, 300);
	ms_thread_close(&t1);
	ms_proc_close(&a);

	rd_errlist_init(&errs, stderr);
	s = stats_of(dir, &errs);
	REQUIRE(s != NULL);
	CHECK(!s->runtime);
	CHECK_EQ_U64(s->tasks[0].useful, 900);
	out = render(s, st_print_text);
	expect_has("plain", out, "on every thread (not a dwork runtime trace)");
	free(out);
	st_stats_free(s);
	rd_errlist_free(&errs);
}

/* Damaged lines are reported one by one; the rest is read. */
static void
test_damaged(const char *dir)
{
	char path[1100];
	FILE *f;
	rd_errlist errs;
	st_stats *s;

	snprintf(path, sizeof path, "%s/bad.prv", dir);
	f = fopen(path, "w");
	REQUIRE(f != NULL);
	fputs("#Paraver (01/01/24 at 00:00):1000_ns:1(2):1:1(2:1)\n"
	      "1:1:1:1:1:0:400:1\n"
	      "garbage\n"
	      "1:1:1:1:3:0:400:1\n"    /* no thread 3 */
	      "1:1:1:1:1:500:400:1\n"  /* ends before it begins */
	      "1:1:1:1:1:400:5000:1\n" /* beyond the duration */
	      "1:1:1:1:1:400:1000:3\n"
	      "2:1:1:1:2:100:71000001:5:71000001\n" /* odd pairs */
	      "2:1:1:1:2:100:71000001:5\n"
	      "2:1:1:1:2:300:71000001:0\n"
	      "3:1:1:1:1:10:10:2:1:1:2:20:20:8:0\n"
	      "1:1:2:1:1:0:10:1\n", /* another application */
	      f);
	fclose(f);
	rd_errlist_init(&errs, NULL);
	s = stats_of(path, &errs);
	REQUIRE(s != NULL);
	CHECK_EQ_U64(errs.n, 6);
	CHECK(mt_said(&errs, "bad.prv: line 3: not a record; skipped"));
	CHECK(mt_said(&errs, "line 4: a task or thread the header does not "
	                     "declare"));
	CHECK(mt_said(&errs, "line 5: a state that ends before it begins"));
	CHECK(mt_said(&errs, "line 6: a time beyond the trace's duration"));
	CHECK(mt_said(&errs, "line 8: a malformed event record"));
	CHECK(mt_said(&errs, "line 12: application 2: only the first"));
	CHECK_EQ_U64(s->threads[0].nstates, 2);
	CHECK_EQ_U64(s->tasks[0].useful, 400 + 0); /* no labels: all count */
	CHECK_EQ_U64(s->threads[1].ncalls, 1);
	CHECK_EQ_U64(s->threads[1].calls[0].total_ns, 200);
	CHECK_EQ_U64(s->threads[0].sent_bytes, 8);
	CHECK_EQ_U64(s->threads[1].recv_bytes, 8);
	st_stats_free(s);
	rd_errlist_free(&errs);

	/* Not a trace at all; no file at all. */
	snprintf(path, sizeof path, "%s/notrace.prv", dir);
	f = fopen(path, "w");
	REQUIRE(f != NULL);
	fputs("hello\n", f);
	fclose(f);
	rd_errlist_init(&errs, NULL);
	REQUIRE(st_stats_new(path, &s) == DW_OK);
	CHECK(prvread_run(path, &s->base, &errs, NULL) == DW_EFORMAT);
	st_stats_free(s);
	snprintf(path, sizeof path, "%s/none.prv", dir);
	REQUIRE(st_stats_new(path, &s) == DW_OK);
	CHECK(prvread_run(path, &s->base, &errs, NULL) == DW_ENOENT);
	st_stats_free(s);
	rd_errlist_free(&errs);
}

#ifdef DWORK_TOOL_PATH
static int
tool(const char *args, const char *out)
{
	char cmd[4096];
	int st;

	snprintf(cmd, sizeof cmd, "%s stats %s >%s 2>/dev/null",
	         DWORK_TOOL_PATH, args, out);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void
test_command(const char *dir, const char *scratch)
{
	char args[2048], out[1100];
	char *got;

	snprintf(out, sizeof out, "%s/out.txt", scratch);
	snprintf(args, sizeof args, "--csv %s", dir);
	CHECK_EQ_U64(tool(args, out), 0);
	got = mt_slurp(out);
	REQUIRE(got != NULL);
	expect_text("dwork stats --csv", got, golden_csv);
	free(got);
	snprintf(args, sizeof args, "%s --json", dir);
	CHECK_EQ_U64(tool(args, out), 0);
	CHECK_EQ_U64(tool("", out), 2);
	CHECK_EQ_U64(tool("--bogus x", out), 2);
	snprintf(args, sizeof args, "%s/none.prv", scratch);
	CHECK_EQ_U64(tool(args, out), 3);
	snprintf(args, sizeof args, "%s/bad.prv", scratch);
	CHECK_EQ_U64(tool(args, out), 1);
}
#endif

int
main(void)
{
	const char *base = tu_tmpdir("stats");
	char root[512], dir[600], plain[600], prefix[600];

	snprintf(root, sizeof root, "%s", base);
	snprintf(dir, sizeof dir, "%s/gold.trace", root);
	snprintf(plain, sizeof plain, "%s/plain.trace", root);
	snprintf(prefix, sizeof prefix, "%s/gold", root);
	REQUIRE(mkdir(dir, 0755) == 0 && mkdir(plain, 0755) == 0);
	golden(dir);
	test_golden(dir, prefix);
	test_figures_only(dir);
	test_plain(plain);
	test_damaged(root);
#ifdef DWORK_TOOL_PATH
	test_command(dir, root);
#endif
	tu_rmtree(root);
	return tu_report("stats");
}
