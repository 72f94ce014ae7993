/*
 * The POP tree (issue 19 item 1) on synthetic traces whose answers are
 * worked out by hand below: load balance, communication efficiency and
 * its split into serialization (the ideal-network replay, replay.h) and
 * transfer efficiency, through st_stats_read (the merge, clocks
 * corrected) as `dwork stats` computes them, and the same from the
 * merged .prv; the critical path per function (issue 19 item 4); the
 * replay alone on golden bursts and messages.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <dwork/dwork.h>
#include <dwork/trace.h>

#include "output/html.h"
#include "merge/replay.h"
#include "output/stats.h"
#include "merge_synth.h"
#include "merge_util.h"

#define U    1000000ull /* 1 ms */
#define BASE 1000       /* every trace starts at 1000 ms: time 0 */
#define LOG  2u
#define PHY  4u
#define RECV 1u

static char scratch[512];

#define H_WORK 0x77000001u /* the user function "work" */

typedef struct expect {
	double lb, comm, ser, trf, pe, ideal_ms;
	double work_ms, other_ms; /* on the critical path */
	uint64_t messages;        /* on the critical path */
} expect;

static void
near(const char *what, const char *key, double got, double hand)
{
	printf("%-14s %-26s hand %.6f measured %.6f\n", what, key, hand, got);
	if (fabs(got - hand) > 1e-6) {
		fprintf(stderr, "%s: %s is %.6f, not %.6f\n", what, key, got,
		        hand);
		tu_failures++;
	}
}

/* The critical path: "work" and the rest, the messages on it. */
static void
path(const char *what, const st_stats *s, const expect *w)
{
	double work = 0;

	for (size_t i = 0; i < s->npath; i++) {
		const char *n =
		    st_value_name(s, DW_EV_FUNCTION, s->path[i].func);

		CHECK(n && !strcmp(n, "work"));
		work += (double)s->path[i].ns / U;
	}
	near(what, "critical path: work (ms)", work, w->work_ms);
	near(what, "critical path: other (ms)", (double)s->path_other / U,
	     w->other_ms);
	near(what, "critical path: messages", (double)s->path_messages,
	     (double)w->messages);
}

/* The merged .prv read back gives the same replay and path. */
static void
same_from_prv(const char *dir, const st_stats *d)
{
	char prefix[800], prv[820];
	st_stats *s;
	rd_errlist errs;

	snprintf(prefix, sizeof prefix, "%s.merged", dir);
	snprintf(prv, sizeof prv, "%s.prv", prefix);
	rd_errlist_init(&errs, stderr);
	REQUIRE(mt_merge(dir, prefix, 0, NULL, &errs) == DW_OK);
	REQUIRE(st_stats_new(prv, &s) == DW_OK);
	REQUIRE(st_stats_read(prv, s, &errs) == DW_OK);
	CHECK_EQ_U64(errs.n, 0);
	rd_errlist_free(&errs);
	CHECK_EQ_U64(s->ideal, d->ideal);
	CHECK_EQ_U64(s->path_other, d->path_other);
	CHECK_EQ_U64(s->path_messages, d->path_messages);
	CHECK_EQ_U64(s->npath, d->npath);
	for (size_t i = 0; i < s->npath && i < d->npath; i++)
		CHECK_EQ_U64(s->path[i].ns, d->path[i].ns);
	st_stats_free(s);
}

/* The figures of the trace directory dir against w, and the JSON's
 * top-level keys. */
static void
check(const char *what, const char *dir, const expect *w)
{
	st_stats *s;
	rd_errlist errs;
	char *json = NULL, buf[128];
	size_t len = 0;
	FILE *f;

	rd_errlist_init(&errs, stderr);
	REQUIRE(st_stats_new(dir, &s) == DW_OK);
	REQUIRE(st_stats_read(dir, s, &errs) == DW_OK);
	CHECK_EQ_U64(errs.n, 0);
	rd_errlist_free(&errs);
	CHECK(s->pop.valid && s->pop.ideal_valid);
	near(what, "load_balance", s->pop.lb, w->lb);
	near(what, "communication_efficiency", s->pop.comm, w->comm);
	near(what, "serialization_efficiency", s->pop.ser, w->ser);
	near(what, "transfer_efficiency", s->pop.trf, w->trf);
	near(what, "parallel_efficiency", s->pop.pe, w->pe);
	near(what, "T_ideal (ms)", (double)s->ideal / U, w->ideal_ms);
	CHECK(fabs(s->pop.lb * s->pop.ser * s->pop.trf - s->pop.pe) < 1e-9);
	path(what, s, w);
	f = open_memstream(&json, &len);
	REQUIRE(f != NULL);
	st_print_json(s, f);
	fclose(f);
	snprintf(buf, sizeof buf, "\n  \"serialization_efficiency\": %.6f,",
	         w->ser);
	CHECK(strstr(json, buf) != NULL);
	snprintf(buf, sizeof buf, "\n  \"transfer_efficiency\": %.6f,", w->trf);
	CHECK(strstr(json, buf) != NULL);
	snprintf(buf, sizeof buf, "\n  \"load_balance\": %.6f,", w->lb);
	CHECK(strstr(json, buf) != NULL);
	CHECK(strstr(json, "\n  \"communication_efficiency\": ") != NULL);
	CHECK(strstr(json, "\n  \"parallel_efficiency\": ") != NULL);
	snprintf(buf, sizeof buf,
	         "\n  \"critical_path\": {\"length_ns\": %.0f, "
	         "\"messages\": %" PRIu64 ",",
	         w->ideal_ms * U, w->messages);
	CHECK(strstr(json, buf) != NULL);
	CHECK(strstr(json, "\"pop\": {") != NULL); /* the old keys stay */
	free(json);
	same_from_prv(dir, s);
	st_stats_free(s);
}

