/*
 * The HTML timeline: a golden trace drawn at 10 ns a pixel column, whose
 * bars, message line, hover texts and legend are worked out by hand; the
 * file needs no network; a large trace aggregated per pixel column (the
 * dominant state of each column, message paths counted and capped); a
 * zoomed range; the bare SVG; the same picture from the merged .prv.
 */
#include <stdlib.h>
#include <sys/stat.h>

#include <dwork/trace.h>

#include "output/html.h"
#include "merge/prvread.h"
#include "merge_synth.h"
#include "merge_util.h"

enum { RECV = 1, LOG = 2, PHY = 4 };

#define US "\xc2\xb5s"

/*
 * Task 0 "main": Running [0,300) Waiting [300,400) Running [400,500)
 * Custom (state 40, #102030) [500,600) Running [600,800) Idle [800,1000);
 * sends 16 bytes with tag 1 at 250.  Task 1 "worker": Running [0,900)
 * Idle [900,1000), receives at 450.  Time 0 is 1000; duration 1000 ns.
 */
static void
golden(const char *dir)
{
	ms_proc a, b;
	ms_thread t;

	ms_proc_init(&a, dir, 0xa1, 100, 0);
	ms_label_state(&a, 40, 0x102030, "Custom <&>");
	ms_label_thread(&a, 0, "main");
	ms_proc_end(&a, 2000);
	ms_thread_open(&t, &a, 0);
	ms_push(&t, 1000, DWT_STATE_RUNNING);
	ms_comm(&t, 1250, LOG | PHY, 1, 1, 16, 7);
	ms_push(&t, 1300, DWT_STATE_WAITING_MESSAGE);
	ms_pop(&t, 1400);
	ms_push(&t, 1500, 40);
	ms_pop(&t, 1600);
	ms_event(&t, 1700, 1000, 5);
	ms_pop(&t, 1800);
	ms_thread_close(&t);
	ms_proc_close(&a);

	ms_proc_init(&b, dir, 0xb2, 200, 1);
	ms_label_thread(&b, 0, "worker");
	ms_proc_end(&b, 2000);
	ms_thread_open(&t, &b, 0);
	ms_push(&t, 1000, DWT_STATE_RUNNING);
	ms_comm(&t, 1450, RECV | LOG | PHY, 0, 1, 16, 7);
	ms_pop(&t, 1900);
	ms_thread_close(&t);
	ms_proc_close(&b);
}

/* Draws a trace directory or a .prv into path; returns the file. */
static char *
draw(const char *trace, const html_opts *o, const char *path)
{
	mg_writer *w;
	rd_errlist errs;
	dw_err err;

	REQUIRE(html_writer_open(path, o, &w) == DW_OK);
	rd_errlist_init(&errs, stderr);
	if (prvread_is_prv(trace)) {
		err = prvread_run(trace, w, &errs, NULL);
	} else {
		mg_opts mo = {.dir = trace};

		err = mg_merge(&mo, w, &errs, NULL);
	}
	if (err != DW_OK)
		fprintf(stderr, "draw %s: %s %s\n", trace, dw_strerror(err),
		        w->err);
	REQUIRE(err == DW_OK);
	CHECK_EQ_U64(errs.n, 0);
	mg_writer_free(w);
	rd_errlist_free(&errs);
	return mt_slurp(path);
}

static void
has(const char *what, const char *doc, const char *s)
{
	if (strstr(doc, s))
		return;
	fprintf(stderr, "%s: missing: %s\n", what, s);
	tu_failures++;
}

static size_t
count(const char *doc, const char *s)
{
	size_t n = 0;

	for (const char *p = doc; (p = strstr(p, s)); p += strlen(s))
		n++;
	return n;
}

/* Nothing in the file reaches outside it. */
static void
self_contained(const char *doc)
{
	CHECK(!strstr(doc, "http:") && !strstr(doc, "https:"));
	CHECK(!strstr(doc, "src=") && !strstr(doc, "href"));
	CHECK(!strstr(doc, "@import") && !strstr(doc, "<link"));
	CHECK_EQ_U64(count(doc, "url("), count(doc, "url(#"));
	CHECK_EQ_U64(count(doc, "<script"), 1);
	CHECK_EQ_U64(count(doc, "<script>"), 1);
}

