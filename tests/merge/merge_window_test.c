/*
 * What the merge holds and for how long: a send never received gives up
 * its place once the window is full (and its late receive is counted),
 * a message missing one of its four times is written once waiting would
 * hold the output, a message's parts recorded by different threads make
 * one communication, and a state longer than the lookahead's ring still
 * ends where it ends.
 */
#include "merge_synth.h"
#include "merge_util.h"

enum { RECV = 1, LOG = 2, PHY = 4 };

static bool
has_line(const char *prefix, const char *line)
{
	char path[700], *text, want[256];
	bool yes;

	snprintf(path, sizeof path, "%s.prv", prefix);
	snprintf(want, sizeof want, "\n%s\n", line);
	text = mt_slurp(path);
	yes = text && strstr(text, want);
	if (!yes)
		fprintf(stderr, "%s: no line '%s'\n", path, line);
	free(text);
	return yes;
}

static void
test_given_up(void)
{
	const char *dir = tu_tmpdir("window-given-up");
	char prefix[600];
	rd_errlist errs;
	mg_report rep;
	ms_proc a, b;
	ms_thread ta, tb;

	ms_proc_init(&a, dir, 0x1, 1, 0);
	ms_thread_open(&ta, &a, 0);
	ms_comm(&ta, 100, LOG | PHY, 1, 0, 8, 1); /* received too late */
	for (int i = 0; i < 1000; i++)
		ms_event(&ta, 200 + (uint64_t)i * 10, 1000, (uint64_t)i);
	ms_comm(&ta, 20000, LOG | PHY, 1, 0, 8, 2);
	ms_thread_close(&ta);
	ms_proc_close(&a);
	ms_proc_init(&b, dir, 0x2, 2, 1);
	ms_thread_open(&tb, &b, 0);
	for (int i = 0; i < 1000; i++)
		ms_event(&tb, 205 + (uint64_t)i * 10, 1000, (uint64_t)i);
	ms_comm(&tb, 15000, RECV | LOG | PHY, 0, 0, 8, 1);
	ms_comm(&tb, 20100, RECV | LOG | PHY, 0, 0, 8, 2);
	ms_thread_close(&tb);
	ms_proc_close(&b);

	snprintf(prefix, sizeof prefix, "%s/out", dir);
	rd_errlist_init(&errs, stderr);
	CHECK(mt_merge(dir, prefix, 64, &rep, &errs) == DW_OK);
	CHECK_EQ_U64(rep.comms, 1);
	CHECK_EQ_U64(rep.unmatched_sends, 1);
	CHECK_EQ_U64(rep.unmatched_recvs, 1);
	CHECK(mt_said(&errs, "message 1 from task 0 to task 1: send at 0 ns"));
	CHECK(mt_said(&errs, "read after its send was given up"));
	CHECK_EQ_U64(rep.events, 2000);
	mt_check(prefix, PC_ALL, NULL);
	CHECK(
	    has_line(prefix, "3:1:1:1:1:19900:19900:2:1:2:1:20000:20000:8:0"));
	rd_errlist_free(&errs);
	tu_rmtree(dir);

	/* with the default window the same trace matches message 1 */
	dir = tu_tmpdir("window-default");
	ms_proc_init(&a, dir, 0x1, 1, 0);
	ms_thread_open(&ta, &a, 0);
	ms_comm(&ta, 100, LOG | PHY, 1, 0, 8, 1);
	for (int i = 0; i < 1000; i++)
		ms_event(&ta, 200 + (uint64_t)i * 10, 1000, (uint64_t)i);
	ms_thread_close(&ta);
	ms_proc_close(&a);
	ms_proc_init(&b, dir, 0x2, 2, 1);
	ms_thread_open(&tb, &b, 0);
	ms_comm(&tb, 15000, RECV | LOG | PHY, 0, 0, 8, 1);
	ms_thread_close(&tb);
	ms_proc_close(&b);
	snprintf(prefix, sizeof prefix, "%s/out", dir);
	rd_errlist_init(&errs, stderr);
	CHECK(mt_merge(dir, prefix, 0, &rep, &errs) == DW_OK);
	CHECK_EQ_U64(rep.comms, 1);
	CHECK_EQ_U64(rd_errlist_count(&errs), 0);
	mt_check(prefix, PC_ALL, NULL);
	rd_errlist_free(&errs);
	tu_rmtree(dir);
}