static void
newdir(const char *name, char *dir, size_t len)
{
	snprintf(dir, len, "%s/%s", scratch, name);
	REQUIRE(mkdir(dir, 0755) == 0);
}

/* A state from a to b (ms after BASE) on t, nested in what is open. */
static void
state(ms_thread *t, uint64_t a, uint64_t b, uint32_t st)
{
	ms_push(t, (BASE + a) * U, st);
	ms_pop(t, (BASE + b) * U);
}

/*
 * Pure load imbalance: three tasks (a plain trace: Running counts on
 * every thread) compute 10, 20 and 40 ms from 0, then idle until 40.
 * No message: the replay is the trace.  T = T_ideal = 40,
 * LB = (70/3) / 40 = 0.583333, CommE = SerE = TrfE = 1, PE = LB.
 */
static void
test_imbalance(void)
{
	static const uint64_t d[3] = {10, 20, 40};
	char dir[700];
	expect w = {70.0 / 3 / 40, 1, 1, 1, 70.0 / 3 / 40, 40, 0, 40, 0};

	newdir("imbalance", dir, sizeof dir);
	for (uint32_t i = 0; i < 3; i++) {
		ms_proc p;
		ms_thread t;

		ms_proc_init(&p, dir, 0x100 + i, 100 + i, i);
		ms_proc_end(&p, (BASE + 40) * U);
		ms_thread_open(&t, &p, 0);
		state(&t, 0, d[i], DWT_STATE_RUNNING);
		state(&t, d[i], 40, DWT_STATE_IDLE);
		ms_thread_close(&t);
		ms_proc_close(&p);
	}
	check("imbalance", dir, &w);
}

/* A dwork worker process of task k: its "worker main" idle all along
 * and its executor, given by fill. */
static void
worker(const char *dir, uint32_t k, uint64_t end, ms_proc *p, ms_thread *t)
{
	ms_thread m;

	ms_proc_init(p, dir, 0x200 + k, 200 + k, k);
	ms_label_thread(p, 0, "worker main");
	ms_label_thread(p, 1, "executor 1");
	ms_label_value(p, DW_EV_FUNCTION, H_WORK, "work");
	ms_proc_end(p, (BASE + end) * U);
	ms_thread_open(&m, p, 0);
	state(&m, 0, end, DWT_STATE_IDLE);
	ms_thread_close(&m);
	ms_thread_open(t, p, 1);
}

/* A run of "work" from a to b (ms after BASE). */
static void
run(ms_thread *t, uint64_t a, uint64_t b)
{
	ms_push(t, (BASE + a) * U, DWT_STATE_RUNNING);
	ms_event(t, (BASE + a) * U, DW_EV_FUNCTION, H_WORK);
	ms_event(t, (BASE + b) * U, DW_EV_FUNCTION, 0);
	ms_pop(t, (BASE + b) * U);
}

static void
comm(ms_thread *t, uint64_t at, unsigned flags, uint32_t peer, uint64_t id)
{
	ms_comm(t, (BASE + at) * U, flags | LOG | PHY, peer, 1, 64, id);
}

/* The runtime's message tags (src/runtime/rtrace.h). */
#define TAG_CALL    0
#define TAG_RESULT  1
#define TAG_REQUEST 4
#define TAG_ANSWER  5

static void
tcomm(ms_thread *t, uint64_t at, unsigned flags, uint32_t peer, uint32_t tag,
      uint64_t id)
{
	ms_comm(t, (BASE + at) * U, flags | LOG | PHY, peer, tag, 64, id);
}

/* The wait time (ms) of cause c on task k, or in function name. */
static double
wait_ms(const st_stats *s, size_t k, enum rp_cause c)
{
	return k < s->ntasks ? (double)s->task_waits[k * RP_NCAUSES + c] / U
	                     : -1;
}