static void
test_golden(const char *dir, const char *out)
{
	html_opts o = {.width = 100};
	char *doc = draw(dir, &o, out);

	REQUIRE(doc != NULL);
	CHECK(!strncmp(doc, "<!DOCTYPE html>", 15));
	self_contained(doc);
	CHECK_EQ_U64(count(doc, "<svg"), 1);
	/* Task 0's bars: 10 ns a column from x = 0, row at y = 72. */
	has("golden", doc,
	    "<g class=\"row\" data-r=\"0\" transform=\"translate(0,72)\">");
	has("golden", doc,
	    "<g class=\"row\" data-r=\"1\" transform=\"translate(0,90)\">");
	has("golden", doc,
	    "<rect class=\"s1\" x=\"0\" y=\"0\" width=\"30\" height=\"14\">"
	    "<title>Running: 0.00 " US " to 0.30 " US "</title></rect>");
	has("golden", doc,
	    "<rect class=\"s3\" x=\"30\" y=\"0\" width=\"10\" height=\"14\">"
	    "<title>Waiting a message: 0.30 " US " to 0.40 " US
	    "</title></rect>");
	has("golden", doc, "<rect class=\"s1\" x=\"40\" y=\"0\" width=\"10\"");
	has("golden", doc,
	    "<rect class=\"s40\" x=\"50\" y=\"0\" width=\"10\" height=\"14\">"
	    "<title>Custom &lt;&amp;&gt;: 0.50 " US " to 0.60 " US
	    "</title></rect>");
	has("golden", doc, "<rect class=\"s1\" x=\"60\" y=\"0\" width=\"20\"");
	has("golden", doc, "<rect class=\"s0\" x=\"80\" y=\"0\" width=\"20\"");
	/* Task 1's, one row below. */
	has("golden", doc, "<rect class=\"s1\" x=\"0\" y=\"0\" width=\"90\"");
	has("golden", doc, "<rect class=\"s0\" x=\"90\" y=\"0\" width=\"10\"");
	CHECK_EQ_U64(count(doc, "<rect class=\"s"), 8 + 4); /* + legend */
	/* The message: send at 250 on row 0, receive at 450 on row 1. */
	has("golden", doc,
	    "<line class=\"m1\" data-f=\"0\" data-t=\"1\" data-a=\"25.00\" "
	    "data-b=\"45.00\" x1=\"225.00\" y1=\"79\" x2=\"245.00\" "
	    "y2=\"97\" marker-end=\"url(#a1)\"><title>tag 1: 1 message 1.1 "
	    "main \xe2\x86\x92 2.1 worker, 16 bytes, tag 1; sent at 0.25 " US
	    ", received at 0.45 " US "</title></line>");
	/* its arrowhead is defined */
	has("golden", doc, "<marker id=\"a1\" ");
	/* the program's event at 700 ns: a marker with its label */
	has("golden", doc,
	    "<path class=\"ev\" data-r=\"0\" data-a=\"70.00\" data-y=\"77\"");
	has("golden", doc,
	    "<title>event at 0.70 " US ": type 1000 = 5 (type 1000, value "
	    "5)</title>");
	/* Names, legend and colours from the labels. */
	has("golden", doc,
	    "<title>task 1 thread 1 (main)</title>1.1 main</text>");
	has("golden", doc, ".s1{fill:#0000ff}");
	has("golden", doc, ".s40{fill:#102030}");
	has("golden", doc, ".s3{fill:#ff0000}");
	has("golden", doc, ">40 Custom &lt;&amp;&gt;</text>");
	has("golden", doc, ">0 Idle</text>");
	has("golden", doc, ">messages, tag 1</text>");
	has("golden", doc,
	    "1 messages as 1 line; 0 function run bars; 1 user events as 1 "
	    "marker; 1 event records in all</text>");
	has("golden", doc,
	    "2 tasks, 2 threads, 1.00 " US " of trace; showing "
	    "0.00 " US " to 1.00 " US "; a pixel column is 10 ns");
	free(doc);
}