/* Parts from four threads; a logical receive that never comes. */
static void
test_parts(void)
{
	const char *dir = tu_tmpdir("window-parts");
	char prefix[600];
	rd_errlist errs;
	mg_report rep;
	ms_proc a, b;
	ms_thread a0, a1, b0, b1;

	ms_proc_init(&a, dir, 0x1, 1, 0);
	ms_proc_end(&a, 2000);
	ms_thread_open(&a0, &a, 0);
	ms_thread_open(&a1, &a, 1);
	ms_comm(&a0, 100, LOG, 1, 4, 32, 1); /* the program's send */
	ms_comm(&a1, 150, PHY, 1, 4, 32, 1); /* the bytes leave */
	ms_comm(&a1, 500, PHY, 1, 4, 32, 2); /* bytes leave first ... */
	ms_comm(&a0, 600, LOG, 1, 4, 32, 2); /* ... logical after: fixed */
	ms_comm(&a0, 700, LOG | PHY, 1, 4, 32, 3);
	for (int i = 0; i < 100; i++)
		ms_event(&a0, 800 + (uint64_t)i, 1000, 1);
	ms_thread_close(&a0);
	ms_thread_close(&a1);
	ms_proc_close(&a);
	ms_proc_init(&b, dir, 0x2, 2, 1);
	ms_proc_end(&b, 2000);
	ms_thread_open(&b0, &b, 0);
	ms_thread_open(&b1, &b, 1);
	ms_comm(&b1, 300, RECV | PHY, 0, 4, 32, 1); /* the bytes arrive */
	ms_comm(&b0, 400, RECV | LOG, 0, 4, 32, 1); /* the program takes it */
	ms_comm(&b1, 650, RECV | LOG | PHY, 0, 4, 32, 2);
	ms_comm(&b1, 750, RECV | PHY, 0, 4, 32, 3); /* no logical receive */
	ms_thread_close(&b0);
	ms_thread_close(&b1);
	ms_proc_close(&b);

	snprintf(prefix, sizeof prefix, "%s/out", dir);
	rd_errlist_init(&errs, stderr);
	CHECK(mt_merge(dir, prefix, 64, &rep, &errs) == DW_OK);
	CHECK_EQ_U64(rd_errlist_count(&errs), 0);
	CHECK_EQ_U64(rep.comms, 3);
	CHECK_EQ_U64(rep.lsend_fixed, 1);
	mt_check(prefix, PC_ALL, NULL);
	/* threads: a0 = 1 (cpu 1), a1 = 2, b0 = 3, b1 = 4 */
	/* the program took it after it arrived: the physical receive is
	 * when the receiving thread had it, never before the logical one */
	CHECK(has_line(prefix, "3:1:1:1:1:0:50:3:1:2:1:300:300:32:4"));
	CHECK(has_line(prefix, "3:1:1:1:1:400:400:4:1:2:2:550:550:32:4"));
	CHECK(has_line(prefix, "3:1:1:1:1:600:600:4:1:2:2:650:650:32:4"));
	rd_errlist_free(&errs);
	tu_rmtree(dir);
}

/* A state holding more records than the ring: the second reader. */
static void
test_long_state(void)
{
	const char *dir = tu_tmpdir("window-long-state");
	char prefix[600];
	rd_errlist errs;
	mg_report rep;
	ms_proc a;
	ms_thread t0, t1;

	ms_proc_init(&a, dir, 0x1, 1, 0);
	ms_proc_end(&a, 100000);
	ms_thread_open(&t0, &a, 0);
	ms_thread_open(&t1, &a, 1);
	ms_push(&t0, 100, 1);
	for (int i = 0; i < 10000; i++) {
		ms_event(&t0, 200 + (uint64_t)i * 5, 1000, (uint64_t)i);
		if (i % 1000 == 0) { /* changes that do not show */
			ms_push(&t0, 201 + (uint64_t)i * 5, 1);
			ms_pop(&t0, 202 + (uint64_t)i * 5);
		}
	}
	ms_push(&t0, 60000, 5);
	ms_pop(&t0, 60100);
	ms_pop(&t0, 70000);
	for (int i = 0; i < 10; i++) { /* the other thread keeps going */
		ms_push(&t1, 150 + (uint64_t)i * 7000, 12);
		ms_pop(&t1, 3000 + (uint64_t)i * 7000);
	}
	ms_thread_close(&t0);
	ms_thread_close(&t1);
	ms_proc_close(&a);

	snprintf(prefix, sizeof prefix, "%s/out", dir);
	rd_errlist_init(&errs, stderr);
	CHECK(mt_merge(dir, prefix, 0, &rep, &errs) == DW_OK);
	CHECK_EQ_U64(rd_errlist_count(&errs), 0);
	mt_check(prefix, PC_ALL, NULL);
	CHECK(has_line(prefix, "1:1:1:1:1:0:59900:1"));
	CHECK(has_line(prefix, "1:1:1:1:1:59900:60000:5"));
	CHECK(has_line(prefix, "1:1:1:1:1:60000:69900:1"));
	CHECK(has_line(prefix, "1:1:1:1:1:69900:99900:0"));
	rd_errlist_free(&errs);
	tu_rmtree(dir);
}

/* Pops without a push are ignored and reported once. */
static void
test_bad_pops(void)
{
	const char *dir = tu_tmpdir("window-bad-pops");
	char prefix[600];
	rd_errlist errs;
	ms_proc a;
	ms_thread t;

	ms_proc_init(&a, dir, 0x1, 1, 0);
	ms_thread_open(&t, &a, 0);
	ms_pop(&t, 100);
	ms_push(&t, 200, 1);
	ms_pop(&t, 300);
	ms_pop(&t, 400);
	ms_thread_close(&t);
	ms_proc_close(&a);
	snprintf(prefix, sizeof prefix, "%s/out", dir);
	rd_errlist_init(&errs, stderr);
	CHECK(mt_merge(dir, prefix, 0, NULL, &errs) == DW_OK);
	CHECK_EQ_U64(rd_errlist_count(&errs), 1);
	CHECK(mt_said(&errs, "2 state exits without an entry"));
	mt_check(prefix, PC_ALL, NULL);
	rd_errlist_free(&errs);
	tu_rmtree(dir);
}

int
main(void)
{
	test_given_up();
	test_parts();
	test_long_state();
	test_bad_pops();
	return tu_report("merge_window");
}