static double
wait_fn_ms(const st_stats *s, const char *name, enum rp_cause c)
{
	for (size_t i = 0; i < s->nfunc_waits; i++) {
		const char *n =
		    st_value_name(s, DW_EV_FUNCTION, s->func_waits[i].func);

		if (n && !strcmp(n, name))
			return (double)s->func_waits[i].ns[c] / U;
	}
	return 0;
}

/* T_ideal (ms) with the path's function name 2x faster. */
static double
faster_ms(const st_stats *s, const char *name)
{
	for (size_t i = 0; i < s->npath; i++) {
		const char *n =
		    st_value_name(s, DW_EV_FUNCTION, s->path[i].func);

		if (n && !strcmp(n, name))
			return (double)s->path_faster[i] / U;
	}
	return -1;
}

/* One wait cause against its hand-computed value (ms). */
static void
cause(const char *what, const st_stats *s, size_t k, enum rp_cause c, double ms)
{
	char key[64];

	snprintf(key, sizeof key, "wait task %zu %s (ms)", k, rp_cause_key(c));
	near(what, key, wait_ms(s, k, c), ms);
}

static st_stats *
read_dir(const char *dir)
{
	st_stats *s;
	rd_errlist errs;

	rd_errlist_init(&errs, stderr);
	REQUIRE(st_stats_new(dir, &s) == DW_OK);
	REQUIRE(st_stats_read(dir, s, &errs) == DW_OK);
	CHECK_EQ_U64(errs.n, 0);
	rd_errlist_free(&errs);
	return s;
}

/*
 * The waits of test_transfer: each executor idles 0..3 for the call
 * sent at 1 (master 1, network 2) and 13..16 after its result (none
 * 3); the master waits 1..15 for the results sent at 13 (work 12,
 * network 2; the second result adds nothing).  Every wait is for
 * "work".  2x faster "work" (5 ms runs): T_ideal 12 - 5 = 7.
 */
static void
transfer_waits(const char *dir)
{
	st_stats *s = read_dir(dir);

	cause("transfer", s, 0, RP_CAUSE_WORK, 12);
	cause("transfer", s, 0, RP_CAUSE_NETWORK, 2);
	cause("transfer", s, 0, RP_CAUSE_MASTER, 0);
	for (size_t k = 1; k <= 2; k++) {
		cause("transfer", s, k, RP_CAUSE_MASTER, 1);
		cause("transfer", s, k, RP_CAUSE_NETWORK, 2);
		cause("transfer", s, k, RP_CAUSE_NONE, 3);
		cause("transfer", s, k, RP_CAUSE_WORK, 0);
	}
	near("transfer", "wait for work: work (ms)",
	     wait_fn_ms(s, "work", RP_CAUSE_WORK), 12);
	near("transfer", "wait for work: master (ms)",
	     wait_fn_ms(s, "work", RP_CAUSE_MASTER), 2);
	near("transfer", "wait for work: network (ms)",
	     wait_fn_ms(s, "work", RP_CAUSE_NETWORK), 6);
	near("transfer", "T_ideal, work 2x faster", faster_ms(s, "work"), 7);
	CHECK(!s->ctr.valid && strstr(s->ctr.why, "no instruction"));
	st_stats_free(s);
}

/*
 * Master/worker, every message 2 ms in transfer.  The master runs 0..1,
 * sends an item to workers 1 and 2 at 1 (received at 3), waits; each
 * executor idles 0..3, computes 3..13, sends its result at 13 (received
 * at 15); the master runs 15..16.  T = 16; U = 2, 10, 10.
 * LB = (22/3)/10 = 0.733333, CommE = 10/16 = 0.625.  Ideal network:
 * the items arrive at 1, the executors compute 1..11, the results
 * arrive at 11, the master runs 11..12: T_ideal = 12, SerE = 10/12 =
 * 0.833333, TrfE = 12/16 = 0.75, PE = 22/3/16 = 0.458333.
 */
static void
test_transfer(void)
{
	char dir[700];
	expect w = {
	    22.0 / 3 / 10, 0.625, 10.0 / 12, 0.75, 22.0 / 3 / 16, 12, 10, 2, 2};
	ms_proc p;
	ms_thread t;

	newdir("transfer", dir, sizeof dir);
	ms_proc_init(&p, dir, 0x1a, 100, 0);
	ms_label_thread(&p, 0, "master");
	ms_proc_end(&p, (BASE + 16) * U);
	ms_thread_open(&t, &p, 0);
	ms_push(&t, BASE * U, DWT_STATE_RUNNING);
	tcomm(&t, 1, 0, 1, TAG_CALL, 1);
	tcomm(&t, 1, 0, 2, TAG_CALL, 2);
	ms_push(&t, (BASE + 1) * U, DWT_STATE_WAITING_MESSAGE);
	tcomm(&t, 15, RECV, 1, TAG_RESULT, 3);
	tcomm(&t, 15, RECV, 2, TAG_RESULT, 4);
	ms_pop(&t, (BASE + 15) * U);
	ms_pop(&t, (BASE + 16) * U);
	ms_thread_close(&t);
	ms_proc_close(&p);
	for (uint32_t k = 1; k <= 2; k++) {
		worker(dir, k, 16, &p, &t);
		ms_push(&t, BASE * U, DWT_STATE_IDLE);
		tcomm(&t, 3, RECV, 0, TAG_CALL, k);
		run(&t, 3, 13);
		tcomm(&t, 13, 0, 0, TAG_RESULT, 2 + k);
		ms_pop(&t, (BASE + 16) * U);
		ms_thread_close(&t);
		ms_proc_close(&p);
	}
	check("transfer", dir, &w);
	transfer_waits(dir);
}