/* The same picture from the merged trace. */
static void
test_prv(const char *dir, const char *prefix, const char *out)
{
	html_opts o = {.width = 100};
	char prv[1100], out2[1100];
	char *a, *b;
	rd_errlist errs;

	rd_errlist_init(&errs, stderr);
	REQUIRE(mt_merge(dir, prefix, 0, NULL, &errs) == DW_OK);
	rd_errlist_free(&errs);
	snprintf(prv, sizeof prv, "%s.prv", prefix);
	snprintf(out2, sizeof out2, "%s.2.html", out);
	a = draw(dir, &o, out);
	b = draw(prv, &o, out2);
	REQUIRE(a && b);
	CHECK(!strcmp(a, b));
	free(a);
	free(b);
}

static void
test_zoom_svg(const char *dir, const char *out)
{
	html_opts o = {.width = 40, .from = 200, .to = 600};
	char *doc = draw(dir, &o, out);

	REQUIRE(doc != NULL);
	has("zoom", doc, "showing 200 ns to 600 ns");
	has("zoom", doc, "<rect class=\"s1\" x=\"0\" y=\"0\" width=\"10\"");
	has("zoom", doc, "<rect class=\"s3\" x=\"10\" y=\"0\" width=\"10\"");
	has("zoom", doc, "<rect class=\"s40\" x=\"30\" y=\"0\" width=\"10\"");
	has("zoom", doc, "<rect class=\"s1\" x=\"0\" y=\"0\" width=\"40\"");
	CHECK(!strstr(doc, "<rect class=\"s0\" x=")); /* Idle is after 600 */
	free(doc);

	o = (html_opts){.width = 100, .svg = true};
	doc = draw(dir, &o, out);
	REQUIRE(doc != NULL);
	{
		static const char head[] = "<?xml version=\"1.0\" encoding="
		                           "\"UTF-8\"?>\n<svg xmlns=\"http://"
		                           "www.w3.org/2000/svg\"";

		CHECK(!strncmp(doc, head, sizeof head - 1));
	}
	CHECK(!strstr(doc, "<script"));
	CHECK(!strstr(doc, "<html"));
	has("svg", doc, "<rect class=\"s40\" x=\"50\" y=\"0\" width=\"10\"");
	free(doc);

	o = (html_opts){.from = 600, .to = 600};
	CHECK(html_writer_open(out, &o, &(mg_writer *){NULL}) == DW_EINVAL);
}

/*
 * 10,000 cycles of Running 70 ns, Idle 30 ns on thread 0, which also
 * receives 5,000 messages from thread 1: drawn at 100 columns of
 * 10,000 ns, every column is 70% Running, and the messages follow 100
 * paths of 50 messages each.
 */
static void
big(const char *dir)
{
	ms_proc p;
	ms_thread t0, t1;

	ms_proc_init(&p, dir, 0xc3, 300, 0);
	ms_label_thread(&p, 0, "busy");
	ms_proc_end(&p, 1000000);
	ms_thread_open(&t0, &p, 0);
	ms_thread_open(&t1, &p, 1);
	for (uint64_t k = 0; k < 10000; k++) {
		ms_push(&t0, 100 * k, DWT_STATE_RUNNING);
		if (k % 2 == 0) {
			ms_comm(&t1, 100 * k + 10, LOG | PHY, 0, 3, 8, k / 2);
			ms_comm(&t0, 100 * k + 20, RECV | LOG | PHY, 0, 3, 8,
			        k / 2);
		}
		ms_pop(&t0, 100 * k + 70);
	}
	ms_thread_close(&t0);
	ms_thread_close(&t1);
	ms_proc_close(&p);
}