/*
 * A serialized chain on a network without delay: the master runs 0..1,
 * hands worker 1 an item (sent and received at 1), waits for its result
 * (worker 1 computes 1..11, the result arrives at 11), runs 11..12,
 * hands worker 2 an item at 12 (computed 12..22, result at 22), runs
 * 22..23.  T = T_ideal = 23, U = 3, 10, 10: LB = (23/3)/10 = 0.766667,
 * CommE = SerE = 10/23 = 0.434783, TrfE = 1, PE = 1/3.
 */
static void
test_chain(void)
{
	char dir[700];
	expect w = {
	    23.0 / 3 / 10, 10.0 / 23, 10.0 / 23, 1, 1.0 / 3, 23, 20, 3, 4};
	ms_proc p;
	ms_thread t;

	newdir("chain", dir, sizeof dir);
	ms_proc_init(&p, dir, 0x1c, 100, 0);
	ms_label_thread(&p, 0, "master");
	ms_proc_end(&p, (BASE + 23) * U);
	ms_thread_open(&t, &p, 0);
	ms_push(&t, BASE * U, DWT_STATE_RUNNING);
	comm(&t, 1, 0, 1, 1);
	ms_push(&t, (BASE + 1) * U, DWT_STATE_WAITING_MESSAGE);
	comm(&t, 11, RECV, 1, 2);
	ms_pop(&t, (BASE + 11) * U);
	comm(&t, 12, 0, 2, 3);
	ms_push(&t, (BASE + 12) * U, DWT_STATE_WAITING_MESSAGE);
	comm(&t, 22, RECV, 2, 4);
	ms_pop(&t, (BASE + 22) * U);
	ms_pop(&t, (BASE + 23) * U);
	ms_thread_close(&t);
	ms_proc_close(&p);
	for (uint32_t k = 1; k <= 2; k++) {
		uint64_t a = k == 1 ? 1 : 12;

		worker(dir, k, 23, &p, &t);
		ms_push(&t, BASE * U, DWT_STATE_IDLE);
		comm(&t, a, RECV, 0, 2 * k - 1);
		run(&t, a, a + 10);
		comm(&t, a + 10, 0, 0, 2 * k);
		ms_pop(&t, (BASE + 23) * U);
		ms_thread_close(&t);
		ms_proc_close(&p);
	}
	check("chain", dir, &w);
}

/* The HTML view of test_handout, 10 px a ms: the path outlined on the
 * master's row (thread 0) 0..15 ms and worker 3's executor (thread 6)
 * 15..25 ms, one message line between them, the tree under the
 * figures. */
static void
handout_html(const char *dir)
{
	char path[800];
	html_opts o = {.width = 250};
	mg_writer *w;
	mg_opts mo = {.dir = dir};
	rd_errlist errs;
	char *doc;

	snprintf(path, sizeof path, "%s.html", dir);
	REQUIRE(html_writer_open(path, &o, &w) == DW_OK);
	rd_errlist_init(&errs, stderr);
	REQUIRE(mg_merge(&mo, w, &errs, NULL) == DW_OK);
	mg_writer_free(w);
	rd_errlist_free(&errs);
	doc = mt_slurp(path);
	REQUIRE(doc != NULL);
	CHECK(strstr(doc, "<rect class=\"cp\" data-r=\"0\" data-a=\"0.00\" "
	                  "data-b=\"150.00\"") != NULL);
	CHECK(strstr(doc, "<rect class=\"cp\" data-r=\"6\" "
	                  "data-a=\"150.00\" data-b=\"250.00\"") != NULL);
	CHECK(strstr(doc, "<line class=\"cp\" data-f=\"0\" data-t=\"6\" "
	                  "data-a=\"150.00\" data-b=\"150.00\"") != NULL);
	CHECK(strstr(doc, "POP tree: PE 0.45 = LB 0.75 \xc3\x97 CommE 0.60 "
	                  "(SerE 0.60 \xc3\x97 TrfE 1.00)") != NULL);
	free(doc);
	remove(path);
}