static void
test_big(const char *dir, const char *out)
{
	html_opts o = {.width = 100, .max_lines = 10};
	struct stat st;
	char *doc;

	big(dir);
	doc = draw(dir, &o, out);
	REQUIRE(doc != NULL);
	/* One bar for the 20,000 states: each column is mostly Running. */
	has("big", doc,
	    "<rect class=\"s1\" x=\"0\" y=\"0\" width=\"100\" height=\"14\">"
	    "<title>Running: 0.00 ms to 1.00 ms (70% of it; other states "
	    "less)</title></rect>");
	CHECK_EQ_U64(count(doc, "<rect class=\"s1\""), 1 + 1); /* + legend */
	has("big", doc,
	    "5000 messages as 10 lines (the busiest 10 of 100 "
	    "paths; 90 paths not drawn)");
	has("big", doc,
	    "tag 3: 50 messages 1.2 \xe2\x86\x92 1.1 busy, 400 bytes, "
	    "tag 3");
	CHECK_EQ_U64(count(doc, "<line class=\"m3\""), 10 + 1); /* + legend */
	REQUIRE(stat(out, &st) == 0);
	CHECK(st.st_size < 64 * 1024);
	free(doc);
}

/*
 * A trace shaped as the dwork runtime's: task 0 "master" calls "echo"
 * on task 1's executor (call, tag 0, sent at 100, received at 150;
 * result, tag 1, sent at 650, received at 700), records its own event
 * "Phase" = "five" at 800; the executor runs echo [200,600) (its
 * DW_EV_FUNCTION) in Running; task 1's "worker 2 main" thread is Idle
 * all the time.  Time 0 is 1000; duration 1000 ns.
 */
static void
runtime_like(const char *dir)
{
	ms_proc a, b;
	ms_thread t;
	uint32_t echo = 0x1234567;

	ms_proc_init(&a, dir, 0xd1, 100, 0);
	ms_label_thread(&a, 0, "master");
	ms_label_type(&a, 71000001, "dwork: remote function running");
	ms_label_value(&a, 71000001, echo, "echo");
	ms_label_type(&a, 1000, "Phase");
	ms_label_value(&a, 1000, 5, "five");
	ms_proc_end(&a, 2000);
	ms_thread_open(&t, &a, 0);
	ms_push(&t, 1000, DWT_STATE_RUNNING);
	ms_comm(&t, 1100, LOG | PHY, 1, 0, 16, 4);
	ms_push(&t, 1110, DWT_STATE_WAITING_MESSAGE);
	ms_comm(&t, 1700, RECV | LOG | PHY, 1, 1, 8, 5);
	ms_pop(&t, 1700);
	ms_event(&t, 1800, 1000, 5);
	ms_pop(&t, 1900);
	ms_thread_close(&t);
	ms_proc_close(&a);

	ms_proc_init(&b, dir, 0xd2, 200, 1);
	ms_label_thread(&b, 0, "worker 2 main");
	ms_label_thread(&b, 1, "worker 2 executor 1");
	ms_label_type(&b, 71000001, "dwork: remote function running");
	ms_label_value(&b, 71000001, echo, "echo");
	ms_proc_end(&b, 2000);
	ms_thread_open(&t, &b, 0);
	ms_push(&t, 1000, 0);
	ms_pop(&t, 1950);
	ms_thread_close(&t);
	ms_thread_open(&t, &b, 1);
	ms_push(&t, 1000, 0);
	ms_comm(&t, 1150, RECV | LOG | PHY, 0, 0, 16, 4);
	ms_push(&t, 1200, DWT_STATE_RUNNING);
	ms_event(&t, 1200, 71000001, echo);
	ms_event(&t, 1600, 71000001, 0);
	ms_pop(&t, 1600);
	ms_comm(&t, 1650, LOG | PHY, 0, 1, 8, 5);
	ms_pop(&t, 1950);
	ms_thread_close(&t);
	ms_proc_close(&b);
}