/*
 * The master is the bottleneck: it spends 5 ms of its own work on each
 * of three hand-outs (runs 0..15, sends an item at 5, 10, 15 to workers
 * 1, 2, 3), each item is 10 ms of "work" (5..15, 10..20, 15..25), no
 * transfer time; the master waits 15..25 for the results (at 15, 20,
 * 25).  T = T_ideal = 25; U = 15, 10, 10, 10: LB = 11.25/15 = 0.75,
 * CommE = SerE = 15/25 = 0.6, TrfE = 1, PE = 0.45.  The critical path
 * goes through the master: its 15 ms, then worker 3's item (10 ms of
 * work), 2 messages.  Waits: the workers idle 5, 10 and 15 ms for the
 * master (30), the master 10 for work (the results at 20 and 25).  With
 * "work" 2x faster the last result comes at 20: T_ideal = 20.
 */
static void
test_handout(void)
{
	char dir[700];
	expect w = {11.25 / 15, 0.6, 0.6, 1, 0.45, 25, 10, 15, 2};
	ms_proc p;
	ms_thread t;
	st_stats *s;

	newdir("handout", dir, sizeof dir);
	ms_proc_init(&p, dir, 0x1d, 100, 0);
	ms_label_thread(&p, 0, "master");
	ms_proc_end(&p, (BASE + 25) * U);
	ms_thread_open(&t, &p, 0);
	ms_push(&t, BASE * U, DWT_STATE_RUNNING);
	for (uint32_t k = 1; k <= 3; k++)
		tcomm(&t, 5 * k, 0, k, TAG_CALL, 2 * k);
	ms_push(&t, (BASE + 15) * U, DWT_STATE_WAITING_MESSAGE);
	for (uint32_t k = 1; k <= 3; k++)
		tcomm(&t, 10 + 5 * k, RECV, k, TAG_RESULT, 2 * k + 1);
	ms_pop(&t, (BASE + 25) * U);
	ms_pop(&t, (BASE + 25) * U);
	ms_thread_close(&t);
	ms_proc_close(&p);
	for (uint32_t k = 1; k <= 3; k++) {
		worker(dir, k, 25, &p, &t);
		ms_push(&t, BASE * U, DWT_STATE_IDLE);
		tcomm(&t, 5 * k, RECV, 0, TAG_CALL, 2 * k);
		run(&t, 5 * k, 5 * k + 10);
		tcomm(&t, 5 * k + 10, 0, 0, TAG_RESULT, 2 * k + 1);
		ms_pop(&t, (BASE + 25) * U);
		ms_thread_close(&t);
		ms_proc_close(&p);
	}
	check("handout", dir, &w);
	s = read_dir(dir);
	for (size_t k = 1; k <= 3; k++) {
		cause("handout", s, k, RP_CAUSE_MASTER, 5.0 * (double)k);
		cause("handout", s, k, RP_CAUSE_NETWORK, 0);
		cause("handout", s, k, RP_CAUSE_NONE, 15 - 5.0 * (double)k);
	}
	cause("handout", s, 0, RP_CAUSE_WORK, 10);
	cause("handout", s, 0, RP_CAUSE_NONE, 0);
	near("handout", "T_ideal, work 2x faster", faster_ms(s, "work"), 20);
	st_stats_free(s);
	handout_html(dir);
}

/*
 * A slow producer: worker 1's executor runs "produce" 0..10, 10..20,
 * 20..30, each ending with a put into a channel it owns, which answers
 * the master's pending take at 10, 20, 30.  The master runs 0..1,
 * takes (the request at 1 reaches the worker's main thread), waits
 * 1..10, consumes 10..12, takes at 12, waits 12..20, consumes 20..22,
 * takes at 22, waits 22..30, consumes 30..32.  T = T_ideal = 32 (no
 * transfer); U = 7, 30: LB = 18.5/30, CommE = SerE = 30/32, TrfE = 1.
 * The master's waits are for the producer: 9 + 8 + 8 = 25 ms, all in
 * waits for "produce"; the executor idles 30..32 (none 2).
 */
static void
test_producer(void)
{
	char dir[700];
	expect w = {18.5 / 30, 30.0 / 32, 30.0 / 32, 1, 18.5 / 32, 32, 0, 0, 0};
	ms_proc p;
	ms_thread t, m;
	st_stats *s;
	static const uint64_t take[3] = {1, 12, 22};

	newdir("producer", dir, sizeof dir);
	ms_proc_init(&p, dir, 0x1e, 100, 0);
	ms_label_thread(&p, 0, "master");
	ms_proc_end(&p, (BASE + 32) * U);
	ms_thread_open(&t, &p, 0);
	ms_push(&t, BASE * U, DWT_STATE_RUNNING);
	for (uint32_t i = 0; i < 3; i++) {
		tcomm(&t, take[i], 0, 1, TAG_REQUEST, 10 + 2 * i);
		ms_push(&t, (BASE + take[i]) * U, DWT_STATE_WAITING_MESSAGE);
		tcomm(&t, 10 * (i + 1), RECV, 1, TAG_ANSWER, 11 + 2 * i);
		ms_pop(&t, (BASE + 10 * (i + 1)) * U);
	}
	ms_pop(&t, (BASE + 32) * U);
	ms_thread_close(&t);
	ms_proc_close(&p);

	ms_proc_init(&p, dir, 0x2e, 201, 1);
	ms_label_thread(&p, 0, "worker main");
	ms_label_thread(&p, 1, "executor 1");
	ms_label_value(&p, DW_EV_FUNCTION, H_WORK, "produce");
	ms_proc_end(&p, (BASE + 32) * U);
	ms_thread_open(&m, &p, 0);
	ms_push(&m, BASE * U, DWT_STATE_IDLE);
	for (uint32_t i = 0; i < 3; i++)
		tcomm(&m, take[i], RECV, 0, TAG_REQUEST, 10 + 2 * i);
	ms_pop(&m, (BASE + 32) * U);
	ms_thread_close(&m);
	ms_thread_open(&t, &p, 1);
	ms_push(&t, BASE * U, DWT_STATE_IDLE);
	for (uint32_t i = 0; i < 3; i++) {
		run(&t, 10 * i, 10 * (i + 1));
		tcomm(&t, 10 * (i + 1), 0, 0, TAG_ANSWER, 11 + 2 * i);
	}
	ms_pop(&t, (BASE + 32) * U);
	ms_thread_close(&t);
	ms_proc_close(&p);
	s = read_dir(dir);
	near("producer", "load_balance", s->pop.lb, w.lb);
	near("producer", "serialization_efficiency", s->pop.ser, w.ser);
	near("producer", "transfer_efficiency", s->pop.trf, w.trf);
	cause("producer", s, 0, RP_CAUSE_PRODUCER, 25);
	cause("producer", s, 0, RP_CAUSE_NETWORK, 0);
	cause("producer", s, 0, RP_CAUSE_WORK, 0);
	cause("producer", s, 1, RP_CAUSE_NONE, 2);
	cause("producer", s, 1, RP_CAUSE_PRODUCER, 0);
	near("producer", "wait for produce: producer (ms)",
	     wait_fn_ms(s, "produce", RP_CAUSE_PRODUCER), 25);
	st_stats_free(s);
}

/*
 * A pmap's results arrive on the master's I/O thread: the master runs
 * 0..1, hands the executor an item at 1 and waits in the pmap
 * (Scheduling) 1..13; the executor computes 1..11 and sends the result
 * at 11, which the master's I/O thread takes in at 12.  The master's
 * wait is cut by its I/O thread's receive: work 10 (1..11), network 1
 * (11..12), none 1 (12..13); the executor idles 0..1 until the call
 * (master 1) and 11..13 (none 2).
 */
static void
test_pmap_io(void)
{
	char dir[700];
	ms_proc p;
	ms_thread t, io;
	st_stats *s;

	newdir("pmap_io", dir, sizeof dir);
	ms_proc_init(&p, dir, 0x1f, 100, 0);
	ms_label_thread(&p, 0, "master");
	ms_label_thread(&p, 1, "I/O");
	ms_proc_end(&p, (BASE + 13) * U);
	ms_thread_open(&t, &p, 0);
	ms_push(&t, BASE * U, DWT_STATE_RUNNING);
	tcomm(&t, 1, 0, 1, TAG_CALL, 1);
	state(&t, 1, 13, DWT_STATE_SCHEDULING);
	ms_pop(&t, (BASE + 13) * U);
	ms_thread_close(&t);
	ms_thread_open(&io, &p, 1);
	ms_push(&io, BASE * U, DWT_STATE_IDLE);
	tcomm(&io, 12, RECV, 1, TAG_RESULT, 2);
	ms_pop(&io, (BASE + 13) * U);
	ms_thread_close(&io);
	ms_proc_close(&p);
	worker(dir, 1, 13, &p, &t);
	ms_push(&t, BASE * U, DWT_STATE_IDLE);
	tcomm(&t, 1, RECV, 0, TAG_CALL, 1);
	run(&t, 1, 11);
	tcomm(&t, 11, 0, 0, TAG_RESULT, 2);
	ms_pop(&t, (BASE + 13) * U);
	ms_thread_close(&t);
	ms_proc_close(&p);
	s = read_dir(dir);
	cause("pmap_io", s, 0, RP_CAUSE_WORK, 10);
	cause("pmap_io", s, 0, RP_CAUSE_NETWORK, 1);
	cause("pmap_io", s, 0, RP_CAUSE_NONE, 1);
	cause("pmap_io", s, 1, RP_CAUSE_MASTER, 1);
	cause("pmap_io", s, 1, RP_CAUSE_NONE, 2);
	st_stats_free(s);
}