static void
test_runtime(const char *dir, const char *out)
{
	html_opts o = {.width = 100};
	char *doc;

	runtime_like(dir);
	doc = draw(dir, &o, out);
	REQUIRE(doc != NULL);
	self_contained(doc);
	/* messages by kind, with arrowheads defined and used */
	has("runtime", doc, "<marker id=\"a0\" ");
	has("runtime", doc, "<marker id=\"a1\" ");
	CHECK_EQ_U64(count(doc, "marker-end=\"url(#a0)\""), 1 + 1);
	CHECK_EQ_U64(count(doc, "marker-end=\"url(#a1)\""), 1 + 1);
	has("runtime", doc,
	    "><title>call: 1 message 1.1 master \xe2\x86\x92 "
	    "2.2 worker 2 executor 1, 16 bytes, tag 0;");
	has("runtime", doc,
	    "><title>result: 1 message 2.2 worker 2 executor 1 "
	    "\xe2\x86\x92 1.1 master, 8 bytes, tag 1;");
	has("runtime", doc, ">call</text>");
	has("runtime", doc, ">result</text>");
	CHECK(!strstr(doc, "messages, tag"));
	/* the run: a bar with the function's name, as hover and as text */
	has("runtime", doc,
	    "<rect class=\"fn\" data-r=\"2\" data-a=\"20.00\" data-b=\"60.00\" "
	    "x=\"220.00\" y=\"90\" width=\"40.00\" height=\"14\"><title>echo "
	    "(remote function run): 0.20 " US " to 0.60 " US "</title></rect>");
	has("runtime", doc,
	    "<text class=\"fl\" data-r=\"2\" data-a=\"20.00\" data-b=\"60.00\" "
	    "data-n=\"4\" x=\"222.00\" y=\"100\">echo</text>");
	/* the idle main thread: folded, named, with the toggle */
	has("runtime", doc,
	    "<text class=\"rn\" data-r=\"1\" data-idle=\"1\" data-k=\"1\" "
	    "x=\"8\" y=\"11\" display=\"none\"><title>task 2 thread 1 "
	    "(worker 2 main)</title>2.1 worker 2 main (idle)</text>");
	has("runtime", doc,
	    "<g class=\"row\" data-r=\"1\" transform=\"translate(0,0)\" "
	    "display=\"none\">");
	has("runtime", doc,
	    "<g class=\"row\" data-r=\"2\" transform=\"translate(0,90)\">");
	has("runtime", doc, "id=\"fold\" class=\"btn\" data-n=\"1\">");
	has("runtime", doc, "1 row idle the whole range folded");
	has("runtime", doc, "fold.addEventListener('click'");
	/* the program's own event, with its labels */
	has("runtime", doc,
	    "<title>event at 0.80 " US ": Phase = five (type "
	    "1000, value 5)</title></path>");
	has("runtime", doc, ">five</text>");
	has("runtime", doc,
	    "2 messages as 2 lines; 1 function run bar; 1 user events as 1 "
	    "marker; 3 event records in all; 1 idle row folded</text>");
	/* the plot follows the window */
	has("runtime", doc, "window.addEventListener('resize',resize)");
	free(doc);
}

int
main(void)
{
	const char *base = tu_tmpdir("view");
	char root[512], dir[600], bigdir[600], out[600], prefix[600];

	snprintf(root, sizeof root, "%s", base);
	snprintf(dir, sizeof dir, "%s/gold.trace", root);
	snprintf(bigdir, sizeof bigdir, "%s/big.trace", root);
	snprintf(out, sizeof out, "%s/out.html", root);
	snprintf(prefix, sizeof prefix, "%s/gold", root);
	REQUIRE(mkdir(dir, 0755) == 0 && mkdir(bigdir, 0755) == 0);
	golden(dir);
	test_golden(dir, out);
	test_prv(dir, prefix, out);
	test_zoom_svg(dir, out);
	{
		char rdir[700];

		char rout[700];

		snprintf(rdir, sizeof rdir, "%s/rt.trace", root);
		REQUIRE(mkdir(rdir, 0755) == 0);
		snprintf(rout, sizeof rout, "%s/rt.html", root);
		test_runtime(rdir, rout);
	}
	test_big(bigdir, out);
	if (!tu_failures)
		tu_rmtree(root);
	return tu_report("view_html");
}