/* The replay alone on hand-written bursts (ns): expected T_ideal. */
static void
test_replay_golden(void)
{
	rp_replay *r;
	uint64_t ideal;

	/* A message that waits in a queue: thread 0 runs 0..5 and sends
	 * at 5; thread 1 runs 0..8, receives it at 8 (no wait before) and
	 * runs 8..10.  Nothing to save: T_ideal = 10. */
	REQUIRE(rp_new(2, &r) == DW_OK);
	REQUIRE(rp_state(r, 0, 0, 5, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 1, 0, 8, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 1, 8, 10, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_msg(r, 0, 1, 5, 8, 9) == DW_OK);
	REQUIRE(rp_run(r, &ideal) == DW_OK);
	CHECK_EQ_U64(ideal, 10);
	rp_free(r);

	/* A ping-pong of 3 ns transfers propagated: thread 0 runs 0..2,
	 * sends at 2; thread 1 waits 0..5, runs 5..9, replies at 9;
	 * thread 0 waits 2..12, runs 12..14, sends at 14; thread 1 waits
	 * 9..17, runs 17..18; both then wait (the end).  Ideal: 1 runs
	 * 2..6, reply at 6, 0 runs 6..8, sends at 8, 1 runs 8..9:
	 * T_ideal = 9 (T was 18). */
	REQUIRE(rp_new(2, &r) == DW_OK);
	REQUIRE(rp_state(r, 0, 0, 2, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 0, 2, 12, DWT_STATE_WAITING_MESSAGE) == DW_OK);
	REQUIRE(rp_state(r, 0, 12, 14, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 0, 14, 18, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_state(r, 1, 0, 5, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_state(r, 1, 5, 9, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 1, 9, 17, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_state(r, 1, 17, 18, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_msg(r, 0, 1, 2, 5, 9) == DW_OK);
	REQUIRE(rp_msg(r, 1, 0, 9, 12, 9) == DW_OK);
	REQUIRE(rp_msg(r, 0, 1, 14, 17, 9) == DW_OK);
	REQUIRE(rp_run(r, &ideal) == DW_OK);
	CHECK_EQ_U64(ideal, 9);
	rp_free(r);

	/* A wait broken off to handle a frame (the runtime's caller
	 * reading its own result) is one wait: thread 0 runs 0..2 and
	 * sends at 2; thread 1 waits 0..5, handles a frame 5..6 (Send
	 * Receive), waits 6..8, receives at 8, runs 8..10.  Ideal: the
	 * receive at 2, the run 2..4: T_ideal = 4. */
	REQUIRE(rp_new(2, &r) == DW_OK);
	REQUIRE(rp_state(r, 0, 0, 2, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 1, 0, 5, DWT_STATE_WAITING_MESSAGE) == DW_OK);
	REQUIRE(rp_state(r, 1, 5, 6, DWT_STATE_SEND_RECEIVE) == DW_OK);
	REQUIRE(rp_state(r, 1, 6, 8, DWT_STATE_WAITING_MESSAGE) == DW_OK);
	REQUIRE(rp_state(r, 1, 8, 10, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_msg(r, 0, 1, 2, 8, 1) == DW_OK);
	REQUIRE(rp_run(r, &ideal) == DW_OK);
	CHECK_EQ_U64(ideal, 4);
	rp_free(r);
}

/*
 * The critical path alone on hand-written bursts (ns): an I/O thread's
 * idle stretch that no message ends is never on it.  Thread 0 runs
 * 0..10, calls thread 1 at 10, waits 10..30 for the result, runs
 * 30..32; thread 1 idles 0..10, runs 10..30, answers at 30; thread 2 (an
 * I/O thread) handles a frame 0..1, idles 1..33, handles one 33..35 and
 * ends last.  No message ends its idle: thread 0's run ending at 32 is
 * taken to have woken it (wake.c), 1 later, so T_ideal stays 35.  The
 * path: 33..35 on 2, then (the idle stretch to its waker) 30..32 on 0, the
 * result from 1, 10..30 on 1, the call from 0, 0..10 on 0: 34 of T_ideal's 35,
 * 2 messages, 20 in "work".
 */
static void
test_path_golden(void)
{
	static const rp_seg want[] = {
	    {2, 33, 35}, {0, 30, 32}, {1, 10, 30}, {0, 0, 10}};
	rp_replay *r;
	rp_path p;
	uint64_t ideal;

	REQUIRE(rp_new(3, &r) == DW_OK);
	REQUIRE(rp_state(r, 0, 0, 10, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 0, 10, 30, DWT_STATE_WAITING_MESSAGE) == DW_OK);
	REQUIRE(rp_state(r, 0, 30, 32, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 1, 0, 10, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_state(r, 1, 10, 30, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 1, 30, 35, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_state(r, 2, 0, 1, DWT_STATE_SEND_RECEIVE) == DW_OK);
	REQUIRE(rp_state(r, 2, 1, 33, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_state(r, 2, 33, 35, DWT_STATE_SEND_RECEIVE) == DW_OK);
	REQUIRE(rp_msg(r, 0, 1, 10, 10, 0) == DW_OK);
	REQUIRE(rp_msg(r, 1, 0, 30, 30, 1) == DW_OK);
	REQUIRE(rp_func(r, 1, 10, 30, H_WORK) == DW_OK);
	REQUIRE(rp_run(r, &ideal) == DW_OK);
	CHECK_EQ_U64(ideal, 35);
	REQUIRE(rp_critical_path(r, &p) == DW_OK);
	CHECK_EQ_U64(p.length_ns, 34);
	CHECK_EQ_U64(p.messages, 2);
	CHECK_EQ_U64(p.other_ns, 14);
	CHECK_EQ_U64(p.nfns, 1);
	CHECK(p.nfns == 1 && p.fns[0].ns == 20);
	CHECK_EQ_U64(p.nsegs, 4);
	for (size_t i = 0; i < 4 && i < p.nsegs; i++)
		CHECK(p.segs[i].thread == want[i].thread &&
		      p.segs[i].start == want[i].start &&
		      p.segs[i].end == want[i].end);
	printf("path_golden    length 34 of T_ideal 35 measured %" PRIu64
	       " of %" PRIu64 "\n",
	       p.length_ns, ideal);
	rp_free(r);

	/* The same with 5 ns transfers: the call received at 15 (thread 1
	 * runs 15..25), the result at 30; T = 35.  Ideal: thread 1 runs
	 * 10..20, thread 0 20..22, and the I/O thread's idle, woken 1
	 * after thread 0's run, ends at 23: it runs 23..25, T_ideal = 25
	 * (35 if the idle kept its length). */
	REQUIRE(rp_new(3, &r) == DW_OK);
	REQUIRE(rp_state(r, 0, 0, 10, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 0, 10, 30, DWT_STATE_WAITING_MESSAGE) == DW_OK);
	REQUIRE(rp_state(r, 0, 30, 32, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 1, 0, 15, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_state(r, 1, 15, 25, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 1, 25, 35, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_state(r, 2, 0, 1, DWT_STATE_SEND_RECEIVE) == DW_OK);
	REQUIRE(rp_state(r, 2, 1, 33, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_state(r, 2, 33, 35, DWT_STATE_SEND_RECEIVE) == DW_OK);
	REQUIRE(rp_msg(r, 0, 1, 10, 15, 0) == DW_OK);
	REQUIRE(rp_msg(r, 1, 0, 25, 30, 1) == DW_OK);
	REQUIRE(rp_run(r, &ideal) == DW_OK);
	CHECK_EQ_U64(ideal, 25);
	REQUIRE(rp_critical_path(r, &p) == DW_OK);
	CHECK_EQ_U64(p.length_ns, 24); /* 2 + 2 + 10 + 10 */
	CHECK_EQ_U64(p.messages, 2);
	rp_free(r);
}

/*
 * What-if on hand-written bursts (ns): sends made inside a faster run
 * move earlier with it.  Thread 0 runs "work" 0..20 and sends to thread
 * 1 at 10 and to thread 2 at 16; thread 1 idles 0..10 then runs 10..20;
 * thread 2 idles 0..16 then runs 16..26: T_ideal = 26.  "work" 2x
 * faster: its run is 0..10, the sends at 5 and 8, thread 1 runs 5..15,
 * thread 2 8..18: T_ideal = 18 (26 if only its end moved).
 */
static void
test_faster_golden(void)
{
	rp_replay *r;
	rp_path p;
	uint64_t ideal, fast;

	REQUIRE(rp_new(3, &r) == DW_OK);
	REQUIRE(rp_state(r, 0, 0, 20, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 1, 0, 10, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_state(r, 1, 10, 20, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 2, 0, 16, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_state(r, 2, 16, 26, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_msg(r, 0, 1, 10, 10, 0) == DW_OK);
	REQUIRE(rp_msg(r, 0, 2, 16, 16, 0) == DW_OK);
	REQUIRE(rp_func(r, 0, 0, 20, H_WORK) == DW_OK);
	REQUIRE(rp_run(r, &ideal) == DW_OK);
	CHECK_EQ_U64(ideal, 26);
	REQUIRE(rp_critical_path(r, &p) == DW_OK);
	CHECK_EQ_U64(p.length_ns, 26); /* 16 of work on 0, 10 on 2 */
	REQUIRE(rp_faster(r, H_WORK, 2, &fast) == DW_OK);
	CHECK_EQ_U64(fast, 18);
	printf("faster_golden  T_ideal, work 2x faster  hand 18 measured "
	       "%" PRIu64 "\n",
	       fast);
	rp_free(r);
}

int
main(void)
{
	snprintf(scratch, sizeof scratch, "%s", tu_tmpdir("pop_tree"));
	test_replay_golden();
	test_path_golden();
	test_faster_golden();
	test_imbalance();
	test_transfer();
	test_chain();
	test_handout();
	test_producer();
	test_pmap_io();
	if (!getenv("KEEP"))
		tu_rmtree(scratch);
	return tu_report("pop_tree");
}
